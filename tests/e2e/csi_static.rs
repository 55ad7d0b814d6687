//! CreateCSISnapshotStatic and DeleteCSISnapshotContent against the test
//! control plane, which has the VolumeSnapshot CRDs (snapshot.storage.k8s.io/v1:
//! volumesnapshots, volumesnapshotcontents, volumesnapshotclasses) but no
//! snapshot controller: the tests play it, writing the VolumeSnapshot status
//! (readyToUse, creationTime, restoreSize, boundVolumeSnapshotContentName,
//! error) the way the external-snapshotter does once it has bound a
//! pre-provisioned VolumeSnapshotContent to its VolumeSnapshot.

use crate::support;

use std::time::Duration;

use crate::support::call::{call, call_err, polling, spawn_call};
use crate::support::controller::Controller;
use crate::support::csi::{
    bind_then_ready, created_snapshot, ctx, fail_by_error_status, set_status, setup, snapshots,
};
use crate::support::kanister;
use blueprint_operator::functions::csi::{
    volume_snapshot_class_resource, volume_snapshot_content_resource,
};
use blueprint_operator::model::Blueprint;
use kube::Client;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::core::DynamicObject;
use serde_json::{Value, json};

const DRIVER: &str = "hostpath.csi.k8s.io";
const HANDLE: &str = "7bdd0de3-aaeb-11e8-9aae-0242ac110002";

fn contents(client: &Client) -> Api<DynamicObject> {
    Api::all_with(client.clone(), &volume_snapshot_content_resource())
}

/// A VolumeSnapshotClass (cluster-scoped) with the given deletionPolicy.
async fn snapshot_class(client: &Client, name: &str, policy: &str) -> anyhow::Result<()> {
    let api: Api<DynamicObject> = Api::all_with(client.clone(), &volume_snapshot_class_resource());
    let c: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "snapshot.storage.k8s.io/v1",
        "kind": "VolumeSnapshotClass",
        "metadata": {"name": name, "labels": {"blueprint-operator.io/test": "true"}},
        "driver": DRIVER,
        "deletionPolicy": policy,
    }))?;
    api.create(&PostParams::default(), &c).await?;
    Ok(())
}

/// The name of the VolumeSnapshotContent the VolumeSnapshot `snap` names as its source.
fn source_content_name(snap: &DynamicObject) -> String {
    snap.data["spec"]["source"]["volumeSnapshotContentName"]
        .as_str()
        .unwrap_or_else(|| panic!("no volumeSnapshotContentName: {:#}", snap.data["spec"]))
        .to_string()
}

/// The VolumeSnapshotContent `snap` names as its source: its name and the object.
async fn source_content(
    client: &Client,
    snap: &DynamicObject,
) -> anyhow::Result<(String, DynamicObject)> {
    let name = source_content_name(snap);
    let content = contents(client).get(&name).await?;
    Ok((name, content))
}

/// The VolumeSnapshotContents whose volumeSnapshotRef points into `ns`.
async fn contents_for(client: &Client, ns: &str) -> anyhow::Result<Vec<DynamicObject>> {
    Ok(contents(client)
        .list(&ListParams::default())
        .await?
        .items
        .into_iter()
        .filter(|c| c.data["spec"]["volumeSnapshotRef"]["namespace"] == ns)
        .collect())
}

fn static_args(ns: &str, name: &str, class: &str) -> Value {
    json!({
        "name": name,
        "namespace": ns,
        "driver": DRIVER,
        "snapshotHandle": HANDLE,
        "snapshotClass": class,
    })
}

