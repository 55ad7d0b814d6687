//! The same corpus ActionSets run once by Kanister's own controller (unlabelled, in its
//! namespace `kanister`, the only one it watches) and once by ours (labelled, in a namespace of
//! its own), against equal targets, and what each run left compared: the final state and error,
//! every phase's state and output, the output artifacts, the objects the run added to or removed
//! from the object store, and the Event sequence on the ActionSet; names, namespaces and times
//! normalized. A difference that is not in [`KNOWN`] fails the test, and so does a known one that
//! no longer shows. [`KNOWN`] is written to `docs/kanister-parity.md`: the unit test
//! `the_parity_page_is_current` (fast tier too, no cluster) fails when the committed page
//! differs, unless `BPO_BLESS=1` lets it rewrite the page.
//!
//! Examples: the corpus PostgreSQL Blueprint's backup and restore (KubeTask, kando) and the
//! corpus time-log Blueprint's backup and restore (BackupData exec'd in the app, ScaleWorkload,
//! RestoreData). The PostgreSQL Blueprint runs on Kanister's side with Kanister's own kando (the
//! image `postgres-kanister-kando:0.119.0`, tools/images/build.sh) and on ours with the corpus'
//! image (our kando); each side then restores the other's dump (rows checked). The corpus
//! postgres-start-stop Blueprint (KubeOps, WaitV2, KubeExec into a psql session around
//! CopyVolumeData, KubeOps and ScaleWorkload deferPhases) backs up, restores (rows checked) and
//! deletes, as written on both sides. The comparison's functions are pure and unit-tested below
//! (`mod unit`).

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Value, json};

use crate::databases::{
    PG_BLUEPRINT, PG_ROWS, PG_SELECT, PG_STS, apply_in, corpus_blueprint, exec, pg_action,
    pg_ready, postgres_in, psql,
};
use crate::functions::{apply_create, start_spec, wait_end};
use crate::kanister::{self, KANISTER_COMPONENT};
use crate::real::{self, get_json, kubectl};
use crate::support;
use crate::support::data_plane::store_client;

/// The page the test writes, relative to the repository.
const PAGE: &str = "docs/kanister-parity.md";
/// One bucket for both sides, so that each can restore the other's dump.
const BUCKET: &str = "bpo-real-parity";
/// The image the corpus PostgreSQL Blueprint names (our kando in it).
const CORPUS_PG_IMAGE: &str = "ghcr.io/kanisterio/postgres-kanister-tools:0.117.0";
/// The same tools with Kanister's kando, for Kanister's controller.
const KANISTER_PG_IMAGE: &str = "postgres-kanister-kando:0.119.0";

/// A difference between the two runs of one example that is expected, and why.
struct Known {
    example: &'static str,
    field: &'static str,
    kanister: &'static str,
    ours: &'static str,
    why: &'static str,
}

/// Every difference the tests expect; a test fails on any other of its examples and on one of
/// them that is gone.
const KNOWN: &[Known] = &[
    Known {
        example: "time-log backup",
        field: "actions[0] phase backupToS3 output",
        kanister: r#"{"backupID":"<backupID>","backupTag":"<backupTag>","fileCount":"1","phySize":"","size":"30 B","version":"v0.0.0"}"#,
        ours: r#"{"backupID":"<backupID>","backupTag":"<backupTag>","fileCount":"1","phySize":"<phySize>","size":"30 B","version":"v0.0.0"}"#,
        why: PHYSIZE_WHY,
    },
    Known {
        example: "postgresql start-stop backup",
        field: "actions[0] phase copyFiles output",
        kanister: r#"{"backupArtifactLocation":"<bucket>/s3-bucket/path/artifactPrefix","backupID":"<backupID>","backupRoot":"/mnt/vol_data/data-shop-postgresql-0","backupTag":"<backupTag>","fileCount":"<fileCount>","phySize":"","size":"<size>","version":"v0.0.0"}"#,
        ours: r#"{"backupArtifactLocation":"<bucket>/s3-bucket/path/artifactPrefix","backupID":"<backupID>","backupRoot":"/mnt/vol_data/data-shop-postgresql-0","backupTag":"<backupTag>","fileCount":"<fileCount>","phySize":"<phySize>","size":"<size>","version":"v0.0.0"}"#,
        why: PHYSIZE_WHY,
    },
];

/// Why ours reports restic's stored size where Kanister's does not.
const PHYSIZE_WHY: &str = "`phySize`: Kanister's parser of restic's backup log \
     (`SnapshotStatsFromBackupLog`) reads only the line `Added to the repo: <size>`; restic \
     0.18.1, the tools image's, prints `Added to the repository: <size> (<size> stored)`, which \
     ours reads as well. Kept: the value is restic's, Kanister leaves it empty only because its \
     pattern predates the line.";

/// The examples of the tests: name (as in [`Known`]) and what runs.
const PG_EXAMPLES: &[(&str, &str)] = &[
    (
        "postgresql backup",
        "`kanister-examples/postgresql/postgres-blueprint.yaml`, action `backup` on a StatefulSet \
         (KubeTask: `pg_dumpall | gzip | kando location push`, `kando output`); Kanister's side \
         with Kanister's kando in the Blueprint's image",
    ),
    (
        "postgresql restore",
        "the same Blueprint's `restore` of the run's own backup artifact (KubeTask: \
         `kando location pull | gunzip | psql`), rows checked",
    ),
    (
        "postgresql restore of the other's dump",
        "`restore` of the backup the other controller made (Kanister's kando reads ours, ours \
         reads Kanister's), rows checked",
    ),
];
const TIME_LOG_EXAMPLES: &[(&str, &str)] = &[
    (
        "time-log backup",
        "`kanister-examples/time-log/blueprint.yaml`, action `backup` on a Deployment (BackupData: \
         restic exec'd in the app's container, of its volume)",
    ),
    (
        "time-log restore",
        "the same Blueprint's `restore` (ScaleWorkload to 0, RestoreData of the volume in a pod of \
         `ghcr.io/kanisterio/kanister-tools:0.117.0`, ScaleWorkload to 1), the file checked",
    ),
];

