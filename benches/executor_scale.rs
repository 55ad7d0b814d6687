//! The executor at scale, beside the API server's own write limit, on the real API server.
//!
//! `cargo bench --bench executor_scale` starts the test control plane (or uses
//! `BPO_KUBECONFIG`), runs the executor in-process with the controller's production defaults
//! (its flags' defaults, on a tokio runtime of its own whose threads are named
//! `bpo-executor`, with the binary's allocator) on one namespace, and:
//!
//! 1. **executor**: creates N ActionSets (`BENCH_ACTIONSETS`, default 1000; 16 creates in
//!    flight, as the scheduler bench's clients) of one Blueprint action: `BENCH_PHASES`
//!    (default 3) KubeOps phases (a ConfigMap created, then merge-patched) and a KubeOps
//!    deferPhase (another patch). Measured: the time from the first create until every
//!    ActionSet is `complete` (and each one's create-to-complete latency), the API writes the
//!    API server counted (`apiserver_request_total` from its `/metrics`, before and after, once
//!    the last Events and finalizer removals are in), the CPU time of the executor's threads
//!    and of the API server (`process_cpu_seconds_total`).
//! 2. **limit**: the same number of writes of the same kinds, made by a plain client in a
//!    fresh namespace at the same concurrency: N chains, one per ActionSet, each creating its
//!    ActionSet (16 creates in flight) and then writing, one after the other, what the
//!    executor wrote per ActionSet (ActionSet replaces with a completed ActionSet's body,
//!    ConfigMap creates and patches), with its Events written beside them, as the executor
//!    publishes them off the critical path. No reads, no templates, no waiting on anything.
//!
//! It prints both times and their ratio (the goal: the executor within 2x of the limit).
//!
//! `BENCH_FUNCTION=KubeTask` makes the phases and the deferPhase KubeTask pods (image
//! `BENCH_IMAGE`, default `busybox:1.35`, an image the real tier's node has, running
//! `sh -c 'echo done'`); on the test control plane kwok's node ends them, on a cluster with a
//! real node (`BPO_KUBECONFIG`) they run. Its N defaults to 100 and its phases to 1. The limit's
//! pods are bound to a node that does not exist: their writes without a container start. So a
//! third run, the **baseline**, starts the same pods (same image, command and count, each
//! ActionSet's one after the other) with a plain client, waits until each has ended and deletes
//! it, as the executor does; the goal is then the executor within 2x of the baseline.

#[path = "../tests/support/mod.rs"]
mod support;

mod common;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use blueprint_operator::app::controller::ControllerArgs;
use blueprint_operator::executor::metrics::Metrics;
use blueprint_operator::executor::runtime;
use blueprint_operator::model::{ActionSet, State};
use clap::Parser;
use futures::StreamExt;
use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use k8s_openapi::api::events::v1::Event;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Client, ResourceExt};
use serde_json::{Value, json};

use common::{Writes, env_usize, pct};

/// As the binary: its allocator changes the CPU cost of every request.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Name of the executor runtime's threads (at most 15 bytes: the kernel's `comm`).
const EXECUTOR_THREADS: &str = "bpo-executor";
/// Creates in flight, in both runs.
const CREATES_IN_FLIGHT: usize = 16;
/// What the executor writes here; the control plane's own writes (Leases) are left out.
const RESOURCES: &[&str] = &["actionsets", "configmaps", "pods", "events"];
/// How long a run may take before the bench gives up.
const RUN_TIMEOUT: Duration = Duration::from_secs(1800);

