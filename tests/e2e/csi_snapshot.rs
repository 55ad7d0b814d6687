//! CreateCSISnapshot, RestoreCSISnapshot and DeleteCSISnapshot against the
//! test control plane, which has the VolumeSnapshot CRDs
//! (snapshot.storage.k8s.io/v1, installed by tools/control-plane/cluster.sh)
//! but no snapshot controller: the tests play it, writing the VolumeSnapshot
//! status (readyToUse, creationTime, restoreSize, boundVolumeSnapshotContentName,
//! error) the way the external-snapshotter does.

use crate::support;

use std::time::Duration;

use crate::support::call::{call, call_err, polling, spawn_call};
use crate::support::controller::Controller;
use crate::support::csi::{
    any_snapshot, bind_then_ready, created_snapshot, ctx, fail_by_error_status, set_status, setup,
    snapshots,
};
use crate::support::kanister;
use blueprint_operator::functions::{self, Context};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{PersistentVolume, PersistentVolumeClaim};
use kube::Client;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use kube::core::DynamicObject;
use serde_json::{Map, Value, json};

/// A PVC (it stays Pending: the cluster has no provisioner; the functions only need it to exist).
async fn pvc(client: &Client, ns: &str, name: &str) -> anyhow::Result<()> {
    let api: Api<PersistentVolumeClaim> = Api::namespaced(client.clone(), ns);
    let p = serde_json::from_value(json!({
        "metadata": {"name": name},
        "spec": {
            "accessModes": ["ReadWriteOnce"],
            "storageClassName": "csi-hostpath",
            "resources": {"requests": {"storage": "1Gi"}},
        }
    }))?;
    api.create(&PostParams::default(), &p).await?;
    Ok(())
}

#[tokio::test]
async fn create_csi_snapshot_waits_for_ready_to_use_and_outputs_kanisters_keys()
-> anyhow::Result<()> {
    let (client, ns) = setup("csi-create").await;
    pvc(&client, &ns, "data").await?;
    let api = snapshots(&client, &ns);
    let (c, polls) = polling(ctx(&ns));
    let h = spawn_call(
        &c,
        "CreateCSISnapshot",
        json!({
            "name": "data-snap",
            "pvc": "data",
            "namespace": ns,
            "snapshotClass": "csi-hostpath-snapclass",
            "labels": {"app": "db", "backup": "nightly"},
        }),
    );
    let snap = created_snapshot(&api, "data-snap").await?;
    assert_eq!(
        snap.data["spec"],
        json!({
            "source": {"persistentVolumeClaimName": "data"},
            "volumeSnapshotClassName": "csi-hostpath-snapclass",
        })
    );
    let labels = snap.metadata.labels.clone().unwrap_or_default();
    assert_eq!(labels.get("app").map(String::as_str), Some("db"));
    assert_eq!(labels.get("backup").map(String::as_str), Some("nightly"));

    // Bound to its content but not ready yet; then ready without a creation time: still waiting.
    let out = bind_then_ready(&api, &polls, h, ["data-snap", "snapcontent-1234", "1Gi"]).await?;
    assert_eq!(
        Value::Object(out),
        json!({
            "name": "data-snap",
            "pvc": "data",
            "namespace": ns,
            "restoreSize": "1Gi",
            "snapshotContent": "snapcontent-1234",
        })
    );
    Ok(())
}

#[tokio::test]
async fn create_csi_snapshot_default_name_error_status_and_missing_pvc() -> anyhow::Result<()> {
    let (client, ns) = setup("csi-create-err").await;
    pvc(&client, &ns, "logs").await?;
    let api = snapshots(&client, &ns);
    let (c, polls) = polling(ctx(&ns));

    // Without `name`: <pvc>-snapshot-<5 chars>. The controller reports an error: the phase fails.
    let h = spawn_call(
        &c,
        "CreateCSISnapshot",
        json!({"pvc": "logs", "namespace": ns, "snapshotClass": "cls"}),
    );
    let snap = any_snapshot(&api, support::WAIT).await?;
    let name = snap.metadata.name.clone().unwrap();
    let suffix = name
        .strip_prefix("logs-snapshot-")
        .unwrap_or_else(|| panic!("default name: {name}"));
    assert_eq!(suffix.len(), 5, "{name}");
    let quota = "failed to take snapshot of the volume: rpc error: code = ResourceExhausted desc = quota exceeded";
    let msg =
        fail_by_error_status(&api, &polls, h, ["CreateCSISnapshot", &ns, &name, quota]).await?;
    assert!(msg.contains("quota exceeded"), "{msg}");

    // A missing PVC: Kanister's error, and no VolumeSnapshot is created.
    let err = call(
        &c,
        "CreateCSISnapshot",
        json!({"name": "x", "pvc": "nope", "namespace": ns, "snapshotClass": "cls"}),
    )
    .await
    .expect_err("missing PVC");
    assert_eq!(
        err.to_string(),
        format!("CreateCSISnapshot: Failed to find PVC: pvc nope, namespace {ns}")
    );
    assert!(api.get_opt("x").await?.is_none());

    // A missing required argument.
    let err = call(
        &c,
        "CreateCSISnapshot",
        json!({"pvc": "logs", "namespace": ns}),
    )
    .await
    .expect_err("missing snapshotClass");
    assert!(
        err.to_string()
            .contains("`snapshotClass`: required argument is missing"),
        "{err}"
    );
    Ok(())
}

