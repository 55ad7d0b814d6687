//! Shared helpers for tests that need a real Kubernetes API server.
//!
//! ```ignore
//! mod support;
//!
//! #[tokio::test]
//! async fn works() -> anyhow::Result<()> {
//!     let client = support::client().await;        // starts the cluster on first use
//!     support::install_crds(&client).await?;       // every manifests/{crds,kanister-crds}/*.yaml
//!     let ns = support::namespace(&client, "demo").await; // fresh namespace "demo-xxxxx"
//!     // ...
//!     Ok(())
//! }
//! ```
//!
//! The cluster is started once per test binary (see [`cluster`]) and torn down when the binary
//! exits; all e2e tests that can share it are modules of the one binary `tests/e2e/main.rs`. Set `BPO_KUBECONFIG` (or `KUBECONFIG` + `BPO_USE_EXISTING_CLUSTER=1`) to use an
//! existing cluster instead. Every test gets its own namespace; do not rely on cluster-wide
//! state that another test of the same binary could change.
#![allow(dead_code)]

pub mod azurite;
pub mod call;
pub mod cluster;
pub mod controller;
pub mod corpus;
pub mod csi;
pub mod data_plane;
pub mod files;
pub mod gcs;
pub mod go_oracle;
pub mod http;
pub mod kanister;
pub mod manifests;
pub mod moto;
pub mod pod_watch;
pub mod prerequisite;
pub mod rbac;
pub mod s3_stub;
pub mod server;

use std::collections::BTreeMap;
use std::fmt::Debug;
use std::time::Duration;

use anyhow::Context as _;
use k8s_openapi::api::core::v1::{Namespace, Pod, ServiceAccount};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, Config, Resource};
use serde::Deserialize as _;
use serde::de::DeserializeOwned;

#[allow(unused_imports)]
pub use cluster::{Cluster, cluster, repo_root};

/// Label put on every namespace made by [`namespace`] (handy to clean up an existing cluster:
/// `kubectl delete ns -l blueprint-operator.io/test=true`).
pub const TEST_NAMESPACE_LABEL: &str = "blueprint-operator.io/test";

/// Default bound for the `wait_*` helpers. Generous: it only limits how long a broken test hangs.
pub const WAIT: Duration = Duration::from_secs(60);

/// A `kube::Client` for the shared cluster (admin, bypasses RBAC). Cheap: make one per test; a
/// client must not be shared between `#[tokio::test]`s as each test has its own runtime.
pub async fn client() -> Client {
    try_client()
        .await
        .expect("kube client for the test cluster")
}

pub async fn try_client() -> anyhow::Result<Client> {
    let cluster = cluster();
    let kubeconfig = Kubeconfig::read_from(&cluster.kubeconfig)
        .with_context(|| format!("reading {}", cluster.kubeconfig.display()))?;
    let config = Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default()).await?;
    Ok(Client::try_from(config)?)
}

/// Creates a fresh namespace `<prefix>-<random>` and waits until its `default` ServiceAccount
/// exists (created by kube-controller-manager; pods are rejected before that).
pub async fn namespace(client: &Client, prefix: &str) -> String {
    try_namespace(client, prefix)
        .await
        .expect("create test namespace")
}

pub async fn try_namespace(client: &Client, prefix: &str) -> anyhow::Result<String> {
    let api: Api<Namespace> = Api::all(client.clone());
    let ns: Namespace = serde_json::from_value(serde_json::json!({
        "metadata": {
            "generateName": format!("{prefix}-"),
            "labels": { TEST_NAMESPACE_LABEL: "true" },
        }
    }))?;
    let ns = api.create(&PostParams::default(), &ns).await?;
    let name = ns.metadata.name.context("namespace without a name")?;
    let sas: Api<ServiceAccount> = Api::namespaced(client.clone(), &name);
    wait_for(&sas, "default", WAIT, |_| true)
        .await
        .with_context(|| format!("default ServiceAccount in namespace {name}"))?;
    Ok(name)
}

