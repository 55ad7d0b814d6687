//! Prometheus metrics of the scheduler (prometheus-client, no global state): [`Metrics::new`]
//! registers them (prefix `blueprint_operator_actionschedule_`) in the process's registry and
//! the reconciler counts through [`super::ctx::Ctx::metrics`].

use std::sync::Arc;
use std::sync::atomic::AtomicU64;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

/// The labels naming one ActionSchedule. A clone shares the namespace and name: a schedule
/// is in five to seven families, and a settle waiting at a tick holds its labels too.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct Labels {
    pub namespace: Arc<str>,
    pub schedule: Arc<str>,
}

/// A schedule's labels and one more (`trigger`, `reason`, `state` or `kind`).
pub type LabelsWith = (Labels, [(&'static str, &'static str); 1]);

/// Cheap to clone; all clones count into the same families.
#[derive(Clone)]
pub struct Metrics {
    /// ActionSets created, by trigger (`scheduled`, `run-now`, `delete`).
    pub runs_created: Family<LabelsWith, Counter>,
    /// Ticks not started, by reason (`Missed`, `DeadlineExceeded`, `Suspended`, `ConcurrencyForbid`,
    /// `OutsideWindow`, `TooManyFailures`).
    pub runs_skipped: Family<LabelsWith, Counter>,
    /// ActionSets removed by retention, by state.
    pub runs_rotated: Family<LabelsWith, Counter>,
    /// Seconds from the nominal tick to the ActionSet's creation.
    pub creation_lag: Histogram,
    /// Seconds the schedule's `status.nextScheduleTime` lies in the past
    /// (0 when on track): the controller is behind or not running as leader.
    pub overdue: Family<Labels, Gauge<f64, AtomicU64>>,
    pub consecutive_failures: Family<Labels, Gauge>,
    /// 1 while `suspendAfterFailures` holds the schedule's runs back, else 0.
    pub suspended_by_failures: Family<Labels, Gauge>,
    /// `status.lastSuccessfulTime` (nominal time of the newest complete run), Unix seconds.
    pub last_complete: Family<Labels, Gauge>,
    /// `status.lastVerifiedTime` (the newest passing verification), Unix seconds.
    pub last_verified: Family<Labels, Gauge>,
    /// `status.consecutiveVerificationFailures`, for schedules with `spec.verify`.
    pub verification_failures: Family<Labels, Gauge>,
    /// The longest time between two runs of the schedule (see [`super::freshness::interval`]).
    pub interval: Family<Labels, Gauge>,
    /// How often a run is verified: `verify.every` x the interval, or `verify.schedule`'s.
    pub verify_interval: Family<Labels, Gauge>,
    /// Reconcile failures by error kind.
    pub reconcile_errors: Family<LabelsWith, Counter>,
    /// 1 while this replica holds the controller Lease and runs the scheduler.
    pub leader: Gauge,
    /// Requests the API server refused as overloaded (429 or busy) and that were
    /// sent again after a pause, by `request` (`create` or `other`).
    pub throttled: Family<[(&'static str, &'static str); 1], Counter>,
}

/// Labels identifying one ActionSchedule.
pub fn schedule_labels(namespace: &str, name: &str) -> Labels {
    Labels {
        namespace: namespace.into(),
        schedule: name.into(),
    }
}

pub fn with(labels: Labels, key: &'static str, value: &'static str) -> LabelsWith {
    (labels, [(key, value)])
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Metrics")
    }
}

impl Metrics {
    /// Families not registered anywhere (tests, benches): counted, never exported.
    pub fn unregistered() -> Self {
        let throttled = Family::<[(&'static str, &'static str); 1], Counter>::default();
        // Exported at 0 from the start: an alert or a rate sees the family before a 429.
        for request in ["create", "other"] {
            let _ = throttled.get_or_create(&[("request", request)]);
        }
        Metrics {
            runs_created: Family::default(),
            runs_skipped: Family::default(),
            runs_rotated: Family::default(),
            creation_lag: Histogram::new(exponential_buckets(0.05, 2.0, 14)),
            overdue: Family::default(),
            consecutive_failures: Family::default(),
            suspended_by_failures: Family::default(),
            last_complete: Family::default(),
            last_verified: Family::default(),
            verification_failures: Family::default(),
            interval: Family::default(),
            verify_interval: Family::default(),
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
            "last_complete_timestamp_seconds",
            "Nominal time of the schedule's newest complete run (status.lastSuccessfulTime)",
            m.last_complete.clone(),
        );
        r.register(
            "last_verified_timestamp_seconds",
            "Completion time of the newest passing verification of the schedule's runs (status.lastVerifiedTime)",
            m.last_verified.clone(),
        );
        r.register(
            "verification_failures",
            "Verification runs failed since the newest one that passed (schedules with spec.verify)",
            m.verification_failures.clone(),
        );
        r.register(
            "interval_seconds",
            "Longest time between two runs of the schedule over its next two weeks of ticks (absent while suspended)",
            m.interval.clone(),
        );
        r.register(
            "verify_interval_seconds",
            "Time between two verifications: verify.every times the interval, or verify.schedule's interval",
            m.verify_interval.clone(),
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
        let s = schedule_labels("ns", "s");
        m.last_complete.get_or_create(&s).set(1_767_751_200);
        m.last_verified.get_or_create(&s).set(1_767_668_400);
        m.verification_failures.get_or_create(&s).set(2);
        m.interval.get_or_create(&s).set(86_400);
        m.verify_interval.get_or_create(&s).set(604_800);
        let mut out = String::new();
        prometheus_client::encoding::text::encode(&mut out, &reg).unwrap();
        for line in [
            "blueprint_operator_actionschedule_last_complete_timestamp_seconds{namespace=\"ns\",schedule=\"s\"} 1767751200",
            "blueprint_operator_actionschedule_last_verified_timestamp_seconds{namespace=\"ns\",schedule=\"s\"} 1767668400",
            "blueprint_operator_actionschedule_verification_failures{namespace=\"ns\",schedule=\"s\"} 2",
            "blueprint_operator_actionschedule_interval_seconds{namespace=\"ns\",schedule=\"s\"} 86400",
            "blueprint_operator_actionschedule_verify_interval_seconds{namespace=\"ns\",schedule=\"s\"} 604800",
        ] {
            assert!(out.lines().any(|l| l == line), "{line} not in {out}");
        }
        assert!(out.contains("blueprint_operator_actionschedule_runs_created_total{namespace=\"ns\",schedule=\"s\",trigger=\"scheduled\"}"), "{out}");
        assert!(
            out.contains("blueprint_operator_actionschedule_overdue_seconds{namespace=\"ns\",schedule=\"s\"} 1.5"),
            "{out}"
        );
    }
}
