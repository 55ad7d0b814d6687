//! The restic data movers on a gcs Profile: restic's gs: backend (Google's Go client) on
//! fake-gcs-server, its service-account key written by the exec's shell prologue, its token
//! from the JWT-checking endpoint of `support::gcs`. restic runs through kwok's local exec on
//! this machine; LocationDelete runs in the controller's own GCS client.

use crate::support;

use std::sync::atomic::Ordering;

use crate::support::data_plane::{DataTest, delete_pv, out_str, vol_data_pvc};
use crate::support::files::{TempDir, assert_same_tree, noise, restored_root};
use crate::support::gcs;
use serde_json::{Value, json};

const BUCKET: &str = "bpo-data-gcs";
const PROFILE: &str = "gcs";

/// A fresh namespace with the gcs Profile `PROFILE` (credentials from a
/// `secrets.kanister.io/gcp` Secret) and its app, the directory tagged `tag`; `None` without
/// the kwok node.
async fn setup(prefix: &str, tag: &str) -> anyhow::Result<Option<DataTest>> {
    let client = support::client().await;
    if !support::require_kwok(&client).await {
        return Ok(None);
    }
    support::install_crds(&client).await.expect("install CRDs");
    let ns = support::namespace(&client, prefix).await;
    gcs::kanister_profile(&client, &ns, PROFILE, BUCKET)
        .await
        .expect("create the gcs Profile");
    Ok(Some(DataTest::new(client, ns, PROFILE, tag).await?))
}

/// restic's snapshot files of the repository at `prefix`.
fn snapshot_objects(prefix: &str) -> Vec<String> {
    gcs::list(BUCKET, &format!("{prefix}/snapshots/"))
}

/// BackupData, RestoreData by ID (byte-compared), DeleteData with reclaimSpace, then
/// LocationDelete of the repository: at each step the bucket holds what it should.
#[tokio::test]
async fn backup_restore_delete_on_gcs() -> anyhow::Result<()> {
    let Some(t) = setup("data-gcs", "gcs").await? else {
        return Ok(());
    };
    let ns = &t.ns;
    assert_eq!(t.params["Profile"]["Location"]["Type"], "gcs");
    let src = t.dir.0.join("src");
    support::data_plane::write_files(
        &src,
        &[
            ("a.txt", b"hello from BackupData on gcs\n".to_vec()),
            ("empty", Vec::new()),
            ("bin/blob.bin", noise(11, 2_500_000)),
            ("with space/x.txt", b"spaces\n".to_vec()),
        ],
    );
    let prefix = format!("{ns}/backup");
    let key = "gcs key";
    let tokens_before = gcs::server().tokens.load(Ordering::Relaxed);

    let out = t
        .call("BackupData", t.backup_args(&src, &prefix, key))
        .await?;
    let id = out_str(&out, "backupID");
    assert_eq!(out_str(&out, "fileCount"), "4");
    assert_eq!(snapshot_objects(&prefix).len(), 1);
    assert!(
        gcs::list(BUCKET, &format!("{prefix}/config")) == [format!("{prefix}/config")],
        "restic's repository is at Kanister's gs:{BUCKET}:/{prefix}/"
    );
    assert!(
        gcs::server().tokens.load(Ordering::Relaxed) > tokens_before,
        "restic got its token with the Profile's key"
    );

    let pv = vol_data_pvc(&t.client, ns, "restore-target").await?;
    let by_id = t.dir.0.join("by-id");
    let restore = json!({"namespace": ns, "image": "ghcr.io/kanisterio/kanister-tools:0.116.0",
        "backupArtifactPrefix": prefix, "backupIdentifier": id, "encryptionKey": key,
        "restorePath": by_id.to_str().unwrap(),
        "volumes": {"restore-target": "/mnt/restore-target"}});
    let r = t.call("RestoreData", restore).await?;
    assert!(r.is_empty(), "{r:?}");
    assert_same_tree(&src, &restored_root(&by_id, &src));

    let delete = json!({"namespace": ns, "backupArtifactPrefix": prefix, "backupID": id,
        "encryptionKey": key, "reclaimSpace": "true"});
    let d = t.call("DeleteData", delete).await?;
    assert_ne!(out_str(&d, "spaceFreed"), "0 B", "{d:?}");
    assert!(snapshot_objects(&prefix).is_empty());

    // LocationDelete of the repository, by the controller's own client.
    let siblings = format!("{ns}/backup-other/keep");
    let gcs_client = gcs::client(BUCKET);
    let sibling = blueprint_operator::aws::upload::Upload::new(&gcs_client, BUCKET, &siblings);
    blueprint_operator::aws::upload::upload(&sibling, &mut &b"x"[..], std::future::pending())
        .await?;
    let artifact = format!("{BUCKET}/{prefix}");
    t.call("LocationDelete", json!({ "artifact": artifact }))
        .await?;
    assert_eq!(gcs::list(BUCKET, &format!("{ns}/")), [siblings]);
    support::function_pods_gone(&t.client, ns).await?;
    delete_pv(&t.client, &pv).await;
    Ok(())
}