/// [`check`] of the differences `found` in `examples` against the [`KNOWN`] ones of them.
fn check_examples(examples: &[(&str, &str)], found: &[Difference]) -> Result<(), String> {
    let known: Vec<&Known> = KNOWN
        .iter()
        .filter(|k| examples.iter().any(|(e, _)| *e == k.example))
        .collect();
    check(found, &known)
}

/// The start of a comparison test: Kanister's controller installed (until the guard drops) and a
/// fresh namespace `<prefix>-<random>` for ours.
async fn both_sides(prefix: &str) -> (kanister::Installed, String) {
    let installed = kanister::install().await;
    let client = real::client().await;
    (installed, support::namespace(&client, prefix).await)
}

/// The end of a comparison test: deletes our namespace and fails on any difference `found` in
/// `examples` that [`KNOWN`] does not list, or on a known one that no longer shows.
fn finish(ours_ns: &str, examples: &[(&str, &str)], mut found: Vec<Difference>) {
    kubectl(&["delete", "namespace", ours_ns, "--wait=false"]).unwrap();
    found.sort();
    if let Err(e) = check_examples(examples, &found) {
        panic!("{e}");
    }
}

/// One field of a run where the two controllers left different values.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Difference {
    example: String,
    field: String,
    kanister: String,
    ours: String,
}

/// Whether `c` continues a name (so that a namespace is replaced only as a whole word).
fn name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.')
}

/// `text` with every whole-word `from` replaced by `to` (`from` empty: unchanged).
fn replace_word(text: &str, from: &str, to: &str) -> String {
    if from.is_empty() {
        return text.to_string();
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    let mut prev: Option<char> = None;
    while let Some(at) = rest.find(from) {
        let before = rest[..at].chars().next_back().or(prev);
        let after = rest[at + from.len()..].chars().next();
        out.push_str(&rest[..at]);
        if before.is_some_and(name_char) || after.is_some_and(name_char) {
            out.push_str(from);
        } else {
            out.push_str(to);
        }
        prev = from.chars().next_back();
        rest = &rest[at + from.len()..];
    }
    out.push_str(rest);
    out
}

/// `text` with the run's own names (`subs`: name, placeholder; whole words) and every
/// RFC 3339 time replaced by placeholders.
fn normalize(text: &str, subs: &[(&str, &str)]) -> String {
    let mut t = text.to_string();
    for (from, to) in subs {
        t = replace_word(&t, from, to);
    }
    let time = regex::Regex::new(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})")
        .expect("the time pattern");
    let t = time.replace_all(&t, "<time>");
    // Content-addressed names (restic's packs, indexes, snapshots, keys) and their fan-out dirs.
    let id = regex::Regex::new(r"\b[0-9a-f]{64}\b").expect("the id pattern");
    let fan = regex::Regex::new(r"/data/[0-9a-f]{2}/").expect("the fan-out pattern");
    let t = id.replace_all(&t, "<id>");
    fan.replace_all(&t, "/data/<xx>/").into_owned()
}

/// Compact JSON of `v`, normalized; `(none)` for null.
fn value_text(v: &Value, subs: &[(&str, &str)]) -> String {
    if v.is_null() {
        return "(none)".into();
    }
    normalize(&v.to_string(), subs)
}

/// The Events of one ActionSet (core/v1 Events, as `kubectl get events -o json` lists them),
/// in the order they were created (resourceVersion), as `Type Reason: message` (×count when
/// the recorder aggregated it), normalized.
fn event_lines(events: &[Value], actionset: &str, subs: &[(&str, &str)]) -> Vec<String> {
    let mut mine: Vec<&Value> = events
        .iter()
        .filter(|e| {
            e["involvedObject"]["kind"] == "ActionSet" && e["involvedObject"]["name"] == actionset
        })
        .collect();
    let version = |e: &Value| {
        e["metadata"]["resourceVersion"]
            .as_str()
            .and_then(|v| v.parse::<u64>().ok())
            .unwrap_or(u64::MAX)
    };
    mine.sort_by_key(|e| version(e));
    mine.iter()
        .map(|e| {
            let count = e["count"].as_u64().unwrap_or(1);
            let line = format!(
                "{} {}: {}",
                e["type"].as_str().unwrap_or_default(),
                e["reason"].as_str().unwrap_or_default(),
                e["message"].as_str().unwrap_or_default(),
            );
            let line = normalize(&line, subs);
            if count > 1 {
                format!("{line} (×{count})")
            } else {
                line
            }
        })
        .collect()
}

