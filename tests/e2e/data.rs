//! The restic data-mover functions (BackupData, RestoreData, DeleteData,
//! CopyVolumeData) moving real data: restic (tools/data-plane) runs through
//! kwok's local exec on this machine against gofakes3, an S3-compatible
//! object store, so "a path in the container" is a path of this machine.
//! Every test writes its files under its own temporary directory and checks
//! the restored bytes file by file.

use crate::support;

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::support::call::call_with;
use crate::support::controller::Controller;
use crate::support::data_plane::{DataTest, Store, ctx, delete_pv, out_str, vol_data_pvc};
use crate::support::files::{TempDir, assert_same_tree, noise, read_tree, restored_root};
use crate::support::kanister::{self, create_actionset, create_blueprint, deployment_object};
use anyhow::Context as _;
use blueprint_operator::model::State;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::Client;
use kube::api::Api;
use serde_json::{Value, json};

/// Bound for an ActionSet to finish.
const FINISH: Duration = Duration::from_secs(300);
const BUCKET: &str = "bpo-data";
const PROFILE: &str = "s3";

/// Client and a fresh namespace with an s3Compliant Profile `PROFILE` on the test object store.
async fn setup(prefix: &str) -> Option<(Client, String)> {
    support::data_plane::setup(prefix, PROFILE, BUCKET).await
}

/// Writes a tree of a few MB (binary, text, empty, nested, a name with a
/// space) under `root`; returns the number of regular files.
fn write_tree(root: &Path, seed: u64) -> usize {
    let files: Vec<(&str, Vec<u8>)> = vec![
        ("a.txt", b"hello from BackupData\n".to_vec()),
        ("empty", Vec::new()),
        ("bin/blob1.bin", noise(seed, 1_500_000)),
        ("bin/deep/er/blob2.bin", noise(seed + 1, 700_001)),
        ("bin/deep/er/small.dat", noise(seed + 2, 100)),
        (
            "logs/compressible.log",
            "line of a log file that repeats\n"
                .repeat(32_000)
                .into_bytes(),
        ),
        ("with space/name with space.txt", b"spaces\n".to_vec()),
    ];
    support::data_plane::write_files(root, &files);
    files.len()
}

/// `restic snapshots --json` of `<BUCKET>/<path>`.
fn snapshots(path: &str, key: &str) -> anyhow::Result<Vec<Value>> {
    support::data_plane::snapshots(BUCKET, path, key)
}

fn snapshot_ids(snaps: &[Value]) -> Vec<String> {
    snaps
        .iter()
        .filter_map(|s| s["short_id"].as_str().map(str::to_string))
        .collect()
}

/// Kanister's default key (BackupData without encryptionKey).
const DEFAULT_KEY: &str = blueprint_operator::restic::DEFAULT_ENCRYPTION_KEY;

/// BackupData of a directory of a running pod's container, RestoreData by
/// ID and by tag into other paths (byte-compared), DeleteData by ID and by
/// tag: the snapshots are gone from the repository.
#[tokio::test]
async fn backup_restore_delete_round_trip() -> anyhow::Result<()> {
    backup_restore_delete(Store::GoFakeS3, "data-rt").await
}

/// [`backup_restore_delete_round_trip`] on the strict S3 (moto behind AWS S3's request
/// checks): restic's requests, signatures and checksums included, pass what AWS S3 checks.
#[tokio::test]
async fn backup_restore_delete_round_trip_on_strict_s3() -> anyhow::Result<()> {
    backup_restore_delete(Store::Moto, "data-rt-strict").await
}

