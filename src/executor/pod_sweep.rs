//! Deletes pods that functions started and nobody will delete any more.
//!
//! Functions and the executor delete their pods themselves (a cancelled phase's pods once
//! their last log lines are kept),
//! but a controller that is killed (SIGKILL, OOM, node loss) leaves them
//! running. Every such pod carries its ActionSet's UID and namespace as
//! labels ([`crate::model::labels`], set by [`crate::pods`]), so:
//!
//! - **at start** and **periodically**, a labelled pod is deleted when its
//!   ActionSet is gone (or was re-created: another UID) or has ended
//!   (`complete`/`failed`: none of its phases runs any more). Pods of
//!   running ActionSets are kept, also at start: the executor resumes those
//!   ActionSets, re-attaches to the pod of a phase that was running
//!   (`executor::resume`) and deletes the pods of phases that ended
//!   (`runtime`).
//!
//! Scope: with `--namespace`, only pods whose ActionSet lives there (another
//! controller may run the other namespaces).

use std::collections::HashMap;
use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, DeleteParams, ListParams};
use kube::{Client, ResourceExt};
use tracing::{info, warn};

use crate::model::labels::{ANNOTATION_ACTIONSET, LABEL_ACTIONSET_NAMESPACE, LABEL_ACTIONSET_UID};
use crate::model::{ActionSet, State};

/// What is known of a pod's ActionSet.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Owner {
    /// No ActionSet of that namespace/name.
    Gone,
    /// The ActionSet of that name now.
    Found { uid: String, state: Option<State> },
    /// The pod does not say which ActionSet (no annotation), or it could not be read.
    Unknown,
}

/// Why a pod is deleted; `None`: keep it.
pub fn verdict(pod_uid: &str, owner: &Owner) -> Option<&'static str> {
    match owner {
        Owner::Gone => Some("its ActionSet no longer exists"),
        Owner::Found { uid, .. } if uid != pod_uid => {
            Some("its ActionSet was deleted (a new one has the same name)")
        }
        Owner::Found {
            state: Some(State::Complete | State::Failed),
            ..
        } => Some("its ActionSet has ended"),
        Owner::Found { .. } | Owner::Unknown => None,
    }
}

/// The label selector of the pods in scope.
pub fn selector(namespace: Option<&str>) -> String {
    match namespace {
        Some(ns) => format!("{LABEL_ACTIONSET_UID},{LABEL_ACTIONSET_NAMESPACE}={ns}"),
        None => LABEL_ACTIONSET_UID.to_string(),
    }
}

/// One sweep; returns how many pods were deleted.
pub async fn sweep(client: &Client, namespace: Option<&str>) -> Result<usize, kube::Error> {
    let pods: Api<Pod> = Api::all(client.clone());
    let list = pods
        .list(&ListParams::default().labels(&selector(namespace)))
        .await?;
    let mut owners: HashMap<String, Owner> = HashMap::new();
    let mut deleted = 0;
    for pod in list.items {
        if pod.metadata.deletion_timestamp.is_some() {
            continue;
        }
        let uid = pod
            .labels()
            .get(LABEL_ACTIONSET_UID)
            .cloned()
            .unwrap_or_default();
        let actionset = pod
            .annotations()
            .get(ANNOTATION_ACTIONSET)
            .cloned()
            .unwrap_or_default();
        let owner = match owners.get(&actionset) {
            Some(o) => o.clone(),
            None => {
                let o = lookup(client, &actionset).await;
                owners.insert(actionset.clone(), o.clone());
                o
            }
        };
        let Some(why) = verdict(&uid, &owner) else {
            continue;
        };
        let (ns, name) = (pod.namespace().unwrap_or_default(), pod.name_any());
        let api: Api<Pod> = Api::namespaced(client.clone(), &ns);
        match api.delete(&name, &DeleteParams::default()).await {
            Ok(_) => {
                info!(pod = %name, namespace = %ns, actionset = %actionset, "deleted a leftover pod: {why}");
                deleted += 1;
            }
            Err(kube::Error::Api(s)) if s.code == 404 => {}
            Err(e) => {
                warn!(pod = %name, namespace = %ns, error = %e, "could not delete a leftover pod")
            }
        }
    }
    Ok(deleted)
}

/// The ActionSet `<namespace>/<name>`.
async fn lookup(client: &Client, actionset: &str) -> Owner {
    let Some((ns, name)) = actionset
        .split_once('/')
        .filter(|(n, m)| !n.is_empty() && !m.is_empty())
    else {
        return Owner::Unknown;
    };
    let api: Api<ActionSet> = Api::namespaced(client.clone(), ns);
    match api.get_opt(name).await {
        Ok(None) => Owner::Gone,
        Ok(Some(a)) => Owner::Found {
            uid: a.uid().unwrap_or_default(),
            state: a.state(),
        },
        Err(e) => {
            warn!(actionset = %actionset, error = %e, "pod sweep: cannot read the ActionSet");
            Owner::Unknown
        }
    }
}

/// Sweeps once now, then every `interval`
/// (zero: only now) until the returned task is aborted. Call once, after
/// taking the executor Lease and before the executor starts.
pub async fn start(
    client: Client,
    namespace: Option<String>,
    interval: Duration,
) -> tokio::task::JoinHandle<()> {
    match sweep(&client, namespace.as_deref()).await {
        Ok(n) => info!(deleted = n, "swept pods left by an earlier controller"),
        Err(e) => warn!(error = %e, "pod sweep at start failed; the periodic sweep retries"),
    }
    tokio::spawn(async move {
        if interval.is_zero() {
            return;
        }
        loop {
            tokio::time::sleep(interval).await;
            if let Err(e) = sweep(&client, namespace.as_deref()).await {
                warn!(error = %e, "pod sweep failed");
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verdicts() {
        let found = |uid: &str, state| Owner::Found {
            uid: uid.into(),
            state,
        };
        assert!(verdict("u", &Owner::Gone).is_some());
        assert!(verdict("u", &Owner::Unknown).is_none());
        assert!(verdict("u", &found("other", Some(State::Running))).is_some());
        assert!(verdict("u", &found("u", Some(State::Complete))).is_some());
        assert!(verdict("u", &found("u", Some(State::Failed))).is_some());
        assert!(verdict("u", &found("u", Some(State::Running))).is_none());
        assert!(verdict("u", &found("u", Some(State::Pending))).is_none());
        assert!(verdict("u", &found("u", None)).is_none());
    }

    #[test]
    fn selector_is_scoped_by_namespace() {
        assert_eq!(selector(None), "blueprint-operator.io/actionset-uid");
        assert_eq!(
            selector(Some("team-a")),
            "blueprint-operator.io/actionset-uid,blueprint-operator.io/actionset-namespace=team-a"
        );
    }
}
