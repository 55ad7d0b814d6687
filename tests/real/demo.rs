//! `tools/demo.sh --exit-after-restore` (the default demo, ending after its restore) on the real
//! tier's cluster, checked against what it promises from its output and from the cluster while it
//! runs: PostgreSQL running on the real node, the ActionSchedule's run of the corpus Blueprint
//! complete with its dump in the object store, the restore complete and the rows read back
//! exactly, pods and ActionSets shown as they progress, the time of each part; then exit 0 with its
//! namespace, object store and files gone.
//!
//! The real tier already holds the one real node of the machine (and its lock), so the demo runs
//! here on that cluster (`BPO_DEMO_KUBECONFIG`) instead of starting its own: what it skips is
//! taking the lock and `cluster.sh up/down --real-node`, the same commands `tools/test.sh --real`
//! runs around this test.

use std::os::unix::process::CommandExt as _;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::real::{self, kubectl};
use crate::support;

/// The demo's own pace: cached builds, the install if missing, PostgreSQL, a backup, a restore.
const DEMO: Duration = Duration::from_secs(900);

/// What the test saw in the cluster while the demo ran.
#[derive(Default, Debug)]
struct Seen {
    postgres_on_node: bool,
    backup_pod_on_node: bool,
    run_complete: Option<String>,
    restore_complete: bool,
}

impl Seen {
    fn observe(&mut self, ns: &str) {
        let get = |what: &str| -> Vec<Value> {
            kubectl(&["get", what, "-n", ns, "-o", "json"])
                .ok()
                .and_then(|t| serde_json::from_str::<Value>(&t).ok())
                .and_then(|v| v["items"].as_array().cloned())
                .unwrap_or_default()
        };
        for pod in get("pods") {
            let name = pod["metadata"]["name"].as_str().unwrap_or_default();
            let on_node = pod["spec"]["nodeName"] == real::NODE;
            let phase = pod["status"]["phase"].as_str().unwrap_or_default();
            if name == "shop-postgresql-0" && on_node && phase == "Running" {
                self.postgres_on_node = true;
            }
            if name.starts_with("kanister-job-")
                && on_node
                && matches!(phase, "Running" | "Succeeded")
            {
                self.backup_pod_on_node = true;
            }
        }
        for a in get("actionsets.cr.kanister.io") {
            let complete = a["status"]["state"] == "complete";
            let name = a["metadata"]["name"].as_str().unwrap_or_default();
            let labels = &a["metadata"]["labels"];
            let scheduled = labels["blueprint-operator.io/schedule"] == "pg-backup";
            // The schedule's backups; its verifications (trigger verify) restore instead.
            let backup = scheduled
                && matches!(
                    labels["blueprint-operator.io/trigger"].as_str(),
                    Some("scheduled" | "run-now")
                );
            if complete && backup {
                let location = &a["status"]["actions"][0]["artifacts"]["cloudObject"]["keyValue"]["backupLocation"];
                assert!(
                    location.as_str().is_some_and(
                        |l| l.starts_with(&format!("pg_backups/{ns}/shop-postgresql/"))
                    ),
                    "{a:#}"
                );
                self.run_complete = Some(name.to_string());
            }
            if complete && !scheduled && a["spec"]["actions"][0]["name"] == "restore" {
                self.restore_complete = true;
            }
        }
    }
}

/// The namespace the demo made, once it said so ("namespace bpo-demo-pg-xxxxx: ...").
fn demo_namespace(text: &str) -> Option<String> {
    text.lines()
        .filter_map(|l| l.split("namespace ").nth(1))
        .filter_map(|r| r.split(':').next())
        .find(|n| n.starts_with("bpo-demo-pg-"))
        .map(str::to_string)
}

