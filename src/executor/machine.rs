//! The action state machine, as pure code: it reads an ActionSet's status
//! (plus our small [`Record`]), says what to do next ([`next_step`]) and
//! applies what happened ([`apply`]) to the status, returning the Kanister
//! Events to publish, in order. It knows nothing of the API server;
//! [`super::plan`] turns the next step and what the driver observed into
//! what the driver does.
//!
//! Rules (per action; actions of one ActionSet are independent and run in
//! parallel):
//! - main phases run in order; the first failure stops them (later phases stay
//!   `pending`);
//! - the deferPhase then always runs: after success, after a phase failure,
//!   after a failure to launch the action (template parameters could not be
//!   built) and when the ActionSet is being deleted;
//! - the deferPhase goes `pending` -> `running` -> `complete`/`failed`, and is
//!   recorded `running` *before* it executes, so it runs at most once;
//! - a phase or deferPhase found `running` when nobody executes it (the
//!   controller restarted mid-phase) is resumed ([`Transition::Resumed`]:
//!   re-attached to its pod, re-entered, or re-run once as the Blueprint
//!   allows, see [`super::resume`]) or else failed with "controller
//!   restarted while phase X was running": re-running a non-idempotent
//!   phase is worse than failing it; the deferPhase then runs;
//! - output artifacts are rendered only when every phase and the deferPhase
//!   succeeded (Kanister since #1393);
//! - the ActionSet stays `running` until every action finished (deferPhase
//!   included), then turns `complete` or `failed`; the error message keeps
//!   the main error and the deferPhase error.

use std::collections::BTreeMap;

use kube::core::ObjectMeta;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::events::{self, EventSpec};
use super::resume::How;
use super::status_size;
use crate::model::{
    ActionSetSpec, ActionSetStatus, ActionSpec, ActionStatus, Artifact, BlueprintAction, Phase,
    State,
};

use crate::model::labels::{self, ANNOTATION_EXECUTOR_RECORD, FINALIZER_DEFER_PHASE};

/// What the executor must remember across restarts and the status schema
/// cannot hold: one entry per spec action, same order.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Record {
    pub actions: Vec<ActionRecord>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ActionRecord {
    /// `.Time` of the action (RFC 3339, UTC), fixed when it started.
    pub time: String,
    /// Error that stopped the main phases ("" while they are fine).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub error: String,
    /// Name of the main phase that failed ("" if none or if the action
    /// failed before/between phases).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub failed_phase: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub defer_error: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub artifacts_error: String,
    /// The action is over (deferPhase ended, artifacts handled).
    pub finished: bool,
    /// Pods (`<namespace>/<name>`) the running phase or deferPhase created.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub pods: Vec<String>,
    /// Outputs the running step recorded before its effect (a step entered
    /// again after a restart reuses them).
    #[serde(skip_serializing_if = "Map::is_empty")]
    pub early_output: Map<String, Value>,
    /// Phases (deferPhase: `defer:<name>`) re-run after a controller restart.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub rerun: Vec<String>,
}

impl ActionRecord {
    /// The [`ActionRecord::rerun`] entry of a phase.
    pub fn rerun_key(phase: &str, defer: bool) -> String {
        if defer {
            format!("defer:{phase}")
        } else {
            phase.to_string()
        }
    }
}

impl Record {
    /// Reads the record from the ActionSet's annotations. A missing or
    /// unreadable record (someone edited it) yields `n` fresh entries with
    /// `time = now`, and the reason, so the action can still finish and run
    /// its deferPhase.
    pub fn from_meta(meta: &ObjectMeta, n: usize, now: &str) -> (Record, Option<String>) {
        let raw = meta
            .annotations
            .as_ref()
            .and_then(|a| a.get(ANNOTATION_EXECUTOR_RECORD));
        let (mut rec, problem) = match raw {
            None => (Record::default(), None),
            Some(text) => match serde_json::from_str::<Record>(text) {
                Ok(r) => (r, None),
                Err(e) => (
                    Record::default(),
                    Some(format!(
                        "annotation {ANNOTATION_EXECUTOR_RECORD} is not valid JSON ({e}); it was reset"
                    )),
                ),
            },
        };
        rec.actions.truncate(n);
        while rec.actions.len() < n {
            rec.actions.push(ActionRecord {
                time: now.to_string(),
                ..ActionRecord::default()
            });
        }
        (rec, problem)
    }

