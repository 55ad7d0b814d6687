//! Leader election: one `coordination.k8s.io` Lease (`--lease-name`, default
//! `blueprint-operator-executor`) under which everything that must run once per cluster runs:
//! the ActionSet executor and the ActionSchedule scheduler. A replica without it runs neither.

use std::future::Future;
use std::time::Duration;

use anyhow::Context as _;
use kube::Client;
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tracing::info;

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
}

impl LeaseConfig {
    /// A 15 s Lease renewed 5 s before it runs out.
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
        }
    }
}

/// The Lease, held.
pub struct Leadership {
    rx: watch::Receiver<bool>,
    task: JoinHandle<kube_lease_manager::Result<kube_lease_manager::LeaseManager>>,
}

/// Waits until this replica holds the Lease; `Ok(None)` when `shutdown` resolves first.
pub async fn acquire(
    client: &Client,
    cfg: &LeaseConfig,
    shutdown: impl Future,
) -> anyhow::Result<Option<Leadership>> {
    anyhow::ensure!(
        cfg.lease_seconds > cfg.grace_seconds,
        "Lease {}/{}: its duration ({} s) must be longer than the renewal grace ({} s)",
        cfg.namespace,
        cfg.name,
        cfg.lease_seconds,
        cfg.grace_seconds
    );
    let manager = kube_lease_manager::LeaseManagerBuilder::new(client.clone(), &cfg.name)
        .with_namespace(&cfg.namespace)
        .with_identity(&cfg.identity)
        .with_duration(cfg.lease_seconds)
        .with_grace(cfg.grace_seconds)
        .build()
        .await
        .with_context(|| format!("Lease {}/{}", cfg.namespace, cfg.name))?;
    let (mut rx, task) = manager.watch().await;
    info!(lease = %cfg.name, namespace = %cfg.namespace, identity = %cfg.identity, "waiting for leadership");
    let acquired = tokio::select! {
        r = rx.wait_for(|l| *l) => { r.context("leader election stopped")?; true }
        _ = shutdown => false,
    };
    if !acquired {
        Leadership { rx, task }.release().await;
        return Ok(None);
    }
    info!(lease = %cfg.name, "acquired leadership");
    Ok(Some(Leadership { rx, task }))
}

impl Leadership {
    /// Resolves once the Lease is lost (or its manager stopped).
    pub async fn lost(&mut self) {
        let _ = self.rx.wait_for(|l| !*l).await;
    }

    /// Gives the Lease up, so that another replica takes it without waiting for it to expire.
    pub async fn release(self) {
        drop(self.rx);
        let _ = tokio::time::timeout(Duration::from_secs(5), self.task).await;
    }
}