#[tokio::test]
async fn restore_csi_snapshot_creates_the_pvc_from_the_snapshot() -> anyhow::Result<()> {
    let (client, ns) = setup("csi-restore").await;
    let (c, polls) = polling(ctx(&ns));
    let pvcs: Api<PersistentVolumeClaim> = Api::namespaced(client.clone(), &ns);

    let out = call(
        &c,
        "RestoreCSISnapshot",
        json!({
            "name": "data-snap",
            "pvc": "data-restored",
            "namespace": ns,
            "storageClass": "csi-hostpath",
            "restoreSize": "2Gi",
            "accessModes": ["ReadWriteMany", "ReadOnlyMany"],
            "volumeMode": "Block",
            "labels": {"restored-from": "data-snap"},
        }),
    )
    .await?;
    assert!(out.is_empty(), "{out:?}");
    let p = serde_json::to_value(pvcs.get("data-restored").await?)?;
    assert_eq!(
        p["spec"]["dataSource"],
        json!({"apiGroup": "snapshot.storage.k8s.io", "kind": "VolumeSnapshot", "name": "data-snap"})
    );
    assert_eq!(p["spec"]["storageClassName"], "csi-hostpath");
    assert_eq!(p["spec"]["resources"]["requests"]["storage"], "2Gi");
    assert_eq!(
        p["spec"]["accessModes"],
        json!(["ReadWriteMany", "ReadOnlyMany"])
    );
    assert_eq!(p["spec"]["volumeMode"], "Block");
    assert_eq!(p["metadata"]["labels"]["restored-from"], "data-snap");

    // Defaults: ReadWriteOnce, Filesystem; the size as written by CreateCSISnapshot's output.
    call(
        &c,
        "RestoreCSISnapshot",
        json!({"name": "s", "pvc": "plain", "namespace": ns, "storageClass": "sc",
               "restoreSize": "1073741824"}),
    )
    .await?;
    let p = serde_json::to_value(pvcs.get("plain").await?)?;
    assert_eq!(p["spec"]["accessModes"], json!(["ReadWriteOnce"]));
    assert_eq!(p["spec"]["volumeMode"], "Filesystem");
    assert_eq!(p["spec"]["resources"]["requests"]["storage"], "1073741824");

    // Errors: Kanister's texts, and no PVC for bad arguments.
    for (extra, want) in [
        (
            json!({"accessModes": ["ReadWriteOncePod"]}),
            "Given accessMode ReadWriteOncePod is invalid",
        ),
        (
            json!({"volumeMode": "Raw"}),
            "Given volumeMode Raw is invalid",
        ),
        (
            json!({"restoreSize": "0Gi"}),
            "Failed to restore CSI snapshot. restoreSize argument cannot be zero",
        ),
        (
            json!({"restoreSize": "two gigs"}),
            "quantities must match the regular expression",
        ),
    ] {
        let mut a = json!({"name": "s", "pvc": "bad", "namespace": ns, "storageClass": "sc",
                           "restoreSize": "1Gi"});
        a.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        let err = call(&c, "RestoreCSISnapshot", a).await.expect_err(want);
        assert!(err.to_string().contains(want), "{err}");
    }
    assert!(pvcs.get_opt("bad").await?.is_none());

    // A PVC of that name being deleted (held by a finalizer) is waited for.
    let busy = serde_json::from_value(json!({
        "metadata": {"name": "busy", "finalizers": ["blueprint-operator.io/test-hold"]},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}},
    }))?;
    pvcs.create(&PostParams::default(), &busy).await?;
    pvcs.delete("busy", &DeleteParams::default()).await?;
    let h = spawn_call(
        &c,
        "RestoreCSISnapshot",
        json!({"name": "s2", "pvc": "busy", "namespace": ns, "storageClass": "sc",
               "restoreSize": "1Gi"}),
    );
    polls
        .still_waiting(&h, "/persistentvolumeclaims/busy")
        .await;
    pvcs.patch(
        "busy",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"finalizers": null}})),
    )
    .await?;
    h.await??;
    let p = pvcs.get("busy").await?;
    assert!(p.metadata.deletion_timestamp.is_none());
    assert_eq!(
        p.spec.and_then(|s| s.data_source).map(|d| d.name),
        Some("s2".to_string())
    );

    // The PVC exists already: the API server's error.
    let args = json!({"name": "s", "pvc": "plain", "namespace": ns, "storageClass": "sc",
                      "restoreSize": "1Gi"});
    let err = call_err(&c, "RestoreCSISnapshot", args, "PVC exists").await;
    assert!(err.contains("already exists"), "{err}");
    Ok(())
}

