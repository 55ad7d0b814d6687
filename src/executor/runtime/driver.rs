//! The action driver: one task per ActionSet runs each action's next step (phase, deferPhase,
//! finish) through the pure [`machine`], within its deadlines and the deletion timeout.

use super::*;
use crate::executor::pod_logs;

pub(super) async fn get_blueprint(
    client: &Client,
    ns: &str,
    name: &str,
) -> Result<Blueprint, kube::Error> {
    Api::<Blueprint>::namespaced(client.clone(), ns)
        .get(name)
        .await
}

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

/// How the step of action `st` found running after a restart goes on
/// (`None`: it is failed), with the step it is.
pub(super) fn resume_decision(
    env: &ActionEnv,
    st: &crate::model::ActionStatus,
    rec: &machine::ActionRecord,
) -> Option<(How, Step)> {
    let bp = env.bp.as_ref().filter(|_| env.base_error.is_none())?;
    let (phase, step, defer) = match st.phases.iter().position(|p| p.state == State::Running) {
        Some(p) => (bp.phases.get(p)?, Step::RunPhase(p), false),
        None if st.defer_phase.state == State::Running => {
            (bp.defer_phase.as_ref()?, Step::RunDefer, true)
        }
        None => return None,
    };
    let again = rec
        .rerun
        .contains(&machine::ActionRecord::rerun_key(&phase.name, defer));
    let how = resume::decide(
        &phase.func,
        phase.args.as_ref(),
        &phase.name,
        &env.rerun,
        again,
    )?;
    Some((how, step))
}

