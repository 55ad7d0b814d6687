//! CreateCSISnapshot, RestoreCSISnapshot and DeleteCSISnapshot (Kanister
//! `pkg/function/{create,restore,delete}_csi_snapshot.go` and
//! `pkg/kube/snapshot`): VolumeSnapshot objects of `snapshot.storage.k8s.io/v1`,
//! through kube's dynamic API.
//!
//! - CreateCSISnapshot checks that the PVC exists ("Failed to find PVC"),
//!   creates the VolumeSnapshot `name` (default `<pvc>-snapshot-<5 random
//!   chars>`) with `spec.source.persistentVolumeClaimName` and
//!   `spec.volumeSnapshotClassName`, waits until its status is `readyToUse`
//!   with a `creationTime` (a `status.error` fails the phase with its
//!   message, except the transient "the object has been modified" error, retried
//!   up to 100 times), then outputs `name`, `pvc`, `namespace`, `restoreSize`
//!   and `snapshotContent` (`status.boundVolumeSnapshotContentName`).
//! - RestoreCSISnapshot creates the PVC `pvc` whose `dataSource` is the
//!   VolumeSnapshot `name`, with `storageClass`, `restoreSize` (must not be
//!   zero), `accessModes` (default `[ReadWriteOnce]`; only ReadWriteOnce,
//!   ReadOnlyMany, ReadWriteMany), `volumeMode` (default `Filesystem`) and
//!   `labels`; it does not wait for the PVC to be bound. No output. A PVC
//!   of that name that is being deleted (e.g. by a KubeOps phase just
//!   before) is waited for, up to 2 minutes (Kanister fails at once with
//!   "already exists").
//! - DeleteCSISnapshot deletes the VolumeSnapshot; one that does not exist is
//!   not an error. It does not wait for the object to be gone. No output.
//!
//! Like Kanister, the wait for readiness has no timeout of its own (the phase
//! ends it); a warning is logged every minute while it lasts.
//!
//! After a controller restart the three are entered again: CreateCSISnapshot
//! records the snapshot's name in the ActionSet before it creates it, and
//! waits for that snapshot instead of creating a second one when it is
//! there with the same PVC as source; RestoreCSISnapshot takes a PVC of its
//! name whose data source is the snapshot as its own; DeleteCSISnapshot
//! tolerates a snapshot already gone.
//!
//! Differences from Kanister: only the `v1` snapshot API is used (Kanister
//! falls back to v1beta1/v1alpha1); an empty `namespace` means the
//! ActionSet's; `restoreSize` and `snapshotContent` are output as the status
//! has them (Kanister re-formats the quantity canonically, and writes
//! `<nil>`/null when they are missing: here `""`); `labels` are not
//! sanitized.

use std::time::Duration;

use k8s_openapi::api::core::v1::PersistentVolumeClaim;
use kube::api::{Api, DeleteParams, PostParams};
use kube::core::DynamicObject;
use serde_json::{Value, json};

use super::args::Args;
use super::context::Context;
use super::csi::{GROUP, KIND, VERSION, create_output, snapshot_api, wait_ready};
use super::error::FunctionError;
use crate::phase_output::Output;
use crate::pods::quantity::parse_quantity;

const CREATE: &str = "CreateCSISnapshot";
const RESTORE: &str = "RestoreCSISnapshot";
const DELETE: &str = "DeleteCSISnapshot";

fn namespace_arg(a: &Args, ctx: &Context) -> Result<String, FunctionError> {
    let ns = a.string("namespace")?;
    Ok(if ns.is_empty() {
        ctx.namespace.clone()
    } else {
        ns
    })
}

