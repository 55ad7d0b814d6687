//! BackupDataStats and CheckRepository against real restic repositories:
//! restic (tools/data-plane) runs through kwok's local exec on this machine
//! against gofakes3, an S3-compatible object store. A real backup is made
//! with BackupData first; the stats are compared with `restic stats` run
//! directly (not through a pod) on the same repository.

use crate::support;

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use crate::support::controller::Controller;
use crate::support::data_plane::{DataTest, out_str};
use crate::support::files::{TempDir, noise};
use crate::support::kanister;
use blueprint_operator::functions::Output;
use blueprint_operator::model::State;
use blueprint_operator::restic::{DEFAULT_ENCRYPTION_KEY, parse_restic_size_bytes};
use kube::Client;
use serde_json::{Value, json};

/// Bound for an ActionSet to finish.
const FINISH: Duration = Duration::from_secs(300);
const BUCKET: &str = "bpo-stats";
const PROFILE: &str = "s3";

/// Client and a fresh namespace with an s3Compliant Profile `PROFILE` on the test object store.
async fn setup(prefix: &str) -> Option<(Client, String)> {
    support::data_plane::setup(prefix, PROFILE, BUCKET).await
}

/// [`setup`] and what a data-mover test starts from there, the directory tagged `tag`.
async fn data_test(prefix: &str, tag: &str) -> anyhow::Result<Option<DataTest>> {
    support::data_plane::data_test(prefix, PROFILE, BUCKET, tag).await
}

/// A tree where the modes differ: two files with the same contents
/// (files-by-contents counts them once), an empty file, a big file (several
/// blobs), nested dirs, a name with a space.
fn write_tree(root: &Path, seed: u64) {
    let same = noise(seed, 300_000);
    let files: Vec<(&str, Vec<u8>)> = vec![
        ("a.txt", b"hello from BackupDataStats\n".to_vec()),
        ("empty", Vec::new()),
        ("big/blob.bin", noise(seed + 1, 3_500_000)),
        ("dup/one.bin", same.clone()),
        ("dup/deep/two.bin", same),
        ("with space/x y.txt", b"spaces\n".to_vec()),
    ];
    support::data_plane::write_files(root, &files);
}

/// `restic <args>` on `<BUCKET>/<path>` run directly (not through a pod).
fn restic_direct(path: &str, key: &str, args: &[&str]) -> anyhow::Result<String> {
    support::data_plane::restic_direct(BUCKET, path, key, args)
}

/// The value of the line "<label>: <value>" in restic's text output.
fn text_value(text: &str, label: &str) -> Option<String> {
    text.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        (k.trim() == label).then(|| v.trim().to_string())
    })
}

/// BackupData, then BackupDataStats of that snapshot in every restic mode:
/// Kanister's keys, and values equal to what `restic stats` prints (text)
/// and consistent with its `--json` numbers.
#[tokio::test]
async fn stats_of_a_real_backup_match_restic() -> anyhow::Result<()> {
    let Some(data) = data_test("stats", "modes").await? else {
        return Ok(());
    };
    let (client, ns) = (&data.client, &data.ns);
    let src = data.dir.0.join("src");
    write_tree(&src, 11);
    let path = format!("{ns}/stats");
    let key = "stats key with spaces";
    let out = data
        .call("BackupData", data.backup_args(&src, &path, key))
        .await?;
    let id = out_str(&out, "backupID");

    let mut counts = BTreeMap::new();
    for mode in [
        None,
        Some("restore-size"),
        Some("raw-data"),
        Some("blobs-per-file"),
        Some("files-by-contents"),
    ] {
        let mut args = json!({"namespace": ns, "backupArtifactPrefix": path, "backupID": id,
                              "encryptionKey": key, "podLabels": {"purpose": "stats"}});
        if let Some(m) = mode {
            args["statsMode"] = json!(m);
        }
        let st = data.call("BackupDataStats", args).await?;
        let keys: Vec<&str> = st.keys().map(String::as_str).collect();
        assert_eq!(keys, ["mode", "fileCount", "size", "version"], "{st:?}");
        let m = mode.unwrap_or("restore-size");
        assert_eq!(out_str(&st, "mode"), m, "{st:?}");
        assert_eq!(out_str(&st, "version"), "v0.0.0");

        let text = restic_direct(&path, key, &["stats", &id, "--mode", m])?;
        let count_label = if m == "raw-data" {
            "Total Blob Count"
        } else {
            "Total File Count"
        };
        assert_eq!(
            Some(out_str(&st, "fileCount")),
            text_value(&text, count_label),
            "{m}: {st:?} vs restic:\n{text}"
        );
        assert_eq!(
            Some(out_str(&st, "size")),
            text_value(&text, "Total Size"),
            "{m}: {st:?} vs restic:\n{text}"
        );
        let js: Value = serde_json::from_str(&restic_direct(
            &path,
            key,
            &["stats", &id, "--mode", m, "--json", "-q"],
        )?)?;
        let n = if m == "raw-data" {
            &js["total_blob_count"]
        } else {
            &js["total_file_count"]
        };
        assert_eq!(out_str(&st, "fileCount"), n.to_string(), "{m}: {js}");
        let bytes = js["total_size"].as_i64().expect("total_size") as f64;
        let ours = parse_restic_size_bytes(&out_str(&st, "size")) as f64;
        assert!(
            (ours - bytes).abs() <= bytes * 0.001 + 1.0,
            "{m}: size {} is {ours} B, restic says {bytes} B",
            out_str(&st, "size")
        );
        counts.insert(m.to_string(), out_str(&st, "fileCount").parse::<u64>()?);
    }
    // The tree has two files with the same contents: files-by-contents
    // counts fewer files than restore-size (which also counts directories).
    assert!(
        counts["files-by-contents"] < counts["restore-size"],
        "{counts:?}"
    );
    support::function_pods_gone(client, ns).await?;
    Ok(())
}

