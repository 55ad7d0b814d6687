//! Pure restore verification (`spec.verify`): which backup run to verify, what each
//! verification has reached, which outcomes to record, the status summary, and the
//! verification ActionSet itself (the controller and `ctl verify` build it here).
//!
//! A verification is one ActionSet restoring the backup run's output artifacts into the
//! scratch object (`verify.action`, named [`verify_name`]), then, with `checkAction`, a second
//! one on the same object ([`check_name`]): the executor runs the actions of one ActionSet in
//! parallel, so the check cannot be a second action of the first. Both names derive from the
//! backup run's, so a restarted controller finds them instead of starting another. One
//! verification runs at a time per schedule: they all restore into the same object.
//!
//! The outcome is recorded on the backup run (label [`LABEL_VERIFIED`], annotations
//! [`ANNOTATION_VERIFIED_TIME`], [`ANNOTATION_VERIFIED_BY`]); the status counts from those
//! labels, so an outcome recorded just before a restart is still counted once.

use chrono::{DateTime, Utc};
use kube::ResourceExt;
use kube::core::ObjectMeta;

use super::identity::new_action_set;
use super::plan::{NewRun, RunRecord, RunState, Trigger, fit_name};
use crate::model::child::{NotComplete, Overrides, child_spec};
use crate::model::{
    ANNOTATION_VERIFIED_BY, ANNOTATION_VERIFIED_TIME, ActionSchedule, ActionSet, LABEL_VERIFIED,
    LABEL_VERIFY_FOR, Verify,
};

/// The recorded outcome of a backup run's verification.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verified {
    pub passed: bool,
    /// When it was recorded.
    pub at: DateTime<Utc>,
    /// The verification ActionSet that decided it.
    pub by: String,
}

impl Verified {
    /// The outcome a backup run's labels and annotations record (`None`: not verified yet).
    pub fn from_meta(meta: &ObjectMeta) -> Option<Verified> {
        let passed = match meta.labels.as_ref()?.get(LABEL_VERIFIED)?.as_str() {
            "true" => true,
            "false" => false,
            _ => return None,
        };
        let annotations = meta.annotations.as_ref();
        let get = |k: &str| annotations.and_then(|a| a.get(k));
        Some(Verified {
            passed,
            at: get(ANNOTATION_VERIFIED_TIME)
                .and_then(|t| DateTime::parse_from_rfc3339(t).ok())
                .map(|t| t.to_utc())
                .unwrap_or_default(),
            by: get(ANNOTATION_VERIFIED_BY).cloned().unwrap_or_default(),
        })
    }
}

/// Name of the ActionSet that restores `backup` for its verification.
pub fn verify_name(backup: &str) -> String {
    fit_name(backup, "verify")
}

/// Name of the ActionSet that runs the check action after that restore.
pub fn check_name(backup: &str) -> String {
    fit_name(backup, "verify-check")
}

/// How far the verification of one backup run got, from its ActionSets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Progress {
    NotStarted,
    /// The restore or the check is pending or running.
    Running(String),
    /// The restore completed and the check action is still to be created.
    NeedsCheck,
    Passed(String),
    /// The ActionSet that failed.
    Failed(String),
}

/// The verification of `backup` as its ActionSets in `runs` show it; `check`: the schedule
/// has a check action.
pub fn progress(backup: &str, runs: &[RunRecord], check: bool) -> Progress {
    let find = |t: Trigger| {
        runs.iter()
            .find(|r| r.ours && r.trigger == t && r.verify_for.as_deref() == Some(backup))
    };
    let step = |r: &RunRecord| {
        if r.is_active() {
            Some(Progress::Running(r.name.clone()))
        } else if r.state == RunState::Complete && r.defer_state != Some(RunState::Failed) {
            None
        } else {
            Some(Progress::Failed(r.name.clone()))
        }
    };
    let Some(restore) = find(Trigger::Verify) else {
        return Progress::NotStarted;
    };
    if let Some(p) = step(restore) {
        return p;
    }
    let checked = find(Trigger::VerifyCheck);
    match checked {
        Some(c) => step(c).unwrap_or_else(|| Progress::Passed(c.name.clone())),
        None if check => Progress::NeedsCheck,
        None => Progress::Passed(restore.name.clone()),
    }
}

