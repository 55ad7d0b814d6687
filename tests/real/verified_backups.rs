//! Verified backups on the real node. The corpus PostgreSQL Blueprint (unmodified) backs up a
//! real PostgreSQL from an ActionSchedule; `spec.verify` restores each backup into a second
//! PostgreSQL StatefulSet of the namespace (an ActionSet acts in its own namespace) and a check
//! action counts its rows. A backup truncated in the object
//! store then fails its verification: the run is marked unverified, the controller's metrics make
//! the failing-verification alert fire, and retention keeps the older verified backup although
//! `keepLast` is 1.

use blueprint_operator::scheduler::plan::run_now_name;
use bytes::Bytes;
use serde_json::{Value, json};

use crate::databases::{
    PG_BLUEPRINT, PG_SELECT, PG_STS, apply_in, corpus_blueprint, create_shop, postgres_in,
    postgres_instance_in, psql, psql_on,
};
use crate::functions::{schedule_runs, wait_end, wait_until};
use crate::install::{NS, installed_namespace};
use crate::real::{self, ctl, get_json, kubectl};
use crate::support;
use crate::support::data_plane::store_client;

#[path = "../e2e/monitoring/eval.rs"]
mod eval;

const BUCKET: &str = "bpo-real-verify";
const SCHEDULE: &str = "pg-nightly";
/// The Blueprint of the verification: the corpus one under another name, plus `check`.
const VERIFY_BLUEPRINT: &str = "postgres-verify-bp";
/// The scratch PostgreSQL the backups are restored into (instance `scratch`).
const SCRATCH: &str = "scratch";
const SCRATCH_STS: &str = "scratch-postgresql";

/// The corpus PostgreSQL Blueprint named [`VERIFY_BLUEPRINT`], its actions untouched, with an
/// action `check` that counts the restored rows and fails unless they are the expected number
/// (the schedule's option `expectedRows`, which the verification run inherits).
fn verify_blueprint(ns: &str) -> String {
    let mut bp: Value = serde_yaml::from_str(&corpus_blueprint(PG_BLUEPRINT)).unwrap();
    bp["metadata"] = json!({"name": VERIFY_BLUEPRINT, "namespace": ns});
    let image = bp["actions"]["restore"]["phases"][0]["args"]["image"].clone();
    let script = r#"export PGHOST='{{ index .Object.metadata.labels "app.kubernetes.io/instance" }}-postgresql.{{ .StatefulSet.Namespace }}.svc.cluster.local'
export PGUSER=postgres
export PGPASSWORD='{{ index .Phases.countRows.Secrets.pgSecret.Data "postgres-password" | toString }}'
rows=$(psql -tAc 'SELECT count(*) FROM items' shop)
echo "restored rows: $rows, expected {{ .Options.expectedRows }}"
test "$rows" = '{{ .Options.expectedRows }}'"#;
    bp["actions"]["check"] = json!({
        "kind": "StatefulSet",
        "phases": [{
            "func": "KubeTask",
            "name": "countRows",
            "objects": {"pgSecret": {
                "kind": "Secret",
                "name": "{{ index .Object.metadata.labels \"app.kubernetes.io/instance\" }}-postgresql",
                "namespace": "{{ .StatefulSet.Namespace }}"
            }},
            "args": {
                "image": image,
                "namespace": "{{ .StatefulSet.Namespace }}",
                "command": ["bash", "-o", "errexit", "-o", "pipefail", "-c", script]
            }
        }]
    });
    bp.to_string()
}

fn schedule(ns: &str) -> String {
    json!({
        "apiVersion": "blueprint-operator.io/v1alpha1",
        "kind": "ActionSchedule",
        "metadata": {"name": SCHEDULE, "namespace": ns},
        "spec": {
            // Runs come from run-now tokens: the test decides when.
            "schedule": "0 0 1 1 *",
            "actionSetTemplate": {"actions": [{
                "name": "backup",
                "blueprint": "postgres-bp",
                "object": {"kind": "StatefulSet", "name": PG_STS, "namespace": ns},
                "profile": {"name": "s3", "namespace": ns},
                "options": {"expectedRows": "502"}
            }]},
            "retention": {"keepLast": 1},
            "verify": {
                "every": 1,
                "action": "restore",
                "checkAction": "check",
                "blueprint": VERIFY_BLUEPRINT,
                "object": {"kind": "StatefulSet", "name": SCRATCH_STS, "namespace": ns}
            }
        }
    })
    .to_string()
}

fn state(a: &Value) -> &str {
    a["status"]["state"].as_str().unwrap_or_default()
}

