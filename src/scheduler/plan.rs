//! Pure planning: given an ActionSchedule's settings, what it already did, the
//! time now and the runs that exist, decide what to create, what to skip (and
//! why) and when to look again. The reconciler executes the [`Plan`]; status
//! and Events print it.

use chrono::{DateTime, Utc};
use sha2::{Digest, Sha256};

use super::cron::Schedule;
pub use super::verify::Verified;
use super::window::Window;
use crate::model::{ConcurrencyPolicy, MissedRunPolicy};

/// A tick handled more than this many seconds late counts as missed under
/// `missedRunPolicy: Skip`.
pub const ON_TIME_SECONDS: i64 = 60;
/// Counting missed ticks stops here (the latest one is still found exactly).
pub const MISSED_COUNT_LIMIT: u32 = 1000;
/// Kubernetes label values and our ActionSet names stay within this.
pub const MAX_NAME: usize = 63;

/// The state of a run as the scheduler sees it. An ActionSet without status
/// yet is `Pending`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunState {
    Pending,
    Running,
    Failed,
    Complete,
}

impl RunState {
    pub fn is_terminal(self) -> bool {
        matches!(self, RunState::Failed | RunState::Complete)
    }
    pub fn as_str(self) -> &'static str {
        match self {
            RunState::Pending => "pending",
            RunState::Running => "running",
            RunState::Failed => "failed",
            RunState::Complete => "complete",
        }
    }
}

/// Why an ActionSet of this schedule exists.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Trigger {
    Scheduled,
    RunNow,
    /// A retention delete action for another run.
    Delete,
    /// The restore of a backup run's verification (`spec.verify.action`).
    Verify,
    /// The check after that restore (`spec.verify.checkAction`).
    VerifyCheck,
}

impl Trigger {
    pub fn as_str(self) -> &'static str {
        match self {
            Trigger::Scheduled => "scheduled",
            Trigger::RunNow => "run-now",
            Trigger::Delete => "delete",
            Trigger::Verify => "verify",
            Trigger::VerifyCheck => "verify-check",
        }
    }
    pub fn parse(s: &str) -> Trigger {
        match s {
            "run-now" => Trigger::RunNow,
            "delete" => Trigger::Delete,
            "verify" => Trigger::Verify,
            "verify-check" => Trigger::VerifyCheck,
            _ => Trigger::Scheduled,
        }
    }
    /// A backup run (scheduled or run-now), not an ActionSet that works for one (a delete
    /// action, a verification): only these are counted, rotated by retention, or verified.
    pub fn is_backup(self) -> bool {
        matches!(self, Trigger::Scheduled | Trigger::RunNow)
    }
    /// A verification ActionSet (its restore or its check).
    pub fn is_verification(self) -> bool {
        matches!(self, Trigger::Verify | Trigger::VerifyCheck)
    }
}

/// The scheduler's view of one ActionSet labelled with the schedule.
#[derive(Debug, Clone, PartialEq)]
pub struct RunRecord {
    pub name: String,
    /// Nominal tick (run-now: the time it was requested).
    pub scheduled_time: DateTime<Utc>,
    pub state: RunState,
    /// State of the deferPhase of any action, if one exists and is not finished
    /// (`Some(Pending|Running)`), or its final state.
    pub defer_state: Option<RunState>,
    pub trigger: Trigger,
    /// Created by this schedule, or by an earlier one of the same name
    /// (label and annotation, see [`identity`](super::identity)); the label
    /// alone is not enough.
    pub ours: bool,
    /// For a delete action: the run whose artifacts it deletes.
    pub delete_for: Option<String>,
    /// For a verification ActionSet: the backup run it verifies.
    pub verify_for: Option<String>,
    /// For a backup run: the recorded outcome of its verification.
    pub verified: Option<Verified>,
}

impl RunRecord {
    /// A run this schedule created for the tick `at`, not a delete action or a verification.
    pub fn new(
        name: &str,
        scheduled_time: DateTime<Utc>,
        state: RunState,
        trigger: Trigger,
    ) -> Self {
        RunRecord {
            name: name.into(),
            scheduled_time,
            state,
            defer_state: None,
            trigger,
            ours: true,
            delete_for: None,
            verify_for: None,
            verified: None,
        }
    }

    /// A backup run of this schedule (not a delete action or a verification).
    pub fn is_backup(&self) -> bool {
        self.ours && self.trigger.is_backup()
    }
    /// Pending or running, or its deferPhase is.
    pub fn is_active(&self) -> bool {
        !self.state.is_terminal() || self.defer_state.is_some_and(|d| !d.is_terminal())
    }
}

