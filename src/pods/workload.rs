//! The pods of a workload, found by owner references as Kanister's
//! `pkg/kube/workload.go` finds them (`DeploymentPods`, `StatefulSetPods`,
//! `DeploymentConfigPods`, `FetchPods`), not by label selector:
//!
//! - Deployment: its current ReplicaSet (owned by the Deployment, with the
//!   Deployment's `deployment.kubernetes.io/revision`), then the pods that
//!   ReplicaSet controls, so during a rollout the old ReplicaSet's pods are
//!   not taken for the workload's;
//! - StatefulSet: the pods it controls;
//! - DeploymentConfig (OpenShift): its current ReplicationController (with
//!   `openshift.io/deployment-config.latest-version` = `status.latestVersion`),
//!   then the pods that one controls.
//!
//! A selector with `matchExpressions`, or another workload whose selector
//! overlaps, makes no difference: ownership decides. [`stuck`] tells which of
//! a workload's pods will not become ready without a change by the user.

use std::time::Duration;

use k8s_openapi::api::apps::v1::ReplicaSet;
use k8s_openapi::api::core::v1::{Pod, ReplicationController};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{Api, ListParams};
use serde_json::Value;

use super::FATAL_WAITING;

/// Revision annotation of a Deployment and its ReplicaSets.
pub const REVISION: &str = "deployment.kubernetes.io/revision";
/// Revision annotation of a DeploymentConfig's ReplicationControllers.
pub const DC_REVISION: &str = "openshift.io/deployment-config.latest-version";

/// The workload kinds whose pods can be found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Deployment,
    StatefulSet,
    DeploymentConfig,
}

/// Does `meta` have a controller owner reference to `uid`?
pub fn controlled_by(meta: &ObjectMeta, uid: &str) -> bool {
    meta.owner_references
        .iter()
        .flatten()
        .any(|o| o.uid == uid && o.controller == Some(true))
}

fn annotation<'a>(meta: &'a ObjectMeta, key: &str) -> Option<&'a str> {
    meta.annotations
        .as_ref()
        .and_then(|a| a.get(key))
        .map(String::as_str)
}

/// Kanister's `FetchReplicaSet`/`FetchReplicationController`: the one of
/// `items` controlled by `owner_uid` whose `key` annotation is `revision`.
pub fn current<'a>(
    items: impl IntoIterator<Item = &'a ObjectMeta>,
    owner_uid: &str,
    key: &str,
    revision: &str,
) -> Option<&'a ObjectMeta> {
    items
        .into_iter()
        .find(|m| controlled_by(m, owner_uid) && annotation(m, key) == Some(revision))
}

/// Kanister's `FetchPods`: the pods controlled by `owner_uid`, split into
/// (running, not running); pods being deleted count as not running.
pub fn split_owned(pods: Vec<Pod>, owner_uid: &str) -> (Vec<Pod>, Vec<Pod>) {
    pods.into_iter()
        .filter(|p| controlled_by(&p.metadata, owner_uid))
        .partition(|p| {
            p.metadata.deletion_timestamp.is_none()
                && p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running")
        })
}

/// (running, not running) pods controlled by `owner_uid` in `ns`.
pub async fn owned_pods(
    client: &kube::Client,
    ns: &str,
    owner_uid: &str,
) -> Result<(Vec<Pod>, Vec<Pod>), kube::Error> {
    let api: Api<Pod> = Api::namespaced(client.clone(), ns);
    let list = api.list(&ListParams::default()).await?;
    Ok(split_owned(list.items, owner_uid))
}

/// Why a pod of a workload will not become ready without a change by the user: one of its
/// containers waits for a reason the kubelet does not resolve by itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stuck {
    pub pod: String,
    pub container: String,
    /// The waiting reason: ErrImagePull, ImagePullBackOff, CrashLoopBackOff, ...
    pub reason: String,
    pub message: String,
    pub restarts: i32,
    /// The container's last termination (exit code, reason such as OOMKilled or Error, message).
    pub last_exit: Option<(i32, String, String)>,
}

