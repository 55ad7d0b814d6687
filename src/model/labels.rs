//! The label, annotation and finalizer contract: every `blueprint-operator.io/...` key (and
//! Kanister's `createdBy` pod label) this operator reads or writes on objects, in one place.
//! Users select on some of them (`-l blueprint-operator.io/schedule=nightly`), so their values
//! never change.

// ---------------------------------------------------------------- ActionSets

/// Label that opts an ActionSet in to this executor (value [`EXECUTOR_LABEL_VALUE`]);
/// ActionSchedule runs carry it. Beside Kanister's own controller, only ActionSets that carry
/// it (or live in a namespace the controller was told to run) are run.
pub const LABEL_EXECUTOR: &str = "blueprint-operator.io/executor";
pub const EXECUTOR_LABEL_VALUE: &str = "blueprint-operator";

/// Finalizer held while an ActionSet runs, so that deleting it still lets the deferPhase run
/// (bounded by the controller's deletion timeout).
pub const FINALIZER_DEFER_PHASE: &str = "blueprint-operator.io/defer-phase";

/// ActionSet annotation holding the executor's record (JSON). Kanister's status schema prunes
/// unknown fields, so what the status cannot hold lives here.
pub const ANNOTATION_EXECUTOR_RECORD: &str = "blueprint-operator.io/executor";

/// ActionSet annotation: the ActionSet was claimed for this executor before any controller saw
/// it (`admission`, `schedule` or `ctl`: who claimed it). A claimed ActionSet is created
/// `running` so that Kanister's controller never starts it (`executor::claim`).
pub const ANNOTATION_CLAIMED: &str = "blueprint-operator.io/claimed";

/// Key in a failed step's `output` under which the executor keeps the last lines of the logs
/// of the pods it ran (`executor::pod_logs`): `{"<namespace>/<pod>": {"<container>": "<lines>"}}`.
pub const OUTPUT_POD_LOGS: &str = "blueprint-operator.io/podLogs";

/// Annotation on an ActionSet made by `ctl create --from`: the run it restores from (nothing
/// acts on it; `ctl describe` shows it).
pub const ANNOTATION_RESTORED_FROM: &str = "blueprint-operator.io/restored-from";
/// ActionSet annotation, `"true"`: its actions never run beside another ActionSet's on the
/// same object (`kind/namespace/name`); the later one waits
/// (`executor::exclusive`). ActionSchedules ask with `spec.exclusive`, and their runs carry it.
pub const ANNOTATION_EXCLUSIVE: &str = "blueprint-operator.io/exclusive";
/// ActionSet annotation, a Go duration: an exclusive wait longer than this (since the
/// ActionSet's creation) fails the ActionSet, naming the run it waited for.
pub const ANNOTATION_EXCLUSIVE_WAIT_TIMEOUT: &str = "blueprint-operator.io/exclusive-wait-timeout";
/// ActionSet annotation the executor writes while the ActionSet waits (state `pending`):
/// `<namespace>/<name>` of the ActionSet it waits for; removed when it starts.
pub const ANNOTATION_WAITING_FOR: &str = "blueprint-operator.io/waiting-for";

// ---------------------------------------------------------------- Blueprints

/// Blueprint annotation: comma-separated names of phases (main or defer, of any action) that
/// are safe to run again after a controller restart.
pub const ANNOTATION_RERUN_ON_RESTART: &str = "blueprint-operator.io/rerun-on-restart";