    /// Writes the record into the annotations.
    pub fn to_meta(&self, meta: &mut ObjectMeta) {
        let text = serde_json::to_string(self).unwrap_or_default();
        meta.annotations
            .get_or_insert_with(BTreeMap::new)
            .insert(ANNOTATION_EXECUTOR_RECORD.to_string(), text);
    }
}

/// Why an action of the spec cannot be initialised.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum InitError {
    BlueprintNotSpecified {
        action: String,
    },
    BlueprintNotFound {
        blueprint: String,
        error: String,
    },
    ActionNotFound {
        action: String,
        kind: String,
        blueprint: String,
    },
}

impl InitError {
    fn message(&self) -> String {
        match self {
            InitError::BlueprintNotSpecified { action } => format!(
                "Blueprint not specified for action {action}: set spec.actions[].blueprint to the name of a Blueprint in the ActionSet's namespace"
            ),
            InitError::BlueprintNotFound { blueprint, error } => {
                format!("Failed to query blueprint {blueprint}: {error}")
            }
            InitError::ActionNotFound {
                action,
                kind,
                blueprint,
            } => {
                format!("Action {action} for object kind {kind} not found in blueprint {blueprint}")
            }
        }
    }

    fn event(&self) -> EventSpec {
        match self {
            InitError::BlueprintNotSpecified { action } => events::blueprint_not_specified(action),
            InitError::BlueprintNotFound { blueprint, error } => {
                events::blueprint_not_found(blueprint, error)
            }
            InitError::ActionNotFound {
                action,
                kind,
                blueprint,
            } => events::action_not_found(action, kind, blueprint),
        }
    }
}

/// The first status of an ActionSet.
#[derive(Clone, Debug, PartialEq)]
pub struct Init {
    pub status: ActionSetStatus,
    pub record: Record,
    pub events: Vec<EventSpec>,
    /// Whether actions will run (hold the finalizer) or it failed at once.
    pub started: bool,
}

/// Initialises the status, as Kanister's `initActionSetStatus`, but goes
/// straight to `running` (one write instead of two). Any action that cannot
/// be resolved fails the whole ActionSet before anything runs (nothing ran,
/// so no deferPhase runs either). Zero actions: `complete`.
pub fn init(
    actionset: &str,
    spec: Option<&ActionSetSpec>,
    resolved: &[Result<BlueprintAction, InitError>],
    now: &str,
) -> Init {
    let mut status = ActionSetStatus::default();
    let mut events = Vec::new();
    let errors: Vec<&InitError> = resolved.iter().filter_map(|r| r.as_ref().err()).collect();
    if !errors.is_empty() {
        status.state = State::Failed;
        let message = errors
            .iter()
            .map(|e| e.message())
            .collect::<Vec<_>>()
            .join("; ");
        status.error.message = status_size::cut(&message, status_size::MESSAGE_MAX);
        events.extend(errors.iter().map(|e| e.event()));
        return Init {
            status,
            record: Record::default(),
            events,
            started: false,
        };
    }
    let actions = spec.map(|s| s.actions.as_slice()).unwrap_or_default();
    if actions.is_empty() {
        status.state = State::Complete;
        events.push(events::update_complete(actionset));
        return Init {
            status,
            record: Record::default(),
            events,
            started: false,
        };
    }
    let mut record = Record::default();
    for (spec_action, bp) in actions.iter().zip(resolved) {
        let Ok(bp) = bp else { continue };
        let phases = bp
            .phases
            .iter()
            .map(|p| Phase {
                name: p.name.clone(),
                state: State::Pending,
                ..Phase::default()
            })
            .collect();
        let defer_phase = match &bp.defer_phase {
            Some(d) => Phase {
                name: d.name.clone(),
                state: State::Pending,
                ..Phase::default()
            },
            None => Phase::default(),
        };
        status.actions.push(ActionStatus {
            name: spec_action.name.clone(),
            object: spec_action.object.clone(),
            blueprint: spec_action.blueprint.clone(),
            phases,
            artifacts: bp.output_artifacts.clone(),
            defer_phase,
            ..ActionStatus::default()
        });
        record.actions.push(ActionRecord {
            time: now.to_string(),
            ..ActionRecord::default()
        });
        events.push(events::started_action(&spec_action.name));
    }
    status.state = State::Running;
    Init {
        status,
        record,
        events,
        started: true,
    }
}