/// The controller's flags, parsed with nothing given: its production defaults.
#[derive(Parser)]
struct Flags {
    #[command(flatten)]
    controller: ControllerArgs,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Function {
    KubeOps,
    KubeTask,
}

struct Settings {
    n: usize,
    phases: usize,
    function: Function,
    image: String,
    /// kwok's annotations on KubeTask pods (our own control plane: its fake node ends them).
    kwok: bool,
}

impl Settings {
    fn from_env() -> anyhow::Result<Settings> {
        let function = match std::env::var("BENCH_FUNCTION").as_deref() {
            Err(_) | Ok("") | Ok("KubeOps") => Function::KubeOps,
            Ok("KubeTask") => Function::KubeTask,
            Ok(other) => anyhow::bail!("BENCH_FUNCTION={other:?}: use KubeOps or KubeTask"),
        };
        let (n, phases) = match function {
            Function::KubeOps => (1000, 3),
            Function::KubeTask => (100, 1),
        };
        let n = env_usize("BENCH_ACTIONSETS", n);
        let phases = env_usize("BENCH_PHASES", phases);
        anyhow::ensure!(n > 0, "BENCH_ACTIONSETS must be at least 1");
        anyhow::ensure!(phases > 0, "BENCH_PHASES must be at least 1");
        Ok(Settings {
            n,
            phases,
            function,
            image: std::env::var("BENCH_IMAGE").unwrap_or_else(|_| "busybox:1.35".into()),
            kwok: support::cluster().is_own(),
        })
    }
}

/// The ConfigMap every phase of one ActionSet writes (named by its `name` option).
fn cm_ref(ns: &str) -> Value {
    json!({"apiVersion": "v1", "resource": "configmaps", "name": "{{ .Options.name }}", "namespace": ns})
}

fn kubeops_phase(ns: &str, i: usize) -> Value {
    let name = format!("p{i}");
    if i == 0 {
        let spec = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: '{{ .Options.name }}'\ndata:\n  p0: '{{ .Time }}'\n";
        json!({"func": "KubeOps", "name": name,
            "args": {"operation": "create", "namespace": ns, "spec": spec}})
    } else {
        json!({"func": "KubeOps", "name": name, "args": {"operation": "patch",
            "objectReference": cm_ref(ns), "spec": {"data": {name.clone(): "{{ .Time }}"}}}})
    }
}

fn kubetask_phase(s: &Settings, name: &str) -> Value {
    let mut args = json!({"image": s.image, "command": ["sh", "-c", "echo done"]});
    if s.kwok {
        args["podAnnotations"] = json!(support::kwok_annotations(0, "done"));
    }
    json!({"func": "KubeTask", "name": name, "args": args})
}

fn blueprint(s: &Settings, ns: &str) -> Value {
    let (phases, defer): (Vec<Value>, Value) = match s.function {
        Function::KubeOps => (
            (0..s.phases).map(|i| kubeops_phase(ns, i)).collect(),
            kubeops_phase(ns, s.phases),
        ),
        Function::KubeTask => (
            (0..s.phases)
                .map(|i| kubetask_phase(s, &format!("p{i}")))
                .collect(),
            kubetask_phase(s, "cleanup"),
        ),
    };
    json!({
        "apiVersion": "cr.kanister.io/v1alpha1", "kind": "Blueprint",
        "metadata": {"name": "scale", "namespace": ns},
        "actions": {"backup": {"phases": phases, "deferPhase": defer}},
    })
}

fn actionset(ns: &str, i: usize) -> anyhow::Result<ActionSet> {
    let name = format!("as{i:05}");
    Ok(serde_json::from_value(json!({
        "apiVersion": "cr.kanister.io/v1alpha1", "kind": "ActionSet",
        "metadata": {"name": name, "namespace": ns},
        "spec": {"actions": [{"name": "backup", "blueprint": "scale",
            "object": {"apiVersion": "v1", "kind": "Namespace", "resource": "namespaces",
                "name": ns, "namespace": ns},
            "options": {"name": format!("cm-{name}")}}]},
    }))?)
}

/// Creates ActionSets `0..n` in `ns`, [`CREATES_IN_FLIGHT`] at a time; returns when each
/// create returned, by index.
async fn create_all(client: &Client, ns: &str, n: usize, t0: Instant) -> anyhow::Result<Vec<f64>> {
    let api: Api<ActionSet> = Api::namespaced(client.clone(), ns);
    let mut at = vec![0.0; n];
    let mut done = futures::stream::iter(0..n)
        .map(|i| {
            let api = api.clone();
            async move {
                api.create(&PostParams::default(), &actionset(ns, i)?)
                    .await?;
                anyhow::Ok((i, t0.elapsed().as_secs_f64()))
            }
        })
        .buffer_unordered(CREATES_IN_FLIGHT);
    while let Some(r) = done.next().await {
        let (i, t) = r?;
        at[i] = t;
    }
    Ok(at)
}

/// Waits until every ActionSet in `ns` is terminal; returns each one's end (seconds after `t0`)
/// by name, and the first failure.
async fn wait_terminal(
    client: &Client,
    ns: &str,
    n: usize,
    t0: Instant,
) -> anyhow::Result<(BTreeMap<String, f64>, Option<String>)> {
    let api: Api<ActionSet> = Api::namespaced(client.clone(), ns);
    let stream = watcher(api, watcher::Config::default()).applied_objects();
    futures::pin_mut!(stream);
    let mut ended = BTreeMap::new();
    let mut failure = None;
    let mut report = tokio::time::interval(Duration::from_secs(10));
    let deadline = tokio::time::sleep(RUN_TIMEOUT);
    tokio::pin!(deadline);
    while ended.len() < n {
        tokio::select! {
            a = stream.next() => match a {
                Some(Ok(a)) => {
                    let Some(state) = a.state().filter(|s| s.is_terminal()) else { continue };
                    if state != State::Complete && failure.is_none() {
                        failure = Some(format!("{} ended {state}: {}", a.name_any(),
                            a.status.as_ref().map(|s| s.error.message.as_str()).unwrap_or("")));
                    }
                    ended.entry(a.name_any()).or_insert_with(|| t0.elapsed().as_secs_f64());
                }
                Some(Err(e)) => eprintln!("ActionSet watch: {e}"),
                None => anyhow::bail!("the ActionSet watch ended"),
            },
            _ = report.tick() => eprintln!("{} of {n} ActionSets ended after {:.1}s", ended.len(), t0.elapsed().as_secs_f64()),
            _ = &mut deadline => anyhow::bail!("{} of {n} ActionSets ended within {RUN_TIMEOUT:?}", ended.len()),
        }
    }
    Ok((ended, failure))
}

/// The API server's counters once they have not moved for 3 s (at most 60 s): the writes that
/// follow the last `complete` (Events, finalizer removals) are counted too.
async fn settled_counters(client: &Client) -> anyhow::Result<(Writes, f64)> {
    let mut last = common::apiserver_counters(client, RESOURCES).await?;
    for _ in 0..20 {
        tokio::time::sleep(Duration::from_secs(3)).await;
        let now = common::apiserver_counters(client, RESOURCES).await?;
        if now.0 == last.0 {
            return Ok(now);
        }
        last = now;
    }
    Ok(last)
}

/// One write of the executor's, as the limit run repeats it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Write {
    ActionSetPut,
    ConfigMapPost,
    ConfigMapPatch,
    ConfigMapPut,
    ConfigMapDelete,
    PodPost,
    PodDelete,
    EventPost,
}

