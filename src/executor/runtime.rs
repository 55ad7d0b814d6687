//! The ActionSet reconciler: a kube `Controller` on ActionSets that starts
//! one task per running ActionSet; the task drives each action through the
//! pure [`machine`] and writes every transition to the ActionSet (the whole
//! object: Kanister's CRD has no status subresource) with conflict retry,
//! then publishes the transition's Events in order.
//!
//! - **Restart**: a `running` ActionSet without a task in this process is
//!   resumed; completed phases are not re-run; a phase or deferPhase
//!   recorded `running` goes on as [`resume`] decides by its function
//!   (re-attached to its pod, re-entered, re-run once if the Blueprint says
//!   so) or is failed ("controller restarted while phase X was running"; the
//!   deferPhase then runs). Pods a phase creates are recorded in the
//!   ActionSet as they are created and deleted once the phase's result is
//!   recorded, so a restart in between finds them.
//! - **Deletion**: the finalizer [`machine::FINALIZER`] is held while the
//!   ActionSet runs. Deleting a running ActionSet cancels the running main
//!   phase (dropping its future), skips later phases, runs the deferPhase,
//!   and removes the finalizer once the ActionSet is terminal. The deferPhase
//!   gets until `deletionTimestamp + deletion_timeout`; past it, it is
//!   cancelled (or not started) and recorded failed, and the finalizer goes.
//!   An ActionSet deleted before it started runs nothing.
//! - **Deadlines** ([`deadline`]): a main phase running past its phase
//!   timeout or its action's timeout, or a deferPhase past its phase
//!   timeout, is cancelled (its future dropped: pods it created are deleted
//!   by their guards) and recorded failed; the deferPhase then runs. The
//!   deadlines come from start times recorded in the ActionSet, so they hold
//!   across restarts.
//! - **Shutdown**: tasks are dropped with the process; what was running is
//!   handled by the restart rule.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::StreamExt;
use futures::future::join_all;
use k8s_openapi::api::core::v1::ObjectReference as CoreRef;
use k8s_openapi::api::events::v1::Event as K8sEvent;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use kube::api::{Api, ApiResource, DynamicObject, ObjectMeta, PostParams};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::watcher;
use kube::{Client, Resource, ResourceExt};
use serde_json::{Map, Value};
use tokio::sync::watch;
use tracing::{debug, error, info, warn};

use super::deadline::{self, Deadline};
use super::events::{EventSpec, Kind, truncate_note};
use super::machine::{self, Ctx, InitError, Record, Step, Transition};
use super::metrics::Metrics;
use super::ownership::{self, Decision, Ownership};
use super::params::{self, PhaseObjects};
use super::resume::{self, How};
use super::tenancy::{self, Policy, Scope};
use crate::functions;
use crate::model::{ActionSet, ActionSpec, Blueprint, BlueprintAction, State, WatchedActionSet};
use crate::template;

/// Runtime settings.
#[derive(Clone, Debug)]
pub struct Config {
    /// Only this namespace (None: all namespaces); every ActionSet in it is
    /// run, labelled or not.
    pub namespace: Option<String>,
    /// Namespaces whose every ActionSet is run; elsewhere only those
    /// labelled [`crate::model::LABEL_EXECUTOR`] are (see [`ownership`]).
    pub run_namespaces: Vec<String>,
    /// How long a deleted ActionSet's deferPhase may run before the
    /// finalizer is removed anyway.
    pub deletion_timeout: Duration,
    /// `reportingInstance` of Events (pod name).
    pub instance: String,
    /// Default phase and action timeouts (ActionSet options override them).
    pub timeouts: deadline::Defaults,
    /// Pods that functions start in this namespace run as this ServiceAccount.
    pub controller: Option<functions::context::ControllerIdentity>,
    /// What ActionSets may reach (namespaces, Profile endpoints).
    pub tenancy: Policy,
}

/// `reportingController` of our Events.
pub const REPORTING_CONTROLLER: &str = "blueprint-operator.io/executor";