/// Settings that planning needs (from the spec).
#[derive(Debug, Clone)]
pub struct PlanSettings {
    pub suspend: bool,
    pub concurrency_policy: ConcurrencyPolicy,
    pub starting_deadline_seconds: Option<i64>,
    pub missed_run_policy: MissedRunPolicy,
    /// Seconds each tick's run is created after the tick ([`jitter_offset`](super::window::jitter_offset)).
    pub jitter_offset: i64,
    pub window: Option<Window>,
    /// `(consecutive failures, suspendAfterFailures)` while the breaker is open.
    pub too_many_failures: Option<(u32, u32)>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SkipReason {
    /// Passed while nothing could run it (controller down, or an earlier tick
    /// in the same window was chosen).
    Missed,
    /// Older than `startingDeadlineSeconds` when the controller got to it.
    DeadlineExceeded,
    Suspended,
    ConcurrencyForbid,
    /// Outside `spec.window` (with `outside: Skip`; with `Wait`, ticks folded into a later
    /// one while waiting).
    OutsideWindow,
    /// `suspendAfterFailures` reached.
    TooManyFailures,
}

impl SkipReason {
    pub fn as_str(self) -> &'static str {
        match self {
            SkipReason::Missed => "Missed",
            SkipReason::DeadlineExceeded => "DeadlineExceeded",
            SkipReason::Suspended => "Suspended",
            SkipReason::ConcurrencyForbid => "ConcurrencyForbid",
            SkipReason::OutsideWindow => "OutsideWindow",
            SkipReason::TooManyFailures => "TooManyFailures",
        }
    }
    /// Missed ticks (not a decision) versus skipped ones.
    pub fn is_missed(self) -> bool {
        matches!(self, SkipReason::Missed | SkipReason::DeadlineExceeded)
    }
}

/// One or more ticks not started.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skip {
    /// The (first) tick this entry stands for.
    pub scheduled_time: DateTime<Utc>,
    pub count: u32,
    pub reason: SkipReason,
    pub message: String,
}

/// A run to create.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewRun {
    pub name: String,
    pub scheduled_time: DateTime<Utc>,
    pub trigger: Trigger,
}

/// What to do now.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Plan {
    /// Runs to create (a scheduled tick and/or a run-now request).
    pub create: Vec<NewRun>,
    /// Active runs to delete first (`Replace`).
    pub replace: Vec<String>,
    pub skips: Vec<Skip>,
    /// New `status.lastScheduleTime` / `lastSkippedTime` if they change.
    pub last_schedule_time: Option<DateTime<Utc>>,
    pub last_skipped_time: Option<DateTime<Utc>>,
    /// When the next run is due: the next tick (suspended or not) plus the jitter offset, or a
    /// tick waiting for the window's start plus the offset (None: the schedule has no further
    /// tick).
    pub next: Option<DateTime<Utc>>,
    /// Run-now token consumed by this plan.
    pub run_now_token: Option<String>,
}