impl Write {
    fn of(resource: &str, verb: &str) -> Option<Write> {
        Some(match (resource, verb) {
            ("actionsets", "PUT") => Write::ActionSetPut,
            ("configmaps", "POST") => Write::ConfigMapPost,
            ("configmaps", "PATCH") => Write::ConfigMapPatch,
            ("configmaps", "PUT") => Write::ConfigMapPut,
            ("configmaps", "DELETE") => Write::ConfigMapDelete,
            ("pods", "POST") => Write::PodPost,
            ("pods", "DELETE") => Write::PodDelete,
            ("events", "POST") => Write::EventPost,
            _ => return None,
        })
    }
}

/// Chain `i`'s share of `total` writes over `n` chains.
fn share(total: usize, n: usize, i: usize) -> usize {
    total / n + usize::from(i < total % n)
}

/// Chain `i`'s writes besides its create: the main sequence (an ActionSet replace, then
/// another write, as the executor alternates its status with its phases' work; the other
/// kinds taken in turn: a create, then a patch or a delete of what it created) and the
/// number of Events.
fn chain_writes(counts: &BTreeMap<Write, usize>, n: usize, i: usize) -> (Vec<Write>, usize) {
    let of = |w: Write| share(counts.get(&w).copied().unwrap_or(0), n, i);
    let mut left: Vec<(Write, usize)> = counts
        .keys()
        .filter(|w| !matches!(w, Write::ActionSetPut | Write::EventPost))
        .map(|&w| (w, of(w)))
        .collect();
    let mut others = Vec::new();
    while left.iter().any(|(_, c)| *c > 0) {
        for (w, c) in left.iter_mut().filter(|(_, c)| *c > 0) {
            others.push(*w);
            *c -= 1;
        }
    }
    let puts = of(Write::ActionSetPut);
    let mut main = Vec::new();
    let mut others = others.into_iter();
    for k in 0..puts.max(others.len()) {
        if k < puts {
            main.push(Write::ActionSetPut);
        }
        main.extend(others.next());
    }
    (main, of(Write::EventPost))
}

