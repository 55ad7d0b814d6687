//! What an action's driver does next, decided from its status, record and the facts the
//! driver observed (pure): the step guards, the action timeout, resuming after a restart,
//! the deletion timeout, the next step started in the same write as a result, and what
//! follows a result (its pods deleted, a failed step's log lines kept first). The driver
//! only runs what this decides.

use std::time::Duration;

use chrono::{DateTime, Utc};

use super::deadline::{self, Timeouts};
use super::events::EventSpec;
use super::machine::{self, ActionRecord, Ctx, Record, Stale, Step, Transition};
use super::resume::{self, How};
use crate::model::{ActionSetStatus, ActionStatus, BlueprintAction, State};

/// What the driver knows besides the status and the record.
#[derive(Clone, Copy, Debug)]
pub struct Facts<'a> {
    /// The Blueprint action (`None`: `broken` says why).
    pub bp: Option<&'a BlueprintAction>,
    pub broken: Option<&'a str>,
    /// Why the action cannot launch (parameters, a bad timeout option).
    pub base_error: Option<&'a str>,
    /// Phases the Blueprint lets re-run once after a restart.
    pub rerun: &'a [String],
    pub timeouts: &'a Timeouts,
    pub now: DateTime<Utc>,
    /// The ActionSet is being deleted.
    pub deleting: bool,
    /// Its `deletionTimestamp`, and how long its deferPhase may take after it.
    pub deleted_at: Option<DateTime<Utc>>,
    pub deletion_timeout: Duration,
    /// Its spec entry was removed while it ran.
    pub removed: bool,
    /// The step whose start was written with the previous result.
    pub started: Option<Step>,
}

/// What the driver does next.
#[derive(Clone, Debug, PartialEq)]
pub enum Plan {
    Done,
    /// Record this; no step runs.
    Record(Transition),
    /// Go on with the step found running after a restart: record how, delete the pods of
    /// the interrupted run unless re-attached to them, then run `step`.
    Resume {
        how: How,
        step: Step,
    },
    /// Run main phase `phase`, recorded running first if `start`.
    RunPhase {
        phase: usize,
        start: bool,
    },
    /// Run the deferPhase, recorded running first if `start`.
    RunDefer {
        start: bool,
    },
    /// Finish the action, with its artifacts rendered if it succeeded.
    Finish {
        render: bool,
    },
    /// The Blueprint lacks the step the status records.
    Missing(String),
}

/// The next thing the driver of action `st` does.
pub fn decide(st: &ActionStatus, rec: &ActionRecord, f: &Facts) -> Plan {
    let pre_started = f.started.is_some();
    let step = f
        .started
        .unwrap_or_else(|| machine::next_step(st, rec, f.deleting));
    match step {
        Step::Done => Plan::Done,
        Step::Interrupted => match resumed(st, rec, f) {
            None => Plan::Record(Transition::Interrupted),
            Some((how, step)) => Plan::Resume { how, step },
        },
        Step::Stop => {
            let next = st
                .phases
                .iter()
                .find(|p| p.state == State::Pending)
                .map(|p| p.name.as_str())
                .unwrap_or_default();
            Plan::Record(Transition::Stopped(format!(
                "ActionSet is being deleted: phase {next} and the phases after it were not run"
            )))
        }
        Step::RunPhase(_) if f.removed && !pre_started => {
            Plan::Record(Transition::Stopped(machine::removed_message(st)))
        }
        Step::RunPhase(_) if f.broken.is_some() => {
            Plan::Record(Transition::Stopped(f.broken.unwrap_or_default().into()))
        }
        Step::RunPhase(_) if f.base_error.is_some() => Plan::Record(Transition::LaunchFailed(
            f.base_error.unwrap_or_default().into(),
        )),
        Step::RunPhase(p) => match action_expired(st, rec, f, p) {
            Some(m) if !pre_started => Plan::Record(Transition::Stopped(m)),
            _ if f.bp.is_none_or(|b| b.phases.len() <= p) => Plan::Missing(format!("phase #{p}")),
            _ => Plan::RunPhase {
                phase: p,
                start: !pre_started,
            },
        },
        Step::RunDefer => {
            let has_defer = f.bp.is_some_and(|b| b.defer_phase.is_some());
            if pre_started && !has_defer {
                return Plan::Missing("deferPhase".into());
            }
            if pre_started {
                return Plan::RunDefer { start: false };
            }
            if !has_defer {
                let why = f.broken.unwrap_or("deferPhase missing from the Blueprint");
                return Plan::Record(Transition::DeferFailed(format!(
                    "deferPhase not run: {why}"
                )));
            }
            let elapsed = |d: &DateTime<Utc>| (f.now - *d).to_std().unwrap_or_default();
            if f.deleted_at
                .is_some_and(|d| elapsed(&d) >= f.deletion_timeout)
            {
                return Plan::Record(Transition::DeferFailed(format!(
                    "deferPhase not run: the ActionSet was deleted and the deletion timeout ({}s) elapsed",
                    f.deletion_timeout.as_secs()
                )));
            }
            Plan::RunDefer { start: true }
        }
        Step::Finish => Plan::Finish {
            render: machine::succeeded(st, rec),
        },
    }
}