struct Inner {
    client: Client,
    cfg: Config,
    metrics: Metrics,
    ownership: Ownership,
    /// Running ActionSet tasks by uid: the sender flips to `true` on deletion.
    tasks: Mutex<HashMap<String, watch::Sender<bool>>>,
    /// The last problem reported by Event per ActionSet uid (invalid, started
    /// elsewhere), so that each is reported once, not on every change.
    reported: Mutex<HashMap<String, String>>,
}

/// Errors of the reconciler (the tasks log their own).
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("ActionSet has no namespace or uid")]
    Incomplete,
    #[error("Kubernetes API: {0}")]
    Kube(#[from] kube::Error),
}

/// Runs the executor until `shutdown` resolves.
pub async fn run(
    client: Client,
    cfg: Config,
    metrics: Metrics,
    shutdown: impl std::future::Future<Output = ()> + Send + Sync + 'static,
) -> anyhow::Result<()> {
    // Each ActionSet is decoded on its own: one that does not decode must not
    // fail the list (and so the executor) for every other.
    let api: Api<WatchedActionSet> = match &cfg.namespace {
        Some(ns) => Api::namespaced(client.clone(), ns),
        None => Api::all(client.clone()),
    };
    let ownership = Ownership::new(cfg.namespace.as_deref(), &cfg.run_namespaces);
    let inner = Arc::new(Inner {
        client,
        cfg,
        metrics,
        ownership,
        tasks: Mutex::new(HashMap::new()),
        reported: Mutex::new(HashMap::new()),
    });
    info!(
        namespace = ?inner.cfg.namespace,
        run_namespaces = ?inner.cfg.run_namespaces,
        "ActionSet executor started"
    );
    Controller::new(api, watcher::Config::default())
        .graceful_shutdown_on(shutdown)
        .run(reconcile, error_policy, inner)
        .for_each(|r| async move {
            if let Err(e) = r {
                debug!(error = %e, "reconcile error");
            }
        })
        .await;
    Ok(())
}

fn error_policy(_: Arc<WatchedActionSet>, err: &Error, _: Arc<Inner>) -> Action {
    warn!(error = %err, "reconcile failed; retrying");
    Action::requeue(Duration::from_secs(5))
}

async fn reconcile(watched: Arc<WatchedActionSet>, inner: Arc<Inner>) -> Result<Action, Error> {
    let (Some(ns), Some(uid)) = (watched.namespace(), watched.uid()) else {
        return Err(Error::Incomplete);
    };
    let name = watched.name_any();
    let deleting = watched.meta().deletion_timestamp.is_some();
    {
        let tasks = inner.tasks.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(tx) = tasks.get(&uid) {
            if deleting {
                tx.send_replace(true);
            }
            return Ok(Action::await_change());
        }
    }
    let has_finalizer = watched.finalizers().iter().any(|f| f == machine::FINALIZER);
    let obj = match watched.as_ref() {
        WatchedActionSet::Valid(a) => a,
        WatchedActionSet::Invalid { metadata, error } => {
            if !inner.ownership.concerns(metadata) {
                return Ok(Action::await_change());
            }
            warn!(actionset = %name, namespace = %ns, error = %error, "ActionSet cannot be read; skipped");
            report_once(
                &inner,
                &uid,
                metadata,
                ownership::invalid_event(&name, &ns, error),
            )
            .await;
            // Its deferPhase cannot run from a status we cannot read: do not
            // hold its deletion.
            if deleting && has_finalizer {
                remove_finalizer(&inner, &ns, &name).await?;
            }
            return Ok(Action::await_change());
        }
    };
    match inner.ownership.decide(&obj.metadata, obj.state()) {
        Decision::Ignore => return Ok(Action::await_change()),
        Decision::StartedElsewhere => {
            info!(actionset = %name, namespace = %ns, "running ActionSet was not started by this executor; not resumed");
            report_once(
                &inner,
                &uid,
                &obj.metadata,
                ownership::started_elsewhere_event(),
            )
            .await;
            return Ok(Action::await_change());
        }
        Decision::Run => {
            inner
                .reported
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .remove(&uid);
        }
    }
    match obj.state() {
        None | Some(State::Unset | State::Pending) if deleting => {
            if has_finalizer {
                remove_finalizer(&inner, &ns, &name).await?;
            }
            return Ok(Action::await_change());
        }
        Some(State::Complete | State::Failed) => {
            if has_finalizer {
                remove_finalizer(&inner, &ns, &name).await?;
            }
            return Ok(Action::await_change());
        }
        _ => {}
    }
    // Not terminal and no task here: start (or resume) it.
    let (tx, rx) = watch::channel(deleting);
    inner
        .tasks
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(uid.clone(), tx);
    let task_inner = inner.clone();
    tokio::spawn(async move {
        let _guard = TaskGuard {
            inner: task_inner.clone(),
            uid,
        };
        if let Err(e) = run_actionset(&task_inner, &ns, &name, rx).await {
            warn!(actionset = %name, namespace = %ns, error = %e, "ActionSet task stopped");
        }
    });
    // Safety net: a task that stopped on an error is restarted.
    Ok(Action::requeue(Duration::from_secs(300)))
}