/// Directories (relative to the repository root) whose CRDs [`install_crds`] installs: our own
/// (ActionSchedule) and Kanister's (Blueprint, ActionSet, Profile). Missing ones are skipped.
pub const CRD_DIRS: &[&str] = &["manifests/crds", "manifests/kanister-crds"];

/// Applies (server-side) every CustomResourceDefinition found in the `*.yaml` files of
/// [`CRD_DIRS`] (multi-document files allowed, other kinds such as kustomizations are ignored)
/// and waits until each is Established. Returns the names of the CRDs. Idempotent, so every
/// test may call it.
pub async fn install_crds(client: &Client) -> anyhow::Result<Vec<String>> {
    let mut files = Vec::new();
    for rel in CRD_DIRS {
        files.extend(yaml_files(&repo_root().join(rel))?);
    }
    install_crd_files(client, &files, CrdInstall::Apply).await
}

/// The `*.yaml`/`*.yml` files of `dir`, sorted (none if `dir` does not exist).
pub fn yaml_files(dir: &std::path::Path) -> anyhow::Result<Vec<std::path::PathBuf>> {
    if !dir.is_dir() {
        return Ok(Vec::new());
    }
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .with_context(|| format!("reading {}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "yaml" || e == "yml"))
        .collect();
    files.sort();
    Ok(files)
}

/// How [`install_crd_files`] writes a CRD.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CrdInstall {
    /// Server-side apply (force): the file's schema wins over what the cluster has.
    Apply,
    /// Create, leaving an existing CRD as it is (tests that run beside a controller which
    /// changes the CRD must not undo its change for each other).
    CreateIfAbsent,
}

/// The CustomResourceDefinitions of the YAML `files` (multi-document files allowed, other kinds
/// ignored), written as `how` says; waits until each is Established and listable. Returns their
/// names.
pub async fn install_crd_files(
    client: &Client,
    files: &[std::path::PathBuf],
    how: CrdInstall,
) -> anyhow::Result<Vec<String>> {
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    let pp = PatchParams::apply("blueprint-operator-tests").force();
    let mut names = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(file)?;
        for doc in serde_yaml::Deserializer::from_str(&text) {
            let value = serde_json::Value::deserialize(doc)
                .with_context(|| format!("parsing {}", file.display()))?;
            if value.get("kind").and_then(|k| k.as_str()) != Some("CustomResourceDefinition") {
                continue;
            }
            let mut crd: CustomResourceDefinition = serde_json::from_value(value)
                .with_context(|| format!("CRD in {}", file.display()))?;
            crd.status = None;
            let name = crd.metadata.name.clone().context("CRD without a name")?;
            let written = match how {
                CrdInstall::Apply => api.patch(&name, &pp, &Patch::Apply(&crd)).await.map(drop),
                CrdInstall::CreateIfAbsent => {
                    match api.create(&PostParams::default(), &crd).await {
                        Err(kube::Error::Api(e)) if e.code == 409 => Ok(()),
                        other => other.map(drop),
                    }
                }
            };
            written.with_context(|| format!("installing CRD {name} from {}", file.display()))?;
            names.push(name);
        }
    }
    for name in &names {
        wait_for(&api, name, WAIT, |crd| {
            crd.status
                .as_ref()
                .and_then(|s| s.conditions.as_ref())
                .is_some_and(|cs| {
                    cs.iter()
                        .any(|c| c.type_ == "Established" && c.status == "True")
                })
        })
        .await
        .with_context(|| format!("CRD {name} Established"))?;
    }
    // Discovery of new CRDs lags a little behind Established; make sure a list works.
    for name in &names {
        let crd = api.get(name).await?;
        let plural = crd.spec.names.plural;
        let version = crd
            .spec
            .versions
            .iter()
            .find(|v| v.served)
            .context("CRD serves no version")?
            .name
            .clone();
        let gvk =
            kube::core::GroupVersionKind::gvk(&crd.spec.group, &version, &crd.spec.names.kind);
        let ar = kube::core::ApiResource::from_gvk_with_plural(&gvk, &plural);
        let dynapi: Api<kube::core::DynamicObject> = Api::all_with(client.clone(), &ar);
        poll(WAIT, || async {
            dynapi.list(&ListParams::default().limit(1)).await.ok()
        })
        .await
        .with_context(|| format!("listing {plural}.{}", crd.spec.group))?;
    }
    Ok(names)
}