/// One chain of the limit run: its ActionSet (as last written) and what it created.
struct Chain<'a> {
    client: &'a Client,
    ns: &'a str,
    i: usize,
    /// A completed ActionSet of the executor run: the body of the replaces.
    completed: &'a ActionSet,
    last: ActionSet,
    configmaps: usize,
    pods: usize,
}

impl Chain<'_> {
    fn cm(&self, k: usize) -> String {
        format!("cm-as{:05}-{k}", self.i)
    }

    fn pod(&self, k: usize) -> String {
        format!("pod-as{:05}-{k}", self.i)
    }

    async fn write(&mut self, step: usize, w: Write) -> anyhow::Result<()> {
        let pp = PostParams::default();
        let cms: Api<ConfigMap> = Api::namespaced(self.client.clone(), self.ns);
        let pods: Api<Pod> = Api::namespaced(self.client.clone(), self.ns);
        // The ConfigMap the chain created last (a patch before any create: its first).
        let target = self.cm(self.configmaps.saturating_sub(1));
        let now = chrono::Utc::now().to_rfc3339();
        match w {
            Write::ActionSetPut => {
                let api: Api<ActionSet> = Api::namespaced(self.client.clone(), self.ns);
                let mut obj = self.completed.clone();
                obj.metadata = self.last.metadata.clone();
                obj.metadata.annotations = self.completed.metadata.annotations.clone();
                obj.annotations_mut()
                    .insert("bench/step".into(), step.to_string());
                self.last = api.replace(&self.last.name_any(), &pp, &obj).await?;
            }
            Write::ConfigMapPost => {
                let cm: ConfigMap = serde_json::from_value(json!({
                    "metadata": {"name": self.cm(self.configmaps), "namespace": self.ns},
                    "data": {"p0": now}}))?;
                cms.create(&pp, &cm).await?;
                self.configmaps += 1;
            }
            Write::ConfigMapPatch => {
                let p = json!({"data": {format!("p{step}"): now}});
                cms.patch(&target, &PatchParams::default(), &Patch::Merge(p))
                    .await?;
            }
            Write::ConfigMapPut => {
                let cm: ConfigMap = serde_json::from_value(json!({
                    "metadata": {"name": target, "namespace": self.ns},
                    "data": {format!("p{step}"): now}}))?;
                cms.replace(&target, &pp, &cm).await?;
            }
            Write::ConfigMapDelete => {
                cms.delete(&target, &DeleteParams::default()).await?;
            }
            Write::PodPost => {
                // Bound to a node that does not exist: the API server's write, without the
                // scheduler's and a node's work.
                let pod: Pod = serde_json::from_value(json!({
                    "metadata": {"name": self.pod(self.pods), "namespace": self.ns},
                    "spec": {"nodeName": "bench-nowhere",
                        "containers": [{"name": "task", "image": "busybox:1.35",
                            "command": ["sh", "-c", "echo done"]}]}}))?;
                pods.create(&pp, &pod).await?;
                self.pods += 1;
            }
            Write::PodDelete => {
                // The executor deletes a phase's pod also when it is gone already.
                let name = self.pod(self.pods.saturating_sub(1));
                match pods.delete(&name, &DeleteParams::default()).await {
                    Ok(_) => {}
                    Err(kube::Error::Api(s)) if s.code == 404 => {}
                    Err(e) => return Err(e.into()),
                }
            }
            Write::EventPost => anyhow::bail!("Events are written by their own sequence"),
        }
        Ok(())
    }
}

