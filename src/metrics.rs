//! Metrics and health, one way for every long-running subcommand: each process has one
//! prometheus-client [`Registry`]; each component registers its families into it with its
//! `Metrics::new(&mut Registry, ...)` (no global state) and counts through the returned handle;
//! [`routes`] serves the registry on `/metrics` beside the `/healthz` and `/readyz` probes.

use std::sync::Arc;

use axum::http::{StatusCode, header};
use axum::response::IntoResponse as _;
use axum::routing::get;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

/// The content type of [`Exported::encode`].
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// A process's registry once every component registered into it; cheap to clone.
#[derive(Clone)]
pub struct Exported(Arc<Registry>);

impl std::fmt::Debug for Exported {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Exported")
    }
}

impl Exported {
    pub fn new(registry: Registry) -> Self {
        Exported(Arc::new(registry))
    }

    /// OpenMetrics text; served with [`CONTENT_TYPE`].
    pub fn encode(&self) -> String {
        let mut out = String::new();
        // Writing into a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut out, &self.0);
        out
    }
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct VersionLabels {
    version: String,
}

/// Registers `<name>{version}` = 1 while the process runs (alerts use its absence).
pub fn register_build_info(registry: &mut Registry, name: &str, help: &str) {
    let build = Family::<VersionLabels, Gauge>::default();
    build
        .get_or_create(&VersionLabels {
            version: env!("CARGO_PKG_VERSION").into(),
        })
        .set(1);
    registry.register(name, help, build);
}

/// Why a process is not ready (`Err`), asked on every `/readyz`.
pub type Readiness = Arc<dyn Fn() -> Result<(), &'static str> + Send + Sync>;

/// `/healthz` (the process answers), `/readyz` (200, or 503 "not ready: <why>") and `/metrics`.
pub fn routes(metrics: Exported, ready: Readiness) -> axum::Router {
    axum::Router::new()
        .route("/healthz", get(|| async { "ok" }))
        .route(
            "/readyz",
            get(move || {
                let ready = ready.clone();
                async move {
                    match ready() {
                        Ok(()) => (StatusCode::OK, "ok".to_string()).into_response(),
                        Err(why) => (StatusCode::SERVICE_UNAVAILABLE, format!("not ready: {why}"))
                            .into_response(),
                    }
                }
            }),
        )
        .route(
            "/metrics",
            get(move || {
                let metrics = metrics.clone();
                async move { ([(header::CONTENT_TYPE, CONTENT_TYPE)], metrics.encode()) }
            }),
        )
}
