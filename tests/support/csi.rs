//! VolumeSnapshots for the CSI function tests: the test plays the snapshot controller.

use blueprint_operator::functions::csi::volume_snapshot_resource;
use blueprint_operator::functions::{FunctionError, Output};
use kube::Client;
use kube::api::{Api, Patch, PatchParams};
use kube::core::DynamicObject;
use serde_json::{Value, json};

/// A CSI function call on the test's namespace, as the controller makes it.
pub fn ctx(ns: &str) -> blueprint_operator::functions::Context {
    super::call::ctx(ns, super::call::namespace_object(ns))
}

/// The cluster's client and a fresh namespace `<prefix>-<random>` (no kwok node needed: no pods).
pub async fn setup(prefix: &str) -> (Client, String) {
    let client = super::client().await;
    let ns = super::namespace(&client, prefix).await;
    (client, ns)
}

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

/// Waits (at most `timeout`) until `ns` has a VolumeSnapshot (whose name the test does not
/// know); returns the first one listed.
pub async fn any_snapshot(
    api: &Api<DynamicObject>,
    timeout: std::time::Duration,
) -> anyhow::Result<DynamicObject> {
    super::first_listed(api, &Default::default(), |_| true, timeout).await
}

/// Plays the snapshot controller for VolumeSnapshot `name` while the call `h` (started with
/// [`super::call::polling`]'s context) waits for it: bound to `content` but not ready, then
/// ready without a creation time (the call is seen still waiting after each), then ready with
/// a creation time and `restore_size`. Returns the call's output.
pub async fn bind_then_ready(
    api: &Api<DynamicObject>,
    polls: &super::call::Polls,
    h: tokio::task::JoinHandle<Result<Output, FunctionError>>,
    [name, content, restore_size]: [&str; 3],
) -> anyhow::Result<Output> {
    let path = format!("/volumesnapshots/{name}");
    let bound = json!({"readyToUse": false, "boundVolumeSnapshotContentName": content});
    set_status(api, name, bound).await?;
    polls.still_waiting(&h, &path).await;
    set_status(api, name, json!({"readyToUse": true})).await?;
    polls.still_waiting(&h, &path).await;
    let ready = json!({"readyToUse": true, "creationTime": "2026-01-02T03:04:05Z",
                       "restoreSize": restore_size});
    set_status(api, name, ready).await?;
    Ok(h.await??)
}

/// Plays the snapshot controller for VolumeSnapshot `ns/name` while the call `h` of function
/// `func` waits for it: once the call is seen waiting, an error status with `message`. The call
/// must fail naming the function and the VolumeSnapshot; returns its error text.
pub async fn fail_by_error_status(
    api: &Api<DynamicObject>,
    polls: &super::call::Polls,
    h: tokio::task::JoinHandle<Result<Output, FunctionError>>,
    [func, ns, name, message]: [&str; 4],
) -> anyhow::Result<String> {
    polls
        .still_waiting(&h, &format!("/volumesnapshots/{name}"))
        .await;
    let error = json!({"message": message, "time": "2026-01-02T03:04:05Z"});
    set_status(api, name, json!({"readyToUse": false, "error": error})).await?;
    let msg = h
        .await?
        .expect_err("an error status fails the phase")
        .to_string();
    assert!(msg.starts_with(&format!("{func}: ")), "{msg}");
    assert!(
        msg.contains(&format!("VolumeSnapshot {ns}/{name}")),
        "{msg}"
    );
    Ok(msg)
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