/// Plan one reconcile.
///
/// `window_start` is the latest of `status.lastScheduleTime`,
/// `status.lastSkippedTime` and the schedule's creation time: ticks after it
/// are due once their run's start time (the tick, or the run window's next start with
/// `outside: Wait`, plus the jitter offset) is up to `now`. `runs` are the ActionSets of this
/// schedule.
///
/// Lateness (`startingDeadlineSeconds`, `missedRunPolicy: Skip`) is measured from that start
/// time, so neither the jitter nor a wait for the window makes a tick late.
pub fn plan(
    schedule_name: &str,
    schedule: &Schedule,
    settings: &PlanSettings,
    window_start: DateTime<Utc>,
    now: DateTime<Utc>,
    runs: &[RunRecord],
    run_now: Option<&str>,
) -> Plan {
    let mut p = Plan::default();
    let tz = schedule.time_zone();
    let offset = chrono::Duration::seconds(settings.jitter_offset);
    // Ticks up to here have reached their (jittered) time; the offset is the same for every
    // tick, so the order of ticks and their names stay as without it.
    let due = now - offset;
    let outside = |tick| {
        settings
            .window
            .as_ref()
            .is_some_and(|w| !w.contains(tick, tz))
    };
    let waits = |tick| outside(tick) && settings.window.as_ref().is_some_and(|w| w.wait);
    // When the run of `tick` starts (None: the window never opens again).
    let start_of = |tick: DateTime<Utc>| match &settings.window {
        Some(w) if waits(tick) => w.next_open(tick, tz).map(|o| o + offset),
        _ => Some(tick + offset),
    };
    let (latest, count) = schedule.last_between(window_start, due, MISSED_COUNT_LIMIT);
    // `@every` ticks chain from the previous tick; cron ticks are absolute.
    let base = latest.unwrap_or(window_start);
    let next_tick = if schedule.every_seconds().is_some() {
        schedule.next_after(base)
    } else {
        schedule.next_after(due.max(base))
    };
    p.next = next_tick.and_then(start_of);
    let blocked = if settings.suspend {
        Some((
            SkipReason::Suspended,
            "schedule is suspended (spec.suspend: true)".to_string(),
        ))
    } else {
        settings.too_many_failures.map(|(failures, limit)| {
            (
                SkipReason::TooManyFailures,
                format!(
                    "{failures} consecutive failed runs (suspendAfterFailures: {limit}): no scheduled run until a run completes"
                ),
            )
        })
    };

    if let Some(tick) = latest {
        let start = start_of(tick);
        if blocked.is_none()
            && waits(tick)
            && let Some(start) = start.filter(|s| *s > now)
        {
            // Waiting for the window: nothing is recorded, the tick is planned again then.
            p.next = Some(start);
            return with_run_now(p, schedule_name, now, run_now);
        }
        let earlier = count.saturating_sub(1);
        let first = schedule.next_after(window_start).unwrap_or(tick);
        if earlier > 0 && blocked.is_none() {
            // With `outside: Wait`, ticks outside the window waited and were overtaken.
            let (reason, why) = if waits(first) || waits(tick) {
                (
                    SkipReason::OutsideWindow,
                    "were folded into the latest while waiting for the window",
                )
            } else {
                (
                    SkipReason::Missed,
                    "passed without a run; only the latest is considered",
                )
            };
            p.skips.push(Skip {
                scheduled_time: first,
                count: earlier,
                reason,
                message: format!(
                    "{earlier}{} tick(s) between {} and {} {why}",
                    if count >= MISSED_COUNT_LIMIT { "+" } else { "" },
                    first.to_rfc3339(),
                    tick.to_rfc3339()
                ),
            });
        }
        let late = (now - start.unwrap_or(tick + offset)).num_seconds();
        let active: Vec<&RunRecord> = runs
            .iter()
            .filter(|r| r.is_backup() && r.is_active())
            .collect();
        let skip = |reason, count, message: String| Skip {
            scheduled_time: if count > 1 { first } else { tick },
            count,
            reason,
            message,
        };
        if let Some((reason, message)) = blocked {
            p.skips.push(skip(reason, count, message));
        } else if outside(tick) && (!waits(tick) || start.is_none()) {
            p.skips.push(skip(
                SkipReason::OutsideWindow,
                1,
                format!(
                    "tick {} is outside spec.window (outside: Skip)",
                    tick.to_rfc3339()
                ),
            ));
        } else if let Some(d) = settings.starting_deadline_seconds.filter(|d| late > *d) {
            p.skips.push(skip(
                SkipReason::DeadlineExceeded,
                1,
                format!(
                    "tick {} is {late}s late, beyond startingDeadlineSeconds={d}",
                    tick.to_rfc3339()
                ),
            ));
        } else if settings.missed_run_policy == MissedRunPolicy::Skip && late > ON_TIME_SECONDS {
            p.skips.push(skip(
                SkipReason::Missed,
                1,
                format!(
                    "tick {} is {late}s late (more than {ON_TIME_SECONDS}s) and missedRunPolicy is Skip",
                    tick.to_rfc3339()
                ),
            ));
        } else if settings.concurrency_policy == ConcurrencyPolicy::Forbid && !active.is_empty() {
            p.skips.push(skip(
                SkipReason::ConcurrencyForbid,
                1,
                format!(
                    "concurrencyPolicy is Forbid and {} run(s) are active: {}",
                    active.len(),
                    active
                        .iter()
                        .map(|r| r.name.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            ));
        } else {
            if settings.concurrency_policy == ConcurrencyPolicy::Replace {
                p.replace = active.iter().map(|r| r.name.clone()).collect();
            }
            p.create.push(NewRun {
                name: run_name(schedule_name, tick),
                scheduled_time: tick,
                trigger: Trigger::Scheduled,
            });
            p.last_schedule_time = Some(tick);
        }
        if p.last_schedule_time.is_none() {
            p.last_skipped_time = Some(tick);
        }
    }
    with_run_now(p, schedule_name, now, run_now)
}

/// `p` with the run of a run-now request added (suspended, breaker open or outside the
/// window alike: it is an explicit request).
fn with_run_now(
    mut p: Plan,
    schedule_name: &str,
    now: DateTime<Utc>,
    run_now: Option<&str>,
) -> Plan {
    if let Some(token) = run_now {
        p.create.push(NewRun {
            name: run_now_name(schedule_name, token),
            scheduled_time: DateTime::from_timestamp(now.timestamp(), 0).unwrap_or(now),
            trigger: Trigger::RunNow,
        });
        p.run_now_token = Some(token.to_string());
    }
    p
}

fn short_hash(s: &str) -> String {
    let d = Sha256::digest(s.as_bytes());
    d.iter().take(4).map(|b| format!("{b:02x}")).collect()
}

/// `<prefix>-<suffix>` within [`MAX_NAME`] characters: a long prefix is cut and
/// followed by a hash of the whole prefix, so different prefixes stay different.
pub fn fit_name(prefix: &str, suffix: &str) -> String {
    let full = format!("{prefix}-{suffix}");
    if full.len() <= MAX_NAME {
        return full;
    }
    let hash = short_hash(prefix);
    let room = MAX_NAME.saturating_sub(suffix.len() + hash.len() + 2);
    let mut cut: String = prefix.chars().take(room).collect();
    while cut.ends_with(['-', '.']) {
        cut.pop();
    }
    if cut.is_empty() {
        format!("{hash}-{suffix}")
    } else {
        format!("{cut}-{hash}-{suffix}")
    }
}

/// ActionSet name of the scheduled run for `tick`: `<schedule>-<yyyymmddhhmmss>` (UTC).
pub fn run_name(schedule: &str, tick: DateTime<Utc>) -> String {
    fit_name(schedule, &tick.format("%Y%m%d%H%M%S").to_string())
}

/// ActionSet name of a run-now request: `<schedule>-now-<hash of the token>`.
pub fn run_now_name(schedule: &str, token: &str) -> String {
    fit_name(schedule, &format!("now-{}", short_hash(token)))
}

/// ActionSet name of the delete action for a rotated run.
pub fn delete_name(run: &str) -> String {
    fit_name(run, "delete")
}

/// Value for the `blueprint-operator.io/schedule` label (label values are at most 63 chars).
pub fn schedule_label_value(schedule: &str) -> String {
    if schedule.len() <= MAX_NAME {
        schedule.to_string()
    } else {
        fit_name(&schedule[..40.min(schedule.len())], &short_hash(schedule))
    }
}

/// Summary of the runs for status.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Summary {
    /// Active runs, oldest first.
    pub active: Vec<RunRecord>,
    /// Failed runs since the newest complete one, removed ones included.
    pub consecutive_failures: u32,
    /// Nominal time of the newest failed run counted.
    pub last_failed: Option<DateTime<Utc>>,
    pub last_successful: Option<DateTime<Utc>>,
}

/// What the status recorded at the previous reconcile. Rotation removes failed runs beyond
/// `keepFailed`, so failures are counted on from here, never recounted from the runs left (with
/// the default keepFailed of 2 a recount could never reach 3).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Counted {
    pub consecutive_failures: u32,
    pub last_failed: Option<DateTime<Utc>>,
    pub last_successful: Option<DateTime<Utc>>,
}

