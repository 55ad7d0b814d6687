//! CreateCSISnapshotStatic (Kanister `pkg/function/create_csi_snapshot_static.go`
//! and the v1 snapshotter's `CreateFromSource` in `pkg/kube/snapshot`): a
//! VolumeSnapshot for a snapshot that already exists on the storage backend
//! (pre-provisioned, "static" binding), e.g. to bring a snapshot taken in
//! another cluster into this one.
//!
//! All five arguments are required: `name` and `namespace` of the new
//! VolumeSnapshot, `driver` (the CSI driver), `snapshotHandle` (the backend's
//! snapshot ID) and `snapshotClass`. The function
//!
//! 1. reads `deletionPolicy` from the VolumeSnapshotClass `snapshotClass`
//!    (Kanister's `getDeletionPolicyFromClass`: the policy is the class's, not a
//!    fixed `Retain`);
//! 2. creates the cluster-scoped VolumeSnapshotContent `<name>-content-<uuid>`
//!    with `spec.driver`, `spec.source.snapshotHandle`, `spec.deletionPolicy`,
//!    `spec.volumeSnapshotClassName` and `spec.volumeSnapshotRef`
//!    (`kind: VolumeSnapshot`, `name`, `namespace`);
//! 3. creates the VolumeSnapshot `name` with
//!    `spec.source.volumeSnapshotContentName` (the content above) and
//!    `spec.volumeSnapshotClassName`;
//! 4. waits until the snapshot controller has bound the two and the
//!    VolumeSnapshot is `readyToUse` with a `creationTime` (the same wait as
//!    CreateCSISnapshot: a `status.error` fails the phase, the transient
//!    "object has been modified" error is retried, no timeout of its own);
//! 5. outputs `name`, `namespace`, `restoreSize` and `snapshotContent`
//!    (`status.boundVolumeSnapshotContentName`) — Kanister's keys (no `pvc`).
//!
//! Differences from Kanister: only `snapshot.storage.k8s.io/v1`; an empty
//! `namespace` means the ActionSet's, and an empty `name`, `driver`,
//! `snapshotHandle` or `snapshotClass` is an argument error; a VolumeSnapshot
//! `name` that already exists fails the phase before anything is created
//! (Kanister creates the VolumeSnapshotContent first and leaves it behind),
//! and if creating the VolumeSnapshot fails the VolumeSnapshotContent just
//! created is deleted again; `restoreSize`/`snapshotContent` are written as
//! the status has them (`""` when missing, where Kanister writes `<nil>`).

use kube::api::{Api, DeleteParams, PostParams};
use kube::core::DynamicObject;
use serde_json::{Value, json};

use super::args::Args;
use super::context::Context;
use super::csi::{
    self, CONTENT_KIND, GROUP, KIND, VERSION, volume_snapshot_class_resource,
    volume_snapshot_content_resource,
};
use super::error::FunctionError;
use crate::phase_output::Output;

const FUNC: &str = "CreateCSISnapshotStatic";

/// CreateCSISnapshotStatic's decoded arguments.
#[derive(Debug, Clone, PartialEq)]
pub struct Static {
    pub name: String,
    pub namespace: String,
    pub driver: String,
    pub snapshot_handle: String,
    pub snapshot_class: String,
}

/// Decodes and checks the arguments; an empty `namespace` is `default_namespace`.
pub fn decode(a: &Args, default_namespace: &str) -> Result<Static, FunctionError> {
    let non_empty = |arg: &str, what: &str| -> Result<String, FunctionError> {
        let v = a.string(arg)?;
        if v.is_empty() {
            return Err(FunctionError::arg(
                FUNC,
                arg,
                format!("must not be empty: give {what}"),
            ));
        }
        Ok(v)
    };
    let name = non_empty("name", "the name of the VolumeSnapshot to create")?;
    let namespace = a.string("namespace")?;
    let namespace = if namespace.is_empty() {
        default_namespace.to_string()
    } else {
        namespace
    };
    let driver = non_empty(
        "driver",
        "the CSI driver of the snapshot, e.g. hostpath.csi.k8s.io",
    )?;
    let snapshot_handle = non_empty("snapshotHandle", "the storage backend's ID of the snapshot")?;
    let snapshot_class = non_empty("snapshotClass", "the name of a VolumeSnapshotClass")?;
    Ok(Static {
        name,
        namespace,
        driver,
        snapshot_handle,
        snapshot_class,
    })
}

/// `<name>-content-<uuid>`, as Kanister names the pre-provisioned content; `None` when the
/// system's random source fails.
pub fn content_name(snapshot: &str) -> Option<String> {
    Some(format!("{snapshot}-content-{}", random_uuid()?))
}

/// A random (version 4) UUID from the system's random source (ring).
fn random_uuid() -> Option<String> {
    let mut b: [u8; 16] = ring::rand::generate(&ring::rand::SystemRandom::new())
        .ok()?
        .expose();
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let hex = data_encoding::HEXLOWER.encode(&b);
    Some(format!(
        "{}-{}-{}-{}-{}",
        &hex[..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..]
    ))
}