async fn event_write(client: &Client, ns: &str, i: usize, k: usize) -> anyhow::Result<()> {
    let api: Api<Event> = Api::namespaced(client.clone(), ns);
    let ev: Event = serde_json::from_value(json!({
        "metadata": {"name": format!("as{i:05}.{k}"), "namespace": ns},
        "eventTime": chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Micros, true),
        "action": "Update", "reason": "Started Phase", "type": "Normal",
        "note": format!("Executing phase p{k}"),
        "regarding": {"apiVersion": "cr.kanister.io/v1alpha1", "kind": "ActionSet",
            "name": format!("as{i:05}"), "namespace": ns},
        "reportingController": runtime::REPORTING_CONTROLLER, "reportingInstance": "bench",
    }))?;
    api.create(&PostParams::default(), &ev).await?;
    Ok(())
}

/// A pod as a KubeTask phase of the bench's Blueprint makes it: same image, command and (on
/// kwok's node) annotations.
fn task_pod(s: &Settings, name: &str) -> anyhow::Result<Pod> {
    let mut pod = json!({
        "metadata": {"name": name},
        "spec": {"restartPolicy": "Never",
            "containers": [{"name": "container", "image": s.image,
                "command": ["sh", "-c", "echo done"]}]},
    });
    if s.kwok {
        pod["metadata"]["annotations"] = json!(support::kwok_annotations(0, "done"));
    }
    Ok(serde_json::from_value(pod)?)
}

/// The baseline of a KubeTask run: the same pods started by a plain client in `ns`, in `n`
/// chains as the ActionSets run them (each chain's pods one after the other: created, waited
/// for until it ended, deleted; the chains' first creates 16 in flight). No ActionSets, no
/// status, no Events, no logs read: what the pods' lives alone take. Returns when the last
/// chain ended, in seconds.
async fn baseline_run(client: &Client, ns: &str, s: &Settings) -> anyhow::Result<f64> {
    let pods: Api<Pod> = Api::namespaced(client.clone(), ns);
    // One watch for all chains: the names of the pods that ended.
    let (ended_tx, ended) = tokio::sync::watch::channel(std::collections::BTreeSet::new());
    let watch = {
        let stream = watcher(pods.clone(), watcher::Config::default()).applied_objects();
        async move {
            futures::pin_mut!(stream);
            while let Some(p) = stream.next().await {
                let Ok(p) = p else { continue };
                let phase = p.status.as_ref().and_then(|st| st.phase.as_deref());
                if matches!(phase, Some("Succeeded" | "Failed")) {
                    ended_tx.send_modify(|e| {
                        e.insert(p.name_any());
                    });
                }
            }
        }
    };
    let creates = Arc::new(tokio::sync::Semaphore::new(CREATES_IN_FLIGHT));
    let t0 = Instant::now();
    let chains = (0..s.n).map(|i| {
        let (pods, creates, mut ended) = (pods.clone(), creates.clone(), ended.clone());
        async move {
            for k in 0..=s.phases {
                let name = format!("as{i:05}-{k}");
                let pod = task_pod(s, &name)?;
                if k == 0 {
                    let _slot = creates.acquire().await?;
                    pods.create(&PostParams::default(), &pod).await?;
                } else {
                    pods.create(&PostParams::default(), &pod).await?;
                }
                ended.wait_for(|e| e.contains(&name)).await?;
                pods.delete(&name, &DeleteParams::default()).await?;
            }
            anyhow::Ok(t0.elapsed().as_secs_f64())
        }
    });
    let all = futures::future::try_join_all(chains);
    let ends = tokio::select! {
        ends = all => ends?,
        () = watch => anyhow::bail!("the baseline's pod watch ended"),
        () = tokio::time::sleep(RUN_TIMEOUT) => anyhow::bail!("the baseline took over {RUN_TIMEOUT:?}"),
    };
    Ok(ends.into_iter().fold(0.0, f64::max))
}