/// What one run left, field by field: the ActionSet `a` (one action), the store's keys before
/// and after it, and its Event lines.
fn observe(
    a: &Value,
    before: &BTreeSet<String>,
    after: &BTreeSet<String>,
    events: &[String],
    subs: &[(&str, &str)],
) -> BTreeMap<String, String> {
    let mut f = BTreeMap::new();
    let status = &a["status"];
    f.insert("state".into(), value_text(&status["state"], subs));
    f.insert(
        "error".into(),
        value_text(&status["error"]["message"], subs),
    );
    f.insert("progress".into(), value_text(&status["progress"], subs));
    // Which fields each controller writes (an empty one included), not only their values.
    let keys = |v: &Value| {
        let k: Vec<&String> = v
            .as_object()
            .into_iter()
            .flatten()
            .map(|(k, _)| k)
            .collect();
        format!("{k:?}")
    };
    f.insert("status fields".into(), keys(status));
    let actions = status["actions"].as_array().cloned().unwrap_or_default();
    f.insert("actions".into(), actions.len().to_string());
    for (i, action) in actions.iter().enumerate() {
        f.insert(format!("actions[{i}] fields"), keys(action));
        f.insert(
            format!("actions[{i}] object"),
            value_text(&action["object"], subs),
        );
        let phases = action["phases"].as_array().into_iter().flatten();
        let defer = action.get("deferPhase").filter(|d| d.is_object());
        for p in phases.chain(defer) {
            let name = match p["name"].as_str().unwrap_or_default() {
                "" => "\"\"",
                n => n,
            };
            let kind = if defer.is_some_and(|d| std::ptr::eq(d, p)) {
                "deferPhase"
            } else {
                "phase"
            };
            f.insert(
                format!("actions[{i}] {kind} {name} state"),
                value_text(&p["state"], subs),
            );
            f.insert(
                format!("actions[{i}] {kind} {name} output"),
                value_text(&p["output"], subs),
            );
        }
        f.insert(
            format!("actions[{i}] artifacts"),
            value_text(&action["artifacts"], subs),
        );
    }
    // Normalized keys with how many keys each stands for.
    let list = |keys: Vec<&String>| {
        let mut counts = BTreeMap::<String, usize>::new();
        for k in keys {
            *counts.entry(normalize(k, subs)).or_default() += 1;
        }
        if counts.is_empty() {
            return "(none)".to_string();
        }
        let k: Vec<String> = counts
            .into_iter()
            .map(|(k, n)| if n > 1 { format!("{k} (×{n})") } else { k })
            .collect();
        k.join(" ")
    };
    f.insert(
        "store added".into(),
        list(after.difference(before).collect()),
    );
    f.insert(
        "store removed".into(),
        list(before.difference(after).collect()),
    );
    f.insert("events".into(), events.join(" → "));
    f
}

/// The fields where the two runs of `example` differ; a field one side lacks is `(absent)`.
fn differences(
    example: &str,
    kanister: &BTreeMap<String, String>,
    ours: &BTreeMap<String, String>,
) -> Vec<Difference> {
    let fields: BTreeSet<&String> = kanister.keys().chain(ours.keys()).collect();
    let absent = || "(absent)".to_string();
    fields
        .into_iter()
        .filter_map(|field| {
            let k = kanister.get(field).cloned().unwrap_or_else(absent);
            let o = ours.get(field).cloned().unwrap_or_else(absent);
            (k != o).then(|| Difference {
                example: example.into(),
                field: field.clone(),
                kanister: k,
                ours: o,
            })
        })
        .collect()
}

/// Checks `found` against `known`: every difference found is listed, every listed one found.
fn check(found: &[Difference], known: &[&Known]) -> Result<(), String> {
    let listed = |d: &Difference| {
        known.iter().any(|k| {
            k.example == d.example
                && k.field == d.field
                && k.kanister == d.kanister
                && k.ours == d.ours
        })
    };
    let mut problems = Vec::new();
    for d in found.iter().filter(|d| !listed(d)) {
        problems.push(format!(
            "not listed (fix ours where Kanister is right, or add to KNOWN with the reason):\n    \
             Known {{ example: {:?}, field: {:?}, kanister: {:?}, ours: {:?}, why: \"\" }},",
            d.example, d.field, d.kanister, d.ours
        ));
    }
    for k in known {
        let seen = found.iter().any(|d| {
            k.example == d.example
                && k.field == d.field
                && k.kanister == d.kanister
                && k.ours == d.ours
        });
        if !seen {
            problems.push(format!(
                "listed but not seen (remove it from KNOWN): {} / {}",
                k.example, k.field
            ));
        }
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems.join("\n"))
    }
}

/// A Markdown table cell: `|` escaped, line breaks as spaces, code-quoted.
fn cell(text: &str) -> String {
    let t = text.replace('|', "\\|").replace(['\n', '\r'], " ");
    if t.is_empty() {
        String::new()
    } else {
        format!("`{t}`")
    }
}

/// The page of [`PAGE`]: how it is made, then the known differences.
fn page(examples: &[(&str, &str)], known: &[Known]) -> String {
    let mut s = String::from(
        "# Kanister's controller and ours, side by side\n\n\
         <!-- Generated by tests/real/kanister_parity.rs; do not edit. Regenerate with\n     \
         BPO_BLESS=1 cargo test --test real kanister_parity -->\n\n\
         Generated by the real-tier test `tests/real/kanister_parity.rs` (`tools/test.sh --real\n\
         kanister_parity::` runs it); regenerate with `BPO_BLESS=1 cargo test --test real\n\
         kanister_parity` (its unit test fails when this page is not what it generates). Each\n\
         example runs once by Kanister 0.119.0's controller (an unlabelled ActionSet in namespace\n\
         `kanister`) and once by ours (labelled, in a namespace of its own) against equal\n\
         targets. Compared, after replacing the namespace, the ActionSet's name, the bucket,\n\
         times, restic's content IDs and the outputs each run makes anew (`backupID`,\n\
         `backupTag`, `phySize`) by placeholders: the final state and error, each phase's state\n\
         and output, the output artifacts, the object-store keys the run added and removed, and\n\
         the Events on the ActionSet in the order they were created (` → ` between them); also\n\
         the progress, the action's object and which status fields each controller writes. A\n\
         difference not listed below fails the test, and so does a listed one that is gone.\n\n\
         Examples:\n",
    );
    for (name, what) in examples {
        s.push_str(&format!("- {name}: {what}\n"));
    }
    s.push_str("\n## Known differences\n\n");
    if known.is_empty() {
        s.push_str("None.\n");
        return s;
    }
    s.push_str("| example | field | Kanister | ours | why |\n| --- | --- | --- | --- | --- |\n");
    for k in known {
        s.push_str(&format!(
            "| {} | {} | {} | {} | {} |\n",
            k.example,
            cell(k.field),
            cell(k.kanister),
            cell(k.ours),
            k.why.replace('|', "\\|")
        ));
    }
    s
}