/// What an action's driver does next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// Record main phase `i` running, then execute it.
    RunPhase(usize),
    /// Record the deferPhase running, then execute it.
    RunDefer,
    /// Something is recorded `running` that nobody executes (the controller
    /// restarted): apply [`Transition::Interrupted`].
    Interrupted,
    /// The ActionSet is being deleted before the next main phase: apply
    /// [`Transition::Stopped`].
    Stop,
    /// Render the output artifacts if the action succeeded, then apply
    /// [`Transition::Finished`].
    Finish,
    /// Nothing left to do.
    Done,
}

fn has_defer(st: &ActionStatus) -> bool {
    st.defer_phase.state != State::Unset
}

/// The main phases are over: one failed, all completed, or the action
/// failed before/between phases.
pub fn main_over(st: &ActionStatus, rec: &ActionRecord) -> bool {
    !rec.error.is_empty()
        || st.phases.iter().any(|p| p.state == State::Failed)
        || st.phases.iter().all(|p| p.state == State::Complete)
}

/// Every phase and the deferPhase succeeded (so far).
pub fn succeeded(st: &ActionStatus, rec: &ActionRecord) -> bool {
    rec.error.is_empty()
        && rec.defer_error.is_empty()
        && rec.artifacts_error.is_empty()
        && st.phases.iter().all(|p| p.state == State::Complete)
        && (!has_defer(st) || st.defer_phase.state == State::Complete)
}

/// Decides the next step of one action from its status and record.
pub fn next_step(st: &ActionStatus, rec: &ActionRecord, deleting: bool) -> Step {
    if rec.finished {
        return Step::Done;
    }
    if st.phases.iter().any(|p| p.state == State::Running) || st.defer_phase.state == State::Running
    {
        return Step::Interrupted;
    }
    if !main_over(st, rec) {
        if deleting {
            return Step::Stop;
        }
        let i = st
            .phases
            .iter()
            .position(|p| p.state != State::Complete)
            .unwrap_or_default();
        return Step::RunPhase(i);
    }
    if has_defer(st) && st.defer_phase.state == State::Pending {
        return Step::RunDefer;
    }
    Step::Finish
}

/// What happened to an action.
#[derive(Clone, Debug, PartialEq)]
pub enum Transition {
    PhaseStarted(usize),
    PhaseSucceeded(usize, Map<String, Value>),
    PhaseFailed(usize, String),
    /// Fails whatever is recorded `running` (controller restart).
    Interrupted,
    /// What is recorded `running` goes on after a controller restart
    /// (state unchanged; the record and an Event say how).
    Resumed(How),
    /// The running phase or deferPhase created a pod (`<namespace>/<name>`).
    PodCreated(String),
    /// The running phase or deferPhase will output this (known before its effect).
    EarlyOutput(String, Value),
    /// The main phases are stopped before phase `next` (deletion).
    Stopped(String),
    /// The action could not start (template parameters could not be built).
    LaunchFailed(String),
    DeferStarted,
    DeferSucceeded(Map<String, Value>),
    DeferFailed(String),
    /// The last log lines of the pods of failed main phase `Some(i)` or the
    /// failed deferPhase (`None`), kept before the pods are deleted
    /// ([`super::pod_logs`]).
    PodLogs(Option<usize>, Map<String, Value>),
    /// The action is over; `Some` artifacts (or the render error) only when
    /// it succeeded, `None` otherwise (artifacts stay as templates).
    Finished(Option<Result<BTreeMap<String, Artifact>, String>>),
}