struct TaskGuard {
    inner: Arc<Inner>,
    uid: String,
}

impl Drop for TaskGuard {
    fn drop(&mut self) {
        self.inner
            .tasks
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&self.uid);
    }
}

/// Publishes `ev` about an ActionSet unless the same was already reported.
async fn report_once(inner: &Inner, uid: &str, meta: &ObjectMeta, ev: EventSpec) {
    {
        let mut reported = inner.reported.lock().unwrap_or_else(|e| e.into_inner());
        if reported.get(uid) == Some(&ev.message) {
            return;
        }
        reported.insert(uid.to_string(), ev.message.clone());
    }
    let r = CoreRef {
        api_version: Some(crate::model::API_VERSION.into()),
        kind: Some("ActionSet".into()),
        name: meta.name.clone(),
        namespace: meta.namespace.clone(),
        uid: meta.uid.clone(),
        resource_version: meta.resource_version.clone(),
        ..CoreRef::default()
    };
    publish(&inner.client, &inner.cfg.instance, &r, &ev).await;
}

/// Removes our finalizer. The ActionSet is read and written back as raw
/// JSON: nothing else changes, and it works on one our model cannot read.
async fn remove_finalizer(inner: &Inner, ns: &str, name: &str) -> Result<(), Error> {
    let api: Api<DynamicObject> = Api::namespaced_with(
        inner.client.clone(),
        ns,
        &ApiResource::erase::<ActionSet>(&()),
    );
    let mut obj = match api.get(name).await {
        Ok(o) => o,
        Err(kube::Error::Api(s)) if s.code == 404 => return Ok(()),
        Err(e) => return Err(e.into()),
    };
    let Some(fins) = obj.metadata.finalizers.as_mut() else {
        return Ok(());
    };
    if !fins.iter().any(|f| f == machine::FINALIZER) {
        return Ok(());
    }
    fins.retain(|f| f != machine::FINALIZER);
    match api.replace(name, &PostParams::default(), &obj).await {
        Ok(_) => Ok(()),
        // Gone, or changed meanwhile (the watch brings it back).
        Err(kube::Error::Api(s)) if s.code == 404 || s.code == 409 => Ok(()),
        Err(e) => Err(e.into()),
    }
}

