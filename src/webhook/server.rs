//! The HTTPS server: axum router, body limit, probes, metrics, graceful shutdown.
//!
//! Two listeners:
//! * `--listen` (HTTPS, default `0.0.0.0:8443`): the admission routes plus `/healthz`,
//!   `/readyz` and `/metrics`;
//! * `--probe-listen` (plain HTTP, default `0.0.0.0:8080`, `""` disables it): `/healthz`,
//!   `/readyz` and `/metrics` only. It answers before the certificate is loaded, so `/readyz`
//!   can say "not ready: TLS not loaded" instead of the probe failing to connect.
//!
//! On SIGTERM/SIGINT `/readyz` turns 503, the server keeps answering for `--shutdown-delay`
//! (so the API server and kube-proxy stop sending to this pod), then stops accepting and waits
//! up to `--shutdown-grace` for requests in flight.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::Context as _;
use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum_server::Handle;
use axum_server::accept::DefaultAcceptor;
use axum_server::tls_rustls::RustlsAcceptor;
use http_body_util::{BodyExt as _, LengthLimitError, Limited};
use kube::Client;
use kube::api::Api;
use kube::core::{ApiResource, DynamicObject, GroupVersionKind};
use tokio::sync::watch;

use super::admission::{self, BlueprintRef, Lookup, MAX_BODY_BYTES, Outcome, Route};
use super::limits::{GuardAcceptor, Limits};
use super::metrics::{self, Metrics, Verdict};
use super::tls::{CertFiles, Tls};

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
}

/// What [`start`] needs; built from [`WebhookArgs`] by [`run`], or directly by tests.
#[derive(Clone)]
pub struct ServerConfig {
    pub listen: SocketAddr,
    pub probe_listen: Option<SocketAddr>,
    pub tls: CertFiles,
    pub tls_reload_interval: Duration,
    pub shutdown_delay: Duration,
    pub shutdown_grace: Duration,
    /// API access for the ActionSchedule → Blueprint lookup; `None` skips that check.
    pub client: Option<Client>,
    pub lookup_timeout: Duration,
    /// Timeouts and the connection limit of both listeners.
    pub limits: Limits,
}

impl std::fmt::Debug for ServerConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerConfig")
            .field("listen", &self.listen)
            .field("probe_listen", &self.probe_listen)
            .field("tls", &self.tls)
            .field("client", &self.client.is_some())
            .field("limits", &self.limits)
            .finish_non_exhaustive()
    }
}

struct AppState {
    metrics: Metrics,
    tls_loaded: AtomicBool,
    shutting_down: AtomicBool,
    client: Option<Client>,
    lookup_timeout: Duration,
    body_timeout: Duration,
}

impl AppState {
    fn ready(&self) -> Result<(), &'static str> {
        if self.shutting_down.load(Ordering::Relaxed) {
            Err("shutting down")
        } else if !self.tls_loaded.load(Ordering::Relaxed) {
            Err("TLS certificate not loaded")
        } else {
            Ok(())
        }
    }
}

type Shared = Arc<AppState>;

fn blueprint_resource() -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("cr.kanister.io", "v1alpha1", "Blueprint"),
        "blueprints",
    )
}

fn probe_routes() -> Router<Shared> {
    Router::new()
        .route("/healthz", get(|| async { "ok" }))
        .route("/readyz", get(readyz))
        .route("/metrics", get(metrics_route))
}

/// The HTTPS router: admission routes with the body limit, plus the probe routes.
fn router(state: Shared) -> Router {
    let mut r = probe_routes();
    for route in Route::ALL {
        r = r.route(
            route.path(),
            post(move |State(st): State<Shared>, body: Body| admit(st, route, body)),
        );
    }
    r.with_state(state)
}

/// Why a request body was not read.
enum BodyError {
    TooLarge,
    TimedOut,
    Broken(String),
}

/// Reads the body within the size limit and `--body-timeout`.
async fn read_body(body: Body, timeout: Duration) -> Result<Bytes, BodyError> {
    let read = Limited::new(body, MAX_BODY_BYTES).collect();
    match tokio::time::timeout(timeout, read).await {
        Err(_) => Err(BodyError::TimedOut),
        Ok(Ok(collected)) => Ok(collected.to_bytes()),
        Ok(Err(e)) if e.downcast_ref::<LengthLimitError>().is_some() => Err(BodyError::TooLarge),
        Ok(Err(e)) => Err(BodyError::Broken(e.to_string())),
    }
}

async fn readyz(State(st): State<Shared>) -> Response {
    match st.ready() {
        Ok(()) => (StatusCode::OK, "ok").into_response(),
        Err(why) => (StatusCode::SERVICE_UNAVAILABLE, format!("not ready: {why}")).into_response(),
    }
}

