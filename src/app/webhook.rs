//! `blueprint-operator webhook`: the admission webhook's flags, wired to
//! [`crate::webhook::server`] with the shared logging and shutdown signal.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context as _;
use kube::Client;

use crate::webhook::limits::Limits;
use crate::webhook::server::{ServerConfig, start};
use crate::webhook::tls::CertFiles;

/// `blueprint-operator webhook`.
#[derive(Debug, Clone, clap::Args)]
pub struct WebhookArgs {
    /// HTTPS address for the admission routes (and probes/metrics).
    #[arg(long, env = "BPO_WEBHOOK_LISTEN", default_value = "0.0.0.0:8443")]
    pub listen: SocketAddr,
    /// Plain-HTTP address for /healthz, /readyz and /metrics; empty to disable.
    #[arg(long, env = "BPO_WEBHOOK_PROBE_LISTEN", default_value = "0.0.0.0:8080")]
    pub probe_listen: String,
    /// Serving certificate (PEM, leaf first). Reloaded when it changes.
    #[arg(long, env = "BPO_TLS_CERT_FILE")]
    pub tls_cert_file: PathBuf,
    /// Private key of the serving certificate (PEM). Reloaded when it changes.
    #[arg(long, env = "BPO_TLS_KEY_FILE")]
    pub tls_key_file: PathBuf,
    /// How often to check the certificate files for changes, in seconds.
    #[arg(long, default_value_t = 5)]
    pub tls_reload_interval: u64,
    /// Log filter (tracing EnvFilter syntax); RUST_LOG wins when set.
    #[arg(long, env = "BPO_LOG_LEVEL", default_value = "info")]
    pub log_level: String,
    /// Seconds to keep serving after SIGTERM while /readyz reports 503.
    #[arg(long, default_value_t = 5)]
    pub shutdown_delay: u64,
    /// Seconds to wait for requests in flight once the server stops accepting.
    #[arg(long, default_value_t = 20)]
    pub shutdown_grace: u64,
    /// Do not look Blueprints up for /validate/actionschedule (no API access needed).
    #[arg(long)]
    pub no_blueprint_lookup: bool,
    /// Timeout of one Blueprint lookup, in milliseconds; on timeout the check is skipped.
    #[arg(long, default_value_t = 2000)]
    pub lookup_timeout_ms: u64,
    /// Seconds a client may take to send a request's headers (from its first byte, or from the
    /// TLS handshake for a connection's first request); slower connections are closed.
    #[arg(long, default_value_t = 10)]
    pub header_timeout: u64,
    /// Seconds a client may take to send a request's body; slower requests get 408.
    #[arg(long, default_value_t = 15)]
    pub body_timeout: u64,
    /// Seconds a keep-alive connection may stay idle (longer than the API server's 90 s).
    #[arg(long, default_value_t = 120)]
    pub idle_timeout: u64,
    /// Seconds a client may take to complete the TLS handshake.
    #[arg(long, default_value_t = 10)]
    pub tls_handshake_timeout: u64,
    /// Connections open at once per listener; further connections are closed at once.
    #[arg(long, default_value_t = 512)]
    pub max_connections: usize,
    /// The controller's `--namespace` and `--run-namespaces` (comma-separated): /mutate/actionset
    /// claims every ActionSet created there, labelled or not; elsewhere only labelled ones.
    #[arg(
        long,
        env = "BPO_RUN_NAMESPACES",
        value_delimiter = ',',
        value_name = "NS,..."
    )]
    pub run_namespaces: Vec<String>,
}

/// The [`Limits`] of the flags; a zero timeout or limit would refuse every request.
fn limits(args: &WebhookArgs) -> anyhow::Result<Limits> {
    for (flag, v) in [
        ("--header-timeout", args.header_timeout),
        ("--body-timeout", args.body_timeout),
        ("--idle-timeout", args.idle_timeout),
        ("--tls-handshake-timeout", args.tls_handshake_timeout),
        ("--max-connections", args.max_connections as u64),
    ] {
        anyhow::ensure!(v > 0, "{flag} must be at least 1");
    }
    Ok(Limits {
        header_timeout: Duration::from_secs(args.header_timeout),
        body_timeout: Duration::from_secs(args.body_timeout),
        idle_timeout: Duration::from_secs(args.idle_timeout),
        handshake_timeout: Duration::from_secs(args.tls_handshake_timeout),
        max_connections: args.max_connections,
    })
}

/// `blueprint-operator webhook`: serve until SIGTERM/SIGINT.
pub async fn run(args: WebhookArgs) -> anyhow::Result<()> {
    super::logging::init(&args.log_level)?;
    let _ = rustls::crypto::ring::default_provider().install_default();
    let probe_listen = match args.probe_listen.trim() {
        "" => None,
        s => Some(s.parse::<SocketAddr>().with_context(|| {
            format!("--probe-listen {s:?} is not an address like 0.0.0.0:8080")
        })?),
    };
    anyhow::ensure!(
        args.tls_reload_interval > 0,
        "--tls-reload-interval must be at least 1 second"
    );
    let client = if args.no_blueprint_lookup {
        None
    } else {
        match Client::try_default().await {
            Ok(c) => Some(c),
            Err(e) => {
                tracing::warn!(error = %e, "no Kubernetes API access: ActionSchedule checks will not look Blueprints up");
                None
            }
        }
    };
    let limits = limits(&args)?;
    let config = ServerConfig {
        listen: args.listen,
        probe_listen,
        tls: CertFiles {
            cert: args.tls_cert_file,
            key: args.tls_key_file,
        },
        tls_reload_interval: Duration::from_secs(args.tls_reload_interval),
        shutdown_delay: Duration::from_secs(args.shutdown_delay),
        shutdown_grace: Duration::from_secs(args.shutdown_grace),
        client,
        lookup_timeout: Duration::from_millis(args.lookup_timeout_ms),
        limits,
        run_namespaces: args
            .run_namespaces
            .iter()
            .map(|n| n.trim().to_string())
            .filter(|n| !n.is_empty())
            .collect(),
    };
    let running = tokio::select! {
        r = start(config) => r?,
        _ = super::shutdown::signal() => {
            tracing::info!("signal received before the server started");
            return Ok(());
        }
    };
    super::shutdown::signal().await;
    tracing::info!("shutting down");
    running.shutdown().await?;
    tracing::info!("stopped");
    Ok(())
}