#[tokio::test]
async fn create_csi_snapshot_static_binds_content_and_snapshot_and_waits_for_ready()
-> anyhow::Result<()> {
    let (client, ns) = setup("csi-static").await;
    let class = format!("{ns}-retain");
    snapshot_class(&client, &class, "Retain").await?;
    let api = snapshots(&client, &ns);
    let (c, polls) = polling(ctx(&ns));
    let h = spawn_call(
        &c,
        "CreateCSISnapshotStatic",
        static_args(&ns, "imported", &class),
    );

    // The VolumeSnapshot names its pre-provisioned content ...
    let snap = created_snapshot(&api, "imported").await?;
    let content_name = source_content_name(&snap);
    assert_eq!(
        snap.data["spec"],
        json!({"source": {"volumeSnapshotContentName": content_name},
               "volumeSnapshotClassName": class})
    );
    let uuid = content_name
        .strip_prefix("imported-content-")
        .unwrap_or_else(|| panic!("content name {content_name}"));
    assert_eq!(uuid.len(), 36, "{content_name}");
    // ... and the content points back at it, with the class's deletionPolicy.
    let content = contents(&client).get(&content_name).await?;
    assert_eq!(
        content.data["spec"],
        json!({
            "volumeSnapshotRef": {"kind": "VolumeSnapshot", "name": "imported", "namespace": ns},
            "deletionPolicy": "Retain",
            "driver": DRIVER,
            "source": {"snapshotHandle": HANDLE},
            "volumeSnapshotClassName": class,
        })
    );
    assert_eq!(contents_for(&client, &ns).await?.len(), 1);

    // Bound but not ready; then ready without a creation time: still waiting.
    polls.still_waiting(&h, "/volumesnapshots/imported").await;
    let out = bind_then_ready(&api, &polls, h, ["imported", &content_name, "5Gi"]).await?;
    assert_eq!(
        Value::Object(out),
        json!({
            "name": "imported",
            "namespace": ns,
            "restoreSize": "5Gi",
            "snapshotContent": content_name,
        })
    );

    // The content can then be deleted by DeleteCSISnapshotContent with that output.
    let out = call(
        &c,
        "DeleteCSISnapshotContent",
        json!({"name": content_name}),
    )
    .await?;
    assert!(out.is_empty(), "{out:?}");
    support::poll(support::WAIT, || async {
        matches!(contents(&client).get_opt(&content_name).await, Ok(None)).then_some(())
    })
    .await?;
    Ok(())
}

#[tokio::test]
async fn create_csi_snapshot_static_errors_are_clear_and_leave_nothing_behind() -> anyhow::Result<()>
{
    let (client, ns) = setup("csi-static-err").await;
    let class = format!("{ns}-delete");
    snapshot_class(&client, &class, "Delete").await?;
    let api = snapshots(&client, &ns);
    let (c, polls) = polling(ctx(&ns));

    // Missing or empty arguments: named, and nothing is created.
    for arg in [
        "name",
        "namespace",
        "driver",
        "snapshotHandle",
        "snapshotClass",
    ] {
        let mut a = static_args(&ns, "s", &class);
        a.as_object_mut().unwrap().remove(arg);
        let err = call(&c, "CreateCSISnapshotStatic", a).await.expect_err(arg);
        assert_eq!(
            err.to_string(),
            format!("CreateCSISnapshotStatic: argument `{arg}`: required argument is missing")
        );
    }
    let mut a = static_args(&ns, "s", &class);
    a["snapshotHandle"] = json!("");
    let err = call_err(&c, "CreateCSISnapshotStatic", a, "empty handle").await;
    assert!(
        err.contains("argument `snapshotHandle`: must not be empty"),
        "{err}"
    );
    let mut a = static_args(&ns, "s", &class);
    a["pvc"] = json!("data");
    let err = call(&c, "CreateCSISnapshotStatic", a)
        .await
        .expect_err("unknown argument");
    assert!(
        err.to_string().contains("argument pvc is not supported"),
        "{err}"
    );

    // A VolumeSnapshotClass that does not exist: Kanister's error, nothing created.
    let err = call(
        &c,
        "CreateCSISnapshotStatic",
        static_args(&ns, "s", "no-such-class"),
    )
    .await
    .expect_err("missing class");
    let msg = err.to_string();
    assert!(
        msg.starts_with(
            "CreateCSISnapshotStatic: Failed to get DeletionPolicy from VolumeSnapshotClass: Failed to find VolumeSnapshotClass: volumeSnapshotClass no-such-class"
        ),
        "{msg}"
    );
    assert!(api.get_opt("s").await?.is_none());
    assert!(contents_for(&client, &ns).await?.is_empty());

    // The VolumeSnapshot exists already: fails before creating a content.
    let existing: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "snapshot.storage.k8s.io/v1",
        "kind": "VolumeSnapshot",
        "metadata": {"name": "taken"},
        "spec": {"source": {"persistentVolumeClaimName": "data"}, "volumeSnapshotClassName": class},
    }))?;
    api.create(&PostParams::default(), &existing).await?;
    let err = call(
        &c,
        "CreateCSISnapshotStatic",
        static_args(&ns, "taken", &class),
    )
    .await
    .expect_err("snapshot exists");
    let msg = err.to_string();
    assert!(
        msg.contains(&format!("volumeSnapshot taken, namespace {ns}"))
            && msg.contains("already exists"),
        "{msg}"
    );
    assert!(contents_for(&client, &ns).await?.is_empty());
    let kept = api.get("taken").await?;
    assert_eq!(
        kept.data["spec"]["source"]["persistentVolumeClaimName"],
        "data"
    );

    // The class's deletionPolicy is used; an error status fails the phase with its message.
    let h = spawn_call(
        &c,
        "CreateCSISnapshotStatic",
        static_args(&ns, "broken", &class),
    );
    let snap = created_snapshot(&api, "broken").await?;
    let (_, content) = source_content(&client, &snap).await?;
    assert_eq!(content.data["spec"]["deletionPolicy"], "Delete");
    let error = "VolumeSnapshotContent is pointing to a non-existent snapshot handle";
    let call = ["CreateCSISnapshotStatic", &ns, "broken", error];
    let msg = fail_by_error_status(&api, &polls, h, call).await?;
    assert!(msg.contains("non-existent snapshot handle"), "{msg}");

    // An empty namespace is the ActionSet's.
    let mut a = static_args("", "default-ns", &class);
    a["namespace"] = json!("");
    let h = spawn_call(&c, "CreateCSISnapshotStatic", a);
    let snap = created_snapshot(&api, "default-ns").await?;
    let (content_name, content) = source_content(&client, &snap).await?;
    assert_eq!(content.data["spec"]["volumeSnapshotRef"]["namespace"], ns);
    set_status(
        &api,
        "default-ns",
        json!({"readyToUse": true, "creationTime": "2026-01-02T03:04:05Z",
               "boundVolumeSnapshotContentName": content_name}),
    )
    .await?;
    let out = h.await??;
    assert_eq!(out["namespace"], json!(ns));
    // No restoreSize in the status: an empty string (Kanister writes <nil>).
    assert_eq!(out["restoreSize"], "");
    for c in contents_for(&client, &ns).await? {
        let _ = contents(&client)
            .delete(&c.metadata.name.unwrap(), &DeleteParams::default())
            .await;
    }
    Ok(())
}