/// BackupDataStats that cannot give stats fail with Kanister's texts.
#[tokio::test]
async fn stats_fail_clearly() -> anyhow::Result<()> {
    let Some(data) = data_test("stats-err", "err").await? else {
        return Ok(());
    };
    let (client, ns) = (&data.client, &data.ns);
    let src = data.dir.0.join("src");
    write_tree(&src, 5);
    let path = format!("{ns}/default-key");
    // No encryptionKey: Kanister's default key, for BackupData and BackupDataStats alike.
    let args = json!({"namespace": ns, "pod": data.pod, "container": "app",
                      "includePath": src.to_str().unwrap(), "backupArtifactPrefix": path});
    let out = data.call("BackupData", args).await?;
    let id = out_str(&out, "backupID");
    let args = json!({"namespace": ns, "backupArtifactPrefix": format!("{BUCKET}/{path}"),
                      "backupID": id});
    let st = data.call("BackupDataStats", args).await?;
    let text = restic_direct(&path, DEFAULT_ENCRYPTION_KEY, &["stats", &id])?;
    assert_eq!(
        Some(out_str(&st, "fileCount")),
        text_value(&text, "Total File Count")
    );

    // A snapshot ID the repository does not have: restic counts nothing.
    let args = json!({"namespace": ns, "backupArtifactPrefix": path, "backupID": "deadbeef"});
    let e = data
        .call_err("BackupDataStats", args, "unknown snapshot")
        .await;
    assert!(
        e.starts_with("BackupDataStats: Failed to parse snapshot stats from logs"),
        "{e}"
    );
    assert!(e.contains("deadbeef"), "{e}");

    // The wrong key.
    let args = json!({"namespace": ns, "backupArtifactPrefix": path, "backupID": id,
                      "encryptionKey": "not the key"});
    let e = data.call_err("BackupDataStats", args, "wrong key").await;
    assert!(
        e.starts_with("BackupDataStats: Failed to get backup stats: Failed to exec command in pod"),
        "{e}"
    );
    assert!(e.contains("wrong password"), "{e}");

    // No repository there.
    let nothing = format!("{ns}/nothing");
    let args = json!({"namespace": ns, "backupArtifactPrefix": nothing, "backupID": id});
    let e = data
        .call_err("BackupDataStats", args, "no repository")
        .await;
    assert!(
        e.starts_with("BackupDataStats: Failed to get backup stats: "),
        "{e}"
    );
    assert!(e.contains("Is there a repository"), "{e}");

    // Argument errors, before any pod is made.
    for (args, want) in [
        (
            json!({"namespace": ns, "backupArtifactPrefix": path, "backupID": id, "statsMode": "size"}),
            "BackupDataStats: argument `statsMode`: unknown mode \"size\"",
        ),
        (
            json!({"namespace": ns, "backupArtifactPrefix": path}),
            "BackupDataStats: argument `backupID`",
        ),
        (
            json!({"namespace": ns, "backupArtifactPrefix": path, "backupID": id, "insecureTLS": true}),
            "BackupDataStats: argument `insecureTLS`: argument insecureTLS is not supported",
        ),
    ] {
        let e = data
            .call_err("BackupDataStats", args.clone(), "bad args")
            .await;
        assert!(e.starts_with(want), "{args}: {e}");
    }
    let e = data
        .call_err_with(
            "BackupDataStats",
            json!({"namespace": ns, "backupArtifactPrefix": path, "backupID": id}),
            &json!({}),
            "no Profile",
        )
        .await;
    assert!(
        e.starts_with("BackupDataStats: Failed to validate Profile: Profile must be non-nil"),
        "{e}"
    );
    support::function_pods_gone(client, ns).await?;
    Ok(())
}

