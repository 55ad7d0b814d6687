//! Admission while the webhook's pods go away. The shipped Deployment (two replicas, a
//! PodDisruptionBudget, a shutdown delay that keeps serving until the endpoint is gone) must
//! admit every Blueprint apply of a burst through a node drain's eviction of one replica and
//! through a rolling restart. A SIGKILLed replica cannot say goodbye: the applies that reach it
//! before its endpoint is dropped are counted and reported (docs/performance.md), and each
//! refusal must name the webhook.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use blueprint_operator::model::Blueprint;
use k8s_openapi::api::core::v1::Pod;
use kube::Client;
use kube::api::{Api, ApiResource, DynamicObject, EvictParams, ListParams, PostParams};

use crate::install::{NS, install};
use crate::real::{self, kubectl};
use crate::support;

/// Applies at least this many, and keep applying until the fault is over.
const BURST: usize = 200;
/// Applies in flight at once (a GitOps tool applying a directory, several of them).
const PARALLEL: usize = 8;
const WEBHOOK: &str = "deployment/blueprint-operator-webhook";
const SELECTOR: &str =
    "app.kubernetes.io/name=blueprint-operator,app.kubernetes.io/component=webhook";

/// What a burst saw: applies admitted, and the refused ones (time since the burst began, error).
#[derive(Debug, Default)]
struct Burst {
    admitted: usize,
    refused: Vec<(Duration, String)>,
}

impl Burst {
    /// Time from the first refusal to the last.
    fn refusing_for(&self) -> Duration {
        match (self.refused.first(), self.refused.last()) {
            (Some(a), Some(b)) => b.0 - a.0,
            _ => Duration::ZERO,
        }
    }
}

/// A Blueprint whose phase has no name: the mutating webhook names it, so an admitted apply
/// proves the webhook answered (a skipped webhook would store it unnamed).
fn blueprint(ns: &str, name: &str) -> DynamicObject {
    serde_json::from_value(serde_json::json!({
        "apiVersion": "cr.kanister.io/v1alpha1", "kind": "Blueprint",
        "metadata": {"name": name, "namespace": ns},
        "actions": {"backup": {"phases": [
            {"func": "KubeTask", "args": {"image": "busybox", "command": ["true"]}}
        ]}}
    }))
    .unwrap()
}

/// Applies Blueprints `tag-N` in `ns`, [`PARALLEL`] at a time, until at least [`BURST`] were sent
/// and `fault` has finished (so the fault happens during the burst, however long it takes).
async fn burst<F: Future<Output = ()>>(client: &Client, ns: &str, tag: &str, fault: F) -> Burst {
    let resource = ApiResource::erase::<Blueprint>(&());
    let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), ns, &resource);
    let next = Arc::new(AtomicUsize::new(0));
    let fault_over = Arc::new(AtomicBool::new(false));
    let began = Instant::now();
    let workers: Vec<_> = (0..PARALLEL)
        .map(|_| {
            let (api, next, over) = (api.clone(), next.clone(), fault_over.clone());
            let (ns, tag) = (ns.to_string(), tag.to_string());
            tokio::spawn(async move {
                let mut seen = Burst::default();
                loop {
                    let i = next.fetch_add(1, Ordering::SeqCst);
                    if i >= BURST && over.load(Ordering::SeqCst) {
                        return seen;
                    }
                    let name = format!("{tag}-{i}");
                    match api
                        .create(&PostParams::default(), &blueprint(&ns, &name))
                        .await
                    {
                        Ok(stored) => {
                            let named = &stored.data["actions"]["backup"]["phases"][0]["name"];
                            assert_eq!(named, "phase0", "{name}: admitted without the webhook");
                            seen.admitted += 1;
                        }
                        Err(e) => seen.refused.push((began.elapsed(), e.to_string())),
                    }
                }
            })
        })
        .collect();
    // Let the burst get going before the fault.
    support::poll(real::WAIT, || async {
        (next.load(Ordering::SeqCst) >= 2 * PARALLEL).then_some(())
    })
    .await
    .expect("the burst started");
    fault.await;
    fault_over.store(true, Ordering::SeqCst);
    let mut all = Burst::default();
    for w in workers {
        let seen = w.await.expect("a burst worker panicked");
        all.admitted += seen.admitted;
        all.refused.extend(seen.refused);
    }
    all.refused.sort_by_key(|r| r.0);
    eprintln!(
        "{tag}: {} applies admitted, {} refused over {:?}: {:?}",
        all.admitted,
        all.refused.len(),
        all.refusing_for(),
        all.refused.iter().map(|r| &r.1).take(3).collect::<Vec<_>>()
    );
    all
}

async fn webhook_pods(client: &Client) -> Vec<Pod> {
    let pods: Api<Pod> = Api::namespaced(client.clone(), NS);
    pods.list(&ListParams::default().labels(SELECTOR))
        .await
        .expect("list the webhook's pods")
        .items
}

fn name(p: &Pod) -> String {
    p.metadata.name.clone().unwrap_or_default()
}