/// Why a write loop gave up.
#[derive(Debug, thiserror::Error)]
enum WriteError {
    #[error("ActionSet is gone")]
    Gone,
    #[error(transparent)]
    Stale(#[from] machine::Stale),
    #[error("{0}")]
    Other(String),
}

fn now_rfc3339() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

/// GET, mutate, REPLACE; retried on conflicts and transient errors until
/// the object is gone or `f` refuses.
async fn update<T>(
    api: &Api<ActionSet>,
    name: &str,
    mut cached: Option<ActionSet>,
    mut f: impl FnMut(&mut ActionSet) -> Result<T, WriteError>,
) -> Result<(ActionSet, T), WriteError> {
    let mut backoff = Duration::from_millis(100);
    loop {
        // The last object this task wrote is usually current: try it first
        // and read again only on a conflict.
        if let Some(mut obj) = cached.take() {
            let out = f(&mut obj)?;
            match api.replace(name, &PostParams::default(), &obj).await {
                Ok(written) => return Ok((written, out)),
                Err(kube::Error::Api(s)) if s.code == 404 => return Err(WriteError::Gone),
                Err(_) => continue,
            }
        }
        let mut obj = match api.get(name).await {
            Ok(o) => o,
            Err(kube::Error::Api(s)) if s.code == 404 => return Err(WriteError::Gone),
            // Someone wrote what our model cannot read: stop; the watch
            // reports it and resumes the ActionSet once it is fixed.
            Err(kube::Error::SerdeError(e)) => {
                return Err(WriteError::Other(format!("ActionSet cannot be read: {e}")));
            }
            Err(e) => {
                warn!(actionset = name, error = %e, "reading ActionSet failed; retrying");
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(Duration::from_secs(10));
                continue;
            }
        };
        let out = f(&mut obj)?;
        match api.replace(name, &PostParams::default(), &obj).await {
            Ok(written) => return Ok((written, out)),
            Err(kube::Error::Api(s)) if s.code == 409 => continue,
            Err(kube::Error::Api(s)) if s.code == 404 => return Err(WriteError::Gone),
            Err(kube::Error::Api(s)) if s.code == 422 || s.code == 400 => {
                return Err(WriteError::Other(format!(
                    "the API server rejected the ActionSet update: {}",
                    s.message
                )));
            }
            Err(e) => {
                warn!(actionset = name, error = %e, "writing ActionSet failed; retrying");
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(Duration::from_secs(10));
            }
        }
    }
}

/// Shared state of one ActionSet's task.
struct Run<'a> {
    inner: &'a Inner,
    api: Api<ActionSet>,
    ns: &'a str,
    name: &'a str,
    /// Events are published in order by one task, off the critical path.
    events: tokio::sync::mpsc::UnboundedSender<(CoreRef, EventSpec)>,
}

/// Publishes queued Events in order until the queue closes.
async fn event_publisher(
    client: Client,
    instance: String,
    mut rx: tokio::sync::mpsc::UnboundedReceiver<(CoreRef, EventSpec)>,
) {
    while let Some((r, ev)) = rx.recv().await {
        publish(&client, &instance, &r, &ev).await;
    }
}

