//! Pure decisions for deleting a schedule with `retention.onDelete: Delete`.
//!
//! The rule, bounded so that no run holds the schedule forever: every finished
//! run is removed the way rotation removes it (a complete one through
//! `deleteAction` when set, then its ActionSet; a failed one at once). A run
//! whose delete action failed is kept at once. Pending or running runs, and
//! delete actions still in progress, are waited for until `timeout` after the
//! deletion was requested; then whatever is not done is kept, nothing new is
//! started, and the schedule goes. Kept runs stay labelled with the schedule:
//! a schedule re-created under the same name adopts them.

use std::time::Duration;

use chrono::{DateTime, Utc};

use super::plan::{RunRecord, RunState, Trigger};

/// What one pass over a deleting schedule's runs does.
#[derive(Debug, Clone, PartialEq)]
pub struct Pass {
    /// Finished runs to remove (oldest first).
    pub remove: Vec<RunRecord>,
    /// Runs still pending or running (or whose deferPhase is).
    pub active: Vec<RunRecord>,
    /// The time limit has passed: start no delete action, keep what is not done.
    pub expired: bool,
    /// When the time limit passes.
    pub deadline: DateTime<Utc>,
}

pub fn select(
    runs: &[RunRecord],
    deletion_requested: DateTime<Utc>,
    now: DateTime<Utc>,
    timeout: Duration,
) -> Pass {
    let deadline = chrono::Duration::from_std(timeout)
        .ok()
        .and_then(|t| deletion_requested.checked_add_signed(t))
        .unwrap_or(DateTime::<Utc>::MAX_UTC);
    let mut mine: Vec<&RunRecord> = runs
        .iter()
        .filter(|r| r.ours && r.trigger != Trigger::Delete)
        .collect();
    mine.sort_by(|a, b| (a.scheduled_time, &a.name).cmp(&(b.scheduled_time, &b.name)));
    let (active, remove): (Vec<&RunRecord>, Vec<&RunRecord>) =
        mine.into_iter().partition(|r| r.is_active());
    Pass {
        remove: remove.into_iter().cloned().collect(),
        active: active.into_iter().cloned().collect(),
        expired: now >= deadline,
        deadline,
    }
}

/// Why a run stays after its schedule is deleted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Kept {
    /// Its delete action (this ActionSet) failed.
    DeleteActionFailed(String),
    /// Its delete action (this ActionSet) had not ended at the time limit.
    DeleteActionUnfinished(String),
    /// The run itself had not ended at the time limit.
    StillActive(RunState),
    /// The time limit passed before its delete action could be started.
    NotStarted,
}

impl Kept {
    pub fn describe(&self) -> String {
        match self {
            Kept::DeleteActionFailed(d) => format!("delete action {d} failed"),
            Kept::DeleteActionUnfinished(d) => {
                format!("delete action {d} had not ended at the time limit")
            }
            Kept::StillActive(s) => format!("still {} at the time limit", s.as_str()),
            Kept::NotStarted => "time limit passed before its delete action started".into(),
        }
    }
}

/// The note of the Event (and condition) that lists the kept runs.
pub fn kept_message(schedule: &str, label: &str, kept: &[(String, Kept)]) -> String {
    let list: Vec<String> = kept
        .iter()
        .map(|(n, why)| format!("{n} ({})", why.describe()))
        .collect();
    format!(
        "{} run(s) kept after deleting schedule {schedule}: {}. They stay labelled \
         blueprint-operator.io/schedule={label}; re-create the schedule to adopt them \
         (rotation retries them), or delete them and their data by hand.",
        kept.len(),
        list.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scheduler::plan::fixtures::{run, t};

    #[test]
    fn finished_runs_are_removed_active_ones_waited_for() {
        let mut deferring = run("c", "2026-06-01T02:00:00Z", RunState::Complete);
        deferring.defer_state = Some(RunState::Running);
        let mut foreign = run("f", "2026-06-01T00:30:00Z", RunState::Complete);
        foreign.ours = false;
        let mut delete = run("a-delete", "2026-06-01T05:00:00Z", RunState::Running);
        delete.trigger = Trigger::Delete;
        delete.delete_for = Some("a".into());
        let runs = [
            run("b", "2026-06-01T01:00:00Z", RunState::Failed),
            run("a", "2026-06-01T00:00:00Z", RunState::Complete),
            deferring,
            run("d", "2026-06-01T03:00:00Z", RunState::Pending),
            foreign,
            delete,
        ];
        let since = t("2026-06-02T00:00:00Z");
        let p = select(&runs, since, since, Duration::from_secs(3600));
        let names = |v: &[RunRecord]| v.iter().map(|r| r.name.clone()).collect::<Vec<_>>();
        assert_eq!(names(&p.remove), vec!["a", "b"], "oldest first, only ours");
        assert_eq!(names(&p.active), vec!["c", "d"]);
        assert!(!p.expired);
        assert_eq!(p.deadline, t("2026-06-02T01:00:00Z"));
    }

    #[test]
    fn the_time_limit_bounds_the_wait() {
        let runs = [run("d", "2026-06-01T03:00:00Z", RunState::Running)];
        let since = t("2026-06-02T00:00:00Z");
        let limit = Duration::from_secs(600);
        assert!(!select(&runs, since, t("2026-06-02T00:09:59Z"), limit).expired);
        assert!(select(&runs, since, t("2026-06-02T00:10:00Z"), limit).expired);
        // A huge limit does not overflow.
        assert!(!select(&runs, since, since, Duration::MAX).expired);
    }

    #[test]
    fn kept_message_names_each_run_and_the_way_out() {
        let m = kept_message(
            "db",
            "db",
            &[
                (
                    "db-1".into(),
                    Kept::DeleteActionFailed("db-1-delete".into()),
                ),
                ("db-2".into(), Kept::StillActive(RunState::Running)),
            ],
        );
        assert!(
            m.starts_with("2 run(s) kept after deleting schedule db"),
            "{m}"
        );
        assert!(m.contains("db-1 (delete action db-1-delete failed)"), "{m}");
        assert!(m.contains("db-2 (still running at the time limit)"), "{m}");
        assert!(m.contains("re-create the schedule"), "{m}");
    }
}
