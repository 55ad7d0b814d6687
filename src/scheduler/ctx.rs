//! What every step of the ActionSchedule controller shares: its clients, Events, metrics,
//! request gate and memory of each schedule ([`Ctx`]), and its error type.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use kube::{Client, ResourceExt};

use super::gate::{Gate, Priority, Sent};
use super::metrics::Metrics;
use super::runs::RunIndex;
use super::settle::{Driver, Settling};
use crate::events::Publisher;
use crate::model::ActionSchedule;

/// How often to look again while a delete action is running.
pub(super) const DELETE_POLL: Duration = Duration::from_secs(15);
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
    /// Its Events, repeats merged into series.
    pub events: Publisher,
    /// ActionSets of every schedule, from the controller's watch.
    pub runs: Arc<RunIndex>,
    /// Each schedule as this controller last read or wrote it (see
    /// [`read::current`]).
    pub known: Mutex<HashMap<(String, String), Known>>,
    /// How long a deleted schedule with `onDelete: Delete` waits for its runs
    /// and delete actions to end before it goes anyway.
    pub finalize_timeout: Duration,
    /// Where the reconciler counts (registered by the caller, or unregistered).
    pub metrics: Metrics,
    /// Bounds and orders the requests of all reconciles (creates first) and
    /// backs off when the API server is overloaded.
    pub gate: Gate,
    /// Schedules whose last reconcile is still settling (see [`settle`](super::settle)).
    pub settling: Arc<Settling>,
}

impl Ctx {
    /// The context, and the [`Driver`] that must run beside the controller
    /// for reconciles to settle.
    pub fn new(client: Client, events: Publisher, runs: Arc<RunIndex>) -> (Self, Driver) {
        let (settling, driver) = Settling::new();
        let ctx = Ctx {
            client,
            events,
            runs,
            known: Mutex::default(),
            finalize_timeout: FINALIZE_TIMEOUT,
            metrics: Metrics::unregistered(),
            gate: Gate::new(super::DEFAULT_MAX_IN_FLIGHT),
            settling,
        };
        (ctx, driver)
    }

    /// Send a request through the [`Gate`], counting throttled attempts.
    pub(super) async fn send<T, F, Fut>(&self, priority: Priority, call: F) -> Sent<T>
    where
        F: FnMut() -> Fut,
        Fut: std::future::Future<Output = Result<T, kube::Error>>,
    {
        let request = match priority {
            Priority::Create => "create",
            Priority::Other => "other",
        };
        self.gate
            .send(priority, call, || {
                self.metrics
                    .throttled
                    .get_or_create(&[("request", request)])
                    .inc();
            })
            .await
    }

    /// [`Ctx::send`] for a request that is not a create; its result.
    pub(super) async fn request<T, F, Fut>(&self, call: F) -> Result<T, kube::Error>
    where
        F: FnMut() -> Fut,
        Fut: std::future::Future<Output = Result<T, kube::Error>>,
    {
        self.send(Priority::Other, call).await.result
    }

    pub(super) fn known(&self) -> std::sync::MutexGuard<'_, HashMap<(String, String), Known>> {
        // Poisoning only means another reconcile panicked; the map is still usable.
        self.known.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// A schedule as this controller last read or wrote it.
#[derive(Clone, Debug)]
pub struct Known {
    /// Its resourceVersion then: a cached object at it needs no fresh read.
    pub version: String,
    /// Our own write's result while the watch cache may still hold the
    /// version it was made from (`.0`): no change but ours came between.
    pub ahead: Option<(String, Arc<ActionSchedule>)>,
}

impl Known {
    pub fn at(version: String) -> Known {
        Known {
            version,
            ahead: None,
        }
    }

    /// The newest version of the schedule, given the watch cache's `cached`,
    /// when no fresh read is needed (shared, not copied).
    pub(super) fn newest(&mut self, cached: &Arc<ActionSchedule>) -> Option<Arc<ActionSchedule>> {
        let v = cached.resource_version()?;
        if self.version == v {
            // The cache has caught up with our write.
            self.ahead = None;
            return Some(cached.clone());
        }
        self.ahead
            .as_ref()
            .filter(|(before, _)| *before == v)
            .map(|(_, ours)| ours.clone())
    }

    /// Drops our write's result once the watch cache holds that version (as the
    /// next reconcile would), rather than keeping two copies until then.
    pub(super) fn caught_up(&mut self, cached: &ActionSchedule) {
        if cached.resource_version().as_deref() == Some(self.version.as_str()) {
            self.ahead = None;
        }
    }
}
