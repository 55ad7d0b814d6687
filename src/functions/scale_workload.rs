//! ScaleWorkload (Kanister `pkg/function/scale_workload.go`): set
//! `spec.replicas` of a Deployment or StatefulSet and, unless
//! `waitForReady: false`, wait until it is ready by Kanister's rules
//! (`pkg/kube/deployment.go` `DeploymentReady`, `pkg/kube/statefulset.go`
//! `StatefulSetReady`), polling with exponential backoff 100 ms → 10 s and no
//! own timeout (the executor bounds the phase). Unlike Kanister, which waits
//! until that deadline, the wait fails as soon as a pod of the workload will
//! not become ready without a change ([`workload::stuck`]: CrashLoopBackOff,
//! ErrImagePull, ...), naming the pod, container, reason and last exit; and,
//! unlike Kanister, which returns as soon as the pods are Ready, a ready
//! workload's containers must then stay running without a restart for a short
//! window ([`settle`]), so a container that exits at once fails the phase
//! instead of being declared ready just before its crash loop.
//! Output: `originalReplicaCount`.
//!
//! After a controller restart the phase is entered again: scaling to the same
//! count is the same state, and `originalReplicaCount`, recorded in the
//! ActionSet before the first run scaled ([`StepEvent::Output`]),
//! is taken from there (the workload's count is by then the new one, and a
//! deferPhase that scales back to it would keep the application down).

use std::time::Duration;

use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet, StatefulSet};
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, ListParams, Patch, PatchParams};
use serde_json::{Value, json};

use super::args::Args;
use super::context::Context;
use super::context::{StepEvent, note};
use super::error::FunctionError;
use crate::kube_error::Outage;
use crate::phase_output::Output;
use crate::pods::settle::{self, Settle, Settling};
use crate::pods::workload;

/// The output key, also recorded early.
const ORIGINAL: &str = "originalReplicaCount";

const NAME: &str = "ScaleWorkload";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Deployment,
    StatefulSet,
}

/// Decoded arguments (defaults applied).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Spec {
    pub kind: Kind,
    pub name: String,
    pub namespace: String,
    pub replicas: i32,
    pub wait_for_ready: bool,
}

pub fn parse_kind(kind: &str) -> Result<Kind, FunctionError> {
    match kind.to_ascii_lowercase().as_str() {
        "deployment" => Ok(Kind::Deployment),
        "statefulset" => Ok(Kind::StatefulSet),
        "deploymentconfig" => Err(FunctionError::arg(
            NAME,
            "kind",
            "Workload type DeploymentConfig (OpenShift) is not supported by this executor; use Deployment or StatefulSet",
        )),
        _ => Err(FunctionError::arg(
            NAME,
            "kind",
            format!("Workload type not supported {kind}; use Deployment or StatefulSet"),
        )),
    }
}

/// Kanister's `getArgs`: defaults from the action's object when it is a workload.
pub fn decode(ctx_object: &crate::model::ObjectReference, a: &Args) -> Result<Spec, FunctionError> {
    let replicas = a.int("replicas")?;
    let replicas = i32::try_from(replicas)
        .ok()
        .filter(|r| *r >= 0)
        .ok_or_else(|| {
            FunctionError::arg(
                NAME,
                "replicas",
                format!("{replicas} is not a valid replica count (0 or more)"),
            )
        })?;
    let obj_kind = ctx_object.kind.to_ascii_lowercase();
    let (mut kind, mut name, mut namespace) = match obj_kind.as_str() {
        "deployment" | "statefulset" | "deploymentconfig" => (
            Some(ctx_object.kind.clone()),
            Some(ctx_object.name.clone()),
            Some(ctx_object.namespace.clone()),
        ),
        _ => {
            if !(a.exists("namespace") && a.exists("name") && a.exists("kind")) {
                return Err(FunctionError::failed(
                    NAME,
                    "Workload information not available via defaults or namespace/name/kind parameters: the action's object is not a Deployment or StatefulSet, so set all of `kind`, `name` and `namespace`",
                ));
            }
            (None, None, None)
        }
    };
    if let Some(k) = a.opt_string("kind")? {
        kind = Some(k);
    }
    if let Some(n) = a.opt_string("name")? {
        name = Some(n);
    }
    if let Some(n) = a.opt_string("namespace")? {
        namespace = Some(n);
    }
    let kind = parse_kind(&kind.unwrap_or_default())?;
    let name = name
        .filter(|n| !n.is_empty())
        .ok_or_else(|| FunctionError::arg(NAME, "name", "the workload name is empty"))?;
    let namespace = namespace
        .filter(|n| !n.is_empty())
        .ok_or_else(|| FunctionError::arg(NAME, "namespace", "the workload namespace is empty"))?;
    let wait_for_ready = a.opt_bool("waitForReady")?.unwrap_or(true);
    Ok(Spec {
        kind,
        name,
        namespace,
        replicas,
        wait_for_ready,
    })
}

