//! `blueprint-operator controller`: the ActionSet executor (and, unless
//! `--no-scheduler`, the ActionSchedule scheduler) in one process, with
//! Prometheus metrics on `--metrics-addr` and leader election through one
//! `coordination.k8s.io` Lease, `--lease-name` ([`super::leader`]): only the
//! holder executes ActionSets and schedules; losing the Lease exits the
//! process, so a restarted pod resumes cleanly.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use prometheus_client::registry::Registry;
use tracing::{info, warn};

use crate::executor::metrics::Metrics;
use crate::executor::pod_sweep;
use crate::executor::runtime::{self, Config};
use crate::executor::tenancy::Policy;
use crate::functions::context::ControllerIdentity;

#[derive(Debug, Clone, clap::Args)]
pub struct ControllerArgs {
    /// Watch ActionSets (and ActionSchedules) of this namespace only
    /// (default: all namespaces); every ActionSet in it is run, labelled or not.
    #[arg(long, env = "BPO_NAMESPACE")]
    pub namespace: Option<String>,
    #[command(flatten)]
    pub run_namespaces: super::RunNamespaces,
    /// Label selector of Kanister's controller pods ("" turns the check off). An opted-in
    /// ActionSet that was not claimed at creation (no webhook) is not started in a namespace
    /// where such a pod runs, since Kanister's controller starts it too.
    #[arg(
        long,
        env = "BPO_KANISTER_CONTROLLER_SELECTOR",
        default_value = "app=kanister-operator",
        value_name = "SELECTOR"
    )]
    pub kanister_controller_selector: String,
    /// Seconds a deleted ActionSet's deferPhase may run before the finalizer
    /// is removed anyway.
    #[arg(long, default_value_t = 600, value_name = "SECONDS")]
    pub deletion_timeout: u64,
    /// Default timeout of each phase and of the deferPhase (Go duration:
    /// 30m, 4h, 1h30m; 0 = none). Past it the phase is cancelled and fails,
    /// and the deferPhase runs. ActionSet option `phaseTimeout` and the
    /// Blueprint annotation `blueprint-operator.io/phase-timeouts` override it.
    #[arg(long, default_value = "4h", value_name = "DURATION", value_parser = parse_timeout)]
    pub phase_timeout: Duration,
    /// Default timeout of an action's main phases together, from its start
    /// (Go duration; 0 = none); the deferPhase still runs after it.
    /// ActionSet option `actionTimeout` overrides it.
    #[arg(long, default_value = "0", value_name = "DURATION", value_parser = parse_timeout)]
    pub action_timeout: Duration,
    /// Serve /metrics, /healthz and /readyz here (127.0.0.1:0 picks a free
    /// port; "off" disables).
    #[arg(long, default_value = "127.0.0.1:9464")]
    pub metrics_addr: String,
    /// Do not run the ActionSchedule scheduler in this process.
    #[arg(long)]
    pub no_scheduler: bool,
    /// ActionSchedules reconciled in parallel (0: no limit). A reconcile ends
    /// after its ActionSet creates; its Events and status write follow on
    /// their own, behind every create. Their requests to the API server are
    /// bounded by --schedule-max-in-flight.
    #[arg(long, default_value_t = crate::scheduler::SchedulerOptions::default().concurrency)]
    pub schedule_concurrency: u16,
    /// Requests of the scheduler in flight at once (ActionSet creates first,
    /// then status writes, Events and reads): no create storm at a tick where
    /// thousands of schedules are due. When the API server answers 429 (too
    /// many requests) the scheduler pauses all of them and sends the same
    /// requests again.
    #[arg(long, default_value_t = crate::scheduler::DEFAULT_MAX_IN_FLIGHT, value_name = "N")]
    pub schedule_max_in_flight: usize,
    /// Run without a Lease (only one replica may run then).
    #[arg(long)]
    pub no_leader_election: bool,
    /// Name of the Lease for leader election.
    #[arg(long, default_value = "blueprint-operator-executor")]
    pub lease_name: String,
    /// Namespace of the Lease (default: $POD_NAMESPACE, else "default").
    #[arg(long, env = "POD_NAMESPACE")]
    pub lease_namespace: Option<String>,
    /// Seconds between two looks at the Lease: a waiting replica takes a Lease its holder
    /// released within this long (client-go's retry period); the holder retries a failed
    /// renewal as often. Shorter than the renewal grace (5 s).
    #[arg(long, default_value_t = 2, value_name = "SECONDS")]
    pub lease_retry_period: u64,
    /// Identity in Events and the Lease (default: $POD_NAME, else hostname).
    #[arg(long, env = "POD_NAME")]
    pub instance: Option<String>,
    /// ActionSets of this namespace may reference objects and run functions
    /// in any namespace (Kanister's behaviour); for namespaces only
    /// administrators can write to, such as `kanister`. Repeatable or
    /// comma-separated. Other ActionSets are confined to their own namespace.
    #[arg(
        long = "trusted-namespace",
        env = "BPO_TRUSTED_NAMESPACES",
        value_delimiter = ',',
        value_name = "NAMESPACE"
    )]
    pub trusted_namespaces: Vec<String>,
    /// Every ActionSet may reference objects and run functions in any
    /// namespace, with the controller's rights (Kanister's behaviour).
    #[arg(long)]
    pub allow_cross_namespace_references: bool,
    /// Accept Profile endpoints in link-local and cloud metadata ranges
    /// (169.254.0.0/16, fe80::/10, 100.100.100.200, fd00:ec2::254).
    #[arg(long)]
    pub allow_metadata_endpoints: bool,
    /// Log filter (`info`, `debug`, `info,blueprint_operator=debug`).
    #[arg(long, default_value = "info")]
    pub log_level: String,
    /// Keep `actions.<name>.deferPhase` of Kanister's Blueprint CRD
    /// (blueprints.cr.kanister.io) open to any value, so that deferPhase lists
    /// reach the admission webhook: patched (that node only) whenever Kanister
    /// or anyone re-applies its CRD. `=false` leaves the CRD alone.
    #[arg(
        long,
        env = "BPO_RELAX_KANISTER_DEFERPHASE_SCHEMA",
        default_value_t = true,
        num_args = 0..=1,
        default_missing_value = "true",
        action = clap::ArgAction::Set,
        value_name = "BOOL"
    )]
    pub relax_kanister_deferphase_schema: bool,
    /// Seconds between sweeps for pods whose ActionSet is gone or has ended
    /// (0: only the sweep at start, which deletes every pod an earlier
    /// controller process left).
    #[arg(long, default_value_t = 60, value_name = "SECONDS")]
    pub pod_sweep_interval: u64,
}