/// When verifications start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cadence {
    /// The newest complete run once N complete runs came after the last one verified.
    Every(u32),
    /// At a tick of `verify.schedule`: `Some(tick)` when one is due.
    Tick(Option<DateTime<Utc>>),
}

/// An outcome to record on a backup run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    pub run: String,
    pub passed: bool,
    pub by: String,
}

/// What to do now.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct VerifyPlan {
    /// The backup run to start verifying, and the time its verification is scheduled for
    /// (the tick of `verify.schedule`, or now).
    pub start: Option<(String, DateTime<Utc>)>,
    /// Backup runs whose restore completed: create their check.
    pub check: Vec<String>,
    /// Ended verifications whose outcome is not on their backup run yet.
    pub record: Vec<Outcome>,
}

/// Decide; `check`: the schedule has a check action.
pub fn plan(runs: &[RunRecord], cadence: Cadence, check: bool, now: DateTime<Utc>) -> VerifyPlan {
    let mut p = VerifyPlan::default();
    let mut backups: Vec<&RunRecord> = runs
        .iter()
        .filter(|r| r.is_backup() && r.state == RunState::Complete && !r.is_active())
        .collect();
    backups.sort_by(|a, b| (a.scheduled_time, &a.name).cmp(&(b.scheduled_time, &b.name)));
    let mut busy = runs
        .iter()
        .any(|r| r.ours && r.trigger.is_verification() && r.is_active());
    let mut verified_up_to = None;
    let mut candidates = Vec::new();
    for b in &backups {
        let progress = progress(&b.name, runs, check);
        match &progress {
            Progress::NeedsCheck => {
                p.check.push(b.name.clone());
                busy = true;
            }
            Progress::Passed(by) | Progress::Failed(by) if b.verified.is_none() => {
                p.record.push(Outcome {
                    run: b.name.clone(),
                    passed: matches!(progress, Progress::Passed(_)),
                    by: by.clone(),
                });
            }
            _ => {}
        }
        if b.verified.is_some() || progress != Progress::NotStarted {
            verified_up_to = Some(b.scheduled_time);
            candidates.clear();
        } else {
            candidates.push(*b);
        }
    }
    debug_assert!(
        candidates
            .iter()
            .all(|c| Some(c.scheduled_time) >= verified_up_to)
    );
    let newest = candidates.last();
    p.start = match (busy, cadence, newest) {
        (false, Cadence::Every(n), Some(b)) if candidates.len() >= n.max(1) as usize => {
            Some((b.name.clone(), now))
        }
        (false, Cadence::Tick(Some(tick)), Some(b)) => Some((b.name.clone(), tick)),
        _ => None,
    };
    p
}

/// The latest verification tick after `since` and up to `now`, for [`Cadence::Tick`].
pub fn due_tick(
    schedule: &super::cron::Schedule,
    since: DateTime<Utc>,
    now: DateTime<Utc>,
) -> Option<DateTime<Utc>> {
    schedule.last_between(since, now, 1).0
}

/// The first verification tick after `now`, when the schedule is to wake for it. An `@every`
/// schedule ticks every interval from `since`, not from `now`: counted from `now`, each
/// reconcile between two ticks would push the wake-up up to one interval past the tick.
pub fn next_tick(
    schedule: &super::cron::Schedule,
    since: DateTime<Utc>,
    now: DateTime<Utc>,
) -> Option<DateTime<Utc>> {
    schedule.next_after(due_tick(schedule, since, now).unwrap_or(since))
}

/// Since when verification ticks count: the newest verification's scheduled time, else
/// `created` (the schedule's creation).
pub fn ticks_since(runs: &[RunRecord], created: DateTime<Utc>) -> DateTime<Utc> {
    runs.iter()
        .filter(|r| r.ours && r.trigger == Trigger::Verify)
        .map(|r| r.scheduled_time)
        .max()
        .unwrap_or(created)
        .max(created)
}