/// Starts a run with a run-now token; returns the run once it ended.
async fn run_now(ns: &str, token: &str) -> Value {
    kubectl(&[
        "annotate",
        "--overwrite",
        "-n",
        ns,
        "actionschedule",
        SCHEDULE,
        &format!("blueprint-operator.io/run-now={token}"),
    ])
    .unwrap();
    let name = run_now_name(SCHEDULE, token);
    wait_end(ns, &name).await
}

/// Waits until the run `name` carries its verification outcome; returns the run.
async fn verified(ns: &str, name: &str) -> Value {
    let what = format!("run {name} was not marked verified or unverified");
    wait_until(ns, name, &what, |a| {
        a["metadata"]["labels"]["blueprint-operator.io/verified"].is_string()
    })
    .await
}

/// Truncates the object of the backup `run` to half its bytes, as a broken upload or a
/// damaged store would leave it.
async fn truncate_backup(run: &Value) -> String {
    let location =
        run["status"]["actions"][0]["artifacts"]["cloudObject"]["keyValue"]["backupLocation"]
            .as_str()
            .unwrap_or_else(|| panic!("no backupLocation artifact: {run:#}"))
            .to_string();
    let store = store_client();
    let keys = store.list_all(BUCKET, "", None).await.unwrap();
    let key = keys
        .into_iter()
        .find(|k| k.ends_with(&location))
        .unwrap_or_else(|| panic!("no object for {location} in {BUCKET}"));
    let mut stream = store.get_object(BUCKET, &key).await.unwrap();
    let mut bytes = Vec::new();
    while let Some(chunk) = stream.next_chunk().await.unwrap() {
        bytes.extend_from_slice(&chunk);
    }
    assert!(bytes.len() > 64, "{key}: {} bytes", bytes.len());
    bytes.truncate(bytes.len() / 2);
    store
        .put_object(BUCKET, &key, Bytes::from(bytes))
        .await
        .unwrap();
    key
}

/// A scraped sample: metric name, labels, value.
type Scraped = (String, Vec<(String, String)>, f64);

/// The series of this test's schedule (`namespace=ns, schedule=SCHEDULE`) in a scrape of the
/// controller replica that exports them (the one running the scheduler): metric name, labels,
/// value.
fn scrape(ns: &str) -> Vec<Scraped> {
    let pods = real::pod_names(NS, "app.kubernetes.io/component=controller").unwrap_or_default();
    let ours = format!("namespace=\"{ns}\",schedule=\"{SCHEDULE}\"");
    pods.iter()
        .map(|pod| {
            let path = format!("/api/v1/namespaces/{NS}/pods/{pod}:9090/proxy/metrics");
            let text = kubectl(&["get", "--raw", &path]).unwrap_or_default();
            text.lines()
                .filter(|l| !l.starts_with('#') && l.contains(&ours))
                .filter_map(|l| {
                    let (name, rest) = l.split_once('{')?;
                    let (labels, value) = rest.rsplit_once("} ")?;
                    let labels = labels
                        .split(',')
                        .filter_map(|kv| {
                            let (k, v) = kv.split_once('=')?;
                            Some((k.to_string(), v.trim_matches('"').to_string()))
                        })
                        .collect();
                    Some((name.to_string(), labels, value.trim().parse().ok()?))
                })
                .collect::<Vec<_>>()
        })
        .find(|series| !series.is_empty())
        .unwrap_or_default()
}

/// The value of `metric` of this test's schedule, in [`scrape`].
fn scraped(ns: &str, metric: &str) -> Option<f64> {
    scrape(ns).into_iter().find(|s| s.0 == metric).map(|s| s.2)
}

/// Whether the shipped alert `name` fires on this test's schedule, evaluated on a scrape.
fn fires(ns: &str, name: &str) -> bool {
    let path = support::repo_root().join("manifests/monitoring/prometheusrule.yaml");
    let rule: Value = serde_yaml::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let expr = rule["spec"]["groups"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|g| g["rules"].as_array().into_iter().flatten())
        .find(|r| r["alert"] == name)
        .and_then(|r| r["expr"].as_str())
        .unwrap_or_else(|| panic!("no alert {name} in the PrometheusRule"))
        .to_string();
    let scraped = scrape(ns);
    let labels: Vec<Vec<(&str, &str)>> = scraped
        .iter()
        .map(|s| s.1.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect())
        .collect();
    let series: Vec<eval::Series> = scraped
        .iter()
        .zip(&labels)
        .map(|(s, l)| eval::Series(&s.0, l, s.2))
        .collect();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64();
    match eval::eval(&expr, &series, now) {
        eval::Value::Vector(v) => v.iter().any(|(l, _)| {
            l.get("namespace").map(String::as_str) == Some(ns)
                && l.get("schedule").map(String::as_str) == Some(SCHEDULE)
        }),
        eval::Value::Scalar(x) => panic!("{name}: a scalar ({x})"),
    }
}

