//! BackupDataAll, RestoreDataAll and DeleteDataAll moving real data: a
//! Deployment with two kwok pods (both mounting one PVC), restic
//! (tools/data-plane) run through kwok's local exec on this machine against
//! gofakes3. As in Kanister every pod backs up the same `includePath`; under
//! kwok that is the same directory of this machine, so each pod's snapshot
//! (in its own repository `<prefix>/<pod>`) holds the same bytes, and each is
//! restored on its own and compared file by file.

use crate::support;

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use crate::support::call::call_with;
use crate::support::controller::Controller;
use crate::support::data_plane::{app_params, ctx, delete_pv, out_str, vol_data_pvc};
use crate::support::files::{TempDir, assert_same_tree, noise, restored_root};
use crate::support::kanister;
use crate::support::pod_watch::PodWatch;
use anyhow::Context as _;
use blueprint_operator::functions::{FunctionError, Output};
use blueprint_operator::model::{ActionSet, State};
use kube::Client;
use serde_json::{Value, json};

const FINISH: Duration = Duration::from_secs(300);
const BUCKET: &str = "bpo-data-all";
const PROFILE: &str = "s3";
const IMAGE: &str = "ghcr.io/kanisterio/kanister-tools:0.116.0";
const KEY: &str = "an all-pods key";

/// Client and a fresh namespace with an s3Compliant Profile `PROFILE` on the test object store.
async fn setup(prefix: &str) -> Option<(Client, String)> {
    support::data_plane::setup(prefix, PROFILE, BUCKET).await
}

/// Deployment `app` (container `app`, PVC `data` at /data) with 2 replicas;
/// returns the names of its two Running pods, sorted.
async fn app_with_two_pods(client: &Client, ns: &str) -> anyhow::Result<Vec<String>> {
    let pod = json!({
        "containers": [{"name": "app", "image": "nginx:stable",
            "volumeMounts": [{"name": "data", "mountPath": "/data"}]}],
        "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": "data"}}],
    });
    let d = support::workload("app", "app", 2, pod, json!({}));
    support::create::<k8s_openapi::api::apps::v1::Deployment>(client, ns, d).await?;
    support::poll(support::WAIT, || async {
        let running = support::running_pods(client, ns, "app=app").await?;
        (running.len() == 2).then_some(running)
    })
    .await
    .context("two Running pods of Deployment app")
}

fn write_tree(root: &Path, seed: u64) {
    let files: Vec<(&str, Vec<u8>)> = vec![
        ("db/collection-0.wt", noise(seed, 1_200_000)),
        ("db/collection-1.wt", noise(seed + 1, 333_333)),
        ("db/journal/WiredTigerLog.01", noise(seed + 2, 65_536)),
        ("db/empty.lock", Vec::new()),
        (
            "conf/mongod.conf",
            b"storage:\n  dbPath: /data/db\n".to_vec(),
        ),
        ("a dir/with space.txt", b"spaces\n".to_vec()),
    ];
    support::data_plane::write_files(root, &files);
}

/// `restic snapshots --json` of `<BUCKET>/<path>`.
fn snapshots(path: &str, key: &str) -> anyhow::Result<Vec<Value>> {
    support::data_plane::snapshots(BUCKET, path, key)
}

/// (short id, tags) of every snapshot.
fn id_and_tags(snaps: &[Value]) -> Vec<(String, Value)> {
    snaps
        .iter()
        .map(|s| {
            (
                s["short_id"].as_str().unwrap_or("").to_string(),
                s["tags"].clone(),
            )
        })
        .collect()
}

