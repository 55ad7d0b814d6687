//! Prometheus metrics of the scheduler (prometheus-client, no global state): [`Metrics::new`]
//! registers them (prefix `blueprint_operator_actionschedule_`) in the process's registry and
//! the reconciler counts through [`super::ctx::Ctx::metrics`].

use std::sync::atomic::AtomicU64;

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

pub type Labels = Vec<(String, String)>;

/// Cheap to clone; all clones count into the same families.
#[derive(Clone)]
pub struct Metrics {
    /// ActionSets created, by trigger (`scheduled`, `run-now`, `delete`).
    pub runs_created: Family<Labels, Counter>,
    /// Ticks not started, by reason (`Missed`, `DeadlineExceeded`, `Suspended`, `ConcurrencyForbid`,
    /// `OutsideWindow`, `TooManyFailures`).
    pub runs_skipped: Family<Labels, Counter>,
    /// ActionSets removed by retention, by state.
    pub runs_rotated: Family<Labels, Counter>,
    /// Seconds from the nominal tick to the ActionSet's creation.
    pub creation_lag: Histogram,
    /// Seconds the schedule's `status.nextScheduleTime` lies in the past
    /// (0 when on track): the controller is behind or not running as leader.
    pub overdue: Family<Labels, Gauge<f64, AtomicU64>>,
    pub consecutive_failures: Family<Labels, Gauge>,
    /// 1 while `suspendAfterFailures` holds the schedule's runs back, else 0.
    pub suspended_by_failures: Family<Labels, Gauge>,
    /// Reconcile failures by error kind.
    pub reconcile_errors: Family<Labels, Counter>,
    /// 1 while this replica holds the controller Lease and runs the scheduler.
    pub leader: Gauge,
    /// Requests the API server refused as overloaded (429 or busy) and that were
    /// sent again after a pause, by `request` (`create` or `other`).
    pub throttled: Family<Labels, Counter>,
}

/// Labels identifying one ActionSchedule.
pub fn schedule_labels(namespace: &str, name: &str) -> Labels {
    vec![
        ("namespace".into(), namespace.into()),
        ("schedule".into(), name.into()),
    ]
}

pub fn with(mut labels: Labels, key: &str, value: &str) -> Labels {
    labels.push((key.into(), value.into()));
    labels
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Metrics")
    }
}

impl Metrics {
    /// Families not registered anywhere (tests, benches): counted, never exported.
    pub fn unregistered() -> Self {
        let throttled = Family::<Labels, Counter>::default();
        // Exported at 0 from the start: an alert or a rate sees the family before a 429.
        for request in ["create", "other"] {
            let _ = throttled.get_or_create(&vec![("request".into(), request.into())]);
        }
        Metrics {
            runs_created: Family::default(),
            runs_skipped: Family::default(),
            runs_rotated: Family::default(),
            creation_lag: Histogram::new(exponential_buckets(0.05, 2.0, 14)),
            overdue: Family::default(),
            consecutive_failures: Family::default(),
            suspended_by_failures: Family::default(),
            reconcile_errors: Family::default(),
            leader: Gauge::default(),
            throttled,
        }
    }

    /// Registers the scheduler's families in `registry`.
    pub fn new(registry: &mut Registry) -> Self {
        let m = Self::unregistered();
        let r = registry.sub_registry_with_prefix("blueprint_operator_actionschedule");
        r.register(
            "runs_created",
            "ActionSets created by ActionSchedules",
            m.runs_created.clone(),
        );
        r.register(
            "runs_skipped",
            "Scheduled ticks not started, by reason",
            m.runs_skipped.clone(),
        );
        r.register(
            "runs_rotated",
            "ActionSets removed by retention",
            m.runs_rotated.clone(),
        );
        r.register(
            "creation_lag_seconds",
            "Seconds from a tick's nominal time to the creation of its ActionSet",
            m.creation_lag.clone(),
        );
        r.register(
            "overdue_seconds",
            "Seconds status.nextScheduleTime lies in the past (0 = on track)",
            m.overdue.clone(),
        );
        r.register(
            "consecutive_failures",
            "Failed runs since the newest complete one",
            m.consecutive_failures.clone(),
        );
        r.register(
            "suspended_by_failures",
            "1 while suspendAfterFailures holds the schedule's scheduled runs back",
            m.suspended_by_failures.clone(),
        );
        r.register(
            "reconcile_errors",
            "Failed reconciles by error kind",
            m.reconcile_errors.clone(),
        );
        r.register(
            "leader",
            "1 while this replica holds the controller Lease and runs the scheduler",
            m.leader.clone(),
        );
        r.register(
            "api_throttled",
            "Requests the API server refused as overloaded and that were sent again after a pause",
            m.throttled.clone(),
        );
        m
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registers_and_encodes() {
        let mut reg = Registry::default();
        let m = Metrics::new(&mut reg);
        m.runs_created
            .get_or_create(&with(schedule_labels("ns", "s"), "trigger", "scheduled"))
            .inc();
        m.overdue
            .get_or_create(&schedule_labels("ns", "s"))
            .set(1.5);
        let mut out = String::new();
        prometheus_client::encoding::text::encode(&mut out, &reg).unwrap();
        assert!(out.contains("blueprint_operator_actionschedule_runs_created_total{namespace=\"ns\",schedule=\"s\",trigger=\"scheduled\"}"), "{out}");
        assert!(
            out.contains("blueprint_operator_actionschedule_overdue_seconds{namespace=\"ns\",schedule=\"s\"} 1.5"),
            "{out}"
        );
    }
}