pub fn summarize(runs: &[RunRecord], counted: &Counted) -> Summary {
    let mut mine: Vec<&RunRecord> = runs.iter().filter(|r| r.is_backup()).collect();
    mine.sort_by(|a, b| (a.scheduled_time, &a.name).cmp(&(b.scheduled_time, &b.name)));
    let active = mine
        .iter()
        .filter(|r| r.is_active())
        .map(|r| (*r).clone())
        .collect();
    let last_successful = mine
        .iter()
        .filter(|r| r.state == RunState::Complete)
        .map(|r| r.scheduled_time)
        .max()
        .max(counted.last_successful);
    // The failures counted before still stand unless a run succeeded after them.
    let carried = match (counted.last_failed, last_successful) {
        (Some(failed), Some(ok)) if ok > failed => 0,
        (Some(_), _) => counted.consecutive_failures,
        (None, _) => 0,
    };
    let since = last_successful.max(counted.last_failed);
    let new_failures: Vec<DateTime<Utc>> = mine
        .iter()
        .filter(|r| r.state == RunState::Failed && Some(r.scheduled_time) > since)
        .map(|r| r.scheduled_time)
        .collect();
    Summary {
        active,
        consecutive_failures: carried + new_failures.len() as u32,
        last_failed: new_failures.last().copied().or(counted.last_failed),
        last_successful,
    }
}

