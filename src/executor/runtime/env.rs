//! What one action needs to run its phases: the Blueprint action, template parameters, the
//! function context (tenancy, pod labels, the step's pod records) and fetched phase objects.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use chrono::DateTime;
use kube::api::Api;
use kube::{Client, ResourceExt};
use serde_json::{Map, Value};
use tracing::warn;

use super::write::{Run, WriteError, now_rfc3339, update};
use crate::executor::deadline;
use crate::executor::machine::{self, ActionRecord, Ctx, Record, Step, Transition};
use crate::executor::params::{self, PhaseObjects};
use crate::executor::plan::Facts;
use crate::executor::resume::{self, How};
use crate::executor::tenancy::{self, Scope};
use crate::functions;
use crate::model::{ActionSet, ActionSpec, ActionStatus, Blueprint, BlueprintAction, State};
use crate::template;

/// Everything one action needs to execute phases.
pub(super) struct ActionEnv {
    pub(super) bp: Option<BlueprintAction>,
    /// Why the Blueprint cannot be used (deleted, changed).
    pub(super) broken: Option<String>,
    pub(super) base: Map<String, Value>,
    pub(super) base_error: Option<String>,
    pub(super) fctx: functions::Context,
    pub(super) timeouts: deadline::Timeouts,
    pub(super) scope: Scope,
    /// Fetched phase `objects` by phase name, for `.Phases.<name>.Secrets`.
    pub(super) objects: Mutex<PhaseObjects>,
    /// Phases the Blueprint declares safe to re-run after a restart.
    pub(super) rerun: Vec<String>,
}

impl ActionEnv {
    /// What [`crate::executor::plan::decide`] needs besides action `i`'s status and record
    /// in `obj`, now; `deleting`: the task was told of the deletion.
    pub(super) fn facts(
        &self,
        obj: &ActionSet,
        i: usize,
        deleting: bool,
        deletion_timeout: Duration,
        started: Option<Step>,
    ) -> Facts<'_> {
        let deleted_at = obj.metadata.deletion_timestamp.as_ref();
        let st = obj.status.as_ref().and_then(|s| s.actions.get(i));
        Facts {
            bp: self.bp.as_ref(),
            broken: self.broken.as_deref(),
            base_error: self.base_error.as_deref(),
            rerun: &self.rerun,
            timeouts: &self.timeouts,
            now: chrono::Utc::now(),
            deleting: deleting || deleted_at.is_some(),
            deleted_at: deleted_at
                .and_then(|t| DateTime::from_timestamp_millis(t.0.as_millisecond())),
            deletion_timeout,
            removed: st
                .is_some_and(|st| machine::spec_action_for(obj.spec.as_ref(), st, i).is_none()),
            started,
        }
    }
}

