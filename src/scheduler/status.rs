//! Pure: what the schedule's status says after a reconcile, from the plan,
//! the rotation and the summary of its runs. [`apply`](super::apply) writes it.

use chrono::{DateTime, Utc};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use serde_json::{Value, json};

use super::plan::{self, Plan, RunRecord, Skip, Summary};
use super::retention::{self, Policy};
use super::verify;
use crate::model::{ActionScheduleStatus, RotationEntry, RunReference, SkippedRun};

/// Entries kept in `status.recentSkips`.
const RECENT_SKIPS: usize = 10;

pub(super) fn to_time(t: DateTime<Utc>) -> Option<Time> {
    k8s_openapi::jiff::Timestamp::from_second(t.timestamp())
        .ok()
        .map(Time)
}

pub(super) fn from_time(t: &Time) -> Option<DateTime<Utc>> {
    DateTime::from_timestamp(t.0.as_second(), t.0.subsec_nanosecond().max(0) as u32)
}

/// The `Ready` condition, keeping its transition time while it does not change.
pub(super) fn condition(
    ready: bool,
    reason: &str,
    message: String,
    generation: Option<i64>,
    old: &[Condition],
) -> Condition {
    let status = if ready { "True" } else { "False" };
    let last = old
        .iter()
        .find(|c| c.type_ == "Ready" && c.status == status && c.reason == reason)
        .map(|c| c.last_transition_time.clone());
    Condition {
        type_: "Ready".into(),
        status: status.into(),
        reason: reason.into(),
        message,
        observed_generation: generation,
        last_transition_time: last.unwrap_or_else(|| {
            to_time(Utc::now()).unwrap_or(Time(k8s_openapi::jiff::Timestamp::UNIX_EPOCH))
        }),
    }
}

/// The `Ready` reason while `suspendAfterFailures` holds scheduled runs back.
pub(super) const TOO_MANY_FAILURES: &str = "TooManyFailures";

/// `Ready` of a schedule that is not being deleted: suspended, held back by
/// `suspendAfterFailures` (`breaker`: failures and limit; not ready), scheduled, or
/// without a next tick.
pub(super) fn ready(
    suspend: bool,
    breaker: Option<(u32, u32)>,
    next: Option<DateTime<Utc>>,
    generation: Option<i64>,
    old: &[Condition],
) -> Condition {
    let (reason, msg) = if suspend {
        (
            "Suspended",
            "schedule is suspended; run-now requests still run".to_string(),
        )
    } else if let Some((failures, limit)) = breaker {
        (
            TOO_MANY_FAILURES,
            format!(
                "{failures} consecutive failed runs (suspendAfterFailures: {limit}): no scheduled run until a run completes (run-now still runs) or the limit is raised or removed"
            ),
        )
    } else {
        match next {
            Some(n) => ("Scheduled", format!("next run at {}", n.to_rfc3339())),
            None => (
                "NoNextTick",
                "the schedule has no activation in the next 5 years".to_string(),
            ),
        }
    };
    let is_ready = reason != "NoNextTick" && reason != TOO_MANY_FAILURES;
    condition(is_ready, reason, msg, generation, old)
}

/// Status as a merge patch that also clears fields that became empty.
pub(super) fn status_patch(status: &ActionScheduleStatus) -> Result<Value, serde_json::Error> {
    let mut v = serde_json::to_value(status)?;
    if let Value::Object(m) = &mut v {
        for k in [
            "observedGeneration",
            "lastScheduleTime",
            "lastSkippedTime",
            "lastSuccessfulTime",
            "nextScheduleTime",
            "active",
            "recentSkips",
            "lastRunNowToken",
            "lastVerifiedTime",
            "lastVerifiedRun",
            "lastVerificationFailureTime",
            "conditions",
        ] {
            m.entry(k).or_insert(Value::Null);
        }
        if let Some(Value::Object(r)) = m.get_mut("retention") {
            r.entry("removing").or_insert(Value::Null);
            r.entry("nextRotation").or_insert(Value::Null);
        }
    }
    Ok(json!({ "status": v }))
}

/// Count the plan's skipped and missed ticks and list them newest first.
pub(super) fn record_skips(status: &mut ActionScheduleStatus, skips: &[Skip]) {
    for skip in skips {
        if skip.reason.is_missed() {
            status.missed_runs += u64::from(skip.count);
        } else {
            status.skipped_runs += u64::from(skip.count);
        }
        status.recent_skips.insert(
            0,
            SkippedRun {
                scheduled_time: skip.scheduled_time.to_rfc3339(),
                reason: skip.reason.as_str().into(),
                count: skip.count,
            },
        );
    }
    status.recent_skips.truncate(RECENT_SKIPS);
}