impl Run<'_> {
    /// Applies `t` to action `i` and publishes the resulting Events.
    async fn write(
        &self,
        i: usize,
        t: Transition,
        cached: &ActionSet,
    ) -> Result<ActionSet, WriteError> {
        self.write_chain(i, t, cached, |_| None)
            .await
            .map(|(o, _)| o)
    }

    /// Applies `t`, then, in the same write, the start of the next step if
    /// `chain` returns one for it (`PhaseStarted`/`DeferStarted`): one API
    /// write per phase instead of two. Returns the step that was started.
    async fn write_chain(
        &self,
        i: usize,
        t: Transition,
        cached: &ActionSet,
        chain: impl Fn(Step) -> Option<Transition>,
    ) -> Result<(ActionSet, Option<Step>), WriteError> {
        let ((obj, evs), started) = {
            let mut started = None;
            let r = update(&self.api, self.name, Some(cached.clone()), |obj| {
                started = None;
                // One record per status action: the spec may have changed.
                let n = obj.status.as_ref().map(|s| s.actions.len()).unwrap_or(0);
                let now = now_rfc3339();
                let (mut rec, _) = Record::from_meta(&obj.metadata, n, &now);
                let status = obj
                    .status
                    .as_mut()
                    .ok_or_else(|| WriteError::Other("status disappeared".into()))?;
                let ctx = Ctx {
                    actionset: self.name,
                    now: &now,
                };
                let mut evs = machine::apply(status, &mut rec, i, t.clone(), ctx)?;
                if obj.metadata.deletion_timestamp.is_none()
                    && let (Some(st), Some(r)) = (status.actions.get(i), rec.actions.get(i))
                {
                    let step = machine::next_step(st, r, false);
                    // No next main phase for an action whose spec entry is gone.
                    let removed = machine::spec_action_for(obj.spec.as_ref(), st, i).is_none();
                    let next =
                        chain(step).filter(|_| !(removed && matches!(step, Step::RunPhase(_))));
                    if let Some(next) = next {
                        evs.extend(machine::apply(status, &mut rec, i, next, ctx)?);
                        started = Some(step);
                    }
                }
                rec.to_meta(&mut obj.metadata);
                let state = status.state;
                machine::sync_finalizer(&mut obj.metadata, state);
                Ok(evs)
            })
            .await?;
            (r, started)
        };
        self.publish_all(&obj, &evs);
        if let Some(state) = obj.state().filter(|s| s.is_terminal()) {
            self.inner.metrics.actionset_ended(state == State::Complete);
            info!(actionset = %self.name, namespace = %self.ns, state = %state, "ActionSet finished");
        }
        Ok((obj, started))
    }

    fn publish_all(&self, obj: &ActionSet, evs: &[EventSpec]) {
        for ev in evs {
            let _ = self.events.send((as_ref(obj), ev.clone()));
            if let Some(bp) = &ev.blueprint {
                let r = CoreRef {
                    api_version: Some(crate::model::API_VERSION.into()),
                    kind: Some("Blueprint".into()),
                    name: Some(bp.clone()),
                    namespace: Some(self.ns.to_string()),
                    ..CoreRef::default()
                };
                let _ = self.events.send((r, ev.clone()));
            }
        }
    }
}

fn as_ref(obj: &ActionSet) -> CoreRef {
    obj.object_ref(&())
}

/// `<object>.<nanoseconds hex><sequence hex>`, unique within this process
/// and valid whatever the object's name (as kube's Recorder names Events).
fn event_name(object: &str) -> String {
    static SEQ: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let seq = SEQ.fetch_add(1, std::sync::atomic::Ordering::Relaxed) & 0xfff;
    let nanos = k8s_openapi::jiff::Timestamp::now().as_nanosecond();
    format!("{object}.{nanos:x}{seq:03x}")
}

/// Publishes one events.k8s.io/v1 Event (each one its own object: kube's
/// Recorder merges Events with the same reason into a series and would
/// drop the second "Executing phase <name>" note).
pub async fn publish(client: &Client, instance: &str, regarding: &CoreRef, ev: &EventSpec) {
    let ns = regarding
        .namespace
        .clone()
        .unwrap_or_else(|| "default".into());
    let event = K8sEvent {
        metadata: ObjectMeta {
            name: Some(event_name(regarding.name.as_deref().unwrap_or("actionset"))),
            namespace: Some(ns.clone()),
            ..ObjectMeta::default()
        },
        event_time: Some(MicroTime(k8s_openapi::jiff::Timestamp::now())),
        action: Some("Execute".into()),
        reason: Some(ev.reason.chars().take(128).collect()),
        note: Some(truncate_note(&ev.message)),
        regarding: Some(regarding.clone()),
        reporting_controller: Some(REPORTING_CONTROLLER.into()),
        reporting_instance: Some(instance.chars().take(128).collect()),
        type_: Some(
            match ev.kind {
                Kind::Normal => "Normal",
                Kind::Warning => "Warning",
            }
            .into(),
        ),
        ..K8sEvent::default()
    };
    let api: Api<K8sEvent> = Api::namespaced(client.clone(), &ns);
    if let Err(e) = api.create(&PostParams::default(), &event).await {
        warn!(reason = %ev.reason, error = %e, "publishing Event failed");
    }
}