/// Runs and times for the scheduler's tests.
#[cfg(test)]
pub mod fixtures {
    use super::{RunRecord, RunState, Trigger};
    use chrono::{DateTime, Utc};

    /// An RFC 3339 time.
    pub fn t(s: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
    }

    /// A scheduled run of this schedule at `at`.
    pub fn run(name: &str, at: &str, state: RunState) -> RunRecord {
        run_at(name, t(at), state)
    }

    /// [`run`] at a time.
    pub fn run_at(name: &str, at: DateTime<Utc>, state: RunState) -> RunRecord {
        RunRecord::new(name, at, state, Trigger::Scheduled)
    }
}

#[cfg(test)]
mod tests {
    use super::fixtures::{run, t};
    use super::*;

    /// [`plan`] of schedule `db` with the window `[from, now]` (RFC 3339 times).
    fn plan_db(
        s: &Schedule,
        st: &PlanSettings,
        [from, now]: [&str; 2],
        runs: &[RunRecord],
        run_now: Option<&str>,
    ) -> Plan {
        plan("db", s, st, t(from), t(now), runs, run_now)
    }

    /// [`plan_db`] with no runs and no `run-now`.
    fn plan_idle(s: &Schedule, st: &PlanSettings, window: [&str; 2]) -> Plan {
        plan_db(s, st, window, &[], None)
    }

    /// [`plan_idle`] of an hourly schedule with the default [`settings`].
    fn hourly_idle(window: [&str; 2]) -> Plan {
        plan_idle(
            &Schedule::parse("0 * * * *", None).unwrap(),
            &settings(),
            window,
        )
    }

    fn settings() -> PlanSettings {
        PlanSettings {
            suspend: false,
            concurrency_policy: ConcurrencyPolicy::Allow,
            starting_deadline_seconds: None,
            missed_run_policy: MissedRunPolicy::RunLatest,
            jitter_offset: 0,
            window: None,
            too_many_failures: None,
        }
    }

    #[test]
    fn nothing_due_before_first_tick() {
        let p = hourly_idle(["2026-06-01T00:00:00Z", "2026-06-01T00:59:59Z"]);
        assert!(p.create.is_empty() && p.skips.is_empty());
        assert_eq!(p.next, Some(t("2026-06-01T01:00:00Z")));
    }

    #[test]
    fn on_time_tick_creates_named_run() {
        let p = hourly_idle(["2026-06-01T00:00:00Z", "2026-06-01T01:00:00.2Z"]);
        assert_eq!(
            p.create,
            vec![NewRun {
                name: "db-20260601010000".into(),
                scheduled_time: t("2026-06-01T01:00:00Z"),
                trigger: Trigger::Scheduled
            }]
        );
        assert_eq!(p.last_schedule_time, Some(t("2026-06-01T01:00:00Z")));
        assert_eq!(p.next, Some(t("2026-06-01T02:00:00Z")));
        assert!(p.skips.is_empty());
    }

    #[test]
    fn downtime_runs_latest_and_reports_missed() {
        let p = hourly_idle(["2026-06-01T00:00:00Z", "2026-06-01T05:10:00Z"]);
        assert_eq!(p.create.len(), 1);
        assert_eq!(p.create[0].scheduled_time, t("2026-06-01T05:00:00Z"));
        assert_eq!(p.skips.len(), 1);
        assert_eq!(
            (p.skips[0].reason, p.skips[0].count),
            (SkipReason::Missed, 4)
        );
        assert_eq!(p.skips[0].scheduled_time, t("2026-06-01T01:00:00Z"));
    }

    #[test]
    fn downtime_with_skip_policy_runs_nothing() {
        let s = Schedule::parse("0 * * * *", None).unwrap();
        let st = PlanSettings {
            missed_run_policy: MissedRunPolicy::Skip,
            ..settings()
        };
        let p = plan_idle(&s, &st, ["2026-06-01T00:00:00Z", "2026-06-01T05:10:00Z"]);
        assert!(p.create.is_empty());
        assert_eq!(p.skips.iter().map(|s| s.count).sum::<u32>(), 5);
        assert_eq!(p.last_skipped_time, Some(t("2026-06-01T05:00:00Z")));
        // On time (30 s late) still runs under Skip.
        let p = plan_idle(&s, &st, ["2026-06-01T04:00:00Z", "2026-06-01T05:00:30Z"]);
        assert_eq!(p.create.len(), 1);
    }