async fn metrics_route(State(st): State<Shared>) -> Response {
    (
        [(header::CONTENT_TYPE, metrics::CONTENT_TYPE)],
        st.metrics.encode(),
    )
        .into_response()
}

async fn admit(st: Shared, route: Route, body: Body) -> Response {
    let started = Instant::now();
    let outcome = match read_body(body, st.body_timeout).await {
        Err(BodyError::TooLarge) => Outcome {
            status: 413,
            body: format!(
                "request body is over the webhook's limit of {MAX_BODY_BYTES} bytes (an AdmissionReview from the API server is at most about twice its 3 MiB request limit)"
            )
            .into_bytes(),
            verdict: Verdict::TooLarge,
            uid: None,
            dry_run: false,
            summary: "body over the limit".into(),
        },
        Err(BodyError::TimedOut) => Outcome {
            status: 408,
            body: format!(
                "the request body did not arrive within {} s (--body-timeout); the connection is closed",
                st.body_timeout.as_secs_f64()
            )
            .into_bytes(),
            verdict: Verdict::BadRequest,
            uid: None,
            dry_run: false,
            summary: "body timeout".into(),
        },
        Err(BodyError::Broken(why)) => Outcome {
            status: 400,
            body: format!("could not read the request body: {why}").into_bytes(),
            verdict: Verdict::BadRequest,
            uid: None,
            dry_run: false,
            summary: why,
        },
        Ok(bytes) => decide(&st, route, bytes).await,
    };
    let elapsed = started.elapsed();
    st.metrics
        .observe(route.path(), outcome.verdict, elapsed.as_secs_f64());
    let uid = outcome.uid.as_deref().unwrap_or("");
    let latency_ms = elapsed.as_secs_f64() * 1000.0;
    if outcome.status == 200 {
        tracing::info!(
            uid,
            route = route.path(),
            verdict = outcome.verdict.label(),
            dry_run = outcome.dry_run,
            latency_ms,
            summary = %outcome.summary,
            "admission review"
        );
    } else {
        tracing::warn!(
            uid,
            route = route.path(),
            verdict = outcome.verdict.label(),
            status = outcome.status,
            latency_ms,
            reason = %outcome.summary,
            "admission review refused"
        );
    }
    let content_type = if outcome.is_json() {
        "application/json"
    } else {
        "text/plain; charset=utf-8"
    };
    let status = StatusCode::from_u16(outcome.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut response =
        (status, [(header::CONTENT_TYPE, content_type)], outcome.body).into_response();
    if matches!(outcome.status, 408 | 413) {
        // The rest of the body was not read: the connection cannot carry another request.
        response.headers_mut().insert(
            header::CONNECTION,
            header::HeaderValue::from_static("close"),
        );
    }
    response
}

async fn decide(st: &Shared, route: Route, bytes: Bytes) -> Outcome {
    if route != Route::ValidateActionSchedule {
        // Parsing and validating a large Blueprint is CPU work: keep it off the I/O threads.
        return tokio::task::spawn_blocking(move || {
            admission::review(route, &bytes, |_| Lookup::NotChecked("not needed".into()))
        })
        .await
        .unwrap_or_else(|e| Outcome {
            status: 500,
            body: format!("internal error: {e}").into_bytes(),
            verdict: Verdict::Error,
            uid: None,
            dry_run: false,
            summary: e.to_string(),
        });
    }
    let parsed = match admission::parse(route, &bytes) {
        Ok(p) => p,
        Err(out) => return out,
    };
    let mut lookups: Vec<(BlueprintRef, Lookup)> = Vec::new();
    for r in parsed.blueprint_refs() {
        let found = lookup(st, &r).await;
        if let Lookup::NotChecked(why) = &found {
            tracing::debug!(uid = %parsed.request.uid, blueprint = %r.1, why = %why, "Blueprint not checked");
        }
        lookups.push((r, found));
    }
    admission::decide(parsed, &lookups)
}

async fn lookup(st: &Shared, (ns, name): &BlueprintRef) -> Lookup {
    let Some(client) = &st.client else {
        return Lookup::NotChecked("Blueprint lookup disabled".into());
    };
    let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), ns, &blueprint_resource());
    match tokio::time::timeout(st.lookup_timeout, api.get_opt(name)).await {
        Ok(Ok(Some(obj))) => match serde_json::to_value(&obj) {
            Ok(v) => Lookup::Found(v),
            Err(e) => Lookup::NotChecked(e.to_string()),
        },
        Ok(Ok(None)) => Lookup::Missing,
        Ok(Err(e)) => {
            tracing::warn!(namespace = %ns, blueprint = %name, error = %e, "Blueprint lookup failed; check skipped");
            Lookup::NotChecked(crate::kube_error::describe(&e))
        }
        Err(_) => {
            tracing::warn!(namespace = %ns, blueprint = %name, "Blueprint lookup timed out; check skipped");
            Lookup::NotChecked("timeout".into())
        }
    }
}