impl ControllerArgs {
    /// The executor's settings these flags give (the binary's, and the benches' production
    /// defaults).
    pub fn executor_config(
        &self,
        instance: String,
        controller: Option<ControllerIdentity>,
    ) -> Config {
        Config {
            namespace: self.namespace.clone(),
            run_namespaces: self.run_namespaces.names(),
            deletion_timeout: Duration::from_secs(self.deletion_timeout),
            instance,
            timeouts: crate::executor::deadline::Defaults {
                phase: self.phase_timeout,
                action: self.action_timeout,
            },
            controller,
            tenancy: Policy {
                allow_cross_namespace: self.allow_cross_namespace_references,
                trusted_namespaces: self
                    .trusted_namespaces
                    .iter()
                    .map(|n| n.trim().to_string())
                    .filter(|n| !n.is_empty())
                    .collect(),
                allow_metadata_endpoints: self.allow_metadata_endpoints,
            },
            kanister_selector: Some(self.kanister_controller_selector.trim())
                .filter(|s| !s.is_empty())
                .map(str::to_string),
        }
    }
}

/// A timeout flag clap refused (clap prints it after the flag's name).
#[derive(Debug, thiserror::Error)]
#[error("{0}: write a Go duration such as 30m, 4h or 1h30m (0 = none)")]
struct TimeoutFlagError(#[from] crate::duration::DurationError);

fn parse_timeout(s: &str) -> Result<Duration, TimeoutFlagError> {
    Ok(crate::duration::parse_timeout(s)?)
}

fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_string())
        .ok()
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "blueprint-operator".into())
}

