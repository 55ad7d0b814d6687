//! Leader handover during a run.
//!
//! `cargo bench --bench handover` starts the test control plane (or uses `BPO_KUBECONFIG`),
//! runs two controller processes for one namespace with leader election on one Lease, as the
//! manifests run two replicas, starts an ActionSet whose KubeTask phase runs for a while, and
//! stops the leader mid-phase: with SIGTERM (a rolling upgrade, `kubectl delete pod`) and with
//! SIGKILL (an OOM kill, a lost node). It reports, from the signal:
//! - **leader**: until the Lease names the other replica;
//! - **carried on**: until the other replica has re-attached to the phase's pod (the
//!   `Resumed Phase` Event).
//!
//! Times are observed by polling every 50 ms. `BENCH_RUNS` (default 3) runs per signal; the
//! median is reported. The phase runs 60 s on the kwok node, long enough to outlast a handover.

#[path = "../tests/support/mod.rs"]
mod support;

use std::process::Stdio;
use std::time::{Duration, Instant};

use blueprint_operator::model::{ActionSet, Blueprint};
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::events::v1::Event;
use kube::Client;
use kube::api::{Api, ListParams, PostParams};
use serde_json::json;
use tokio::process::{Child, Command};

const POLL: Duration = Duration::from_millis(50);
const LIMIT: Duration = Duration::from_secs(120);

fn controller(ns: &str, lease: &str, identity: &str) -> Child {
    Command::new(env!("CARGO_BIN_EXE_blueprint-operator"))
        .args(["controller", "--namespace", ns, "--no-scheduler"])
        .args(["--lease-name", lease, "--lease-namespace"])
        .arg(support::rbac::NAMESPACE)
        .args(["--instance", identity, "--metrics-addr", "off"])
        .args(["--log-level", "warn"])
        .env("KUBECONFIG", support::rbac::controller_kubeconfig())
        .stdin(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("start blueprint-operator controller")
}

async fn holder(leases: &Api<Lease>, name: &str) -> Option<String> {
    leases.get_opt(name).await.ok()??.spec?.holder_identity
}

/// Polls `check` every [`POLL`] until it holds; the time it took, or `None` after [`LIMIT`].
async fn until<F, Fut>(mut check: F) -> Option<Duration>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let start = Instant::now();
    while start.elapsed() < LIMIT {
        if check().await {
            return Some(start.elapsed());
        }
        tokio::time::sleep(POLL).await;
    }
    None
}

async fn resumed(events: &Api<Event>, actionset: &str) -> bool {
    let lp = ListParams::default().fields(&format!("regarding.name={actionset}"));
    events.list(&lp).await.is_ok_and(|l| {
        l.items
            .iter()
            .any(|e| e.reason.as_deref() == Some("Resumed Phase"))
    })
}

struct Sample {
    leader: Duration,
    carried_on: Duration,
}

async fn one_handover(client: &Client, ns: &str, signal: &str, run: usize) -> Sample {
    let lease = format!("handover-{}-{signal}-{run}", &ns[ns.len() - 5..]).to_lowercase();
    let leases: Api<Lease> = Api::namespaced(client.clone(), support::rbac::NAMESPACE);
    let mut first = controller(ns, &lease, "first");
    until(|| async { holder(&leases, &lease).await.as_deref() == Some("first") })
        .await
        .expect("the first replica takes the Lease");
    let mut second = controller(ns, &lease, "second");

    let name = format!("run-{signal}-{run}").to_lowercase();
    let sets: Api<ActionSet> = Api::namespaced(client.clone(), ns);
    let a: ActionSet = serde_json::from_value(json!({
        "apiVersion": "cr.kanister.io/v1alpha1", "kind": "ActionSet",
        "metadata": {"name": name},
        "spec": {"actions": [{"name": "backup", "blueprint": "bp",
            "object": {"apiVersion": "v1", "resource": "namespaces", "kind": "Namespace", "name": ns, "namespace": ns}}]},
    }))
    .unwrap();
    sets.create(&PostParams::default(), &a).await.unwrap();
    support::recorded_phase_pod(client, ns, &name, 0)
        .await
        .expect("the phase runs and its pod is recorded");

    let pid = first.id().expect("first replica runs") as i32;
    let sig = if signal == "SIGTERM" {
        libc::SIGTERM
    } else {
        libc::SIGKILL
    };
    let sent = Instant::now();
    // SAFETY: kill(2) on our own child's pid.
    unsafe { libc::kill(pid, sig) };
    let events: Api<Event> = Api::namespaced(client.clone(), ns);
    let leader = until(|| async { holder(&leases, &lease).await.as_deref() == Some("second") })
        .await
        .expect("the second replica takes the Lease");
    let leader = leader.min(sent.elapsed());
    until(|| resumed(&events, &name))
        .await
        .expect("the second replica re-attaches to the phase");
    let carried_on = sent.elapsed();
    let _ = first.wait().await;
    let _ = second.start_kill();
    let _ = second.wait().await;
    Sample { leader, carried_on }
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn main() {
    let runs: usize = std::env::var("BENCH_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3);
    let rt = tokio::runtime::Runtime::new().expect("tokio runtime");
    rt.block_on(async {
        let client = support::client().await;
        support::install_crds(&client).await.expect("install CRDs");
        let ns = support::namespace(&client, "handover").await;
        let mut ann = json!(support::kwok_annotations(0, "done"));
        ann[support::kwok::DURATION] = json!("60s");
        let bp: Blueprint = serde_json::from_value(json!({
            "apiVersion": "cr.kanister.io/v1alpha1", "kind": "Blueprint",
            "metadata": {"name": "bp"},
            "actions": {"backup": {"phases": [{"func": "KubeTask", "name": "work", "args": {
                "image": "busybox:stable", "command": ["sh", "-c", "sleep 60"],
                "podAnnotations": ann}}]}},
        }))
        .unwrap();
        Api::<Blueprint>::namespaced(client.clone(), &ns)
            .create(&PostParams::default(), &bp)
            .await
            .unwrap();
        println!("signal   run  new leader  carried on (re-attached)");
        for signal in ["SIGTERM", "SIGKILL"] {
            let mut samples = Vec::new();
            for run in 0..runs {
                let s = one_handover(&client, &ns, signal, run).await;
                println!(
                    "{signal:8} {run:3}  {:>8.2} s  {:>8.2} s",
                    s.leader.as_secs_f64(),
                    s.carried_on.as_secs_f64()
                );
                samples.push(s);
            }
            println!(
                "{signal:8} median {:>6.2} s  {:>8.2} s",
                median(samples.iter().map(|s| s.leader).collect()).as_secs_f64(),
                median(samples.iter().map(|s| s.carried_on).collect()).as_secs_f64()
            );
        }
    });
}