/// A started webhook server.
pub struct Running {
    /// Address of the HTTPS listener.
    pub addr: SocketAddr,
    /// Address of the plain-HTTP probe listener, if any.
    pub probe_addr: Option<SocketAddr>,
    state: Shared,
    handles: Vec<Handle<SocketAddr>>,
    stop_tx: watch::Sender<bool>,
    tasks: Vec<tokio::task::JoinHandle<std::io::Result<()>>>,
    shutdown_delay: Duration,
    shutdown_grace: Duration,
}

impl std::fmt::Debug for Running {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Running")
            .field("addr", &self.addr)
            .field("probe_addr", &self.probe_addr)
            .finish()
    }
}

impl Running {
    /// The metrics registry of this server (tests read it).
    pub fn metrics(&self) -> Metrics {
        self.state.metrics.clone()
    }

    /// Graceful shutdown: not ready, keep serving for the delay, stop accepting, wait up to the
    /// grace period for requests in flight.
    pub async fn shutdown(self) -> anyhow::Result<()> {
        self.state.shutting_down.store(true, Ordering::Relaxed);
        if !self.shutdown_delay.is_zero() {
            tokio::time::sleep(self.shutdown_delay).await;
        }
        let _ = self.stop_tx.send(true);
        for h in &self.handles {
            h.graceful_shutdown(Some(self.shutdown_grace));
        }
        for t in self.tasks {
            t.await.context("server task")?.context("server")?;
        }
        Ok(())
    }
}

/// Starts the servers: the probe listener at once, then (once the certificate files load) the
/// HTTPS listener and the certificate reloader. Returns when both listen.
pub async fn start(config: ServerConfig) -> anyhow::Result<Running> {
    let metrics = Metrics::new(&Route::ALL.map(Route::path));
    let state: Shared = Arc::new(AppState {
        metrics: metrics.clone(),
        tls_loaded: AtomicBool::new(false),
        shutting_down: AtomicBool::new(false),
        client: config.client.clone(),
        lookup_timeout: config.lookup_timeout,
        body_timeout: config.limits.body_timeout,
    });
    let (stop_tx, stop_rx) = watch::channel(false);
    let mut handles = Vec::new();
    let mut tasks = Vec::new();

    let mut probe_addr = None;
    if let Some(addr) = config.probe_listen {
        let listener = std::net::TcpListener::bind(addr)
            .with_context(|| format!("binding --probe-listen {addr}"))?;
        probe_addr = Some(listener.local_addr()?);
        let handle = Handle::new();
        let server = axum_server::from_tcp(listener)?
            .acceptor(GuardAcceptor::new(
                DefaultAcceptor::new(),
                config.limits,
                metrics.clone(),
            ))
            .handle(handle.clone());
        let app = probe_routes().with_state(state.clone());
        tasks.push(tokio::spawn(server.serve(app.into_make_service())));
        handles.push(handle);
    }

    let tls = Tls::wait_load(
        config.tls.clone(),
        config.tls_reload_interval,
        stop_rx.clone(),
    )
    .await?;
    let listener = std::net::TcpListener::bind(config.listen)
        .with_context(|| format!("binding --listen {}", config.listen))?;
    let addr = listener.local_addr()?;
    let handle = Handle::new();
    let acceptor = GuardAcceptor::new(
        RustlsAcceptor::new(tls.rustls_config()).handshake_timeout(config.limits.handshake_timeout),
        config.limits,
        metrics.clone(),
    );
    let server = axum_server::from_tcp(listener)?
        .acceptor(acceptor)
        .handle(handle.clone());
    tasks.push(tokio::spawn(
        server.serve(router(state.clone()).into_make_service()),
    ));
    handles.push(handle);
    state.tls_loaded.store(true, Ordering::Relaxed);
    tokio::spawn(tls.watch(config.tls_reload_interval, metrics, stop_rx));
    tracing::info!(%addr, probe_addr = ?probe_addr, "webhook listening");

    Ok(Running {
        addr,
        probe_addr,
        state,
        handles,
        stop_tx,
        tasks,
        shutdown_delay: config.shutdown_delay,
        shutdown_grace: config.shutdown_grace,
    })
}

/// Resolves on SIGTERM or SIGINT.
pub async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        _ = ctrl_c => {}
        _ = term => {}
    }
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
    crate::app::logging::init(&args.log_level)?;
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
    };
    let running = tokio::select! {
        r = start(config) => r?,
        _ = shutdown_signal() => {
            tracing::info!("signal received before the server started");
            return Ok(());
        }
    };
    shutdown_signal().await;
    tracing::info!("shutting down");
    running.shutdown().await?;
    tracing::info!("stopped");
    Ok(())
}