/// A transition that does not fit the current status: another writer
/// changed it (a second controller, a user). The driver stops.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "ActionSet {actionset} action {action}: cannot apply {transition} to the current status ({why})"
)]
pub struct Stale {
    pub actionset: String,
    pub action: String,
    pub transition: String,
    pub why: String,
}

/// Inputs of [`apply`] that are not status.
#[derive(Clone, Copy, Debug)]
pub struct Ctx<'a> {
    pub actionset: &'a str,
    /// RFC 3339 time of the transition.
    pub now: &'a str,
}

/// The message written when the controller finds a phase `running` that no
/// one executes.
pub fn interrupted_message(phase: &str, defer: bool) -> String {
    let what = if defer { "deferPhase" } else { "phase" };
    format!(
        "controller restarted while {what} {phase} was running; it was not re-run because it may not be idempotent"
    )
}

/// The message written when a phase re-run after a restart is found
/// `running` again.
pub fn interrupted_again_message(phase: &str, defer: bool) -> String {
    let what = if defer { "deferPhase" } else { "phase" };
    format!(
        "controller restarted while {what} {phase} was running, again after it was re-run once (blueprint-operator.io/rerun-on-restart); it was not re-run a second time"
    )
}

/// Applies a transition of action `action` to the status and record, and
/// returns the Events to publish, in order.
pub fn apply(
    status: &mut ActionSetStatus,
    record: &mut Record,
    action: usize,
    t: Transition,
    ctx: Ctx<'_>,
) -> Result<Vec<EventSpec>, Stale> {
    let action_name = status
        .actions
        .get(action)
        .map(|a| a.name.clone())
        .unwrap_or_else(|| format!("#{action}"));
    let transition = format!("{t:?}")
        .split(['(', ' '])
        .next()
        .unwrap_or_default()
        .to_string();
    let stale = |why: &str| Stale {
        actionset: ctx.actionset.to_string(),
        action: action_name.clone(),
        transition: transition.clone(),
        why: why.to_string(),
    };
    if status.state != State::Running {
        return Err(stale(&format!("ActionSet is {}", status.state.as_str())));
    }
    let t = bound_sizes(status, action, t);
    let (Some(st), Some(rec)) = (
        status.actions.get_mut(action),
        record.actions.get_mut(action),
    ) else {
        return Err(stale("no such action in status"));
    };
    if rec.finished {
        return Err(stale("action already finished"));
    }
    let mut evs = Vec::new();
    let name = st.name.clone();
    let bp = st.blueprint.clone();
    let mut running_phase: Option<String> = None;
    // A phase starts or ends: the pods recorded are the previous step's.
    if matches!(
        t,
        Transition::PhaseStarted(_)
            | Transition::PhaseSucceeded(..)
            | Transition::PhaseFailed(..)
            | Transition::Interrupted
            | Transition::DeferStarted
            | Transition::DeferSucceeded(_)
            | Transition::DeferFailed(_)
    ) {
        rec.pods.clear();
        rec.early_output.clear();
    }
    match t {
        Transition::PhaseStarted(i) => {
            if main_over(st, rec) || st.phases.iter().any(|p| p.state == State::Running) {
                return Err(stale("main phases are over or one is running"));
            }
            if st.phases.iter().position(|p| p.state != State::Complete) != Some(i) {
                return Err(stale("phase is not the next pending one"));
            }
            let p = &mut st.phases[i];
            p.state = State::Running;
            p.progress.progress_percent = "0".into();
            p.progress.last_transition_time = Some(ctx.now.to_string());
            running_phase = Some(p.name.clone());
            evs.push(events::started_phase(&p.name));
        }
        Transition::PhaseSucceeded(i, output) => {
            let Some(p) = st.phases.get_mut(i).filter(|p| p.state == State::Running) else {
                return Err(stale("phase is not running"));
            };
            p.state = State::Complete;
            p.output = output;
            p.progress.progress_percent = "100".into();
            p.progress.last_transition_time = Some(ctx.now.to_string());
            evs.push(events::ended_phase(&p.name));
            running_phase = Some(String::new());
        }
        Transition::PhaseFailed(i, err) => {
            let Some(p) = st.phases.get_mut(i).filter(|p| p.state == State::Running) else {
                return Err(stale("phase is not running"));
            };
            p.state = State::Failed;
            p.progress.last_transition_time = Some(ctx.now.to_string());
            rec.error = err.clone();
            rec.failed_phase = p.name.clone();
            evs.push(events::phase_failed(&name, &p.name, &bp, &err));
            running_phase = Some(String::new());
        }
        Transition::Interrupted => {
            let again = |n: &str, d: bool| rec.rerun.contains(&ActionRecord::rerun_key(n, d));
            if let Some(p) = st.phases.iter_mut().find(|p| p.state == State::Running) {
                let err = if again(&p.name, false) {
                    interrupted_again_message(&p.name, false)
                } else {
                    interrupted_message(&p.name, false)
                };
                p.state = State::Failed;
                p.progress.last_transition_time = Some(ctx.now.to_string());
                rec.error = err.clone();
                rec.failed_phase = p.name.clone();
                evs.push(events::phase_failed(&name, &p.name, &bp, &err));
            } else if st.defer_phase.state == State::Running {
                let d = &mut st.defer_phase;
                let err = if again(&d.name, true) {
                    interrupted_again_message(&d.name, true)
                } else {
                    interrupted_message(&d.name, true)
                };
                d.state = State::Failed;
                d.progress.last_transition_time = Some(ctx.now.to_string());
                rec.defer_error = err.clone();
                evs.push(events::defer_failed(&name, &d.name, &bp, &err));
            } else {
                return Err(stale("nothing is running"));
            }
            running_phase = Some(String::new());
        }
        Transition::Resumed(how) => {
            let (phase, defer) = match st.phases.iter().find(|p| p.state == State::Running) {
                Some(p) => (p.name.clone(), false),
                None if st.defer_phase.state == State::Running => {
                    (st.defer_phase.name.clone(), true)
                }
                None => return Err(stale("nothing is running")),
            };
            if how == How::Rerun {
                let key = ActionRecord::rerun_key(&phase, defer);
                if rec.rerun.contains(&key) {
                    return Err(stale("phase was already re-run once"));
                }
                rec.rerun.push(key);
                // The pods and outputs of the first run are not this run's.
                rec.pods.clear();
                rec.early_output.clear();
            }
            evs.push(events::resumed(&phase, defer, how));
        }
        Transition::PodCreated(pod) => {
            if !st.phases.iter().any(|p| p.state == State::Running)
                && st.defer_phase.state != State::Running
            {
                return Err(stale("nothing is running"));
            }
            if !rec.pods.contains(&pod) {
                rec.pods.push(pod);
            }
            // Not a transition of the action: the aggregate fields stay.
            return Ok(evs);
        }
        Transition::PodLogs(step, logs) => {
            // The Event is about the pod, published by the driver.
            let p = match step {
                Some(i) => st.phases.get_mut(i),
                None => Some(&mut st.defer_phase),
            };
            let Some(p) = p.filter(|p| p.state == State::Failed) else {
                return Err(stale("the step has not failed"));
            };
            p.output
                .insert(labels::OUTPUT_POD_LOGS.into(), Value::Object(logs));
            // Not a transition of the action: the aggregate fields stay.
            return Ok(evs);
        }
        Transition::EarlyOutput(key, value) => {
            if !st.phases.iter().any(|p| p.state == State::Running)
                && st.defer_phase.state != State::Running
            {
                return Err(stale("nothing is running"));
            }
            rec.early_output.insert(key, value);
            return Ok(evs);
        }
        Transition::Stopped(err) | Transition::LaunchFailed(err)
            if main_over(st, rec) || st.phases.iter().any(|p| p.state == State::Running) =>
        {
            let _ = err;
            return Err(stale("main phases are over or one is running"));
        }
        Transition::LaunchFailed(err) => {
            // As Kanister: a launch failure marks the first phase failed.
            if let Some(p) = st.phases.first_mut().filter(|p| p.state == State::Pending) {
                p.state = State::Failed;
                p.progress.last_transition_time = Some(ctx.now.to_string());
                rec.failed_phase = p.name.clone();
            }
            evs.push(events::launch_failed(&name, ctx.actionset, &bp, &err));
            rec.error = err;
        }
        Transition::Stopped(err) => {
            evs.push(EventSpec {
                kind: crate::events::Kind::Warning,
                reason: events::failed_reason(&name),
                message: err.clone(),
                blueprint: None,
            });
            rec.error = err;
        }
        Transition::DeferStarted => {
            if !main_over(st, rec) || st.defer_phase.state != State::Pending {
                return Err(stale("main phases not over or deferPhase not pending"));
            }
            let d = &mut st.defer_phase;
            d.state = State::Running;
            d.progress.last_transition_time = Some(ctx.now.to_string());
            running_phase = Some(d.name.clone());
            evs.push(events::started_defer(&d.name));
        }
        Transition::DeferSucceeded(output) => {
            if st.defer_phase.state != State::Running {
                return Err(stale("deferPhase is not running"));
            }
            let d = &mut st.defer_phase;
            d.state = State::Complete;
            d.output = output;
            d.progress.last_transition_time = Some(ctx.now.to_string());
            evs.push(events::ended_defer(&d.name));
            running_phase = Some(String::new());
        }
        Transition::DeferFailed(err) => {
            if !matches!(st.defer_phase.state, State::Running | State::Pending) {
                return Err(stale("deferPhase already ended"));
            }
            let d = &mut st.defer_phase;
            d.state = State::Failed;
            d.progress.last_transition_time = Some(ctx.now.to_string());
            evs.push(events::defer_failed(&name, &d.name, &bp, &err));
            rec.defer_error = err;
            running_phase = Some(String::new());
        }
        Transition::Finished(artifacts) => {
            if next_step(st, rec, false) != Step::Finish {
                return Err(stale("action is not ready to finish"));
            }
            match artifacts {
                Some(Ok(mut a)) => {
                    // Keep what others wrote beside ours (fields our model lacks).
                    for (k, new) in a.iter_mut() {
                        for (f, v) in st.artifacts.get(k).map(|o| &o.extra).into_iter().flatten() {
                            new.extra.entry(f.clone()).or_insert_with(|| v.clone());
                        }
                    }
                    st.artifacts = a;
                }
                Some(Err(e)) => {
                    evs.push(events::render_artifacts_failed(&name, &bp, &e));
                    rec.artifacts_error = e;
                }
                None => {}
            }
            rec.finished = true;
            running_phase = Some(String::new());
        }
    }
    // Aggregate ActionSet fields.
    if let Some(rp) = running_phase {
        status.progress.running_phase = rp;
    }
    status.progress.last_transition_time = Some(ctx.now.to_string());
    status.progress.percent_completed = percent_completed(status);
    status.error.message =
        status_size::cut(&error_message(status, record), status_size::MESSAGE_MAX);
    if record.actions.iter().all(|r| r.finished) {
        let ok = status
            .actions
            .iter()
            .zip(&record.actions)
            .all(|(s, r)| succeeded(s, r));
        status.progress.running_phase.clear();
        if ok {
            status.state = State::Complete;
            evs.push(events::update_complete(ctx.actionset));
        } else {
            status.state = State::Failed;
        }
    }
    Ok(evs)
}