/// Compares the committed page with `generated`; `BPO_BLESS=1` writes it instead.
fn page_is_current(generated: &str) {
    let path = support::repo_root().join(PAGE);
    if std::env::var("BPO_BLESS").is_ok_and(|v| v == "1") {
        std::fs::write(&path, generated).unwrap_or_else(|e| panic!("{PAGE}: {e}"));
        return;
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == generated,
        "{PAGE} is not what the test generates; run with BPO_BLESS=1 to rewrite it. Generated:\n{generated}"
    );
}

// ---- the runs --------------------------------------------------------------------------------

/// Every key of the `buckets`, as `bucket/key`.
async fn store_keys(buckets: &[&str]) -> BTreeSet<String> {
    let mut all = BTreeSet::new();
    for b in buckets {
        let keys = store_client()
            .list_all(b, "", None)
            .await
            .unwrap_or_else(|e| panic!("listing {b}: {e}"));
        all.extend(keys.into_iter().map(|k| format!("{b}/{k}")));
    }
    all
}

/// The values of the phase outputs named `keys` in `a`, each with the placeholder `<key>`:
/// values each run makes anew (restic's snapshot IDs, tags and stored sizes).
fn random_outputs(a: &Value, keys: &[&str]) -> Vec<(String, String)> {
    let mut subs = Vec::new();
    for action in a["status"]["actions"].as_array().into_iter().flatten() {
        for p in action["phases"].as_array().into_iter().flatten() {
            for k in keys {
                if let Some(v) = p["output"][*k].as_str().filter(|v| !v.is_empty()) {
                    subs.push((v.to_string(), format!("<{k}>")));
                }
            }
        }
    }
    subs
}

/// The Events of the ActionSet `ns/name` once the sequence is over: it holds a terminal Event
/// (`Update Complete` or a Warning) and two reads 2 s apart see the same.
async fn settled_events(ns: &str, name: &str, subs: &[(&str, &str)]) -> Vec<String> {
    let read = || {
        let all = get_json(&["get", "events", "-n", ns]);
        event_lines(
            all["items"].as_array().map(Vec::as_slice).unwrap_or(&[]),
            name,
            subs,
        )
    };
    let settled = support::poll(real::WAIT, || async {
        let first = read();
        let over = first
            .iter()
            .any(|l| l.starts_with("Normal Update Complete") || l.starts_with("Warning "));
        if !over {
            return None;
        }
        tokio::time::sleep(std::time::Duration::from_secs(2)).await;
        (read() == first).then_some(first)
    })
    .await;
    settled.unwrap_or_else(|e| {
        panic!(
            "the Events of {ns}/{name} did not settle: {e}\n{:?}",
            read()
        )
    })
}

/// Which controller runs an ActionSet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Side {
    Kanister,
    Ours,
}

/// Runs one action (`spec`) in `ns` by `side` to its end; the ActionSet and what it left in
/// `buckets` (named `<bucket>` when there is one), the phase outputs `random` normalized.
async fn run(
    side: Side,
    ns: &str,
    spec: Value,
    buckets: &[&str],
    random: &[&str],
) -> (Value, BTreeMap<String, String>) {
    let before = store_keys(buckets).await;
    let name = match side {
        Side::Ours => start_spec(ns, spec),
        Side::Kanister => apply_create(&json!({
            "apiVersion": "cr.kanister.io/v1alpha1", "kind": "ActionSet",
            "metadata": {"generateName": format!("{}-", spec["name"].as_str().unwrap_or("run")),
                         "namespace": ns},
            "spec": {"actions": [spec]},
        })),
    };
    let a = wait_end(ns, &name).await;
    let own = random_outputs(&a, random);
    let mut subs: Vec<(&str, &str)> = own.iter().map(|(v, p)| (v.as_str(), p.as_str())).collect();
    subs.extend([(name.as_str(), "<actionset>"), (ns, "<ns>")]);
    if let [b] = buckets {
        subs.push((b, "<bucket>"));
    }
    let events = settled_events(ns, &name, &subs).await;
    let after = store_keys(buckets).await;
    if side == Side::Kanister {
        let all = get_json(&["get", "events", "-n", ns]);
        let from_ours = all["items"].as_array().into_iter().flatten().any(|e| {
            e["involvedObject"]["name"] == name.as_str()
                && e["source"]["component"].as_str().unwrap_or_default() != KANISTER_COMPONENT
        });
        assert!(
            !from_ours,
            "{name}: an Event not from Kanister's controller"
        );
    }
    let observed = observe(&a, &before, &after, &events, &subs);
    // A run that did nothing would compare equal to another: each side must have run its phases.
    assert!(
        observed["events"].contains("Normal Started Action: Executing action")
            && observed["events"].contains("Normal Ended Phase"),
        "{side:?} {ns}/{name}: {observed:#?}"
    );
    eprintln!("{side:?} {ns}/{name}: {observed:#?}");
    (a, observed)
}

/// Drops the table `items` and checks it is gone.
fn drop_items(ns: &str) {
    psql(ns, "DROP TABLE items");
    let left = psql(
        ns,
        "SELECT count(*) FROM pg_tables WHERE tablename = 'items'",
    );
    assert_eq!(left.trim(), "0", "{ns}: the table is still there");
}