pub async fn run(ctx: &Context, a: &Args<'_>) -> Result<Output, FunctionError> {
    let spec = decode(&ctx.object, a)?;
    let client = ctx.client.clone();
    let ns = &spec.namespace;
    let name = &spec.name;
    let patch = Patch::Merge(json!({"spec": {"replicas": spec.replicas}}));
    let pp = PatchParams::default();
    let recorded = ctx
        .actionset
        .as_ref()
        .and_then(|a| a.resume_output.get(ORIGINAL))
        .and_then(Value::as_i64);
    // (replicas, minReadySeconds)
    let (current, min_ready) = match spec.kind {
        Kind::Deployment => {
            let api: Api<Deployment> = Api::namespaced(client.clone(), ns);
            let d = api
                .get(name)
                .await
                .map_err(|e| kerr(format!("getting Deployment {ns}/{name}"), e))?
                .spec
                .unwrap_or_default();
            (d.replicas.unwrap_or(1), d.min_ready_seconds)
        }
        Kind::StatefulSet => {
            let api: Api<StatefulSet> = Api::namespaced(client.clone(), ns);
            let s = api
                .get(name)
                .await
                .map_err(|e| kerr(format!("getting StatefulSet {ns}/{name}"), e))?
                .spec
                .unwrap_or_default();
            (s.replicas.unwrap_or(1), s.min_ready_seconds)
        }
    };
    let original = match recorded {
        Some(n) => n,
        None => {
            note(
                ctx,
                StepEvent::Output(ORIGINAL.into(), Value::from(current)),
            )
            .await;
            i64::from(current)
        }
    };
    match spec.kind {
        Kind::Deployment => {
            let api: Api<Deployment> = Api::namespaced(client.clone(), ns);
            api.patch(name, &pp, &patch)
                .await
                .map_err(|e| kerr(format!("scaling Deployment {ns}/{name}"), e))?;
        }
        Kind::StatefulSet => {
            let api: Api<StatefulSet> = Api::namespaced(client.clone(), ns);
            api.patch(name, &pp, &patch)
                .await
                .map_err(|e| kerr(format!("scaling StatefulSet {ns}/{name}"), e))?;
        }
    }
    if spec.wait_for_ready {
        let mut delay = Duration::from_millis(100);
        let mut settling = Settling::new(settle::window(min_ready));
        let mut outage = Outage::default();
        loop {
            let state = match spec.kind {
                Kind::Deployment => deployment_ready(&client, ns, name).await,
                Kind::StatefulSet => statefulset_ready(&client, ns, name).await,
            };
            if state.is_ok() {
                outage.over();
            }
            match state {
                Ok(Readiness::Ready(pods)) => {
                    match settling.observe(&pods, std::time::Instant::now()) {
                        Settle::Settled => break,
                        Settle::Waiting { left, why } => {
                            tracing::debug!(namespace = %ns, name = %name, "{why}");
                            // Should it stop being ready, notice its crash loop early.
                            delay = Duration::from_millis(100);
                            // Look again within the window: a restart shows in the restart count
                            // even when the container is running again by then.
                            tokio::time::sleep(left.min(SETTLE_POLL)).await;
                            continue;
                        }
                    }
                }
                Ok(Readiness::Waiting(why)) => {
                    tracing::debug!(namespace = %ns, name = %name, "{why}")
                }
                Ok(Readiness::Stuck(stuck)) => {
                    return Err(FunctionError::failed(
                        NAME,
                        format!(
                            "{:?} {ns}/{name} will not become ready: {stuck} (the pod's Events and `kubectl logs --previous` tell why)",
                            spec.kind
                        ),
                    ));
                }
                Err(kube::Error::Api(s)) if s.code == 404 => {}
                // The workload comes up without the API server: a restart of it (or of its
                // etcd) is waited out, also in a deferPhase that brings an application back.
                Err(e) if outage.rides_out(&e, std::time::Instant::now()) => {
                    tracing::warn!(namespace = %ns, name = %name, error = %e, "reading the workload failed; retrying");
                    delay = delay.min(Duration::from_secs(1));
                }
                Err(e) => return Err(kerr(format!("waiting for {ns}/{name} to be ready"), e)),
            }
            tokio::time::sleep(delay).await;
            delay = (delay * 2).min(Duration::from_secs(10));
        }
    }
    let mut out = Output::new();
    out.insert(ORIGINAL.into(), Value::from(original));
    Ok(out)
}