fn ready(p: &Pod) -> bool {
    p.metadata.deletion_timestamp.is_none()
        && p.status
            .as_ref()
            .and_then(|s| s.conditions.as_ref())
            .is_some_and(|c| c.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

/// Waits until the webhook is back to exactly its two ready pods, none of `gone` among them,
/// nothing terminating.
async fn settled(client: &Client, gone: &[String]) {
    support::poll(Duration::from_secs(240), || async {
        let pods = webhook_pods(client).await;
        (pods.len() == 2 && pods.iter().all(|p| ready(p) && !gone.contains(&name(p)))).then_some(())
    })
    .await
    .unwrap_or_else(|e| {
        let pods = kubectl(&["get", "pods", "-n", NS, "-o", "wide"]).unwrap_or_default();
        panic!("the webhook did not settle on two new ready pods: {e}\n{pods}")
    });
}

/// The host's process of the webhook container of pod `pod` (the test runs as root beside the
/// real node: the container's environment carries the pod's name as HOSTNAME).
fn webhook_process(pod: &str) -> Option<i32> {
    let want = format!("HOSTNAME={pod}");
    std::fs::read_dir("/proc").ok()?.flatten().find_map(|e| {
        let pid: i32 = e.file_name().to_str()?.parse().ok()?;
        let cmdline = std::fs::read(e.path().join("cmdline")).ok()?;
        let args: Vec<&[u8]> = cmdline.split(|b| *b == 0).collect();
        let is_webhook =
            args.first()?.ends_with(b"blueprint-operator") && args.get(1)? == b"webhook";
        let environ = std::fs::read(e.path().join("environ")).ok()?;
        let ours = environ.split(|b| *b == 0).any(|v| v == want.as_bytes());
        (is_webhook && ours).then_some(pid)
    })
}

/// The number of times the webhook container of `pod` was restarted.
fn restarts(p: &Pod) -> i32 {
    p.status
        .as_ref()
        .and_then(|s| s.container_statuses.as_ref())
        .and_then(|c| c.first())
        .map_or(0, |c| c.restart_count)
}

#[tokio::test]
#[ignore = "real tier: tools/test.sh --real"]
async fn webhook_replicas_admit_every_apply_through_a_drain_and_a_rolling_restart() {
    install().await;
    let client = real::client().await;
    settled(&client, &[]).await;
    let ns = support::namespace(&client, "admission").await;

    // A node drain evicts through the Eviction API, which the PodDisruptionBudget guards.
    let before: Vec<String> = webhook_pods(&client).await.iter().map(name).collect();
    let evicted = before[0].clone();
    let drained = burst(&client, &ns, "drain", async {
        let pods: Api<Pod> = Api::namespaced(client.clone(), NS);
        pods.evict(&evicted, &EvictParams::default())
            .await
            .expect("the PodDisruptionBudget allows evicting one of two ready replicas");
        settled(&client, std::slice::from_ref(&evicted)).await;
    })
    .await;
    assert!(drained.admitted >= BURST - PARALLEL, "{drained:?}");
    assert!(
        drained.refused.is_empty(),
        "applies refused during a drain: {drained:?}"
    );

    let before: Vec<String> = webhook_pods(&client).await.iter().map(name).collect();
    let restarted = burst(&client, &ns, "restart", async {
        kubectl(&["rollout", "restart", "-n", NS, WEBHOOK]).unwrap();
        kubectl(&["rollout", "status", "-n", NS, WEBHOOK, "--timeout=240s"]).unwrap();
        settled(&client, &before).await;
    })
    .await;
    assert!(restarted.admitted >= BURST - PARALLEL, "{restarted:?}");
    assert!(
        restarted.refused.is_empty(),
        "applies refused during a rolling restart: {restarted:?}"
    );
    kubectl(&["delete", "namespace", &ns, "--wait=false"]).unwrap();
}

#[tokio::test]
#[ignore = "real tier: tools/test.sh --real"]
async fn a_sigkilled_webhook_replica_refuses_only_until_its_endpoint_is_dropped_naming_the_webhook()
{
    install().await;
    let client = real::client().await;
    settled(&client, &[]).await;
    let ns = support::namespace(&client, "admission-kill").await;
    let victim = webhook_pods(&client).await.remove(0);
    let pid = webhook_process(&name(&victim)).expect("the webhook container's process on the host");
    let killed = burst(&client, &ns, "kill", async {
        // SAFETY: a plain kill(2) of a process this test found by its pod's name.
        let rc = unsafe { libc::kill(pid, libc::SIGKILL) };
        assert_eq!(rc, 0, "kill -9 {pid}: {}", std::io::Error::last_os_error());
        // The kubelet restarts the container in the same pod; the burst runs until it is ready.
        support::poll(Duration::from_secs(240), || async {
            let pods = webhook_pods(&client).await;
            let back = pods.iter().find(|p| name(p) == name(&victim))?;
            (restarts(back) > restarts(&victim) && pods.iter().all(ready)).then_some(())
        })
        .await
        .expect("the killed container is restarted and ready again");
    })
    .await;
    // Whatever got through the kill, every refusal says which webhook failed (the user's cue
    // to look at it), and the applies after it were admitted again.
    for (_, e) in &killed.refused {
        assert!(e.contains("blueprint-operator-webhook"), "{e}");
    }
    assert!(
        killed.admitted + killed.refused.len() >= BURST,
        "{killed:?}"
    );
    let after = burst(&client, &ns, "after-kill", async {}).await;
    assert!(
        after.refused.is_empty(),
        "refused after the restart: {after:?}"
    );
    println!(
        "SIGKILL of one of two webhook replicas: {} of {} applies refused, over {:?}",
        killed.refused.len(),
        killed.admitted + killed.refused.len(),
        killed.refusing_for()
    );
    kubectl(&["delete", "namespace", &ns, "--wait=false"]).unwrap();
}