/// BackupDataAll of both pods (from the Deployment), two snapshots with their
/// tags in two repositories; RestoreDataAll of both and of each alone,
/// byte-compared; DeleteDataAll forgets both and prunes.
#[tokio::test]
async fn backup_restore_delete_all_pods() -> anyhow::Result<()> {
    let Some((client, ns)) = setup("data-all").await else {
        return Ok(());
    };
    let pv = vol_data_pvc(&client, &ns, "data").await?;
    let pods = app_with_two_pods(&client, &ns).await?;
    let p = app_params(&ns, PROFILE).await?;
    assert_eq!(p["Deployment"]["Pods"], json!(pods));
    let c = ctx(&ns);
    let dir = TempDir::new("rt");
    let src = dir.0.join("bitnami-mongodb");
    write_tree(&src, 11);
    let prefix = format!("{BUCKET}/mongodb-backups/app/rs_backup");

    let out = call_with(
        &c,
        "BackupDataAll",
        json!({"namespace": ns, "container": "app", "includePath": src.to_str().unwrap(),
               "backupArtifactPrefix": prefix, "encryptionKey": KEY}),
        &p,
    )
    .await?;
    assert_eq!(
        out.keys().map(String::as_str).collect::<Vec<_>>(),
        ["BackupAllInfo", "version"]
    );
    assert_eq!(out_str(&out, "version"), "v0.0.0");
    let info_text = out_str(&out, "BackupAllInfo");
    let info: Value = serde_json::from_str(&info_text)?;
    let mut expected = String::from("{");
    for (i, pod) in pods.iter().enumerate() {
        let e = &info[pod];
        let (id, tag) = (
            e["BackupID"].as_str().unwrap_or(""),
            e["BackupTag"].as_str().unwrap_or(""),
        );
        assert!(!id.is_empty() && tag.len() == 10, "{info_text}");
        // Its own repository holds exactly that snapshot, with that tag.
        let snaps = snapshots(&format!("mongodb-backups/app/rs_backup/{pod}"), KEY)?;
        assert_eq!(
            id_and_tags(&snaps),
            [(id.to_string(), json!([tag]))],
            "{pod}"
        );
        if i > 0 {
            expected.push(',');
        }
        expected.push_str(&format!(
            r#""{pod}":{{"PodName":"{pod}","BackupID":"{id}","BackupTag":"{tag}"}}"#
        ));
    }
    expected.push('}');
    // Byte for byte what Go's json.Marshal of map[string]BackupInfo writes.
    assert_eq!(info_text, expected);
    assert_ne!(info[&pods[0]]["BackupTag"], info[&pods[1]]["BackupTag"]);

    // Every pod's snapshot restored (both at once, then each on its own).
    let all = dir.0.join("restored-all");
    let r = call_with(
        &c,
        "RestoreDataAll",
        json!({"namespace": ns, "image": IMAGE, "backupArtifactPrefix": prefix,
               "backupInfo": info_text, "restorePath": all.to_str().unwrap(),
               "encryptionKey": KEY, "podLabels": {"purpose": "restore-all"}}),
        &p,
    )
    .await?;
    assert!(r.is_empty(), "{r:?}");
    assert_same_tree(&src, &restored_root(&all, &src));
    for pod in &pods {
        let target = dir.0.join(format!("restored-{pod}"));
        call_with(
            &c,
            "RestoreDataAll",
            json!({"namespace": ns, "image": IMAGE, "backupArtifactPrefix": prefix,
                   "backupInfo": info_text, "restorePath": target.to_str().unwrap(),
                   "encryptionKey": KEY, "pods": pod}),
            &p,
        )
        .await?;
        assert_same_tree(&src, &restored_root(&target, &src));
    }
    support::function_pods_gone(&client, &ns).await?;

    // DeleteDataAll: both snapshots forgotten, the data pruned away.
    let d = call_with(
        &c,
        "DeleteDataAll",
        json!({"namespace": ns, "backupArtifactPrefix": prefix, "backupInfo": info_text,
               "encryptionKey": KEY, "reclaimSpace": true}),
        &p,
    )
    .await?;
    let freed = out_str(&d, "spaceFreed");
    let bytes: i64 = freed
        .strip_suffix(" B")
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("spaceFreed {freed:?}"));
    assert!(
        bytes > 2 * 1_000_000,
        "prune of two repositories freed only {freed}"
    );
    for pod in &pods {
        let snaps = snapshots(&format!("mongodb-backups/app/rs_backup/{pod}"), KEY)?;
        assert!(snaps.is_empty(), "{pod}: {snaps:?}");
    }
    support::function_pods_gone(&client, &ns).await?;
    delete_pv(&client, &pv).await;
    Ok(())
}

