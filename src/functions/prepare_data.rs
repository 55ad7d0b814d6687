//! PrepareData (Kanister `pkg/function/prepare_data.go`): run `command` in a
//! new pod (`generateName: prepare-data-job-`, one container `container`)
//! with PVCs mounted, wait for it to finish, parse the phase output from its
//! log and delete the pod.
//!
//! The PVCs: `volumes` (map PVC name → mount path), or, when it is absent or
//! empty, every PVC of every pod of the action's Deployment/StatefulSet
//! (`.Deployment/.StatefulSet.PersistentVolumeClaims`), each mounted at
//! `/mnt/prepare_data/<pvc>`. Each PVC must exist in `namespace` ("Failed to
//! retrieve PVC."); a PVC whose access modes include `ReadOnlyMany` is
//! mounted read-only. `serviceaccount` sets the pod's service account.
//! With `failOnError: false` (the default) a pod that fails still gives its
//! phase output; with `true` it fails the phase.
//!
//! Differences from Kanister: an empty `namespace` means the ActionSet's
//! (Kanister: the controller's); pod volumes are named `vol-<n>` in PVC name
//! order (Kanister: `vol-<uuid>`); `podOverride` is merged as in KubeTask;
//! the log is read once the pod has finished.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{PersistentVolumeClaim, Pod};
use kube::api::Api;
use serde_json::{Map, Value, json};

use super::args::Args;
use super::context::Context;
use super::error::FunctionError;
use crate::phase_output::Output;
use crate::pods::{self as pod, CONTAINER, merge_labels, merge_overrides};

const NAME: &str = "PrepareData";
/// `generateName` of the pod.
pub const JOB_PREFIX: &str = "prepare-data-job-";
/// Mount point of a workload's PVC when `volumes` is not given (`%s`: the PVC name).
pub const DEFAULT_MOUNT_POINT: &str = "/mnt/prepare_data/";

/// A PVC to mount.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mount {
    pub pvc: String,
    pub path: String,
    pub read_only: bool,
}

pub async fn run(ctx: &Context, a: &Args<'_>, params: &Value) -> Result<Output, FunctionError> {
    let namespace = a.string("namespace")?;
    let namespace = if namespace.is_empty() {
        ctx.namespace.clone()
    } else {
        namespace
    };
    let image = a.string("image")?;
    let command = a.string_list("command")?;
    let volumes = a.opt_string_map("volumes")?.unwrap_or_default();
    let service_account = a.opt_string("serviceaccount")?.unwrap_or_default();
    let labels = merge_labels(a.opt_string_map("podLabels")?, &ctx.pod_labels);
    let annotations = merge_labels(a.opt_string_map("podAnnotations")?, &ctx.pod_annotations);
    let fail_on_error = a.flag("failOnError")?;
    let pod_override = merge_overrides(a.opt_json_map("podOverride")?, ctx.pod_override.as_ref());
    let volumes = if volumes.is_empty() {
        workload_volumes(params).map_err(|e| FunctionError::failed(NAME, e.to_string()))?
    } else {
        volumes
    };

    let pvcs: Api<PersistentVolumeClaim> = Api::namespaced(ctx.client.clone(), &namespace);
    let mut mounts = Vec::new();
    for (pvc, path) in volumes {
        let claim = pvcs.get(&pvc).await.map_err(|e| {
            FunctionError::kube(
                NAME,
                format!("Failed to retrieve PVC. Namespace {namespace}, Name {pvc}"),
                e,
            )
        })?;
        let read_only = claim
            .spec
            .and_then(|s| s.access_modes)
            .is_some_and(|m| m.iter().any(|m| m == "ReadOnlyMany"));
        mounts.push(Mount {
            pvc,
            path,
            read_only,
        });
    }
    let pod = pod(
        &namespace,
        &image,
        &command,
        &mounts,
        &service_account,
        labels,
        annotations,
        pod_override.as_ref(),
    )
    .map_err(|m| FunctionError::arg(NAME, "podOverride", m.to_string()))?;
    let (log, _) = pod::run_pod_to_end(ctx.pods(), NAME, &namespace, pod, fail_on_error).await?;
    Ok(log.output(NAME)?)
}

/// Why PrepareData has no volumes to mount.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NoVolumes {
    #[error(
        "Failed to get volumes: `volumes` is not given and the action's object is not a Deployment or StatefulSet"
    )]
    NoWorkload,
    #[error(
        "No volumes found: the action's workload has no running pod with a PVC; give `volumes` (PVC name: mount path)"
    )]
    NoPvc,
}

/// Kanister's `getVolumes`: every PVC of the action's Deployment or
/// StatefulSet, mounted at `/mnt/prepare_data/<pvc>`.
pub fn workload_volumes(params: &Value) -> Result<BTreeMap<String, String>, NoVolumes> {
    let pvcs = ["Deployment", "StatefulSet"]
        .iter()
        .find_map(|k| params.get(*k).filter(|v| v.is_object()))
        .ok_or(NoVolumes::NoWorkload)?
        .get("PersistentVolumeClaims");
    let mut vols = BTreeMap::new();
    for claims in pvcs
        .and_then(Value::as_object)
        .into_iter()
        .flat_map(|m| m.values())
    {
        for pvc in claims.as_object().into_iter().flat_map(|m| m.keys()) {
            vols.insert(pvc.clone(), format!("{DEFAULT_MOUNT_POINT}{pvc}"));
        }
    }
    if vols.is_empty() {
        return Err(NoVolumes::NoPvc);
    }
    Ok(vols)
}