/// Serves `/metrics`, `/healthz` and `/readyz` on `addr` ("off": nowhere).
async fn serve_metrics(addr: &str, metrics: crate::metrics::Exported) -> anyhow::Result<()> {
    if addr == "off" {
        return Ok(());
    }
    let addr: SocketAddr = addr.parse().with_context(|| {
        format!("--metrics-addr {addr:?} is not an address like 127.0.0.1:9464 (or \"off\")")
    })?;
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .with_context(|| format!("binding --metrics-addr {addr}"))?;
    info!(addr = %listener.local_addr()?, "metrics listening");
    // Liveness and readiness: this process answers (it starts serving once it has a client for
    // the API server); a replica waiting for the Lease is healthy too.
    let app = crate::metrics::routes(metrics, Arc::new(|| Ok(())));
    tokio::spawn(async move {
        if let Err(e) = axum::serve(listener, app).await {
            warn!(error = %e, "metrics server stopped");
        }
    });
    Ok(())
}

/// Runs the controller until SIGTERM/SIGINT (or until the Lease is lost).
pub async fn run(args: ControllerArgs) -> anyhow::Result<()> {
    super::logging::init(&args.log_level)?;
    let _ = rustls::crypto::ring::default_provider().install_default();
    let config = kube::Config::infer()
        .await
        .context("connecting to the Kubernetes API (in-cluster config or $KUBECONFIG)")?;
    let client = kube::Client::try_from(config.clone())
        .context("connecting to the Kubernetes API (in-cluster config or $KUBECONFIG)")?;
    // The scheduler backs off itself on 429, once for all its requests
    // (scheduler::gate); kube's retry of each request would hide the 429s from it.
    let mut scheduler_config = config;
    scheduler_config.default_retry = false;
    let scheduler_client = kube::Client::try_from(scheduler_config)
        .context("connecting to the Kubernetes API (in-cluster config or $KUBECONFIG)")?;
    let mut registry = Registry::default();
    let metrics = Metrics::new(&mut registry);
    let schedule_metrics =
        (!args.no_scheduler).then(|| crate::scheduler::Metrics::new(&mut registry));
    serve_metrics(&args.metrics_addr, crate::metrics::Exported::new(registry)).await?;
    let instance = args.instance.clone().unwrap_or_else(hostname);

    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    // On every replica, leader or not: the patch is idempotent and guarded, and a standby
    // replica keeps the CRD relaxed while the leader restarts.
    let relaxer = args.relax_kanister_deferphase_schema.then(|| {
        let mut stop_rx = stop_rx.clone();
        tokio::spawn(crate::kanister_crd::run(client.clone(), async move {
            let _ = stop_rx.wait_for(|s| *s).await;
        }))
    });
    if relaxer.is_none() {
        info!(
            "{}=false: Kanister's Blueprint CRD is left as it is; with Kanister's schema a deferPhase list is refused by the API server before the webhook sees it",
            crate::kanister_crd::FLAG
        );
    }
    // One Lease for everything that must run once: the executor and the scheduler.
    let mut leadership = None;
    if !args.no_leader_election {
        let lease = super::leader::LeaseConfig {
            retry_seconds: args.lease_retry_period,
            ..super::leader::LeaseConfig::new(
                &args.lease_name,
                args.lease_namespace.as_deref().unwrap_or("default"),
                &instance,
            )
        };
        let acquired = super::leader::acquire(&client, &lease, super::shutdown::signal())
            .await
            .with_context(|| {
                format!(
                    "--lease-retry-period {}: choose 1 to 4 seconds",
                    args.lease_retry_period
                )
            })?;
        match acquired {
            Some(l) => leadership = Some(l),
            None => return Ok(()),
        }
    }

    let shutdown = {
        let mut stop_rx = stop_rx.clone();
        async move {
            let _ = stop_rx.wait_for(|s| *s).await;
        }
    };
    let scheduler = if args.no_scheduler {
        None
    } else {
        let opts = crate::scheduler::SchedulerOptions {
            namespace: args.namespace.clone(),
            concurrency: args.schedule_concurrency,
            max_in_flight: args.schedule_max_in_flight,
            metrics: schedule_metrics
                .clone()
                .unwrap_or_else(crate::scheduler::Metrics::unregistered),
            ..crate::scheduler::SchedulerOptions::default()
        };
        let mut stop_rx = stop_rx.clone();
        Some(tokio::spawn(crate::scheduler::run(
            scheduler_client,
            opts,
            async move {
                let _ = stop_rx.wait_for(|s| *s).await;
            },
        )))
    };
    let controller = ControllerIdentity::discover(&client).await;
    match &controller {
        Some(c) => info!(namespace = %c.namespace, service_account = %c.service_account,
            "pods started in the controller's namespace run as its ServiceAccount"),
        None => info!(
            "controller namespace or ServiceAccount unknown (POD_NAMESPACE, POD_SERVICE_ACCOUNT): pods get their namespace's default ServiceAccount"
        ),
    }
    let cfg = args.executor_config(instance, controller);
    // Before the executor runs anything: every labelled pod in scope is a leftover now.
    let sweeper = pod_sweep::start(
        client.clone(),
        args.namespace.clone(),
        Duration::from_secs(args.pod_sweep_interval),
    )
    .await;
    let executor = tokio::spawn(runtime::run(client.clone(), cfg, metrics, shutdown));
    let lost = async {
        match leadership.as_mut() {
            Some(l) => l.lost().await,
            None => std::future::pending::<()>().await,
        }
    };
    tokio::select! {
        _ = super::shutdown::signal() => info!("shutting down"),
        _ = lost => warn!("lost leadership; exiting so that the new leader takes over"),
    }
    let _ = stop_tx.send(true);
    sweeper.abort();
    if let Some(r) = relaxer {
        r.abort();
    }
    let _ = tokio::time::timeout(Duration::from_secs(5), executor).await;
    if let Some(s) = scheduler {
        match tokio::time::timeout(Duration::from_secs(5), s).await {
            Ok(Ok(Err(e))) => warn!(error = %e, "scheduler stopped with an error"),
            Ok(Err(e)) => warn!(error = %e, "scheduler task failed"),
            _ => {}
        }
    }
    // Executor and scheduler have stopped: another replica may take over at once.
    if let Some(l) = leadership {
        l.release().await;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser as _;

    #[derive(clap::Parser)]
    struct Cli {
        #[command(flatten)]
        args: ControllerArgs,
    }

    fn relax(flags: &[&str]) -> bool {
        Cli::try_parse_from(std::iter::once("controller").chain(flags.iter().copied()))
            .unwrap()
            .args
            .relax_kanister_deferphase_schema
    }

    #[test]
    fn deferphase_relaxation_is_on_unless_turned_off() {
        assert!(relax(&[]));
        assert!(relax(&["--relax-kanister-deferphase-schema"]));
        assert!(relax(&["--relax-kanister-deferphase-schema=true"]));
        assert!(!relax(&["--relax-kanister-deferphase-schema=false"]));
        assert!(
            Cli::try_parse_from(["controller", "--relax-kanister-deferphase-schema=no"]).is_err()
        );
    }
}
