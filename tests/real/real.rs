//! Helpers of the real tier: the real node's images, pods on it, kubectl against its cluster.

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use anyhow::Context as _;
use k8s_openapi::api::core::v1::Pod;
use kube::Client;
use kube::api::{Api, PostParams};

use crate::support;

/// The real node's name (tools/control-plane/real-node.sh).
pub const NODE: &str = "real-0";
/// The node IP, the address of the host-only bridge: servers that pods must reach listen here.
pub const NODE_IP: &str = "10.245.0.1";
/// Waits on the real node: an image import or a first container start takes seconds, not ms.
pub const WAIT: Duration = Duration::from_secs(120);

/// The operator image, as tools/images/build.sh tags it.
pub fn operator_image() -> String {
    format!("blueprint-operator:{}", env!("CARGO_PKG_VERSION"))
}

/// The tools image for Blueprints (bash, coreutils, restic, kando).
pub fn tools_image() -> String {
    format!("blueprint-operator-tools:{}", env!("CARGO_PKG_VERSION"))
}

/// The cluster must have the real node: a missing one fails the test (never a silent pass).
pub async fn client() -> Client {
    let client = support::client().await;
    let nodes: Api<k8s_openapi::api::core::v1::Node> = Api::all(client.clone());
    let node = nodes.get_opt(NODE).await.expect("get node");
    assert!(
        node.is_some(),
        "no node {NODE}: the real tier runs on the cluster of `tools/test.sh --real`"
    );
    client
}

pub fn kubectl_path() -> PathBuf {
    support::cluster()
        .kubectl
        .clone()
        .or_else(|| std::env::var_os("BPO_KUBECTL").map(PathBuf::from))
        .expect("kubectl of the test control plane (BPO_KUBECTL)")
}

/// `blueprint-operator ctl -n ns args...` against the test cluster.
pub fn ctl(ns: &str, args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_blueprint-operator"))
        .args(["ctl", "-n", ns])
        .args(args)
        .env("KUBECONFIG", &support::cluster().kubeconfig)
        .env_remove("BPO_KUBECONFIG")
        .output()
        .expect("run blueprint-operator ctl")
}

/// Runs kubectl against the test cluster; returns stdout, or the error with stderr.
pub fn kubectl(args: &[&str]) -> anyhow::Result<String> {
    let out = Command::new(kubectl_path())
        .arg("--kubeconfig")
        .arg(&support::cluster().kubeconfig)
        .args(args)
        .output()
        .context("running kubectl")?;
    anyhow::ensure!(
        out.status.success(),
        "kubectl {} failed: {}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr).trim()
    );
    Ok(String::from_utf8(out.stdout)?)
}

/// Creates `pod` in `ns` and waits until it is Running (or fails with its status).
pub async fn run_pod(client: &Client, ns: &str, pod: serde_json::Value) -> anyhow::Result<Pod> {
    let api: Api<Pod> = Api::namespaced(client.clone(), ns);
    let pod: Pod = serde_json::from_value(pod)?;
    let name = pod.metadata.name.clone().context("pod without a name")?;
    api.create(&PostParams::default(), &pod).await?;
    support::wait_for(&api, &name, WAIT, |p| {
        p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running")
    })
    .await
}

/// A pod on the real node running `command` in `image`.
pub fn pod(name: &str, image: &str, command: &[&str]) -> serde_json::Value {
    serde_json::json!({
        "metadata": {"name": name, "labels": {"app": name}},
        "spec": {
            "nodeName": NODE,
            "terminationGracePeriodSeconds": 1,
            "containers": [{
                "name": "main",
                "image": image,
                "imagePullPolicy": "IfNotPresent",
                "command": command,
            }],
        },
    })
}

/// A pod of the tools image on the real node running `script` with bash.
pub fn tools_pod(name: &str, script: &str) -> serde_json::Value {
    pod(name, &tools_image(), &["bash", "-c", script])
}

/// The names of the pods in `ns` that `selector` selects.
pub fn pod_names(ns: &str, selector: &str) -> anyhow::Result<Vec<String>> {
    let names = kubectl(&[
        "get",
        "pods",
        "-n",
        ns,
        "-l",
        selector,
        "-o",
        "jsonpath={.items[*].metadata.name}",
    ])?;
    Ok(names.split_whitespace().map(str::to_string).collect())
}

/// `kubectl get ... -o json`, parsed.
pub fn get_json(args: &[&str]) -> serde_json::Value {
    let mut all = args.to_vec();
    all.extend(["-o", "json"]);
    serde_json::from_str(&kubectl(&all).unwrap()).unwrap()
}

/// Kanister's released CRDs (the corpus's), as a cluster running Kanister has them.
pub fn kanister_crds() {
    let crds = support::corpus::dir()
        .expect("the Kanister corpus (KANISTER_CORPUS) with Kanister's CRDs")
        .join("crds");
    kubectl(&["apply", "-f", crds.to_str().unwrap()]).expect("Kanister's CRDs");
    for crd in ["blueprints", "actionsets", "profiles"] {
        kubectl(&[
            "wait",
            "--for=condition=Established",
            "--timeout=60s",
            &format!("crd/{crd}.cr.kanister.io"),
        ])
        .unwrap();
    }
}