#[tokio::test]
#[ignore = "real tier: tools/test.sh --real"]
async fn demo_backs_up_and_restores_postgresql_on_the_real_node_and_cleans_up() {
    let _ = real::client().await;
    let root = support::repo_root();
    let dir = std::env::temp_dir().join(format!("bpo-demo-real-test-{}", std::process::id()));
    let work = std::path::PathBuf::from(format!("{}.run", dir.display()));
    let out_path = dir.with_extension("out");
    let out_file = std::fs::File::create(&out_path).unwrap();
    let mut cmd = Command::new("bash");
    cmd.arg(root.join("tools/demo.sh"))
        .arg("--exit-after-restore")
        .current_dir(root)
        .env("BPO_CLUSTER_DIR", &dir)
        .env("BPO_DEMO_KUBECONFIG", &support::cluster().kubeconfig)
        .env("BPO_KUBECTL", real::kubectl_path())
        .env("BPO_DEMO_BIN", env!("CARGO_BIN_EXE_blueprint-operator"))
        .stdin(Stdio::null())
        .stdout(out_file.try_clone().unwrap())
        .stderr(out_file)
        .process_group(0);
    let mut child = cmd.spawn().expect("start tools/demo.sh");
    let output = || std::fs::read_to_string(&out_path).unwrap_or_default();

    let mut seen = Seen::default();
    let start = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if start.elapsed() > DEMO {
            let _ = Command::new("kill")
                .args(["-INT", "--", &format!("-{}", child.id())])
                .status();
            let _ = child.wait();
            panic!("the demo did not end within {DEMO:?}:\n{}", output());
        }
        if let Some(ns) = demo_namespace(&output()) {
            seen.observe(&ns);
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    };
    let text = output();
    let _ = std::fs::remove_file(&out_path);
    assert!(status.success(), "the demo exited with {status}:\n{text}");

    // The cluster, while it ran.
    assert!(
        seen.postgres_on_node,
        "PostgreSQL never ran on {}: {seen:?}\n{text}",
        real::NODE
    );
    assert!(
        seen.backup_pod_on_node,
        "no Blueprint pod on the node: {seen:?}\n{text}"
    );
    let run = seen
        .run_complete
        .clone()
        .unwrap_or_else(|| panic!("no complete scheduled run: {text}"));
    assert!(
        seen.restore_complete,
        "no complete restore: {seen:?}\n{text}"
    );

    // Its output: each promise, said.
    let ns = demo_namespace(&text).unwrap();
    for part in [
        "build (Debian packages, control plane, test data plane, images) took ",
        "cluster with the real node took ",
        "the operator, installed from its image (README: Install, With kustomize) took ",
        "PostgreSQL 15 in a StatefulSet with a PersistentVolume took ",
        "took ",
    ] {
        assert!(text.contains(part), "{part:?} not said:\n{text}");
    }
    assert!(
        text.contains(&format!("the schedule created ActionSet {run}"))
            || text.contains("the schedule created ActionSet pg-backup-"),
        "{text}"
    );
    let said = |prefix: &str| {
        text.lines()
            .find_map(|l| l.split(prefix).nth(1))
            .unwrap_or_else(|| panic!("{prefix:?} not said:\n{text}"))
            .trim()
            .to_string()
    };
    let written = said("rows written: ");
    assert!(written.starts_with("502 rows, md5 "), "{written}");
    assert_eq!(said("rows read back: "), written);
    // The backup proven by a restore into the scratch PostgreSQL (spec.verify).
    assert!(
        said(" is labelled blueprint-operator.io/verified=").starts_with("true"),
        "{text}"
    );
    assert_eq!(said("rows in scratch-postgresql: "), written);
    assert!(
        text.contains("restored: exactly the rows written before the backup"),
        "{text}"
    );
    // The dump in the object store, and the pods as they ran, on the node.
    assert!(
        text.lines().any(
            |l| l.contains(&format!("bpo-demo/pg_backups/{ns}/shop-postgresql/"))
                && l.contains("/backup.sql.gz")
                && l.trim_end().ends_with(" bytes")
        ),
        "no dump listed in the object store:\n{text}"
    );
    assert!(
        text.lines()
            .any(|l| l.contains("kanister-job-") && l.contains(real::NODE)),
        "no Blueprint pod shown on the node:\n{text}"
    );
    assert!(
        text.lines().any(|l| l.contains("shop-postgresql-0")
            && l.contains("Running")
            && l.contains(real::NODE)),
        "PostgreSQL not shown running on the node:\n{text}"
    );
    assert!(text.contains("times: "), "{text}");
    assert!(text.contains("[demo]\u{1b}[0m stopped"), "{text}");

    // Cleaned up: its namespace goes, its files are gone, its object store stopped.
    let gone = support::poll(real::WAIT * 3, || async {
        kubectl(&["get", "namespace", &ns]).is_err().then_some(())
    })
    .await;
    assert!(gone.is_ok(), "namespace {ns} still there");
    assert!(!work.exists(), "{} left", work.display());
    let store = text
        .lines()
        .find_map(|l| l.split("object store (gofakes3, S3 API) on http://").nth(1))
        .and_then(|r| r.split(',').next())
        .unwrap()
        .to_string();
    assert!(
        std::net::TcpStream::connect(&store).is_err(),
        "the object store on {store} still answers"
    );
}