/// Keeps what `t` records within the status size budgets
/// ([`status_size`]): errors are cut, an output or artifacts too large to
/// record turn the transition into a failure that says so.
fn bound_sizes(status: &ActionSetStatus, action: usize, t: Transition) -> Transition {
    let budget = status_size::error_budget(status.actions.len());
    let cut = |e: String| status_size::cut(&e, budget);
    let st = status.actions.get(action);
    match t {
        Transition::PhaseSucceeded(i, out) => {
            let name = st
                .and_then(|s| s.phases.get(i))
                .map(|p| p.name.as_str())
                .unwrap_or_default();
            let what = format!("phase {name}");
            match status_size::check_output(status, action, Some(i), &what, &out) {
                Ok(()) => Transition::PhaseSucceeded(i, out),
                Err(e) => Transition::PhaseFailed(i, cut(e.to_string())),
            }
        }
        Transition::DeferSucceeded(out) => {
            let name = st.map(|s| s.defer_phase.name.as_str()).unwrap_or_default();
            let what = format!("deferPhase {name}");
            match status_size::check_output(status, action, None, &what, &out) {
                Ok(()) => Transition::DeferSucceeded(out),
                Err(e) => Transition::DeferFailed(cut(e.to_string())),
            }
        }
        Transition::Finished(Some(Ok(arts))) => match status_size::check_artifacts(&arts) {
            Ok(()) => Transition::Finished(Some(Ok(arts))),
            Err(e) => Transition::Finished(Some(Err(cut(e.to_string())))),
        },
        Transition::Finished(Some(Err(e))) => Transition::Finished(Some(Err(cut(e)))),
        Transition::PhaseFailed(i, e) => Transition::PhaseFailed(i, cut(e)),
        Transition::Stopped(e) => Transition::Stopped(cut(e)),
        Transition::LaunchFailed(e) => Transition::LaunchFailed(cut(e)),
        Transition::DeferFailed(e) => Transition::DeferFailed(cut(e)),
        other => other,
    }
}