pub async fn create(ctx: &Context, a: &Args<'_>) -> Result<Output, FunctionError> {
    let pvc = a.string("pvc")?;
    let namespace = namespace_arg(a, ctx)?;
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

    let api = snapshot_api(ctx, CREATE, &namespace).await?;
    let pvcs: Api<PersistentVolumeClaim> = Api::namespaced(ctx.client.clone(), &namespace);
    match pvcs.get(&pvc).await {
        Ok(_) => {}
        Err(kube::Error::Api(s)) if s.code == 404 => {
            return Err(FunctionError::failed(
                CREATE,
                format!("Failed to find PVC: pvc {pvc}, namespace {namespace}"),
            ));
        }
        Err(e) => {
            return Err(FunctionError::kube(
                CREATE,
                format!("Failed to query PVC: pvc {pvc}, namespace {namespace}"),
                e,
            ));
        }
    }
    let snap: DynamicObject =
        serde_json::from_value(snapshot_manifest(&name, &namespace, &pvc, &class, &labels))
            .map_err(|e| FunctionError::failed(CREATE, format!("VolumeSnapshot manifest: {e}")))?;
    // Entered again after a restart: the first run's snapshot, if it got that far.
    let ours = match recorded {
        Some(_) => api
            .get_opt(&name)
            .await
            .map_err(|e| {
                FunctionError::kube(
                    CREATE,
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
                    CREATE,
                    format!(
                        "Failed to create snapshot resource: name {name}, namespace {namespace}"
                    ),
                    e,
                )
            })?;
    }
    let ready = wait_ready(&api, CREATE, &name, &namespace).await?;
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

/// `<pvc>-snapshot-<5 chars>` with the alphabet of Kubernetes' `rand.String`.
pub fn default_snapshot_name(pvc: &str) -> String {
    use std::hash::{BuildHasher, Hasher};
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or_default(),
    );
    let mut x = h.finish();
    let suffix: String = (0..5)
        .map(|_| {
            let c = ALPHABET[(x % ALPHABET.len() as u64) as usize] as char;
            x /= ALPHABET.len() as u64;
            c
        })
        .collect();
    format!("{pvc}-snapshot-{suffix}")
}

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
    let namespace = a.string("namespace")?;
    let namespace = if namespace.is_empty() {
        default_namespace.to_string()
    } else {
        namespace
    };
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
                RESTORE,
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
            RESTORE,
            "volumeMode",
            format!("Given volumeMode {volume_mode} is invalid (use Filesystem or Block)"),
        ));
    }
    let labels = a.opt_string_map("labels")?.unwrap_or_default();
    let zero = parse_quantity(&restore_size).map_err(|e| {
        FunctionError::arg(RESTORE, "restoreSize", format!("{restore_size:?}: {e}"))
    })?;
    if zero {
        return Err(FunctionError::failed(
            RESTORE,
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

pub async fn restore(ctx: &Context, a: &Args<'_>) -> Result<Output, FunctionError> {
    let r = decode_restore(a, &ctx.namespace)?;
    let pvc: PersistentVolumeClaim = serde_json::from_value(restored_pvc(&r))
        .map_err(|e| FunctionError::failed(RESTORE, format!("PVC manifest: {e}")))?;
    let api: Api<PersistentVolumeClaim> = Api::namespaced(ctx.client.clone(), &r.namespace);
    if ctx.actionset.as_ref().is_some_and(|a| a.reentered) {
        // Entered again after a restart: the first run may have created it.
        let existing = api.get_opt(&r.pvc).await.map_err(|e| {
            FunctionError::kube(RESTORE, format!("getting PVC {}/{}", r.namespace, r.pvc), e)
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
                RESTORE,
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
        let existing = api.get_opt(name).await.map_err(|e| {
            FunctionError::kube(RESTORE, format!("getting PVC {namespace}/{name}"), e)
        })?;
        let Some(pvc) = existing.filter(|p| p.metadata.deletion_timestamp.is_some()) else {
            return Ok(());
        };
        if tokio::time::Instant::now() >= deadline {
            return Err(FunctionError::failed(
                RESTORE,
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

pub async fn delete(ctx: &Context, a: &Args<'_>) -> Result<Output, FunctionError> {
    let name = a.string("name")?;
    let namespace = namespace_arg(a, ctx)?;
    let api = snapshot_api(ctx, DELETE, &namespace).await?;
    match api.get(&name).await {
        Ok(_) => {}
        Err(kube::Error::Api(s)) if s.code == 404 => return Ok(Output::new()),
        Err(e) => {
            return Err(FunctionError::kube(
                DELETE,
                format!("Failed to find VolumeSnapshot: namespace {namespace}, name {name}"),
                e,
            ));
        }
    }
    match api.delete(&name, &DeleteParams::default()).await {
        Ok(_) => Ok(Output::new()),
        Err(kube::Error::Api(s)) if s.code == 404 => Ok(Output::new()),
        Err(e) => Err(FunctionError::kube(
            DELETE,
            format!("Failed to delete VolumeSnapshot: namespace {namespace}, name {name}"),
            e,
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::functions::csi::{SnapshotError, ready_state};
    use serde_json::Map;
    use std::collections::BTreeMap;

    fn obj(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

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
    fn readiness_needs_ready_to_use_and_creation_time() {
        assert_eq!(ready_state(&json!({})), Ok(false));
        assert_eq!(
            ready_state(&json!({"status": {"readyToUse": true}})),
            Ok(false)
        );
        assert_eq!(
            ready_state(&json!({"status": {"readyToUse": false, "creationTime": 5}})),
            Ok(false)
        );
        assert_eq!(
            ready_state(&json!({"status": {"readyToUse": true, "creationTime": 5}})),
            Ok(true)
        );
        assert_eq!(
            ready_state(&json!({"status": {"error": {"message": "no space", "time": "x"}}})),
            Err(SnapshotError("no space".into()))
        );
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

    fn restore_args(extra: Value) -> Result<Restore, FunctionError> {
        let mut m = obj(json!({"name": "snap", "pvc": "restored", "namespace": "ns",
            "storageClass": "csi", "restoreSize": "2Gi"}));
        m.extend(obj(extra));
        decode_restore(&Args::new(RESTORE, &m), "as-ns")
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
