//! CreateCSISnapshot (Kanister `pkg/function/create_csi_snapshot.go`): checks that the PVC
//! exists ("Failed to find PVC"), creates the VolumeSnapshot `name` (default `<pvc>-snapshot-<5
//! random chars>`) with `spec.source.persistentVolumeClaimName` and `spec.volumeSnapshotClassName`,
//! waits until it is ready ([`super::csi::wait_ready`]), then outputs `name`, `pvc`, `namespace`,
//! `restoreSize` and `snapshotContent` (`status.boundVolumeSnapshotContentName`).
//!
//! Entered again after a controller restart, it waits for the snapshot of the first run (its
//! name is recorded in the ActionSet before it is created) instead of creating a second one,
//! when that snapshot is there with the same PVC as source.
//!
//! Differences from Kanister: only the `v1` snapshot API is used (Kanister falls back to
//! v1beta1/v1alpha1); an empty `namespace` means the ActionSet's; `restoreSize` and
//! `snapshotContent` are output as the status has them (Kanister re-formats the quantity
//! canonically, and writes `<nil>`/null when they are missing: here `""`); `labels` are not
//! sanitized.

use k8s_openapi::api::core::v1::PersistentVolumeClaim;
use kube::api::{Api, PostParams};
use kube::core::DynamicObject;
use serde_json::{Value, json};

use super::args::Args;
use super::context::Context;
use super::csi::{GROUP, KIND, VERSION, create_output, namespace_arg, snapshot_api, wait_ready};
use super::error::FunctionError;
use crate::phase_output::Output;

const NAME: &str = "CreateCSISnapshot";

pub async fn run(ctx: &Context, a: &Args<'_>) -> Result<Output, FunctionError> {
    let pvc = a.string("pvc")?;
    let namespace = namespace_arg(a, &ctx.namespace)?;
    let class = a.string("snapshotClass")?;
    let asref = ctx.actionset.as_ref();
    let reentered = asref.is_some_and(|a| a.reentered);
    let recorded = asref
        .and_then(|a| a.resume_output.get("name"))
        .and_then(Value::as_str)
        .filter(|_| reentered)
        .map(str::to_string);
    let name = match &recorded {
        Some(n) => n.clone(),
        None => a
            .opt_string("name")?
            .filter(|n| !n.is_empty())
            .unwrap_or_else(|| default_snapshot_name(&pvc)),
    };
    let labels = a.opt_string_map("labels")?.unwrap_or_default();

    let api = snapshot_api(ctx, NAME, &namespace).await?;
    let pvcs: Api<PersistentVolumeClaim> = Api::namespaced(ctx.client.clone(), &namespace);
    match pvcs.get(&pvc).await {
        Ok(_) => {}
        Err(kube::Error::Api(s)) if s.code == 404 => {
            return Err(FunctionError::failed(
                NAME,
                format!("Failed to find PVC: pvc {pvc}, namespace {namespace}"),
            ));
        }
        Err(e) => {
            return Err(FunctionError::kube(
                NAME,
                format!("Failed to query PVC: pvc {pvc}, namespace {namespace}"),
                e,
            ));
        }
    }
    let snap: DynamicObject =
        serde_json::from_value(snapshot_manifest(&name, &namespace, &pvc, &class, &labels))
            .map_err(|e| FunctionError::failed(NAME, format!("VolumeSnapshot manifest: {e}")))?;
    // Entered again after a restart: the first run's snapshot, if it got that far.
    let ours = match recorded {
        Some(_) => api
            .get_opt(&name)
            .await
            .map_err(|e| {
                FunctionError::kube(
                    NAME,
                    format!("getting VolumeSnapshot {namespace}/{name}"),
                    e,
                )
            })?
            .filter(|s| s.data["spec"]["source"]["persistentVolumeClaimName"] == json!(pvc)),
        None => {
            super::context::note(
                ctx,
                super::context::StepEvent::Output("name".into(), json!(name)),
            )
            .await;
            None
        }
    };
    if ours.is_none() {
        api.create(&PostParams::default(), &snap)
            .await
            .map_err(|e| {
                FunctionError::kube(
                    NAME,
                    format!(
                        "Failed to create snapshot resource: name {name}, namespace {namespace}"
                    ),
                    e,
                )
            })?;
    }
    let ready = wait_ready(&api, NAME, &name, &namespace).await?;
    Ok(create_output(&name, &pvc, &namespace, &ready.data))
}

/// The VolumeSnapshot CreateCSISnapshot creates.
pub fn snapshot_manifest(
    name: &str,
    namespace: &str,
    pvc: &str,
    class: &str,
    labels: &std::collections::BTreeMap<String, String>,
) -> Value {
    let mut metadata = json!({"name": name, "namespace": namespace});
    if !labels.is_empty() {
        metadata["labels"] = json!(labels);
    }
    json!({
        "apiVersion": format!("{GROUP}/{VERSION}"),
        "kind": KIND,
        "metadata": metadata,
        "spec": {
            "source": {"persistentVolumeClaimName": pvc},
            "volumeSnapshotClassName": class,
        },
    })
}

/// `<pvc>-snapshot-<5 chars>`: Kubernetes' `rand.String(5)`, as Kanister names it.
pub fn default_snapshot_name(pvc: &str) -> String {
    format!("{pvc}-snapshot-{}", &crate::restic::random_tag()[..5])
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    #[test]
    fn manifest_and_output_have_kanisters_shape() {
        let labels = BTreeMap::from([("app".to_string(), "db".to_string())]);
        let m = snapshot_manifest("snap", "ns", "data", "csi-class", &labels);
        assert_eq!(m["apiVersion"], "snapshot.storage.k8s.io/v1");
        assert_eq!(m["kind"], "VolumeSnapshot");
        assert_eq!(m["metadata"]["labels"]["app"], "db");
        assert_eq!(m["spec"]["source"]["persistentVolumeClaimName"], "data");
        assert_eq!(m["spec"]["volumeSnapshotClassName"], "csi-class");
        let m = snapshot_manifest("snap", "ns", "data", "c", &BTreeMap::new());
        assert!(m["metadata"].get("labels").is_none());
        serde_json::from_value::<DynamicObject>(m).unwrap();

        let data = json!({"status": {"readyToUse": true, "creationTime": 1,
            "restoreSize": "1Gi", "boundVolumeSnapshotContentName": "snapcontent-1"}});
        let out = create_output("snap", "data", "ns", &data);
        assert_eq!(
            Value::Object(out),
            json!({"name": "snap", "pvc": "data", "namespace": "ns",
                   "restoreSize": "1Gi", "snapshotContent": "snapcontent-1"})
        );
        let out = create_output("s", "p", "n", &json!({"status": {"restoreSize": 1024}}));
        assert_eq!(out["restoreSize"], "1024");
        assert_eq!(out["snapshotContent"], "");
    }

    #[test]
    fn default_name_is_pvc_snapshot_and_five_chars() {
        let n = default_snapshot_name("data-0");
        let suffix = n.strip_prefix("data-0-snapshot-").expect(&n);
        assert_eq!(suffix.len(), 5);
        assert!(
            suffix
                .bytes()
                .all(|c| b"bcdfghjklmnpqrstvwxz2456789".contains(&c)),
            "{n}"
        );
    }
}
