//! `ActionSchedule` (`blueprint-operator.io/v1alpha1`): Kanister ActionSets on
//! a cron schedule, with rotation of finished runs.
//!
//! The controller lives in `crate::scheduler`; this file is only the API type.
//! `manifests/crds/actionschedule.yaml` is generated from it ([`crd_yaml`]).

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use kube::CustomResource;
use kube::CustomResourceExt;
use schemars::JsonSchema;
use schemars::transform::RecursiveTransform;
use serde::{Deserialize, Serialize};

use super::{ActionSetSpec, ObjectReference};

pub const SCHEDULE_GROUP: &str = "blueprint-operator.io";

/// An ActionSchedule creates an ActionSet from `actionSetTemplate` at every
/// tick of `schedule` (Kubernetes CronJob syntax) and rotates finished ones
/// according to `retention`.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[kube(
    group = "blueprint-operator.io",
    version = "v1alpha1",
    kind = "ActionSchedule",
    plural = "actionschedules",
    shortname = "asched",
    namespaced,
    status = "ActionScheduleStatus",
    printcolumn = r#"{"name": "Schedule", "type": "string", "jsonPath": ".spec.schedule"}"#,
    printcolumn = r#"{"name": "TimeZone", "type": "string", "jsonPath": ".spec.timeZone", "priority": 1}"#,
    printcolumn = r#"{"name": "Suspend", "type": "boolean", "jsonPath": ".spec.suspend"}"#,
    printcolumn = r#"{"name": "Active", "type": "integer", "jsonPath": ".status.activeCount"}"#,
    printcolumn = r#"{"name": "Last Schedule", "type": "date", "jsonPath": ".status.lastScheduleTime"}"#,
    // A future time as an age prints "<invalid>": show the timestamp.
    printcolumn = r#"{"name": "Next", "type": "string", "jsonPath": ".status.nextScheduleTime"}"#,
    printcolumn = r#"{"name": "Failures", "type": "integer", "jsonPath": ".status.consecutiveFailures"}"#,
    printcolumn = r#"{"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
#[schemars(transform = RecursiveTransform(unsigned_as_int64))]
pub struct ActionScheduleSpec {
    /// Kubernetes CronJob syntax: 5 fields (`minute hour day-of-month month
    /// day-of-week`), or `@yearly`, `@monthly`, `@weekly`, `@daily`,
    /// `@hourly`, `@every <duration>`.
    pub schedule: String,
    /// IANA time zone the schedule is evaluated in (default UTC). On a
    /// spring-forward day a wall time inside the gap does not run; on a
    /// fall-back day a wall time in the repeated hour runs twice (as CronJob).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_zone: Option<String>,
    /// Stop creating scheduled runs (running ones continue; ticks are
    /// recorded as skipped, so resuming does not start a run at once).
    #[serde(default)]
    pub suspend: bool,
    /// What to do when a tick comes while an earlier run is still active.
    #[serde(default)]
    pub concurrency_policy: ConcurrencyPolicy,
    /// A tick that cannot be started within this many seconds is not started
    /// (it is recorded as missed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub starting_deadline_seconds: Option<i64>,
    /// What to do with ticks that passed while the controller was not running.
    #[serde(default)]
    pub missed_run_policy: MissedRunPolicy,
    /// Runs never overlap with another ActionSet on the same object (an action's
    /// `kind/namespace/name`): a run waits (`pending`) while one runs, and ActionSets
    /// created after it wait for it. Each run gets the annotation
    /// `blueprint-operator.io/exclusive: "true"`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub exclusive: bool,
    /// With `exclusive`: a run that has not started this long (Go duration, e.g. `2h`) after
    /// its creation fails, naming the run it waited for. Default: it waits as long as it
    /// takes. Runs get it as the annotation `blueprint-operator.io/exclusive-wait-timeout`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exclusive_wait_timeout: Option<String>,
    /// Spread the runs of schedules that share a cron line: each run is created this long
    /// (Go duration, e.g. `30m`) at most after its tick, by an offset stable for the schedule
    /// (a hash of `namespace/name`). Run names and `scheduledTime` stay the nominal tick;
    /// `status.nextScheduleTime` includes the offset. Must be shorter than the schedule's
    /// shortest interval.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jitter: Option<String>,
    /// When runs may start: ticks outside this daily or weekly time range (in `timeZone`) are
    /// skipped or wait for its start (`outside`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window: Option<RunWindow>,
    /// Stop creating scheduled runs after this many consecutive failed runs (ticks are
    /// recorded as skipped, `TooManyFailures`) until a run completes or the limit is raised
    /// or removed. `run-now` still runs. Default: never.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub suspend_after_failures: Option<u32>,
    /// The `spec` of the ActionSets to create (Kanister's ActionSetSpec).
    #[schemars(schema_with = "preserve_unknown_object")]
    pub action_set_template: ActionSetSpec,
    /// Rotation of finished runs.
    #[serde(default)]
    pub retention: Retention,
    /// Prove backups by restoring them: a complete run counts as verified once a verification
    /// run restored its artifacts into a scratch target (and the check action, if any, passed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verify: Option<Verify>,
}