/// The plan's times and the run-now token it consumed.
pub(super) fn record_plan(status: &mut ActionScheduleStatus, p: &Plan) {
    record_skips(status, &p.skips);
    if let Some(t) = p.last_schedule_time {
        status.last_schedule_time = to_time(t);
    }
    if let Some(t) = p.last_skipped_time {
        status.last_skipped_time = to_time(t);
    }
    if let Some(tok) = &p.run_now_token {
        status.last_run_now_token = Some(tok.clone());
    }
    status.next_schedule_time = p.next.and_then(to_time);
}

/// Active runs, failures and the last success.
pub(super) fn record_summary(status: &mut ActionScheduleStatus, sum: &Summary) {
    status.active = sum
        .active
        .iter()
        .map(|r| RunReference {
            name: r.name.clone(),
            scheduled_time: r.scheduled_time.to_rfc3339(),
            state: r.state.as_str().into(),
        })
        .collect();
    status.active_count = status.active.len() as u32;
    status.consecutive_failures = sum.consecutive_failures;
    status.last_failed_time = sum.last_failed.and_then(to_time);
    status.last_successful_time = sum.last_successful.and_then(to_time);
}

/// The verification summary.
pub(super) fn record_verification(status: &mut ActionScheduleStatus, v: &verify::Counted) {
    status.last_verified_time = v.last_verified.as_ref().and_then(|(t, _)| to_time(*t));
    status.last_verified_run = v.last_verified.as_ref().map(|(_, r)| r.clone());
    status.consecutive_verification_failures = v.consecutive_failures;
    status.last_verification_failure_time = v.last_failure.and_then(to_time);
}

/// What the previous status counted of verifications, for [`verify::summarize`].
pub(super) fn verification_counted(old: &ActionScheduleStatus) -> verify::Counted {
    verify::Counted {
        consecutive_failures: old.consecutive_verification_failures,
        last_failure: old
            .last_verification_failure_time
            .as_ref()
            .and_then(from_time),
        last_verified: old
            .last_verified_time
            .as_ref()
            .and_then(from_time)
            .zip(old.last_verified_run.clone()),
    }
}

/// What the previous status counted, for [`plan::summarize`].
pub(super) fn counted(old: &ActionScheduleStatus) -> plan::Counted {
    plan::Counted {
        consecutive_failures: old.consecutive_failures,
        last_failed: old.last_failed_time.as_ref().and_then(from_time),
        last_successful: old.last_successful_time.as_ref().and_then(from_time),
    }
}

/// `status.retention.nextRotation`: what the next rotation would remove once
/// the active runs and the run at `next` (if a tick comes) complete, without
/// the runs being removed already. `runs` are what is left after this
/// reconcile's rotation.
pub(super) fn next_rotation(
    runs: &[RunRecord],
    policy: &Policy,
    next: Option<DateTime<Utc>>,
    removing: &[RotationEntry],
) -> Vec<RotationEntry> {
    retention::preview_next(runs, policy, next)
        .into_iter()
        .filter(|r| !removing.iter().any(|e| e.name == r.name))
        .map(|r| RotationEntry {
            name: r.name,
            reason: r.reason,
            progress: None,
        })
        .collect()
}

/// True when the last status already reported the failed delete action of `run`.
pub(super) fn delete_failed_before(old: &ActionScheduleStatus, run: &str) -> bool {
    old.retention.removing.iter().any(|e| {
        e.name == run
            && e.progress
                .as_deref()
                .is_some_and(|p| p.starts_with("DeleteActionFailed"))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_breaker_makes_the_schedule_not_ready_and_suspend_says_suspended() {
        let next = DateTime::from_timestamp(1_000, 0);
        let c = ready(false, Some((3, 2)), next, None, &[]);
        assert_eq!(
            (c.status.as_str(), c.reason.as_str()),
            ("False", TOO_MANY_FAILURES)
        );
        assert!(c.message.contains("suspendAfterFailures: 2"), "{c:?}");
        let c = ready(true, Some((3, 2)), next, None, &[]);
        assert_eq!(
            (c.status.as_str(), c.reason.as_str()),
            ("True", "Suspended")
        );
        let c = ready(false, None, next, None, &[]);
        assert_eq!(
            (c.status.as_str(), c.reason.as_str()),
            ("True", "Scheduled")
        );
    }

    #[test]
    fn status_patch_clears_emptied_fields() {
        let p = status_patch(&ActionScheduleStatus::default()).unwrap();
        assert_eq!(p["status"]["nextScheduleTime"], Value::Null);
        assert_eq!(p["status"]["active"], Value::Null);
        assert!(
            p["status"]["retention"]
                .as_object()
                .unwrap()
                .contains_key("removing")
        );
    }
}