    #[test]
    fn starting_deadline() {
        let s = Schedule::parse("0 * * * *", None).unwrap();
        let st = PlanSettings {
            starting_deadline_seconds: Some(300),
            ..settings()
        };
        let p = plan_idle(&s, &st, ["2026-06-01T04:00:00Z", "2026-06-01T05:06:00Z"]);
        assert!(p.create.is_empty());
        assert_eq!(p.skips[0].reason, SkipReason::DeadlineExceeded);
        let p = plan_idle(&s, &st, ["2026-06-01T04:00:00Z", "2026-06-01T05:04:00Z"]);
        assert_eq!(p.create.len(), 1);
    }

    #[test]
    fn forbid_skips_while_active_replace_deletes() {
        let s = Schedule::parse("@every 1m", None).unwrap();
        // The first tick after the window start, with `runs` as they stand.
        let tick = |st: &PlanSettings, runs: &[RunRecord]| {
            plan_db(
                &s,
                st,
                ["2026-06-01T00:00:00Z", "2026-06-01T00:01:01Z"],
                runs,
                None,
            )
        };
        let runs = [run("db-a", "2026-06-01T00:00:00Z", RunState::Running)];
        let forbid = PlanSettings {
            concurrency_policy: ConcurrencyPolicy::Forbid,
            ..settings()
        };
        let p = tick(&forbid, &runs);
        assert!(p.create.is_empty());
        assert_eq!(p.skips[0].reason, SkipReason::ConcurrencyForbid);
        assert_eq!(p.last_skipped_time, Some(t("2026-06-01T00:01:00Z")));
        // @every chains from the window start.
        assert_eq!(p.next, Some(t("2026-06-01T00:02:00Z")));
        // A deferPhase still running counts as active.
        let mut deferring = run("db-a", "2026-06-01T00:00:00Z", RunState::Complete);
        deferring.defer_state = Some(RunState::Running);
        assert!(tick(&forbid, &[deferring]).create.is_empty());
        // Runs this schedule did not create do not count.
        let mut foreign = runs[0].clone();
        foreign.ours = false;
        assert_eq!(tick(&forbid, &[foreign]).create.len(), 1);
        let replace = PlanSettings {
            concurrency_policy: ConcurrencyPolicy::Replace,
            ..settings()
        };
        let p = tick(&replace, &runs);
        assert_eq!(p.replace, vec!["db-a".to_string()]);
        assert_eq!(p.create.len(), 1);
    }

    #[test]
    fn suspended_records_skips_and_run_now_still_works() {
        let s = Schedule::parse("*/10 * * * *", None).unwrap();
        let st = PlanSettings {
            suspend: true,
            ..settings()
        };
        let p = plan_db(
            &s,
            &st,
            ["2026-06-01T00:00:00Z", "2026-06-01T00:35:00Z"],
            &[],
            Some("tok-1"),
        );
        assert_eq!(p.skips.len(), 1);
        assert_eq!(
            (p.skips[0].reason, p.skips[0].count),
            (SkipReason::Suspended, 3)
        );
        assert_eq!(p.last_skipped_time, Some(t("2026-06-01T00:30:00Z")));
        assert_eq!(p.create.len(), 1);
        assert_eq!(p.create[0].trigger, Trigger::RunNow);
        assert_eq!(p.create[0].name, run_now_name("db", "tok-1"));
        assert_ne!(run_now_name("db", "tok-1"), run_now_name("db", "tok-2"));
    }

    #[test]
    fn dst_day_plans_in_zone() {
        // 02:30 Europe/Berlin does not exist on 2026-03-29: no run that day,
        // and it is not reported as missed either (there was no tick).
        let s = Schedule::parse("30 2 * * *", Some("Europe/Berlin")).unwrap();
        let st = settings();
        let p = plan_idle(&s, &st, ["2026-03-28T01:30:00Z", "2026-03-29T12:00:00Z"]);
        assert!(p.create.is_empty() && p.skips.is_empty());
        assert_eq!(p.next, Some(t("2026-03-30T00:30:00Z")));
        // Fall-back 2026-10-25: 02:30 happens twice; two distinct runs.
        let a = plan_idle(&s, &st, ["2026-10-24T00:30:00Z", "2026-10-25T00:30:05Z"]);
        let b = plan_idle(&s, &st, ["2026-10-25T00:30:00Z", "2026-10-25T01:30:05Z"]);
        assert_eq!(a.create[0].name, "db-20261025003000");
        assert_eq!(b.create[0].name, "db-20261025013000");
    }