pub(super) async fn action_env(run: &Run<'_>, obj: &ActionSet, i: usize) -> ActionEnv {
    let client = &run.inner.client;
    let st = obj
        .status
        .as_ref()
        .and_then(|s| s.actions.get(i))
        .cloned()
        .unwrap_or_default();
    // An entry removed from the spec leaves the action's object, from its
    // status, for the deferPhase.
    let spec = machine::spec_action_for(obj.spec.as_ref(), &st, i)
        .cloned()
        .unwrap_or_else(|| ActionSpec {
            name: st.name.clone(),
            blueprint: st.blueprint.clone(),
            object: st.object.clone(),
            ..ActionSpec::default()
        });
    let fetched = get_blueprint(client, run.ns, &st.blueprint).await;
    let bp_annotations = fetched
        .as_ref()
        .ok()
        .and_then(|b| b.metadata.annotations.clone());
    let (bp, broken) = match fetched {
        Err(e) => (
            None,
            Some(format!(
                "Failed to query blueprint {}: {}",
                st.blueprint,
                crate::kube_error::describe(&e)
            )),
        ),
        Ok(bp) => match bp.actions.get(&st.name) {
            None => (
                None,
                Some(format!(
                    "Action {} not found in blueprint {} any more",
                    st.name, st.blueprint
                )),
            ),
            Some(a) => match machine::check_blueprint(a, &st) {
                Ok(()) => (Some(a.clone()), None),
                Err(e) => (None, Some(e.to_string())),
            },
        },
    };
    let (rec, _) = Record::from_meta(&obj.metadata, i + 1, &now_rfc3339());
    let time = rec.actions[i].time.clone();
    let policy = &run.inner.cfg.tenancy;
    let scope = policy.scope(run.ns);
    let (base, mut base_error) =
        params::fetch_base_with(client, run.ns, &spec, &time, policy).await;
    // A bad timeout option fails the action at launch (the deferPhase runs,
    // bounded by the default).
    let (timeouts, bad_timeout) = deadline::resolve(
        run.inner.cfg.timeouts,
        &spec.options,
        bp_annotations.as_ref(),
        &st.name,
    );
    if base_error.is_none() {
        base_error = bad_timeout;
    }
    let mut object = spec.object.clone();
    if object.namespace.is_empty() {
        object.namespace = run.ns.to_string();
    }
    let fctx = functions::Context {
        client: tenancy::confined_client(client.clone(), &scope),
        namespace: run.ns.to_string(),
        object,
        pod_override: spec.pod_override.clone(),
        pod_labels: spec.pod_labels.clone().unwrap_or_default(),
        pod_annotations: spec.pod_annotations.clone().unwrap_or_default(),
        actionset: Some(functions::context::ActionSetRef {
            uid: obj.uid().unwrap_or_default(),
            namespace: run.ns.to_string(),
            name: run.name.to_string(),
            ..Default::default()
        }),
        controller: run.inner.cfg.controller.clone(),
    };
    ActionEnv {
        bp,
        broken,
        base,
        base_error,
        fctx,
        timeouts,
        scope,
        objects: Mutex::new(PhaseObjects::new()),
        rerun: resume::rerun_phases(bp_annotations.as_ref()),
    }
}

/// The `objects` of the main phases in `indexes`, rendered and fetched once
/// per action run (Kanister keeps each phase's objects in `.Phases.<name>`
/// for the rest of the action).
pub(super) async fn phase_objects(
    env: &ActionEnv,
    client: &Client,
    ns: &str,
    st: &ActionStatus,
    indexes: impl Iterator<Item = usize>,
) -> Result<PhaseObjects, PhaseError> {
    let cached = || {
        env.objects
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    };
    let Some(bp) = env.bp.as_ref() else {
        return Ok(cached());
    };
    for j in indexes {
        let Some(phase) = bp.phases.get(j) else {
            continue;
        };
        let known = cached();
        if phase.objects.is_empty() || known.contains_key(&phase.name) {
            continue;
        }
        let refs =
            params::render_objects(&phase.objects, &params::for_phase(&env.base, st, j, &known))?;
        let fetched = params::fetch_phase_objects(client, ns, &refs, &env.scope).await?;
        env.objects
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(phase.name.clone(), fetched);
    }
    Ok(cached())
}

/// Main phases that `.Phases` shows to phase `p`: those that ran, and `p`.
pub(super) fn phases_shown(st: &ActionStatus, p: usize) -> impl Iterator<Item = usize> + '_ {
    st.phases.iter().enumerate().filter_map(move |(j, ph)| {
        (j == p || (j < p && matches!(ph.state, State::Complete | State::Failed))).then_some(j)
    })
}