fn check(out: &Output) -> (String, String) {
    let keys: Vec<&str> = out.keys().map(String::as_str).collect();
    assert_eq!(
        keys,
        ["passwordIncorrect", "repoUnavailable", "version"],
        "{out:?}"
    );
    assert_eq!(out_str(out, "version"), "v0.0.0");
    (
        out_str(out, "passwordIncorrect"),
        out_str(out, "repoUnavailable"),
    )
}

/// CheckRepository on an existing repository (right key, default key),
/// with a wrong key, on a missing repository, and on a location restic
/// cannot use.
#[tokio::test]
async fn check_repository_outputs() -> anyhow::Result<()> {
    let Some(data) = data_test("check", "check").await? else {
        return Ok(());
    };
    let (client, ns) = (&data.client, &data.ns);
    let src = data.dir.0.join("src");
    write_tree(&src, 3);
    let path = format!("{ns}/repo");
    let key = "the right key";
    data.call("BackupData", data.backup_args(&src, &path, key))
        .await?;
    let f = || "false".to_string();
    let t = || "true".to_string();

    let args = json!({"backupArtifactPrefix": path, "encryptionKey": key,
                      "podAnnotations": {"note": "check"}});
    let out = data.call("CheckRepository", args).await?;
    assert_eq!(check(&out), (f(), f()));
    // The bucket given explicitly is the same repository.
    let args = json!({"backupArtifactPrefix": format!("{BUCKET}/{path}"), "encryptionKey": key,
                      "insecureTLS": false});
    let out = data.call("CheckRepository", args).await?;
    assert_eq!(check(&out), (f(), f()));

    let args = json!({"backupArtifactPrefix": path, "encryptionKey": "a wrong key"});
    let out = data.call("CheckRepository", args).await?;
    assert_eq!(check(&out), (t(), f()));
    // Without encryptionKey: Kanister's default key, which this repository does not have.
    let args = json!({"backupArtifactPrefix": path});
    let out = data.call("CheckRepository", args).await?;
    assert_eq!(check(&out), (t(), f()));

    let missing = format!("{ns}/no-repo-here");
    let args = json!({"backupArtifactPrefix": missing, "encryptionKey": key});
    let out = data.call("CheckRepository", args).await?;
    assert_eq!(check(&out), (f(), t()));
    // Checking made no repository.
    let e = restic_direct(&missing, key, &["cat", "config"]).expect_err("no repository");
    assert!(e.to_string().contains("Is there a repository"), "{e}");

    // A repository created with the default key.
    let dpath = format!("{ns}/default");
    data.call(
        "BackupData",
        json!({"namespace": ns, "pod": data.pod, "container": "app",
               "includePath": src.to_str().unwrap(), "backupArtifactPrefix": dpath}),
    )
    .await?;
    let args = json!({"backupArtifactPrefix": dpath});
    let out = data.call("CheckRepository", args).await?;
    assert_eq!(check(&out), (f(), f()));

    // An endpoint restic cannot parse: neither a wrong key nor a missing repository.
    let mut bad = data.params.clone();
    bad["Profile"]["Location"]["Endpoint"] = json!("http://127.0.0.1:9/%zz");
    let e = data
        .call_err_with(
            "CheckRepository",
            json!({"backupArtifactPrefix": path}),
            &bad,
            "bad endpoint",
        )
        .await;
    assert!(
        e.starts_with("CheckRepository: Failed to list snapshots: Failed to exec command in pod"),
        "{e}"
    );
    assert!(e.contains("invalid URL escape"), "{e}");

    // Argument and Profile errors.
    let e = data
        .call_err("CheckRepository", json!({}), "no prefix")
        .await;
    assert!(
        e.starts_with("CheckRepository: argument `backupArtifactPrefix`"),
        "{e}"
    );
    let args = json!({"backupArtifactPrefix": path, "namespace": ns});
    let e = data
        .call_err("CheckRepository", args, "namespace is not an argument")
        .await;
    assert!(
        e.starts_with("CheckRepository: argument `namespace`: argument namespace is not supported"),
        "{e}"
    );
    let e = data
        .call_err_with(
            "CheckRepository",
            json!({"backupArtifactPrefix": path}),
            &json!({}),
            "no Profile",
        )
        .await;
    assert!(
        e.starts_with("CheckRepository: Profile must be non-nil"),
        "{e}"
    );
    support::function_pods_gone(client, ns).await?;
    Ok(())
}

