//! Starts (once per test binary) or reuses a real Kubernetes control plane.
//!
//! * `BPO_KUBECONFIG=/path/kubeconfig`, or `KUBECONFIG=...` together with
//!   `BPO_USE_EXISTING_CLUSTER=1`: use that cluster, start nothing.
//! * otherwise: `tools/control-plane/cluster.sh up` with a fresh state directory and a
//!   watchdog on this process's PID, so the cluster is torn down when the test binary exits,
//!   whether the tests passed, failed, panicked or the process was killed.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{SystemTime, UNIX_EPOCH};

/// A running cluster that the tests of this binary share.
#[derive(Debug)]
pub struct Cluster {
    /// Admin kubeconfig (group `system:masters`).
    pub kubeconfig: PathBuf,
    /// State directory of a cluster started by us (`None` for an existing cluster).
    pub dir: Option<PathBuf>,
    /// `kubectl` built with the control plane, when we started it.
    pub kubectl: Option<PathBuf>,
}

impl Cluster {
    /// True when the tests started this cluster themselves (it then has the kwok node, see
    /// `super::require_kwok`, and is torn down when the test binary exits).
    pub fn is_own(&self) -> bool {
        self.dir.is_some()
    }
}

static CLUSTER: OnceLock<Cluster> = OnceLock::new();

/// The shared cluster; the first call starts it (this blocks for the start-up, and for the first
/// build of the control plane binaries if they are not cached yet).
pub fn cluster() -> &'static Cluster {
    CLUSTER.get_or_init(|| match existing_kubeconfig() {
        Some(kubeconfig) => Cluster {
            kubeconfig,
            dir: None,
            kubectl: None,
        },
        // A second try covers a port taken between picking it and binding it.
        None => start()
            .or_else(|e| {
                eprintln!("test control plane did not start ({e:#}); trying once more");
                start()
            })
            .unwrap_or_else(|e| panic!("could not start the test control plane: {e:#}")),
    })
}

fn existing_kubeconfig() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("BPO_KUBECONFIG").filter(|p| !p.is_empty()) {
        return Some(PathBuf::from(p));
    }
    if std::env::var("BPO_USE_EXISTING_CLUSTER").is_ok_and(|v| v == "1" || v == "true") {
        let p = std::env::var_os("KUBECONFIG")
            .filter(|p| !p.is_empty())
            .expect("BPO_USE_EXISTING_CLUSTER=1 needs KUBECONFIG");
        return Some(PathBuf::from(p));
    }
    None
}

/// Root of the repository (the crate root).
pub fn repo_root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// A control plane of one test's own, for flags the shared one must not have (an API server
/// that throttles); `cluster.sh down` when dropped, and by the watchdog when the test binary exits.
#[derive(Debug)]
pub struct OwnCluster {
    pub cluster: Cluster,
}

impl OwnCluster {
    /// Starts one whose kube-apiserver gets `apiserver_args` too (`BPO_APISERVER_EXTRA_ARGS`).
    /// Blocks for the start-up.
    pub fn start(apiserver_args: &str) -> anyhow::Result<OwnCluster> {
        let env = [("BPO_APISERVER_EXTRA_ARGS", apiserver_args)];
        Ok(OwnCluster {
            cluster: start_with(&env)?,
        })
    }
}

impl Drop for OwnCluster {
    fn drop(&mut self) {
        if let Some(dir) = &self.cluster.dir {
            let _ = Command::new("bash")
                .arg(repo_root().join("tools/control-plane/cluster.sh"))
                .arg("down")
                .env("BPO_CLUSTER_DIR", dir)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status();
        }
    }
}

fn start() -> anyhow::Result<Cluster> {
    start_with(&[])
}

fn start_with(env: &[(&str, &str)]) -> anyhow::Result<Cluster> {
    let nanos = SystemTime::now().duration_since(UNIX_EPOCH)?.subsec_nanos();
    let dir = std::env::temp_dir().join(format!("bpo-test-{}-{nanos}", std::process::id()));
    let script = repo_root().join("tools/control-plane/cluster.sh");
    eprintln!("starting test control plane in {}", dir.display());
    // stdout: the `export K=V` lines; stderr: progress, shown as it comes.
    let out = Command::new("bash")
        .arg(&script)
        .arg("up")
        .env("BPO_CLUSTER_DIR", &dir)
        .env("BPO_WATCH_PID", std::process::id().to_string())
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .stderr(Stdio::inherit())
        .output()?;
    if !out.status.success() {
        // cluster.sh stopped whatever it had started; its logs stay in the state directory.
        anyhow::bail!(
            "{} up failed with {} (logs in {}/logs)",
            script.display(),
            out.status,
            dir.display()
        );
    }
    let stdout = String::from_utf8(out.stdout)?;
    let var = |name: &str| {
        stdout.lines().find_map(|l| {
            l.strip_prefix("export ")
                .and_then(|kv| kv.strip_prefix(name))
                .and_then(|v| v.strip_prefix('='))
                .map(PathBuf::from)
        })
    };
    let kubeconfig =
        var("KUBECONFIG").ok_or_else(|| anyhow::anyhow!("cluster.sh printed no KUBECONFIG"))?;
    Ok(Cluster {
        kubeconfig,
        dir: Some(dir),
        kubectl: var("BPO_KUBECTL"),
    })
}
