//! The composition root: each long-running subcommand is wired here from the executor, the
//! scheduler and the webhook, with what they share written once.
//!
//! - [`controller`]: the `controller` subcommand (ActionSet executor and ActionSchedule
//!   scheduler in one process, under one Lease);
//! - [`webhook`]: the `webhook` subcommand (flags to [`crate::webhook::server`]);
//! - [`leader`]: leader election through the one Lease;
//! - [`logging`]: JSON logs on stderr, filtered by `--log-level` or `RUST_LOG`;
//! - [`shutdown`]: the SIGTERM/SIGINT signal.
//!
//! Metrics and the `/healthz`, `/readyz` routes both serve are [`crate::metrics`].

pub mod controller;
pub mod leader;
pub mod logging;
pub mod shutdown;
pub mod webhook;

/// `--run-namespaces`, shared by `controller` (which runs every ActionSet there) and `webhook`
/// (which claims every ActionSet created there).
#[derive(Debug, Clone, Default, clap::Args)]
pub struct RunNamespaces {
    /// Namespaces (comma-separated) whose every ActionSet, labelled or not, is this operator's:
    /// the controller runs them, the webhook claims them at creation. Elsewhere only ActionSets
    /// labelled blueprint-operator.io/executor=blueprint-operator are.
    #[arg(
        long = "run-namespaces",
        env = "BPO_RUN_NAMESPACES",
        value_delimiter = ',',
        value_name = "NS,..."
    )]
    names: Vec<String>,
}

impl RunNamespaces {
    /// The names given, trimmed, without empty ones.
    pub fn names(&self) -> Vec<String> {
        self.names
            .iter()
            .map(|n| n.trim().to_string())
            .filter(|n| !n.is_empty())
            .collect()
    }
}

/// Runs `work` to completion on a new Tokio runtime (multi-threaded for the servers, one thread
/// for the commands), or says why the runtime could not start and gives exit code 2.
pub fn block_on<F: std::future::Future>(
    multi_thread: bool,
    work: F,
) -> Result<F::Output, std::process::ExitCode> {
    let mut builder = if multi_thread {
        tokio::runtime::Builder::new_multi_thread()
    } else {
        tokio::runtime::Builder::new_current_thread()
    };
    match builder.enable_all().build() {
        Ok(rt) => Ok(rt.block_on(work)),
        Err(e) => {
            eprintln!("error: cannot start the Tokio runtime: {e}");
            Err(std::process::ExitCode::from(2))
        }
    }
}