async fn backup_restore_delete(store: Store, ns_prefix: &str) -> anyhow::Result<()> {
    let Some((client, ns)) = support::data_plane::setup_on(store, ns_prefix, PROFILE, BUCKET).await
    else {
        return Ok(());
    };
    let snapshots =
        |path: &str, key: &str| support::data_plane::snapshots_on(store, BUCKET, path, key);
    let data = DataTest::new(client, ns, PROFILE, "rt").await?;
    let (client, ns) = (&data.client, &data.ns);
    let src = data.dir.0.join("src");
    let n_files = write_tree(&src, 7);
    let prefix = format!("{ns}/backup");
    let key = "correct horse battery staple";

    let args = json!({"namespace": ns, "pod": data.pod, "container": "app",
                      "includePath": src.to_str().unwrap(), "backupArtifactPrefix": prefix,
                      "encryptionKey": key});
    let out = data.call("BackupData", args).await?;
    let keys: Vec<&str> = out.keys().map(String::as_str).collect();
    assert_eq!(
        keys,
        [
            "backupID",
            "backupTag",
            "fileCount",
            "size",
            "phySize",
            "version"
        ]
    );
    let id = out_str(&out, "backupID");
    let tag = out_str(&out, "backupTag");
    assert_eq!(tag.len(), 10, "{tag}");
    assert_eq!(out_str(&out, "fileCount"), n_files.to_string());
    assert!(out_str(&out, "size").ends_with("MiB"), "{out:?}");
    assert!(!out_str(&out, "phySize").is_empty(), "{out:?}");
    assert_eq!(out_str(&out, "version"), "v0.0.0");
    let snaps = snapshots(&prefix, key)?;
    assert_eq!(snapshot_ids(&snaps), vec![id.clone()]);
    assert_eq!(snaps[0]["tags"], json!([tag]));

    // A second backup into the same repository (exists now: no init).
    std::fs::write(src.join("a.txt"), b"changed after the first backup\n")?;
    let args = json!({"namespace": ns, "pod": data.pod, "container": "app",
                      "includePath": src.to_str().unwrap(),
                      "backupArtifactPrefix": format!("{BUCKET}/{prefix}"), "encryptionKey": key});
    let out2 = data.call("BackupData", args).await?;
    let id2 = out_str(&out2, "backupID");
    let tag2 = out_str(&out2, "backupTag");
    assert_ne!(id, id2);
    assert_eq!(snapshots(&prefix, key)?.len(), 2);

    // RestoreData needs `pod` or `volumes`: mount a PVC into the helper pod.
    let pv = vol_data_pvc(client, ns, "restore-target").await?;
    // By tag (the second backup) …
    let by_tag = data.dir.0.join("by-tag");
    let args = json!({"namespace": ns, "image": "ghcr.io/kanisterio/kanister-tools:0.116.0",
                      "backupArtifactPrefix": prefix, "backupTag": tag2, "encryptionKey": key,
                      "restorePath": by_tag.to_str().unwrap(),
                      "volumes": {"restore-target": "/mnt/restore-target"},
                      "podLabels": {"purpose": "restore"}});
    let r = data.call("RestoreData", args).await?;
    assert!(r.is_empty(), "{r:?}");
    assert_same_tree(&src, &restored_root(&by_tag, &src));
    // … and by ID (the first one: a.txt as it was then).
    let by_id = data.dir.0.join("by-id");
    data.call(
        "RestoreData",
        json!({"namespace": ns, "image": "busybox:stable",
               "backupArtifactPrefix": prefix, "backupIdentifier": id, "encryptionKey": key,
               "restorePath": by_id.to_str().unwrap(),
               "volumes": {"restore-target": "/mnt/restore-target"}}),
    )
    .await?;
    std::fs::write(src.join("a.txt"), b"hello from BackupData\n")?;
    assert_same_tree(&src, &restored_root(&by_id, &src));
    support::function_pods_gone(client, ns).await?;

    // DeleteData by ID, then by tag with reclaimSpace.
    let args = json!({"namespace": ns, "backupArtifactPrefix": prefix, "backupID": id,
                      "encryptionKey": key});
    let d = data.call("DeleteData", args).await?;
    assert_eq!(Value::Object(d), json!({"spaceFreed": "0 B"}));
    assert_eq!(snapshot_ids(&snapshots(&prefix, key)?), vec![id2.clone()]);
    let args = json!({"namespace": ns, "backupArtifactPrefix": prefix, "backupTag": tag2,
                      "encryptionKey": key, "reclaimSpace": "true"});
    let d = data.call("DeleteData", args).await?;
    let freed = out_str(&d, "spaceFreed");
    let bytes: i64 = freed
        .strip_suffix(" B")
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("spaceFreed {freed:?}"));
    assert!(
        bytes > 1_000_000,
        "prune of the last snapshot freed only {freed}"
    );
    assert!(snapshots(&prefix, key)?.is_empty());
    support::function_pods_gone(client, ns).await?;
    delete_pv(client, &pv).await;
    Ok(())
}

