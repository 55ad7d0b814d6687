//! The real `blueprint-operator controller` binary as a child process of a test, running as
//! the controller's ServiceAccount of manifests/ ([`super::rbac`]), and the common start of a
//! test that needs it.

use std::process::Stdio;

use kube::Client;
use tokio::process::{Child, Command};

/// A controller child process; killed (SIGKILL) when dropped.
pub struct Controller {
    child: Child,
}

impl Controller {
    /// A controller for namespace `ns` alone, without scheduler: the executor only.
    /// `extra` flags are added to the command line.
    pub fn start(ns: &str, extra: &[&str]) -> Controller {
        Controller::start_with(ns, extra, &[])
    }

    /// [`Controller::start`] with environment variables `env` set.
    pub fn start_with(ns: &str, extra: &[&str], env: &[(&str, &str)]) -> Controller {
        let args = [&["--namespace", ns, "--no-scheduler"], extra].concat();
        Controller::spawn(&args, env)
    }

    /// A controller with `args` after the flags every test wants (no leader election, no
    /// metrics listener, warnings only).
    pub fn spawn(args: &[&str], env: &[(&str, &str)]) -> Controller {
        let child = Command::new(env!("CARGO_BIN_EXE_blueprint-operator"))
            .args([
                "controller",
                "--no-leader-election",
                "--metrics-addr",
                "off",
                "--log-level",
                "warn",
            ])
            .args(args)
            .envs(env.iter().copied())
            .env("KUBECONFIG", super::rbac::controller_kubeconfig())
            .stdin(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("start blueprint-operator controller");
        Controller { child }
    }

    /// The process id, while it runs.
    pub fn pid(&self) -> Option<u32> {
        self.child.id()
    }

    /// SIGKILL, then reap.
    pub async fn kill(mut self) {
        self.child.start_kill().expect("SIGKILL controller");
        let _ = self.child.wait().await;
    }
}

/// The cluster's client and a fresh namespace `<prefix>-<random>`, with the CRDs installed;
/// `None`: skipped, an existing cluster without the kwok node ([`super::require_kwok`]).
pub async fn setup(prefix: &str) -> Option<(Client, String)> {
    let client = super::client().await;
    if !super::require_kwok(&client).await {
        return None;
    }
    super::install_crds(&client).await.expect("install CRDs");
    let ns = super::namespace(&client, prefix).await;
    Some((client, ns))
}
