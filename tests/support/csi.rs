//! VolumeSnapshots for the CSI function tests: the test plays the snapshot controller.

use blueprint_operator::functions::csi_snapshot::volume_snapshot_resource;
use kube::Client;
use kube::api::{Api, Patch, PatchParams};
use kube::core::DynamicObject;
use serde_json::{Value, json};

/// The VolumeSnapshots of `ns`.
pub fn snapshots(client: &Client, ns: &str) -> Api<DynamicObject> {
    Api::namespaced_with(client.clone(), ns, &volume_snapshot_resource())
}

/// Waits for the VolumeSnapshot the function creates.
pub async fn created_snapshot(
    api: &Api<DynamicObject>,
    name: &str,
) -> anyhow::Result<DynamicObject> {
    super::poll(super::WAIT, || async { api.get(name).await.ok() }).await
}

/// The snapshot controller's status update.
pub async fn set_status(api: &Api<DynamicObject>, name: &str, status: Value) -> anyhow::Result<()> {
    api.patch_status(
        name,
        &PatchParams::default(),
        &Patch::Merge(json!({"status": status})),
    )
    .await?;
    Ok(())
}