#[tokio::test]
#[ignore = "real tier: tools/test.sh --real"]
async fn scheduled_backups_are_verified_by_a_restore_and_a_truncated_one_is_not() {
    let ns = installed_namespace("verified").await;
    postgres_in(&ns, BUCKET).await;
    postgres_instance_in(&ns, SCRATCH);
    create_shop(&ns);
    let rows = psql(&ns, PG_SELECT);
    assert_eq!(rows.lines().count(), 502);
    apply_in(&ns, &corpus_blueprint(PG_BLUEPRINT));
    apply_in(&ns, &verify_blueprint(&ns));
    apply_in(&ns, &schedule(&ns));

    // The first backup is verified as soon as it completes: restored into the scratch
    // PostgreSQL, all rows there, the check passed.
    let first = run_now(&ns, "one").await;
    assert_eq!(state(&first), "complete", "{first:#}");
    let first_name = first["metadata"]["name"].as_str().unwrap().to_string();
    let first = verified(&ns, &first_name).await;
    assert_eq!(
        first["metadata"]["labels"]["blueprint-operator.io/verified"], "true",
        "{first:#}"
    );
    let restored = psql_on(&ns, &format!("{SCRATCH_STS}-0"), PG_SELECT);
    assert_eq!(
        restored, rows,
        "the scratch database holds the backup's rows"
    );
    let s = get_json(&["get", "actionschedule", "-n", &ns, SCHEDULE]);
    assert_eq!(s["status"]["lastVerifiedRun"], first_name.as_str(), "{s:#}");
    assert!(s["status"]["lastVerifiedTime"].is_string(), "{s:#}");
    // The controller exports the verified backup's time (its housekeeping pass sets the gauges).
    support::poll(real::WAIT, || async {
        scraped(
            &ns,
            "blueprint_operator_actionschedule_last_verified_timestamp_seconds",
        )
        .filter(|t| *t > 0.0)
    })
    .await
    .expect("the controller exports the newest verified backup's time");
    assert!(
        !fires(&ns, "BlueprintOperatorVerificationFailing"),
        "{:?}",
        scrape(&ns)
    );

    // Later backups are verified on demand only: the second is damaged before its turn.
    kubectl(&[
        "patch",
        "-n",
        &ns,
        "actionschedule",
        SCHEDULE,
        "--type=merge",
        "-p",
        r#"{"spec": {"verify": {"every": null, "schedule": "0 0 1 1 *"}}}"#,
    ])
    .unwrap();
    let second = run_now(&ns, "two").await;
    assert_eq!(state(&second), "complete", "{second:#}");
    let second_name = second["metadata"]["name"].as_str().unwrap().to_string();
    let key = truncate_backup(&second).await;
    let out = ctl(&ns, &["verify", &second_name]);
    assert!(
        out.status.success(),
        "ctl verify: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let second = verified(&ns, &second_name).await;
    assert_eq!(
        second["metadata"]["labels"]["blueprint-operator.io/verified"], "false",
        "the truncated {key} was verified: {second:#}"
    );
    let s = support::poll(real::WAIT, || async {
        let s = get_json(&["get", "actionschedule", "-n", &ns, SCHEDULE]);
        (s["status"]["consecutiveVerificationFailures"] == 1).then_some(s)
    })
    .await
    .expect("the schedule counts the failed verification");
    assert_eq!(s["status"]["lastVerifiedRun"], first_name.as_str(), "{s:#}");

    // The alert on failing verifications fires on what the controller exports.
    let failures = support::poll(real::WAIT, || async {
        scraped(
            &ns,
            "blueprint_operator_actionschedule_verification_failures",
        )
        .filter(|v| *v > 0.0)
    })
    .await
    .expect("the controller exports the failed verification");
    assert_eq!(failures, 1.0);
    assert!(
        fires(&ns, "BlueprintOperatorVerificationFailing"),
        "{:?}",
        scrape(&ns)
    );

    // keepLast 1 keeps the newest complete run; the newest verified one stays beside it.
    let kept = schedule_runs(&ns, SCHEDULE);
    assert!(
        kept.contains(&first_name),
        "the verified backup was rotated: {kept}"
    );
    assert!(kept.contains(&second_name), "{kept}");
    let runs = ctl(&ns, &["runs", SCHEDULE]);
    let table = String::from_utf8_lossy(&runs.stdout);
    assert!(runs.status.success(), "{table}");

    kubectl(&["delete", "namespace", &ns, "--wait=false"]).unwrap();
}