#[tokio::test]
async fn delete_csi_snapshot_content_deletes_and_tolerates_a_missing_content() -> anyhow::Result<()>
{
    let (client, ns) = setup("csi-content-del").await;
    let c = ctx(&ns);
    let api = contents(&client);
    let content = |name: &str, finalizers: Value| -> anyhow::Result<DynamicObject> {
        Ok(serde_json::from_value(json!({
            "apiVersion": "snapshot.storage.k8s.io/v1",
            "kind": "VolumeSnapshotContent",
            "metadata": {"name": name, "finalizers": finalizers},
            "spec": {
                "volumeSnapshotRef": {"kind": "VolumeSnapshot", "name": "snap", "namespace": ns},
                "deletionPolicy": "Retain",
                "driver": DRIVER,
                "source": {"snapshotHandle": HANDLE},
            },
        }))?)
    };
    let old = format!("{ns}-old");
    api.create(&PostParams::default(), &content(&old, json!([]))?)
        .await?;
    let other = format!("{ns}-other");
    api.create(&PostParams::default(), &content(&other, json!([]))?)
        .await?;
    let out = call(&c, "DeleteCSISnapshotContent", json!({"name": old})).await?;
    assert!(out.is_empty(), "{out:?}");
    support::poll(support::WAIT, || async {
        matches!(api.get_opt(&old).await, Ok(None)).then_some(())
    })
    .await?;
    assert!(
        api.get_opt(&other).await?.is_some(),
        "only the named content is deleted"
    );

    // Deleting again (or a content that never existed) is not an error, as in Kanister.
    call(&c, "DeleteCSISnapshotContent", json!({"name": old})).await?;
    call(
        &c,
        "DeleteCSISnapshotContent",
        json!({"name": format!("{ns}-never-existed")}),
    )
    .await?;

    // A content held by a finalizer (bound to a VolumeSnapshot): the delete is issued, not waited for.
    let held = format!("{ns}-held");
    api.create(
        &PostParams::default(),
        &content(&held, json!(["blueprint-operator.io/test-hold"]))?,
    )
    .await?;
    call(&c, "DeleteCSISnapshotContent", json!({"name": held})).await?;
    let h = api.get(&held).await?;
    assert!(
        h.metadata.deletion_timestamp.is_some(),
        "deletion requested"
    );
    api.patch(
        &held,
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"finalizers": null}})),
    )
    .await?;

    // Argument errors.
    let err = call(&c, "DeleteCSISnapshotContent", json!({}))
        .await
        .expect_err("missing name");
    assert_eq!(
        err.to_string(),
        "DeleteCSISnapshotContent: argument `name`: required argument is missing"
    );
    let err = call(
        &c,
        "DeleteCSISnapshotContent",
        json!({"name": other, "namespace": ns}),
    )
    .await
    .expect_err("namespace is not an argument");
    assert!(
        err.to_string()
            .contains("argument namespace is not supported"),
        "{err}"
    );
    assert!(api.get_opt(&other).await?.is_some());
    api.delete(&other, &DeleteParams::default()).await?;
    Ok(())
}

/// Action `action` of Blueprint csi-static-bp on the namespace.
fn ns_action(ns: &str, action: &str, options: Value, artifacts: Value) -> Value {
    let spec = kanister::action(
        action,
        "csi-static-bp",
        json!({"kind": "Namespace", "name": ns}),
    );
    kanister::merged(spec, json!({"options": options, "artifacts": artifacts}))
}