/// How often a ready workload is looked at during its settle window.
const SETTLE_POLL: Duration = Duration::from_secs(1);

fn kerr(action: String, e: kube::Error) -> FunctionError {
    FunctionError::kube(NAME, action, e)
}

/// Pods in `ns` owned by `owner_uid`.
async fn owned_pods(
    client: &kube::Client,
    ns: &str,
    owner_uid: &str,
) -> Result<Vec<Pod>, kube::Error> {
    let pods: Api<Pod> = Api::namespaced(client.clone(), ns);
    let list = pods.list(&ListParams::default()).await?;
    Ok(list
        .items
        .into_iter()
        .filter(|p| {
            p.metadata
                .owner_references
                .iter()
                .flatten()
                .any(|o| o.uid == owner_uid)
        })
        .collect())
}

/// How many of `pods` are in phase Running.
fn running(pods: &[Pod]) -> usize {
    pods.iter()
        .filter(|p| p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running"))
        .count()
}

/// Whether a workload is ready, by Kanister's rules.
#[derive(Debug)]
pub enum Readiness {
    /// Ready, with the workload's pods (for the settle window).
    Ready(Vec<Pod>),
    /// Not yet: why (Kanister's status text).
    Waiting(String),
    /// A pod will not become ready without a change by the user: the wait fails now instead of
    /// at the phase's deadline.
    Stuck(workload::Stuck),
}

pub async fn deployment_ready(
    client: &kube::Client,
    ns: &str,
    name: &str,
) -> Result<Readiness, kube::Error> {
    let api: Api<Deployment> = Api::namespaced(client.clone(), ns);
    let d = api.get(name).await?;
    let want = d.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1);
    let st = d.status.clone().unwrap_or_default();
    let (replicas, updated, available) = (
        st.replicas.unwrap_or(0),
        st.updated_replicas.unwrap_or(0),
        st.available_replicas.unwrap_or(0),
    );
    let short = if replicas != want || updated != want || available != want {
        Some(format!(
            "Specified {want} replicas and only {available} are available ({replicas} total, {updated} updated)"
        ))
    } else if st.observed_generation.unwrap_or(0) < d.metadata.generation.unwrap_or(0) {
        Some("the deployment controller has not observed the latest generation yet".into())
    } else {
        None
    };
    let uid = d.metadata.uid.clone().unwrap_or_default();
    let revision = d
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(REVISION))
        .cloned();
    let rss: Api<ReplicaSet> = Api::namespaced(client.clone(), ns);
    let current = rss
        .list(&ListParams::default())
        .await?
        .items
        .into_iter()
        .find(|rs| {
            rs.metadata
                .owner_references
                .iter()
                .flatten()
                .any(|o| o.uid == uid)
                && rs
                    .metadata
                    .annotations
                    .as_ref()
                    .and_then(|a| a.get(REVISION))
                    == revision.as_ref()
        });
    let Some(rs) = current else {
        return Ok(Readiness::Waiting(short.unwrap_or_else(|| {
            "the current ReplicaSet does not exist yet".into()
        })));
    };
    // The pods before the counts: a pod that never gets ready keeps the counts short forever.
    let pods = owned_pods(client, ns, rs.metadata.uid.as_deref().unwrap_or("")).await?;
    if let Some(stuck) = workload::stuck(&pods) {
        return Ok(Readiness::Stuck(stuck));
    }
    if let Some(why) = short {
        return Ok(Readiness::Waiting(why));
    }
    let rs_available = rs
        .status
        .as_ref()
        .and_then(|s| s.available_replicas)
        .unwrap_or(0);
    let running = running(&pods);
    if running as i64 != i64::from(rs_available) {
        return Ok(Readiness::Waiting(format!(
            "Specified {want} replicas and only {running} are running"
        )));
    }
    let not_running = pods.len() - running;
    if not_running > 0 {
        return Ok(Readiness::Waiting(format!(
            "{not_running} pods of the deployment are not running"
        )));
    }
    Ok(Readiness::Ready(pods))
}

