//! The restic data movers on a gcs Profile: restic's gs: backend (Google's Go client) on
//! fake-gcs-server, its service-account key written by the exec's shell prologue, its token
//! from the JWT-checking endpoint of `support::gcs`. restic runs through kwok's local exec on
//! this machine; LocationDelete runs in the controller's own GCS client.

use crate::support;

use std::sync::atomic::Ordering;

use crate::support::call::call_with;
use crate::support::data_plane::{app_params, ctx, delete_pv, out_str, vol_data_pvc};
use crate::support::files::{TempDir, assert_same_tree, noise, restored_root};
use crate::support::gcs;
use serde_json::{Value, json};

const BUCKET: &str = "bpo-data-gcs";
const PROFILE: &str = "gcs";

/// Client and a fresh namespace with the gcs Profile `PROFILE` (credentials from a
/// `secrets.kanister.io/gcp` Secret); `None` without the kwok node.
async fn setup(prefix: &str) -> Option<(kube::Client, String)> {
    let client = support::client().await;
    if !support::require_kwok(&client).await {
        return None;
    }
    support::install_crds(&client).await.expect("install CRDs");
    let ns = support::namespace(&client, prefix).await;
    gcs::kanister_profile(&client, &ns, PROFILE, BUCKET)
        .await
        .expect("create the gcs Profile");
    Some((client, ns))
}

/// restic's snapshot files of the repository at `prefix`.
fn snapshot_objects(prefix: &str) -> Vec<String> {
    gcs::list(BUCKET, &format!("{prefix}/snapshots/"))
}

/// BackupData, RestoreData by ID (byte-compared), DeleteData with reclaimSpace, then
/// LocationDelete of the repository: at each step the bucket holds what it should.
#[tokio::test]
async fn backup_restore_delete_on_gcs() -> anyhow::Result<()> {
    let Some((client, ns)) = setup("data-gcs").await else {
        return Ok(());
    };
    let pod = support::data_plane::app_pod(&client, &ns).await?;
    let p = app_params(&ns, PROFILE).await?;
    assert_eq!(p["Profile"]["Location"]["Type"], "gcs");
    let c = ctx(&ns);
    let dir = TempDir::new("gcs");
    let src = dir.0.join("src");
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

    let out = call_with(
        &c,
        "BackupData",
        json!({"namespace": ns, "pod": pod, "container": "app",
               "includePath": src.to_str().unwrap(), "backupArtifactPrefix": prefix,
               "encryptionKey": key}),
        &p,
    )
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

    let pv = vol_data_pvc(&client, &ns, "restore-target").await?;
    let by_id = dir.0.join("by-id");
    let r = call_with(
        &c,
        "RestoreData",
        json!({"namespace": ns, "image": "ghcr.io/kanisterio/kanister-tools:0.116.0",
               "backupArtifactPrefix": prefix, "backupIdentifier": id, "encryptionKey": key,
               "restorePath": by_id.to_str().unwrap(),
               "volumes": {"restore-target": "/mnt/restore-target"}}),
        &p,
    )
    .await?;
    assert!(r.is_empty(), "{r:?}");
    assert_same_tree(&src, &restored_root(&by_id, &src));

    let d = call_with(
        &c,
        "DeleteData",
        json!({"namespace": ns, "backupArtifactPrefix": prefix, "backupID": id,
               "encryptionKey": key, "reclaimSpace": "true"}),
        &p,
    )
    .await?;
    assert_ne!(out_str(&d, "spaceFreed"), "0 B", "{d:?}");
    assert!(snapshot_objects(&prefix).is_empty());

    // LocationDelete of the repository, by the controller's own client.
    let siblings = format!("{ns}/backup-other/keep");
    let gcs_client = gcs::client(BUCKET);
    let sibling = blueprint_operator::aws::upload::Upload::new(&gcs_client, BUCKET, &siblings);
    blueprint_operator::aws::upload::upload(&sibling, &mut &b"x"[..], std::future::pending())
        .await?;
    call_with(
        &c,
        "LocationDelete",
        json!({"artifact": format!("{BUCKET}/{prefix}")}),
        &p,
    )
    .await?;
    assert_eq!(gcs::list(BUCKET, &format!("{ns}/")), [siblings]);
    support::function_pods_gone(&client, &ns).await?;
    delete_pv(&client, &pv).await;
    Ok(())
}

/// A missing bucket and a key the token endpoint refuses fail BackupData with what to fix,
/// and make nothing in the store.
#[tokio::test]
async fn gcs_failures_are_named() -> anyhow::Result<()> {
    let Some((client, ns)) = setup("data-gcs-err").await else {
        return Ok(());
    };
    let pod = support::data_plane::app_pod(&client, &ns).await?;
    let p = app_params(&ns, PROFILE).await?;
    let c = ctx(&ns);
    let dir = TempDir::new("gcs-err");
    support::data_plane::write_files(&dir.0, &[("a", b"a".to_vec())]);
    let backup = json!({"namespace": ns, "pod": pod, "container": "app",
        "includePath": dir.0.to_str().unwrap(), "backupArtifactPrefix": format!("{ns}/x"),
        "encryptionKey": "k"});

    let mut wrong: Value = p.clone();
    wrong["Profile"]["Credential"]["KeyPair"]["Secret"] = json!(gcs::key_json_with(include_str!(
        "../../src/gcs/testdata/other-key.pem"
    )));
    let e = call_with(&c, "BackupData", backup.clone(), &wrong)
        .await
        .expect_err("refused key")
        .to_string();
    assert!(e.contains("Invalid JWT Signature"), "{e}");

    let mut bad: Value = p.clone();
    bad["Profile"]["Credential"]["KeyPair"]["Secret"] = json!("not a key");
    let e = call_with(&c, "BackupData", backup.clone(), &bad)
        .await
        .expect_err("bad key")
        .to_string();
    assert!(e.contains("is not a service account's JSON key"), "{e}");

    let mut missing: Value = p.clone();
    missing["Profile"]["Location"]["Bucket"] = json!("bpo-no-such-gcs-bucket");
    let e = call_with(&c, "LocationDelete", json!({"artifact": "x"}), &missing)
        .await
        .expect_err("missing bucket")
        .to_string();
    assert!(e.contains("bpo-no-such-gcs-bucket"), "{e}");
    assert!(e.contains("check the Profile's location.bucket"), "{e}");
    assert!(gcs::list(BUCKET, &format!("{ns}/")).is_empty());
    support::function_pods_gone(&client, &ns).await?;
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
    let path = format!(
        "{}:{}",
        restic_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let tmp = TempDir::new("gcs-local");
    let run = |cmd: ResticCommand| -> String {
        use std::io::Write as _;
        let mut child = std::process::Command::new(&cmd.argv[0])
            .args(&cmd.argv[1..])
            .env("PATH", &path)
            .env("TMPDIR", &tmp.0)
            .env("RESTIC_CACHE_DIR", tmp.0.join("cache"))
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("bash");
        child
            .stdin
            .take()
            .expect("stdin")
            .write_all(cmd.stdin.as_bytes())
            .expect("environment");
        let out = child.wait_with_output().expect("wait");
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