#[tokio::test]
async fn delete_csi_snapshot_deletes_and_tolerates_a_missing_snapshot() -> anyhow::Result<()> {
    let (client, ns) = setup("csi-delete").await;
    let api = snapshots(&client, &ns);
    let c = ctx(&ns);
    let snap: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "snapshot.storage.k8s.io/v1",
        "kind": "VolumeSnapshot",
        "metadata": {"name": "old"},
        "spec": {"source": {"persistentVolumeClaimName": "data"}, "volumeSnapshotClassName": "c"},
    }))?;
    api.create(&PostParams::default(), &snap).await?;
    let out = call(
        &c,
        "DeleteCSISnapshot",
        json!({"name": "old", "namespace": ns}),
    )
    .await?;
    assert!(out.is_empty(), "{out:?}");
    support::poll(support::WAIT, || async {
        matches!(api.get_opt("old").await, Ok(None)).then_some(())
    })
    .await?;
    // Deleting again (or a snapshot that never existed) is not an error.
    let out = call(
        &c,
        "DeleteCSISnapshot",
        json!({"name": "old", "namespace": ns}),
    )
    .await?;
    assert!(out.is_empty());
    let err = call(&c, "DeleteCSISnapshot", json!({"namespace": ns}))
        .await
        .expect_err("missing name");
    assert!(err.to_string().contains("`name`"), "{err}");
    Ok(())
}

/// A PV made for the claim `ns/claim` (pre-bound through claimRef): the cluster has no provisioner.
async fn pv_for(
    client: &Client,
    ns: &str,
    pv: &str,
    claim: &str,
    class: &str,
) -> anyhow::Result<()> {
    let pvs: Api<PersistentVolume> = Api::all(client.clone());
    let v = serde_json::from_value(json!({
        "metadata": {"name": pv, "labels": {"blueprint-operator.io/test": "true"}},
        "spec": {
            "capacity": {"storage": "1Gi"},
            "accessModes": ["ReadWriteOnce"],
            "storageClassName": class,
            "persistentVolumeReclaimPolicy": "Retain",
            "hostPath": {"path": format!("/tmp/{pv}")},
            "claimRef": {"namespace": ns, "name": claim},
        }
    }))?;
    pvs.create(&PostParams::default(), &v).await?;
    Ok(())
}

/// Action `action` of the corpus csi-snapshot Blueprint on Deployment `app`.
fn app_action(ns: &str, action: &str, artifacts: Value) -> Value {
    let spec = kanister::action(
        action,
        "csi-snapshot-bp",
        kanister::deployment_object(ns, "app"),
    );
    kanister::merged(spec, json!({"artifacts": artifacts}))
}