/// CopyVolumeData of a PVC (its data at Kanister's mount point
/// /mnt/vol_data/<pvc>, a directory of this machine under kwok), then
/// RestoreData from CopyVolumeData's outputs, byte-compared.
#[tokio::test]
async fn copy_volume_data_then_restore_from_its_outputs() -> anyhow::Result<()> {
    let Some((client, ns)) = setup("data-cvd").await else {
        return Ok(());
    };
    let object = json!({"kind": "Namespace", "name": ns});
    let p = support::data_plane::template_params(&ns, PROFILE, object).await?;
    let c = ctx(&ns);
    let pvc = format!("cvd-{ns}");
    let pv = vol_data_pvc(&client, &ns, &pvc).await?;
    let mount = PathBuf::from(format!("/mnt/vol_data/{pvc}"));
    struct Cleanup(PathBuf);
    impl Drop for Cleanup {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
    let _cleanup = Cleanup(mount.clone());
    let n_files = write_tree(&mount, 11);

    let out = call_with(
        &c,
        "CopyVolumeData",
        json!({"namespace": ns, "volume": pvc, "dataArtifactPrefix": "s3-bucket/path/artifactPrefix",
               "podAnnotations": {"note": "copy"}}),
        &p,
    )
    .await?;
    let mut keys: Vec<&str> = out.keys().map(String::as_str).collect();
    keys.sort();
    assert_eq!(
        keys,
        [
            "backupArtifactLocation",
            "backupID",
            "backupRoot",
            "backupTag",
            "fileCount",
            "phySize",
            "size",
            "version"
        ]
    );
    assert_eq!(out_str(&out, "backupRoot"), mount.to_str().unwrap());
    // Kanister's ResolveArtifactPrefix: the Profile's bucket is prepended.
    assert_eq!(
        out_str(&out, "backupArtifactLocation"),
        format!("{BUCKET}/s3-bucket/path/artifactPrefix")
    );
    assert_eq!(out_str(&out, "fileCount"), n_files.to_string());
    let snaps = snapshots("s3-bucket/path/artifactPrefix", DEFAULT_KEY)?;
    assert!(
        snapshot_ids(&snaps).contains(&out_str(&out, "backupID")),
        "{snaps:?}"
    );

    let dir = TempDir::new("cvd");
    let target = dir.0.join("restored");
    call_with(
        &c,
        "RestoreData",
        json!({"namespace": ns, "image": "ghcr.io/kanisterio/kanister-tools:0.116.0",
               "backupArtifactPrefix": out_str(&out, "backupArtifactLocation"),
               "backupTag": out_str(&out, "backupTag"),
               "volumes": {pvc.clone(): out_str(&out, "backupRoot")},
               "restorePath": target.to_str().unwrap()}),
        &p,
    )
    .await?;
    assert_same_tree(&mount, &restored_root(&target, &mount));

    // In place, as corpus postgres-start-stop-blueprint.yaml does: the PVC
    // mounted at /mnt/vol_data/<pvc> and the default restorePath "/".
    let original = read_tree(&mount);
    std::fs::remove_dir_all(&mount)?;
    std::fs::create_dir_all(&mount)?;
    std::fs::write(mount.join("a.txt"), b"overwritten by the application\n")?;
    call_with(
        &c,
        "RestoreData",
        json!({"namespace": ns, "image": "ghcr.io/kanisterio/kanister-tools:0.116.0",
               "backupArtifactPrefix": "s3-bucket/path/artifactPrefix",
               "backupIdentifier": out_str(&out, "backupID"),
               "volumes": {pvc.clone(): format!("/mnt/vol_data/{pvc}")}}),
        &p,
    )
    .await?;
    assert!(
        read_tree(&mount) == original,
        "in-place restore did not bring back the files of {}",
        mount.display()
    );
    support::function_pods_gone(&client, &ns).await?;
    delete_pv(&client, &pv).await;
    Ok(())
}

/// Wrong encryptionKey, missing Profile, bad includePath, missing PVC and
/// argument mistakes fail with errors that say what is wrong.
#[tokio::test]
async fn data_functions_fail_clearly() -> anyhow::Result<()> {
    let Some(data) = support::data_plane::data_test("data-err", PROFILE, BUCKET, "err").await?
    else {
        return Ok(());
    };
    let (client, ns) = (&data.client, &data.ns);
    let src = data.dir.0.join("src");
    write_tree(&src, 3);
    let prefix = format!("{ns}/keys");
    let backup = |key: &str, include: &str| {
        json!({"namespace": ns, "pod": data.pod, "container": "app", "includePath": include,
               "backupArtifactPrefix": prefix, "encryptionKey": key})
    };
    let out = data
        .call("BackupData", backup("key-one", src.to_str().unwrap()))
        .await?;
    let id = out_str(&out, "backupID");

    // Wrong key on an existing repository.
    let e = data
        .call_err(
            "BackupData",
            backup("key-two", src.to_str().unwrap()),
            "wrong key",
        )
        .await;
    assert!(
        e.starts_with("BackupData: Failed to backup data: Password is incorrect"),
        "{e}"
    );
    assert!(e.contains("wrong password"), "{e}");
    assert_eq!(snapshots(&prefix, "key-one")?.len(), 1, "nothing was added");
    let pv = vol_data_pvc(client, ns, "r").await?;
    let args = json!({"namespace": ns, "image": "busybox", "backupArtifactPrefix": prefix,
                      "backupIdentifier": id, "encryptionKey": "key-two",
                      "restorePath": data.dir.0.join("x").to_str().unwrap(),
                      "volumes": {"r": "/mnt/r"}});
    let e = data.call_err("RestoreData", args, "wrong key").await;
    assert!(
        e.starts_with("RestoreData: Failed to restore backup: "),
        "{e}"
    );
    assert!(e.contains("wrong password"), "{e}");
    support::function_pods_gone(client, ns).await?;

    // includePath that does not exist.
    let missing = data.dir.0.join("no-such-dir");
    let e = data
        .call_err(
            "BackupData",
            backup("key-one", missing.to_str().unwrap()),
            "missing includePath",
        )
        .await;
    assert!(
        e.starts_with("BackupData: Failed to backup data: Failed to create and upload backup: "),
        "{e}"
    );
    assert!(e.contains("do not exist"), "{e}");

    // No Profile.
    let no_profile = json!({});
    let e = data
        .call_err_with(
            "BackupData",
            backup("k", src.to_str().unwrap()),
            &no_profile,
            "no profile",
        )
        .await;
    assert!(
        e.starts_with("BackupData: Failed to validate Profile: Profile must be non-nil"),
        "{e}"
    );
    let e = data
        .call_err_with(
            "DeleteData",
            json!({"namespace": ns, "backupArtifactPrefix": prefix, "backupID": id}),
            &no_profile,
            "no profile",
        )
        .await;
    assert!(e.starts_with("DeleteData: Profile must be non-nil"), "{e}");

    // Argument mistakes, before any pod is made.
    let args = json!({"namespace": ns, "image": "busybox", "backupArtifactPrefix": prefix,
                      "backupIdentifier": id});
    let e = data
        .call_err("RestoreData", args, "neither pod nor volumes")
        .await;
    assert_eq!(e, "RestoreData: Require one argument: pod or volumes");
    let args = json!({"namespace": ns, "image": "busybox", "backupArtifactPrefix": prefix,
                      "volumes": {"r": "/mnt/r"}});
    let e = data
        .call_err("RestoreData", args, "neither tag nor id")
        .await;
    assert_eq!(
        e,
        "RestoreData: Require one argument: backupTag or backupIdentifier"
    );
    let args = json!({"namespace": ns, "image": "busybox", "backupArtifactPrefix": prefix,
                      "backupIdentifier": id, "pod": data.pod});
    let e = data.call_err("RestoreData", args, "pod without PVCs").await;
    assert_eq!(
        e,
        format!(
            "RestoreData: Failed to find volumes for the Pod: {}",
            data.pod
        )
    );
    let args = json!({"namespace": ns, "backupArtifactPrefix": prefix});
    let e = data
        .call_err("DeleteData", args, "neither id nor tag")
        .await;
    assert_eq!(e, "DeleteData: Require one argument: backupID or backupTag");
    let args = json!({"namespace": ns, "volume": "no-such-pvc", "dataArtifactPrefix": prefix});
    let e = data.call_err("CopyVolumeData", args, "missing PVC").await;
    assert!(
        e.starts_with(&format!(
            "CopyVolumeData: Failed to retrieve PVC. Namespace {ns}, Name no-such-pvc: "
        )),
        "{e}"
    );
    let args = json!({"namespace": ns, "pod": data.pod, "container": "app", "includePath": "/x",
                      "backupArtifactPrefix": prefix, "encryptionkey": "typo"});
    let e = data.call_err("BackupData", args, "unknown argument").await;
    assert!(e.contains("argument encryptionkey is not supported"), "{e}");
    // DeleteData with a tag no snapshot has.
    let args = json!({"namespace": ns, "backupArtifactPrefix": prefix, "backupTag": "nosuchtag1",
                      "encryptionKey": "key-one"});
    let e = data.call_err("DeleteData", args, "unknown tag").await;
    assert!(
        e.starts_with(
            "DeleteData: Failed to forget data, could not get snapshotID from tag, Tag: nosuchtag1: Snapshot not found"
        ),
        "{e}"
    );
    support::function_pods_gone(client, ns).await?;
    delete_pv(client, &pv).await;
    Ok(())
}

// ---------------------------------------------------------------------------
// Through the executor (the controller binary, as tests/e2e/executor.rs runs it).

/// Action `action` of Blueprint `blueprint` on Deployment `app`, with Profile `PROFILE`.
fn app_action(ns: &str, blueprint: &str, action: &str, artifacts: Value) -> Value {
    let profile = json!({"profile": {"name": PROFILE, "namespace": ns}, "artifacts": artifacts});
    kanister::merged(
        kanister::action(action, blueprint, deployment_object(ns, "app")),
        profile,
    )
}

/// A backup action whose BackupData fails (includePath does not exist):
/// the deferPhase (KubeOps creating a ConfigMap) still runs, and the
/// ActionSet says main failed, defer ok.
#[tokio::test]
async fn failing_backup_data_still_runs_the_defer_phase() -> anyhow::Result<()> {
    let Some((client, ns)) = setup("data-defer").await else {
        return Ok(());
    };
    // KubeOps creates what the shipped RBAC does not grant: granted as the README says.
    support::rbac::grant_configmap_create(&client).await?;
    support::data_plane::app_pod(&client, &ns).await?;
    create_blueprint(
        &client,
        &ns,
        "bp",
        json!({"backup": {
            "phases": [{
                "func": "BackupData", "name": "backupToS3",
                "args": {
                    "namespace": "{{ .Deployment.Namespace }}",
                    "pod": "{{ index .Deployment.Pods 0 }}",
                    "container": "app",
                    "includePath": "/nonexistent/bpo-e2e-data/path",
                    "backupArtifactPrefix": "{{ .Profile.Location.Bucket }}/defer",
                },
            }],
            "deferPhase": {
                "func": "KubeOps", "name": "markDone",
                "args": {
                    "operation": "create",
                    "namespace": "{{ .Deployment.Namespace }}",
                    "spec": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: defer-ran\ndata:\n  state: '{{ .Outcome.State }}'\n  failedPhase: '{{ .Outcome.FailedPhase }}'\n",
                },
            },
        }}),
    )
    .await?;
    let ctl = Controller::start(&ns, &[]);
    create_actionset(
        &client,
        &ns,
        "run",
        app_action(&ns, "bp", "backup", json!({})),
    )
    .await?;
    let a = support::wait_actionset_done(&client, &ns, "run", FINISH).await?;
    ctl.kill().await;
    let st = a.status.as_ref().expect("status");
    assert_eq!(st.state, State::Failed, "{st:?}");
    let act = &st.actions[0];
    assert_eq!(act.phases[0].state, State::Failed, "{st:?}");
    assert_eq!(act.defer_phase.state, State::Complete, "{st:?}");
    assert!(
        st.error
            .message
            .contains("Failed to create and upload backup"),
        "{}",
        st.error.message
    );
    assert!(
        !st.error.message.contains("deferPhase"),
        "{}",
        st.error.message
    );
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), &ns);
    let cm = cms
        .get("defer-ran")
        .await
        .context("the deferPhase's ConfigMap")?;
    let data = cm.data.unwrap_or_default();
    assert_eq!(
        data.get("failedPhase").map(String::as_str),
        Some("backupToS3"),
        "{data:?}"
    );
    assert!(
        data.get("state")
            .is_some_and(|s| s.to_ascii_lowercase().contains("fail")),
        "{data:?}"
    );
    Ok(())
}

