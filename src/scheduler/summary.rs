//! What the scheduler keeps of an ActionSet labelled with a schedule: what planning,
//! retention and verification read ([`RunRecord`]), and what deleting it or recording an
//! outcome on it needs. Not its spec nor the rest of its status: the few steps that need
//! those (a delete action, a verification) read the ActionSet afresh
//! ([`super::read::actionset`]), so the scheduler does not hold a second copy of every
//! ActionSet beside the executor's.

use chrono::{DateTime, Utc};
use kube::ResourceExt;

use super::identity;
use super::plan::{RunRecord, RunState, Trigger};
use super::status::from_time;
use super::verify::Verified;
use crate::model::{
    ANNOTATION_SCHEDULED_TIME, ActionSet, LABEL_DELETE_FOR, LABEL_TRIGGER, LABEL_VERIFY_FOR, State,
};

/// One ActionSet labelled with a schedule, as the scheduler keeps it.
#[derive(Clone, Debug, PartialEq)]
pub struct RunSummary {
    /// Its record, `ours` false: [`RunSummary::record`] sets it for the schedule asking.
    record: RunRecord,
    /// The schedule whose run it is by label and annotation (see [`identity`]).
    owner: Option<String>,
    /// Deletes are made only over this object (a precondition).
    pub uid: Option<String>,
    /// An outcome is recorded only over the version read.
    pub resource_version: Option<String>,
    /// `status.error.message`, when not empty: why a verification failed.
    pub error: Option<String>,
}

impl RunSummary {
    pub fn of(a: &ActionSet) -> RunSummary {
        let owner = identity::schedule_of(&a.metadata)
            .filter(|s| identity::is_run_of(&a.metadata, s))
            .map(str::to_string);
        RunSummary {
            record: record_of(a),
            owner,
            uid: a.uid(),
            resource_version: a.resource_version(),
            error: a
                .status
                .as_ref()
                .map(|s| s.error.message.clone())
                .filter(|m| !m.is_empty()),
        }
    }

    pub fn name(&self) -> &str {
        &self.record.name
    }

    /// The scheduler's view of it for the schedule named `schedule`.
    pub fn record(&self, schedule: &str) -> RunRecord {
        RunRecord {
            ours: self.owner.as_deref() == Some(schedule),
            ..self.record.clone()
        }
    }
}

/// Anything not running, complete or failed (no status yet, pending, or a
/// run waiting for its turn) is `Pending`: active, so never rotated (see
/// [`retention`](super::retention)).
fn run_state(s: Option<State>) -> RunState {
    match s {
        Some(State::Running) => RunState::Running,
        Some(State::Failed) => RunState::Failed,
        Some(State::Complete) => RunState::Complete,
        _ => RunState::Pending,
    }
}

/// The record of `a`, not ours to any schedule yet.
fn record_of(a: &ActionSet) -> RunRecord {
    let scheduled_time = a
        .annotations()
        .get(ANNOTATION_SCHEDULED_TIME)
        .and_then(|s| DateTime::parse_from_rfc3339(s).ok())
        .map(|d| d.with_timezone(&Utc))
        .or_else(|| a.metadata.creation_timestamp.as_ref().and_then(from_time))
        .unwrap_or_default();
    let defers: Vec<State> = a
        .status
        .iter()
        .flat_map(|s| s.actions.iter())
        .filter(|x| !x.defer_phase.name.is_empty() && x.defer_phase.state != State::Unset)
        .map(|x| x.defer_phase.state)
        .collect();
    let defer_state = if defers.contains(&State::Running) {
        Some(RunState::Running)
    } else if defers.contains(&State::Pending) {
        Some(RunState::Pending)
    } else if defers.contains(&State::Failed) {
        Some(RunState::Failed)
    } else if defers.is_empty() {
        None
    } else {
        Some(RunState::Complete)
    };
    RunRecord {
        name: a.name_any(),
        scheduled_time,
        state: run_state(a.state()),
        defer_state,
        trigger: Trigger::parse(
            a.labels()
                .get(LABEL_TRIGGER)
                .map(String::as_str)
                .unwrap_or(""),
        ),
        ours: false,
        delete_for: a.labels().get(LABEL_DELETE_FOR).cloned(),
        verify_for: a.labels().get(LABEL_VERIFY_FOR).cloned(),
        verified: Verified::from_meta(&a.metadata),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{ANNOTATION_SCHEDULE, LABEL_SCHEDULE};
    use crate::scheduler::plan::schedule_label_value;
    use serde_json::{Value, json};

    fn actionset(v: Value) -> ActionSet {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn keeps_what_deleting_and_verifying_need() {
        let a = actionset(json!({
            "metadata": {"name": "db-1", "uid": "u1", "resourceVersion": "7",
                "labels": {LABEL_SCHEDULE: "db", LABEL_TRIGGER: "verify", LABEL_VERIFY_FOR: "db-0"},
                "annotations": {ANNOTATION_SCHEDULE: "db"}},
            "spec": {"actions": [{"name": "restore", "blueprint": "bp"}]},
            "status": {"state": "failed", "error": {"message": "restore failed"}},
        }));
        let s = RunSummary::of(&a);
        assert_eq!(s.name(), "db-1");
        assert_eq!(s.uid.as_deref(), Some("u1"));
        assert_eq!(s.resource_version.as_deref(), Some("7"));
        assert_eq!(s.error.as_deref(), Some("restore failed"));
        let r = s.record("db");
        assert_eq!((r.state, r.trigger), (RunState::Failed, Trigger::Verify));
        assert_eq!(r.verify_for.as_deref(), Some("db-0"));
        // No status error: none kept.
        let b = actionset(json!({"metadata": {"name": "x"}, "status": {"state": "complete"}}));
        assert_eq!(RunSummary::of(&b).error, None);
    }

    #[test]
    fn ours_only_for_the_schedule_its_label_and_annotation_both_name() {
        let long = "a".repeat(70);
        let run = |label: &str, annotation: &str| {
            RunSummary::of(&actionset(json!({"metadata": {"name": "r",
                "labels": {LABEL_SCHEDULE: label},
                "annotations": {ANNOTATION_SCHEDULE: annotation}}})))
        };
        let r = run("db", "db");
        assert!(r.record("db").ours);
        assert!(!r.record("other").ours);
        assert!(!run("db", "other").record("other").ours, "label of another");
        assert!(
            !run("db", "other").record("db").ours,
            "annotation of another"
        );
        let hashed = schedule_label_value(&long);
        assert_ne!(hashed, long, "a long name is hashed for its label");
        assert!(run(&hashed, &long).record(&long).ours);
        let unlabelled = RunSummary::of(&actionset(json!({"metadata": {"name": "r",
            "annotations": {ANNOTATION_SCHEDULE: "db"}}})));
        assert!(!unlabelled.record("db").ours);
    }
}