/// The limit run: `n` chains, each its ActionSet's create (16 in flight) then its writes.
async fn limit_run(
    client: &Client,
    ns: &str,
    n: usize,
    counts: &BTreeMap<Write, usize>,
    completed: &ActionSet,
) -> anyhow::Result<f64> {
    let creates = Arc::new(tokio::sync::Semaphore::new(CREATES_IN_FLIGHT));
    let t0 = Instant::now();
    let chains = (0..n).map(|i| {
        let (main, events) = chain_writes(counts, n, i);
        let (client, ns, creates) = (client.clone(), ns.to_string(), creates.clone());
        async move {
            let created = {
                let _slot = creates.acquire().await?;
                let api: Api<ActionSet> = Api::namespaced(client.clone(), &ns);
                api.create(&PostParams::default(), &actionset(&ns, i)?)
                    .await?
            };
            let writes = async {
                let mut chain = Chain {
                    client: &client,
                    ns: &ns,
                    i,
                    completed,
                    last: created,
                    configmaps: 0,
                    pods: 0,
                };
                for (step, w) in main.into_iter().enumerate() {
                    chain.write(step, w).await?;
                }
                anyhow::Ok(())
            };
            let events = async {
                for k in 0..events {
                    event_write(&client, &ns, i, k).await?;
                }
                anyhow::Ok(())
            };
            futures::try_join!(writes, events)?;
            anyhow::Ok(t0.elapsed().as_secs_f64())
        }
    });
    let ends = futures::future::try_join_all(chains).await?;
    Ok(ends.into_iter().fold(0.0, f64::max))
}

fn fmt_writes(w: &Writes, n: usize) -> String {
    w.iter()
        .map(|((res, verb), c)| format!("{res} {verb} {:.2}", c / n as f64))
        .collect::<Vec<_>>()
        .join(", ")
}

fn total(w: &Writes) -> f64 {
    w.values().sum()
}

fn main() -> anyhow::Result<()> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let s = Settings::from_env()?;
    let flags = Flags::try_parse_from(["controller"])?;
    let bench_rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    // The executor's own runtime, sized as the binary's (one worker per core).
    let exec_rt = tokio::runtime::Builder::new_multi_thread()
        .thread_name(EXECUTOR_THREADS)
        .enable_all()
        .build()?;
    bench_rt.block_on(bench(&s, &flags, &exec_rt))
}

