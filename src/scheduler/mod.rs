//! Scheduler: ActionSchedule creates Kanister ActionSets on a cron schedule,
//! rotates finished ones and reports what it did.
//!
//! - [`cron`]: CronJob-compatible schedule parser and `next` (robfig/cron v3 port).
//! - [`plan`]: pure planning: given spec, status, now and existing runs, decide.
//! - [`retention`]: pure selection of the ActionSets to rotate, with reasons.
//! - [`identity`]: which ActionSets are a schedule's runs (label + annotation,
//!   no ownerReference).
//! - [`verify`]: pure restore verification: which run to verify, outcomes, the summary.
//! - [`finalize`]: pure rule for a deleted schedule with `onDelete: Delete`.
//! - [`delete_action`]: pure: the ActionSet that runs a rotated run's delete action.
//! - [`reconcile`]: one reconcile: [`read`], plan (the pure modules above and
//!   `status`), apply (`apply`, `rotate`, `deleting`).
//! - [`settle`]: what a reconcile does after its creates runs after it returns,
//!   in order per schedule.
//! - [`runs`]: each schedule's ActionSets, kept from the controller's watch as
//!   [`summary`]s.
//! - [`metrics`]: Prometheus families, registered by the caller ([`SchedulerOptions::metrics`]).
//! - [`gate`]: the bound on requests in flight, creates first, and the back-off
//!   when the API server is overloaded.

mod apply;
pub mod cron;
pub mod ctx;
pub mod delete_action;
mod deleting;
pub mod finalize;
pub mod freshness;
pub mod gate;
pub mod identity;
pub mod metrics;
pub mod plan;
pub mod read;
pub mod reconcile;
pub mod retention;
mod rotate;
pub mod runs;
pub mod settle;
mod status;
pub mod summary;
pub mod verify;
mod verifying;
pub mod window;

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use futures::{StreamExt, TryStreamExt};
use kube::runtime::controller::{self, Controller};
use kube::runtime::reflector::ObjectRef;
use kube::runtime::{Predicate, WatchStreamExt, predicates, reflector, watcher};
use kube::{Api, Client, Resource, ResourceExt};

use crate::events::Publisher;
use crate::model::{ActionSchedule, LABEL_SCHEDULE, WatchedActionSet};

pub use metrics::Metrics;

/// Default of [`SchedulerOptions::max_in_flight`]: the 16 concurrent clients
/// with which `benches/schedules.rs` measures the API server's create limit
/// (more in flight did not create faster there).
pub const DEFAULT_MAX_IN_FLIGHT: usize = 16;

/// Default of [`SchedulerOptions::concurrency`]: 4 x [`DEFAULT_MAX_IN_FLIGHT`],
/// so that creates wait in the gate while other reconciles read and plan.
pub const DEFAULT_CONCURRENCY: u16 = 64;

/// How the scheduler runs.
#[derive(Clone, Debug)]
pub struct SchedulerOptions {
    /// Watch only this namespace (`None`: all namespaces).
    pub namespace: Option<String>,
    /// `reportingController` of Events.
    pub controller_name: String,
    /// Schedules reconciled in parallel (0: no limit). A reconcile ends after
    /// its creates (its Events and status write [`settle`] after it), so a
    /// few more than [`SchedulerOptions::max_in_flight`] keep the creates
    /// going; many more only cost CPU (kube-runtime polls every reconcile in
    /// flight each time one ends).
    pub concurrency: u16,
    /// How long a deleted schedule with `retention.onDelete: Delete` waits for
    /// its runs and delete actions to end; then what is left is kept.
    pub finalize_timeout: Duration,
    /// Where it counts: [`Metrics::new`] on the process's registry.
    pub metrics: Metrics,
    /// Requests of all reconciles in flight at once (ActionSet creates, status
    /// writes, Events, reads; not watches), creates first (see [`gate`]).
    pub max_in_flight: usize,
}

impl Default for SchedulerOptions {
    fn default() -> Self {
        SchedulerOptions {
            namespace: None,
            controller_name: "blueprint-operator-scheduler".into(),
            concurrency: DEFAULT_CONCURRENCY,
            finalize_timeout: ctx::FINALIZE_TIMEOUT,
            metrics: Metrics::unregistered(),
            max_in_flight: DEFAULT_MAX_IN_FLIGHT,
        }
    }
}