/// The restore helper pods created in `ns` while `f` runs: (generateName, PVCs mounted at paths).
async fn restore_pods_during<F, T>(
    client: &Client,
    ns: &str,
    f: F,
) -> anyhow::Result<(T, Vec<(String, Vec<(String, String)>)>)>
where
    F: std::future::Future<Output = T>,
{
    let watch = PodWatch::start(client, ns).await;
    let out = f.await;
    // Every pod made while `f` ran has been seen.
    watch.settle().await;
    let pods = watch.pods();
    let summary = pods
        .iter()
        .map(|p| {
            let spec = p.spec.clone().unwrap_or_default();
            let claims: BTreeMap<String, String> = spec
                .volumes
                .iter()
                .flatten()
                .filter_map(|v| {
                    v.persistent_volume_claim
                        .as_ref()
                        .map(|c| (v.name.clone(), c.claim_name.clone()))
                })
                .collect();
            let mounts = spec
                .containers
                .iter()
                .flat_map(|c| c.volume_mounts.iter().flatten())
                .filter_map(|m| {
                    claims
                        .get(&m.name)
                        .map(|c| (c.clone(), m.mount_path.clone()))
                })
                .collect();
            (p.metadata.generate_name.clone().unwrap_or_default(), mounts)
        })
        .collect();
    Ok((out, summary))
}

/// A StatefulSet whose pods each have their own PVC: BackupDataAll takes
/// the pods from `.StatefulSet.Pods`; RestoreDataAll mounts each pod's own
/// PVC (at the pod's mount path) in that pod's restore helper pod.
#[tokio::test]
async fn statefulset_pods_restore_with_their_own_volumes() -> anyhow::Result<()> {
    let Some((client, ns)) = setup("data-all-sts").await else {
        return Ok(());
    };
    let mut pvs = Vec::new();
    for i in 0..2 {
        pvs.push(vol_data_pvc(&client, &ns, &format!("data-db-{i}")).await?);
    }
    let pod = json!({"containers": [{"name": "mongodb", "image": "mongo:7",
        "volumeMounts": [{"name": "data", "mountPath": "/bitnami/mongodb"}]}]});
    let claims = json!({"serviceName": "db", "volumeClaimTemplates": [{
        "metadata": {"name": "data"},
        "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": "",
                 "resources": {"requests": {"storage": "1Gi"}}},
    }]});
    let sts = support::workload("db", "db", 2, pod, claims);
    support::create::<k8s_openapi::api::apps::v1::StatefulSet>(&client, &ns, sts).await?;
    support::poll(Duration::from_secs(120), || async {
        let running = support::running_pods(&client, &ns, "app=db").await?;
        (running.len() == 2).then_some(())
    })
    .await
    .context("two Running pods of StatefulSet db")?;
    let spec = json!({
        "name": "backup",
        "object": {"kind": "StatefulSet", "name": "db", "namespace": ns},
        "profile": {"name": PROFILE, "namespace": ns},
        "preferredVersion": "",
    });
    let p = support::data_plane::fetch_params(&ns, spec).await?;
    assert_eq!(p["StatefulSet"]["Pods"], json!(["db-0", "db-1"]));
    let c = ctx(&ns);
    let dir = TempDir::new("sts");
    let src = dir.0.join("bitnami");
    write_tree(&src, 17);
    let prefix = format!("{ns}/rs_backup");
    let out = call_with(
        &c,
        "BackupDataAll",
        json!({"namespace": ns, "container": "mongodb", "includePath": src.to_str().unwrap(),
               "backupArtifactPrefix": prefix}),
        &p,
    )
    .await?;
    let info = out_str(&out, "BackupAllInfo");
    let parsed: Value = serde_json::from_str(&info)?;
    assert_eq!(
        parsed
            .as_object()
            .map(|m| m.keys().cloned().collect::<Vec<_>>()),
        Some(vec!["db-0".to_string(), "db-1".to_string()])
    );
    let target = dir.0.join("restored");
    let (r, helpers) = restore_pods_during(
        &client,
        &ns,
        call_with(
            &c,
            "RestoreDataAll",
            json!({"namespace": ns, "image": IMAGE, "backupArtifactPrefix": prefix,
                   "backupInfo": info, "restorePath": target.to_str().unwrap()}),
            &p,
        ),
    )
    .await?;
    r?;
    assert_same_tree(&src, &restored_root(&target, &src));
    let mut mounts: Vec<Vec<(String, String)>> = helpers
        .iter()
        .map(|(gen_name, m)| {
            assert_eq!(gen_name, "restore-data-all-");
            m.clone()
        })
        .collect();
    mounts.sort();
    assert_eq!(
        mounts,
        [
            vec![("data-db-0".to_string(), "/bitnami/mongodb".to_string())],
            vec![("data-db-1".to_string(), "/bitnami/mongodb".to_string())],
        ],
        "{helpers:?}"
    );
    support::function_pods_gone(&client, &ns).await?;
    for pv in pvs {
        delete_pv(&client, &pv).await;
    }
    Ok(())
}