/// Integer average of phase progress over all actions (deferPhase excluded).
fn percent_completed(status: &ActionSetStatus) -> String {
    let phases: Vec<&Phase> = status.actions.iter().flat_map(|a| &a.phases).collect();
    if phases.is_empty() {
        return String::new();
    }
    let sum: u64 = phases
        .iter()
        .map(|p| {
            p.progress
                .progress_percent
                .parse::<u64>()
                .unwrap_or(0)
                .min(100)
        })
        .sum();
    (sum / phases.len() as u64).to_string()
}

/// The error of one action: the main error, the deferPhase error, or both.
pub fn action_message(st: &ActionStatus, rec: &ActionRecord) -> String {
    let mut msg = rec.error.clone();
    if !rec.defer_error.is_empty() {
        if msg.is_empty() {
            msg = rec.defer_error.clone();
        } else {
            msg = format!(
                "{msg}; deferPhase {} also failed: {}",
                st.defer_phase.name, rec.defer_error
            );
        }
    }
    if msg.is_empty() {
        msg = rec.artifacts_error.clone();
    }
    msg
}

/// `status.error.message`: the failing action's message; with several
/// actions, each prefixed by its name.
pub fn error_message(status: &ActionSetStatus, record: &Record) -> String {
    let msgs: Vec<(String, String)> = status
        .actions
        .iter()
        .zip(&record.actions)
        .map(|(s, r)| (s.name.clone(), action_message(s, r)))
        .filter(|(_, m)| !m.is_empty())
        .collect();
    if status.actions.len() <= 1 {
        return msgs.into_iter().map(|(_, m)| m).next().unwrap_or_default();
    }
    msgs.into_iter()
        .map(|(n, m)| format!("action {n}: {m}"))
        .collect::<Vec<_>>()
        .join("; ")
}