/// Restore verification of a schedule's complete runs. The verification run is an ActionSet
/// like the backup's (same profile, options, secrets and configMaps) whose action is `action`
/// on `object`, with the backup run's output artifacts as its input artifacts.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Verify {
    /// Verify every Nth complete run (1: each one). Default 1 unless `schedule` is set;
    /// not both.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub every: Option<u32>,
    /// Verify on this cron line instead (in `timeZone`): each tick verifies the newest
    /// complete run not yet verified.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schedule: Option<String>,
    /// The Blueprint action that restores a backup (typically `restore`).
    pub action: String,
    /// A Blueprint action run on the same target after `action` completes, that fails when
    /// the restored data is wrong (e.g. counts rows).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub check_action: Option<String>,
    /// The scratch target the backup is restored into (Kanister's ObjectReference: `kind`,
    /// `name`, `namespace`); never the backup's own object.
    #[schemars(schema_with = "object_reference")]
    pub object: ObjectReference,
    /// The Blueprint of both actions; default the backup template's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blueprint: Option<String>,
}

#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, JsonSchema)]
pub enum ConcurrencyPolicy {
    /// Start runs even when earlier ones are active.
    #[default]
    Allow,
    /// Skip a tick while a run is active (the tick is recorded as skipped and
    /// not started later).
    Forbid,
    /// Delete the active runs, then start the new one.
    Replace,
}

/// A daily (or, with `days`, weekly) time range in the schedule's time zone. `start` is
/// inclusive, `end` exclusive; `end` before `start` crosses midnight (`22:00`-`04:00`), and
/// such a window belongs to the day it starts on.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RunWindow {
    /// Wall-clock `HH:MM`.
    pub start: String,
    /// Wall-clock `HH:MM`; not equal to `start`.
    pub end: String,
    /// Days the window opens on (`Mon` ... `Sun`); default every day.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub days: Option<Vec<WindowDay>>,
    /// What a tick outside the window does.
    #[serde(default)]
    pub outside: OutsideWindow,
}

#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, JsonSchema)]
pub enum WindowDay {
    Mon,
    Tue,
    Wed,
    Thu,
    Fri,
    Sat,
    Sun,
}

#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, JsonSchema)]
pub enum OutsideWindow {
    /// The tick is recorded as skipped (`OutsideWindow`).
    #[default]
    Skip,
    /// The tick's run is created when the window next opens (still one run per tick, named
    /// by the tick); ticks that pass meanwhile are folded into the latest one.
    Wait,
}

#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, JsonSchema)]
pub enum MissedRunPolicy {
    /// Start one run for the latest missed tick (if within
    /// `startingDeadlineSeconds`); earlier ticks are recorded as missed.
    /// This is what CronJob does.
    #[default]
    RunLatest,
    /// Do not make up missed ticks: a tick more than 60 s old (or older than
    /// `startingDeadlineSeconds`, if smaller) when the controller sees it is
    /// recorded as missed.
    Skip,
}