/// The phase names of an [`ANNOTATION_RERUN_ON_RESTART`] value: `a, b,,c` → `[a, b, c]`.
pub fn parse_rerun_on_restart(text: &str) -> Vec<String> {
    text.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

/// Blueprint annotation with per-phase timeouts:
/// `{"<action>": {"<phase or deferPhase name>": "<Go duration>"}}`.
pub const ANNOTATION_PHASE_TIMEOUTS: &str = "blueprint-operator.io/phase-timeouts";

// ---------------------------------------------------------------- ActionSchedules

/// Label on every ActionSet an ActionSchedule created: the schedule's name.
pub const LABEL_SCHEDULE: &str = "blueprint-operator.io/schedule";
/// Label: `scheduled`, `run-now`, `delete` (a retention delete action), `verify` (a restore
/// verification) or `verify-check` (its check action).
pub const LABEL_TRIGGER: &str = "blueprint-operator.io/trigger";
/// Label on a delete-action ActionSet: the name of the run whose artifacts it deletes.
pub const LABEL_DELETE_FOR: &str = "blueprint-operator.io/delete-for";
/// Label on a verification ActionSet (`spec.verify`; trigger `verify`, or `verify-check` for
/// the check action): the name of the backup run whose artifacts it restores.
pub const LABEL_VERIFY_FOR: &str = "blueprint-operator.io/verify-for";
/// Label on a backup run once its verification ended: `"true"` (restored, and the check
/// action passed) or `"false"`.
pub const LABEL_VERIFIED: &str = "blueprint-operator.io/verified";
/// Annotation beside [`LABEL_VERIFIED`]: when the outcome was recorded (RFC 3339, UTC).
pub const ANNOTATION_VERIFIED_TIME: &str = "blueprint-operator.io/verified-time";
/// Annotation beside [`LABEL_VERIFIED`]: the verification ActionSet that decided it.
pub const ANNOTATION_VERIFIED_BY: &str = "blueprint-operator.io/verified-by";
/// Annotation on created ActionSets: the nominal scheduled time (RFC 3339, UTC).
pub const ANNOTATION_SCHEDULED_TIME: &str = "blueprint-operator.io/scheduled-time";
/// Annotation on an ActionSchedule: set it to any new token to start a run now.
pub const ANNOTATION_RUN_NOW: &str = "blueprint-operator.io/run-now";
/// Annotation on created ActionSets: the full name of the schedule that created
/// them. With [`LABEL_SCHEDULE`] it is how a schedule finds its runs: they
/// carry no ownerReference to it, so deleting the schedule does not delete them.
pub const ANNOTATION_SCHEDULE: &str = "blueprint-operator.io/schedule-name";
/// Finalizer on an ActionSchedule with `retention.onDelete: Delete`: its runs'
/// backups are deleted before the schedule goes.
pub const FINALIZER_DELETE_RUNS: &str = "blueprint-operator.io/delete-runs";

// ---------------------------------------------------------------- pods a phase creates

/// Label Kanister puts on the pods it creates; ours carry it too.
pub const LABEL_CREATED_BY: (&str, &str) = ("createdBy", "kanister");
/// Label: the UID of the ActionSet whose phase created the pod.
pub const LABEL_ACTIONSET_UID: &str = "blueprint-operator.io/actionset-uid";
/// Label: the namespace of that ActionSet (the sweeper's scope with `--namespace`).
pub const LABEL_ACTIONSET_NAMESPACE: &str = "blueprint-operator.io/actionset-namespace";
/// Annotation: `<namespace>/<name>` of that ActionSet (too long for a label value).
pub const ANNOTATION_ACTIONSET: &str = "blueprint-operator.io/actionset";
/// Label: the step of the ActionSet that created the pod, `<action index>.<phase index>`
/// or `<action index>.defer` ([`phase_key`]).
pub const LABEL_PHASE: &str = "blueprint-operator.io/phase";

/// The value of [`LABEL_PHASE`] for main phase `phase` (`None`: the deferPhase) of action
/// `action` (indexes in the ActionSet's status, which never reorders).
pub fn phase_key(action: usize, phase: Option<usize>) -> String {
    match phase {
        Some(p) => format!("{action}.{p}"),
        None => format!("{action}.defer"),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn phase_keys_name_the_action_and_the_step() {
        assert_eq!(super::phase_key(0, Some(2)), "0.2");
        assert_eq!(super::phase_key(1, None), "1.defer");
    }
}