impl std::fmt::Display for Stuck {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "pod {}, container {:?}: {}",
            self.pod, self.container, self.reason
        )?;
        if !self.message.is_empty() {
            write!(f, " ({})", self.message)?;
        }
        if self.restarts > 0 {
            write!(f, "; restarted {} times", self.restarts)?;
        }
        if let Some((code, reason, message)) = &self.last_exit {
            write!(f, "; last exit code {code}")?;
            if !reason.is_empty() {
                write!(f, " ({reason})")?;
            }
            if !message.trim().is_empty() {
                write!(f, ": {}", message.trim())?;
            }
        }
        Ok(())
    }
}

/// The first container (init containers first) of `pods` that will not start without a change:
/// waiting for one of the pod runner's fatal reasons ([`FATAL_WAITING`]: image pulls, container
/// config) or in CrashLoopBackOff, the kubelet's back-off between restarts of a container that
/// keeps exiting. Pods being deleted are left out.
pub fn stuck(pods: &[Pod]) -> Option<Stuck> {
    pods.iter()
        .filter(|p| p.metadata.deletion_timestamp.is_none())
        .find_map(|p| {
            let st = p.status.as_ref()?;
            st.init_container_statuses
                .iter()
                .flatten()
                .chain(st.container_statuses.iter().flatten())
                .find_map(|cs| {
                    let waiting = cs.state.as_ref()?.waiting.as_ref()?;
                    let reason = waiting.reason.as_deref()?;
                    if !(reason == "CrashLoopBackOff" || FATAL_WAITING.contains(&reason)) {
                        return None;
                    }
                    let last_exit = cs
                        .last_state
                        .as_ref()
                        .and_then(|l| l.terminated.as_ref())
                        .map(|t| {
                            (
                                t.exit_code,
                                t.reason.clone().unwrap_or_default(),
                                t.message.clone().unwrap_or_default(),
                            )
                        });
                    Some(Stuck {
                        pod: p.metadata.name.clone().unwrap_or_default(),
                        container: cs.name.clone(),
                        reason: reason.to_string(),
                        message: waiting.message.clone().unwrap_or_default(),
                        restarts: cs.restart_count,
                        last_exit,
                    })
                })
        })
}

/// How long to wait for the current ReplicaSet of a Deployment that was
/// just changed (the deployment controller creates it a moment later).
const CURRENT_WAIT: Duration = Duration::from_secs(30);

/// Why a workload's running pods could not be found (Kanister's texts where it has them).
#[derive(Debug, thiserror::Error)]
pub enum PodsError {
    #[error("the metadata of {ns}/{name} is not valid: {source}")]
    Metadata {
        ns: String,
        name: String,
        source: serde_json::Error,
    },
    #[error(
        "Could not list {what} in {ns}: {}",
        crate::kube_error::Describe(source)
    )]
    ListOwners {
        what: &'static str,
        ns: String,
        source: kube::Error,
    },
    #[error(
        "Could not find a ReplicaSet for Deployment {ns}/{name} (revision {revision:?}): none owned by it has that revision after {}s",
        CURRENT_WAIT.as_secs()
    )]
    NoCurrentReplicaSet {
        ns: String,
        name: String,
        revision: String,
    },
    #[error(
        "Failed to list pods of {ns}/{name}: {}",
        crate::kube_error::Describe(source)
    )]
    ListPods {
        ns: String,
        name: String,
        source: kube::Error,
    },
}