/// The corpus csi-snapshot Blueprint (backup, restore, delete) run by the controller, with the
/// test as snapshot controller and volume provisioner.
#[tokio::test]
async fn corpus_csi_snapshot_blueprint_backs_up_restores_and_deletes() -> anyhow::Result<()> {
    let Some(corpus) = support::corpus::dir() else {
        return Ok(());
    };
    let client = support::client().await;
    if !support::require_kwok(&client).await {
        return Ok(());
    }
    support::install_crds(&client).await?;
    let ns = support::namespace(&client, "csi-corpus").await;
    let file = corpus.join("kanister-examples/csi-snapshot/csi-snapshot-blueprint.yaml");
    support::kanister::create_file_blueprint(&client, &ns, &file).await?;

    // The application: a Deployment whose first volume is the PVC "data".
    pv_for(
        &client,
        &ns,
        &format!("{ns}-data"),
        "data",
        "do-block-storage",
    )
    .await?;
    let pvc = json!({
        "metadata": {"name": "data"},
        "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": "do-block-storage",
                 "resources": {"requests": {"storage": "1Gi"}}},
    });
    support::create::<PersistentVolumeClaim>(&client, &ns, pvc).await?;
    let pvcs: Api<PersistentVolumeClaim> = Api::namespaced(client.clone(), &ns);
    let pod = json!({
        "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": "data"}}],
        "containers": [{"name": "app", "image": "nginx:stable",
            "volumeMounts": [{"name": "data", "mountPath": "/data"}]}],
    });
    let app = support::workload("app", "app", 1, pod, json!({}));
    support::create::<Deployment>(&client, &ns, app).await?;
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), &ns);
    let ready = |d: &Deployment| d.status.as_ref().and_then(|s| s.ready_replicas) == Some(1);
    support::wait_for(&deployments, "app", support::WAIT, ready).await?;
    let _controller = Controller::start(&ns, &[]);

    // backup: CreateCSISnapshot of the Deployment's PVC; the test makes the snapshot ready.
    kanister::create_actionset(
        &client,
        &ns,
        "backup-1",
        app_action(&ns, "backup", json!({})),
    )
    .await?;
    let api = snapshots(&client, &ns);
    let snap = any_snapshot(&api, Duration::from_secs(120)).await?;
    let snap_name = snap.metadata.name.clone().unwrap();
    assert_eq!(
        snap.data["spec"]["source"]["persistentVolumeClaimName"],
        "data"
    );
    assert_eq!(
        snap.data["spec"]["volumeSnapshotClassName"],
        "do-block-storage"
    );
    set_status(
        &api,
        &snap_name,
        json!({"readyToUse": true, "creationTime": "2026-01-02T03:04:05Z",
               "restoreSize": "1Gi", "boundVolumeSnapshotContentName": "snapcontent-corpus"}),
    )
    .await?;
    let backup = support::wait_actionset_complete(&client, &ns, "backup-1").await?;
    let info = &backup["status"]["actions"][0]["artifacts"]["snapshotInfo"];
    assert_eq!(
        info["keyValue"],
        json!({"name": snap_name, "pvc": "data", "namespace": ns,
               "restoreSize": "1Gi", "snapshotContent": "snapcontent-corpus"})
    );

    // restore: scale to 0, delete the PVC, RestoreCSISnapshot, scale to 1. The test provisions
    // a volume for the restored PVC so that the pod can be scheduled again.
    let old_uid = pvcs.get("data").await?.metadata.uid;
    kanister::create_actionset(
        &client,
        &ns,
        "restore-1",
        app_action(&ns, "restore", json!({"snapshotInfo": info})),
    )
    .await?;
    let restored = support::poll(Duration::from_secs(120), || async {
        let p = pvcs.get_opt("data").await.ok()??;
        (p.metadata.uid != old_uid).then_some(p)
    })
    .await?;
    let ds = restored
        .spec
        .as_ref()
        .and_then(|s| s.data_source.clone())
        .expect("dataSource");
    assert_eq!(
        (ds.api_group.as_deref(), ds.kind.as_str(), ds.name.as_str()),
        (
            Some("snapshot.storage.k8s.io"),
            "VolumeSnapshot",
            snap_name.as_str()
        )
    );
    pv_for(
        &client,
        &ns,
        &format!("{ns}-restored"),
        "data",
        "do-block-storage",
    )
    .await?;
    support::wait_actionset_complete(&client, &ns, "restore-1").await?;
    support::wait_for(&deployments, "app", support::WAIT, ready).await?;

    // delete: DeleteCSISnapshot.
    kanister::create_actionset(
        &client,
        &ns,
        "delete-1",
        app_action(&ns, "delete", json!({"snapshotInfo": info})),
    )
    .await?;
    support::wait_actionset_complete(&client, &ns, "delete-1").await?;
    assert!(api.get_opt(&snap_name).await?.is_none(), "snapshot deleted");

    let pvs: Api<PersistentVolume> = Api::all(client.clone());
    for pv in [format!("{ns}-data"), format!("{ns}-restored")] {
        let _ = pvs.delete(&pv, &DeleteParams::default()).await;
    }
    Ok(())
}