/// Creates the database `shop` with [`PG_ROWS`] in the PostgreSQL of each of `namespaces`
/// ([`postgres_in`]); their [`PG_SELECT`], the same in each.
fn shop_rows(namespaces: &[&str]) -> String {
    let mut rows = Vec::new();
    for ns in namespaces {
        exec(
            ns,
            &format!("{PG_STS}-0"),
            "psql -v ON_ERROR_STOP=1 -h /var/run/postgresql -U postgres -c 'CREATE DATABASE shop'",
        );
        psql(ns, PG_ROWS);
        rows.push(psql(ns, PG_SELECT));
    }
    assert!(
        rows.windows(2).all(|w| w[0] == w[1]),
        "the databases hold the same rows"
    );
    let rows = rows.remove(0);
    assert_eq!(rows.lines().count(), 502, "{rows}");
    rows
}

/// The corpus PostgreSQL Blueprint with Kanister's kando image instead of the corpus' (ours).
fn kanister_pg_blueprint() -> String {
    let text = corpus_blueprint(PG_BLUEPRINT);
    assert!(
        text.contains(CORPUS_PG_IMAGE),
        "the corpus Blueprint names {CORPUS_PG_IMAGE}"
    );
    text.replace(CORPUS_PG_IMAGE, KANISTER_PG_IMAGE)
}

#[tokio::test]
#[ignore = "real tier: tools/test.sh --real"]
async fn corpus_postgres_backup_and_restore_by_kanister_and_by_ours_compare_and_cross_restore() {
    let (_kanister, ours_ns) = both_sides("parity").await;
    let kns = kanister::NS;
    postgres_in(kns, BUCKET).await;
    postgres_in(&ours_ns, BUCKET).await;
    apply_in(kns, &kanister_pg_blueprint());
    apply_in(&ours_ns, &corpus_blueprint(PG_BLUEPRINT));
    let rows = shop_rows(&[kns, &ours_ns]);

    // Backups, one after the other so that each run's store keys are its own.
    let ((k_backup, o_backup), mut found, (k_obs, o_obs)) = side_by_side(
        "postgresql backup",
        &ours_ns,
        (BUCKET, BUCKET),
        &[],
        |ns: &str| pg_action(ns, "backup", "postgres-bp", json!({})),
    )
    .await;
    for obs in [&k_obs, &o_obs] {
        assert!(obs["store added"].contains("/backup.sql.gz"), "{obs:#?}");
    }
    let artifact = |a: &Value| a["status"]["actions"][0]["artifacts"]["cloudObject"].clone();
    let (k_art, o_art) = (artifact(&k_backup), artifact(&o_backup));

    // Each side restores its own dump.
    drop_items(kns);
    drop_items(&ours_ns);
    // Restores `art` in `ns` by `side`; what it left, once the rows are back.
    let restored = async |side: Side, ns: &str, art: &Value, who: &str| {
        let spec = pg_action(
            ns,
            "restore",
            "postgres-bp",
            json!({"artifacts": {"cloudObject": art}}),
        );
        let (done, obs) = run(side, ns, spec, &[BUCKET], &[]).await;
        assert_eq!(done["status"]["state"], "complete", "{who}: {done:#}");
        assert_eq!(psql(ns, PG_SELECT), rows, "{who}");
        obs
    };
    let k_obs = restored(
        Side::Kanister,
        kns,
        &k_art,
        "Kanister restored its own dump",
    )
    .await;
    let o_obs = restored(Side::Ours, &ours_ns, &o_art, "ours restored its own dump").await;
    found.extend(differences("postgresql restore", &k_obs, &o_obs));

    // Each side restores the other's dump: ours Kanister's (pushed by Kanister's kando), and
    // Kanister's controller ours (pulled by Kanister's kando).
    drop_items(kns);
    drop_items(&ours_ns);
    let o_obs = restored(
        Side::Ours,
        &ours_ns,
        &k_art,
        "ours restored Kanister's dump",
    )
    .await;
    let k_obs = restored(Side::Kanister, kns, &o_art, "Kanister restored our dump").await;
    found.extend(differences(
        "postgresql restore of the other's dump",
        &k_obs,
        &o_obs,
    ));

    finish(&ours_ns, PG_EXAMPLES, found);
}

#[cfg(test)]
mod unit {
    use super::*;

    #[test]
    fn replace_word_replaces_whole_names_only() {
        let t = "pg_backups/kanister/shop ghcr.io/kanisterio kanister_backup kanister";
        assert_eq!(
            replace_word(t, "kanister", "<ns>"),
            "pg_backups/<ns>/shop ghcr.io/kanisterio kanister_backup <ns>"
        );
        assert_eq!(
            replace_word("kanister-x kanister", "kanister", "N"),
            "kanister-x N"
        );
        assert_eq!(replace_word("abc", "", "N"), "abc");
        assert_eq!(replace_word("aa", "a", "N"), "aa");
    }

    #[test]
    fn normalize_replaces_names_and_times() {
        let t = "pg_backups/parity-x1/shop-postgresql/2026-12-06T02:03:04Z/backup.sql.gz at \
                 2026-12-06T02:03:04.123456+01:00 by backup-abcde";
        assert_eq!(
            normalize(t, &[("backup-abcde", "<actionset>"), ("parity-x1", "<ns>")]),
            "pg_backups/<ns>/shop-postgresql/<time>/backup.sql.gz at <time> by <actionset>"
        );
    }

    fn event(rv: &str, name: &str, reason: &str, message: &str, count: u64) -> Value {
        json!({"metadata": {"resourceVersion": rv}, "involvedObject": {"kind": "ActionSet", "name": name},
               "type": "Normal", "reason": reason, "message": message, "count": count})
    }