/// When to record the next outcome: `now`, but after every outcome recorded before (on the
/// runs, or counted in the status), so that outcomes are ordered although their times are
/// whole seconds (one verification runs at a time, so outcomes are never concurrent).
pub fn record_time(runs: &[RunRecord], counted: &Counted, now: DateTime<Utc>) -> DateTime<Utc> {
    let latest = runs
        .iter()
        .filter_map(|r| r.verified.as_ref().map(|v| v.at))
        .chain(counted.last_failure)
        .chain(counted.last_verified.as_ref().map(|(t, _)| *t))
        .max();
    match latest {
        Some(t) if t >= now => t + chrono::Duration::seconds(1),
        _ => now,
    }
}

/// What the previous status counted (see [`summarize`]).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Counted {
    pub consecutive_failures: u32,
    pub last_failure: Option<DateTime<Utc>>,
    pub last_verified: Option<(DateTime<Utc>, String)>,
}

/// The status' verification summary: the newest pass, and failures since it. Outcomes of runs
/// rotated away are carried in `counted`; failures are counted on from it, never recounted.
pub fn summarize(runs: &[RunRecord], counted: &Counted) -> Counted {
    let outcomes: Vec<(&RunRecord, &Verified)> = runs
        .iter()
        .filter(|r| r.is_backup())
        .filter_map(|r| r.verified.as_ref().map(|v| (r, v)))
        .collect();
    let last_verified = outcomes
        .iter()
        .filter(|(_, v)| v.passed)
        .map(|(r, v)| (v.at, r.name.clone()))
        .chain(counted.last_verified.clone())
        .max();
    let passed_at = last_verified.as_ref().map(|(t, _)| *t);
    let carried = match (counted.last_failure, passed_at) {
        (Some(failed), Some(ok)) if ok > failed => 0,
        (Some(_), _) => counted.consecutive_failures,
        (None, _) => 0,
    };
    let since = passed_at.max(counted.last_failure);
    let mut new_failures: Vec<DateTime<Utc>> = outcomes
        .iter()
        .filter(|(_, v)| !v.passed && Some(v.at) > since)
        .map(|(_, v)| v.at)
        .collect();
    new_failures.sort();
    Counted {
        consecutive_failures: carried + new_failures.len() as u32,
        last_failure: new_failures.last().copied().or(counted.last_failure),
        last_verified,
    }
}

/// The verification ActionSet of `backup`, a complete run of `s`: its restore (`check`
/// false) or its check. Kanister's child of the run (profile, options, Secrets, ConfigMaps and
/// output artifacts as `ctl create --from` takes them), with `verify.action` (or
/// `checkAction`) of `verify.blueprint` (default the run's) on `verify.object`; labelled a
/// run of `s` for `backup`, scheduled at `at`.
pub fn verification(
    s: &ActionSchedule,
    verify: &Verify,
    backup: &ActionSet,
    check: bool,
    at: DateTime<Utc>,
) -> Result<ActionSet, NotComplete> {
    let run = backup.name_any();
    let action = match (check, &verify.check_action) {
        (true, Some(c)) => c.clone(),
        _ => verify.action.clone(),
    };
    let overrides = Overrides {
        action: Some(action),
        blueprint: verify.blueprint.clone().filter(|b| !b.is_empty()),
        objects: vec![verify.object.clone()],
        ..Overrides::default()
    };
    let spec = child_spec(backup, &overrides)?;
    let new = NewRun {
        name: if check {
            check_name(&run)
        } else {
            verify_name(&run)
        },
        scheduled_time: at,
        trigger: if check {
            Trigger::VerifyCheck
        } else {
            Trigger::Verify
        },
    };
    let mut a = new_action_set(s, &new, spec, None);
    a.labels_mut()
        .insert(LABEL_VERIFY_FOR.to_string(), run.clone());
    Ok(a)
}

/// The labels and annotations that record `outcome` on its backup run, as a merge patch.
pub fn record_patch(outcome: &Outcome, at: DateTime<Utc>) -> serde_json::Value {
    serde_json::json!({"metadata": {
        "labels": {LABEL_VERIFIED: outcome.passed.to_string()},
        "annotations": {
            ANNOTATION_VERIFIED_TIME: at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
            ANNOTATION_VERIFIED_BY: outcome.by,
        },
    }})
}

