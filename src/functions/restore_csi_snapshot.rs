//! RestoreCSISnapshot (Kanister `pkg/function/restore_csi_snapshot.go`): creates the PVC `pvc`
//! whose `dataSource` is the VolumeSnapshot `name`, with `storageClass`, `restoreSize` (must not
//! be zero), `accessModes` (default `[ReadWriteOnce]`; only ReadWriteOnce, ReadOnlyMany,
//! ReadWriteMany), `volumeMode` (default `Filesystem`) and `labels`; it does not wait for the PVC
//! to be bound. No output.
//!
//! Entered again after a controller restart, a PVC of its name whose data source is the
//! snapshot is the first run's, and done. A PVC of that name that is being deleted (e.g. by a
//! KubeOps phase just before) is waited for, up to 2 minutes (Kanister fails at once with
//! "already exists"); `labels` are not sanitized.

use std::time::Duration;

use k8s_openapi::api::core::v1::PersistentVolumeClaim;
use kube::api::{Api, PostParams};
use serde_json::{Value, json};

use super::args::Args;
use super::context::Context;
use super::csi::{GROUP, KIND, namespace_arg};
use super::error::FunctionError;
use crate::phase_output::Output;
use crate::pods::quantity::parse_quantity;

const NAME: &str = "RestoreCSISnapshot";

/// RestoreCSISnapshot's decoded arguments.
#[derive(Debug, Clone, PartialEq)]
pub struct Restore {
    pub name: String,
    pub pvc: String,
    pub namespace: String,
    pub storage_class: String,
    pub restore_size: String,
    pub access_modes: Vec<String>,
    pub volume_mode: String,
    pub labels: std::collections::BTreeMap<String, String>,
}

pub fn decode_restore(a: &Args, default_namespace: &str) -> Result<Restore, FunctionError> {
    let name = a.string("name")?;
    let pvc = a.string("pvc")?;
    let namespace = namespace_arg(a, default_namespace)?;
    let storage_class = a.string("storageClass")?;
    let restore_size = a.string("restoreSize")?;
    let access_modes = a
        .opt_string_list("accessModes")?
        .unwrap_or_else(|| vec!["ReadWriteOnce".into()]);
    for m in &access_modes {
        if !matches!(
            m.as_str(),
            "ReadOnlyMany" | "ReadWriteMany" | "ReadWriteOnce"
        ) {
            return Err(FunctionError::arg(
                NAME,
                "accessModes",
                format!(
                    "Given accessMode {m} is invalid (use ReadWriteOnce, ReadOnlyMany or ReadWriteMany)"
                ),
            ));
        }
    }
    let volume_mode = a
        .opt_string("volumeMode")?
        .unwrap_or_else(|| "Filesystem".into());
    if !matches!(volume_mode.as_str(), "Filesystem" | "Block") {
        return Err(FunctionError::arg(
            NAME,
            "volumeMode",
            format!("Given volumeMode {volume_mode} is invalid (use Filesystem or Block)"),
        ));
    }
    let labels = a.opt_string_map("labels")?.unwrap_or_default();
    let zero = parse_quantity(&restore_size)
        .map_err(|e| FunctionError::arg(NAME, "restoreSize", format!("{restore_size:?}: {e}")))?;
    if zero {
        return Err(FunctionError::failed(
            NAME,
            "Failed to restore CSI snapshot. restoreSize argument cannot be zero",
        ));
    }
    Ok(Restore {
        name,
        pvc,
        namespace,
        storage_class,
        restore_size,
        access_modes,
        volume_mode,
        labels,
    })
}

/// The PVC RestoreCSISnapshot creates.
pub fn restored_pvc(r: &Restore) -> Value {
    let mut metadata = json!({"name": r.pvc, "namespace": r.namespace});
    if !r.labels.is_empty() {
        metadata["labels"] = json!(r.labels);
    }
    json!({
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": metadata,
        "spec": {
            "accessModes": r.access_modes,
            "volumeMode": r.volume_mode,
            "dataSource": {"apiGroup": GROUP, "kind": KIND, "name": r.name},
            "storageClassName": r.storage_class,
            "resources": {"requests": {"storage": r.restore_size}},
        },
    })
}

