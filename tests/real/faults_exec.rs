//! The faults of faults.rs for a KubeExec phase: a command exec'd into the PostgreSQL container
//! (as the corpus Blueprints exec into their databases) that counts the rows and records its
//! run in a table, between a ScaleWorkload that stops the application and a deferPhase that
//! scales it back. The command waits at a gate the test opens once the fault is over, so every
//! fault happens while it runs.
//!
//! An exec stream goes through the API server, the kubelet and containerd: restarting any of
//! them cuts it, and the phase fails saying the connection was lost (the command's result is
//! unknown), or, when the controller lost its Lease meanwhile, that it was not re-run. The
//! command itself runs on in the container (Kubernetes does not stop it): the test lets it end
//! and checks that it ran exactly once, never twice.

use serde_json::json;

use crate::databases::{create_shop, exec, pg_action, pg_ready, postgres_in, psql};
use crate::faults::{
    CLUSTER, Fault, ended_as, healthy, inject, no_pods_left, quiesce_and_resume, uid,
};
use crate::functions::{app_with_volume, start_spec, wait_end};
use crate::install::apply_yaml;
use crate::real;
use crate::support;

const BUCKET: &str = "bpo-real-faults-exec";
const BLUEPRINT: &str = "faults-exec";
const POD: &str = "shop-postgresql-0";

/// The controller lost its Lease while the API server could not renew it, and the one that
/// took over did not re-run the phase.
const RESTARTED: &str = "controller restarted while phase count was running";
/// The exec stream was cut (or the controller that read it restarted): the result is unknown.
const LOST: &[&str] = &[
    "the connection to the pod was lost",
    "exec stream failed",
    RESTARTED,
];

/// Whether the run may complete, and the texts one of which its failure names (none: it
/// cannot fail).
fn outcome(fault: Fault) -> (bool, &'static [&'static str]) {
    match fault {
        Fault::Nothing => (true, &[]),
        // An exec stream does not go through etcd, but the Lease is renewed there.
        Fault::EtcdKilled => (true, &[RESTARTED]),
        Fault::PodDeleted => (false, &["deleted while the command ran"]),
        _ => (false, LOST),
    }
}

#[tokio::test]
#[ignore = "real tier: tools/test.sh --real"]
async fn an_exec_phase_completes_or_fails_naming_the_fault_and_never_runs_twice() {
    let ns = app_with_volume("faults-exec").await;
    postgres_in(&ns, BUCKET).await;
    create_shop(&ns);
    psql(&ns, "CREATE TABLE exec_runs (run int)");
    apply_yaml(&blueprint(&ns)).unwrap();

    let mut table = Vec::new();
    for (run, fault) in CLUSTER.into_iter().enumerate() {
        let spec = pg_action(
            &ns,
            "count",
            BLUEPRINT,
            json!({"options": {"run": run.to_string()}}),
        );
        let name = start_spec(&ns, spec);
        let uid = uid(&ns, &name);
        let pid = started(&ns, run).await;
        let before = pod_uid(&ns).expect("the PostgreSQL pod");
        inject(fault, &ns, POD, None);
        healthy().await;
        if fault == Fault::PodDeleted {
            // The gate opens in the new pod, never in the old one that is going away.
            support::poll(real::WAIT, || async {
                pod_uid(&ns).filter(|now| *now != before).map(|_| ())
            })
            .await
            .expect("the PostgreSQL pod created again");
        }
        pg_ready(&ns);
        // A kubelet just restarted refuses execs into pods it has not synced yet.
        let go = format!("/tmp/go-{run}");
        support::poll(real::WAIT, || async {
            real::kubectl(&["exec", "-n", &ns, POD, "--", "touch", &go]).ok()
        })
        .await
        .expect("the gate opened");
        let done = wait_end(&ns, &name).await;

        let (state, error) = ended_as(fault, &done, outcome(fault).0, outcome(fault).1, &ns).await;
        no_pods_left(&ns, &uid).await;

        // The command, cut off from its stream or not, ends on its own; it ran once.
        let recorded: usize = if fault == Fault::PodDeleted {
            // Killed with its container, at the gate.
            0
        } else {
            command_ended(&ns, pid).await;
            let invocations = exec(&ns, POD, &format!("wc -l < /tmp/started-{run}"));
            assert_eq!(invocations.trim(), "1", "{fault:?}: the command ran again");
            1
        };
        let rows = psql(
            &ns,
            &format!("SELECT count(*) FROM exec_runs WHERE run = {run}"),
        );
        assert_eq!(
            rows.trim(),
            recorded.to_string(),
            "{fault:?}: runs recorded"
        );
        if state == "complete" {
            let phase = &done["status"]["actions"][0]["phases"][1];
            assert_eq!(
                phase["output"]["rows"].as_str(),
                Some(psql(&ns, "SELECT count(*) FROM items").trim()),
                "{fault:?}: {done:#}"
            );
        }
        table.push(format!(
            "| {fault:?} | {state} | {} |",
            error.lines().next().unwrap_or_default()
        ));
    }
    eprintln!(
        "| fault | run | error |\n| --- | --- | --- |\n{}",
        table.join("\n")
    );
}