/// The pod Kanister would create.
#[allow(clippy::too_many_arguments)]
pub fn pod(
    namespace: &str,
    image: &str,
    command: &[String],
    mounts: &[Mount],
    service_account: &str,
    labels: BTreeMap<String, String>,
    annotations: BTreeMap<String, String>,
    pod_override: Option<&Map<String, Value>>,
) -> Result<Pod, pod::InvalidPod> {
    let mut volume_mounts = Vec::new();
    let mut volumes = Vec::new();
    for (i, m) in mounts.iter().enumerate() {
        let name = format!("vol-{i}");
        let mut vm = json!({"name": name, "mountPath": m.path});
        let mut claim = json!({"claimName": m.pvc});
        if m.read_only {
            vm["readOnly"] = json!(true);
            claim["readOnly"] = json!(true);
        }
        volume_mounts.push(vm);
        volumes.push(json!({"name": name, "persistentVolumeClaim": claim}));
    }
    let mut container = json!({
        "name": CONTAINER,
        "image": image,
        "command": command,
        "imagePullPolicy": "IfNotPresent",
    });
    if !volume_mounts.is_empty() {
        container["volumeMounts"] = json!(volume_mounts);
    }
    let mut spec = json!({"restartPolicy": "Never", "containers": [container]});
    if !volumes.is_empty() {
        spec["volumes"] = json!(volumes);
    }
    if !service_account.is_empty() {
        spec["serviceAccountName"] = json!(service_account);
    }
    let mut pod = pod::build_pod(
        namespace,
        JOB_PREFIX,
        spec,
        labels,
        annotations,
        pod_override,
    )?;
    if let Some(s) = pod.spec.as_mut() {
        s.containers.sort_by_key(|c| c.name != CONTAINER);
    }
    Ok(pod)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mounts() -> Vec<Mount> {
        vec![
            Mount {
                pvc: "data".into(),
                path: "/mnt/data".into(),
                read_only: false,
            },
            Mount {
                pvc: "shared".into(),
                path: "/mnt/shared".into(),
                read_only: true,
            },
        ]
    }

    #[test]
    fn pod_mounts_the_pvcs_and_sets_the_service_account() {
        let p = pod(
            "ns",
            "busybox",
            &["sh".into(), "-c".into(), "ls /mnt".into()],
            &mounts(),
            "backup-sa",
            BTreeMap::from([("l".into(), "1".into())]),
            BTreeMap::new(),
            None,
        )
        .unwrap();
        let v = serde_json::to_value(&p).unwrap();
        assert_eq!(v["metadata"]["generateName"], "prepare-data-job-");
        assert_eq!(v["metadata"]["labels"]["createdBy"], "kanister");
        assert_eq!(v["metadata"]["labels"]["l"], "1");
        assert_eq!(v["spec"]["serviceAccountName"], "backup-sa");
        let c = &v["spec"]["containers"][0];
        assert_eq!(c["name"], "container");
        assert_eq!(c["imagePullPolicy"], "IfNotPresent");
        assert_eq!(
            c["volumeMounts"],
            json!([
                {"name": "vol-0", "mountPath": "/mnt/data"},
                {"name": "vol-1", "mountPath": "/mnt/shared", "readOnly": true},
            ])
        );
        assert_eq!(
            v["spec"]["volumes"],
            json!([
                {"name": "vol-0", "persistentVolumeClaim": {"claimName": "data"}},
                {"name": "vol-1", "persistentVolumeClaim": {"claimName": "shared", "readOnly": true}},
            ])
        );
    }

    #[test]
    fn no_service_account_and_override_sidecar_keeps_container_first() {
        let o = json!({"containers": [{"name": "aaa", "image": "x"}], "serviceAccountName": "o"});
        let p = pod(
            "ns",
            "img",
            &["true".into()],
            &mounts()[..1],
            "",
            BTreeMap::new(),
            BTreeMap::new(),
            o.as_object(),
        )
        .unwrap();
        let v = serde_json::to_value(&p).unwrap();
        assert_eq!(v["spec"]["containers"][0]["name"], "container");
        assert_eq!(v["spec"]["containers"][1]["name"], "aaa");
        assert_eq!(v["spec"]["serviceAccountName"], "o");
    }

    #[test]
    fn volumes_default_to_the_workloads_pvcs() {
        let params = json!({"StatefulSet": {"PersistentVolumeClaims": {
            "db-0": {"data-db-0": "/var/lib/db"},
            "db-1": {"data-db-1": "/var/lib/db", "logs-db-1": "/logs"},
        }}});
        let v = workload_volumes(&params).unwrap();
        assert_eq!(
            v,
            BTreeMap::from([
                ("data-db-0".into(), "/mnt/prepare_data/data-db-0".into()),
                ("data-db-1".into(), "/mnt/prepare_data/data-db-1".into()),
                ("logs-db-1".into(), "/mnt/prepare_data/logs-db-1".into()),
            ])
        );
        let e = workload_volumes(&json!({"Deployment": {"PersistentVolumeClaims": {}}}))
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("No volumes found"), "{e}");
        let e = workload_volumes(&json!({"Namespace": {"Name": "x"}}))
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("Failed to get volumes"), "{e}");
    }
}