/// Per-pod failures name the pod; nothing is left behind.
#[tokio::test]
async fn all_pods_functions_fail_clearly() -> anyhow::Result<()> {
    let Some((client, ns)) = setup("data-all-err").await else {
        return Ok(());
    };
    let pv = vol_data_pvc(&client, &ns, "data").await?;
    let pods = app_with_two_pods(&client, &ns).await?;
    let p = app_params(&ns, PROFILE).await?;
    let c = ctx(&ns);
    let dir = TempDir::new("err");
    let src = dir.0.join("src");
    write_tree(&src, 3);
    let prefix = format!("{ns}/all");
    let err = |r: Result<Output, FunctionError>| r.expect_err("must fail").to_string();

    // One of the `pods` does not exist: its error is named, the other's backup is made.
    let e = err(call_with(
        &c,
        "BackupDataAll",
        json!({"namespace": ns, "pods": format!("{} no-such-pod", pods[0]), "container": "app",
               "includePath": src.to_str().unwrap(), "backupArtifactPrefix": prefix}),
        &p,
    )
    .await);
    assert!(
        e.starts_with("BackupDataAll: Failed to backup data for pod no-such-pod: "),
        "{e}"
    );
    assert!(!e.contains(&format!("pod {}:", pods[0])), "{e}");
    let defaults = blueprint_operator::restic::DEFAULT_ENCRYPTION_KEY;
    assert_eq!(
        snapshots(&format!("{ns}/all/{}", pods[0]), defaults)?.len(),
        1
    );
    // No workload and no pods.
    let e = err(call_with(
        &c,
        "BackupDataAll",
        json!({"namespace": ns, "container": "app", "includePath": "/x",
               "backupArtifactPrefix": prefix}),
        &json!({"Profile": p["Profile"]}),
    )
    .await);
    assert!(
        e.starts_with("BackupDataAll: Failed to get pods: give `pods`"),
        "{e}"
    );
    // backupInfo that is not BackupAllInfo, or lacks a pod.
    let e = err(call_with(
        &c,
        "RestoreDataAll",
        json!({"namespace": ns, "image": IMAGE, "backupArtifactPrefix": prefix,
               "backupInfo": "{{ .ArtifactsIn.x }}"}),
        &p,
    )
    .await);
    assert!(
        e.contains("`backupInfo`: Could not decode JSON data"),
        "{e}"
    );
    let only_first = format!(
        r#"{{"{0}":{{"PodName":"{0}","BackupID":"deadbeef","BackupTag":"x"}}}}"#,
        pods[0]
    );
    let e = err(call_with(
        &c,
        "RestoreDataAll",
        json!({"namespace": ns, "image": IMAGE, "backupArtifactPrefix": prefix,
               "backupInfo": only_first, "restorePath": dir.0.join("r").to_str().unwrap()}),
        &p,
    )
    .await);
    assert!(
        e.contains(&format!(
            "Failed to restore data for pod {}: backupInfo has no backup of pod {}",
            pods[1], pods[1]
        )),
        "{e}"
    );
    // The snapshot ID of the first pod does not exist: restic's error, for that pod.
    assert!(
        e.contains(&format!(
            "Failed to restore data for pod {}: Failed to restore backup",
            pods[0]
        )),
        "{e}"
    );
    let e = err(call_with(
        &c,
        "DeleteDataAll",
        json!({"namespace": ns, "backupArtifactPrefix": prefix, "backupInfo": "{}"}),
        &p,
    )
    .await);
    assert!(e.contains("`backupInfo`: lists no backups"), "{e}");
    // An ID the repository does not have: restic forget ignores it (as under
    // Kanister), the snapshot that is there stays.
    let d = call_with(
        &c,
        "DeleteDataAll",
        json!({"namespace": ns, "backupArtifactPrefix": prefix, "backupInfo": only_first,
               "image": IMAGE}),
        &p,
    )
    .await?;
    assert_eq!(Value::Object(d), json!({"spaceFreed": "0 B"}));
    assert_eq!(
        snapshots(&format!("{ns}/all/{}", pods[0]), defaults)?.len(),
        1
    );
    support::function_pods_gone(&client, &ns).await?;
    delete_pv(&client, &pv).await;
    Ok(())
}

// ---------------------------------------------------------------------------
// Through the executor: the mongodb-restic Blueprint's shape.

