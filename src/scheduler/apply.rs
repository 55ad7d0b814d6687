//! Apply: the writes a reconcile makes: runs created and replaced, Events,
//! metrics, the finalizer and the status. What to write is decided before
//! (by [`plan`](super::plan), [`retention`](super::retention) and
//! [`status`](super::status)).

use std::collections::BTreeMap;
use std::sync::Arc;

use chrono::Utc;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams, Preconditions};
use kube::{Resource, ResourceExt};
use serde_json::{Value, json};
use tracing::{info, warn};

use super::ctx::Known;
use super::ctx::{Ctx, Error};
use super::gate::Priority;
use super::identity::{self, new_action_set};
use super::metrics::{Labels, with};
use super::plan::{NewRun, RunRecord, RunState, Skip, SkipReason, Trigger};
use super::status::status_patch;
use super::summary::RunSummary;
use crate::events::{Kind, Note};
use crate::model::{ActionSchedule, ActionScheduleStatus, ActionSet, FINALIZER_DELETE_RUNS};

/// Publish an Event about the schedule; repeats of the same reason merge into a series (Events
/// are best effort: a failure is logged, not returned).
pub(super) async fn publish(
    ctx: &Ctx,
    s: &ActionSchedule,
    warning: bool,
    reason: &str,
    action: &str,
    note: String,
) {
    let ev = Note {
        kind: if warning { Kind::Warning } else { Kind::Normal },
        reason,
        action,
        note: &note,
    };
    let regarding = s.object_ref(&());
    // Behind the creates of all reconciles (see `gate`).
    if let Err(e) = ctx
        .request(|| ctx.events.try_publish_series(&regarding, ev))
        .await
    {
        warn!(reason = %reason, error = %e, "publishing Event failed");
    }
}

/// Write `status` unless unchanged, and remember the schedule as written
/// (its version returned too).
pub(super) async fn write_status(
    ctx: &Ctx,
    api: &Api<ActionSchedule>,
    s: &ActionSchedule,
    status: ActionScheduleStatus,
) -> Result<Option<String>, Error> {
    let key = (s.namespace().unwrap_or_default(), s.name_any());
    if s.status.as_ref() == Some(&status) {
        let version = s.resource_version();
        let mut known = ctx.known();
        match &version {
            // Unchanged: what is remembered of it (maybe our write the cache has not seen) stays.
            Some(v) if known.get(&key).is_some_and(|k| &k.version == v) => {}
            Some(v) => {
                known.insert(key, Known::at(v.clone()));
            }
            None => {
                known.remove(&key);
            }
        }
        return Ok(version);
    }
    let patch = Patch::Merge(status_patch(&status)?);
    let (name, pp) = (s.name_any(), PatchParams::default());
    // Behind the creates of all reconciles (see `gate`).
    let mut written = ctx.request(|| api.patch_status(&name, &pp, &patch)).await?;
    // Kept until the watch cache catches up: without managedFields, as the cache keeps it.
    written.managed_fields_mut().clear();
    let version = written.resource_version();
    match &version {
        Some(v) => {
            let ahead = s.resource_version().map(|b| (b, Arc::new(written)));
            ctx.known().insert(
                key,
                Known {
                    version: v.clone(),
                    ahead,
                },
            );
        }
        None => {
            ctx.known().remove(&key);
        }
    }
    Ok(version)
}

/// Add or remove our finalizer. `version` guards the list against a
/// concurrent change (409: the reconcile is retried).
pub(super) async fn set_finalizer(
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

/// Delete an ActionSet this schedule created, only if it is still the same object.
pub(super) async fn delete_owned(api: &Api<ActionSet>, a: &RunSummary) -> Result<(), Error> {
    let dp = DeleteParams {
        preconditions: Some(Preconditions {
            uid: a.uid.clone(),
            resource_version: None,
        }),
        ..DeleteParams::background()
    };
    match api.delete(a.name(), &dp).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(e)) if e.code == 404 || e.code == 409 => Ok(()),
        Err(e) => Err(e.into()),
    }
}

/// `concurrencyPolicy: Replace`: delete the active runs `victims` (and drop
/// them from `runs`).
pub(super) async fn replace(
    ctx: &Ctx,
    s: &ActionSchedule,
    actionsets: &Api<ActionSet>,
    by_name: &BTreeMap<String, &RunSummary>,
    victims: &[String],
    runs: &mut Vec<RunRecord>,
) -> Result<(), Error> {
    for victim in victims {
        if let Some(a) = by_name.get(victim) {
            delete_owned(actionsets, a).await?;
            publish(
                ctx,
                s,
                false,
                "Replaced",
                "Delete",
                format!("deleted active ActionSet {victim} (concurrencyPolicy: Replace)"),
            )
            .await;
        }
        runs.retain(|r| &r.name != victim);
    }
    Ok(())
}