async fn bench(
    s: &Settings,
    flags: &Flags,
    exec_rt: &tokio::runtime::Runtime,
) -> anyhow::Result<()> {
    let n = s.n;
    let load_start = common::loadavg();
    let client = support::client().await;
    support::install_crds(&client).await?;
    let ns = support::namespace(&client, "bench-scale").await;
    let bp: Value = blueprint(s, &ns);
    let api = Api::<kube::api::DynamicObject>::namespaced_with(
        client.clone(),
        &ns,
        &kube::api::ApiResource::erase::<blueprint_operator::model::Blueprint>(&()),
    );
    api.create(&PostParams::default(), &serde_json::from_value(bp)?)
        .await?;

    // The executor, on its runtime, with a client made there (its connections live there).
    let mut cfg = flags.controller.executor_config("bench".into(), None);
    cfg.namespace = Some(ns.clone());
    let (stop_tx, mut stop_rx) = tokio::sync::watch::channel(false);
    let exec = exec_rt.spawn(async move {
        let client = support::try_client().await?;
        let mut registry = prometheus_client::registry::Registry::default();
        let metrics = Metrics::new(&mut registry);
        runtime::run(client, cfg, metrics, async move {
            let _ = stop_rx.wait_for(|s| *s).await;
        })
        .await
    });
    // Its first list of the (empty) namespace.
    tokio::time::sleep(Duration::from_secs(2)).await;

    let (w0, api_cpu0) = common::apiserver_counters(&client, RESOURCES).await?;
    let exec_cpu0 = common::thread_cpu_secs(EXECUTOR_THREADS);
    let proc_cpu0 = common::cpu_secs();
    let t0 = Instant::now();
    let (created, ended) = tokio::join!(
        create_all(&client, &ns, n, t0),
        wait_terminal(&client, &ns, n, t0)
    );
    let (created, (ended, failure)) = (created?, ended?);
    let wall = ended.values().copied().fold(0.0, f64::max);
    if let Some(f) = failure {
        anyhow::bail!("not every ActionSet completed: {f}");
    }
    let (w1, api_cpu1) = settled_counters(&client).await?;
    let exec_cpu = common::thread_cpu_secs(EXECUTOR_THREADS) - exec_cpu0;
    let proc_cpu = common::cpu_secs() - proc_cpu0;
    let _ = stop_tx.send(true);
    let _ = tokio::time::timeout(Duration::from_secs(30), exec).await;
    let exec_writes = common::writes_between(&w0, &w1);
    let mut latency: Vec<f64> = ended
        .iter()
        .filter_map(|(name, end)| {
            let i: usize = name.strip_prefix("as")?.parse().ok()?;
            Some((end - created.get(i)?) * 1000.0)
        })
        .collect();
    latency.sort_by(|a, b| a.total_cmp(b));

    // The limit: the same writes per ActionSet by a plain client.
    let mut counts = BTreeMap::new();
    let mut not_replayed = Vec::new();
    for ((res, verb), c) in &exec_writes {
        match Write::of(res, verb) {
            Some(w) => *counts.entry(w).or_insert(0) += c.round() as usize,
            None if res == "actionsets" && verb == "POST" => {}
            None => not_replayed.push(format!("{res} {verb} {c}")),
        }
    }
    let sets: Api<ActionSet> = Api::namespaced(client.clone(), &ns);
    let mut completed = sets.get("as00000").await?;
    completed.metadata.finalizers = None;
    let limit_ns = support::namespace(&client, "bench-scale-limit").await;
    let (l0, lapi_cpu0) = common::apiserver_counters(&client, RESOURCES).await?;
    let lproc_cpu0 = common::cpu_secs();
    let limit = limit_run(&client, &limit_ns, n, &counts, &completed).await?;
    let lproc_cpu = common::cpu_secs() - lproc_cpu0;
    let (l1, lapi_cpu1) = settled_counters(&client).await?;
    let limit_writes = common::writes_between(&l0, &l1);
    // KubeTask: the same pods' lives without the executor, what bounds it on a real node.
    let baseline = match s.function {
        Function::KubeOps => None,
        Function::KubeTask => {
            let ns = support::namespace(&client, "bench-scale-pods").await;
            Some(baseline_run(&client, &ns, s).await?)
        }
    };

    let per = |x: f64| x * 1000.0 / n as f64;
    println!(
        "executor_scale function={:?} actionsets={n} phases={}+deferPhase load_avg=[{load_start}]..[{}]",
        s.function,
        s.phases,
        common::loadavg()
    );
    println!(
        "  executor: all complete {wall:.2}s after the first create (create to complete p50 {:.0} ms, p99 {:.0} ms, max {:.0} ms); {:.2} API writes per ActionSet ({}); executor CPU {exec_cpu:.2}s = {:.2} ms per ActionSet (whole process {proc_cpu:.2}s); API server CPU {:.2}s = {:.2} ms per ActionSet",
        pct(&latency, 0.5),
        pct(&latency, 0.99),
        latency.last().copied().unwrap_or(f64::NAN),
        total(&exec_writes) / n as f64,
        fmt_writes(&exec_writes, n),
        per(exec_cpu),
        api_cpu1 - api_cpu0,
        per(api_cpu1 - api_cpu0),
    );
    println!(
        "  limit: the same writes by a plain client in {limit:.2}s; {:.2} API writes per ActionSet ({}); client process CPU {lproc_cpu:.2}s; API server CPU {:.2}s = {:.2} ms per ActionSet",
        total(&limit_writes) / n as f64,
        fmt_writes(&limit_writes, n),
        lapi_cpu1 - lapi_cpu0,
        per(lapi_cpu1 - lapi_cpu0),
    );
    if !not_replayed.is_empty() {
        println!("  not replayed: {}", not_replayed.join(", "));
    }
    match baseline {
        Some(b) => {
            println!(
                "  baseline: the same {} pods ({} per ActionSet, one after the other), started, waited for and deleted by a plain client in {b:.2}s",
                n * (s.phases + 1),
                s.phases + 1,
            );
            println!(
                "  ratio executor/limit: {:.2}; executor/baseline: {:.2} (goal: at most 2)",
                wall / limit,
                wall / b
            );
        }
        None => println!(
            "  ratio executor/limit: {:.2} (goal: at most 2)",
            wall / limit
        ),
    }
    Ok(())
}