// ---------------------------------------------------------------------------
// Through the executor (the controller binary, as tests/e2e/data.rs runs it).

/// A Blueprint whose backup action runs BackupData, then BackupDataStats of
/// the new snapshot (its ID from the phase output) and CheckRepository; the
/// stats and check outputs become output artifacts.
#[tokio::test]
async fn stats_and_check_through_the_executor() -> anyhow::Result<()> {
    let Some((client, ns)) = setup("stats-bp").await else {
        return Ok(());
    };
    support::data_plane::app_pod(&client, &ns).await?;
    let dir = TempDir::new("bp");
    let src = dir.0.join("data");
    write_tree(&src, 17);
    let actions = json!({"backup": {
            "outputArtifacts": {
                "stats": {"keyValue": {
                    "id": "{{ .Phases.backup.Output.backupID }}",
                    "mode": "{{ .Phases.stats.Output.mode }}",
                    "fileCount": "{{ .Phases.stats.Output.fileCount }}",
                    "size": "{{ .Phases.stats.Output.size }}",
                    "passwordIncorrect": "{{ .Phases.check.Output.passwordIncorrect }}",
                    "repoUnavailable": "{{ .Phases.check.Output.repoUnavailable }}",
                }},
            },
            "phases": [
                {"func": "BackupData", "name": "backup", "args": {
                    "namespace": "{{ .Deployment.Namespace }}",
                    "pod": "{{ index .Deployment.Pods 0 }}",
                    "container": "app",
                    "includePath": src.to_str().unwrap(),
                    "backupArtifactPrefix": "{{ .Profile.Location.Bucket }}/bp"}},
                {"func": "BackupDataStats", "name": "stats", "args": {
                    "namespace": "{{ .Deployment.Namespace }}",
                    "backupArtifactPrefix": "{{ .Profile.Location.Bucket }}/bp",
                    "backupID": "{{ .Phases.backup.Output.backupID }}",
                    "statsMode": "raw-data"}},
                {"func": "CheckRepository", "name": "check", "args": {
                    "backupArtifactPrefix": "{{ .Profile.Location.Bucket }}/bp"}},
            ],
    }});
    kanister::create_blueprint(&client, &ns, "stats", actions).await?;
    let ctl = Controller::start(&ns, &[]);
    let backup = json!({
        "name": "backup", "blueprint": "stats",
        "object": kanister::deployment_object(&ns, "app"),
        "profile": {"name": PROFILE, "namespace": ns},
    });
    kanister::create_actionset(&client, &ns, "backup", backup).await?;
    let done = support::wait_actionset_done(&client, &ns, "backup", FINISH).await;
    ctl.kill().await;
    let done = done?;
    let st = done.status.as_ref().expect("status");
    assert_eq!(st.state, State::Complete, "{st:?}");
    let arts = serde_json::to_value(&st.actions[0].artifacts)?;
    let kv = &arts["stats"]["keyValue"];
    let id = kv["id"].as_str().unwrap_or_default();
    assert!(!id.is_empty(), "{arts}");
    let text = restic_direct(
        "bp",
        DEFAULT_ENCRYPTION_KEY,
        &["stats", id, "--mode", "raw-data"],
    )?;
    assert_eq!(kv["mode"], "raw-data", "{arts}");
    assert_eq!(
        kv["fileCount"].as_str().map(str::to_string),
        text_value(&text, "Total Blob Count"),
        "{arts} vs restic:\n{text}"
    );
    assert_eq!(
        kv["size"].as_str().map(str::to_string),
        text_value(&text, "Total Size"),
        "{arts} vs restic:\n{text}"
    );
    assert_eq!(kv["passwordIncorrect"], "false", "{arts}");
    assert_eq!(kv["repoUnavailable"], "false", "{arts}");
    support::function_pods_gone(&client, &ns).await?;
    Ok(())
}