/// The pre-provisioned VolumeSnapshotContent.
pub fn content_manifest(s: &Static, content: &str, deletion_policy: &str) -> Value {
    json!({
        "apiVersion": format!("{GROUP}/{VERSION}"),
        "kind": CONTENT_KIND,
        "metadata": {"name": content},
        "spec": {
            "volumeSnapshotRef": {"kind": KIND, "name": s.name, "namespace": s.namespace},
            "deletionPolicy": deletion_policy,
            "driver": s.driver,
            "source": {"snapshotHandle": s.snapshot_handle},
            "volumeSnapshotClassName": s.snapshot_class,
        },
    })
}

/// The VolumeSnapshot bound to the pre-provisioned content.
pub fn snapshot_manifest(s: &Static, content: &str) -> Value {
    json!({
        "apiVersion": format!("{GROUP}/{VERSION}"),
        "kind": KIND,
        "metadata": {"name": s.name, "namespace": s.namespace},
        "spec": {
            "source": {"volumeSnapshotContentName": content},
            "volumeSnapshotClassName": s.snapshot_class,
        },
    })
}

/// The output from the ready VolumeSnapshot's data: Kanister's four keys.
pub fn output(name: &str, namespace: &str, data: &Value) -> Output {
    let mut out = csi::create_output(name, "", namespace, data);
    out.remove("pvc");
    out
}

fn dynamic(function: &'static str, v: Value, what: &str) -> Result<DynamicObject, FunctionError> {
    serde_json::from_value(v)
        .map_err(|e| FunctionError::failed(function, format!("{what} manifest: {e}")))
}

