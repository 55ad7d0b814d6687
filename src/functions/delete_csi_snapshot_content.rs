//! DeleteCSISnapshotContent (Kanister `pkg/function/delete_csi_snapshot_content.go`
//! and the v1 snapshotter's `DeleteContent` in `pkg/kube/snapshot`): deletes the
//! cluster-scoped VolumeSnapshotContent `name` (`snapshot.storage.k8s.io/v1`),
//! e.g. the one CreateCSISnapshotStatic made or the one a CreateCSISnapshot
//! output names in `snapshotContent`.
//!
//! One argument, `name` (required). A VolumeSnapshotContent that does not
//! exist is not an error (as Kanister). The function does not wait for the
//! object to be gone: a content still bound to a VolumeSnapshot is kept by
//! the snapshot controller's finalizer until that VolumeSnapshot is deleted,
//! and whether the storage backend's snapshot is deleted too is up to the
//! content's `deletionPolicy` (`Delete`) and the CSI driver. No output.
//!
//! Differences from Kanister: only the `v1` snapshot API (checked to be
//! served, as Kanister's snapshotter does); an empty `name` is an argument
//! error.

use kube::api::{Api, DeleteParams};
use kube::core::DynamicObject;

use super::args::Args;
use super::context::Context;
use super::csi::{self, volume_snapshot_content_resource};
use super::error::FunctionError;
use crate::phase_output::Output;

const FUNC: &str = "DeleteCSISnapshotContent";

/// The decoded `name`.
pub fn decode(a: &Args) -> Result<String, FunctionError> {
    let name = a.string("name")?;
    if name.is_empty() {
        return Err(FunctionError::arg(
            FUNC,
            "name",
            "must not be empty: give the name of the VolumeSnapshotContent to delete",
        ));
    }
    Ok(name)
}

pub async fn run(ctx: &Context, a: &Args<'_>) -> Result<Output, FunctionError> {
    let name = decode(a)?;
    // Fails clearly when the cluster does not serve the snapshot API (the namespace is unused).
    csi::snapshot_api(ctx, FUNC, &ctx.namespace).await?;
    let contents: Api<DynamicObject> =
        Api::all_with(ctx.client.clone(), &volume_snapshot_content_resource());
    match contents.delete(&name, &DeleteParams::default()).await {
        Ok(_) => Ok(Output::new()),
        // If the content does not exist, that is acceptable (Kanister ignores NotFound).
        Err(kube::Error::Api(s)) if s.code == 404 => Ok(Output::new()),
        Err(e) => Err(FunctionError::kube(
            FUNC,
            format!("Failed to delete: volumeSnapshotContent {name}"),
            e,
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;
    use serde_json::json;

    fn decoded(v: Value) -> Result<String, FunctionError> {
        let m = v.as_object().unwrap().clone();
        let a = Args::new(FUNC, &m);
        crate::functions::registry::check_args(&a)?;
        decode(&a)
    }

    #[test]
    fn name_is_required_non_empty_and_the_only_argument() {
        assert_eq!(
            decoded(json!({"name": "snap-content-1"})).unwrap(),
            "snap-content-1"
        );
        assert_eq!(
            decoded(json!({})).unwrap_err().to_string(),
            "DeleteCSISnapshotContent: argument `name`: required argument is missing"
        );
        let e = decoded(json!({"name": ""})).unwrap_err().to_string();
        assert!(e.contains("`name`: must not be empty"), "{e}");
        let e = decoded(json!({"name": "c", "namespace": "ns"}))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains(
                "argument namespace is not supported; DeleteCSISnapshotContent accepts: name"
            ),
            "{e}"
        );
    }
}
