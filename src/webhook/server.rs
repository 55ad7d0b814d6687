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
//! up to `--shutdown-grace` for requests in flight. During the delay each HTTP/1.1 answer says
//! `Connection: close`: the API server calls webhooks over HTTP/1.1 and keeps connections
//! alive, pinned to this pod past the endpoint's removal; closing them after an answer is
//! clean, while closing an idle one at the end of the delay races a request it is about to
//! carry (the API server then refuses that apply, "broken pipe").

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::Context as _;
use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderValue, StatusCode, Version, header};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum_server::Handle;
use axum_server::accept::DefaultAcceptor;
use axum_server::tls_rustls::RustlsAcceptor;
use http_body_util::{BodyExt as _, LengthLimitError, Limited};
use kube::Client;
use kube::api::Api;
use kube::core::{ApiResource, DynamicObject, GroupVersionKind};
use tokio::sync::watch;

use super::admission::{self, MAX_BODY_BYTES, Outcome, Route};
use super::limits::{GuardAcceptor, Limits};
use super::response::{BlueprintRef, Lookup};
use prometheus_client::registry::Registry;

use super::metrics::{Metrics, Verdict};
use super::tls::{CertFiles, Tls};
use super::workers::{WorkerError, Workers};
use crate::executor::ownership::Ownership;
use crate::metrics::Exported;

/// What [`start`] needs; built from the flags by [`crate::app::webhook::run`], or directly by tests.
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
    /// Namespaces whose every ActionSet the controller runs (its `--namespace` and
    /// `--run-namespaces`): `/mutate/actionset` claims their ActionSets, labelled or not.
    pub run_namespaces: Vec<String>,
}

impl ServerConfig {
    /// A server on 127.0.0.1 (a free port), no probe listener, serving `tls.crt`/`tls.key` of
    /// `cert_dir`, without API access, stopping at once: what tests and benchmarks start.
    pub fn local(cert_dir: &std::path::Path) -> ServerConfig {
        ServerConfig {
            listen: SocketAddr::from(([127, 0, 0, 1], 0)),
            probe_listen: None,
            tls: CertFiles {
                cert: cert_dir.join("tls.crt"),
                key: cert_dir.join("tls.key"),
            },
            tls_reload_interval: Duration::from_secs(5),
            shutdown_delay: Duration::ZERO,
            shutdown_grace: Duration::from_secs(5),
            client: None,
            lookup_timeout: Duration::from_secs(1),
            limits: Limits::default(),
            run_namespaces: Vec::new(),
        }
    }
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
    /// The process's registry, served on `/metrics`.
    exported: Exported,
    tls_loaded: AtomicBool,
    shutting_down: AtomicBool,
    client: Option<Client>,
    lookup_timeout: Duration,
    body_timeout: Duration,
    /// Where the reviews' CPU work runs.
    workers: Workers,
    /// Which ActionSets `/mutate/actionset` claims.
    ownership: Ownership,
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

/// `/healthz`, `/readyz` (not ready before the certificate loads and once shutting down) and
/// `/metrics`.
fn probe_routes(state: &Shared) -> Router {
    let st = state.clone();
    crate::metrics::routes(state.exported.clone(), Arc::new(move || st.ready()))
}

/// The HTTPS router: admission routes with the body limit, plus the probe routes.
fn router(state: Shared) -> Router {
    let mut r = Router::new();
    for route in Route::ALL {
        r = r.route(
            route.path(),
            post(
                move |State(st): State<Shared>, version: Version, body: Body| async move {
                    let mut response = admit(st.clone(), route, body).await;
                    if version < Version::HTTP_2 && st.shutting_down.load(Ordering::Relaxed) {
                        let close = HeaderValue::from_static("close");
                        response.headers_mut().insert(header::CONNECTION, close);
                    }
                    response
                },
            ),
        );
    }
    r.with_state(state.clone()).merge(probe_routes(&state))
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

async fn admit(st: Shared, route: Route, body: Body) -> Response {
    let started = Instant::now();
    let outcome = match read_body(body, st.body_timeout).await {
        Err(BodyError::TooLarge) => Outcome::refused(
            413,
            Verdict::TooLarge,
            format!(
                "request body is over the webhook's limit of {MAX_BODY_BYTES} bytes (an AdmissionReview from the API server is at most about twice its 3 MiB request limit)"
            ),
            "body over the limit",
        ),
        Err(BodyError::TimedOut) => Outcome::refused(
            408,
            Verdict::BadRequest,
            format!(
                "the request body did not arrive within {} s (--body-timeout); the connection is closed",
                st.body_timeout.as_secs_f64()
            ),
            "body timeout",
        ),
        Err(BodyError::Broken(why)) => Outcome::refused(
            400,
            Verdict::BadRequest,
            format!("could not read the request body: {why}"),
            why,
        ),
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
    let len = bytes.len();
    if route != Route::ValidateActionSchedule {
        let claims = st.ownership.clone();
        return st
            .workers
            .run(len, move || {
                admission::review(route, &bytes, &claims, |_| {
                    Lookup::NotChecked("not needed".into())
                })
            })
            .await
            .unwrap_or_else(internal_error);
    }
    // An ActionSchedule: parse, look its Blueprints up (async), decide.
    let parsed = match st
        .workers
        .run(len, move || admission::parse(route, &bytes))
        .await
    {
        Ok(Ok(p)) => p,
        Ok(Err(out)) => return out,
        Err(e) => return internal_error(e),
    };
    let mut lookups: Vec<(BlueprintRef, Lookup)> = Vec::new();
    for r in parsed.blueprint_refs() {
        let found = lookup(st, &r).await;
        if let Lookup::NotChecked(why) = &found {
            tracing::debug!(uid = %parsed.request.uid, blueprint = %r.1, why = %why, "Blueprint not checked");
        }
        lookups.push((r, found));
    }
    st.workers
        .run(len, move || {
            admission::decide(parsed, &lookups, &Ownership::default())
        })
        .await
        .unwrap_or_else(internal_error)
}

fn internal_error(e: WorkerError) -> Outcome {
    Outcome::refused(
        500,
        Verdict::Error,
        format!("internal error: {e}"),
        e.to_string(),
    )
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
    /// The most large reviews that ran at once, and the bound (tests read them).
    pub fn review_workers(&self) -> (usize, usize) {
        (self.state.workers.peak(), self.state.workers.size())
    }

    /// The metrics registry of this server (tests read it).
    pub fn metrics(&self) -> Exported {
        self.state.exported.clone()
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
    let mut registry = Registry::default();
    let metrics = Metrics::new(&mut registry, &Route::ALL.map(Route::path));
    let state: Shared = Arc::new(AppState {
        metrics: metrics.clone(),
        exported: Exported::new(registry),
        tls_loaded: AtomicBool::new(false),
        shutting_down: AtomicBool::new(false),
        client: config.client.clone(),
        lookup_timeout: config.lookup_timeout,
        body_timeout: config.limits.body_timeout,
        workers: Workers::per_core(),
        ownership: Ownership::new(None, &config.run_namespaces),
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
        let app = probe_routes(&state);
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