/// `count`: a KubeExec into the PostgreSQL container (as the corpus Blueprints name it) that
/// records its pid, waits for the test's `/tmp/go-<run>`, records the run in `exec_runs` and
/// outputs the row count, between a ScaleWorkload of `app` to 0 and a deferPhase back.
fn blueprint(ns: &str) -> String {
    let (quiesce, resume) = quiesce_and_resume(ns, "app");
    let psql = "psql -v ON_ERROR_STOP=1 -h /var/run/postgresql -U postgres -At shop -c";
    let script = format!(
        r####"run={{{{ .Options.run }}}}
echo $$ >> /tmp/started-$run
until [ -e /tmp/go-$run ]; do sleep 0.2; done
{psql} "INSERT INTO exec_runs VALUES ($run)" > /dev/null
rows=$({psql} "SELECT count(*) FROM items")
echo "###Phase-output###: {{\"key\":\"rows\",\"value\":\"$rows\"}}""####
    );
    let count = json!({"func": "KubeExec", "name": "count", "args": {
        "namespace": "{{ .StatefulSet.Namespace }}",
        "pod": "{{ index .StatefulSet.Pods 0 }}",
        "container": "postgresql",
        "command": ["bash", "-o", "errexit", "-o", "pipefail", "-c", script],
    }});
    let bp = json!({
        "apiVersion": "cr.kanister.io/v1alpha1", "kind": "Blueprint",
        "metadata": {"name": BLUEPRINT, "namespace": ns},
        "actions": {"count": {"phases": [quiesce, count], "deferPhase": resume}},
    });
    bp.to_string()
}

/// The pid of run `run`'s command, once it runs in the PostgreSQL container.
async fn started(ns: &str, run: usize) -> String {
    let file = format!("/tmp/started-{run}");
    support::poll(real::WAIT, || async {
        let pid = real::kubectl(&["exec", "-n", ns, POD, "--", "cat", &file]).ok()?;
        let pid = pid.trim().to_string();
        (!pid.is_empty()).then_some(pid)
    })
    .await
    .unwrap_or_else(|e| panic!("the exec of run {run} did not start: {e}"))
}

/// Waits until the process `pid` in the PostgreSQL container has ended.
async fn command_ended(ns: &str, pid: String) {
    let gone = format!("! [ -d /proc/{pid} ] && echo gone");
    support::poll(real::WAIT, || async {
        let out = real::kubectl(&["exec", "-n", ns, POD, "--", "bash", "-c", &gone]).ok()?;
        (out.trim() == "gone").then_some(())
    })
    .await
    .unwrap_or_else(|e| panic!("the command (pid {pid}) still runs: {e}"));
}

/// The PostgreSQL pod's UID, while the API server answers.
fn pod_uid(ns: &str) -> Option<String> {
    real::kubectl(&[
        "get",
        "pod",
        "-n",
        ns,
        POD,
        "-o",
        "jsonpath={.metadata.uid}",
    ])
    .ok()
}