    #[test]
    fn jitter_creates_the_nominal_tick_after_its_offset() {
        let s = Schedule::parse("0 2 * * *", None).unwrap();
        let st = PlanSettings {
            jitter_offset: 1381,
            ..settings()
        };
        let window = |now: &str| plan_db(&s, &st, ["2026-06-01T00:00:00Z", now], &[], None);
        // At the tick itself nothing yet; the next run is due at tick + offset.
        let p = window("2026-06-01T02:10:00Z");
        assert!(p.create.is_empty() && p.skips.is_empty(), "{p:?}");
        assert_eq!(p.next, Some(t("2026-06-01T02:23:01Z")));
        // After the offset: the run keeps the nominal tick's name and time.
        let p = window("2026-06-01T02:23:01Z");
        assert_eq!(p.create[0].name, "db-20260601020000");
        assert_eq!(p.create[0].scheduled_time, t("2026-06-01T02:00:00Z"));
        assert_eq!(p.last_schedule_time, Some(t("2026-06-01T02:00:00Z")));
        assert_eq!(p.next, Some(t("2026-06-02T02:23:01Z")));
        // The deadline counts from tick + offset: 200 s after it is within 300 s.
        let st = PlanSettings {
            starting_deadline_seconds: Some(300),
            ..st
        };
        let p = plan_idle(&s, &st, ["2026-06-01T00:00:00Z", "2026-06-01T02:26:21Z"]);
        assert_eq!(p.create.len(), 1, "{p:?}");
    }

    fn window(start: &str, end: &str, outside: crate::model::OutsideWindow) -> Option<Window> {
        Window::parse(&crate::model::RunWindow {
            start: start.into(),
            end: end.into(),
            days: None,
            outside,
        })
        .ok()
    }

    #[test]
    fn a_tick_outside_the_window_is_skipped_or_waits() {
        use crate::model::OutsideWindow::{Skip as Out, Wait};
        let s = Schedule::parse("0 * * * *", Some("Europe/Berlin")).unwrap();
        let skip = PlanSettings {
            window: window("01:00", "05:00", Out),
            ..settings()
        };
        // 06:00 CEST is outside: skipped, recorded so it is not planned again.
        let p = plan_idle(&s, &skip, ["2026-06-01T03:30:00Z", "2026-06-01T04:00:01Z"]);
        assert!(p.create.is_empty());
        assert_eq!(p.skips[0].reason, SkipReason::OutsideWindow);
        assert_eq!(p.last_skipped_time, Some(t("2026-06-01T04:00:00Z")));
        // 04:00 CEST is inside.
        let p = plan_idle(&s, &skip, ["2026-06-01T01:30:00Z", "2026-06-01T02:00:01Z"]);
        assert_eq!(p.create.len(), 1);
        let wait = PlanSettings {
            window: window("01:00", "05:00", Wait),
            jitter_offset: 60,
            ..settings()
        };
        // 06:00 CEST waits for 01:00 CEST the next day (+ the offset); nothing is recorded.
        let p = plan_idle(&s, &wait, ["2026-06-01T03:30:00Z", "2026-06-01T04:01:01Z"]);
        assert!(p.create.is_empty() && p.skips.is_empty(), "{p:?}");
        assert_eq!((p.last_schedule_time, p.last_skipped_time), (None, None));
        assert_eq!(p.next, Some(t("2026-06-01T23:01:00Z")));
        // When it opens: one run for the latest tick, named by it; the ticks passed while
        // waiting are folded into it, and it is not late.
        let st = PlanSettings {
            starting_deadline_seconds: Some(120),
            missed_run_policy: MissedRunPolicy::Skip,
            ..wait
        };
        let p = plan_idle(&s, &st, ["2026-06-01T03:30:00Z", "2026-06-01T23:01:30Z"]);
        assert_eq!(p.create.len(), 1, "{p:?}");
        assert_eq!(p.create[0].name, "db-20260601230000");
        assert_eq!(
            (p.skips[0].reason, p.skips[0].count),
            (SkipReason::OutsideWindow, 19)
        );
        // Opened long ago (the controller was down): the deadline applies from the opening.
        let p = plan_idle(&s, &st, ["2026-06-01T03:30:00Z", "2026-06-01T23:10:00Z"]);
        assert!(p.create.is_empty());
        assert!(
            p.skips
                .iter()
                .any(|k| k.reason == SkipReason::DeadlineExceeded)
        );
    }

