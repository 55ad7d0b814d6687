//! The action driver: one task per ActionSet; for each action it runs the step the pure
//! [`plan::decide`] chooses (a phase, the deferPhase, the finish) within its deadlines and
//! records the result through the pure [`machine`].

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use futures::future::join_all;
use kube::api::Api;
use kube::{Client, Resource};
use tokio::sync::watch;
use tracing::{debug, error, info, warn};

use super::Inner;
use super::env::{
    ActionEnv, Resumed, StepPods, action_env, exec_phase, get_blueprint, phase_objects,
    phases_shown, step_context,
};
use super::events::event_publisher;
use super::gate;
use super::write::{Run, WriteError, now_rfc3339, update};
use crate::executor::claim;
use crate::executor::deadline::{self, Deadline};
use crate::executor::machine::{self, ActionRecord, InitError, Record, Step, Transition};
use crate::executor::params;
use crate::executor::plan::{self, Plan};
use crate::executor::pod_logs;
use crate::executor::resume::How;
use crate::functions;
use crate::model::{ActionSet, ActionStatus, Artifact, BlueprintAction, State};

/// Resolves the Blueprint action of every spec action (for init).
pub(super) async fn resolve(
    client: &Client,
    ns: &str,
    obj: &ActionSet,
) -> Vec<Result<BlueprintAction, InitError>> {
    let mut out = Vec::new();
    for a in obj.spec.iter().flat_map(|s| &s.actions) {
        if a.blueprint.is_empty() {
            out.push(Err(InitError::BlueprintNotSpecified {
                action: a.name.clone(),
            }));
            continue;
        }
        out.push(match get_blueprint(client, ns, &a.blueprint).await {
            Err(e) => Err(InitError::BlueprintNotFound {
                blueprint: a.blueprint.clone(),
                error: crate::kube_error::describe(&e),
            }),
            Ok(bp) => bp
                .actions
                .get(&a.name)
                .cloned()
                .ok_or_else(|| InitError::ActionNotFound {
                    action: a.name.clone(),
                    kind: a.object.kind.clone(),
                    blueprint: a.blueprint.clone(),
                }),
        });
    }
    out
}

pub(super) async fn run_actionset(
    inner: &Inner,
    ns: &str,
    name: &str,
    rx: watch::Receiver<bool>,
) -> Result<(), WriteError> {
    let (events, queue) = tokio::sync::mpsc::unbounded_channel();
    let publisher = tokio::spawn(event_publisher(inner.events.clone(), queue));
    let run = Run {
        inner,
        api: Api::namespaced(inner.client.clone(), ns),
        ns,
        name,
        events,
    };
    let result = run_actionset_with(&run, rx).await;
    drop(run);
    let _ = publisher.await;
    result
}

pub(super) async fn run_actionset_with(
    run: &Run<'_>,
    mut rx: watch::Receiver<bool>,
) -> Result<(), WriteError> {
    let (inner, ns, name) = (run.inner, run.ns, run.name);
    let obj = run.api.get(name).await.map_err(|e| match e {
        kube::Error::Api(s) if s.code == 404 => WriteError::Gone,
        e => WriteError::Read(e),
    })?;
    let started = claim::not_started(&obj);
    if started {
        // Exclusive runs: its turn first.
        match gate::wait_turn(run, &obj, &mut rx).await? {
            gate::Turn::Go => {}
            gate::Turn::Refuse(message) => return gate::refuse(run, &message).await,
            gate::Turn::Deleted => return Ok(()),
        }
    }
    let obj = if started {
        let resolved = resolve(&inner.client, ns, &obj).await;
        let (obj, evs) = update(&run.api, name, None, |o| {
            if !claim::not_started(o) {
                return Ok(None);
            }
            let now = now_rfc3339();
            let init = machine::init(name, o.spec.as_ref(), &resolved, &now);
            if let Some(a) = o.metadata.annotations.as_mut() {
                a.remove(crate::model::labels::ANNOTATION_WAITING_FOR);
            }
            init.record.to_meta(&mut o.metadata);
            machine::sync_finalizer(&mut o.metadata, init.status.state);
            o.status = Some(init.status);
            Ok(Some(init.events))
        })
        .await?;
        if let Some(evs) = evs {
            run.publish_all(&obj, &evs);
            if let Some(s) = obj.state().filter(|s| s.is_terminal()) {
                inner.metrics.actionset_ended(s == State::Complete);
            }
        }
        obj
    } else {
        info!(actionset = %name, namespace = %ns, "resuming running ActionSet");
        obj
    };
    if obj.state() != Some(State::Running) {
        return Ok(());
    }
    let n = obj.status.as_ref().map(|s| s.actions.len()).unwrap_or(0);
    let drivers = (0..n).map(|i| drive_action(run, i, obj.clone(), rx.clone()));
    for r in join_all(drivers).await {
        if let Err(e) = r {
            match e {
                WriteError::Gone => {}
                e => warn!(actionset = %name, namespace = %ns, error = %e, "action driver stopped"),
            }
        }
    }
    Ok(())
}