/// `.Outcome` for the deferPhase template.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "PascalCase")]
pub struct Outcome {
    /// `complete` or `failed` (of the main phases).
    pub state: String,
    /// Name of the main phase that failed, "" if none.
    pub failed_phase: String,
    /// The main error, "" if none.
    pub error: String,
}

pub fn outcome(st: &ActionStatus, rec: &ActionRecord) -> Outcome {
    let failed = !rec.error.is_empty() || st.phases.iter().any(|p| p.state == State::Failed);
    Outcome {
        state: if failed { "failed" } else { "complete" }.into(),
        failed_phase: rec.failed_phase.clone(),
        error: rec.error.clone(),
    }
}

/// A Blueprint action edited while its ActionSet ran: its phases no longer match the status.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "Blueprint {blueprint} action {action} changed while ActionSet was running (phases now [{}], recorded [{}]); create a new ActionSet to run the new version",
    now.join(", "),
    recorded.join(", ")
)]
pub struct BlueprintChanged {
    pub blueprint: String,
    pub action: String,
    pub now: Vec<String>,
    pub recorded: Vec<String>,
}

/// Checks that the Blueprint action still matches the status written when
/// the ActionSet started (it may have been edited or deleted since).
pub fn check_blueprint(bp: &BlueprintAction, st: &ActionStatus) -> Result<(), BlueprintChanged> {
    let names: Vec<&str> = bp.phases.iter().map(|p| p.name.as_str()).collect();
    let recorded: Vec<&str> = st.phases.iter().map(|p| p.name.as_str()).collect();
    let defer_ok = match &bp.defer_phase {
        Some(d) => has_defer(st) && d.name == st.defer_phase.name,
        None => !has_defer(st),
    };
    if names != recorded || !defer_ok {
        let owned = |v: Vec<&str>| v.into_iter().map(str::to_string).collect();
        return Err(BlueprintChanged {
            blueprint: st.blueprint.clone(),
            action: st.name.clone(),
            now: owned(names),
            recorded: owned(recorded),
        });
    }
    Ok(())
}