/// The running pods of workload `name` (its JSON `object`), sorted by name.
pub async fn running_pods(
    client: &kube::Client,
    kind: Kind,
    ns: &str,
    name: &str,
    object: &Value,
) -> Result<Vec<Pod>, PodsError> {
    let meta: ObjectMeta =
        serde_json::from_value(object["metadata"].clone()).map_err(|source| {
            PodsError::Metadata {
                ns: ns.to_string(),
                name: name.to_string(),
                source,
            }
        })?;
    let list_owners = |what| {
        move |source| PodsError::ListOwners {
            what,
            ns: ns.to_string(),
            source,
        }
    };
    let uid = meta.uid.clone().unwrap_or_default();
    let owner_uid = match kind {
        Kind::StatefulSet => uid,
        Kind::Deployment => {
            let revision = annotation(&meta, REVISION).unwrap_or_default().to_string();
            let api: Api<ReplicaSet> = Api::namespaced(client.clone(), ns);
            let deadline = tokio::time::Instant::now() + CURRENT_WAIT;
            loop {
                let rss = api
                    .list(&ListParams::default())
                    .await
                    .map_err(list_owners("ReplicaSets"))?;
                if let Some(m) = current(
                    rss.items.iter().map(|r| &r.metadata),
                    &uid,
                    REVISION,
                    &revision,
                ) {
                    break m.uid.clone().unwrap_or_default();
                }
                if tokio::time::Instant::now() >= deadline {
                    return Err(PodsError::NoCurrentReplicaSet {
                        ns: ns.to_string(),
                        name: name.to_string(),
                        revision,
                    });
                }
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
        }
        Kind::DeploymentConfig => {
            let revision = object
                .pointer("/status/latestVersion")
                .and_then(Value::as_i64)
                .unwrap_or(0)
                .to_string();
            let api: Api<ReplicationController> = Api::namespaced(client.clone(), ns);
            let rcs = api
                .list(&ListParams::default())
                .await
                .map_err(list_owners("ReplicationControllers"))?;
            match current(
                rcs.items.iter().map(|r| &r.metadata),
                &uid,
                DC_REVISION,
                &revision,
            ) {
                Some(m) => m.uid.clone().unwrap_or_default(),
                // Kanister: no pods before the first deployment of the config.
                None => return Ok(Vec::new()),
            }
        }
    };
    let (mut running, _) =
        owned_pods(client, ns, &owner_uid)
            .await
            .map_err(|source| PodsError::ListPods {
                ns: ns.to_string(),
                name: name.to_string(),
                source,
            })?;
    running.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
    Ok(running)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn meta(v: Value) -> ObjectMeta {
        serde_json::from_value(v).unwrap()
    }

    fn owned(uid: &str) -> Value {
        json!([{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "x", "uid": uid, "controller": true}])
    }

    #[test]
    fn the_current_replica_set_has_the_deployments_revision() {
        let rss = [
            meta(
                json!({"uid": "rs1", "ownerReferences": owned("dep"), "annotations": {REVISION: "1"}}),
            ),
            meta(
                json!({"uid": "rs2", "ownerReferences": owned("dep"), "annotations": {REVISION: "2"}}),
            ),
            meta(
                json!({"uid": "rs3", "ownerReferences": owned("other"), "annotations": {REVISION: "2"}}),
            ),
        ];
        let c = current(rss.iter(), "dep", REVISION, "2").unwrap();
        assert_eq!(c.uid.as_deref(), Some("rs2"));
        assert!(current(rss.iter(), "dep", REVISION, "3").is_none());
        assert!(current(rss.iter(), "nobody", REVISION, "1").is_none());
    }

    fn pod_with(name: &str, status: Value) -> Pod {
        serde_json::from_value(json!({"metadata": {"name": name}, "status": status})).unwrap()
    }

    fn container(name: &str, state: Value, last: Value, restarts: i32) -> Value {
        json!({"name": name, "image": "x", "imageID": "", "ready": false,
            "restartCount": restarts, "state": state, "lastState": last})
    }

    #[test]
    fn a_container_in_crash_loop_back_off_is_stuck_with_its_last_exit() {
        let crashing = container(
            "app",
            json!({"waiting": {"reason": "CrashLoopBackOff",
                "message": "back-off 20s restarting failed container=app"}}),
            json!({"terminated": {"exitCode": 3, "reason": "Error", "message": "no config\n"}}),
            2,
        );
        let pods = [
            pod_with(
                "app-1",
                json!({"phase": "Running", "containerStatuses": [
                container("app", json!({"running": {}}), json!({}), 0)]}),
            ),
            pod_with(
                "app-2",
                json!({"phase": "Running", "containerStatuses": [crashing]}),
            ),
        ];
        let s = stuck(&pods).unwrap();
        assert_eq!(
            s,
            Stuck {
                pod: "app-2".into(),
                container: "app".into(),
                reason: "CrashLoopBackOff".into(),
                message: "back-off 20s restarting failed container=app".into(),
                restarts: 2,
                last_exit: Some((3, "Error".into(), "no config\n".into())),
            }
        );
        assert_eq!(
            s.to_string(),
            "pod app-2, container \"app\": CrashLoopBackOff (back-off 20s restarting failed container=app); restarted 2 times; last exit code 3 (Error): no config"
        );
        // An OOM kill shows as the last exit's reason.
        let oom = container(
            "db",
            json!({"waiting": {"reason": "CrashLoopBackOff"}}),
            json!({"terminated": {"exitCode": 137, "reason": "OOMKilled"}}),
            1,
        );
        let s = stuck(&[pod_with("db-0", json!({"containerStatuses": [oom]}))]).unwrap();
        assert_eq!(
            s.to_string(),
            "pod db-0, container \"db\": CrashLoopBackOff; restarted 1 times; last exit code 137 (OOMKilled)"
        );
    }

    #[test]
    fn image_pulls_and_init_containers_are_stuck_too_but_not_pods_on_their_way() {
        let pull = container(
            "app",
            json!({"waiting": {"reason": "ImagePullBackOff", "message": "Back-off pulling image \"x\""}}),
            json!({}),
            0,
        );
        let s = stuck(&[pod_with(
            "a",
            json!({"phase": "Pending", "containerStatuses": [pull]}),
        )])
        .unwrap();
        assert_eq!(
            (s.reason.as_str(), &s.last_exit),
            ("ImagePullBackOff", &None)
        );
        assert_eq!(
            s.to_string(),
            "pod a, container \"app\": ImagePullBackOff (Back-off pulling image \"x\")"
        );
        let init = container(
            "init",
            json!({"waiting": {"reason": "ErrImagePull"}}),
            json!({}),
            0,
        );
        let s = stuck(&[pod_with("b", json!({"phase": "Pending",
            "initContainerStatuses": [init],
            "containerStatuses": [container("app", json!({"waiting": {"reason": "PodInitializing"}}), json!({}), 0)]}))])
        .unwrap();
        assert_eq!(
            (s.container.as_str(), s.reason.as_str()),
            ("init", "ErrImagePull")
        );
        // Starting, running, or going away: not stuck.
        let starting = container(
            "app",
            json!({"waiting": {"reason": "ContainerCreating"}}),
            json!({}),
            0,
        );
        let mut deleting = pod_with(
            "d",
            json!({"containerStatuses": [container(
            "app", json!({"waiting": {"reason": "CrashLoopBackOff"}}), json!({}), 4)]}),
        );
        deleting.metadata.deletion_timestamp =
            Some(serde_json::from_value(json!("2026-01-01T00:00:00Z")).unwrap());
        assert_eq!(
            stuck(&[
                pod_with(
                    "c",
                    json!({"phase": "Pending", "containerStatuses": [starting]})
                ),
                pod_with(
                    "r",
                    json!({"phase": "Running", "containerStatuses": [
                    container("app", json!({"running": {}}), json!({"terminated": {"exitCode": 1}}), 1)]})
                ),
                pod_with("n", json!({"phase": "Pending"})),
                deleting,
            ]),
            None
        );
    }

    #[test]
    fn pods_are_split_by_owner_and_phase() {
        let pod = |name: &str, owner: &str, phase: &str, deleting: bool| -> Pod {
            let mut v = json!({"metadata": {"name": name, "ownerReferences": owned(owner)},
                "status": {"phase": phase}});
            if deleting {
                v["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:00:00Z");
            }
            serde_json::from_value(v).unwrap()
        };
        let not_controller: Pod = serde_json::from_value(json!({"metadata": {"name": "e",
            "ownerReferences": [{"apiVersion": "v1", "kind": "X", "name": "x", "uid": "rs2"}]},
            "status": {"phase": "Running"}}))
        .unwrap();
        let (running, other) = split_owned(
            vec![
                pod("a", "rs2", "Running", false),
                pod("b", "rs1", "Running", false),
                pod("c", "rs2", "Pending", false),
                pod("d", "rs2", "Running", true),
                not_controller,
            ],
            "rs2",
        );
        let names = |ps: &[Pod]| {
            ps.iter()
                .map(|p| p.metadata.name.clone().unwrap())
                .collect::<Vec<_>>()
        };
        assert_eq!(names(&running), ["a"]);
        assert_eq!(names(&other), ["c", "d"]);
    }
}