/// Rotation. Complete runs are kept when any rule keeps them (restic forget
/// rules, buckets evaluated in the schedule's time zone); failed runs only by
/// `keepFailed`. Never rotated: runs that are pending or running (or whose
/// deferPhase is), the newest complete run, and ActionSets this schedule did
/// not create. `onDelete` says what happens to the runs when the schedule
/// itself is deleted.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Retention {
    /// Keep the newest N complete runs (default 3).
    #[serde(default = "default_keep_last")]
    pub keep_last: u32,
    /// Keep the newest N failed runs (default 2).
    #[serde(default = "default_keep_failed")]
    pub keep_failed: u32,
    /// Keep the newest complete run of each of the last N hours that have one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub keep_hourly: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub keep_daily: Option<u32>,
    /// ISO weeks (Monday to Sunday).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub keep_weekly: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub keep_monthly: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub keep_yearly: Option<u32>,
    /// A Blueprint action run with a rotated complete run's artifacts before
    /// its ActionSet is removed; the run is removed only once that delete
    /// ActionSet is `complete`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delete_action: Option<String>,
    /// The kind of object `deleteAction` runs on. `Namespace`: the namespace
    /// of the run's object, as `kanctl create actionset --namespacetargets`
    /// gives it (the corpus' delete actions render `{{ .Namespace.Name }}`);
    /// the kind of the run's object: that object. Unset: the `kind` the
    /// Blueprint's delete action declares, else the run's object.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delete_action_kind: Option<String>,
    /// Keep the newest N verified complete runs (`spec.verify`). Whatever the other rules
    /// say, the newest verified run is never rotated, and unverified runs older than it go
    /// first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub keep_verified: Option<u32>,
    /// What deleting the schedule does to its runs: `Retain` (default) keeps
    /// them; `Delete` runs `deleteAction` for each complete run and removes
    /// the runs whose delete succeeded before the schedule goes.
    #[serde(default)]
    pub on_delete: OnDelete,
}

/// What deleting an ActionSchedule does to the ActionSets it created.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, JsonSchema)]
pub enum OnDelete {
    /// Keep every run (and so the records of the backups): they stay
    /// labelled with the schedule, and a schedule re-created under the same
    /// name adopts them.
    #[default]
    Retain,
    /// Before the schedule goes (a finalizer holds it): run `deleteAction`
    /// for each complete run, then remove the runs whose delete action
    /// completed and the failed ones; keep (with an Event) those whose delete
    /// action failed or did not end within the controller's limit.
    Delete,
}

fn default_keep_last() -> u32 {
    3
}
fn default_keep_failed() -> u32 {
    2
}