/// The spec entry of status action `i`: the entry at the same index if it is
/// still the same action (name, Blueprint, object), else the first entry
/// that is (an earlier entry was removed). `None` when the entry was removed
/// from the spec while the ActionSet ran.
pub fn spec_action_for<'a>(
    spec: Option<&'a ActionSetSpec>,
    st: &ActionStatus,
    i: usize,
) -> Option<&'a ActionSpec> {
    let same = |a: &&ActionSpec| {
        a.name == st.name
            && a.blueprint == st.blueprint
            && a.object.kind == st.object.kind
            && a.object.name == st.object.name
            && a.object.namespace == st.object.namespace
    };
    let actions = spec.map(|s| s.actions.as_slice()).unwrap_or_default();
    actions
        .get(i)
        .filter(same)
        .or_else(|| actions.iter().find(same))
}

/// Why an action whose spec entry is gone stops (its deferPhase still runs).
pub fn removed_message(st: &ActionStatus) -> String {
    format!(
        "action {} (Blueprint {}, {} {}) was removed from spec.actions while the ActionSet was running: its remaining phases were not run; its deferPhase runs with the action's object only (the removed entry's profile, secrets, configMaps, options and artifacts are gone)",
        st.name, st.blueprint, st.object.kind, st.object.name
    )
}

/// Adds the finalizer (if missing) while the ActionSet runs and removes it
/// once it is terminal. Returns whether metadata changed.
pub fn sync_finalizer(meta: &mut ObjectMeta, state: State) -> bool {
    let fins = meta.finalizers.get_or_insert_with(Vec::new);
    let has = fins.iter().any(|f| f == FINALIZER_DEFER_PHASE);
    let want = state == State::Running;
    if want && !has {
        fins.push(FINALIZER_DEFER_PHASE.to_string());
        true
    } else if !want && has {
        fins.retain(|f| f != FINALIZER_DEFER_PHASE);
        true
    } else {
        false
    }
}

#[cfg(test)]
#[path = "machine_tests.rs"]
mod tests;