/// A missing bucket and a key the token endpoint refuses fail BackupData with what to fix,
/// and make nothing in the store.
#[tokio::test]
async fn gcs_failures_are_named() -> anyhow::Result<()> {
    let Some(t) = setup("data-gcs-err", "gcs-err").await? else {
        return Ok(());
    };
    support::data_plane::write_files(&t.dir.0, &[("a", b"a".to_vec())]);
    let backup = t.backup_args(&t.dir.0, &format!("{}/x", t.ns), "k");
    // The parameters with the value at `pointer` replaced.
    let with = |pointer: &str, value: Value| {
        let mut p = t.params.clone();
        *p.pointer_mut(pointer).expect("a Profile field") = value;
        p
    };
    let secret = "/Profile/Credential/KeyPair/Secret";
    let other_key = gcs::key_json_with(include_str!("../../src/gcs/testdata/other-key.pem"));
    let cases = [
        (
            "refused key",
            "BackupData",
            backup.clone(),
            with(secret, json!(other_key)),
            &["Invalid JWT Signature"][..],
        ),
        (
            "bad key",
            "BackupData",
            backup,
            with(secret, json!("not a key")),
            &["is not a service account's JSON key"],
        ),
        (
            "missing bucket",
            "LocationDelete",
            json!({"artifact": "x"}),
            with("/Profile/Location/Bucket", json!("bpo-no-such-gcs-bucket")),
            &[
                "bpo-no-such-gcs-bucket",
                "check the Profile's location.bucket",
            ],
        ),
    ];
    for (case, func, args, params, wanted) in cases {
        let e = t.call_err_with(func, args, &params, case).await;
        for w in wanted {
            assert!(e.contains(w), "{case}: {e}");
        }
    }
    assert!(gcs::list(BUCKET, &format!("{}/", t.ns)).is_empty());
    support::function_pods_gone(&t.client, &t.ns).await?;
    Ok(())
}

/// The restic command lines of a gcs Profile run as the pod's exec runs them (`bash -c`, the
/// environment on stdin), here on this machine without Kubernetes: init, backup, restore, forget
/// and prune through restic's gs: backend, the key file gone afterwards.
#[test]
fn restic_command_lines_run_on_gcs_without_a_pod() {
    use blueprint_operator::restic::{Repository, ResticCommand, Snapshot};
    let restic_dir = support::data_plane::restic()
        .parent()
        .expect("restic's directory")
        .to_path_buf();
    let tmp = TempDir::new("gcs-local");
    let run = |cmd: ResticCommand| -> String {
        let env = [
            ("PATH", support::data_plane::path_with(&restic_dir).into()),
            ("TMPDIR", tmp.0.clone().into_os_string()),
            ("RESTIC_CACHE_DIR", tmp.0.join("cache").into_os_string()),
        ];
        let out = support::data_plane::run_locally(&cmd, env);
        assert!(
            out.status.success(),
            "{:?} failed: {}",
            cmd.argv.last(),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let params = json!({ "Profile": gcs::profile(BUCKET, "") });
    let profile =
        blueprint_operator::param::profile::Profile::from_params(&params).expect("profile");
    let prefix = format!("local-{}", std::process::id());
    let repo = Repository::new(&profile, &prefix, "pw", false);
    let src = tmp.0.join("src");
    support::data_plane::write_files(&src, &[("f.bin", noise(3, 300_000))]);

    run(repo.init_command().unwrap());
    let log = run(repo.backup_command("t1", src.to_str().unwrap()).unwrap());
    let id = blueprint_operator::restic::snapshot_id_from_backup_log(&log);
    assert!(!id.is_empty(), "{log}");
    assert_eq!(snapshot_objects(&prefix).len(), 1);
    let target = tmp.0.join("restored");
    run(repo
        .restore_command(&Snapshot::Id(id.clone()), target.to_str().unwrap())
        .unwrap());
    assert_same_tree(&src, &restored_root(&target, &src));
    run(repo.forget_command(&id).unwrap());
    run(repo.prune_command().unwrap());
    assert!(snapshot_objects(&prefix).is_empty());
    // The prologue's key files (mktemp under TMPDIR) are gone.
    let left: Vec<_> = std::fs::read_dir(&tmp.0)
        .expect("tmp")
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("tmp."))
        .collect();
    assert!(left.is_empty(), "key files left: {left:?}");
}