async fn run_action(
    client: &Client,
    ns: &str,
    action: &str,
    artifacts: Value,
) -> anyhow::Result<ActionSet> {
    let spec = json!({
        "name": action, "blueprint": "mongodb",
        "object": kanister::deployment_object(ns, "app"),
        "profile": {"name": PROFILE, "namespace": ns},
        "artifacts": artifacts,
    });
    kanister::create_actionset(client, ns, action, spec).await?;
    support::wait_actionset_done(client, ns, action, FINISH).await
}

/// backup (BackupDataAll → artifact backupInfo from `BackupAllInfo`), restore
/// (RestoreDataAll from the artifact) and delete (DeleteDataAll) ActionSets
/// run by the controller, as the corpus' mongodb-restic Blueprint does.
#[tokio::test]
async fn mongodb_restic_blueprint_through_the_executor() -> anyhow::Result<()> {
    let Some((client, ns)) = setup("data-all-bp").await else {
        return Ok(());
    };
    let pv = vol_data_pvc(&client, &ns, "data").await?;
    let pods = app_with_two_pods(&client, &ns).await?;
    let dir = TempDir::new("bp");
    let src = dir.0.join("bitnami");
    write_tree(&src, 5);
    let target = dir.0.join("restored");
    let prefix = "{{ .Profile.Location.Bucket }}/mongodb-backups/{{ .Deployment.Name }}/rs_backup";
    let actions = json!({
            "backup": {
                "outputArtifacts": {"backupInfo": {"keyValue": {
                    "backupIdentifier": "{{ .Phases.backupSnapshots.Output.BackupAllInfo }}"}}},
                "phases": [{"func": "BackupDataAll", "name": "backupSnapshots", "args": {
                    "namespace": "{{ .Deployment.Namespace }}", "container": "app",
                    "includePath": src.to_str().unwrap(), "backupArtifactPrefix": prefix}}],
            },
            "restore": {
                "inputArtifactNames": ["backupInfo"],
                "phases": [{"func": "RestoreDataAll", "name": "restorePrimary", "args": {
                    "namespace": "{{ .Deployment.Namespace }}", "image": IMAGE,
                    "backupArtifactPrefix": prefix,
                    "backupInfo": "{{ .ArtifactsIn.backupInfo.KeyValue.backupIdentifier }}",
                    "restorePath": target.to_str().unwrap()}}],
            },
            "delete": {
                "inputArtifactNames": ["backupInfo"],
                "phases": [{"func": "DeleteDataAll", "name": "deleteSnapshots", "args": {
                    "namespace": "{{ .Deployment.Namespace }}", "backupArtifactPrefix": prefix,
                    "backupInfo": "{{ .ArtifactsIn.backupInfo.KeyValue.backupIdentifier }}",
                    "reclaimSpace": true}}],
            },
    });
    kanister::create_blueprint(&client, &ns, "mongodb", actions).await?;
    let ctl = Controller::start(&ns, &[]);
    let defaults = blueprint_operator::restic::DEFAULT_ENCRYPTION_KEY;

    let a = run_action(&client, &ns, "backup", json!({})).await?;
    let st = a.status.as_ref().expect("status");
    assert_eq!(st.state, State::Complete, "{st:?}");
    let arts = serde_json::to_value(&st.actions[0].artifacts)?;
    let info: Value = serde_json::from_str(
        arts["backupInfo"]["keyValue"]["backupIdentifier"]
            .as_str()
            .unwrap_or("null"),
    )?;
    for pod in &pods {
        let snaps = snapshots(&format!("mongodb-backups/app/rs_backup/{pod}"), defaults)?;
        assert_eq!(
            id_and_tags(&snaps),
            [(
                info[pod]["BackupID"].as_str().unwrap_or("?").to_string(),
                json!([info[pod]["BackupTag"]])
            )],
            "{arts}"
        );
    }

    let a = run_action(&client, &ns, "restore", arts.clone()).await?;
    let st = a.status.as_ref().expect("status");
    assert_eq!(st.state, State::Complete, "{st:?}");
    assert_same_tree(&src, &restored_root(&target, &src));

    let a = run_action(&client, &ns, "delete", arts).await?;
    let st = a.status.as_ref().expect("status");
    assert_eq!(st.state, State::Complete, "{st:?}");
    for pod in &pods {
        assert!(snapshots(&format!("mongodb-backups/app/rs_backup/{pod}"), defaults)?.is_empty());
    }
    ctl.kill().await;
    support::function_pods_gone(&client, &ns).await?;
    delete_pv(&client, &pv).await;
    Ok(())
}
