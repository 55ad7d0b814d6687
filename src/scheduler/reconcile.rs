//! The ActionSchedule controller: reads the schedule and its ActionSets,
//! asks [`plan`](super::plan) and [`retention`](super::retention) what to do,
//! does it, and writes status, Events and metrics.
//!
//! Exactly-once per tick: an ActionSet's name is derived from the schedule and
//! the nominal tick, so `AlreadyExists` after a restart, a stale cache or a
//! second replica means "already done". Status is written after the ActionSet,
//! and the schedule is re-read from the API at the start of every reconcile.
//!
//! Runs carry no ownerReference to the schedule (see
//! [`identity`](super::identity)): deleting a schedule keeps them, unless
//! `retention.onDelete: Delete` puts a finalizer on it, which removes them
//! through the rotation path first (see [`finalize`](super::finalize)).

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use chrono::{DateTime, Utc};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams, Preconditions};
use kube::runtime::controller::Action;
use kube::runtime::events::{Event, EventType, Recorder};
use kube::{Client, Resource, ResourceExt};
use serde_json::{Value, json};
use tracing::{info, warn};

use super::cron::Schedule;
use super::finalize::{self, Kept};
use super::identity;
use super::metrics::{METRICS, schedule_labels, with};
use super::plan::{self, NewRun, PlanSettings, RunRecord, RunState, Trigger};
use super::retention::{self, Policy};
use super::runs::RunIndex;
use crate::model::{
    ANNOTATION_RUN_NOW, ANNOTATION_SCHEDULE, ANNOTATION_SCHEDULED_TIME, ActionSchedule,
    ActionScheduleStatus, ActionSet, ActionSetSpec, Artifact, EXECUTOR_LABEL_VALUE,
    FINALIZER_DELETE_RUNS, LABEL_DELETE_FOR, LABEL_EXECUTOR, LABEL_SCHEDULE, LABEL_TRIGGER,
    OnDelete, RotationEntry, RunReference, SkippedRun, State, WatchedActionSet,
};

/// Entries kept in `status.recentSkips`.
const RECENT_SKIPS: usize = 10;
/// How often to look again while a delete action is running.
const DELETE_POLL: Duration = Duration::from_secs(15);
/// Longest sleep between reconciles of a healthy schedule.
const MAX_REQUEUE: Duration = Duration::from_secs(3600);
/// Default time limit for removing a deleted schedule's runs (`onDelete: Delete`).
pub const FINALIZE_TIMEOUT: Duration = Duration::from_secs(3600);

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("Kubernetes API call failed: {0}")]
    Kube(#[from] kube::Error),
    #[error("ActionSchedule {0} lacks metadata.{1}; it was not read from the API server")]
    Metadata(String, &'static str),
    #[error("cannot encode status: {0}")]
    Json(#[from] serde_json::Error),
}

impl Error {
    pub fn metric_label(&self) -> &'static str {
        match self {
            Error::Kube(_) => "kube",
            Error::Metadata(..) => "metadata",
            Error::Json(_) => "json",
        }
    }
}

pub struct Ctx {
    pub client: Client,
    pub recorder: Recorder,
    /// ActionSets of every schedule, from the controller's watch.
    pub runs: Arc<RunIndex>,
    /// resourceVersion of each schedule as this controller last read or
    /// wrote it: a cached object at that version needs no fresh read.
    pub known: Mutex<HashMap<(String, String), String>>,
    /// How long a deleted schedule with `onDelete: Delete` waits for its runs
    /// and delete actions to end before it goes anyway.
    pub finalize_timeout: Duration,
}

impl Ctx {
    pub fn new(client: Client, recorder: Recorder, runs: Arc<RunIndex>) -> Self {
        Ctx {
            client,
            recorder,
            runs,
            known: Mutex::default(),
            finalize_timeout: FINALIZE_TIMEOUT,
        }
    }

    fn known(&self) -> std::sync::MutexGuard<'_, HashMap<(String, String), String>> {
        // Poisoning only means another reconcile panicked; the map is still usable.
        self.known.lock().unwrap_or_else(|p| p.into_inner())
    }
}

fn to_time(t: DateTime<Utc>) -> Option<Time> {
    k8s_openapi::jiff::Timestamp::from_second(t.timestamp())
        .ok()
        .map(Time)
}

fn from_time(t: &Time) -> Option<DateTime<Utc>> {
    DateTime::from_timestamp(t.0.as_second(), t.0.subsec_nanosecond().max(0) as u32)
}

fn run_state(s: Option<State>) -> RunState {
    match s {
        Some(State::Running) => RunState::Running,
        Some(State::Failed) => RunState::Failed,
        Some(State::Complete) => RunState::Complete,
        _ => RunState::Pending,
    }
}

/// The scheduler's view of an ActionSet labelled with a schedule, for the
/// schedule named `schedule`.
pub fn record(a: &ActionSet, schedule: &str) -> RunRecord {
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
        ours: identity::is_run_of(&a.metadata, schedule),
        delete_for: a.labels().get(LABEL_DELETE_FOR).cloned(),
    }
}

