//! Pure retention: which ActionSets of a schedule to rotate, with reasons.
//!
//! Complete runs follow restic `forget` (`internal/data/snapshot_policy.go`):
//! newest first, buckets `last`, `hourly`, `daily`, `weekly` (ISO weeks),
//! `monthly`, `yearly`; a bucket keeps a run when the run's period key differs
//! from the last key it kept (so empty periods use up no count), the oldest run
//! is kept while a bucket still has count left, and a run is removed only if no
//! bucket keeps it. Period keys are computed on the wall clock of the
//! schedule's time zone. Failed runs are kept by count only.
//!
//! Never removed: runs that are active ([`RunRecord::is_active`]: pending,
//! running, or their deferPhase is), the newest complete run, ActionSets this
//! schedule did not create, and delete-action ActionSets (the reconciler
//! handles those with their run). A run that waits for its turn (an exclusive
//! run) is pending until it runs, so it is active here: whatever
//! marks a run as waiting must keep [`RunRecord::is_active`] true for it (the
//! one predicate rotation, its preview and the deleted schedule's path use).
//! The executor's gate (`executor/runtime/gate.rs`) keeps it `pending` and
//! only annotates it; `tests/e2e/exclusive.rs` shows it is never rotated.

use chrono::{DateTime, Datelike, Timelike, Utc};
use chrono_tz::Tz;

use super::plan::{RunRecord, RunState, Trigger};
use crate::model::Retention;

/// Retention settings with the zone buckets are computed in.
#[derive(Debug, Clone)]
pub struct Policy {
    pub keep_last: u32,
    pub keep_failed: u32,
    pub hourly: Option<u32>,
    pub daily: Option<u32>,
    pub weekly: Option<u32>,
    pub monthly: Option<u32>,
    pub yearly: Option<u32>,
    /// `keepVerified`.
    pub verified: Option<u32>,
    pub tz: Tz,
}