/// Create the planned runs (one that exists already is done), add them to
/// `runs` as pending, and return those this call created, for
/// [`announce_created`] after the reconcile (Events wait behind the creates of
/// all reconciles: see `gate`). A failed create is announced at once and
/// returned as the error.
pub(super) async fn create_runs(
    ctx: &Ctx,
    s: &ActionSchedule,
    actionsets: &Api<ActionSet>,
    labels: &Labels,
    create: &[NewRun],
    runs: &mut Vec<RunRecord>,
) -> Result<Vec<NewRun>, Error> {
    let name = s.name_any();
    let ns = s.namespace().unwrap_or_default();
    let mut created = Vec::new();
    let mut failed = None;
    for run in create {
        let a = new_action_set(s, run, s.spec.action_set_template.clone(), None);
        let pp = PostParams::default();
        let sent = ctx
            .send(Priority::Create, || actionsets.create(&pp, &a))
            .await;
        let lag = |run: &NewRun| {
            if run.trigger == Trigger::Scheduled {
                ctx.metrics
                    .creation_lag
                    .observe((Utc::now() - run.scheduled_time).as_seconds_f64().max(0.0));
            }
        };
        match sent.result {
            Ok(_) => {
                lag(run);
                created.push(run.clone());
            }
            Err(kube::Error::Api(e)) if e.code == 409 => {
                // Already done by an earlier attempt or another replica.
                let existing = ctx.request(|| actionsets.get_opt(&run.name)).await?;
                // Ours, or made by an earlier schedule of this name (adopted).
                if existing
                    .as_ref()
                    .is_some_and(|x| identity::is_run_of(&x.metadata, &name))
                {
                    if sent.maybe_applied {
                        // An attempt of this very create answered with a 5xx was carried
                        // out after all: created by this call, counted once. (After a 429
                        // the run was made by an earlier reconcile, which counted it.)
                        lag(run);
                        created.push(run.clone());
                    } else {
                        info!(schedule = %name, actionset = %run.name, "ActionSet already exists; tick already handled");
                    }
                } else {
                    publish(
                        ctx,
                        s,
                        true,
                        "NameConflict",
                        "Create",
                        format!("ActionSet {} exists but was not created by this schedule; this run is not started. Rename or delete that ActionSet.", run.name),
                    )
                    .await;
                }
            }
            Err(e) => {
                failed = Some((run, e));
                break;
            }
        }
        if !runs.iter().any(|r| r.name == run.name) {
            let (at, pending) = (run.scheduled_time, RunState::Pending);
            runs.push(RunRecord::new(&run.name, at, pending, run.trigger));
        }
    }
    for run in &created {
        info!(schedule = %name, namespace = %ns, actionset = %run.name, tick = %run.scheduled_time, "created ActionSet");
        ctx.metrics
            .runs_created
            .get_or_create(&with(labels.clone(), "trigger", run.trigger.as_str()))
            .inc();
    }
    if let Some((run, e)) = failed {
        announce_created(ctx, s, &created).await;
        publish(
            ctx,
            s,
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
    Ok(created)
}

/// The `Created` Event of each run [`create_runs`] created.
pub(super) async fn announce_created(ctx: &Ctx, s: &ActionSchedule, created: &[NewRun]) {
    for run in created {
        let what = match run.trigger {
            Trigger::RunNow => "run-now request".to_string(),
            _ => format!("tick {}", run.scheduled_time.to_rfc3339()),
        };
        publish(
            ctx,
            s,
            false,
            "Created",
            "Create",
            format!("created ActionSet {} for {what}", run.name),
        )
        .await;
    }
}

/// Count and announce the ticks the plan did not start.
pub(super) async fn announce_skips(ctx: &Ctx, s: &ActionSchedule, labels: &Labels, skips: &[Skip]) {
    for skip in skips {
        ctx.metrics
            .runs_skipped
            .get_or_create(&with(labels.clone(), "reason", skip.reason.as_str()))
            .inc_by(u64::from(skip.count));
        let event_reason = match skip.reason {
            SkipReason::Missed => "MissedSchedule",
            SkipReason::DeadlineExceeded => "MissedDeadline",
            SkipReason::Suspended => "SkippedSuspended",
            SkipReason::ConcurrencyForbid => "SkippedConcurrency",
            SkipReason::OutsideWindow => "SkippedOutsideWindow",
            SkipReason::TooManyFailures => "SkippedTooManyFailures",
        };
        let warning = skip.reason.is_missed()
            || matches!(
                skip.reason,
                SkipReason::ConcurrencyForbid | SkipReason::TooManyFailures
            );
        publish(
            ctx,
            s,
            warning,
            event_reason,
            "Schedule",
            skip.message.clone(),
        )
        .await;
    }
}

/// Count and announce a run that retention removed.
pub(super) async fn rotated(
    ctx: &Ctx,
    s: &ActionSchedule,
    labels: &Labels,
    state: RunState,
    note: String,
) {
    ctx.metrics
        .runs_rotated
        .get_or_create(&with(labels.clone(), "state", state.as_str()))
        .inc();
    publish(ctx, s, false, "Rotated", "Delete", note).await;
}