impl Default for Retention {
    fn default() -> Self {
        Retention {
            keep_last: default_keep_last(),
            keep_failed: default_keep_failed(),
            keep_hourly: None,
            keep_daily: None,
            keep_weekly: None,
            keep_monthly: None,
            keep_yearly: None,
            keep_verified: None,
            delete_action: None,
            delete_action_kind: None,
            on_delete: OnDelete::Retain,
        }
    }
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(transform = RecursiveTransform(unsigned_as_int64))]
pub struct ActionScheduleStatus {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// Nominal time of the latest tick that created a run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_schedule_time: Option<Time>,
    /// Nominal time of the latest tick deliberately not run (suspended,
    /// forbidden, missed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_skipped_time: Option<Time>,
    /// Nominal time of the newest run that reached `complete`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_successful_time: Option<Time>,
    /// When the next run is created: the next tick plus the jitter offset (or, for a tick
    /// waiting for the window, the window's start plus the offset), also while suspended (that
    /// tick is then recorded as a skip); absent when the schedule is invalid or has no further
    /// tick.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_schedule_time: Option<Time>,
    /// Runs of this schedule that are pending or running.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub active: Vec<RunReference>,
    #[serde(default)]
    pub active_count: u32,
    /// Failed runs since the newest complete one, those rotated away included.
    #[serde(default)]
    pub consecutive_failures: u32,
    /// Nominal time of the newest run that failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_failed_time: Option<Time>,
    /// Ticks not started because they were missed (controller down, deadline).
    #[serde(default)]
    pub missed_runs: u64,
    /// Ticks not started by decision (suspend, Forbid).
    #[serde(default)]
    pub skipped_runs: u64,
    /// The latest ticks that were missed or skipped, newest first (at most 10).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub recent_skips: Vec<SkippedRun>,
    /// When the newest verification that passed ended (`spec.verify`): its outcome was
    /// recorded on the backup run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_verified_time: Option<Time>,
    /// The backup run the newest passing verification proved.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_verified_run: Option<String>,
    /// Verifications failed since the newest one that passed (those of runs rotated away
    /// included).
    #[serde(default)]
    pub consecutive_verification_failures: u32,
    /// When the newest failed verification was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_verification_failure_time: Option<Time>,
    /// The last `run-now` token handled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_run_now_token: Option<String>,
    /// Rotation in progress and what the next rotation would remove.
    #[serde(default)]
    pub retention: RetentionStatus,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RunReference {
    pub name: String,
    /// RFC 3339.
    pub scheduled_time: String,
    pub state: String,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SkippedRun {
    /// RFC 3339 nominal time of the (latest) tick.
    pub scheduled_time: String,
    /// `Missed`, `DeadlineExceeded`, `Suspended`, `ConcurrencyForbid`, `OutsideWindow`,
    /// `TooManyFailures`.
    pub reason: String,
    /// How many ticks this entry stands for (several missed ticks are one entry).
    pub count: u32,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RetentionStatus {
    /// Runs selected for removal now, with their state of progress.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub removing: Vec<RotationEntry>,
    /// What would be removed once the next run completes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub next_rotation: Vec<RotationEntry>,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RotationEntry {
    pub name: String,
    pub reason: String,
    /// For `removing`: `Deleting`, `WaitingForDeleteAction`, `DeleteActionFailed`,
    /// `WaitingForRun` (a deleted schedule waits for a run to end).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub progress: Option<String>,
}

/// The API server knows the integer formats `int32` and `int64` only and warns about
/// schemars' `uint32`/`uint64`: unsigned integers become `int64`, keeping schemars'
/// `minimum: 0`, and a `u32` gets its maximum so that the API server refuses what
/// would not decode.
fn unsigned_as_int64(schema: &mut schemars::Schema) {
    let maximum = match schema.get("format").and_then(|f| f.as_str()) {
        Some("uint32") => Some(u32::MAX),
        Some("uint64") => None,
        _ => return,
    };
    schema.insert("format".into(), "int64".into());
    if let Some(max) = maximum {
        schema.insert("maximum".into(), max.into());
    }
}

fn preserve_unknown_object(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({
        "type": "object",
        "description": "The spec of the ActionSets to create (Kanister ActionSetSpec: actions[] with name, blueprint, object, profile, options, secrets, configMaps, artifacts ...).",
        "x-kubernetes-preserve-unknown-fields": true
    })
}

fn object_reference(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({
        "type": "object",
        "description": "Kanister's ObjectReference: kind (e.g. StatefulSet, Deployment, Namespace), name, namespace.",
        "required": ["kind", "name"],
        "properties": {
            "apiVersion": {"type": "string"},
            "group": {"type": "string"},
            "resource": {"type": "string"},
            "kind": {"type": "string"},
            "name": {"type": "string"},
            "namespace": {"type": "string"}
        }
    })
}

/// The CRD as YAML, for `manifests/crds/actionschedule.yaml` and the `crds` subcommand.
pub fn crd_yaml() -> String {
    serde_yaml::to_string(&ActionSchedule::crd())
        .unwrap_or_else(|e| format!("# cannot render CRD: {e}\n"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crd_has_status_subresource_and_columns() {
        let crd = ActionSchedule::crd();
        let v = &crd.spec.versions[0];
        assert!(v.subresources.as_ref().unwrap().status.is_some());
        assert!(
            v.additional_printer_columns
                .as_ref()
                .unwrap()
                .iter()
                .any(|c| c.name == "Next")
        );
        let y = crd_yaml();
        assert!(
            y.contains("x-kubernetes-preserve-unknown-fields: true"),
            "{y}"
        );
        assert!(y.contains("actionschedules.blueprint-operator.io"));
    }

    #[test]
    fn defaults_from_minimal_yaml() {
        let s: ActionScheduleSpec = serde_yaml::from_str(
            "schedule: '@daily'\nactionSetTemplate:\n  actions:\n  - name: backup\n    blueprint: bp\n    object: {kind: deployment, name: app, namespace: ns}\n",
        )
        .unwrap();
        assert_eq!(s.retention.keep_last, 3);
        assert_eq!(s.retention.keep_failed, 2);
        assert_eq!(s.retention.on_delete, OnDelete::Retain);
        assert_eq!(s.concurrency_policy, ConcurrencyPolicy::Allow);
        assert_eq!(s.missed_run_policy, MissedRunPolicy::RunLatest);
        assert_eq!(s.action_set_template.actions[0].blueprint, "bp");
        // Jitter, window and the breaker are off unless asked for.
        assert_eq!(
            (s.jitter, s.window, s.suspend_after_failures),
            (None, None, None)
        );
        let w: RunWindow = serde_yaml::from_str("{start: '22:00', end: '04:00'}").unwrap();
        assert_eq!((w.days, w.outside), (None, OutsideWindow::Skip));
    }
}