/// Why a phase failed before or in its function; the text is what the phase's status records.
#[derive(Debug, thiserror::Error)]
pub(super) enum PhaseError {
    /// The phase's (or an earlier phase's) `objects`.
    #[error(transparent)]
    Objects(#[from] params::ParamError),
    /// The phase's `args` templates.
    #[error(transparent)]
    Args(#[from] template::TemplateError),
    #[error(transparent)]
    Function(#[from] functions::FunctionError),
}

pub(super) async fn exec_phase(
    fctx: &functions::Context,
    phase: &crate::model::BlueprintPhase,
    params: Value,
) -> Result<Map<String, Value>, PhaseError> {
    let args = Value::Object(phase.args.clone().unwrap_or_default());
    let rendered = template::render_args(&args, &params, &phase.func)?;
    let args = rendered.as_object().cloned().unwrap_or_default();
    Ok(functions::execute(fctx, &phase.func, &args, &params).await?)
}

/// Pods one step of an action created in this process, and the ActionSet
/// as last written by [`record_pod`] (fresher than the driver's copy).
#[derive(Clone, Default)]
pub(super) struct StepPods {
    pub(super) created: Arc<Mutex<Vec<String>>>,
    pub(super) latest: Arc<Mutex<Option<ActionSet>>>,
}

impl StepPods {
    pub(super) fn take_created(&self) -> Vec<String> {
        std::mem::take(&mut *self.created.lock().unwrap_or_else(|e| e.into_inner()))
    }

    pub(super) fn take_latest(&self) -> Option<ActionSet> {
        self.latest.lock().unwrap_or_else(|e| e.into_inner()).take()
    }
}

/// The function context of step `phase` (`None`: the deferPhase) of action
/// `i`: its pods carry the step's label and are recorded in the ActionSet
/// as they are created; `resume` as in [`functions::context::ActionSetRef::resume`].
pub(super) fn step_context(
    run: &Run<'_>,
    env: &ActionEnv,
    i: usize,
    phase: Option<usize>,
    resume: Option<Resumed>,
    pods: &StepPods,
) -> functions::Context {
    let mut fctx = env.fctx.clone();
    if let Some(a) = fctx.actionset.as_mut() {
        a.phase = crate::model::labels::phase_key(i, phase);
        if let Some(r) = resume {
            a.reentered = r.reentered;
            a.resume = r.pods;
            a.resume_output = r.output;
        }
        let (api, name, pods) = (run.api.clone(), run.name.to_string(), pods.clone());
        a.on_step = Some(functions::context::StepHook(Arc::new(move |ev| {
            let (api, name, pods) = (api.clone(), name.clone(), pods.clone());
            Box::pin(async move { record_step(&api, &name, i, ev, &pods).await })
        })));
    }
    fctx
}

/// What a resumed step's first run recorded.
pub(super) struct Resumed {
    /// It is entered again ([`How::Reenter`]).
    pub(super) reentered: bool,
    /// Its pods, when it is re-attached to them.
    pub(super) pods: Option<Vec<String>>,
    /// Its early outputs, when it is entered again.
    pub(super) output: Map<String, Value>,
}

impl Resumed {
    pub(super) fn of(how: How, rec: &ActionRecord) -> Resumed {
        Resumed {
            reentered: how == How::Reenter,
            pods: (how == How::Reattach).then(|| rec.pods.clone()),
            output: match how {
                How::Reenter => rec.early_output.clone(),
                _ => Map::new(),
            },
        }
    }
}

/// Records what the running step of action `i` did.
pub(super) async fn record_step(
    api: &Api<ActionSet>,
    name: &str,
    i: usize,
    ev: functions::context::StepEvent,
    pods: &StepPods,
) {
    use functions::context::StepEvent;
    let t = match ev {
        StepEvent::PodCreated(pod) => {
            pods.created
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(pod.clone());
            Transition::PodCreated(pod)
        }
        StepEvent::Output(k, v) => Transition::EarlyOutput(k, v),
    };
    let r = update(api, name, None, |obj| {
        let n = obj.status.as_ref().map(|s| s.actions.len()).unwrap_or(0);
        let now = now_rfc3339();
        let (mut rec, _) = Record::from_meta(&obj.metadata, n, &now);
        let status = obj.status.as_mut().ok_or_else(|| WriteError::NoStatus)?;
        let ctx = Ctx {
            actionset: name,
            now: &now,
        };
        machine::apply(status, &mut rec, i, t.clone(), ctx)?;
        rec.to_meta(&mut obj.metadata);
        Ok(())
    })
    .await;
    match r {
        Ok((written, ())) => *pods.latest.lock().unwrap_or_else(|e| e.into_inner()) = Some(written),
        Err(e) => {
            warn!(actionset = name, transition = ?t, error = %e, "could not record what the phase did in the ActionSet")
        }
    }
}

/// The ActionSet's Blueprint, read afresh.
pub(super) async fn get_blueprint(
    client: &Client,
    ns: &str,
    name: &str,
) -> Result<Blueprint, kube::Error> {
    Api::<Blueprint>::namespaced(client.clone(), ns)
        .get(name)
        .await
}