/// When a deleted ActionSet's deferPhase must have ended.
pub(super) fn deletion_deadline(
    obj: &ActionSet,
    timeout: Duration,
) -> Option<tokio::time::Instant> {
    let ts = obj.metadata.deletion_timestamp.as_ref()?;
    let deleted_ms = ts.0.as_millisecond();
    let now_ms = chrono::Utc::now().timestamp_millis();
    let elapsed = Duration::from_millis(now_ms.saturating_sub(deleted_ms).max(0) as u64);
    let left = timeout.saturating_sub(elapsed);
    Some(tokio::time::Instant::now() + left)
}

/// Deletes pods (`<namespace>/<name>`) of a step whose result is recorded.
pub(super) async fn delete_pods(client: &Client, pods: &[String]) {
    for p in pods {
        let Some((ns, name)) = p.split_once('/') else {
            continue;
        };
        let api: Api<k8s_openapi::api::core::v1::Pod> = Api::namespaced(client.clone(), ns);
        match api.delete(name, &kube::api::DeleteParams::default()).await {
            Ok(_) => debug!(pod = %p, "deleted the pod of an ended phase"),
            Err(kube::Error::Api(s)) if s.code == 404 => {}
            Err(e) => warn!(pod = %p, error = %e, "could not delete the pod of an ended phase"),
        }
    }
}

/// Runs action `i` to its end: the step [`plan::decide`] chooses, then its result recorded.
pub(super) async fn drive_action(
    run: &Run<'_>,
    i: usize,
    mut obj: ActionSet,
    mut rx: watch::Receiver<bool>,
) -> Result<(), WriteError> {
    let env = action_env(run, &obj, i).await;
    let timeout = run.inner.cfg.deletion_timeout;
    // A step whose start was written together with the previous result.
    let mut started: Option<Step> = None;
    // A step resumed after a restart: what its first run recorded.
    let mut resumed: Option<Resumed> = None;
    let pods = StepPods::default();
    loop {
        let (st, rec) = action_at(&obj, i)?;
        let facts = env.facts(&obj, i, *rx.borrow(), timeout, started.take());
        let plan = plan::decide(&st, &rec, &facts);
        debug!(actionset = %run.name, action = %st.name, ?plan, "next step");
        let t = match plan {
            Plan::Done => return Ok(()),
            Plan::Missing(what) => return Err(missing_in_blueprint(what)),
            Plan::Record(t) => t,
            Plan::Resume { how, step } => {
                info!(actionset = %run.name, action = %st.name, ?how, "resuming the phase that was running when the controller stopped");
                if how != How::Reattach {
                    // Helper pods of the interrupted run are not this run's.
                    delete_pods(&run.inner.client, &rec.pods).await;
                }
                obj = run.write(i, Transition::Resumed(how), &obj).await?;
                resumed = Some(Resumed::of(how, &rec));
                started = Some(step);
                continue;
            }
            Plan::RunPhase { phase, start } => {
                if start {
                    obj = run.write(i, Transition::PhaseStarted(phase), &obj).await?;
                }
                let fctx = step_context(run, &env, i, Some(phase), resumed.take(), &pods);
                run_phase(run, &env, &fctx, &obj, i, phase, &rec, &mut rx).await?
            }
            Plan::RunDefer { start } => {
                let defer = env.bp.as_ref().and_then(|b| b.defer_phase.clone());
                let defer = defer.ok_or_else(|| missing_in_blueprint("deferPhase".into()))?;
                if start {
                    obj = run.write(i, Transition::DeferStarted, &obj).await?;
                }
                let fctx = step_context(run, &env, i, None, resumed.take(), &pods);
                run_defer(run, &env, &fctx, &defer, &mut obj, i, &rec, &mut rx).await
            }
            Plan::Finish { render } => {
                Transition::Finished(render.then(|| artifacts(&env, &st, &rec)))
            }
        };
        (obj, started) = record_result(run, &env, i, t, obj, &rec, &pods, &rx).await?;
    }
}

fn missing_in_blueprint(what: String) -> WriteError {
    WriteError::Missing {
        what,
        place: "the Blueprint",
    }
}

