//! Leader election: one `coordination.k8s.io` Lease (`--lease-name`, default
//! `blueprint-operator-executor`) under which everything that must run once per cluster runs:
//! the ActionSet executor and the ActionSchedule scheduler. A replica without it runs neither.
//!
//! Every replica looks at the Lease once per retry period ([`decision`] says what to do with
//! what it saw), so a Lease released by a stopping leader is taken within about that period,
//! and one left by a killed leader within its duration and one period. Writes carry the
//! `resourceVersion` they were decided on: of two replicas taking the Lease at once, one wins.

pub mod decision;

use std::future::Future;
use std::time::Duration;

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use kube::Client;
use kube::api::{Api, PostParams};
use tokio::sync::{oneshot, watch};
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tracing::{debug, info, warn};

use decision::{Seen, Step, Timing};

/// Which Lease, held by whom, for how long.
#[derive(Clone, Debug)]
pub struct LeaseConfig {
    pub name: String,
    pub namespace: String,
    /// This replica's identity (pod name), written as the Lease's holder.
    pub identity: String,
    /// Seconds the Lease is valid without renewal.
    pub lease_seconds: u64,
    /// Seconds before expiry at which the holder renews it.
    pub grace_seconds: u64,
    /// Seconds between two looks at the Lease (a waiting replica's, and a holder's renewal
    /// retries).
    pub retry_seconds: u64,
}

impl LeaseConfig {
    /// A 15 s Lease renewed 5 s before it runs out, looked at every 2 s (client-go's defaults
    /// for its retry period and Lease duration).
    pub fn new(
        name: impl Into<String>,
        namespace: impl Into<String>,
        identity: impl Into<String>,
    ) -> Self {
        LeaseConfig {
            name: name.into(),
            namespace: namespace.into(),
            identity: identity.into(),
            lease_seconds: 15,
            grace_seconds: 5,
            retry_seconds: 2,
        }
    }

    fn timing(&self) -> Timing {
        Timing {
            lease: Duration::from_secs(self.lease_seconds),
            grace: Duration::from_secs(self.grace_seconds),
            retry: Duration::from_secs(self.retry_seconds),
        }
    }
}

/// The Lease, held.
pub struct Leadership {
    rx: watch::Receiver<bool>,
    stop: oneshot::Sender<()>,
    task: JoinHandle<()>,
}

/// Waits until this replica holds the Lease; `Ok(None)` when `shutdown` resolves first.
pub async fn acquire(
    client: &Client,
    cfg: &LeaseConfig,
    shutdown: impl Future,
) -> anyhow::Result<Option<Leadership>> {
    let timing = cfg.timing();
    timing
        .check()
        .map_err(|e| anyhow::anyhow!("Lease {}/{}: {e}", cfg.namespace, cfg.name))?;
    let (tx, mut rx) = watch::channel(false);
    let (stop, stopped) = oneshot::channel();
    let elector = Elector {
        api: Api::namespaced(client.clone(), &cfg.namespace),
        cfg: cfg.clone(),
        timing,
        last: None,
        renewed: None,
    };
    let task = tokio::spawn(elector.run(tx, stopped));
    info!(lease = %cfg.name, namespace = %cfg.namespace, identity = %cfg.identity, "waiting for leadership");
    let acquired = tokio::select! {
        r = rx.wait_for(|l| *l) => r.is_ok(),
        _ = shutdown => false,
    };
    let lead = Leadership { rx, stop, task };
    if !acquired {
        lead.release().await;
        return Ok(None);
    }
    info!(lease = %cfg.name, "acquired leadership");
    Ok(Some(lead))
}

impl Leadership {
    /// Resolves once the Lease is lost (or its elector stopped).
    pub async fn lost(&mut self) {
        let _ = self.rx.wait_for(|l| !*l).await;
    }

    /// Gives the Lease up, so that another replica takes it without waiting for it to expire.
    pub async fn release(self) {
        let _ = self.stop.send(());
        let _ = tokio::time::timeout(Duration::from_secs(5), self.task).await;
    }
}

/// The Lease's record as last seen, and since when (this replica's clock).
struct Observed {
    holder: Option<String>,
    renew_time: Option<MicroTime>,
    duration: Option<i32>,
    since: Instant,
}

struct Elector {
    api: Api<Lease>,
    cfg: LeaseConfig,
    timing: Timing,
    last: Option<Observed>,
    /// When this replica's last successful write as the holder started.
    renewed: Option<Instant>,
}

impl Elector {
    async fn run(mut self, tx: watch::Sender<bool>, mut stopped: oneshot::Receiver<()>) {
        loop {
            let wait = self.step(&tx).await;
            if *tx.borrow()
                && self
                    .renewed
                    .is_some_and(|r| decision::lost(r.elapsed(), &self.timing))
            {
                warn!(lease = %self.cfg.name, "Lease not renewed in time");
                let _ = tx.send(false);
            }
            if tx.is_closed() || (self.renewed.is_some() && !*tx.borrow()) {
                // Lost (the process exits) or nobody waits for it any more.
                break;
            }
            tokio::select! {
                _ = &mut stopped => break,
                _ = tokio::time::sleep(wait) => {}
            }
        }
        if *tx.borrow() {
            self.give_up().await;
        }
        let _ = tx.send(false);
    }