pub async fn run(ctx: &Context, a: &Args<'_>) -> Result<Output, FunctionError> {
    let r = decode_restore(a, &ctx.namespace)?;
    let pvc: PersistentVolumeClaim = serde_json::from_value(restored_pvc(&r))
        .map_err(|e| FunctionError::failed(NAME, format!("PVC manifest: {e}")))?;
    let api: Api<PersistentVolumeClaim> = Api::namespaced(ctx.client.clone(), &r.namespace);
    if ctx.actionset.as_ref().is_some_and(|a| a.reentered) {
        // Entered again after a restart: the first run may have created it.
        let existing = api.get_opt(&r.pvc).await.map_err(|e| {
            FunctionError::kube(NAME, format!("getting PVC {}/{}", r.namespace, r.pvc), e)
        })?;
        let from_snapshot = existing
            .filter(|p| p.metadata.deletion_timestamp.is_none())
            .and_then(|p| p.spec?.data_source)
            .is_some_and(|d| d.kind == KIND && d.name == r.name);
        if from_snapshot {
            return Ok(Output::new());
        }
    }
    wait_pvc_deleted(&api, &r.namespace, &r.pvc).await?;
    api.create(&PostParams::default(), &pvc)
        .await
        .map_err(|e| {
            FunctionError::kube(
                NAME,
                format!(
                    "creating PVC {}/{} from VolumeSnapshot {}",
                    r.namespace, r.pvc, r.name
                ),
                e,
            )
        })?;
    Ok(Output::new())
}

/// How long RestoreCSISnapshot waits for a PVC of the same name that is being deleted.
const PVC_DELETION_WAIT: Duration = Duration::from_secs(120);

/// If a PVC `name` exists and is being deleted (typically by the KubeOps
/// phase just before, whose delete does not wait for the
/// `kubernetes.io/pvc-protection` finalizer), wait until it is gone.
async fn wait_pvc_deleted(
    api: &Api<PersistentVolumeClaim>,
    namespace: &str,
    name: &str,
) -> Result<(), FunctionError> {
    let deadline = tokio::time::Instant::now() + PVC_DELETION_WAIT;
    let mut delay = Duration::from_millis(50);
    loop {
        let existing = api
            .get_opt(name)
            .await
            .map_err(|e| FunctionError::kube(NAME, format!("getting PVC {namespace}/{name}"), e))?;
        let Some(pvc) = existing.filter(|p| p.metadata.deletion_timestamp.is_some()) else {
            return Ok(());
        };
        if tokio::time::Instant::now() >= deadline {
            return Err(FunctionError::failed(
                NAME,
                format!(
                    "PVC {namespace}/{name} is still being deleted after {PVC_DELETION_WAIT:?} (finalizers: {}); a PVC is deleted once no pod uses it",
                    pvc.metadata.finalizers.unwrap_or_default().join(", ")
                ),
            ));
        }
        tokio::time::sleep(delay).await;
        delay = (delay * 2).min(Duration::from_secs(1));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Map;

    fn obj(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    fn restore_args(extra: Value) -> Result<Restore, FunctionError> {
        let mut m = obj(json!({"name": "snap", "pvc": "restored", "namespace": "ns",
            "storageClass": "csi", "restoreSize": "2Gi"}));
        m.extend(obj(extra));
        decode_restore(&Args::new(NAME, &m), "as-ns")
    }

    #[test]
    fn restore_defaults_and_pvc() {
        let r = restore_args(json!({})).unwrap();
        assert_eq!(r.access_modes, ["ReadWriteOnce"]);
        assert_eq!(r.volume_mode, "Filesystem");
        let p = restored_pvc(&r);
        assert_eq!(
            p["spec"]["dataSource"],
            json!({"apiGroup": "snapshot.storage.k8s.io", "kind": "VolumeSnapshot", "name": "snap"})
        );
        assert_eq!(p["spec"]["resources"]["requests"]["storage"], "2Gi");
        assert_eq!(p["spec"]["storageClassName"], "csi");
        assert!(p["metadata"].get("labels").is_none());
        serde_json::from_value::<PersistentVolumeClaim>(p).unwrap();
        let r = restore_args(json!({"accessModes": ["ReadWriteMany", "ReadOnlyMany"],
            "volumeMode": "Block", "labels": {"a": "b"}, "namespace": ""}))
        .unwrap();
        assert_eq!(r.namespace, "as-ns");
        let p = restored_pvc(&r);
        assert_eq!(
            p["spec"]["accessModes"],
            json!(["ReadWriteMany", "ReadOnlyMany"])
        );
        assert_eq!(p["spec"]["volumeMode"], "Block");
        assert_eq!(p["metadata"]["labels"]["a"], "b");
    }

    #[test]
    fn restore_argument_errors() {
        let e = restore_args(json!({"accessModes": ["ReadWriteOncePod"]}))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("Given accessMode ReadWriteOncePod is invalid"),
            "{e}"
        );
        let e = restore_args(json!({"volumeMode": "block"}))
            .unwrap_err()
            .to_string();
        assert!(e.contains("Given volumeMode block is invalid"), "{e}");
        let e = restore_args(json!({"restoreSize": "0"}))
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "RestoreCSISnapshot: Failed to restore CSI snapshot. restoreSize argument cannot be zero"
        );
        let e = restore_args(json!({"restoreSize": "big"}))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("quantities must match the regular expression"),
            "{e}"
        );
    }
}