/// Action `i`'s status and record in `obj`.
fn action_at(obj: &ActionSet, i: usize) -> Result<(ActionStatus, ActionRecord), WriteError> {
    let missing = |place| WriteError::Missing {
        what: "action".into(),
        place,
    };
    let st = obj.status.as_ref().and_then(|s| s.actions.get(i)).cloned();
    let st = st.ok_or_else(|| missing("status"))?;
    let n = obj.status.as_ref().map(|s| s.actions.len()).unwrap_or(0);
    let (rec, _) = Record::from_meta(&obj.metadata, n, &now_rfc3339());
    let rec = rec
        .actions
        .into_iter()
        .nth(i)
        .ok_or_else(|| missing("the record"))?;
    Ok((st, rec))
}

/// The output artifacts of a succeeded action, rendered (or why they could not be).
fn artifacts(
    env: &ActionEnv,
    st: &ActionStatus,
    rec: &ActionRecord,
) -> Result<BTreeMap<String, Artifact>, String> {
    let bp_arts = env.bp.as_ref().map(|b| b.output_artifacts.clone());
    let objs = env
        .objects
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .clone();
    let p = params::for_artifacts(&env.base, st, rec, &objs);
    params::render_artifacts(&bp_arts.unwrap_or_default(), &p).map_err(|e| e.to_string())
}

/// Executes main phase `p` (already recorded running) within its deadlines; deletion cancels it.
#[allow(clippy::too_many_arguments)]
async fn run_phase(
    run: &Run<'_>,
    env: &ActionEnv,
    fctx: &functions::Context,
    obj: &ActionSet,
    i: usize,
    p: usize,
    rec: &ActionRecord,
    rx: &mut watch::Receiver<bool>,
) -> Result<Transition, WriteError> {
    let phase = env.bp.as_ref().and_then(|b| b.phases.get(p));
    let phase = phase.ok_or_else(|| missing_in_blueprint(format!("phase #{p}")))?;
    let st_now = action_status(obj, i);
    let dl = deadline::for_phase(
        &env.timeouts,
        &st_now.name,
        deadline::parse_time(Some(&rec.time)),
        &phase.name,
        st_now
            .phases
            .get(p)
            .and_then(|ph| deadline::parse_time(ph.progress.last_transition_time.as_deref())),
        chrono::Utc::now(),
    );
    let started = Instant::now();
    let fut = async {
        let shown = phases_shown(&st_now, p);
        let objs = phase_objects(env, &run.inner.client, run.ns, &st_now, shown).await?;
        let params = params::for_phase(&env.base, &st_now, p, &objs);
        exec_phase(fctx, phase, params).await
    };
    let res = tokio::select! {
        r = fut => r.map_err(|e| e.to_string()),
        Ok(_) = rx.wait_for(|d| *d) => Err("execution cancelled: the ActionSet is being deleted".to_string()),
        m = expire(dl.as_ref()) => Err(m),
    };
    run.inner
        .metrics
        .phase_ended(false, res.is_ok(), started.elapsed());
    Ok(match res {
        Ok(out) => Transition::PhaseSucceeded(p, out),
        Err(e) => Transition::PhaseFailed(p, e),
    })
}

/// Records result `t` of action `i` (a failure without credentials) with the next step's
/// start, then keeps a failed step's log lines and deletes its pods, as [`plan::after`] says.
#[allow(clippy::too_many_arguments)]
async fn record_result(
    run: &Run<'_>,
    env: &ActionEnv,
    i: usize,
    t: Transition,
    mut obj: ActionSet,
    rec: &ActionRecord,
    pods: &StepPods,
    rx: &watch::Receiver<bool>,
) -> Result<(ActionSet, Option<Step>), WriteError> {
    if let Some(latest) = pods.take_latest() {
        obj = latest;
    }
    let after = plan::after(&t);
    let mut ended = Vec::new();
    if after.delete_pods {
        ended = rec.pods.clone();
        ended.extend(pods.take_created());
        if let Ok((_, now)) = action_at(&obj, i) {
            ended.extend(now.pods);
        }
        ended.sort();
        ended.dedup();
    }
    let redactor = pod_logs::redactor(
        &env.base,
        &env.objects.lock().unwrap_or_else(|e| e.into_inner()),
    );
    let t = match t {
        Transition::PhaseFailed(p, e) => Transition::PhaseFailed(p, redactor.redact(&e)),
        Transition::DeferFailed(e) => Transition::DeferFailed(redactor.redact(&e)),
        t => t,
    };
    let facts = env.facts(&obj, i, *rx.borrow(), run.inner.cfg.deletion_timeout, None);
    let (mut obj, started) = match run.write_chain(i, t, &obj, Some(&facts)).await {
        Ok(o) => o,
        Err(e) => {
            // The step's pods are this task's to delete, also when its result cannot be
            // recorded.
            delete_pods(&run.inner.client, &ended).await;
            if let WriteError::Stale(e) = &e {
                error!(error = %e, "status changed under the executor; this action stops here");
            }
            return Err(e);
        }
    };
    if let Some(step) = after.keep_logs.filter(|_| !ended.is_empty()) {
        let kept = pod_logs::capture(&run.inner.client, &ended, &redactor).await;
        if !kept.is_empty() {
            let logs = pod_logs::output_value(&kept);
            match run.write(i, Transition::PodLogs(step, logs), &obj).await {
                Ok(o) => obj = o,
                Err(WriteError::Gone) => {
                    delete_pods(&run.inner.client, &ended).await;
                    return Err(WriteError::Gone);
                }
                Err(e) => warn!(error = %e, "could not keep the log lines of a failed step"),
            }
            let st = action_status(&obj, i);
            let what = match step {
                Some(p) => format!(
                    "phase {}",
                    st.phases.get(p).map(|x| x.name.as_str()).unwrap_or("?")
                ),
                None => format!("deferPhase {}", st.defer_phase.name),
            };
            let related = obj.object_ref(&());
            for k in &kept {
                let ev = pod_logs::event(&what, k);
                run.inner
                    .events
                    .publish(&k.pod, Some(&related), ev.note())
                    .await;
            }
        }
    }
    delete_pods(&run.inner.client, &ended).await;
    Ok((obj, started))
}