/// Polls `f` every 200 ms until it returns `Some`, at most `timeout`.
pub async fn poll<T, F, Fut>(timeout: Duration, mut f: F) -> anyhow::Result<T>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        if let Some(v) = f().await {
            return Ok(v);
        }
        if tokio::time::Instant::now() >= deadline {
            anyhow::bail!("condition not met within {timeout:?}");
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Lists `api` (with `lp`) until an object for which `pick` holds is there (at most `timeout`);
/// returns the first. List errors count as "not yet".
pub async fn first_listed<K>(
    api: &Api<K>,
    lp: &ListParams,
    pick: impl Fn(&K) -> bool,
    timeout: Duration,
) -> anyhow::Result<K>
where
    K: Resource + Clone + DeserializeOwned + Debug,
{
    poll(timeout, || async {
        api.list(lp).await.ok()?.items.into_iter().find(|o| pick(o))
    })
    .await
}

/// Gets `name` until `cond` holds (a missing object counts as "not yet"); returns the object.
/// On timeout the error shows the last state seen.
pub async fn wait_for<K>(
    api: &Api<K>,
    name: &str,
    timeout: Duration,
    cond: impl Fn(&K) -> bool,
) -> anyhow::Result<K>
where
    K: Resource + Clone + DeserializeOwned + Debug,
{
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        let last = match api.get(name).await {
            Ok(obj) if cond(&obj) => return Ok(obj),
            Ok(obj) => format!("{obj:?}"),
            Err(e) => format!("error: {e}"),
        };
        if tokio::time::Instant::now() >= deadline {
            anyhow::bail!("{name}: condition not met within {timeout:?}; last seen: {last}");
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Pod annotations understood by the kwok stages of the test cluster
/// (tools/control-plane/kwok-config.yaml.in). They only act on a cluster started by us.
pub mod kwok {
    /// `"<int>"`: the Running pod ends with this exit code ("0" = Succeeded, else Failed).
    pub const EXIT: &str = "blueprint-operator.io/kwok-exit";
    /// Go duration (`"2s"`): how long the pod stays Running before it exits.
    pub const DURATION: &str = "blueprint-operator.io/kwok-duration";
    /// The text `pods/log` returns for every container of the pod (one line per text line).
    pub const LOG: &str = "blueprint-operator.io/kwok-log";
    /// Absolute path of a text file whose content is the pod's log.
    pub const LOG_FILE: &str = "blueprint-operator.io/kwok-log-file";
    /// Set by the cluster's log agent once the log is served; the pod exits only after that.
    pub const LOG_READY: &str = "blueprint-operator.io/kwok-log-ready";
}

/// Name of the fake node that kwok manages in clusters made by tools/control-plane/cluster.sh.
pub const KWOK_NODE: &str = "kwok-node-0";

/// Whether the cluster has the kwok node of tools/control-plane/cluster.sh, which tests that need
/// pods to run require. A cluster the tests started always has it: without it (or when the API
/// server cannot say) the test fails. An existing cluster (`BPO_KUBECONFIG`) may lack it: then
/// the test is skipped loudly, or fails under CI=true ([`prerequisite::missing`]). `false`: skip.
pub async fn require_kwok(client: &Client) -> bool {
    let nodes: Api<k8s_openapi::api::core::v1::Node> = Api::all(client.clone());
    let node = nodes
        .get_opt(KWOK_NODE)
        .await
        .unwrap_or_else(|e| prerequisite::broken("reading the kwok node", &format!("{e}")));
    let fake = node.is_some_and(|n| {
        n.metadata
            .annotations
            .is_some_and(|a| a.get("kwok.x-k8s.io/node").is_some_and(|v| v == "fake"))
    });
    if fake {
        return true;
    }
    if cluster().is_own() {
        prerequisite::broken(
            &format!("the kwok node {KWOK_NODE}"),
            "missing from the cluster the tests started (see its logs under the cluster's directory)",
        );
    }
    prerequisite::missing(
        &format!("the kwok node {KWOK_NODE} (made by tools/control-plane/cluster.sh)"),
        "run against a cluster the tests start (unset BPO_KUBECONFIG)",
    );
    false
}

/// The kubectl built with the control plane. A cluster the tests started has it; for an existing
/// cluster the test is skipped loudly, or fails under CI=true. `None`: skip.
pub fn require_kubectl() -> Option<std::path::PathBuf> {
    let c = cluster();
    match &c.kubectl {
        Some(k) => Some(k.clone()),
        None if c.is_own() => prerequisite::broken("kubectl", "cluster.sh printed no BPO_KUBECTL"),
        None => {
            prerequisite::missing(
                "kubectl of the test control plane",
                "run against a cluster the tests start (unset BPO_KUBECONFIG)",
            );
            None
        }
    }
}

/// Annotations that make a pod exit with `exit_code` after printing `log`.
pub fn kwok_annotations(exit_code: i32, log: &str) -> BTreeMap<String, String> {
    BTreeMap::from([
        (kwok::EXIT.to_string(), exit_code.to_string()),
        (kwok::LOG.to_string(), log.to_string()),
    ])
}

/// A plain pod (restartPolicy Never, one container "main") that kwok runs and then finishes
/// with `exit_code` (0 → Succeeded, else Failed); `pods/log` returns `log`.
pub fn plain_pod(name: &str, exit_code: i32, log: &str) -> Pod {
    serde_json::from_value(serde_json::json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": { "name": name, "annotations": kwok_annotations(exit_code, log) },
        "spec": {
            "restartPolicy": "Never",
            "containers": [{ "name": "main", "image": "busybox:stable", "command": ["true"] }],
        }
    }))
    .expect("valid pod")
}

/// Waits until the pod reaches phase Succeeded or Failed; returns the pod.
pub async fn wait_pod_finished(api: &Api<Pod>, name: &str) -> anyhow::Result<Pod> {
    wait_for(api, name, WAIT, |p| {
        matches!(
            p.status.as_ref().and_then(|s| s.phase.as_deref()),
            Some("Succeeded" | "Failed")
        )
    })
    .await
}

/// The manifest of a workload (Deployment, StatefulSet) `name` with `replicas` pods labelled
/// `app: <app>` (its selector) of pod spec `pod`; `extra` is merged into its spec.
pub fn workload(
    name: &str,
    app: &str,
    replicas: i32,
    pod: serde_json::Value,
    extra: serde_json::Value,
) -> serde_json::Value {
    let mut spec = serde_json::json!({
        "replicas": replicas,
        "selector": {"matchLabels": {"app": app}},
        "template": {"metadata": {"labels": {"app": app}}, "spec": pod},
    });
    if let (Some(s), Some(e)) = (spec.as_object_mut(), extra.as_object()) {
        s.extend(e.clone());
    }
    serde_json::json!({"metadata": {"name": name}, "spec": spec})
}

/// Creates the object of `manifest` (a `K`) in namespace `ns`; returns it as stored.
pub async fn create<K>(client: &Client, ns: &str, manifest: serde_json::Value) -> anyhow::Result<K>
where
    K: Resource<Scope = k8s_openapi::NamespaceResourceScope>
        + Clone
        + DeserializeOwned
        + serde::Serialize
        + Debug,
    K::DynamicType: Default,
{
    let api: Api<K> = Api::namespaced(client.clone(), ns);
    let obj: K = serde_json::from_value(manifest)?;
    Ok(api.create(&PostParams::default(), &obj).await?)
}

/// An ActionSchedule `nightly` in `ns` whose `run-now` token runs action `backup` of Blueprint
/// `bp` on the namespace `ns` at once (its cron line fires once a year).
pub async fn create_run_now_schedule(client: &Client, ns: &str) -> anyhow::Result<()> {
    use blueprint_operator::model::{ANNOTATION_RUN_NOW, ActionSchedule};
    let object = serde_json::json!({"apiVersion": "v1", "resource": "namespaces",
        "kind": "Namespace", "name": ns, "namespace": ns});
    create::<ActionSchedule>(
        client,
        ns,
        serde_json::json!({
            "apiVersion": "blueprint-operator.io/v1alpha1", "kind": "ActionSchedule",
            "metadata": {"name": "nightly", "namespace": ns,
                "annotations": {ANNOTATION_RUN_NOW: "t1"}},
            "spec": {"schedule": "0 0 1 1 *", "actionSetTemplate": {"actions": [
                {"name": "backup", "blueprint": "bp", "object": object}]}},
        }),
    )
    .await?;
    Ok(())
}

/// A Deployment `name` (label `app: name`, one container `app`) with `replicas` replicas.
pub async fn create_deployment(
    client: &Client,
    ns: &str,
    name: &str,
    replicas: i32,
) -> anyhow::Result<()> {
    let pod = serde_json::json!({"containers": [{"name": "app", "image": "nginx:stable"}]});
    let d = workload(name, name, replicas, pod, serde_json::json!({}));
    create::<k8s_openapi::api::apps::v1::Deployment>(client, ns, d).await?;
    Ok(())
}

/// The names of the Running pods of `ns` matching label `selector`, sorted; `None`: the list
/// failed.
pub async fn running_pods(client: &Client, ns: &str, selector: &str) -> Option<Vec<String>> {
    let pods: Api<Pod> = Api::namespaced(client.clone(), ns);
    let l = pods
        .list(&ListParams::default().labels(selector))
        .await
        .ok()?;
    let mut names: Vec<String> = l
        .items
        .into_iter()
        .filter(|p| p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running"))
        .filter_map(|p| p.metadata.name)
        .collect();
    names.sort();
    Some(names)
}

/// Run `cmd` and return its stdout; fail the test with its output if it did not succeed.
pub fn run_ok(cmd: &mut std::process::Command, what: &str) -> Vec<u8> {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("{what}: cannot start: {e}"));
    assert!(
        out.status.success(),
        "{what}: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// `kubectl kustomize DIR` (DIR relative to the repository root).
pub fn kustomize(kubectl: &std::path::Path, dir: &str) -> String {
    let mut cmd = std::process::Command::new(kubectl);
    cmd.args(["kustomize", dir]).current_dir(repo_root());
    String::from_utf8(run_ok(&mut cmd, &format!("kustomize {dir}"))).expect("UTF-8 YAML")
}

/// `kubectl apply --server-side ARGS` against the test cluster, from the repository root.
pub fn kubectl_apply(kubectl: &std::path::Path, args: &[&str]) {
    let mut cmd = std::process::Command::new(kubectl);
    cmd.args(["apply", "--server-side"])
        .args(args)
        .env("KUBECONFIG", &cluster().kubeconfig)
        .current_dir(repo_root());
    run_ok(&mut cmd, &format!("kubectl apply {}", args.join(" ")));
}

/// A PersistentVolumeClaim `name` bound to a hostPath PersistentVolume `<ns>-<name>` made for it
/// (no provisioner needed), with access mode `mode`; waits until it is Bound.
pub async fn bound_pvc(client: &Client, ns: &str, name: &str, mode: &str) -> anyhow::Result<()> {
    let pv_name = format!("{ns}-{name}");
    let pvs: Api<k8s_openapi::api::core::v1::PersistentVolume> = Api::all(client.clone());
    let pv = serde_json::from_value(serde_json::json!({
        "metadata": {"name": pv_name, "labels": {"blueprint-operator.io/test": "true"}},
        "spec": {
            "capacity": {"storage": "1Gi"},
            "accessModes": [mode],
            "storageClassName": "",
            "persistentVolumeReclaimPolicy": "Retain",
            "hostPath": {"path": format!("/tmp/{pv_name}")},
            "claimRef": {"namespace": ns, "name": name},
        }
    }))?;
    pvs.create(&PostParams::default(), &pv).await?;
    let pvcs: Api<k8s_openapi::api::core::v1::PersistentVolumeClaim> =
        Api::namespaced(client.clone(), ns);
    let pvc = serde_json::from_value(serde_json::json!({
        "metadata": {"name": name},
        "spec": {
            "accessModes": [mode],
            "storageClassName": "",
            "volumeName": pv_name,
            "resources": {"requests": {"storage": "1Gi"}},
        }
    }))?;
    pvcs.create(&PostParams::default(), &pvc).await?;
    wait_for(&pvcs, name, WAIT, |p| {
        p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Bound")
    })
    .await?;
    Ok(())
}

/// Waits until no function pod (label `createdBy=kanister`) is left in `ns`.
pub async fn function_pods_gone(client: &Client, ns: &str) -> anyhow::Result<()> {
    let pods: Api<Pod> = Api::namespaced(client.clone(), ns);
    poll(WAIT, || async {
        let l = pods
            .list(&ListParams::default().labels("createdBy=kanister"))
            .await
            .ok()?;
        l.items.is_empty().then_some(())
    })
    .await
    .context("function pods deleted")
}

/// Waits (at most `timeout`) until ActionSet `ns/name` is complete or failed; returns it.
pub async fn wait_actionset_done(
    client: &Client,
    ns: &str,
    name: &str,
    timeout: Duration,
) -> anyhow::Result<blueprint_operator::model::ActionSet> {
    let api: Api<blueprint_operator::model::ActionSet> = Api::namespaced(client.clone(), ns);
    wait_for(&api, name, timeout, |a| {
        a.state()
            .is_some_and(blueprint_operator::model::State::is_terminal)
    })
    .await
}

/// Waits until ActionSet `ns/name` is done and asserts that it completed; returns it as JSON.
pub async fn wait_actionset_complete(
    client: &Client,
    ns: &str,
    name: &str,
) -> anyhow::Result<serde_json::Value> {
    let a = wait_actionset_done(client, ns, name, Duration::from_secs(180)).await?;
    let v = serde_json::to_value(&a)?;
    assert_eq!(
        v["status"]["state"], "complete",
        "{name}: {:#}",
        v["status"]
    );
    Ok(v)
}

/// A Deployment `app` (label `app=<app>`) with one kwok pod; waits until it is Running
/// and returns its name.
pub async fn running_deployment_pod(
    client: &Client,
    ns: &str,
    app: &str,
) -> anyhow::Result<String> {
    create_deployment(client, ns, app, 1).await?;
    let selector = format!("app={app}");
    poll(WAIT, || async {
        running_pods(client, ns, &selector)
            .await?
            .into_iter()
            .next()
    })
    .await
    .with_context(|| format!("Running pod of Deployment {app}"))
}

/// Waits until the pod of phase `phase` of ActionSet `ns/actionset`'s first action (label
/// `blueprint-operator.io/phase=0.<phase>`) exists and the ActionSet records it (what a
/// restarted controller re-attaches to); its name.
pub async fn recorded_phase_pod(
    client: &Client,
    ns: &str,
    actionset: &str,
    phase: usize,
) -> anyhow::Result<String> {
    let pods: Api<Pod> = Api::namespaced(client.clone(), ns);
    let sets: Api<blueprint_operator::model::ActionSet> = Api::namespaced(client.clone(), ns);
    let selector = format!("blueprint-operator.io/phase=0.{phase}");
    poll(WAIT, || async {
        let a = sets.get(actionset).await.ok()?;
        let record = a
            .metadata
            .annotations?
            .remove("blueprint-operator.io/executor")?;
        // Other ActionSets of the namespace may have pods of the same phase.
        pods.list(&ListParams::default().labels(&selector))
            .await
            .ok()?
            .items
            .into_iter()
            .filter_map(|p| p.metadata.name)
            .find(|pod| record.contains(pod.as_str()))
    })
    .await
}
