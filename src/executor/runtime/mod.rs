//! The ActionSet reconciler: a kube `Controller` on ActionSets that starts
//! one task per running ActionSet; the task drives each action through the
//! pure [`crate::executor::machine`] and writes every transition to the ActionSet (the whole
//! object: Kanister's CRD has no status subresource) with conflict retry,
//! then publishes the transition's Events in order.
//!
//! - **Restart**: a `running` ActionSet without a task in this process is
//!   resumed; completed phases are not re-run; a phase or deferPhase
//!   recorded `running` goes on as [`crate::executor::resume`] decides by its function
//!   (re-attached to its pod, re-entered, re-run once if the Blueprint says
//!   so) or is failed ("controller restarted while phase X was running"; the
//!   deferPhase then runs). Pods a phase creates are recorded in the
//!   ActionSet as they are created and deleted once the phase's result is
//!   recorded, so a restart in between finds them.
//! - **Deletion**: the finalizer [`crate::model::labels::FINALIZER_DEFER_PHASE`] is held while the
//!   ActionSet runs. Deleting a running ActionSet cancels the running main
//!   phase (dropping its future), skips later phases, runs the deferPhase,
//!   and removes the finalizer once the ActionSet is terminal. The deferPhase
//!   gets until `deletionTimestamp + deletion_timeout`; past it, it is
//!   cancelled (or not started) and recorded failed, and the finalizer goes.
//!   An ActionSet deleted before it started runs nothing.
//! - **Deadlines** ([`crate::executor::deadline`]): a main phase running past its phase
//!   timeout or its action's timeout, or a deferPhase past its phase
//!   timeout, is cancelled (its future dropped: pods it created are deleted
//!   once its failure and their last log lines are recorded) and recorded
//!   failed; the deferPhase then runs. The deadlines come from start times recorded in the ActionSet, so they hold
//!   across restarts.
//! - **Shutdown**: tasks are dropped with the process; what was running is
//!   handled by the restart rule.
//!
//! This file is the reconcile (which ActionSets run, the finalizer); [`write`] the retrying
//! status writes, [`events`] the ordered Events, [`driver`] the action driver and [`env`] what
//! an action needs to run its phases.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::ObjectReference as CoreRef;
use kube::api::{Api, ApiResource, DynamicObject, ObjectMeta, PostParams};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Client, Resource, ResourceExt};
use tokio::sync::watch;
use tracing::{debug, info, warn};

use super::claim;
use super::deadline;
use super::events::EventSpec;
use super::metrics::Metrics;
use super::ownership::{self, Decision, Ownership};
use super::tenancy::Policy;
use crate::functions;
use crate::model::{ActionSet, State, WatchedActionSet};

mod driver;
mod env;
mod events;
mod gate;
mod write;

use driver::run_actionset;

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
    /// Label selector of Kanister's controller pods (None: not looked for). An ActionSet that
    /// was not claimed at creation is not started where such a pod runs (see [`ownership`]).
    pub kanister_selector: Option<String>,
}

/// `reportingController` of our Events.
pub const REPORTING_CONTROLLER: &str = "blueprint-operator.io/executor";

struct Inner {
    client: Client,
    /// Each Event its own object (Kanister's texts; see [`crate::events`]).
    events: crate::events::Publisher,
    cfg: Config,
    metrics: Metrics,
    ownership: Ownership,
    /// Running ActionSet tasks by uid: the sender flips to `true` on deletion.
    tasks: Mutex<HashMap<String, watch::Sender<bool>>>,
    /// The last problem reported by Event per ActionSet uid (invalid, started
    /// elsewhere), so that each is reported once, not on every change.
    reported: Mutex<HashMap<String, String>>,
    /// Exclusive runs: who waits for whom, on the controller's own store.
    gate: gate::Gate,
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
    let (store, writer) = kube::runtime::reflector::store();
    let inner = Arc::new(Inner {
        events: crate::events::Publisher::new(client.clone(), REPORTING_CONTROLLER, &cfg.instance),
        client,
        cfg,
        metrics,
        ownership,
        tasks: Mutex::new(HashMap::new()),
        reported: Mutex::new(HashMap::new()),
        gate: gate::Gate::new(store.clone()),
    });
    info!(
        namespace = ?inner.cfg.namespace,
        run_namespaces = ?inner.cfg.run_namespaces,
        "ActionSet executor started"
    );
    // Controller::new's own stream, plus a signal to the ActionSets waiting for their turn
    // after each event (also deletions, which trigger no reconcile).
    let signal = inner.clone();
    // The store keeps every ActionSet in scope, finished ones slimmed (see `stored`).
    let watch = watcher(api, watcher::Config::default()).modify(crate::executor::stored::slim);
    let events = kube::runtime::reflector(writer, watch).inspect(move |_| signal.gate.changed());
    Controller::for_stream(events.applied_objects(), store)
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
    let has_finalizer = watched
        .finalizers()
        .iter()
        .any(|f| f == crate::model::labels::FINALIZER_DEFER_PHASE);
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
    let not_started = claim::not_started(obj);
    if (deleting && not_started) || obj.state().is_some_and(State::is_terminal) {
        if has_finalizer {
            remove_finalizer(&inner, &ns, &name).await?;
        }
        return Ok(Action::await_change());
    }
    if not_started
        && !Ownership::started_here(&obj.metadata)
        && let Some(pod) = kanister_controller(&inner, &ns).await?
    {
        warn!(actionset = %name, namespace = %ns, kanister_pod = %pod, "ActionSet was not claimed at creation and Kanister's controller runs in its namespace; not started here (install the webhook, or create it with ctl create or an ActionSchedule)");
        report_once(
            &inner,
            &uid,
            &obj.metadata,
            ownership::not_claimed_event(&ns, &pod),
        )
        .await;
        return Ok(Action::await_change());
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
        self.inner.gate.release(&self.uid);
    }
}

/// A running pod of Kanister's controller in `ns` (`--kanister-controller-selector`), by name.
async fn kanister_controller(inner: &Inner, ns: &str) -> Result<Option<String>, Error> {
    let Some(selector) = inner.cfg.kanister_selector.as_deref() else {
        return Ok(None);
    };
    let pods: Api<k8s_openapi::api::core::v1::Pod> = Api::namespaced(inner.client.clone(), ns);
    let list = pods
        .list(&kube::api::ListParams::default().labels(selector))
        .await?;
    Ok(list
        .items
        .into_iter()
        .filter(|p| p.metadata.deletion_timestamp.is_none())
        .find(|p| {
            let phase = p.status.as_ref().and_then(|s| s.phase.as_deref());
            !matches!(phase, Some("Succeeded" | "Failed"))
        })
        .map(|p| p.name_any()))
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
    inner.events.publish(&r, None, ev.note()).await;
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
    if !fins
        .iter()
        .any(|f| f == crate::model::labels::FINALIZER_DEFER_PHASE)
    {
        return Ok(());
    }
    fins.retain(|f| f != crate::model::labels::FINALIZER_DEFER_PHASE);
    match api.replace(name, &PostParams::default(), &obj).await {
        Ok(_) => Ok(()),
        // Gone, or changed meanwhile (the watch brings it back).
        Err(kube::Error::Api(s)) if s.code == 404 || s.code == 409 => Ok(()),
        Err(e) => Err(e.into()),
    }
}