/// A Blueprint that imports a backend snapshot (CreateCSISnapshotStatic, outputs as an artifact)
/// and deletes it again (DeleteCSISnapshot, DeleteCSISnapshotContent from the artifact), run by
/// the controller with the test as snapshot controller.
#[tokio::test]
async fn blueprint_imports_a_snapshot_and_deletes_snapshot_and_content() -> anyhow::Result<()> {
    let client = support::client().await;
    support::install_crds(&client).await?;
    let ns = support::namespace(&client, "csi-static-bp").await;
    let class = format!("{ns}-class");
    snapshot_class(&client, &class, "Retain").await?;
    let bp: Blueprint = serde_json::from_value(json!({
        "apiVersion": "cr.kanister.io/v1alpha1",
        "kind": "Blueprint",
        "metadata": {"name": "csi-static-bp"},
        "actions": {
            "backup": {
                "outputArtifacts": {"snapshotInfo": {"keyValue": {
                    "name": "{{ .Phases.importSnapshot.Output.name }}",
                    "namespace": "{{ .Phases.importSnapshot.Output.namespace }}",
                    "restoreSize": "{{ .Phases.importSnapshot.Output.restoreSize }}",
                    "snapshotContent": "{{ .Phases.importSnapshot.Output.snapshotContent }}",
                }}},
                "phases": [{
                    "func": "CreateCSISnapshotStatic",
                    "name": "importSnapshot",
                    "args": {
                        "name": "imported-{{ .Options.handle }}",
                        "namespace": "{{ .Namespace.Name }}",
                        "driver": DRIVER,
                        "snapshotHandle": "{{ .Options.handle }}",
                        "snapshotClass": "{{ .Options.class }}",
                    },
                }],
            },
            "delete": {
                "inputArtifactNames": ["snapshotInfo"],
                "phases": [
                    {"func": "DeleteCSISnapshot", "name": "deleteSnapshot", "args": {
                        "name": "{{ .ArtifactsIn.snapshotInfo.KeyValue.name }}",
                        "namespace": "{{ .ArtifactsIn.snapshotInfo.KeyValue.namespace }}",
                    }},
                    {"func": "DeleteCSISnapshotContent", "name": "deleteContent", "args": {
                        "name": "{{ .ArtifactsIn.snapshotInfo.KeyValue.snapshotContent }}",
                    }},
                ],
            },
        },
    }))?;
    Api::<Blueprint>::namespaced(client.clone(), &ns)
        .create(&PostParams::default(), &bp)
        .await?;
    let _controller = Controller::start(
        &ns,
        // Importing a snapshot writes a cluster-scoped VolumeSnapshotContent: only ActionSets
        // of a trusted namespace may (README, Security model).
        &["--trusted-namespace", &ns],
    );

    kanister::create_actionset(
        &client,
        &ns,
        "import-1",
        ns_action(
            &ns,
            "backup",
            json!({"handle": "snap-0042", "class": class}),
            json!({}),
        ),
    )
    .await?;
    let api = snapshots(&client, &ns);
    let snap = support::poll(Duration::from_secs(120), || async {
        api.get_opt("imported-snap-0042").await.ok()?
    })
    .await?;
    let (content_name, content) = source_content(&client, &snap).await?;
    assert_eq!(
        content.data["spec"]["source"]["snapshotHandle"],
        "snap-0042"
    );
    assert_eq!(
        content.data["spec"]["volumeSnapshotClassName"],
        json!(class)
    );
    set_status(
        &api,
        "imported-snap-0042",
        json!({"readyToUse": true, "creationTime": "2026-01-02T03:04:05Z",
               "restoreSize": "3Gi", "boundVolumeSnapshotContentName": content_name}),
    )
    .await?;
    let backup = support::wait_actionset_complete(&client, &ns, "import-1").await?;
    let info = &backup["status"]["actions"][0]["artifacts"]["snapshotInfo"];
    assert_eq!(
        info["keyValue"],
        json!({"name": "imported-snap-0042", "namespace": ns,
               "restoreSize": "3Gi", "snapshotContent": content_name})
    );

    kanister::create_actionset(
        &client,
        &ns,
        "delete-1",
        ns_action(&ns, "delete", json!({}), json!({"snapshotInfo": info})),
    )
    .await?;
    support::wait_actionset_complete(&client, &ns, "delete-1").await?;
    assert!(
        api.get_opt("imported-snap-0042").await?.is_none(),
        "snapshot deleted"
    );
    support::poll(support::WAIT, || async {
        matches!(contents(&client).get_opt(&content_name).await, Ok(None)).then_some(())
    })
    .await?;
    Ok(())
}
