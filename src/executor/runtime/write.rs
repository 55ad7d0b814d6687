//! Status writes: every transition is written to the ActionSet (the whole object: Kanister's
//! CRD has no status subresource), GET-mutate-REPLACE retried on conflicts and transient
//! errors.

use std::time::Duration;

use k8s_openapi::api::core::v1::ObjectReference as CoreRef;
use kube::api::{Api, PostParams};
use tracing::{info, warn};

use super::Inner;
use crate::executor::events::EventSpec;
use crate::executor::machine::{self, Ctx, Record, Step, Transition};
use crate::executor::plan::{self, Facts};
use crate::model::{ActionSet, State};

/// Why a write loop gave up.
#[derive(Debug, thiserror::Error)]
pub(super) enum WriteError {
    #[error("ActionSet is gone")]
    Gone,
    #[error(transparent)]
    Stale(#[from] machine::Stale),
    /// Someone wrote what our model cannot read; the watch reports it.
    #[error("ActionSet cannot be read: {0}")]
    Unreadable(#[source] serde_json::Error),
    /// A 400 or 422 on the write: retrying would not help.
    #[error("the API server rejected the ActionSet update: {0}")]
    Rejected(String),
    #[error("{}", crate::kube_error::describe(.0))]
    Read(#[source] kube::Error),
    /// The ActionSet no longer holds what its task drives (edited while it ran).
    #[error("{what} missing from {place}")]
    Missing { what: String, place: &'static str },
    #[error("status disappeared")]
    NoStatus,
}

pub(super) fn now_rfc3339() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

/// GET, mutate, REPLACE; retried on conflicts and transient errors until
/// the object is gone or `f` refuses.
pub(super) async fn update<T>(
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
                return Err(WriteError::Unreadable(e));
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
                return Err(WriteError::Rejected(s.message));
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
pub(super) struct Run<'a> {
    pub(super) inner: &'a Inner,
    pub(super) api: Api<ActionSet>,
    pub(super) ns: &'a str,
    pub(super) name: &'a str,
    /// Events are published in order by one task, off the critical path.
    pub(super) events: tokio::sync::mpsc::UnboundedSender<(CoreRef, EventSpec)>,
}

impl Run<'_> {
    /// Applies `t` to action `i` and publishes the resulting Events.
    pub(super) async fn write(
        &self,
        i: usize,
        t: Transition,
        cached: &ActionSet,
    ) -> Result<ActionSet, WriteError> {
        self.write_chain(i, t, cached, None).await.map(|(o, _)| o)
    }

    /// Applies `t` and, given `facts`, the start of the next step in the same write
    /// ([`plan::record`]). Returns the step that was started.
    pub(super) async fn write_chain(
        &self,
        i: usize,
        t: Transition,
        cached: &ActionSet,
        facts: Option<&Facts<'_>>,
    ) -> Result<(ActionSet, Option<Step>), WriteError> {
        let ((obj, evs), started) = {
            let mut started = None;
            let r = update(&self.api, self.name, Some(cached.clone()), |obj| {
                // One record per status action: the spec may have changed.
                let n = obj.status.as_ref().map(|s| s.actions.len()).unwrap_or(0);
                let now = now_rfc3339();
                let (mut rec, _) = Record::from_meta(&obj.metadata, n, &now);
                // What the object now says of deletion and of the action's spec entry.
                let removed = obj
                    .status
                    .as_ref()
                    .and_then(|s| s.actions.get(i))
                    .is_some_and(|st| machine::spec_action_for(obj.spec.as_ref(), st, i).is_none());
                let facts = facts.map(|f| Facts {
                    deleting: f.deleting || obj.metadata.deletion_timestamp.is_some(),
                    removed: f.removed || removed,
                    ..*f
                });
                let status = obj.status.as_mut().ok_or_else(|| WriteError::NoStatus)?;
                let ctx = Ctx {
                    actionset: self.name,
                    now: &now,
                };
                let evs;
                (evs, started) = plan::record(status, &mut rec, i, t.clone(), ctx, facts.as_ref())?;
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
}