/// How the step found running after a restart goes on, with the step it is (`None`: it
/// is failed).
fn resumed(st: &ActionStatus, rec: &ActionRecord, f: &Facts) -> Option<(How, Step)> {
    let bp = f.bp.filter(|_| f.base_error.is_none())?;
    let (phase, step, defer) = match st.phases.iter().position(|p| p.state == State::Running) {
        Some(p) => (bp.phases.get(p)?, Step::RunPhase(p), false),
        None if st.defer_phase.state == State::Running => {
            (bp.defer_phase.as_ref()?, Step::RunDefer, true)
        }
        None => return None,
    };
    let again = rec
        .rerun
        .contains(&ActionRecord::rerun_key(&phase.name, defer));
    let how = resume::decide(
        &phase.func,
        phase.args.as_ref(),
        &phase.name,
        f.rerun,
        again,
    )?;
    Some((how, step))
}

/// The message to stop the action with before main phase `next`, once its action
/// timeout has passed.
fn action_expired(st: &ActionStatus, rec: &ActionRecord, f: &Facts, next: usize) -> Option<String> {
    let phase = st.phases.get(next).map(|p| p.name.as_str());
    deadline::action_expired(
        f.timeouts,
        &st.name,
        deadline::parse_time(Some(&rec.time)),
        phase.unwrap_or_default(),
        f.now,
    )
}

/// The step started in the same write as a result, when it needs nothing first: one API
/// write per step instead of two. Not while deleting: the deferPhase's start is checked
/// against the deletion timeout then.
fn start_next(st: &ActionStatus, rec: &ActionRecord, f: &Facts) -> Option<(Step, Transition)> {
    if f.deleting {
        return None;
    }
    let f = Facts {
        started: None,
        ..*f
    };
    match decide(st, rec, &f) {
        Plan::RunPhase { phase, start: true } => {
            Some((Step::RunPhase(phase), Transition::PhaseStarted(phase)))
        }
        Plan::RunDefer { start: true } => Some((Step::RunDefer, Transition::DeferStarted)),
        _ => None,
    }
}

/// Applies `t` to action `i` and, with `facts`, the start of the next step in the same
/// write. Returns the Events in order and the step started.
pub fn record(
    status: &mut ActionSetStatus,
    record: &mut Record,
    i: usize,
    t: Transition,
    ctx: Ctx<'_>,
    facts: Option<&Facts>,
) -> Result<(Vec<EventSpec>, Option<Step>), Stale> {
    let mut evs = machine::apply(status, record, i, t, ctx)?;
    let next = match (facts, status.actions.get(i), record.actions.get(i)) {
        (Some(f), Some(st), Some(rec)) => start_next(st, rec, f),
        _ => None,
    };
    let Some((step, start)) = next else {
        return Ok((evs, None));
    };
    evs.extend(machine::apply(status, record, i, start, ctx)?);
    Ok((evs, Some(step)))
}

/// What follows a recorded result `t`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct After {
    /// The step ended: its pods are deleted (a cancelled step's guards left them).
    pub delete_pods: bool,
    /// A failed step (`Some(i)`: main phase `i`, `None`: the deferPhase): its pods' last
    /// log lines are kept on it before they are deleted.
    pub keep_logs: Option<Option<usize>>,
}

pub fn after(t: &Transition) -> After {
    let delete_pods = matches!(
        t,
        Transition::PhaseSucceeded(..)
            | Transition::PhaseFailed(..)
            | Transition::DeferSucceeded(_)
            | Transition::DeferFailed(_)
            | Transition::Interrupted
    );
    let keep_logs = match t {
        Transition::PhaseFailed(p, _) => Some(Some(*p)),
        Transition::DeferFailed(_) => Some(None),
        _ => None,
    };
    After {
        delete_pods,
        keep_logs,
    }
}

#[cfg(test)]
#[path = "plan_tests.rs"]
mod tests;