pub(super) async fn drive_action(
    run: &Run<'_>,
    i: usize,
    mut obj: ActionSet,
    mut rx: watch::Receiver<bool>,
) -> Result<(), WriteError> {
    let env = action_env(run, &obj, i).await;
    let timeout = run.inner.cfg.deletion_timeout;
    let cancelled_msg = "execution cancelled: the ActionSet is being deleted";
    // A step whose start was written together with the previous transition.
    let mut started_step: Option<Step> = None;
    // A step resumed after a restart: what its first run recorded.
    let mut resume_pods: Option<Resumed> = None;
    let pods = StepPods::default();
    loop {
        let pre_started = started_step.is_some();
        let deleting = *rx.borrow() || obj.metadata.deletion_timestamp.is_some();
        let n = obj.status.as_ref().map(|s| s.actions.len()).unwrap_or(0);
        let (rec, _) = Record::from_meta(&obj.metadata, n, &now_rfc3339());
        let Some(st) = obj.status.as_ref().and_then(|s| s.actions.get(i)).cloned() else {
            return Err(WriteError::Missing {
                what: "action".into(),
                place: "status",
            });
        };
        let Some(rec) = rec.actions.get(i).cloned() else {
            return Err(WriteError::Missing {
                what: "action".into(),
                place: "the record",
            });
        };
        // Its spec entry was removed while it ran: stop before the next
        // phase (the deferPhase still runs).
        let removed = machine::spec_action_for(obj.spec.as_ref(), &st, i).is_none();
        let step = match started_step.take() {
            Some(s) => s,
            None => machine::next_step(&st, &rec, deleting),
        };
        debug!(actionset = %run.name, action = %st.name, ?step, "next step");
        let t = match step {
            Step::Done => return Ok(()),
            Step::Interrupted => match resume_decision(&env, &st, &rec) {
                None => Transition::Interrupted,
                Some((how, next)) => {
                    info!(actionset = %run.name, action = %st.name, ?how, "resuming the phase that was running when the controller stopped");
                    if how != How::Reattach {
                        // Helper pods of the interrupted run are not this run's.
                        delete_pods(&run.inner.client, &rec.pods).await;
                    }
                    obj = run.write(i, Transition::Resumed(how), &obj).await?;
                    resume_pods = Some(Resumed {
                        reentered: how == How::Reenter,
                        pods: (how == How::Reattach).then(|| rec.pods.clone()),
                        output: match how {
                            How::Reenter => rec.early_output.clone(),
                            _ => Map::new(),
                        },
                    });
                    started_step = Some(next);
                    continue;
                }
            },
            Step::Stop => {
                let next = st
                    .phases
                    .iter()
                    .find(|p| p.state == State::Pending)
                    .map(|p| p.name.clone())
                    .unwrap_or_default();
                Transition::Stopped(format!(
                    "ActionSet is being deleted: phase {next} and the phases after it were not run"
                ))
            }
            Step::RunPhase(_) if removed && !pre_started => {
                Transition::Stopped(machine::removed_message(&st))
            }
            Step::RunPhase(_) if env.broken.is_some() => {
                Transition::Stopped(env.broken.clone().unwrap_or_default())
            }
            Step::RunPhase(_) if env.base_error.is_some() => {
                Transition::LaunchFailed(env.base_error.clone().unwrap_or_default())
            }
            Step::RunPhase(p) if !pre_started && action_expired(&env, &st, &rec, p).is_some() => {
                Transition::Stopped(action_expired(&env, &st, &rec, p).unwrap_or_default())
            }
            Step::RunPhase(p) => {
                let Some(phase) = env.bp.as_ref().and_then(|b| b.phases.get(p)) else {
                    return Err(WriteError::Missing {
                        what: format!("phase #{p}"),
                        place: "the Blueprint",
                    });
                };
                if !pre_started {
                    obj = run.write(i, Transition::PhaseStarted(p), &obj).await?;
                }
                let st_now = action_status(&obj, i);
                let dl = deadline::for_phase(
                    &env.timeouts,
                    &st_now.name,
                    deadline::parse_time(Some(&rec.time)),
                    &phase.name,
                    st_now.phases.get(p).and_then(|ph| {
                        deadline::parse_time(ph.progress.last_transition_time.as_deref())
                    }),
                    chrono::Utc::now(),
                );
                let started = Instant::now();
                let fctx = step_context(run, &env, i, Some(p), resume_pods.take(), &pods);
                let fut = async {
                    let objs = phase_objects(
                        &env,
                        &run.inner.client,
                        run.ns,
                        &st_now,
                        phases_shown(&st_now, p),
                    )
                    .await?;
                    let params = params::for_phase(&env.base, &st_now, p, &objs);
                    exec_phase(&fctx, phase, params).await
                };
                let res = tokio::select! {
                    r = fut => r.map_err(|e| e.to_string()),
                    Ok(_) = rx.wait_for(|d| *d) => Err(cancelled_msg.to_string()),
                    m = expire(dl.as_ref()) => Err(m),
                };
                run.inner
                    .metrics
                    .phase_ended(false, res.is_ok(), started.elapsed());
                match res {
                    Ok(out) => Transition::PhaseSucceeded(p, out),
                    Err(e) => Transition::PhaseFailed(p, e),
                }
            }
            Step::RunDefer if pre_started => {
                let Some(defer) = env.bp.as_ref().and_then(|b| b.defer_phase.clone()) else {
                    return Err(WriteError::Missing {
                        what: "deferPhase".into(),
                        place: "the Blueprint",
                    });
                };
                let fctx = step_context(run, &env, i, None, resume_pods.take(), &pods);
                run_defer(run, &env, &fctx, &defer, &mut obj, i, &rec, &mut rx).await
            }
            Step::RunDefer => {
                let deadline = deletion_deadline(&obj, timeout);
                let Some(defer) = env.bp.as_ref().and_then(|b| b.defer_phase.clone()) else {
                    let why = env
                        .broken
                        .clone()
                        .unwrap_or_else(|| "deferPhase missing from the Blueprint".into());
                    obj = run
                        .write(
                            i,
                            Transition::DeferFailed(format!("deferPhase not run: {why}")),
                            &obj,
                        )
                        .await?;
                    continue;
                };
                if deadline.is_some_and(|d| d <= tokio::time::Instant::now()) {
                    obj = run
                        .write(
                            i,
                            Transition::DeferFailed(format!(
                                "deferPhase not run: the ActionSet was deleted and the deletion timeout ({}s) elapsed",
                                timeout.as_secs()
                            )),
                            &obj,
                        )
                        .await?;
                    continue;
                }
                obj = run.write(i, Transition::DeferStarted, &obj).await?;
                let fctx = step_context(run, &env, i, None, resume_pods.take(), &pods);
                run_defer(run, &env, &fctx, &defer, &mut obj, i, &rec, &mut rx).await
            }
            Step::Finish => {
                let arts = if machine::succeeded(&st, &rec) {
                    let bp_arts = env
                        .bp
                        .as_ref()
                        .map(|b| b.output_artifacts.clone())
                        .unwrap_or_default();
                    let objs = env
                        .objects
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .clone();
                    let p = params::for_artifacts(&env.base, &st, &rec, &objs);
                    Some(params::render_artifacts(&bp_arts, &p).map_err(|e| e.to_string()))
                } else {
                    None
                };
                Transition::Finished(arts)
            }
        };
        if let Some(latest) = pods.take_latest() {
            obj = latest;
        }
        // Pods of the step that ends: deleted once its result is recorded.
        let ended = matches!(
            t,
            Transition::PhaseSucceeded(..)
                | Transition::PhaseFailed(..)
                | Transition::DeferSucceeded(_)
                | Transition::DeferFailed(_)
                | Transition::Interrupted
        );
        let mut ended_pods = Vec::new();
        if ended {
            ended_pods = rec.pods.clone();
            ended_pods.extend(pods.take_created());
            if let Some(r) = obj
                .status
                .as_ref()
                .map(|s| Record::from_meta(&obj.metadata, s.actions.len(), "").0)
                .and_then(|r| r.actions.get(i).cloned())
            {
                ended_pods.extend(r.pods);
            }
            ended_pods.sort();
            ended_pods.dedup();
        }
        let chain = |step: Step| {
            if *rx.borrow() {
                return None;
            }
            match step {
                Step::RunPhase(j)
                    if !removed
                        && env.broken.is_none()
                        && env.base_error.is_none()
                        && env.bp.as_ref().is_some_and(|b| b.phases.len() > j)
                        && action_expired_at(&env, &obj, i, j).is_none() =>
                {
                    Some(Transition::PhaseStarted(j))
                }
                Step::RunDefer if env.bp.as_ref().is_some_and(|b| b.defer_phase.is_some()) => {
                    Some(Transition::DeferStarted)
                }
                _ => None,
            }
        };
        // A failed step: its message without credentials, and its pods'
        // last log lines kept before they are deleted.
        let redactor = pod_logs::redactor(
            &env.base,
            &env.objects.lock().unwrap_or_else(|e| e.into_inner()),
        );
        let (t, failed_step) = match t {
            Transition::PhaseFailed(p, e) => (
                Transition::PhaseFailed(p, redactor.redact(&e)),
                Some(Some(p)),
            ),
            Transition::DeferFailed(e) => {
                (Transition::DeferFailed(redactor.redact(&e)), Some(None))
            }
            t => (t, None),
        };
        let written = run.write_chain(i, t, &obj, chain).await;
        (obj, started_step) = match written {
            Ok(o) => o,
            Err(e) => {
                // The step's pods are this task's to delete (a cancelled step's guards left
                // them for their log lines), also when its result cannot be recorded.
                delete_pods(&run.inner.client, &ended_pods).await;
                if let WriteError::Stale(e) = &e {
                    error!(error = %e, "status changed under the executor; this action stops here");
                }
                return Err(e);
            }
        };
        if let Some(step) = failed_step.filter(|_| !ended_pods.is_empty()) {
            let kept = pod_logs::capture(&run.inner.client, &ended_pods, &redactor).await;
            if !kept.is_empty() {
                let logs = pod_logs::output_value(&kept);
                match run.write(i, Transition::PodLogs(step, logs), &obj).await {
                    Ok(o) => obj = o,
                    Err(WriteError::Gone) => {
                        delete_pods(&run.inner.client, &ended_pods).await;
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
        delete_pods(&run.inner.client, &ended_pods).await;
    }
}

/// The recorded status of action `i` (empty before the first write).
pub(super) fn action_status(obj: &ActionSet, i: usize) -> crate::model::ActionStatus {
    obj.status
        .as_ref()
        .and_then(|s| s.actions.get(i))
        .cloned()
        .unwrap_or_default()
}

/// The message to stop action `st` with before main phase `next`, if its
/// action timeout has passed.
pub(super) fn action_expired(
    env: &ActionEnv,
    st: &crate::model::ActionStatus,
    rec: &machine::ActionRecord,
    next: usize,
) -> Option<String> {
    let phase = st
        .phases
        .get(next)
        .map(|p| p.name.as_str())
        .unwrap_or_default();
    deadline::action_expired(
        &env.timeouts,
        &st.name,
        deadline::parse_time(Some(&rec.time)),
        phase,
        chrono::Utc::now(),
    )
}

/// [`action_expired`] for action `i` of `obj`.
pub(super) fn action_expired_at(
    env: &ActionEnv,
    obj: &ActionSet,
    i: usize,
    next: usize,
) -> Option<String> {
    let n = obj.status.as_ref().map(|s| s.actions.len()).unwrap_or(0);
    let (rec, _) = Record::from_meta(&obj.metadata, n, &now_rfc3339());
    action_expired(env, &action_status(obj, i), rec.actions.get(i)?, next)
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