/// A context whose calls record what the executor would: `reentered` says the phase
/// is entered again after a controller restart, with `recorded` from its first run.
fn step_ctx(
    ns: &str,
    reentered: bool,
    recorded: Map<String, Value>,
) -> (
    Context,
    std::sync::Arc<std::sync::Mutex<Vec<functions::context::StepEvent>>>,
) {
    use functions::context::{ActionSetRef, StepHook};
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let s = seen.clone();
    let mut c = ctx(ns);
    c.actionset = Some(ActionSetRef {
        uid: "as-uid".into(),
        namespace: ns.into(),
        name: "as".into(),
        phase: "0.0".into(),
        reentered,
        resume_output: recorded,
        on_step: Some(StepHook(std::sync::Arc::new(move |ev| {
            s.lock().unwrap().push(ev);
            Box::pin(async {})
        }))),
        ..Default::default()
    });
    (c, seen)
}

/// After a controller restart, CreateCSISnapshot is entered again with the name its first run
/// recorded before creating the snapshot: it waits for that snapshot instead of making a second
/// one; RestoreCSISnapshot takes the PVC its first run created as done.
#[tokio::test]
async fn csi_snapshot_functions_are_reentered_after_a_restart() -> anyhow::Result<()> {
    use functions::context::StepEvent;
    let (client, ns) = setup("csi-reenter").await;
    pvc(&client, &ns, "logs").await?;
    let api = snapshots(&client, &ns);
    let create = json!({"pvc": "logs", "namespace": ns, "snapshotClass": "cls"});

    // The first run records the (generated) name, creates the snapshot, and is cut short.
    let (c, seen) = step_ctx(&ns, false, Map::new());
    let h = spawn_call(&c, "CreateCSISnapshot", create.clone());
    let snap = any_snapshot(&api, support::WAIT).await?;
    let name = snap.metadata.name.clone().unwrap_or_default();
    h.abort();
    assert_eq!(
        *seen.lock().unwrap(),
        [StepEvent::Output("name".into(), json!(name))]
    );

    // Entered again: no second snapshot; it waits for the first one to be ready.
    let recorded = json!({"name": name})
        .as_object()
        .cloned()
        .unwrap_or_default();
    let (c, seen) = step_ctx(&ns, true, recorded);
    let (c, polls) = polling(c);
    let h = spawn_call(&c, "CreateCSISnapshot", create.clone());
    polls
        .still_waiting(&h, &format!("/volumesnapshots/{name}"))
        .await;
    set_status(
        &api,
        &name,
        json!({"readyToUse": true, "creationTime": "2026-01-02T03:04:05Z", "restoreSize": "1Gi",
               "boundVolumeSnapshotContentName": "content-1"}),
    )
    .await?;
    let out = h.await??;
    assert_eq!(out["name"], json!(name));
    assert_eq!(out["snapshotContent"], "content-1");
    assert_eq!(api.list(&Default::default()).await?.items.len(), 1);
    assert!(seen.lock().unwrap().is_empty(), "nothing new to record");

    // RestoreCSISnapshot: the PVC its first run created is its result when entered again, an
    // error (AlreadyExists) otherwise.
    let restore = json!({"name": name, "pvc": "restored", "namespace": ns,
                         "storageClass": "sc", "restoreSize": "1Gi"});
    call(
        &step_ctx(&ns, false, Map::new()).0,
        "RestoreCSISnapshot",
        restore.clone(),
    )
    .await?;
    call(
        &step_ctx(&ns, true, Map::new()).0,
        "RestoreCSISnapshot",
        restore.clone(),
    )
    .await?;
    let err = call(&ctx(&ns), "RestoreCSISnapshot", restore.clone())
        .await
        .expect_err("not entered again: the PVC exists");
    assert!(err.to_string().contains("already exists"), "{err}");
    // Another snapshot's PVC of that name is not taken as ours.
    let mut other = restore.clone();
    other["name"] = json!("other-snap");
    call(
        &step_ctx(&ns, true, Map::new()).0,
        "RestoreCSISnapshot",
        other,
    )
    .await
    .expect_err("a PVC restored from another snapshot is not ours");
    Ok(())
}