    /// One look at the Lease and what follows from it; how long to wait for the next.
    async fn step(&mut self, tx: &watch::Sender<bool>) -> Duration {
        let started = Instant::now();
        let lease = match self.api.get_opt(&self.cfg.name).await {
            Ok(l) => l,
            Err(e) => {
                warn!(lease = %self.cfg.name, error = %e, "reading the Lease failed; retrying");
                return self.timing.retry;
            }
        };
        let spec = lease
            .as_ref()
            .and_then(|l| l.spec.clone())
            .unwrap_or_default();
        self.observe(&spec, started);
        let me = self.cfg.identity.as_str();
        if *tx.borrow() && spec.holder_identity.as_deref() != Some(me) {
            warn!(lease = %self.cfg.name, holder = ?spec.holder_identity, "the Lease names another holder");
            let _ = tx.send(false);
            return self.timing.retry;
        }
        let seen = lease.as_ref().map(|_| Seen {
            holder: spec.holder_identity.as_deref(),
            duration: spec
                .lease_duration_seconds
                .and_then(|d| u64::try_from(d).ok())
                .map(Duration::from_secs),
            unchanged_for: self
                .last
                .as_ref()
                .map_or(Duration::ZERO, |o| o.since.elapsed()),
        });
        let leading = *tx.borrow();
        match decision::decide(me, leading, seen.as_ref(), &self.timing) {
            Step::Wait(d) => d,
            Step::Take => {
                if self.write(lease, started, true).await {
                    let _ = tx.send(true);
                }
                self.timing.retry
            }
            Step::Renew => {
                if !self.write(lease, started, false).await {
                    debug!(lease = %self.cfg.name, "renewal failed; retrying");
                }
                self.timing.retry
            }
        }
    }

    fn observe(&mut self, spec: &LeaseSpec, at: Instant) {
        let same = self.last.as_ref().is_some_and(|o| {
            o.holder == spec.holder_identity
                && o.renew_time == spec.renew_time
                && o.duration == spec.lease_duration_seconds
        });
        if !same {
            self.last = Some(Observed {
                holder: spec.holder_identity.clone(),
                renew_time: spec.renew_time.clone(),
                duration: spec.lease_duration_seconds,
                since: at,
            });
        }
    }

    /// Writes this replica as the holder (`take`: a new term) on top of `lease` as read; false
    /// when another write came first or the API server refused.
    async fn write(&mut self, lease: Option<Lease>, started: Instant, take: bool) -> bool {
        let now = MicroTime(k8s_openapi::jiff::Timestamp::now());
        let duration = i32::try_from(self.cfg.lease_seconds).unwrap_or(i32::MAX);
        let existed = lease.is_some();
        let mut lease = lease.unwrap_or_else(|| Lease {
            metadata: k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
                name: Some(self.cfg.name.clone()),
                namespace: Some(self.cfg.namespace.clone()),
                ..Default::default()
            },
            spec: None,
        });
        let spec = lease.spec.get_or_insert_with(Default::default);
        if take {
            spec.holder_identity = Some(self.cfg.identity.clone());
            spec.acquire_time = Some(now.clone());
            spec.lease_transitions = Some(spec.lease_transitions.unwrap_or(0).saturating_add(1));
        }
        spec.renew_time = Some(now);
        spec.lease_duration_seconds = Some(duration);
        let pp = PostParams::default();
        let written = if existed {
            self.api.replace(&self.cfg.name, &pp, &lease).await
        } else {
            self.api.create(&pp, &lease).await
        };
        match written {
            Ok(l) => {
                self.observe(&l.spec.unwrap_or_default(), started);
                self.renewed = Some(started);
                true
            }
            Err(kube::Error::Api(e)) if e.code == 409 => {
                debug!(lease = %self.cfg.name, "another replica wrote the Lease first");
                false
            }
            Err(e) => {
                warn!(lease = %self.cfg.name, error = %e, "writing the Lease failed");
                false
            }
        }
    }

    /// Clears the holder, if it is still this replica, so that a standby takes the Lease at its
    /// next look rather than after the Lease runs out.
    async fn give_up(&self) {
        for _ in 0..3 {
            let Ok(Some(mut lease)) = self.api.get_opt(&self.cfg.name).await else {
                return;
            };
            let Some(spec) = lease.spec.as_mut() else {
                return;
            };
            if spec.holder_identity.as_deref() != Some(self.cfg.identity.as_str()) {
                return;
            }
            spec.holder_identity = None;
            spec.acquire_time = None;
            spec.renew_time = None;
            spec.lease_duration_seconds = None;
            match self
                .api
                .replace(&self.cfg.name, &PostParams::default(), &lease)
                .await
            {
                Ok(_) => {
                    info!(lease = %self.cfg.name, "released the Lease");
                    return;
                }
                Err(kube::Error::Api(e)) if e.code == 409 => continue,
                Err(e) => {
                    warn!(lease = %self.cfg.name, error = %e, "releasing the Lease failed; it runs out on its own");
                    return;
                }
            }
        }
    }
}