const REVISION: &str = "deployment.kubernetes.io/revision";

pub async fn statefulset_ready(
    client: &kube::Client,
    ns: &str,
    name: &str,
) -> Result<Readiness, kube::Error> {
    let api: Api<StatefulSet> = Api::namespaced(client.clone(), ns);
    let s = api.get(name).await?;
    let want = s.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1);
    let ready = s
        .status
        .as_ref()
        .and_then(|s| s.ready_replicas)
        .unwrap_or(0);
    let pods = owned_pods(client, ns, s.metadata.uid.as_deref().unwrap_or("")).await?;
    if let Some(stuck) = workload::stuck(&pods) {
        return Ok(Readiness::Stuck(stuck));
    }
    if ready != want {
        return Ok(Readiness::Waiting(format!(
            "Specified {want} replicas and only {ready} are ready"
        )));
    }
    let running = running(&pods);
    if running as i64 != i64::from(want) {
        return Ok(Readiness::Waiting(format!(
            "Specified {want} replicas and only {running} are running"
        )));
    }
    Ok(Readiness::Ready(pods))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::ObjectReference;
    use serde_json::Map;

    fn obj(kind: &str) -> ObjectReference {
        ObjectReference {
            kind: kind.into(),
            name: "web".into(),
            namespace: "prod".into(),
            ..Default::default()
        }
    }

    fn args(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    /// [`super::decode`] after the registry's argument check, as a phase runs it.
    fn decode(object: &ObjectReference, args: &Map<String, Value>) -> Result<Spec, FunctionError> {
        let a = Args::new(NAME, args);
        crate::functions::registry::check_args(&a)?;
        super::decode(object, &a)
    }

    #[test]
    fn defaults_come_from_the_workload_object() {
        let s = decode(&obj("Deployment"), &args(json!({"replicas": "2"}))).unwrap();
        assert_eq!(
            s,
            Spec {
                kind: Kind::Deployment,
                name: "web".into(),
                namespace: "prod".into(),
                replicas: 2,
                wait_for_ready: true
            }
        );
        let s = decode(
            &obj("statefulset"),
            &args(json!({"replicas": 0, "waitForReady": "false", "name": "db"})),
        )
        .unwrap();
        assert_eq!(s.kind, Kind::StatefulSet);
        assert_eq!(s.name, "db");
        assert!(!s.wait_for_ready);
    }

    #[test]
    fn without_workload_object_all_three_are_needed() {
        let e = decode(
            &obj("Namespace"),
            &args(json!({"replicas": 1, "name": "x"})),
        )
        .unwrap_err();
        assert!(
            e.to_string().contains("Workload information not available"),
            "{e}"
        );
        let s = decode(
            &obj("Namespace"),
            &args(json!({"replicas": 1, "name": "x", "namespace": "n", "kind": "DEPLOYMENT"})),
        )
        .unwrap();
        assert_eq!(
            (s.kind, s.name.as_str(), s.namespace.as_str()),
            (Kind::Deployment, "x", "n")
        );
    }

    #[test]
    fn bad_replicas_and_kinds_are_clear_errors() {
        let e = decode(&obj("Deployment"), &args(json!({"replicas": "two"}))).unwrap_err();
        assert!(
            e.to_string().contains("Cannot convert \"two\" to int"),
            "{e}"
        );
        assert!(decode(&obj("Deployment"), &args(json!({"replicas": -1}))).is_err());
        assert!(decode(&obj("Deployment"), &args(json!({}))).is_err());
        let e = decode(
            &obj("Deployment"),
            &args(json!({"replicas": 1, "kind": "DaemonSet"})),
        )
        .unwrap_err();
        assert!(
            e.to_string()
                .contains("Workload type not supported DaemonSet"),
            "{e}"
        );
        let e = decode(&obj("DeploymentConfig"), &args(json!({"replicas": 1}))).unwrap_err();
        assert!(e.to_string().contains("OpenShift"), "{e}");
        let e = decode(
            &obj("Deployment"),
            &args(json!({"replicas": 1, "replica": 2})),
        )
        .unwrap_err();
        assert!(
            e.to_string().contains("argument replica is not supported"),
            "{e}"
        );
    }
}