/// A time-log-like Blueprint (corpus `time-log-blueprint.yaml`, RestoreData
/// given `volumes` and a `restorePath` of this machine, DeleteData instead
/// of LocationDelete) run by the executor: backup → restore from the
/// backup's artifacts → delete; the restored bytes match, the snapshot goes.
#[tokio::test]
async fn blueprint_backup_restore_delete_through_the_executor() -> anyhow::Result<()> {
    let Some((client, ns)) = setup("data-bp").await else {
        return Ok(());
    };
    support::data_plane::app_pod(&client, &ns).await?;
    let pv = vol_data_pvc(&client, &ns, "logs").await?;
    let dir = TempDir::new("bp");
    let src = dir.0.join("var-log");
    write_tree(&src, 21);
    let target = dir.0.join("restored");
    create_blueprint(
        &client,
        &ns,
        "time-log",
        json!({
            "backup": {
                "outputArtifacts": {
                    "timeLog": {"keyValue": {"path": "{{ .Profile.Location.Bucket }}/time-log"}},
                    "backupIdentifier": {"keyValue": {
                        "id": "{{ .Phases.backupToS3.Output.backupID }}",
                        "tag": "{{ .Phases.backupToS3.Output.backupTag }}",
                    }},
                },
                "phases": [{
                    "func": "BackupData", "name": "backupToS3",
                    "args": {
                        "namespace": "{{ .Deployment.Namespace }}",
                        "pod": "{{ index .Deployment.Pods 0 }}",
                        "container": "app",
                        "includePath": src.to_str().unwrap(),
                        "backupArtifactPrefix": "{{ .Profile.Location.Bucket }}/time-log",
                    },
                }],
            },
            "restore": {
                "inputArtifactNames": ["timeLog", "backupIdentifier"],
                "phases": [
                    {"func": "ScaleWorkload", "name": "shutdownPod", "args": {
                        "namespace": "{{ .Deployment.Namespace }}", "name": "{{ .Deployment.Name }}",
                        "kind": "Deployment", "replicas": 0}},
                    {"func": "RestoreData", "name": "restoreFromS3", "args": {
                        "namespace": "{{ .Deployment.Namespace }}",
                        "image": "ghcr.io/kanisterio/kanister-tools:0.116.0",
                        "backupArtifactPrefix": "{{ .ArtifactsIn.timeLog.KeyValue.path }}",
                        "backupIdentifier": "{{ .ArtifactsIn.backupIdentifier.KeyValue.id }}",
                        "volumes": {"logs": "/var/log"},
                        "restorePath": target.to_str().unwrap()}},
                    {"func": "ScaleWorkload", "name": "bringupPod", "args": {
                        "namespace": "{{ .Deployment.Namespace }}", "name": "{{ .Deployment.Name }}",
                        "kind": "Deployment", "replicas": 1}},
                ],
            },
            "delete": {
                "inputArtifactNames": ["timeLog", "backupIdentifier"],
                "phases": [{"func": "DeleteData", "name": "deleteFromS3", "args": {
                    "namespace": "{{ .Namespace.Name }}",
                    "backupArtifactPrefix": "{{ .ArtifactsIn.timeLog.KeyValue.path }}",
                    "backupTag": "{{ .ArtifactsIn.backupIdentifier.KeyValue.tag }}",
                    "reclaimSpace": true}}],
            },
        }),
    )
    .await?;
    let ctl = Controller::start(&ns, &[]);
    create_actionset(
        &client,
        &ns,
        "backup",
        app_action(&ns, "time-log", "backup", json!({})),
    )
    .await?;
    let a = support::wait_actionset_done(&client, &ns, "backup", FINISH).await?;
    let st = a.status.as_ref().expect("status");
    assert_eq!(st.state, State::Complete, "{st:?}");
    let arts = serde_json::to_value(&st.actions[0].artifacts)?;
    let id = arts["backupIdentifier"]["keyValue"]["id"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert_eq!(
        arts["timeLog"]["keyValue"]["path"],
        format!("{BUCKET}/time-log")
    );
    assert!(
        snapshot_ids(&snapshots("time-log", DEFAULT_KEY)?).contains(&id),
        "{arts}"
    );

    create_actionset(
        &client,
        &ns,
        "restore",
        app_action(&ns, "time-log", "restore", arts.clone()),
    )
    .await?;
    let a = support::wait_actionset_done(&client, &ns, "restore", FINISH).await?;
    let st = a.status.as_ref().expect("status");
    assert_eq!(st.state, State::Complete, "{st:?}");
    assert_same_tree(&src, &restored_root(&target, &src));

    // The delete action's object is the namespace (as Kanister users run it).
    let delete = json!({
        "name": "delete", "blueprint": "time-log",
        // Kanister fills .Namespace.Name from the object's namespace.
        "object": kanister::namespace_object(&ns),
        "profile": {"name": PROFILE, "namespace": ns},
        "artifacts": arts,
    });
    create_actionset(&client, &ns, "delete", delete).await?;
    let a = support::wait_actionset_done(&client, &ns, "delete", FINISH).await?;
    ctl.kill().await;
    let st = a.status.as_ref().expect("status");
    assert_eq!(st.state, State::Complete, "{st:?}");
    assert!(
        !snapshot_ids(&snapshots("time-log", DEFAULT_KEY)?).contains(&id),
        "snapshot {id} still there"
    );
    support::function_pods_gone(&client, &ns).await?;
    delete_pv(&client, &pv).await;
    Ok(())
}