/// The recorded status of action `i` (empty before the first write).
fn action_status(obj: &ActionSet, i: usize) -> ActionStatus {
    obj.status
        .as_ref()
        .and_then(|s| s.actions.get(i))
        .cloned()
        .unwrap_or_default()
}

/// Resolves with the deadline's message once it has passed (never without
/// a deadline).
pub(super) async fn expire(dl: Option<&Deadline>) -> String {
    let Some(dl) = dl else {
        return std::future::pending().await;
    };
    let left = (dl.at - chrono::Utc::now()).to_std().unwrap_or_default();
    tokio::time::sleep(left).await;
    dl.message.clone()
}

/// Executes the deferPhase (already recorded running); it gets until its
/// phase timeout and, on deletion, until `deletionTimestamp + deletion_timeout`.
#[allow(clippy::too_many_arguments)]
pub(super) async fn run_defer(
    run: &Run<'_>,
    env: &ActionEnv,
    fctx: &functions::Context,
    defer: &crate::model::BlueprintPhase,
    obj: &mut ActionSet,
    i: usize,
    rec: &machine::ActionRecord,
    rx: &mut watch::Receiver<bool>,
) -> Transition {
    let timeout = run.inner.cfg.deletion_timeout;
    let st_now = action_status(obj, i);
    let dl = deadline::for_defer(
        &env.timeouts,
        &defer.name,
        deadline::parse_time(st_now.defer_phase.progress.last_transition_time.as_deref()),
        chrono::Utc::now(),
    );
    let own_deadline = expire(dl.as_ref());
    tokio::pin!(own_deadline);
    let started = Instant::now();
    let fut = async {
        let client = &run.inner.client;
        let ran = phases_shown(&st_now, st_now.phases.len());
        let objs = phase_objects(env, client, run.ns, &st_now, ran).await?;
        let own = if defer.objects.is_empty() {
            None
        } else {
            let p = params::for_defer(&env.base, &st_now, rec, &objs, None);
            let refs = params::render_objects(&defer.objects, &p)?;
            Some(params::fetch_phase_objects(client, run.ns, &refs, &env.scope).await?)
        };
        let params = params::for_defer(&env.base, &st_now, rec, &objs, own.as_ref());
        exec_phase(fctx, defer, params).await
    };
    tokio::pin!(fut);
    let res = loop {
        let deadline = if *rx.borrow() {
            deletion_deadline(obj, timeout).or_else(|| Some(tokio::time::Instant::now() + timeout))
        } else {
            None
        };
        let deadline = deadline.unwrap_or_else(|| {
            tokio::time::Instant::now() + Duration::from_secs(100 * 365 * 86400)
        });
        tokio::select! {
            r = &mut fut => break r.map_err(|e| e.to_string()),
            changed = rx.changed() => {
                if changed.is_err() {
                    break fut.await.map_err(|e| e.to_string());
                }
                // Deletion observed: refresh deletionTimestamp for the deadline.
                if let Ok(o) = run.api.get(run.name).await {
                    obj.metadata.deletion_timestamp = o.metadata.deletion_timestamp;
                }
            }
            m = &mut own_deadline => break Err(m),
            _ = tokio::time::sleep_until(deadline) => break Err(format!(
                "deferPhase cancelled: the ActionSet was deleted and the deletion timeout ({}s) elapsed",
                timeout.as_secs()
            )),
        }
    };
    run.inner
        .metrics
        .phase_ended(true, res.is_ok(), started.elapsed());
    match res {
        Ok(out) => Transition::DeferSucceeded(out),
        Err(e) => Transition::DeferFailed(e),
    }
}
