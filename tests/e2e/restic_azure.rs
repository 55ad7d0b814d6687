//! restic's azure backend (restic 0.18 of tools/data-plane), run with the command lines and the
//! environment the restic functions (BackupData, RestoreData, DeleteData, CopyVolumeData,
//! BackupDataStats and their `All` forms) give it for an azure Profile (`src/restic.rs`), against
//! Azurite, which checks restic's Shared Key signatures. restic reaches only
//! `https://<account>.blob.<AZURE_ENDPOINT_SUFFIX>/`: the Profile's `location.endpoint` is the
//! suffix `localhost:<port>`, and the test adds what a pod on Azure would not need, the proxy
//! that reaches that name here and the emulator's certificate (`support::azurite`). No
//! Kubernetes: the commands run on this machine, as kwok's exec runs them in the e2e tests.
//!
//! One concession to the emulator: restic 0.18 sends `x-ms-access-tier:` empty when no tier is
//! configured, which Azure ignores and Azurite refuses (400 InvalidHeaderValue on every Put
//! Block List), so the `restic` on this test's PATH is a wrapper adding
//! `-o azure.access-tier=Hot` (Azure's default tier) before the functions' own arguments.

use crate::support;
use crate::support::azurite::{self, ACCOUNT, KEY, WRONG_KEY};
use blueprint_operator::param::profile::Profile;
use blueprint_operator::restic::{
    Repository, ResticCommand, Snapshot, snapshot_id_from_backup_log, snapshot_id_from_snapshot_log,
};
use serde_json::{Value, json};

/// An azure Profile with a `secrets.kanister.io/azure` Secret, as the executor's `.Profile`.
fn profile(container: &str, key: &str) -> Profile {
    use base64::Engine as _;
    let b = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
    let p = json!({"Profile": {
        "Location": {"Type": "azure", "Bucket": container, "Endpoint": azurite::azurite().suffix,
                     "Prefix": "", "Region": ""},
        "Credential": {"Type": "secret", "Secret": {"type": "secrets.kanister.io/azure",
            "metadata": {"name": "azure-creds"},
            "data": {"azure_storage_account_id": b(ACCOUNT), "azure_storage_key": b(key)}}},
    }});
    Profile::from_params(&p).expect("azure profile")
}

/// Runs `cmd` as the functions' exec does (its stdin carries the environment); exit status,
/// stdout, stderr.
fn exec(cmd: &ResticCommand, dir: &std::path::Path) -> (bool, String, String) {
    use std::os::unix::fs::PermissionsExt as _;
    let az = azurite::azurite();
    let bin = dir.join("bin");
    let wrapper = bin.join("restic");
    if !wrapper.exists() {
        std::fs::create_dir_all(&bin).expect("bin dir");
        let script = format!(
            "#!/bin/sh\nexec '{}' -o azure.access-tier=Hot \"$@\"\n",
            support::data_plane::restic().display()
        );
        std::fs::write(&wrapper, script).expect("restic wrapper");
        std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    }
    let out = support::data_plane::run_locally(
        cmd,
        [
            ("PATH", support::data_plane::path_with(&bin).into()),
            ("HTTPS_PROXY", az.proxy.clone().into()),
            ("RESTIC_CACERT", az.ca.clone().into_os_string()),
            ("RESTIC_CACHE_DIR", dir.join("cache").into_os_string()),
        ],
    );
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn ok(cmd: ResticCommand, dir: &std::path::Path) -> String {
    let (ok, out, err) = exec(&cmd, dir);
    assert!(ok, "{cmd:?} failed: {err}\n{out}");
    out
}

/// init, backup (a tree with an empty file and a 3 MiB file), restore by ID and by tag, byte
/// for byte; forget + prune (DeleteData) leave no snapshot; the blobs are where Kanister's
/// `azure:<container>:/<artifact prefix>/` puts them. A wrong key is refused by the service.
#[test]
fn backup_restore_delete_through_restics_azure_backend() {
    let container = "bpo-restic-azure";
    crate::kando::rt()
        .block_on(azurite::create_container(container))
        .expect("container");
    let dir = std::env::temp_dir().join(format!("bpo-restic-azure-{}", std::process::id()));
    let (src, cache) = (dir.join("src"), dir.clone());
    let big: Vec<u8> = (0..3u32 << 20)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    support::data_plane::write_files(
        &src,
        &[
            ("a.txt", b"hello azure\n".to_vec()),
            ("empty", vec![]),
            ("sub/big.bin", big.clone()),
        ],
    );
    let prof = profile(container, KEY);
    let repo = Repository::new(&prof, "backups/app", "enc-key", false);
    assert_eq!(
        repo.url().unwrap(),
        format!("azure:{container}:/backups/app/")
    );

    ok(repo.init_command().unwrap(), &cache);
    let log = ok(
        repo.backup_command("tag-az", src.to_str().expect("utf-8"))
            .unwrap(),
        &cache,
    );
    let id = snapshot_id_from_backup_log(&log);
    assert!(!id.is_empty(), "no snapshot ID in: {log}");
    for (i, snap) in [Snapshot::Id(id.clone()), Snapshot::Tag("tag-az".into())]
        .iter()
        .enumerate()
    {
        let target = dir.join(format!("restore-{i}"));
        ok(
            repo.restore_command(snap, target.to_str().expect("utf-8"))
                .unwrap(),
            &cache,
        );
        let root = target.join(src.strip_prefix("/").expect("absolute"));
        assert_eq!(std::fs::read(root.join("a.txt")).unwrap(), b"hello azure\n");
        assert_eq!(std::fs::read(root.join("empty")).unwrap(), b"");
        assert!(
            std::fs::read(root.join("sub/big.bin")).unwrap() == big,
            "big.bin differs"
        );
    }
    let names = crate::kando::rt().block_on(azurite::list(container, "backups/app/"));
    assert!(names.iter().any(|n| n == "backups/app/config"), "{names:?}");
    assert!(
        names
            .iter()
            .any(|n| n.starts_with("backups/app/snapshots/")),
        "{names:?}"
    );

    let snaps = ok(repo.snapshots_by_tag_command("tag-az").unwrap(), &cache);
    assert!(id.starts_with(&snapshot_id_from_snapshot_log(&snaps).unwrap()));
    ok(repo.forget_command(&id).unwrap(), &cache);
    ok(repo.prune_command().unwrap(), &cache);
    let left: Vec<Value> =
        serde_json::from_str(&ok(repo.latest_snapshots_command().unwrap(), &cache)).unwrap();
    assert!(left.is_empty(), "{left:?}");

    let wrong = Repository::new(
        &profile(container, WRONG_KEY),
        "backups/app",
        "enc-key",
        false,
    );
    let (ok, _, err) = exec(&wrong.latest_snapshots_command().unwrap(), &cache);
    assert!(!ok);
    assert!(
        err.contains("403")
            || err.contains("AuthenticationFailed")
            || err.contains("AuthorizationFailure"),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(dir);
}