/// A run of `s`: labelled and annotated with the schedule, without an
/// ownerReference (the garbage collector must not delete it with the schedule).
fn new_action_set(
    s: &ActionSchedule,
    run: &NewRun,
    spec: ActionSetSpec,
    delete_for: Option<&str>,
) -> ActionSet {
    let mut labels = BTreeMap::new();
    labels.insert(
        LABEL_SCHEDULE.to_string(),
        plan::schedule_label_value(&s.name_any()),
    );
    labels.insert(LABEL_TRIGGER.to_string(), run.trigger.as_str().to_string());
    // Opts the run in to our executor (beside Kanister, which ignores it).
    labels.insert(LABEL_EXECUTOR.to_string(), EXECUTOR_LABEL_VALUE.to_string());
    if let Some(d) = delete_for {
        labels.insert(LABEL_DELETE_FOR.to_string(), d.to_string());
    }
    let mut annotations = BTreeMap::new();
    annotations.insert(
        ANNOTATION_SCHEDULED_TIME.to_string(),
        run.scheduled_time.to_rfc3339(),
    );
    annotations.insert(ANNOTATION_SCHEDULE.to_string(), s.name_any());
    let meta = kube::core::ObjectMeta {
        name: Some(run.name.clone()),
        namespace: s.namespace(),
        labels: Some(labels),
        annotations: Some(annotations),
        ..Default::default()
    };
    ActionSet::new(meta, spec)
}

/// The delete-action ActionSet's spec: the template's actions renamed to
/// `delete_action`, each with the artifacts the rotated run produced.
fn delete_spec(template: &ActionSetSpec, delete_action: &str, run: &ActionSet) -> ActionSetSpec {
    let statuses = run
        .status
        .as_ref()
        .map(|s| s.actions.as_slice())
        .unwrap_or_default();
    let all: BTreeMap<String, Artifact> =
        statuses.iter().flat_map(|a| a.artifacts.clone()).collect();
    let actions = template
        .actions
        .iter()
        .enumerate()
        .map(|(i, a)| {
            let mut a = a.clone();
            a.name = delete_action.to_string();
            a.artifacts = statuses
                .get(i)
                .map(|s| s.artifacts.clone())
                .filter(|m| !m.is_empty())
                .unwrap_or_else(|| all.clone());
            a
        })
        .collect();
    ActionSetSpec {
        actions,
        extra: template.extra.clone(),
    }
}

async fn publish(
    ctx: &Ctx,
    s: &ActionSchedule,
    warning: bool,
    reason: &str,
    action: &str,
    note: String,
) {
    let ev = Event {
        type_: if warning {
            EventType::Warning
        } else {
            EventType::Normal
        },
        reason: reason.into(),
        note: Some(note.chars().take(1000).collect()),
        action: action.into(),
        secondary: None,
    };
    if let Err(e) = ctx.recorder.publish(&ev, &s.object_ref(&())).await {
        warn!(error = %e, reason, "cannot publish Event");
    }
}

