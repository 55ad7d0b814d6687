//! Executor overhead per phase on the real API server.
//!
//! `cargo bench --bench executor` starts the test control plane (or uses
//! `BPO_KUBECONFIG`), runs the executor in-process on one namespace, and
//! compares:
//! - **direct**: the same KubeOps calls made with `functions::execute`, one
//!   after the other (the work itself);
//! - **executor**: an ActionSet whose action has those phases plus a
//!   deferPhase, from creation to `complete`.
//!
//! Overhead per phase = (executor - direct) / (phases + 1): status writes
//! (`running`, then `complete` with output), template rendering, Events and
//! the watch round trip. `BENCH_PHASES` (default 20) and `BENCH_RUNS`
//! (default 5) tune it; the median run is reported.

#[path = "../tests/support/mod.rs"]
mod support;

mod common;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use blueprint_operator::executor::metrics::Metrics;
use blueprint_operator::executor::runtime::{self, Config};
use blueprint_operator::functions;
use blueprint_operator::model::{ActionSet, Blueprint, ObjectReference, State};
use kube::Client;
use kube::api::{Api, DeleteParams, ListParams, PostParams};
use serde_json::{Value, json};

use common::env_usize;

fn cm_spec(ns: &str, name: &str) -> String {
    format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n  namespace: {ns}\ndata:\n  time: '{{{{ .Time }}}}'\n"
    )
}

fn phase(ns: &str, run: usize, i: usize) -> Value {
    json!({"func": "KubeOps", "name": format!("p{i}"),
        "args": {"operation": "create", "namespace": ns, "spec": cm_spec(ns, &format!("r{run}-p{i}"))}})
}

async fn clean(client: &Client, ns: &str) {
    let cms: Api<k8s_openapi::api::core::v1::ConfigMap> = Api::namespaced(client.clone(), ns);
    let _ = cms
        .delete_collection(&DeleteParams::default(), &ListParams::default().labels(""))
        .await;
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn main() -> anyhow::Result<()> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    rt.block_on(bench())
}

async fn bench() -> anyhow::Result<()> {
    let phases = env_usize("BENCH_PHASES", 20);
    let runs = env_usize("BENCH_RUNS", 5);
    let client = support::client().await;
    support::install_crds(&client).await?;
    let ns = support::namespace(&client, "bench-exec").await;
    let object = ObjectReference {
        api_version: "v1".into(),
        resource: "namespaces".into(),
        kind: "Namespace".into(),
        name: ns.clone(),
        namespace: ns.clone(),
        ..ObjectReference::default()
    };

    // Direct: the function calls alone (args pre-rendered).
    let ctx = functions::Context {
        client: client.clone(),
        namespace: ns.clone(),
        object: object.clone(),
        pod_override: None,
        pod_labels: BTreeMap::new(),
        pod_annotations: BTreeMap::new(),
        actionset: None,
        controller: None,
    };
    let mut direct = Vec::new();
    for run in 0..runs {
        let start = Instant::now();
        for i in 0..=phases {
            let args = json!({"operation": "create", "namespace": ns,
                "spec": cm_spec(&ns, &format!("d{run}-p{i}")).replace("{{ .Time }}", "now")});
            functions::execute(&ctx, "KubeOps", args.as_object().unwrap(), &json!({}))
                .await
                .map_err(|e| anyhow::anyhow!("{e}"))?;
        }
        direct.push(start.elapsed());
        clean(&client, &ns).await;
    }

    // Executor, in-process.
    let mut registry = prometheus_client::registry::Registry::default();
    let metrics = Metrics::new(&mut registry);
    let (stop_tx, mut stop_rx) = tokio::sync::watch::channel(false);
    let exec = tokio::spawn(runtime::run(
        client.clone(),
        Config {
            namespace: Some(ns.clone()),
            run_namespaces: Vec::new(),
            deletion_timeout: Duration::from_secs(60),
            instance: "bench".into(),
            timeouts: Default::default(),
            controller: None,
            kanister_selector: None,
            tenancy: Default::default(),
        },
        metrics,
        async move {
            let _ = stop_rx.wait_for(|s| *s).await;
        },
    ));
    let bps: Api<Blueprint> = Api::namespaced(client.clone(), &ns);
    let sets: Api<ActionSet> = Api::namespaced(client.clone(), &ns);
    let mut executor = Vec::new();
    for run in 0..runs {
        let bp: Blueprint = serde_json::from_value(json!({
            "metadata": {"name": format!("bp{run}")},
            "actions": {"backup": {
                "phases": (0..phases).map(|i| phase(&ns, run, i)).collect::<Vec<_>>(),
                "deferPhase": phase(&ns, run, phases),
            }},
        }))?;
        bps.create(&PostParams::default(), &bp).await?;
        let as_: ActionSet = serde_json::from_value(json!({
            "metadata": {"name": format!("as{run}")},
            "spec": {"actions": [{"name": "backup", "blueprint": format!("bp{run}"), "object": object}]},
        }))?;
        let start = Instant::now();
        sets.create(&PostParams::default(), &as_).await?;
        let done = support::poll(Duration::from_secs(300), || async {
            let a = sets.get(&format!("as{run}")).await.ok()?;
            a.state().filter(|s| s.is_terminal())
        })
        .await?;
        executor.push(start.elapsed());
        anyhow::ensure!(done == State::Complete, "run {run} ended {done}");
        clean(&client, &ns).await;
    }
    let _ = stop_tx.send(true);
    let _ = exec.await;

    let d = median(direct);
    let e = median(executor);
    let n = (phases + 1) as u32;
    let overhead = e.saturating_sub(d) / n;
    println!(
        "executor/kubeops: {phases} phases + deferPhase, median of {runs} runs: direct {:.1} ms ({:.2} ms/call), executor {:.1} ms ({:.2} ms/phase); overhead {:.2} ms per phase",
        d.as_secs_f64() * 1e3,
        d.as_secs_f64() * 1e3 / n as f64,
        e.as_secs_f64() * 1e3,
        e.as_secs_f64() * 1e3 / n as f64,
        overhead.as_secs_f64() * 1e3,
    );
    Ok(())
}