    #[test]
    fn the_breaker_skips_ticks_until_closed_and_run_now_still_runs() {
        let s = Schedule::parse("*/10 * * * *", None).unwrap();
        let open = PlanSettings {
            too_many_failures: Some((3, 3)),
            window: window("01:00", "02:00", crate::model::OutsideWindow::Wait),
            ..settings()
        };
        let p = plan_db(
            &s,
            &open,
            ["2026-06-01T00:00:00Z", "2026-06-01T00:35:00Z"],
            &[],
            Some("tok"),
        );
        assert_eq!(
            (p.skips.len(), p.skips[0].reason, p.skips[0].count),
            (1, SkipReason::TooManyFailures, 3)
        );
        assert!(p.skips[0].message.contains("suspendAfterFailures: 3"));
        assert_eq!(p.last_skipped_time, Some(t("2026-06-01T00:30:00Z")));
        assert_eq!(p.create.len(), 1);
        assert_eq!(p.create[0].trigger, Trigger::RunNow);
        let closed = PlanSettings {
            too_many_failures: None,
            window: None,
            ..open
        };
        let p = plan_idle(
            &s,
            &closed,
            ["2026-06-01T00:30:00Z", "2026-06-01T00:40:01Z"],
        );
        assert_eq!(p.create[0].trigger, Trigger::Scheduled);
    }

    #[test]
    fn names_fit_63_chars_and_stay_distinct() {
        let long = "a".repeat(80);
        let n1 = run_name(&long, t("2026-06-01T00:00:00Z"));
        let n2 = run_name(&format!("{long}b"), t("2026-06-01T00:00:00Z"));
        assert!(n1.len() <= 63 && n2.len() <= 63, "{n1}");
        assert_ne!(n1, n2);
        assert!(n1.ends_with("-20260601000000"));
        assert!(delete_name(&n1).len() <= 63);
        assert!(schedule_label_value(&long).len() <= 63);
        assert_eq!(schedule_label_value("db"), "db");
    }

    #[test]
    fn summary_counts_failures_since_last_success() {
        let runs = [
            run("a", "2026-06-01T00:00:00Z", RunState::Complete),
            run("b", "2026-06-01T01:00:00Z", RunState::Failed),
            run("c", "2026-06-01T02:00:00Z", RunState::Failed),
            run("d", "2026-06-01T03:00:00Z", RunState::Running),
        ];
        let s = summarize(&runs, &Counted::default());
        assert_eq!(s.consecutive_failures, 2);
        assert_eq!(s.last_failed, Some(t("2026-06-01T02:00:00Z")));
        assert_eq!(s.last_successful, Some(t("2026-06-01T00:00:00Z")));
        assert_eq!(s.active.len(), 1);
    }

    /// keepFailed 1: each reconcile sees only the newest failed run, yet the count goes on.
    #[test]
    fn failures_rotated_away_still_count_until_a_run_succeeds() {
        let ok = run("a", "2026-06-01T00:00:00Z", RunState::Complete);
        let mut counted = Counted::default();
        let mut seen = Vec::new();
        for (name, at, state) in [
            ("b", "2026-06-01T01:00:00Z", RunState::Failed),
            ("c", "2026-06-01T02:00:00Z", RunState::Failed),
            ("c", "2026-06-01T02:00:00Z", RunState::Failed), // a reconcile with nothing new
            ("d", "2026-06-01T03:00:00Z", RunState::Failed),
            ("e", "2026-06-01T04:00:00Z", RunState::Complete),
            ("f", "2026-06-01T05:00:00Z", RunState::Failed),
        ] {
            let newest_ok = if state == RunState::Complete {
                run(name, at, state)
            } else {
                ok.clone()
            };
            let runs = [newest_ok, run(name, at, state)];
            let s = summarize(&runs, &counted);
            counted = Counted {
                consecutive_failures: s.consecutive_failures,
                last_failed: s.last_failed,
                last_successful: s.last_successful,
            };
            seen.push(s.consecutive_failures);
        }
        assert_eq!(seen, [1, 2, 2, 3, 0, 1]);
        // The count stays when the failed runs are deleted and nothing runs.
        let s = summarize(&[], &counted);
        assert_eq!(s.consecutive_failures, 1);
        assert_eq!(s.last_successful, Some(t("2026-06-01T04:00:00Z")));
    }
}