pub async fn run(ctx: &Context, a: &Args<'_>) -> Result<Output, FunctionError> {
    let s = decode(a, &ctx.namespace)?;
    let snapshots = csi::snapshot_api(ctx, FUNC, &s.namespace).await?;
    let classes: Api<DynamicObject> =
        Api::all_with(ctx.client.clone(), &volume_snapshot_class_resource());
    let contents: Api<DynamicObject> =
        Api::all_with(ctx.client.clone(), &volume_snapshot_content_resource());

    let class_err =
        "Failed to get DeletionPolicy from VolumeSnapshotClass: Failed to find VolumeSnapshotClass";
    let class = match classes.get(&s.snapshot_class).await {
        Ok(c) => c,
        Err(kube::Error::Api(e)) if e.code == 404 => {
            return Err(FunctionError::failed(
                FUNC,
                format!(
                    "{class_err}: volumeSnapshotClass {}: no VolumeSnapshotClass of that name (list them with `kubectl get volumesnapshotclass`)",
                    s.snapshot_class
                ),
            ));
        }
        Err(e) => {
            return Err(FunctionError::kube(
                FUNC,
                format!("{class_err}: volumeSnapshotClass {}", s.snapshot_class),
                e,
            ));
        }
    };
    let deletion_policy = class
        .data
        .get("deletionPolicy")
        .and_then(Value::as_str)
        .filter(|p| !p.is_empty())
        .ok_or_else(|| {
            FunctionError::failed(
                FUNC,
                format!(
                    "Failed to get DeletionPolicy from VolumeSnapshotClass: volumeSnapshotClass {} has no deletionPolicy",
                    s.snapshot_class
                ),
            )
        })?
        .to_string();

    // Kanister finds an existing VolumeSnapshot only after creating the content; check first.
    match snapshots.get_opt(&s.name).await {
        Ok(None) => {}
        Ok(Some(_)) => {
            return Err(FunctionError::failed(
                FUNC,
                format!(
                    "Failed to create content: volumeSnapshot {}, namespace {}: a VolumeSnapshot of that name already exists (delete it or choose another name); nothing was created",
                    s.name, s.namespace
                ),
            ));
        }
        Err(e) => {
            return Err(FunctionError::kube(
                FUNC,
                format!(
                    "Failed to query VolumeSnapshot: volumeSnapshot {}, namespace {}",
                    s.name, s.namespace
                ),
                e,
            ));
        }
    }

    let content = content_name(&s.name).ok_or_else(|| {
        FunctionError::failed(
            FUNC,
            "the system's random source failed: no name for the VolumeSnapshotContent",
        )
    })?;
    let vsc = dynamic(
        FUNC,
        content_manifest(&s, &content, &deletion_policy),
        CONTENT_KIND,
    )?;
    contents
        .create(&PostParams::default(), &vsc)
        .await
        .map_err(|e| {
            FunctionError::kube(
                FUNC,
                format!("Failed to create content: volumeSnapshotContent {content}"),
                e,
            )
        })?;
    let vs = dynamic(FUNC, snapshot_manifest(&s, &content), KIND)?;
    if let Err(e) = snapshots.create(&PostParams::default(), &vs).await {
        // Do not leave the content behind (its snapshot was never created).
        if let Err(d) = contents.delete(&content, &DeleteParams::default()).await {
            tracing::warn!(content, error = %d, "could not delete the VolumeSnapshotContent of a VolumeSnapshot that failed to be created");
        }
        return Err(FunctionError::kube(
            FUNC,
            format!(
                "Failed to create content: volumeSnapshot {}, namespace {}",
                s.name, s.namespace
            ),
            e,
        ));
    }
    let ready = csi::wait_ready(&snapshots, FUNC, &s.name, &s.namespace).await?;
    Ok(output(&s.name, &s.namespace, &ready.data))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s() -> Static {
        Static {
            name: "snap".into(),
            namespace: "ns".into(),
            driver: "hostpath.csi.k8s.io".into(),
            snapshot_handle: "7bdd0de3-aaeb-11e8-9aae-0242ac110002".into(),
            snapshot_class: "csi-hostpath-snapclass".into(),
        }
    }

    #[test]
    fn content_and_snapshot_reference_each_other() {
        let c = content_manifest(&s(), "snap-content-x", "Retain");
        assert_eq!(c["apiVersion"], "snapshot.storage.k8s.io/v1");
        assert_eq!(c["kind"], "VolumeSnapshotContent");
        assert_eq!(c["metadata"], json!({"name": "snap-content-x"}));
        assert_eq!(
            c["spec"],
            json!({
                "volumeSnapshotRef": {"kind": "VolumeSnapshot", "name": "snap", "namespace": "ns"},
                "deletionPolicy": "Retain",
                "driver": "hostpath.csi.k8s.io",
                "source": {"snapshotHandle": "7bdd0de3-aaeb-11e8-9aae-0242ac110002"},
                "volumeSnapshotClassName": "csi-hostpath-snapclass",
            })
        );
        let v = snapshot_manifest(&s(), "snap-content-x");
        assert_eq!(v["kind"], "VolumeSnapshot");
        assert_eq!(v["metadata"], json!({"name": "snap", "namespace": "ns"}));
        assert_eq!(
            v["spec"],
            json!({"source": {"volumeSnapshotContentName": "snap-content-x"},
                   "volumeSnapshotClassName": "csi-hostpath-snapclass"})
        );
        dynamic(FUNC, c, "c").unwrap();
        dynamic(FUNC, v, "v").unwrap();
    }

    #[test]
    fn content_names_are_name_content_uuid_and_differ() {
        let a = content_name("snap").unwrap();
        let b = content_name("snap").unwrap();
        assert_ne!(a, b);
        let uuid = a.strip_prefix("snap-content-").expect(&a);
        let parts: Vec<&str> = uuid.split('-').collect();
        assert_eq!(
            parts.iter().map(|p| p.len()).collect::<Vec<_>>(),
            [8, 4, 4, 4, 12],
            "{a}"
        );
        assert!(
            uuid.bytes()
                .all(|c| c == b'-' || c.is_ascii_hexdigit() && !c.is_ascii_uppercase())
        );
        assert!(parts[2].starts_with('4'), "{a}");
    }

    fn decoded(v: Value) -> Result<Static, FunctionError> {
        let m = v.as_object().unwrap().clone();
        let a = Args::new(FUNC, &m);
        crate::functions::registry::check_args(&a)?;
        decode(&a, "as-ns")
    }

    #[test]
    fn arguments_are_all_required_and_checked() {
        let full = json!({"name": "snap", "namespace": "ns", "driver": "hostpath.csi.k8s.io",
            "snapshotHandle": "7bdd0de3-aaeb-11e8-9aae-0242ac110002",
            "snapshotClass": "csi-hostpath-snapclass"});
        assert_eq!(decoded(full.clone()).unwrap(), s());
        let mut m = full.clone();
        m["namespace"] = json!("");
        assert_eq!(decoded(m).unwrap().namespace, "as-ns");
        for arg in crate::functions::registry::function(FUNC)
            .unwrap()
            .arg_names()
        {
            let mut m = full.clone();
            m.as_object_mut().unwrap().remove(arg);
            let e = decoded(m).unwrap_err().to_string();
            assert_eq!(
                e,
                format!("CreateCSISnapshotStatic: argument `{arg}`: required argument is missing")
            );
        }
        for arg in ["name", "driver", "snapshotHandle", "snapshotClass"] {
            let mut m = full.clone();
            m[arg] = json!("");
            let e = decoded(m).unwrap_err().to_string();
            assert!(
                e.starts_with(&format!(
                    "CreateCSISnapshotStatic: argument `{arg}`: must not be empty: give "
                )),
                "{e}"
            );
        }
        let mut m = full.clone();
        m["pvc"] = json!("data");
        let e = decoded(m).unwrap_err().to_string();
        assert!(e.contains("argument pvc is not supported"), "{e}");
        let mut m = full;
        m["snapshotHandle"] = json!(["a"]);
        let e = decoded(m).unwrap_err().to_string();
        assert!(e.contains("`snapshotHandle`: expected a string"), "{e}");
    }

    #[test]
    fn output_has_kanisters_four_keys() {
        let data = json!({"status": {"readyToUse": true, "creationTime": "t",
            "restoreSize": "1Gi", "boundVolumeSnapshotContentName": "snap-content-x"}});
        assert_eq!(
            Value::Object(output("snap", "ns", &data)),
            json!({"name": "snap", "namespace": "ns", "restoreSize": "1Gi",
                   "snapshotContent": "snap-content-x"})
        );
    }
}
