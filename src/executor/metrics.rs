//! Prometheus metrics of the executor (prometheus-client, no global state).
//!
//! * `blueprint_operator_actionsets_total{outcome}`: ActionSets that ended
//!   (`complete`, `failed`);
//! * `blueprint_operator_phases_total{kind, outcome}`: phases that ended,
//!   `kind` = `phase` | `deferPhase`, `outcome` = `complete` | `failed`;
//! * `blueprint_operator_phase_duration_seconds{kind, outcome}` (histogram);
//! * `kanister_action_set_resolutions_total{resolution}`: Kanister's own
//!   metric (`success`, `failure`), for dashboards written for Kanister;
//! * `blueprint_operator_controller_build_info{version}`: 1 while the process
//!   runs (alerts use its absence: no controller scraped).
//!
//! Every label combination is pre-created so zeros are exported.

use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct OutcomeLabels {
    outcome: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct PhaseLabels {
    kind: String,
    outcome: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ResolutionLabels {
    resolution: String,
}

/// The executor's metrics; cheap to clone (shared counters).
#[derive(Clone)]
pub struct Metrics {
    actionsets: Family<OutcomeLabels, Counter>,
    phases: Family<PhaseLabels, Counter>,
    durations: Family<PhaseLabels, Histogram, fn() -> Histogram>,
    resolutions: Family<ResolutionLabels, Counter>,
}

const OUTCOMES: [&str; 2] = ["complete", "failed"];
const KINDS: [&str; 2] = ["phase", "deferPhase"];

impl Metrics {
    /// Creates the metrics and registers them in `registry`.
    pub fn new(registry: &mut Registry) -> Self {
        let m = Metrics {
            actionsets: Family::default(),
            phases: Family::default(),
            // 10 ms .. ~2.9 h
            durations: Family::new_with_constructor(|| {
                Histogram::new(exponential_buckets(0.01, 4.0, 12))
            }),
            resolutions: Family::default(),
        };
        registry.register(
            "blueprint_operator_actionsets",
            "ActionSets that ended, by outcome",
            m.actionsets.clone(),
        );
        registry.register(
            "blueprint_operator_phases",
            "Phases and deferPhases that ended, by kind and outcome",
            m.phases.clone(),
        );
        registry.register(
            "blueprint_operator_phase_duration_seconds",
            "Execution time of phases and deferPhases",
            m.durations.clone(),
        );
        registry.register(
            "kanister_action_set_resolutions",
            "Total number of action set resolutions",
            m.resolutions.clone(),
        );
        crate::metrics::register_build_info(
            registry,
            "blueprint_operator_controller_build_info",
            "1 while the controller runs, labelled with its version",
        );
        for o in OUTCOMES {
            let _ = m
                .actionsets
                .get_or_create(&OutcomeLabels { outcome: o.into() });
            for k in KINDS {
                let l = PhaseLabels {
                    kind: k.into(),
                    outcome: o.into(),
                };
                let _ = m.phases.get_or_create(&l);
                let _ = m.durations.get_or_create(&l);
            }
        }
        for r in ["success", "failure"] {
            let _ = m.resolutions.get_or_create(&ResolutionLabels {
                resolution: r.into(),
            });
        }
        m
    }

    /// A phase (`defer` = deferPhase) ended after `took`.
    pub fn phase_ended(&self, defer: bool, ok: bool, took: Duration) {
        let l = PhaseLabels {
            kind: if defer { "deferPhase" } else { "phase" }.into(),
            outcome: if ok { "complete" } else { "failed" }.into(),
        };
        self.phases.get_or_create(&l).inc();
        self.durations.get_or_create(&l).observe(took.as_secs_f64());
    }

    /// An ActionSet reached a terminal state.
    pub fn actionset_ended(&self, ok: bool) {
        let outcome = if ok { "complete" } else { "failed" };
        self.actionsets
            .get_or_create(&OutcomeLabels {
                outcome: outcome.into(),
            })
            .inc();
        let resolution = if ok { "success" } else { "failure" };
        self.resolutions
            .get_or_create(&ResolutionLabels {
                resolution: resolution.into(),
            })
            .inc();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exports_zeros_and_counts() {
        let mut reg = Registry::default();
        let m = Metrics::new(&mut reg);
        m.phase_ended(true, false, Duration::from_millis(30));
        m.actionset_ended(false);
        let mut out = String::new();
        prometheus_client::encoding::text::encode(&mut out, &reg).unwrap();
        assert!(
            out.contains("blueprint_operator_actionsets_total{outcome=\"complete\"} 0"),
            "{out}"
        );
        assert!(
            out.contains("blueprint_operator_actionsets_total{outcome=\"failed\"} 1"),
            "{out}"
        );
        assert!(
            out.contains(
                "blueprint_operator_phases_total{kind=\"deferPhase\",outcome=\"failed\"} 1"
            ),
            "{out}"
        );
        assert!(out.contains("kanister_action_set_resolutions_total{resolution=\"failure\"} 1"));
        assert!(out.contains(&format!(
            "blueprint_operator_controller_build_info{{version=\"{}\"}} 1",
            env!("CARGO_PKG_VERSION")
        )));
        assert!(out.contains(
            "blueprint_operator_phase_duration_seconds_count{kind=\"deferPhase\",outcome=\"failed\"} 1"
        ));
    }
}