    #[test]
    fn event_lines_are_the_actionsets_in_creation_order() {
        let events = [
            event("12", "a-1", "Ended Phase", "Completed phase p", 1),
            event("9", "a-1", "Started Action", "Executing action backup", 1),
            event("10", "other", "Started Action", "Executing action x", 1),
            event("11", "a-1", "Started Phase", "Executing phase p of a-1", 2),
            json!({"involvedObject": {"kind": "Pod", "name": "a-1"}, "reason": "Pulled"}),
        ];
        assert_eq!(
            event_lines(&events, "a-1", &[("a-1", "<actionset>")]),
            [
                "Normal Started Action: Executing action backup",
                "Normal Started Phase: Executing phase p of <actionset> (×2)",
                "Normal Ended Phase: Completed phase p",
            ]
        );
        assert!(event_lines(&[json!(null), json!({})], "a-1", &[]).is_empty());
    }

    fn actionset(output: Value) -> Value {
        json!({"status": {"state": "complete", "actions": [{
            "phases": [{"name": "dump", "state": "complete", "output": output}],
            "deferPhase": {"name": "clean", "state": "complete"},
            "artifacts": {"cloudObject": {"keyValue": {"backupLocation": "x/ns-1/y"}}},
        }]}})
    }

    #[test]
    fn observe_and_differences_name_the_fields_that_differ() {
        let before: BTreeSet<String> = ["old".to_string()].into();
        let after: BTreeSet<String> = ["x/ns-1/y".to_string(), "old".to_string()].into();
        let subs = [("ns-1", "<ns>")];
        let a = observe(
            &actionset(json!({"k": "v"})),
            &before,
            &after,
            &["e".into()],
            &subs,
        );
        assert_eq!(a["store added"], "x/<ns>/y");
        assert_eq!(a["store removed"], "(none)");
        assert_eq!(a["actions[0] phase dump output"], r#"{"k":"v"}"#);
        assert_eq!(a["actions[0] deferPhase clean state"], r#""complete""#);
        assert_eq!(
            a["actions[0] artifacts"],
            r#"{"cloudObject":{"keyValue":{"backupLocation":"x/<ns>/y"}}}"#
        );
        let b = observe(
            &actionset(Value::Null),
            &before,
            &before,
            &["e".into(), "f".into()],
            &subs,
        );
        let d = differences("ex", &a, &b);
        let fields: Vec<&str> = d.iter().map(|d| d.field.as_str()).collect();
        assert_eq!(
            fields,
            ["actions[0] phase dump output", "events", "store added"]
        );
        assert_eq!(d[0].ours, "(none)");
        assert!(differences("ex", &a, &a).is_empty());
        let mut c = a.clone();
        c.remove("state");
        assert_eq!(differences("ex", &a, &c)[0].ours, "(absent)");
        // Bad input: a status of the wrong shapes still yields fields, no panic.
        let odd = observe(
            &json!({"status": {"actions": "x"}}),
            &before,
            &before,
            &[],
            &subs,
        );
        assert_eq!(odd["actions"], "0");
    }

    #[test]
    fn check_fails_on_unlisted_and_on_stale_differences() {
        let d = Difference {
            example: "ex".into(),
            field: "f".into(),
            kanister: "k".into(),
            ours: "o".into(),
        };
        let known = [Known {
            example: "ex",
            field: "f",
            kanister: "k",
            ours: "o",
            why: "w",
        }];
        let known: Vec<&Known> = known.iter().collect();
        assert!(check(std::slice::from_ref(&d), &known).is_ok());
        let unlisted = check(std::slice::from_ref(&d), &[]).unwrap_err();
        assert!(
            unlisted.contains("not listed") && unlisted.contains("\"f\""),
            "{unlisted}"
        );
        let stale = check(&[], &known).unwrap_err();
        assert!(stale.contains("listed but not seen"), "{stale}");
        let other = Difference {
            ours: "o2".into(),
            ..d
        };
        assert!(check(&[other], &known).is_err());
    }

    #[test]
    fn page_lists_the_known_differences_escaped() {
        let known = [Known {
            example: "ex",
            field: "f",
            kanister: "a|b",
            ours: "c\nd",
            why: "w|x",
        }];
        let p = page(&[("one", "what")], &known);
        assert!(p.contains("BPO_BLESS=1"), "{p}");
        assert!(p.contains("- one: what\n"), "{p}");
        assert!(p.contains("| ex | `f` | `a\\|b` | `c d` | w\\|x |"), "{p}");
        assert!(page(&[], &[]).contains("None."));
    }

    /// The committed page is what [`KNOWN`] and the examples make (`BPO_BLESS=1` rewrites it).
    #[test]
    fn the_parity_page_is_current() {
        let examples: Vec<(&str, &str)> = PG_EXAMPLES
            .iter()
            .chain(TIME_LOG_EXAMPLES)
            .chain(START_STOP_EXAMPLES)
            .copied()
            .collect();
        for k in KNOWN {
            assert!(
                examples.iter().any(|(e, _)| *e == k.example),
                "KNOWN names an example no test runs: {}",
                k.example
            );
        }
        page_is_current(&page(&examples, KNOWN));
    }
}

// ---- time-log: BackupData (exec into the app), ScaleWorkload, RestoreData ---------------------

const TIME_LOG_BLUEPRINT: &str = "kanister-examples/time-log/blueprint.yaml";
/// What the app's container writes to its log volume once; the restore must bring it back.
const TIME_LOG: &str = "line one\nline two, the second\n";

/// The corpus time-log Blueprint, without its `namespace: kanister` (applied in each side's).
fn time_log_blueprint() -> String {
    let text = corpus_blueprint(TIME_LOG_BLUEPRINT);
    let line = "\n  namespace: kanister\n";
    assert!(text.contains(line), "{TIME_LOG_BLUEPRINT}: {text}");
    text.replacen(line, "\n", 1)
}

/// In `ns`: the corpus example's Deployment `time-logger` (container `test-container`, the tools
/// image, which has restic as Kanister's tools image does) with a PVC at /var/log holding
/// [`TIME_LOG`], the Blueprint, and the Profile `s3-profile` on `bucket`.
async fn time_logger(ns: &str, bucket: &str) {
    let client = real::client().await;
    support::data_plane::s3_profile(&client, ns, "s3-profile", bucket)
        .await
        .unwrap();
    apply_in(ns, &time_log_blueprint());
    let image = real::tools_image();
    crate::install::apply_yaml(&format!(
        r#"apiVersion: v1
kind: PersistentVolumeClaim
metadata: {{name: time-log, namespace: {ns}}}
spec:
  accessModes: [ReadWriteOnce]
  resources: {{requests: {{storage: 16Mi}}}}
---
apiVersion: apps/v1
kind: Deployment
metadata: {{name: time-logger, namespace: {ns}}}
spec:
  replicas: 1
  selector: {{matchLabels: {{app: time-logger}}}}
  template:
    metadata: {{labels: {{app: time-logger}}}}
    spec:
      terminationGracePeriodSeconds: 1
      containers:
      - name: test-container
        image: {image}
        imagePullPolicy: IfNotPresent
        command: [bash, -c, "exec sleep infinity"]
        volumeMounts: [{{name: logs, mountPath: /var/log}}]
      volumes: [{{name: logs, persistentVolumeClaim: {{claimName: time-log}}}}]
"#
    ))
    .unwrap();
    time_logger_rolled_out(ns);
    app_shell(
        ns,
        &format!(
            "printf '{}' > /var/log/time.log",
            TIME_LOG.replace('\n', "\\n")
        ),
    );
}

/// Waits until the time-logger Deployment of `ns` has rolled out.
fn time_logger_rolled_out(ns: &str) {
    kubectl(&[
        "rollout",
        "status",
        "-n",
        ns,
        "deployment/time-logger",
        "--timeout=180s",
    ])
    .unwrap();
}

/// Runs `script` with bash in the time-logger's container.
fn app_shell(ns: &str, script: &str) -> String {
    kubectl(&[
        "exec",
        "-n",
        ns,
        "deploy/time-logger",
        "-c",
        "test-container",
        "--",
        "bash",
        "-c",
        script,
    ])
    .unwrap_or_else(|e| panic!("exec in {ns}/time-logger: {e}"))
}

/// The corpus backup ActionSet's action, on `ns`'s time-logger and Profile.
fn time_log_action(ns: &str, action: &str, artifacts: Option<&Value>) -> Value {
    let mut a = json!({
        "name": action, "blueprint": "time-log-bp",
        "object": {"kind": "Deployment", "name": "time-logger", "namespace": ns},
        "profile": {"kind": "Profile", "name": "s3-profile", "namespace": ns},
    });
    if let Some(art) = artifacts {
        a["artifacts"] = art.clone();
    }
    a
}

#[tokio::test]
#[ignore = "real tier: tools/test.sh --real"]
async fn corpus_time_log_backup_and_restore_by_kanister_and_by_ours_compare() {
    let (_kanister, ours_ns) = both_sides("parity-tl").await;
    let kns = kanister::NS;
    // A bucket per side: the Blueprint's restic repository is `<bucket>/time-log`.
    let (k_bucket, o_bucket) = ("bpo-real-parity-tl-k", "bpo-real-parity-tl-o");
    time_logger(kns, k_bucket).await;
    time_logger(&ours_ns, o_bucket).await;
    // Made anew by each run; restic's stored size varies with the file's metadata (times).
    let random = ["backupID", "backupTag", "phySize"];

    let ((k_backup, o_backup), mut found, (k_obs, o_obs)) = side_by_side(
        "time-log backup",
        &ours_ns,
        (k_bucket, o_bucket),
        &random,
        |ns: &str| time_log_action(ns, "backup", None),
    )
    .await;
    for obs in [&k_obs, &o_obs] {
        assert!(
            obs["store added"].contains("/time-log/snapshots/<id>"),
            "{obs:#?}"
        );
    }

    // The log is lost; the restore scales the app down, restores the volume, scales it up.
    for ns in [kns, ours_ns.as_str()] {
        app_shell(ns, "rm /var/log/time.log");
    }
    let artifacts = |a: &Value| a["status"]["actions"][0]["artifacts"].clone();
    let (k_art, o_art) = (artifacts(&k_backup), artifacts(&o_backup));
    let (_, diff, _) = side_by_side(
        "time-log restore",
        &ours_ns,
        (k_bucket, o_bucket),
        &random,
        |ns: &str| time_log_action(ns, "restore", Some(if ns == kns { &k_art } else { &o_art })),
    )
    .await;
    found.extend(diff);
    for ns in [kns, ours_ns.as_str()] {
        time_logger_rolled_out(ns);
        assert_eq!(
            app_shell(ns, "cat /var/log/time.log"),
            TIME_LOG,
            "{ns}: the log is back"
        );
    }

    finish(&ours_ns, TIME_LOG_EXAMPLES, found);
}

// ---- postgres-start-stop: KubeOps, WaitV2, KubeExec, CopyVolumeData, a KubeOps deferPhase -----

const START_STOP_BLUEPRINT: &str =
    "kanister-examples/postgresql/postgres-start-stop-blueprint.yaml";
const START_STOP_EXAMPLES: &[(&str, &str)] = &[
    (
        "postgresql start-stop backup",
        "`kanister-examples/postgresql/postgres-start-stop-blueprint.yaml`, action `backup` on a \
         StatefulSet: KubeOps creates a pod of `bitnamilegacy/postgresql:17` holding a psql \
         session (password from the phase's Secret), WaitV2 until it is ready, KubeExec into it \
         `pg_backup_start` and `pg_backup_stop` around CopyVolumeData of the database's volume \
         (each controller's default tools image), a KubeOps deferPhase deletes the pod",
    ),
    (
        "postgresql start-stop restore",
        "the same Blueprint's `restore` after the table was dropped (ScaleWorkload to 0, \
         RestoreData of the volume in a pod of `ghcr.io/kanisterio/kanister-tools:0.110.0`, a \
         ScaleWorkload deferPhase back to the pods the action began with), rows checked",
    ),
    (
        "postgresql start-stop delete",
        "the same Blueprint's `delete` of that backup (DeleteData: restic forgets the snapshot)",
    ),
];

/// What [`observe`] makes of one run.
type Observed = BTreeMap<String, String>;

/// Runs the action `spec(ns)` by Kanister in its namespace, then by ours in `ours_ns` (each on
/// its own bucket); both must complete. Their ActionSets (Kanister's, ours) and the differences
/// of `example`.
async fn side_by_side(
    example: &str,
    ours_ns: &str,
    buckets: (&str, &str),
    random: &[&str],
    spec: impl Fn(&str) -> Value,
) -> ((Value, Value), Vec<Difference>, (Observed, Observed)) {
    let kns = kanister::NS;
    let (k, k_obs) = run(Side::Kanister, kns, spec(kns), &[buckets.0], random).await;
    let (o, o_obs) = run(Side::Ours, ours_ns, spec(ours_ns), &[buckets.1], random).await;
    assert_eq!(k["status"]["state"], "complete", "{k:#}");
    assert_eq!(o["status"]["state"], "complete", "{o:#}");
    let found = differences(example, &k_obs, &o_obs);
    ((k, o), found, (k_obs, o_obs))
}

#[tokio::test]
#[ignore = "real tier: tools/test.sh --real"]
async fn corpus_postgres_start_stop_backup_restore_delete_by_kanister_and_by_ours_compare() {
    let (_kanister, ours_ns) = both_sides("parity-ss").await;
    let kns = kanister::NS;
    // A bucket per side: CopyVolumeData's restic repository is under a fixed prefix of it.
    let buckets = ("bpo-real-parity-ss-k", "bpo-real-parity-ss-o");
    // The Blueprint as written on both sides: its pods run no kando.
    let blueprint = corpus_blueprint(START_STOP_BLUEPRINT);
    for (ns, bucket) in [(kns, buckets.0), (ours_ns.as_str(), buckets.1)] {
        postgres_in(ns, bucket).await;
        apply_in(ns, &blueprint);
    }
    let rows = shop_rows(&[kns, &ours_ns]);
    // Made anew by each run: restic's snapshot IDs, tags and stored sizes, the backup pod's
    // name; and what each side's own data directory holds (its WAL and statistics files differ).
    let random = [
        "backupID",
        "backupTag",
        "phySize",
        "name",
        "fileCount",
        "size",
    ];
    let action = |name: &'static str, artifacts: Option<Value>| {
        move |ns: &str| {
            let extra = artifacts
                .as_ref()
                .map_or(json!({}), |a| json!({"artifacts": a}));
            pg_action(ns, name, "postgres-bp", extra)
        }
    };

    let mut found = Vec::new();
    let ((k_backup, o_backup), diff, (k_obs, o_obs)) = side_by_side(
        "postgresql start-stop backup",
        &ours_ns,
        buckets,
        &random,
        action("backup", None),
    )
    .await;
    for obs in [&k_obs, &o_obs] {
        assert!(obs["store added"].contains("/snapshots/<id>"), "{obs:#?}");
    }
    found.extend(diff);
    // The deferPhase deleted the psql pod the phases exec'd into.
    for ns in [kns, ours_ns.as_str()] {
        support::poll(real::WAIT, || async {
            let pods = kubectl(&["get", "pods", "-n", ns, "-o", "name"]).ok()?;
            (!pods.contains("postgres-backup-session")).then_some(())
        })
        .await
        .unwrap_or_else(|e| panic!("{ns}: the backup pod is still there: {e}"));
    }

    // The table is lost; the restore brings the volume back as it was during the backup.
    drop_items(kns);
    drop_items(&ours_ns);
    let art = |a: &Value| a["status"]["actions"][0]["artifacts"]["cloudObject"].clone();
    let (k_art, o_art) = (art(&k_backup), art(&o_backup));
    // Action `name` on the backup of the side it runs on.
    let of_backup = |name: &'static str| {
        let (kns, k_art, o_art) = (kns, &k_art, &o_art);
        move |ns: &str| {
            let a = if ns == kns { k_art } else { o_art };
            action(name, Some(json!({"cloudObject": a})))(ns)
        }
    };
    let ((_, _), diff, _) = side_by_side(
        "postgresql start-stop restore",
        &ours_ns,
        buckets,
        &random,
        of_backup("restore"),
    )
    .await;
    found.extend(diff);
    for ns in [kns, ours_ns.as_str()] {
        pg_ready(ns);
        assert_eq!(psql(ns, PG_SELECT), rows, "{ns}: the rows are back");
    }

    let ((_, _), diff, (k_obs, o_obs)) = side_by_side(
        "postgresql start-stop delete",
        &ours_ns,
        buckets,
        &random,
        of_backup("delete"),
    )
    .await;
    for obs in [&k_obs, &o_obs] {
        assert!(obs["store removed"].contains("/snapshots/<id>"), "{obs:#?}");
    }
    found.extend(diff);

    finish(&ours_ns, START_STOP_EXAMPLES, found);
}