fn condition(
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

/// Status as a merge patch that also clears fields that became empty.
fn status_patch(status: &ActionScheduleStatus) -> Result<Value, Error> {
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

/// Write `status` unless unchanged, and remember the schedule's version
/// (returned too).
async fn write_status(
    ctx: &Ctx,
    api: &Api<ActionSchedule>,
    s: &ActionSchedule,
    status: ActionScheduleStatus,
) -> Result<Option<String>, Error> {
    let key = (s.namespace().unwrap_or_default(), s.name_any());
    let version = if s.status.as_ref() == Some(&status) {
        s.resource_version()
    } else {
        api.patch_status(
            &s.name_any(),
            &PatchParams::default(),
            &Patch::Merge(status_patch(&status)?),
        )
        .await?
        .resource_version()
    };
    match &version {
        Some(v) => ctx.known().insert(key, v.clone()),
        None => ctx.known().remove(&key),
    };
    Ok(version)
}

fn requeue(next: Option<DateTime<Utc>>, now: DateTime<Utc>, extra: Option<Duration>) -> Action {
    let mut d = next
        .map(|n| (n - now).to_std().unwrap_or_default() + Duration::from_millis(100))
        .unwrap_or(MAX_REQUEUE)
        .min(MAX_REQUEUE);
    if let Some(e) = extra {
        d = d.min(e);
    }
    Action::requeue(d)
}

pub async fn reconcile(obj: Arc<ActionSchedule>, ctx: Arc<Ctx>) -> Result<Action, Error> {
    let name = obj.name_any();
    let ns = obj
        .namespace()
        .ok_or_else(|| Error::Metadata(name.clone(), "namespace"))?;
    let api: Api<ActionSchedule> = Api::namespaced(ctx.client.clone(), &ns);
    // The watch cache may be older than our own last status write: use it
    // only at the version we last saw, else read the schedule again.
    let key = (ns.clone(), name.clone());
    let cached = obj
        .resource_version()
        .is_some_and(|v| ctx.known().get(&key) == Some(&v));
    let mut s = if cached {
        (*obj).clone()
    } else {
        match api.get_opt(&name).await? {
            Some(s) => s,
            None => {
                ctx.known().remove(&key);
                return Ok(Action::await_change());
            }
        }
    };
    let labels = schedule_labels(&ns, &name);
    let actionsets: Api<ActionSet> = Api::namespaced(ctx.client.clone(), &ns);
    let has_finalizer = s.finalizers().iter().any(|f| f == FINALIZER_DELETE_RUNS);
    let delete_runs = s.spec.retention.on_delete == OnDelete::Delete;
    if s.metadata.deletion_timestamp.is_some() {
        if has_finalizer && delete_runs {
            let listed = list_runs(&ctx, &ns, &name).await?;
            return finalize_runs(&ctx, &api, &actionsets, &s, &listed, &labels).await;
        }
        if has_finalizer {
            // Switched to Retain while being deleted: the runs stay.
            set_finalizer(&api, &s, false, s.resource_version()).await?;
        }
        return Ok(Action::await_change());
    }
    if has_finalizer != delete_runs {
        s = set_finalizer(&api, &s, delete_runs, s.resource_version()).await?;
    }
    let old = s.status.clone().unwrap_or_default();
    let mut status = old.clone();
    status.observed_generation = s.metadata.generation;
    let now = Utc::now();

    let schedule = match Schedule::parse(&s.spec.schedule, s.spec.time_zone.as_deref()) {
        Ok(x) => x,
        Err(e) => {
            let msg = format!("{e}; fix spec.schedule/spec.timeZone");
            let was = old
                .conditions
                .iter()
                .any(|c| c.reason == "InvalidSchedule" && c.message == msg);
            if !was {
                publish(&ctx, &s, true, "InvalidSchedule", "Parse", msg.clone()).await;
            }
            status.next_schedule_time = None;
            status.conditions = vec![condition(
                false,
                "InvalidSchedule",
                msg,
                s.metadata.generation,
                &old.conditions,
            )];
            write_status(&ctx, &api, &s, status).await?;
            return Ok(Action::await_change());
        }
    };

    let listed = list_runs(&ctx, &ns, &name).await?;
    let by_name: BTreeMap<String, &ActionSet> =
        listed.iter().map(|a| (a.name_any(), a.as_ref())).collect();
    let mut runs: Vec<RunRecord> = listed.iter().map(|a| record(a, &name)).collect();

    let created_at = s
        .metadata
        .creation_timestamp
        .as_ref()
        .and_then(from_time)
        .unwrap_or(now);
    let window_start = [
        old.last_schedule_time.as_ref().and_then(from_time),
        old.last_skipped_time.as_ref().and_then(from_time),
        Some(created_at),
    ]
    .into_iter()
    .flatten()
    .max()
    .unwrap_or(now);
    let token = s
        .annotations()
        .get(ANNOTATION_RUN_NOW)
        .filter(|t| !t.is_empty() && old.last_run_now_token.as_ref() != Some(*t))
        .cloned();
    let settings = PlanSettings {
        suspend: s.spec.suspend,
        concurrency_policy: s.spec.concurrency_policy,
        starting_deadline_seconds: s.spec.starting_deadline_seconds,
        missed_run_policy: s.spec.missed_run_policy,
    };
    let p = plan::plan(
        &name,
        &schedule,
        &settings,
        window_start,
        now,
        &runs,
        token.as_deref(),
    );

    // Replace: remove active runs first.
    for victim in &p.replace {
        if let Some(a) = by_name.get(victim) {
            delete_owned(&actionsets, a).await?;
            publish(
                &ctx,
                &s,
                false,
                "Replaced",
                "Delete",
                format!("deleted active ActionSet {victim} (concurrencyPolicy: Replace)"),
            )
            .await;
        }
        runs.retain(|r| &r.name != victim);
    }

    for run in &p.create {
        let a = new_action_set(&s, run, s.spec.action_set_template.clone(), None);
        match actionsets.create(&PostParams::default(), &a).await {
            Ok(_) => {
                info!(schedule = %name, namespace = %ns, actionset = %run.name, tick = %run.scheduled_time, "created ActionSet");
                METRICS
                    .runs_created
                    .get_or_create(&with(labels.clone(), "trigger", run.trigger.as_str()))
                    .inc();
                if run.trigger == Trigger::Scheduled {
                    METRICS
                        .creation_lag
                        .observe((Utc::now() - run.scheduled_time).as_seconds_f64().max(0.0));
                }
                let what = match run.trigger {
                    Trigger::RunNow => "run-now request".to_string(),
                    _ => format!("tick {}", run.scheduled_time.to_rfc3339()),
                };
                publish(
                    &ctx,
                    &s,
                    false,
                    "Created",
                    "Create",
                    format!("created ActionSet {} for {what}", run.name),
                )
                .await;
            }
            Err(kube::Error::Api(e)) if e.code == 409 => {
                // Already done by an earlier attempt or another replica.
                let existing = actionsets.get_opt(&run.name).await?;
                // Ours, or made by an earlier schedule of this name (adopted).
                if existing
                    .as_ref()
                    .is_some_and(|x| identity::is_run_of(&x.metadata, &name))
                {
                    info!(schedule = %name, actionset = %run.name, "ActionSet already exists; tick already handled");
                } else {
                    publish(
                        &ctx,
                        &s,
                        true,
                        "NameConflict",
                        "Create",
                        format!("ActionSet {} exists but was not created by this schedule; this run is not started. Rename or delete that ActionSet.", run.name),
                    )
                    .await;
                }
            }
            Err(e) => {
                publish(
                    &ctx,
                    &s,
                    true,
                    "FailedCreate",
                    "Create",
                    format!(
                        "cannot create ActionSet {}: {}",
                        run.name,
                        crate::kube_error::Describe(&e)
                    ),
                )
                .await;
                return Err(e.into());
            }
        }
        if !runs.iter().any(|r| r.name == run.name) {
            runs.push(RunRecord {
                name: run.name.clone(),
                scheduled_time: run.scheduled_time,
                state: RunState::Pending,
                defer_state: None,
                trigger: run.trigger,
                ours: true,
                delete_for: None,
            });
        }
    }

    for skip in &p.skips {
        METRICS
            .runs_skipped
            .get_or_create(&with(labels.clone(), "reason", skip.reason.as_str()))
            .inc_by(u64::from(skip.count));
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
        let event_reason = match skip.reason {
            plan::SkipReason::Missed => "MissedSchedule",
            plan::SkipReason::DeadlineExceeded => "MissedDeadline",
            plan::SkipReason::Suspended => "SkippedSuspended",
            plan::SkipReason::ConcurrencyForbid => "SkippedConcurrency",
        };
        let warning = skip.reason.is_missed() || skip.reason == plan::SkipReason::ConcurrencyForbid;
        publish(
            &ctx,
            &s,
            warning,
            event_reason,
            "Schedule",
            skip.message.clone(),
        )
        .await;
    }
    status.recent_skips.truncate(RECENT_SKIPS);
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

    // Retention.
    let policy = Policy::from_spec(&s.spec.retention, schedule.time_zone());
    let rp = retention::select(&runs, &policy);
    let mut removing = Vec::new();
    let mut waiting = false;
    let remover = Remover::new(&s, &actionsets, &labels, &by_name, &runs);
    for rm in &rp.remove {
        let Some(a) = by_name.get(&rm.name) else {
            continue;
        };
        let entry = |progress: String| RotationEntry {
            name: rm.name.clone(),
            reason: rm.reason.clone(),
            progress: Some(progress),
        };
        match remover.step(a, rm.state, true, now).await? {
            Step::Removed(after) => {
                let note = match after {
                    Some(d) => format!(
                        "deleted ActionSet {} after delete action {d} completed ({})",
                        rm.name, rm.reason
                    ),
                    None => format!("deleted ActionSet {}: {}", rm.name, rm.reason),
                };
                rotated(&ctx, &s, &labels, rm.state, note).await;
            }
            Step::Started(dname) => {
                let action = remover.delete_action.unwrap_or_default();
                publish(&ctx, &s, false, "DeleteActionStarted", "Rotate", format!("rotating {} ({}): created ActionSet {dname} running action {action:?} with its artifacts", rm.name, rm.reason)).await;
                waiting = true;
                removing.push(entry("WaitingForDeleteAction".into()));
            }
            Step::Waiting(_) | Step::NotStarted => {
                waiting = true;
                removing.push(entry("WaitingForDeleteAction".into()));
            }
            Step::DeleteFailed(dname) => {
                removing.push(entry(format!("DeleteActionFailed: ActionSet {dname} failed; the run is kept. Delete {dname} to retry.")));
                if !delete_failed_before(&old, &rm.name) {
                    publish(&ctx, &s, true, "DeleteActionFailed", "Rotate", format!("delete action {dname} for {} failed; the run is kept. Delete {dname} to retry.", rm.name)).await;
                }
            }
        }
    }
    remover.remove_orphan_deletes().await?;
    let removed: Vec<&str> = rp
        .remove
        .iter()
        .filter(|r| !removing.iter().any(|e| e.name == r.name))
        .map(|r| r.name.as_str())
        .collect();
    runs.retain(|r| !removed.contains(&r.name.as_str()));
    status.retention.removing = removing;
    status.retention.next_rotation = match p.next {
        Some(n) if !s.spec.suspend => retention::preview_next(&runs, &policy, n)
            .into_iter()
            .filter(|r| !status.retention.removing.iter().any(|e| e.name == r.name))
            .map(|r| RotationEntry {
                name: r.name,
                reason: r.reason,
                progress: None,
            })
            .collect(),
        _ => Vec::new(),
    };

    // Summary.
    let sum = plan::summarize(&runs);
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
    if sum.consecutive_failures > old.consecutive_failures {
        publish(
            &ctx,
            &s,
            true,
            "RunFailed",
            "Observe",
            format!("{} consecutive failed run(s)", sum.consecutive_failures),
        )
        .await;
    }
    status.consecutive_failures = sum.consecutive_failures;
    METRICS
        .consecutive_failures
        .get_or_create(&labels)
        .set(i64::from(sum.consecutive_failures));
    let prev_success = old.last_successful_time.as_ref().and_then(from_time);
    status.last_successful_time = sum.last_successful.max(prev_success).and_then(to_time);
    let (reason, msg) = if s.spec.suspend {
        (
            "Suspended",
            "schedule is suspended; run-now requests still run".to_string(),
        )
    } else {
        match p.next {
            Some(n) => ("Scheduled", format!("next run at {}", n.to_rfc3339())),
            None => (
                "NoNextTick",
                "the schedule has no activation in the next 5 years".to_string(),
            ),
        }
    };
    status.conditions = vec![condition(
        reason != "NoNextTick",
        reason,
        msg,
        s.metadata.generation,
        &old.conditions,
    )];
    write_status(&ctx, &api, &s, status).await?;
    Ok(requeue(p.next, Utc::now(), waiting.then_some(DELETE_POLL)))
}

/// Count and announce a run that retention removed.
async fn rotated(
    ctx: &Ctx,
    s: &ActionSchedule,
    labels: &super::metrics::Labels,
    state: RunState,
    note: String,
) {
    METRICS
        .runs_rotated
        .get_or_create(&with(labels.clone(), "state", state.as_str()))
        .inc();
    publish(ctx, s, false, "Rotated", "Delete", note).await;
}

/// The ActionSets labelled with the schedule `name` (the caller tells which are
/// its runs: [`record`]).
async fn list_runs(ctx: &Ctx, ns: &str, name: &str) -> Result<Vec<Arc<ActionSet>>, Error> {
    let label = plan::schedule_label_value(name);
    Ok(match ctx.runs.runs(ns, &label) {
        Some(runs) => runs,
        // The ActionSet watch has not finished its first list yet.
        // Decoded one by one, as the watch does: a run that does not decode
        // is left out instead of failing the list.
        None => Api::<WatchedActionSet>::namespaced(ctx.client.clone(), ns)
            .list(&ListParams::default().labels(&format!("{LABEL_SCHEDULE}={label}")))
            .await?
            .items
            .into_iter()
            .filter_map(WatchedActionSet::valid)
            .map(Arc::new)
            .collect(),
    })
}

/// Add or remove our finalizer. `version` guards the list against a
/// concurrent change (409: the reconcile is retried).
async fn set_finalizer(
    api: &Api<ActionSchedule>,
    s: &ActionSchedule,
    present: bool,
    version: Option<String>,
) -> Result<ActionSchedule, Error> {
    let mut finalizers: Vec<String> = s
        .finalizers()
        .iter()
        .filter(|f| *f != FINALIZER_DELETE_RUNS)
        .cloned()
        .collect();
    if present {
        finalizers.push(FINALIZER_DELETE_RUNS.to_string());
    }
    let list = if finalizers.is_empty() {
        Value::Null
    } else {
        json!(finalizers)
    };
    let patch = json!({"metadata": {"finalizers": list, "resourceVersion": version}});
    Ok(api
        .patch(
            &s.name_any(),
            &PatchParams::default(),
            &Patch::Merge(&patch),
        )
        .await?)
}

/// How far removing one run got.
#[derive(Debug)]
enum Step {
    /// Its ActionSet is deleted (after this delete action completed, if any).
    Removed(Option<String>),
    /// Its delete action was just created.
    Started(String),
    /// Its delete action is pending or running.
    Waiting(String),
    /// Its delete action failed: the run is kept.
    DeleteFailed(String),
    /// It needs a delete action, and starting one was not allowed.
    NotStarted,
}

/// Removes finished runs of one schedule, for rotation and for the
/// schedule's deletion alike: a complete run through `deleteAction` when set
/// (create it with the run's artifacts, wait, then delete both), anything else
/// at once.
struct Remover<'a> {
    s: &'a ActionSchedule,
    api: &'a Api<ActionSet>,
    labels: &'a super::metrics::Labels,
    by_name: &'a BTreeMap<String, &'a ActionSet>,
    delete_action: Option<&'a str>,
    /// Delete-action ActionSets of this schedule, by the run they are for.
    deletes: BTreeMap<&'a str, &'a RunRecord>,
}

impl<'a> Remover<'a> {
    fn new(
        s: &'a ActionSchedule,
        api: &'a Api<ActionSet>,
        labels: &'a super::metrics::Labels,
        by_name: &'a BTreeMap<String, &'a ActionSet>,
        runs: &'a [RunRecord],
    ) -> Self {
        Remover {
            s,
            api,
            labels,
            by_name,
            delete_action: s
                .spec
                .retention
                .delete_action
                .as_deref()
                .filter(|d| !d.is_empty()),
            deletes: runs
                .iter()
                .filter(|r| r.trigger == Trigger::Delete && r.ours)
                .filter_map(|r| r.delete_for.as_deref().map(|f| (f, r)))
                .collect(),
        }
    }

    /// One step towards removing the finished run `run`; `may_start`: a
    /// delete action may be created.
    async fn step(
        &self,
        run: &ActionSet,
        state: RunState,
        may_start: bool,
        now: DateTime<Utc>,
    ) -> Result<Step, Error> {
        let (Some(action), RunState::Complete) = (self.delete_action, state) else {
            delete_owned(self.api, run).await?;
            return Ok(Step::Removed(None));
        };
        let name = run.name_any();
        let Some(d) = self.deletes.get(name.as_str()) else {
            if !may_start {
                return Ok(Step::NotStarted);
            }
            let dname = plan::delete_name(&name);
            let new = NewRun {
                name: dname.clone(),
                scheduled_time: now,
                trigger: Trigger::Delete,
            };
            let spec = delete_spec(&self.s.spec.action_set_template, action, run);
            let da = new_action_set(self.s, &new, spec, Some(&name));
            match self.api.create(&PostParams::default(), &da).await {
                Ok(_) => {}
                Err(kube::Error::Api(e)) if e.code == 409 => {}
                Err(e) => return Err(e.into()),
            }
            METRICS
                .runs_created
                .get_or_create(&with(self.labels.clone(), "trigger", "delete"))
                .inc();
            return Ok(Step::Started(dname));
        };
        Ok(match d.state {
            RunState::Complete => {
                delete_owned(self.api, run).await?;
                if let Some(da) = self.by_name.get(&d.name) {
                    delete_owned(self.api, da).await?;
                }
                Step::Removed(Some(d.name.clone()))
            }
            RunState::Failed => Step::DeleteFailed(d.name.clone()),
            _ => Step::Waiting(d.name.clone()),
        })
    }

    /// Delete actions whose run is gone and that have finished.
    async fn remove_orphan_deletes(&self) -> Result<(), Error> {
        for (run_name, d) in &self.deletes {
            if !self.by_name.contains_key(*run_name)
                && d.state.is_terminal()
                && let Some(a) = self.by_name.get(&d.name)
            {
                delete_owned(self.api, a).await?;
            }
        }
        Ok(())
    }
}

/// True when the last status already reported the failed delete action of `run`.
fn delete_failed_before(old: &ActionScheduleStatus, run: &str) -> bool {
    old.retention.removing.iter().any(|e| {
        e.name == run
            && e.progress
                .as_deref()
                .is_some_and(|p| p.starts_with("DeleteActionFailed"))
    })
}

/// The schedule is being deleted with `retention.onDelete: Delete`: remove
/// its runs through the rotation path, keep those that cannot be removed
/// (Event `RunsKept`, condition), then remove the finalizer. Bounded by
/// `ctx.finalize_timeout` from the first pass (see [`finalize`]).
async fn finalize_runs(
    ctx: &Ctx,
    api: &Api<ActionSchedule>,
    actionsets: &Api<ActionSet>,
    s: &ActionSchedule,
    listed: &[Arc<ActionSet>],
    labels: &super::metrics::Labels,
) -> Result<Action, Error> {
    let name = s.name_any();
    let now = Utc::now();
    let runs: Vec<RunRecord> = listed.iter().map(|a| record(a, &name)).collect();
    let by_name: BTreeMap<String, &ActionSet> =
        listed.iter().map(|a| (a.name_any(), a.as_ref())).collect();
    let old = s.status.clone().unwrap_or_default();
    // The time limit counts from the first pass (the controller may have
    // been down when the delete was requested).
    let first_pass = old
        .conditions
        .iter()
        .find(|c| c.type_ == "Ready" && c.reason == "Deleting")
        .and_then(|c| from_time(&c.last_transition_time));
    let pass = finalize::select(&runs, first_pass.unwrap_or(now), now, ctx.finalize_timeout);
    let remover = Remover::new(s, actionsets, labels, &by_name, &runs);
    if first_pass.is_none() {
        let how = match remover.delete_action {
            Some(d) => format!("through delete action {d:?}"),
            None => "(no deleteAction: only the ActionSets)".into(),
        };
        publish(
            ctx,
            s,
            false,
            "DeletingRuns",
            "Delete",
            format!(
                "schedule deleted with retention.onDelete: Delete: removing {} finished run(s) {how}, waiting for {} active run(s), until {} at most",
                pass.remove.len(),
                pass.active.len(),
                pass.deadline.to_rfc3339()
            ),
        )
        .await;
    }
    let reason = "schedule deleted (retention.onDelete: Delete)";
    let entry = |run: &str, progress: String| RotationEntry {
        name: run.to_string(),
        reason: reason.into(),
        progress: Some(progress),
    };
    let mut removing = Vec::new();
    let mut kept: Vec<(String, Kept)> = Vec::new();
    for r in &pass.remove {
        let Some(a) = by_name.get(&r.name) else {
            continue;
        };
        match remover.step(a, r.state, !pass.expired, now).await? {
            Step::Removed(after) => {
                let how = after
                    .map(|d| format!(" after delete action {d} completed"))
                    .unwrap_or_default();
                publish(
                    ctx,
                    s,
                    false,
                    "RunDeleted",
                    "Delete",
                    format!("deleted ActionSet {}{how}: {reason}", r.name),
                )
                .await;
            }
            Step::Started(d) => {
                publish(ctx, s, false, "DeleteActionStarted", "Delete", format!("{reason}: created ActionSet {d} running the delete action with the artifacts of {}", r.name)).await;
                removing.push(entry(&r.name, "WaitingForDeleteAction".into()));
            }
            Step::Waiting(d) if pass.expired => {
                kept.push((r.name.clone(), Kept::DeleteActionUnfinished(d)))
            }
            Step::Waiting(_) => removing.push(entry(&r.name, "WaitingForDeleteAction".into())),
            Step::NotStarted => kept.push((r.name.clone(), Kept::NotStarted)),
            Step::DeleteFailed(d) => {
                if !delete_failed_before(&old, &r.name) {
                    publish(
                        ctx,
                        s,
                        true,
                        "DeleteActionFailed",
                        "Delete",
                        format!(
                            "delete action {d} for {} failed; the run is kept ({reason})",
                            r.name
                        ),
                    )
                    .await;
                }
                removing.push(entry(
                    &r.name,
                    format!("DeleteActionFailed: ActionSet {d} failed; the run is kept"),
                ));
                kept.push((r.name.clone(), Kept::DeleteActionFailed(d)));
            }
        }
    }
    for r in &pass.active {
        if pass.expired {
            kept.push((r.name.clone(), Kept::StillActive(r.state)));
        } else {
            removing.push(entry(&r.name, "WaitingForRun".into()));
        }
    }
    remover.remove_orphan_deletes().await?;
    let in_progress = removing
        .iter()
        .filter(|e| {
            e.progress
                .as_deref()
                .is_some_and(|p| p.starts_with("Waiting"))
        })
        .count();
    let mut status = old.clone();
    status.next_schedule_time = None;
    status.retention.removing = removing;
    status.retention.next_rotation = Vec::new();
    let label = plan::schedule_label_value(&name);
    if in_progress > 0 {
        status.conditions = vec![condition(
            false,
            "Deleting",
            format!(
                "removing the runs before the schedule goes (retention.onDelete: Delete): {in_progress} in progress, until {} at most",
                pass.deadline.to_rfc3339()
            ),
            s.metadata.generation,
            &old.conditions,
        )];
        write_status(ctx, api, s, status).await?;
        let left = (pass.deadline - now).to_std().unwrap_or_default();
        return Ok(Action::requeue(
            DELETE_POLL.min(left + Duration::from_millis(100)),
        ));
    }
    let (reason, msg) = if kept.is_empty() {
        ("Deleting", "every run was removed".to_string())
    } else {
        let msg = finalize::kept_message(&name, &label, &kept);
        publish(ctx, s, true, "RunsKept", "Delete", msg.clone()).await;
        ("RunsKept", msg)
    };
    status.conditions = vec![condition(
        false,
        reason,
        msg,
        s.metadata.generation,
        &old.conditions,
    )];
    let version = write_status(ctx, api, s, status).await?;
    set_finalizer(api, s, false, version).await?;
    info!(schedule = %name, namespace = %s.namespace().unwrap_or_default(), kept = kept.len(), "runs of the deleted schedule handled; finalizer removed");
    Ok(Action::await_change())
}

/// Delete an ActionSet this schedule created, only if it is still the same object.
async fn delete_owned(api: &Api<ActionSet>, a: &ActionSet) -> Result<(), Error> {
    let dp = DeleteParams {
        preconditions: Some(Preconditions {
            uid: a.uid(),
            resource_version: None,
        }),
        ..DeleteParams::background()
    };
    match api.delete(&a.name_any(), &dp).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(e)) if e.code == 404 || e.code == 409 => Ok(()),
        Err(e) => Err(e.into()),
    }
}