async fn get_blueprint(client: &Client, ns: &str, name: &str) -> Result<Blueprint, String> {
    let api: Api<Blueprint> = Api::namespaced(client.clone(), ns);
    api.get(name)
        .await
        .map_err(|e| crate::kube_error::describe(&e))
}

/// Resolves the Blueprint action of every spec action (for init).
async fn resolve(
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
            Err(error) => Err(InitError::BlueprintNotFound {
                blueprint: a.blueprint.clone(),
                error,
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

async fn run_actionset(
    inner: &Inner,
    ns: &str,
    name: &str,
    rx: watch::Receiver<bool>,
) -> Result<(), WriteError> {
    let (events, queue) = tokio::sync::mpsc::unbounded_channel();
    let publisher = tokio::spawn(event_publisher(
        inner.client.clone(),
        inner.cfg.instance.clone(),
        queue,
    ));
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

async fn run_actionset_with(run: &Run<'_>, rx: watch::Receiver<bool>) -> Result<(), WriteError> {
    let (inner, ns, name) = (run.inner, run.ns, run.name);
    let obj = run.api.get(name).await.map_err(|e| match e {
        kube::Error::Api(s) if s.code == 404 => WriteError::Gone,
        e => WriteError::Other(crate::kube_error::describe(&e)),
    })?;
    let started = matches!(obj.state(), None | Some(State::Unset | State::Pending));
    let obj = if started {
        let resolved = resolve(&inner.client, ns, &obj).await;
        let (obj, evs) = update(&run.api, name, None, |o| {
            if !matches!(o.state(), None | Some(State::Unset | State::Pending)) {
                return Ok(None);
            }
            let now = now_rfc3339();
            let init = machine::init(name, o.spec.as_ref(), &resolved, &now);
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
fn deletion_deadline(obj: &ActionSet, timeout: Duration) -> Option<tokio::time::Instant> {
    let ts = obj.metadata.deletion_timestamp.as_ref()?;
    let deleted_ms = ts.0.as_millisecond();
    let now_ms = chrono::Utc::now().timestamp_millis();
    let elapsed = Duration::from_millis(now_ms.saturating_sub(deleted_ms).max(0) as u64);
    let left = timeout.saturating_sub(elapsed);
    Some(tokio::time::Instant::now() + left)
}

/// Everything one action needs to execute phases.
struct ActionEnv {
    bp: Option<BlueprintAction>,
    /// Why the Blueprint cannot be used (deleted, changed).
    broken: Option<String>,
    base: Map<String, Value>,
    base_error: Option<String>,
    fctx: functions::Context,
    timeouts: deadline::Timeouts,
    scope: Scope,
    /// Fetched phase `objects` by phase name, for `.Phases.<name>.Secrets`.
    objects: Mutex<PhaseObjects>,
    /// Phases the Blueprint declares safe to re-run after a restart.
    rerun: Vec<String>,
}

async fn action_env(run: &Run<'_>, obj: &ActionSet, i: usize) -> ActionEnv {
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
            Some(format!("Failed to query blueprint {}: {e}", st.blueprint)),
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
                Err(e) => (None, Some(e)),
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
async fn phase_objects(
    env: &ActionEnv,
    client: &Client,
    ns: &str,
    st: &crate::model::ActionStatus,
    indexes: impl Iterator<Item = usize>,
) -> Result<PhaseObjects, String> {
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
fn phases_shown(st: &crate::model::ActionStatus, p: usize) -> impl Iterator<Item = usize> + '_ {
    st.phases.iter().enumerate().filter_map(move |(j, ph)| {
        (j == p || (j < p && matches!(ph.state, State::Complete | State::Failed))).then_some(j)
    })
}

async fn exec_phase(
    fctx: &functions::Context,
    phase: &crate::model::BlueprintPhase,
    params: Value,
) -> Result<Map<String, Value>, String> {
    let args = Value::Object(phase.args.clone().unwrap_or_default());
    let rendered = template::render_args(&args, &params, &phase.func).map_err(|e| e.to_string())?;
    let args = rendered.as_object().cloned().unwrap_or_default();
    functions::execute(fctx, &phase.func, &args, &params)
        .await
        .map_err(|e| e.to_string())
}

/// Pods one step of an action created in this process, and the ActionSet
/// as last written by [`record_pod`] (fresher than the driver's copy).
#[derive(Clone, Default)]
struct StepPods {
    created: Arc<Mutex<Vec<String>>>,
    latest: Arc<Mutex<Option<ActionSet>>>,
}

impl StepPods {
    fn take_created(&self) -> Vec<String> {
        std::mem::take(&mut *self.created.lock().unwrap_or_else(|e| e.into_inner()))
    }

    fn take_latest(&self) -> Option<ActionSet> {
        self.latest.lock().unwrap_or_else(|e| e.into_inner()).take()
    }
}

/// The function context of step `phase` (`None`: the deferPhase) of action
/// `i`: its pods carry the step's label and are recorded in the ActionSet
/// as they are created; `resume` as in [`functions::context::ActionSetRef::resume`].
fn step_context(
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
struct Resumed {
    /// It is entered again ([`How::Reenter`]).
    reentered: bool,
    /// Its pods, when it is re-attached to them.
    pods: Option<Vec<String>>,
    /// Its early outputs, when it is entered again.
    output: Map<String, Value>,
}

/// Records what the running step of action `i` did.
async fn record_step(
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
        let status = obj
            .status
            .as_mut()
            .ok_or_else(|| WriteError::Other("status disappeared".into()))?;
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

/// Deletes pods (`<namespace>/<name>`) of a step whose result is recorded.
async fn delete_pods(client: &Client, pods: &[String]) {
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
fn resume_decision(
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

async fn drive_action(
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
            return Err(WriteError::Other("action missing from status".into()));
        };
        let Some(rec) = rec.actions.get(i).cloned() else {
            return Err(WriteError::Other("action missing from the record".into()));
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
                    return Err(WriteError::Other(format!(
                        "phase #{p} missing from the Blueprint"
                    )));
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
                    r = fut => r,
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
                    return Err(WriteError::Other(
                        "deferPhase missing from the Blueprint".into(),
                    ));
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
                    Some(params::render_artifacts(&bp_arts, &p))
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
        let written = run.write_chain(i, t, &obj, chain).await;
        if written.is_ok() {
            delete_pods(&run.inner.client, &ended_pods).await;
        }
        (obj, started_step) = match written {
            Ok(o) => o,
            Err(WriteError::Stale(e)) => {
                error!(error = %e, "status changed under the executor; this action stops here");
                return Err(WriteError::Stale(e));
            }
            Err(e) => return Err(e),
        };
    }
}

/// The recorded status of action `i` (empty before the first write).
fn action_status(obj: &ActionSet, i: usize) -> crate::model::ActionStatus {
    obj.status
        .as_ref()
        .and_then(|s| s.actions.get(i))
        .cloned()
        .unwrap_or_default()
}

/// The message to stop action `st` with before main phase `next`, if its
/// action timeout has passed.
fn action_expired(
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
fn action_expired_at(env: &ActionEnv, obj: &ActionSet, i: usize, next: usize) -> Option<String> {
    let n = obj.status.as_ref().map(|s| s.actions.len()).unwrap_or(0);
    let (rec, _) = Record::from_meta(&obj.metadata, n, &now_rfc3339());
    action_expired(env, &action_status(obj, i), rec.actions.get(i)?, next)
}

/// Resolves with the deadline's message once it has passed (never without
/// a deadline).
async fn expire(dl: Option<&Deadline>) -> String {
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
async fn run_defer(
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
            r = &mut fut => break r,
            changed = rx.changed() => {
                if changed.is_err() {
                    break fut.await;
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
