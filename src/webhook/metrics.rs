//! Prometheus metrics of the webhook (prometheus-client, no global state).
//!
//! * `blueprint_operator_webhook_requests_total{route, verdict}`
//! * `blueprint_operator_webhook_request_duration_seconds{route, verdict}` (histogram)
//! * `blueprint_operator_webhook_tls_reloads_total{result}`
//! * `blueprint_operator_webhook_build_info{version}`: 1 while the process runs
//! * `blueprint_operator_webhook_connections_closed_total{reason}`: connections the server
//!   refused or cut: `limit` (over `--max-connections`), `header`, `idle` (timeouts)
//!
//! `verdict` is one of [`Verdict::label`]: allowed, patched, denied, bad_request, too_large,
//! error. Every route × verdict pair is pre-created so zeros are exported.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

/// The outcome of one webhook call, as counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Allowed without a patch.
    Allowed,
    /// Allowed with a JSON patch (mutating route only).
    Patched,
    /// `allowed: false`.
    Denied,
    /// HTTP 400: malformed body or a review this route does not handle.
    BadRequest,
    /// HTTP 413: body over the limit.
    TooLarge,
    /// HTTP 500: our own failure (e.g. a patch that does not serialize).
    Error,
}

impl Verdict {
    pub const ALL: [Verdict; 6] = [
        Verdict::Allowed,
        Verdict::Patched,
        Verdict::Denied,
        Verdict::BadRequest,
        Verdict::TooLarge,
        Verdict::Error,
    ];

    pub fn label(self) -> &'static str {
        match self {
            Verdict::Allowed => "allowed",
            Verdict::Patched => "patched",
            Verdict::Denied => "denied",
            Verdict::BadRequest => "bad_request",
            Verdict::TooLarge => "too_large",
            Verdict::Error => "error",
        }
    }
}

/// Static strings: counting a request allocates nothing.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RequestLabels {
    route: &'static str,
    verdict: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ReloadLabels {
    result: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct CloseLabels {
    reason: String,
}

/// Cheap to clone; all clones count into the same families.
#[derive(Clone)]
pub struct Metrics {
    requests: Family<RequestLabels, Counter>,
    duration: Family<RequestLabels, Histogram, fn() -> Histogram>,
    tls_reloads: Family<ReloadLabels, Counter>,
    connections_closed: Family<CloseLabels, Counter>,
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Metrics")
    }
}

impl Metrics {
    /// Registers the families (prefix `blueprint_operator_webhook_`) in `registry`, with every
    /// `route` × verdict pre-created.
    pub fn new(registry: &mut Registry, routes: &[&'static str]) -> Self {
        let registry = registry.sub_registry_with_prefix("blueprint_operator_webhook");
        let requests = Family::<RequestLabels, Counter>::default();
        // 0.25 ms .. ~4 s
        let duration: Family<_, _, fn() -> Histogram> =
            Family::new_with_constructor(|| Histogram::new(exponential_buckets(0.00025, 2.0, 15)));
        let tls_reloads = Family::<ReloadLabels, Counter>::default();
        let connections_closed = Family::<CloseLabels, Counter>::default();
        registry.register(
            "requests",
            "Admission requests handled, by route and verdict",
            requests.clone(),
        );
        registry.register(
            "request_duration_seconds",
            "Time to answer an admission request, by route and verdict",
            duration.clone(),
        );
        registry.register(
            "tls_reloads",
            "Reloads of the serving certificate, by result",
            tls_reloads.clone(),
        );
        registry.register(
            "connections_closed",
            "Connections refused (reason=limit) or closed by a timeout (header, idle)",
            connections_closed.clone(),
        );
        crate::metrics::register_build_info(
            registry,
            "build_info",
            "1 while the webhook runs, labelled with its version",
        );
        for reason in ["limit", "header", "idle"] {
            let _ = connections_closed.get_or_create(&CloseLabels {
                reason: reason.into(),
            });
        }
        for &route in routes {
            for verdict in Verdict::ALL {
                let l = RequestLabels {
                    route,
                    verdict: verdict.label(),
                };
                let _ = requests.get_or_create(&l);
                let _ = duration.get_or_create(&l);
            }
        }
        for result in ["success", "failure"] {
            let _ = tls_reloads.get_or_create(&ReloadLabels {
                result: result.into(),
            });
        }
        Self {
            requests,
            duration,
            tls_reloads,
            connections_closed,
        }
    }

    /// A connection refused or cut by [`super::limits`]: `limit`, `header` or `idle`.
    pub fn connection_closed(&self, reason: &str) {
        self.connections_closed
            .get_or_create(&CloseLabels {
                reason: reason.to_string(),
            })
            .inc();
    }

    pub fn observe(&self, route: &'static str, verdict: Verdict, seconds: f64) {
        let l = RequestLabels {
            route,
            verdict: verdict.label(),
        };
        self.requests.get_or_create(&l).inc();
        self.duration.get_or_create(&l).observe(seconds);
    }

    pub fn tls_reload(&self, result: &str) {
        self.tls_reloads
            .get_or_create(&ReloadLabels {
                result: result.to_string(),
            })
            .inc();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_by_route_and_verdict_with_zeros() {
        let mut registry = Registry::default();
        let m = Metrics::new(&mut registry, &["/validate/blueprint"]);
        m.observe("/validate/blueprint", Verdict::Denied, 0.001);
        m.observe("/validate/blueprint", Verdict::Denied, 0.002);
        let text = crate::metrics::Exported::new(registry).encode();
        assert!(
            text.contains(
                r#"blueprint_operator_webhook_requests_total{route="/validate/blueprint",verdict="denied"} 2"#
            ),
            "{text}"
        );
        assert!(
            text.contains(
                r#"blueprint_operator_webhook_requests_total{route="/validate/blueprint",verdict="allowed"} 0"#
            ),
            "{text}"
        );
        assert!(
            text.contains("blueprint_operator_webhook_request_duration_seconds_bucket"),
            "{text}"
        );
        assert!(
            text.contains("blueprint_operator_webhook_build_info{version="),
            "{text}"
        );
    }
}