/// The merge patch that forgets a recorded outcome (`ctl verify` verifies again).
pub fn clear_patch() -> serde_json::Value {
    serde_json::json!({"metadata": {
        "labels": {LABEL_VERIFIED: null},
        "annotations": {ANNOTATION_VERIFIED_TIME: null, ANNOTATION_VERIFIED_BY: null},
    }})
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scheduler::plan::fixtures::{run, t};

    fn verification_of(backup: &str, trigger: Trigger, state: RunState) -> RunRecord {
        let mut r = run(
            &format!("{backup}-{}", trigger.as_str()),
            "2026-06-02T00:00:00Z",
            state,
        );
        r.trigger = trigger;
        r.verify_for = Some(backup.into());
        r
    }

    fn passed(mut r: RunRecord, passed: bool, at: &str) -> RunRecord {
        r.verified = Some(Verified {
            passed,
            at: t(at),
            by: format!("{}-verify", r.name),
        });
        r
    }

    fn hourly(states: &[RunState]) -> Vec<RunRecord> {
        states
            .iter()
            .enumerate()
            .map(|(i, s)| run(&format!("b{i}"), &format!("2026-06-01T{i:02}:00:00Z"), *s))
            .collect()
    }

    const NOW: &str = "2026-06-01T12:00:00Z";

    #[test]
    fn every_nth_complete_run_is_verified_the_newest_of_them() {
        use RunState::*;
        let runs = hourly(&[Complete, Failed, Complete]);
        // Every 1: the newest complete one; every 2: both complete ones counted, the newest.
        for n in [1, 2] {
            let p = plan(&runs, Cadence::Every(n), false, t(NOW));
            assert_eq!(p.start, Some(("b2".to_string(), t(NOW))), "every {n}");
        }
        // Every 3: not yet (failed runs do not count).
        assert_eq!(plan(&runs, Cadence::Every(3), false, t(NOW)).start, None);
        // b0 verified: only b2 came after it.
        let mut runs = runs;
        runs[0] = passed(runs[0].clone(), true, NOW);
        assert_eq!(plan(&runs, Cadence::Every(2), false, t(NOW)).start, None);
        assert!(
            plan(&runs, Cadence::Every(1), false, t(NOW))
                .start
                .is_some()
        );
        // A running backup is not verified; nor a complete one whose deferPhase runs.
        let mut runs = hourly(&[Running, Complete]);
        runs[1].defer_state = Some(Running);
        assert_eq!(plan(&runs, Cadence::Every(1), false, t(NOW)).start, None);
    }

    #[test]
    fn never_goes_back_and_one_verification_at_a_time() {
        use RunState::*;
        let mut runs = hourly(&[Complete, Complete, Complete]);
        // b1 is being verified: nothing starts, although b2 is complete and new.
        runs.push(verification_of("b1", Trigger::Verify, Running));
        assert_eq!(plan(&runs, Cadence::Every(1), false, t(NOW)).start, None);
        // Once it ended, b2 (newer) is next, never b0 (older than a verified one).
        runs.last_mut().unwrap().state = Complete;
        let p = plan(&runs, Cadence::Every(1), false, t(NOW));
        assert_eq!(p.start.map(|s| s.0).as_deref(), Some("b2"));
        assert_eq!(
            p.record,
            vec![Outcome {
                run: "b1".into(),
                passed: true,
                by: "b1-verify".into()
            }]
        );
    }

    #[test]
    fn the_check_runs_after_the_restore_and_decides() {
        use RunState::*;
        let mut runs = hourly(&[Complete]);
        runs.push(verification_of("b0", Trigger::Verify, Complete));
        assert_eq!(progress("b0", &runs, true), Progress::NeedsCheck);
        let p = plan(&runs, Cadence::Every(1), true, t(NOW));
        assert_eq!(
            (p.check, p.record, p.start),
            (vec!["b0".to_string()], vec![], None)
        );
        runs.push(verification_of("b0", Trigger::VerifyCheck, Running));
        assert_eq!(
            progress("b0", &runs, true),
            Progress::Running("b0-verify-check".into())
        );
        runs.last_mut().unwrap().state = Failed;
        let p = plan(&runs, Cadence::Every(1), true, t(NOW));
        assert_eq!(
            p.record,
            vec![Outcome {
                run: "b0".into(),
                passed: false,
                by: "b0-verify-check".into()
            }]
        );
        // A failed restore fails the verification; no check is created.
        let mut runs = hourly(&[Complete]);
        runs.push(verification_of("b0", Trigger::Verify, Failed));
        let p = plan(&runs, Cadence::Every(1), true, t(NOW));
        assert!(p.check.is_empty());
        assert!(!p.record[0].passed);
        // A recorded outcome is not recorded again.
        runs[0] = passed(runs[0].clone(), false, NOW);
        assert!(
            plan(&runs, Cadence::Every(1), true, t(NOW))
                .record
                .is_empty()
        );
    }

    #[test]
    fn a_verify_tick_verifies_the_newest_complete_unverified_run() {
        use RunState::*;
        let runs = hourly(&[Complete, Complete, Running]);
        let tick = t("2026-06-01T11:00:00Z");
        let p = plan(&runs, Cadence::Tick(Some(tick)), false, t(NOW));
        assert_eq!(p.start, Some(("b1".to_string(), tick)));
        assert_eq!(plan(&runs, Cadence::Tick(None), false, t(NOW)).start, None);
        let s = crate::scheduler::cron::Schedule::parse("0 */6 * * *", None).unwrap();
        assert_eq!(
            due_tick(&s, t("2026-06-01T05:00:00Z"), t(NOW)),
            Some(t("2026-06-01T12:00:00Z"))
        );
        assert_eq!(due_tick(&s, t(NOW), t("2026-06-01T13:00:00Z")), None);
        let mut v = verification_of("b0", Trigger::Verify, Complete);
        v.scheduled_time = t("2026-06-01T06:00:00Z");
        assert_eq!(
            ticks_since(&[v], t("2026-05-01T00:00:00Z")),
            t("2026-06-01T06:00:00Z")
        );
    }

    #[test]
    fn the_next_verify_tick_stays_on_the_ticks_counted_from_since() {
        let every = crate::scheduler::cron::Schedule::parse("@every 1h", None).unwrap();
        let since = t("2026-06-01T05:00:00Z");
        // Between ticks (05:00 + k hours), the next is the next of those, not now + 1h.
        assert_eq!(
            next_tick(&every, since, t("2026-06-01T11:59:00Z")),
            Some(t("2026-06-01T12:00:00Z"))
        );
        assert_eq!(
            next_tick(&every, since, t("2026-06-01T05:30:00Z")),
            Some(t("2026-06-01T06:00:00Z"))
        );
        // On a tick, the one after it.
        assert_eq!(
            next_tick(&every, since, t(NOW)),
            Some(t("2026-06-01T13:00:00Z"))
        );
        let cron = crate::scheduler::cron::Schedule::parse("0 */6 * * *", None).unwrap();
        assert_eq!(
            next_tick(&cron, since, t("2026-06-01T11:59:00Z")),
            Some(t(NOW))
        );
        assert_eq!(
            next_tick(&cron, since, t("2026-06-01T05:30:00Z")),
            Some(t("2026-06-01T06:00:00Z"))
        );
    }

    #[test]
    fn the_summary_counts_failures_since_the_newest_pass_and_carries_rotated_ones() {
        use RunState::*;
        let runs = hourly(&[Complete, Complete, Complete]);
        let runs = vec![
            passed(runs[0].clone(), true, "2026-06-01T01:00:00Z"),
            passed(runs[1].clone(), false, "2026-06-01T02:00:00Z"),
            passed(runs[2].clone(), false, "2026-06-01T03:00:00Z"),
        ];
        let s = summarize(&runs, &Counted::default());
        assert_eq!(s.consecutive_failures, 2);
        assert_eq!(
            s.last_verified,
            Some((t("2026-06-01T01:00:00Z"), "b0".into()))
        );
        // Counted again from the status: no double count.
        assert_eq!(summarize(&runs, &s), s);
        // The failed runs rotated away: still counted; a new failure adds one.
        let mut later = run("b9", "2026-06-01T09:00:00Z", Complete);
        later = passed(later, false, "2026-06-01T10:00:00Z");
        let s2 = summarize(std::slice::from_ref(&later), &s);
        assert_eq!(s2.consecutive_failures, 3);
        // Outcomes recorded within one second are still ordered.
        let at = t("2026-06-01T10:00:00Z");
        assert_eq!(
            record_time(&[later.clone()], &s, at),
            at + chrono::Duration::seconds(1)
        );
        assert_eq!(record_time(&[], &Counted::default(), at), at);
        // A pass resets.
        let ok = passed(
            run("b10", "2026-06-01T10:00:00Z", Complete),
            true,
            "2026-06-01T11:00:00Z",
        );
        let s3 = summarize(&[later, ok], &s2);
        assert_eq!(
            (s3.consecutive_failures, s3.last_verified.unwrap().1),
            (0, "b10".into())
        );
    }

    #[test]
    fn the_verification_restores_the_runs_artifacts_into_the_scratch_object() {
        let s: ActionSchedule = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "db", "namespace": "ns"},
            "spec": {"schedule": "@daily", "exclusive": true, "actionSetTemplate": {"actions": []},
                "verify": {"action": "restore", "checkAction": "count",
                    "object": {"kind": "StatefulSet", "name": "scratch", "namespace": "ns"}}},
        }))
        .unwrap();
        let backup: ActionSet = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "db-1", "namespace": "ns"},
            "spec": {"actions": [{"name": "backup", "blueprint": "bp",
                "object": {"kind": "StatefulSet", "name": "prod", "namespace": "ns"},
                "profile": {"name": "p", "namespace": "ns"}, "options": {"o": "1"}}]},
            "status": {"state": "complete", "actions": [{"name": "backup", "blueprint": "bp",
                "object": {"kind": "StatefulSet", "name": "prod", "namespace": "ns"},
                "artifacts": {"snap": {"keyValue": {"path": "/b/1"}}}}]},
        }))
        .unwrap();
        let verify = s.spec.verify.clone().unwrap();
        let a = verification(&s, &verify, &backup, false, t(NOW)).unwrap();
        assert_eq!(a.name_any(), "db-1-verify");
        let x = &a.spec.as_ref().unwrap().actions[0];
        assert_eq!((x.name.as_str(), x.blueprint.as_str()), ("restore", "bp"));
        assert_eq!(x.object.name, "scratch");
        assert_eq!(x.artifacts["snap"].key_value["path"], "/b/1");
        assert_eq!(x.profile.as_ref().unwrap().name, "p");
        assert_eq!(x.options["o"], "1");
        assert_eq!(a.labels()[LABEL_VERIFY_FOR], "db-1");
        assert_eq!(a.labels()[crate::model::LABEL_TRIGGER], "verify");
        assert_eq!(a.annotations()[crate::model::ANNOTATION_EXCLUSIVE], "true");
        assert!(crate::scheduler::identity::is_run_of(&a.metadata, "db"));
        let c = verification(&s, &verify, &backup, true, t(NOW)).unwrap();
        assert_eq!(c.name_any(), "db-1-verify-check");
        assert_eq!(c.spec.as_ref().unwrap().actions[0].name, "count");
        // Only a complete run can be verified.
        let mut pending = backup.clone();
        pending.status = None;
        assert!(verification(&s, &verify, &pending, false, t(NOW)).is_err());
        // The outcome, as labels and annotations, reads back.
        let o = Outcome {
            run: "db-1".into(),
            passed: true,
            by: "db-1-verify-check".into(),
        };
        let mut meta: ObjectMeta =
            serde_json::from_value(record_patch(&o, t(NOW))["metadata"].clone()).unwrap();
        meta.name = Some("db-1".into());
        assert_eq!(
            Verified::from_meta(&meta),
            Some(Verified {
                passed: true,
                at: t(NOW),
                by: "db-1-verify-check".into()
            })
        );
    }
}