/// Run the ActionSchedule controller until `shutdown` completes. Only one replica may run it:
/// the `controller` subcommand runs it under its Lease ([`crate::app::leader`]).
pub async fn run(
    client: Client,
    opts: SchedulerOptions,
    shutdown: impl Future,
) -> anyhow::Result<()> {
    let shutdown = async move {
        shutdown.await;
    };
    opts.metrics.leader.set(1);
    run_controller(client, &opts, shutdown).await;
    opts.metrics.leader.set(0);
    Ok(())
}

/// The controller itself; returns when `shutdown` completes.
async fn run_controller(
    client: Client,
    opts: &SchedulerOptions,
    shutdown: impl Future<Output = ()>,
) {
    // ActionSets are decoded one by one: one that does not decode must not
    // fail the whole watch (and so every schedule).
    let (schedules, actionsets): (Api<ActionSchedule>, Api<WatchedActionSet>) =
        match &opts.namespace {
            Some(ns) => (
                Api::namespaced(client.clone(), ns),
                Api::namespaced(client.clone(), ns),
            ),
            None => (Api::all(client.clone()), Api::all(client.clone())),
        };
    let runs = Arc::new(runs::RunIndex::default());
    let (mut ctx, settling) = ctx::Ctx::new(
        client.clone(),
        // kube's Recorder used the controller's name as instance when given none.
        Publisher::new(client.clone(), &opts.controller_name, &opts.controller_name),
        runs.clone(),
    );
    ctx.finalize_timeout = opts.finalize_timeout;
    ctx.metrics = opts.metrics.clone();
    ctx.gate = gate::Gate::new(opts.max_in_flight);
    let ctx = Arc::new(ctx);
    let (store, writer) = reflector::store();
    // Our own status writes change neither generation nor annotations, so
    // they trigger no reconcile: the next one is already queued for the next
    // tick. Spec edits and the run-now annotation do.
    let schedule_events = watcher(schedules, watcher::Config::default())
        .default_backoff()
        .modify(|s| s.managed_fields_mut().clear())
        .reflect(writer)
        .touched_objects()
        .predicate_filter(
            predicates::generation.combine(predicates::annotations),
            Default::default(),
        );
    let run_events = watcher(
        actionsets,
        watcher::Config::default().labels(LABEL_SCHEDULE),
    )
    .default_backoff()
    .modify(|a| a.managed_fields_mut().clear())
    .map_ok(move |event| {
        runs.apply_watched(&event);
        event
    })
    .touched_objects();
    // Runs carry no ownerReference: a run's event reconciles the schedule
    // its label and annotation name.
    let controller = Controller::for_stream(schedule_events, store.clone())
        .watches_stream(run_events, |a: WatchedActionSet| {
            let ns = a.namespace();
            identity::schedule_of(a.meta()).map(|name| {
                ObjectRef::<ActionSchedule>::new(name).within(ns.as_deref().unwrap_or(""))
            })
        })
        .with_config(controller::Config::default().concurrency(opts.concurrency));
    // Enough settles at once to keep the gate's places busy with their requests.
    let (again, settle) = settling.split(4 * opts.max_in_flight);
    let controller = controller.reconcile_on(again);
    let housekeeping = {
        let ctx = ctx.clone();
        async move {
            let mut tick = tokio::time::interval(Duration::from_secs(5));
            let mut tracked = Default::default();
            loop {
                tick.tick().await;
                reconcile::housekeeping(&ctx, &store.state(), chrono::Utc::now(), &mut tracked);
            }
        }
    };
    let run = controller
        .run(reconcile::reconcile, reconcile::error_policy, ctx)
        .for_each(|r| async move {
            if let Err(e) = r {
                tracing::debug!(error = %e, "scheduler controller event");
            }
        });
    tokio::select! {
        _ = run => {}
        _ = housekeeping => {}
        _ = settle => {}
        _ = shutdown => {}
    }
}