impl Policy {
    pub fn from_spec(r: &Retention, tz: Tz) -> Policy {
        Policy {
            keep_last: r.keep_last,
            keep_failed: r.keep_failed,
            hourly: r.keep_hourly,
            daily: r.keep_daily,
            weekly: r.keep_weekly,
            monthly: r.keep_monthly,
            yearly: r.keep_yearly,
            verified: r.keep_verified,
            tz,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Kept {
    pub name: String,
    pub reasons: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Removal {
    pub name: String,
    pub state: RunState,
    pub reason: String,
}

/// The decision: what stays (and why) and what goes (and why).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RetentionPlan {
    pub keep: Vec<Kept>,
    pub remove: Vec<Removal>,
}

#[derive(Clone, Copy)]
enum Bucket {
    Last,
    Hourly,
    Daily,
    Weekly,
    Monthly,
    Yearly,
}

impl Bucket {
    fn name(self) -> &'static str {
        match self {
            Bucket::Last => "last",
            Bucket::Hourly => "hourly",
            Bucket::Daily => "daily",
            Bucket::Weekly => "weekly",
            Bucket::Monthly => "monthly",
            Bucket::Yearly => "yearly",
        }
    }
    fn key(self, t: DateTime<Utc>, tz: Tz, index: usize) -> i64 {
        let l = t.with_timezone(&tz);
        let (y, m, d, h) = (
            i64::from(l.year()),
            i64::from(l.month()),
            i64::from(l.day()),
            i64::from(l.hour()),
        );
        match self {
            Bucket::Last => index as i64,
            Bucket::Hourly => y * 1_000_000 + m * 10_000 + d * 100 + h,
            Bucket::Daily => y * 10_000 + m * 100 + d,
            Bucket::Weekly => {
                let w = l.iso_week();
                i64::from(w.year()) * 100 + i64::from(w.week())
            }
            Bucket::Monthly => y * 100 + m,
            Bucket::Yearly => y,
        }
    }
}

/// Select what to rotate from the runs of one schedule.
pub fn select(runs: &[RunRecord], policy: &Policy) -> RetentionPlan {
    let mut plan = RetentionPlan::default();
    let mut complete = Vec::new();
    let mut failed = Vec::new();
    // A run being verified stays until its verification ends (the restore reads its data).
    let verifying: Vec<&str> = runs
        .iter()
        .filter(|r| r.ours && r.trigger.is_verification() && r.is_active())
        .filter_map(|r| r.verify_for.as_deref())
        .collect();
    for r in runs {
        if !r.is_backup() {
            continue;
        }
        if r.is_active() {
            plan.keep.push(Kept {
                name: r.name.clone(),
                reasons: vec!["active".into()],
            });
        } else if r.state == RunState::Complete {
            complete.push(r);
        } else {
            failed.push(r);
        }
    }
    let newest_first = |a: &&RunRecord, b: &&RunRecord| {
        (b.scheduled_time, &b.name).cmp(&(a.scheduled_time, &a.name))
    };
    complete.sort_by(newest_first);
    failed.sort_by(newest_first);

    let passed = |r: &RunRecord| r.verified.as_ref().is_some_and(|v| v.passed);
    let newest_verified = complete.iter().position(|r| passed(r));
    // Unverified runs older than the newest verified one are worth least: `keepLast` counts
    // them after every other complete run.
    let demoted = |i: usize, r: &RunRecord| newest_verified.is_some_and(|v| i > v) && !passed(r);
    let mut by_worth: Vec<usize> = (0..complete.len()).collect();
    by_worth.sort_by_key(|&i| demoted(i, complete[i]));
    let last: Vec<usize> = by_worth
        .into_iter()
        .take(policy.keep_last as usize)
        .collect();
    let keep_verified = policy.verified.unwrap_or(0) as usize;
    let mut verified_seen = 0;

    // restic ApplyPolicy for the time buckets; count None = bucket unused.
    let mut buckets: Vec<(Bucket, u32, Option<i64>)> = [
        (Bucket::Hourly, policy.hourly),
        (Bucket::Daily, policy.daily),
        (Bucket::Weekly, policy.weekly),
        (Bucket::Monthly, policy.monthly),
        (Bucket::Yearly, policy.yearly),
    ]
    .into_iter()
    .filter_map(|(b, n)| n.filter(|n| *n > 0).map(|n| (b, n, None)))
    .collect();
    let n = complete.len();
    for (i, r) in complete.iter().enumerate() {
        let mut reasons = Vec::new();
        if i == 0 {
            reasons.push("newest complete".to_string());
        }
        if passed(r) {
            verified_seen += 1;
            if Some(i) == newest_verified {
                reasons.push("newest verified".to_string());
            } else if verified_seen <= keep_verified {
                reasons.push(format!("verified {verified_seen} of {keep_verified}"));
            }
        }
        if verifying.contains(&r.name.as_str()) {
            reasons.push("being verified".to_string());
        }
        if last.contains(&i) {
            reasons.push(Bucket::Last.name().to_string());
        }
        for (b, count, last) in buckets.iter_mut() {
            if *count == 0 {
                continue;
            }
            let key = b.key(r.scheduled_time, policy.tz, i);
            if Some(key) != *last || i == n - 1 {
                let oldest = Some(key) == *last;
                *last = Some(key);
                *count -= 1;
                reasons.push(if oldest {
                    format!("oldest {}", b.name())
                } else {
                    b.name().to_string()
                });
            }
        }
        if reasons.is_empty() {
            let unverified = match newest_verified.filter(|_| demoted(i, r)) {
                Some(v) => format!(
                    ", unverified and older than the newest verified run {}",
                    complete[v].name
                ),
                None => String::new(),
            };
            plan.remove.push(Removal {
                name: r.name.clone(),
                state: r.state,
                reason: format!(
                    "complete{unverified}, not kept by any rule ({})",
                    describe(policy)
                ),
            });
        } else {
            plan.keep.push(Kept {
                name: r.name.clone(),
                reasons,
            });
        }
    }
    for (i, r) in failed.iter().enumerate() {
        if (i as u32) < policy.keep_failed {
            plan.keep.push(Kept {
                name: r.name.clone(),
                reasons: vec![format!("failed {} of {}", i + 1, policy.keep_failed)],
            });
        } else {
            plan.remove.push(Removal {
                name: r.name.clone(),
                state: r.state,
                reason: format!("failed, beyond keepFailed={}", policy.keep_failed),
            });
        }
    }
    plan
}

/// What the next rotation would remove: the one that runs when the active
/// runs complete and, with `next`, the run of the next tick too (`None`: no
/// tick comes, e.g. the schedule is suspended). The preview shown in status.
/// Runs active now are counted as if they complete (so the count is not
/// optimistic) but are never listed: rotation does not remove a run while it
/// is active. With no active run and no next tick nothing would rotate.
pub fn preview_next(
    runs: &[RunRecord],
    policy: &Policy,
    next: Option<DateTime<Utc>>,
) -> Vec<Removal> {
    let now_removed: Vec<String> = select(runs, policy)
        .remove
        .into_iter()
        .map(|r| r.name)
        .collect();
    let active: Vec<&str> = runs
        .iter()
        .filter(|r| r.is_backup() && r.is_active())
        .map(|r| r.name.as_str())
        .collect();
    if active.is_empty() && next.is_none() {
        return Vec::new();
    }
    let mut with_next = runs.to_vec();
    if let Some(next) = next {
        let complete = RunState::Complete;
        with_next.push(RunRecord::new(
            "\u{0}next",
            next,
            complete,
            Trigger::Scheduled,
        ));
    }
    // Active runs are assumed to complete too.
    for r in with_next.iter_mut() {
        if r.is_backup() && r.is_active() {
            r.state = RunState::Complete;
            r.defer_state = None;
        }
    }
    select(&with_next, policy)
        .remove
        .into_iter()
        .filter(|r| {
            !r.name.starts_with('\u{0}')
                && !now_removed.contains(&r.name)
                && !active.contains(&r.name.as_str())
        })
        .collect()
}

fn describe(p: &Policy) -> String {
    let mut parts = vec![format!("keepLast={}", p.keep_last)];
    for (n, v) in [
        ("keepHourly", p.hourly),
        ("keepDaily", p.daily),
        ("keepWeekly", p.weekly),
        ("keepMonthly", p.monthly),
        ("keepYearly", p.yearly),
        ("keepVerified", p.verified),
    ] {
        if let Some(v) = v {
            parts.push(format!("{n}={v}"));
        }
    }
    parts.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scheduler::plan::fixtures::{run_at, t};
    use chrono::Duration;

    fn rec(i: usize, at: DateTime<Utc>, state: RunState) -> RunRecord {
        run_at(&format!("r{i:04}"), at, state)
    }

    fn policy(keep_last: u32) -> Policy {
        Policy {
            keep_last,
            keep_failed: 2,
            hourly: None,
            daily: None,
            weekly: None,
            monthly: None,
            yearly: None,
            verified: None,
            tz: Tz::UTC,
        }
    }

    /// `n` complete runs, one an hour from `start`.
    fn hourly(n: usize, start: DateTime<Utc>) -> Vec<RunRecord> {
        (0..n)
            .map(|i| rec(i, start + Duration::hours(i as i64), RunState::Complete))
            .collect()
    }

    fn names(v: &[Removal]) -> Vec<&str> {
        v.iter().map(|r| r.name.as_str()).collect()
    }

    fn removed(p: &RetentionPlan) -> Vec<String> {
        let mut v: Vec<String> = p.remove.iter().map(|r| r.name.clone()).collect();
        v.sort();
        v
    }

    #[test]
    fn keeps_last_n_complete_and_last_2_failed() {
        let start = t("2026-06-01T00:00:00Z");
        let runs: Vec<RunRecord> = (0..10)
            .map(|i| {
                rec(
                    i,
                    start + Duration::hours(i as i64),
                    if i % 2 == 0 {
                        RunState::Complete
                    } else {
                        RunState::Failed
                    },
                )
            })
            .collect();
        let p = select(&runs, &policy(3));
        // complete: 0 2 4 6 8 -> keep 8 6 4; failed: 1 3 5 7 9 -> keep 9 7
        assert_eq!(
            removed(&p),
            vec!["r0000", "r0001", "r0002", "r0003", "r0005"]
        );
        assert!(p.remove.iter().any(|r| r.reason.contains("keepFailed=2")));
    }

    #[test]
    fn never_removes_active_foreign_delete_or_newest_complete() {
        let start = t("2026-06-01T00:00:00Z");
        let mut runs = hourly(6, start);
        runs[0].state = RunState::Running;
        runs[1].defer_state = Some(RunState::Pending);
        runs[2].ours = false;
        runs[3].trigger = Trigger::Delete;
        let p = select(&runs, &policy(0));
        // keepLast=0: only the newest complete survives among 4 and 5.
        assert_eq!(removed(&p), vec!["r0004"]);
        assert!(
            p.keep
                .iter()
                .any(|k| k.name == "r0005" && k.reasons.contains(&"newest complete".to_string()))
        );
        assert!(
            p.keep
                .iter()
                .any(|k| k.name == "r0000" && k.reasons == vec!["active".to_string()])
        );
    }

    #[test]
    fn restic_daily_with_gap_and_oldest_rule() {
        // Two runs a day for 6 days, Wednesday missing entirely.
        let mut runs = Vec::new();
        let mut i = 0;
        for day in 1..=7 {
            if day == 3 {
                continue;
            }
            for h in [6, 18] {
                runs.push(rec(
                    i,
                    t(&format!("2026-06-0{day}T{h:02}:00:00Z")),
                    RunState::Complete,
                ));
                i += 1;
            }
        }
        let mut p = policy(1);
        p.daily = Some(5);
        let plan = select(&runs, &p);
        let kept: Vec<&str> = plan.keep.iter().map(|k| k.name.as_str()).collect();
        // newest of each of the 5 newest days with runs: 7,6,5,4,2 (day 3 empty)
        let want_days = [7, 6, 5, 4, 2];
        for d in want_days {
            let name = &runs
                .iter()
                .find(|r| r.scheduled_time == t(&format!("2026-06-0{d}T18:00:00Z")))
                .unwrap()
                .name;
            assert!(kept.contains(&name.as_str()), "day {d} newest kept");
        }
        assert_eq!(plan.keep.len(), 5);
        // With daily=7 the count is left at the oldest run: kept as "oldest daily".
        p.daily = Some(7);
        let plan = select(&runs, &p);
        let oldest = plan.keep.iter().find(|k| k.name == "r0000").unwrap();
        assert_eq!(oldest.reasons, vec!["oldest daily".to_string()]);
    }

    #[test]
    fn daily_buckets_follow_zone_across_dst_day() {
        // Hourly runs 2026-10-24 20:00Z .. 2026-10-26 04:00Z; Europe/Berlin falls
        // back on 10-25 (25-hour day). Local days: 24th, 25th, 26th.
        let start = t("2026-10-24T20:00:00Z");
        let runs = hourly(33, start);
        let mut p = policy(0);
        p.daily = Some(3);
        p.tz = "Europe/Berlin".parse().unwrap();
        let plan = select(&runs, &p);
        let mut kept: Vec<DateTime<Utc>> = plan
            .keep
            .iter()
            .map(|k| {
                runs.iter()
                    .find(|r| r.name == k.name)
                    .unwrap()
                    .scheduled_time
            })
            .collect();
        kept.sort();
        // Newest of 24th local = 21:00Z (23:00 CEST); of 25th = 22:00Z (23:00 CET); of 26th = newest.
        assert_eq!(
            kept,
            vec![
                t("2026-10-24T21:00:00Z"),
                t("2026-10-25T22:00:00Z"),
                t("2026-10-26T04:00:00Z")
            ]
        );
        // In UTC the day boundaries differ.
        p.tz = Tz::UTC;
        let plan = select(&runs, &p);
        assert!(plan.keep.iter().any(|k| {
            runs.iter()
                .find(|r| r.name == k.name)
                .unwrap()
                .scheduled_time
                == t("2026-10-24T23:00:00Z")
        }));
    }

    #[test]
    fn weekly_uses_iso_weeks_and_buckets_or() {
        // Daily runs for 5 weeks; daily 7 + weekly 5 -> 7 dailies + 4 more weeklies (restic doc example).
        let start = t("2026-06-01T12:00:00Z"); // Monday
        let runs: Vec<RunRecord> = (0..35)
            .map(|i| rec(i, start + Duration::days(i as i64), RunState::Complete))
            .collect();
        let mut p = policy(0);
        p.daily = Some(7);
        p.weekly = Some(5);
        let plan = select(&runs, &p);
        assert_eq!(plan.keep.len(), 11);
    }

    #[test]
    fn preview_shows_what_next_completion_removes() {
        let start = t("2026-06-01T00:00:00Z");
        let runs = hourly(3, start);
        let p = policy(3);
        assert!(select(&runs, &p).remove.is_empty());
        let next = preview_next(&runs, &p, Some(start + Duration::hours(3)));
        assert_eq!(names(&next), ["r0000"]);
    }

    #[test]
    fn previews_never_list_an_active_run() {
        let start = t("2026-06-01T00:00:00Z");
        let p = policy(0);
        // (the running run, removed now, the next tick, the preview), keepLast=0:
        // - a tick comes: once the next run completes, it alone is kept. The running run would
        //   only go once it ends: not listed. The newest complete one now is listed (it is no
        //   longer newest then);
        // - suspended, no tick comes: the running run still completes and rotates (r0001 is
        //   then no longer the newest).
        let tick = Some(start + Duration::hours(3));
        for (running, now, next, preview) in
            [(0, "r0001", tick, "r0002"), (2, "r0000", None, "r0001")]
        {
            let mut runs = hourly(3, start);
            runs[running].state = RunState::Running;
            assert_eq!(removed(&select(&runs, &p)), vec![now]);
            assert_eq!(names(&preview_next(&runs, &p, next)), [preview]);
        }
        // Nothing active and no tick: nothing would rotate.
        let mut runs = hourly(3, start);
        runs[2].state = RunState::Failed;
        assert!(preview_next(&runs, &p, None).is_empty());
    }

    fn verified(mut r: RunRecord, passed: bool) -> RunRecord {
        r.verified = Some(crate::scheduler::verify::Verified {
            passed,
            at: r.scheduled_time + Duration::minutes(30),
            by: format!("{}-verify", r.name),
        });
        r
    }

    #[test]
    fn the_newest_verified_run_stays_whatever_keep_last_says_and_unverified_older_ones_go_first() {
        // Newest first: r3 unverified, r2 verified, r1 failed its verification, r0 verified.
        let start = t("2026-06-01T00:00:00Z");
        let mut runs = hourly(4, start);
        runs[2] = verified(runs[2].clone(), true);
        runs[1] = verified(runs[1].clone(), false);
        runs[0] = verified(runs[0].clone(), true);
        // keepLast 0: the newest complete and the newest verified stay.
        let p = select(&runs, &policy(0));
        assert_eq!(removed(&p), vec!["r0000", "r0001"]);
        let newest_verified = p.keep.iter().find(|k| k.name == "r0002").unwrap();
        assert_eq!(newest_verified.reasons, vec!["newest verified".to_string()]);
        // keepLast 3: r1 (unverified, older than r2) goes before the older verified r0.
        let p = select(&runs, &policy(3));
        assert_eq!(removed(&p), vec!["r0001"]);
        assert!(
            p.remove[0]
                .reason
                .contains("older than the newest verified run r0002"),
            "{p:?}"
        );
        // keepLast 4 keeps all; keepVerified 2 keeps r0 with keepLast 0.
        assert!(select(&runs, &policy(4)).remove.is_empty());
        let mut kv = policy(0);
        kv.verified = Some(2);
        let p = select(&runs, &kv);
        assert_eq!(removed(&p), vec!["r0001"]);
        assert!(p.remove[0].reason.contains("keepVerified=2"));
        // A run being verified stays until its verification ends; the verification itself is
        // never a candidate.
        let mut v = rec(9, start, RunState::Running);
        v.trigger = Trigger::Verify;
        v.verify_for = Some("r0001".into());
        runs.push(v);
        let p = select(&runs, &policy(0));
        assert_eq!(removed(&p), vec!["r0000"]);
        assert!(
            p.keep
                .iter()
                .any(|k| k.name == "r0001" && k.reasons == ["being verified"])
        );
    }

    #[test]
    fn no_arrangement_rotates_an_active_run_or_the_newest_complete_or_verified_one() {
        // Every assignment of 7 states to 5 runs (pending stands for a run
        // waiting for its turn, as an exclusive run does; complete runs come
        // unverified, verified or with a failed verification), every keepLast,
        // keepFailed and keepVerified up to 2, with and without a next tick.
        let start = t("2026-06-01T00:00:00Z");
        let states = [
            (RunState::Pending, None, None),
            (RunState::Running, None, None),
            (RunState::Complete, None, None),
            (RunState::Complete, Some(RunState::Running), None),
            (RunState::Failed, None, None),
            (RunState::Complete, None, Some(true)),
            (RunState::Complete, None, Some(false)),
        ];
        let passed = |r: &RunRecord| r.verified.as_ref().is_some_and(|v| v.passed);
        for code in 0..states.len().pow(5) {
            let runs: Vec<RunRecord> = (0..5)
                .map(|i| {
                    let (state, defer, outcome) =
                        states[code / states.len().pow(i as u32) % states.len()];
                    let mut r = rec(i, start + Duration::hours(i as i64), state);
                    r.defer_state = defer;
                    match outcome {
                        Some(p) => verified(r, p),
                        None => r,
                    }
                })
                .collect();
            let complete: Vec<&RunRecord> = runs
                .iter()
                .filter(|r| r.state == RunState::Complete && !r.is_active())
                .collect();
            let newest_complete = complete.last().map(|r| r.name.clone());
            let verified_newest_first: Vec<&str> = complete
                .iter()
                .rev()
                .filter(|r| passed(r))
                .map(|r| r.name.as_str())
                .collect();
            let newest_verified_at = complete
                .iter()
                .rev()
                .find(|r| passed(r))
                .map(|r| r.scheduled_time);
            let demoted = |r: &RunRecord| {
                !passed(r) && newest_verified_at.is_some_and(|v| r.scheduled_time < v)
            };
            for keep in 0..3 {
                for keep_verified in [None, Some(keep)] {
                    let mut p = policy(keep);
                    p.keep_failed = keep;
                    p.verified = keep_verified;
                    let now = select(&runs, &p);
                    let gone = |name: &str| now.remove.iter().any(|r| r.name == name);
                    let case = format!("({code}, {keep}, {keep_verified:?})");
                    assert!(
                        !newest_complete.as_deref().is_some_and(gone),
                        "newest complete rotated {case}"
                    );
                    let kept_verified = keep_verified.unwrap_or(0).max(1) as usize;
                    for v in verified_newest_first.iter().take(kept_verified) {
                        assert!(!gone(v), "verified {v} rotated {case}");
                    }
                    // keepLast spends itself on an unverified run older than the newest
                    // verified one only when every other complete run is kept.
                    let last_on_demoted = now.keep.iter().any(|k| {
                        k.reasons.iter().any(|r| r == "last")
                            && runs.iter().any(|r| r.name == k.name && demoted(r))
                    });
                    let other_gone = now.remove.iter().any(|x| {
                        runs.iter().any(|r| {
                            r.name == x.name && r.state == RunState::Complete && !demoted(r)
                        })
                    });
                    assert!(
                        !(last_on_demoted && other_gone),
                        "demoted run kept first {case}"
                    );
                    for next in [None, Some(start + Duration::hours(6))] {
                        let preview = preview_next(&runs, &p, next);
                        for r in now.remove.iter().chain(&preview) {
                            let run = runs.iter().find(|x| x.name == r.name).unwrap();
                            assert!(!run.is_active(), "active {run:?} listed {case}");
                        }
                        assert!(
                            !preview
                                .iter()
                                .any(|r| verified_newest_first.first() == Some(&r.name.as_str())),
                            "newest verified in the preview {case}"
                        );
                        if next.is_none() && runs.iter().all(|r| !r.is_active()) {
                            assert!(preview.is_empty(), "nothing would rotate {case}");
                        }
                    }
                }
            }
        }
    }
}