pub fn error_policy(obj: Arc<ActionSchedule>, err: &Error, _ctx: Arc<Ctx>) -> Action {
    let labels = with(
        schedule_labels(&obj.namespace().unwrap_or_default(), &obj.name_any()),
        "kind",
        err.metric_label(),
    );
    METRICS.reconcile_errors.get_or_create(&labels).inc();
    warn!(schedule = %obj.name_any(), error = %err, "reconcile failed; retrying");
    Action::requeue(Duration::from_secs(5))
}

/// Every few seconds: set each schedule's overdue gauge, and forget the
/// gauges and remembered versions of schedules that are gone (deletions
/// trigger no reconcile), so a deleted schedule cannot keep an alert firing.
pub fn housekeeping(
    ctx: &Ctx,
    schedules: &[Arc<ActionSchedule>],
    now: DateTime<Utc>,
    tracked: &mut HashSet<(String, String)>,
) {
    let mut present = HashSet::with_capacity(schedules.len());
    for s in schedules {
        let key = (s.namespace().unwrap_or_default(), s.name_any());
        let overdue = match (
            &s.spec.suspend,
            s.status
                .as_ref()
                .and_then(|st| st.next_schedule_time.as_ref()),
        ) {
            (false, Some(next)) => from_time(next)
                .map(|n| (now - n).as_seconds_f64().max(0.0))
                .unwrap_or(0.0),
            _ => 0.0,
        };
        METRICS
            .overdue
            .get_or_create(&schedule_labels(&key.0, &key.1))
            .set(overdue);
        present.insert(key);
    }
    for (ns, name) in tracked.difference(&present) {
        let labels = schedule_labels(ns, name);
        METRICS.overdue.remove(&labels);
        METRICS.consecutive_failures.remove(&labels);
    }
    ctx.known().retain(|k, _| present.contains(k));
    *tracked = present;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn schedule(ns: &str, name: &str, next: &str) -> Arc<ActionSchedule> {
        Arc::new(
            serde_json::from_value(json!({
                "apiVersion": "blueprint-operator.io/v1alpha1", "kind": "ActionSchedule",
                "metadata": {"name": name, "namespace": ns},
                "spec": {"schedule": "* * * * *", "actionSetTemplate": {"actions": []}},
                "status": {"nextScheduleTime": next},
            }))
            .unwrap(),
        )
    }

    #[tokio::test]
    async fn housekeeping_sets_overdue_and_forgets_deleted_schedules() {
        // A client that is never called: housekeeping touches no API.
        let client =
            Client::try_from(kube::Config::new("http://127.0.0.1:9".parse().unwrap())).unwrap();
        let recorder = Recorder::new(
            client.clone(),
            kube::runtime::events::Reporter {
                controller: "test".into(),
                instance: None,
            },
        );
        let ctx = Ctx::new(client, recorder, Arc::default());
        let now = DateTime::parse_from_rfc3339("2026-01-01T00:01:30Z")
            .unwrap()
            .to_utc();
        let (a, b) = (("hk", "a"), ("hk", "b"));
        for (ns, n) in [a, b] {
            ctx.known().insert((ns.into(), n.into()), "1".into());
        }
        METRICS
            .consecutive_failures
            .get_or_create(&schedule_labels("hk", "b"))
            .set(3);
        let mut tracked = HashSet::new();
        let both = [
            schedule("hk", "a", "2026-01-01T00:01:00Z"),
            schedule("hk", "b", "2026-01-01T00:02:00Z"),
        ];
        housekeeping(&ctx, &both, now, &mut tracked);
        let overdue = |n: &str| {
            METRICS
                .overdue
                .get(&schedule_labels("hk", n))
                .map(|g| g.get())
        };
        assert_eq!(overdue("a"), Some(30.0));
        assert_eq!(overdue("b"), Some(0.0), "not yet due");
        // b is deleted.
        housekeeping(&ctx, &both[..1], now, &mut tracked);
        assert_eq!(overdue("b"), None);
        assert!(
            METRICS
                .consecutive_failures
                .get(&schedule_labels("hk", "b"))
                .is_none()
        );
        assert_eq!(overdue("a"), Some(30.0));
        assert!(ctx.known().contains_key(&("hk".into(), "a".into())));
        assert!(!ctx.known().contains_key(&("hk".into(), "b".into())));
    }

    fn actionset(v: Value) -> ActionSet {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn record_reads_labels_annotations_time_and_defer_state() {
        let a = actionset(json!({
            "metadata": {
                "name": "db-20260601000000",
                "labels": {LABEL_SCHEDULE: "db", LABEL_TRIGGER: "scheduled"},
                "annotations": {ANNOTATION_SCHEDULED_TIME: "2026-06-01T00:00:00+00:00", ANNOTATION_SCHEDULE: "db"},
            },
            "status": {"state": "complete", "actions": [
                {"name": "backup", "deferPhase": {"name": "cleanup", "state": "running"}}
            ]}
        }));
        let r = record(&a, "db");
        assert!(r.ours);
        assert_eq!(r.state, RunState::Complete);
        assert_eq!(r.defer_state, Some(RunState::Running));
        assert!(r.is_active(), "a running deferPhase keeps the run active");
        assert_eq!(r.scheduled_time.to_rfc3339(), "2026-06-01T00:00:00+00:00");
        assert!(!record(&a, "other").ours);
        // No status yet: pending; empty deferPhase (Kanister's placeholder) is ignored.
        let b = actionset(
            json!({"metadata": {"name": "x", "labels": {LABEL_TRIGGER: "delete", LABEL_DELETE_FOR: "y"}},
            "status": {"state": "failed", "actions": [{"name": "a", "deferPhase": {"name": "", "state": ""}}]}}),
        );
        let r = record(&b, "db");
        assert_eq!(
            (r.state, r.defer_state, r.trigger),
            (RunState::Failed, None, Trigger::Delete)
        );
        assert_eq!(r.delete_for.as_deref(), Some("y"));
        assert_eq!(
            record(&actionset(json!({"metadata": {"name": "z"}})), "db").state,
            RunState::Pending
        );
    }

    #[test]
    fn delete_spec_carries_the_runs_artifacts() {
        let template: ActionSetSpec = serde_json::from_value(json!({"actions": [
            {"name": "backup", "blueprint": "bp", "object": {"kind": "Deployment", "name": "app", "namespace": "ns"}, "profile": {"name": "p", "namespace": "ns"}}
        ]}))
        .unwrap();
        let run = actionset(
            json!({"metadata": {"name": "r"}, "status": {"state": "complete", "actions": [
                {"name": "backup", "artifacts": {"snap": {"keyValue": {"path": "/b/1"}}}}
            ]}}),
        );
        let spec = delete_spec(&template, "delete", &run);
        assert_eq!(spec.actions.len(), 1);
        assert_eq!(spec.actions[0].name, "delete");
        assert_eq!(spec.actions[0].blueprint, "bp");
        assert_eq!(spec.actions[0].artifacts["snap"].key_value["path"], "/b/1");
        assert!(spec.actions[0].profile.is_some());
    }

    #[test]
    fn runs_are_labelled_and_annotated_without_an_owner() {
        let s = schedule("ns", "db", "2026-06-01T00:00:00Z");
        let run = NewRun {
            name: "db-1".into(),
            scheduled_time: DateTime::from_timestamp(1_000, 0).unwrap(),
            trigger: Trigger::Scheduled,
        };
        for delete_for in [None, Some("db-0")] {
            let a = new_action_set(&s, &run, ActionSetSpec::default(), delete_for);
            assert_eq!(a.labels()[LABEL_EXECUTOR], EXECUTOR_LABEL_VALUE);
            assert_eq!(a.labels()[LABEL_SCHEDULE], "db");
            assert_eq!(a.annotations()[ANNOTATION_SCHEDULE], "db");
            // The garbage collector must not delete runs with their schedule.
            assert!(a.owner_references().is_empty());
            assert!(identity::is_run_of(&a.metadata, "db"));
        }
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

    #[test]
    fn requeue_waits_until_just_after_the_next_tick() {
        let now = DateTime::from_timestamp(1_000, 0).unwrap();
        let next = DateTime::from_timestamp(1_010, 0);
        assert_eq!(
            requeue(next, now, None),
            Action::requeue(Duration::from_millis(10_100))
        );
        assert_eq!(
            requeue(next, now, Some(Duration::from_secs(2))),
            Action::requeue(Duration::from_secs(2))
        );
        assert_eq!(requeue(None, now, None), Action::requeue(MAX_REQUEUE));
    }
}
