//! BackupData (Kanister `pkg/function/backup_data.go`): back up `includePath`
//! of a container of a running pod into a restic repository on the
//! Profile's object store (`<bucket>/<backupArtifactPrefix>`), by exec'ing
//! restic in that container: `restic snapshots` (else `restic init`), then
//! `restic backup --tag <random tag> <includePath>`.
//!
//! Outputs (Kanister's keys): `backupID` (restic snapshot ID), `backupTag`,
//! `fileCount`, `size`, `phySize` (as restic prints them, e.g. "3.000 MiB";
//! empty when restic did not report them) and `version` ("v0.0.0").
//!
//! Differences from Kanister: see [`super::restic`] (quoting, wrong key
//! detection, gcs refused); an empty `encryptionKey` is refused up front
//! (restic would refuse it anyway). GCS credentials files are not written.

use serde_json::{Value, json};

use super::args::Args;
use super::profile;
use super::restic::{self, Repository, Target};
use super::{Context, FunctionError, Output};

const NAME: &str = "BackupData";

/// Kanister's `FunctionOutputVersion` value (`kanister.DefaultVersion`).
pub const OUTPUT_VERSION: &str = "v0.0.0";

/// `encryptionKey`, Kanister's default when absent; empty is an error.
pub fn encryption_key(a: &Args) -> Result<String, FunctionError> {
    match a.opt_string("encryptionKey")? {
        None => Ok(restic::DEFAULT_ENCRYPTION_KEY.to_string()),
        Some(k) if k.is_empty() => Err(FunctionError::arg(
            a.function,
            "encryptionKey",
            "must not be empty (omit it to use Kanister's default key; restic refuses empty passwords)",
        )),
        Some(k) => Ok(k),
    }
}

/// A required string argument that must not be empty.
pub fn non_empty(a: &Args, name: &str) -> Result<String, FunctionError> {
    let v = a.string(name)?;
    if v.trim().is_empty() {
        return Err(FunctionError::arg(a.function, name, "must not be empty"));
    }
    Ok(v)
}

pub async fn run(ctx: &Context, a: &Args<'_>, params: &Value) -> Result<Output, FunctionError> {
    let namespace = non_empty(a, "namespace")?;
    let pod = non_empty(a, "pod")?;
    let container = non_empty(a, "container")?;
    let include_path = non_empty(a, "includePath")?;
    let prefix = non_empty(a, "backupArtifactPrefix")?;
    let key = encryption_key(a)?;
    let insecure_tls = a.flag("insecureTLS")?;
    let profile = profile::for_function(NAME, params, "Failed to validate Profile")?;
    let repo = Repository::new(&profile, &prefix, &key, insecure_tls);
    let target = Target {
        namespace: &namespace,
        pod: &pod,
        container: Some(&container),
    };
    let b = restic::backup(ctx, NAME, &target, &repo, &include_path)
        .await
        .map_err(|e| restic::wrap(NAME, "Failed to backup data", e))?;
    Ok(backup_output(&b))
}

/// The BackupData outputs of a [`restic::BackupResult`].
pub fn backup_output(b: &restic::BackupResult) -> Output {
    let v = json!({
        "backupID": b.id,
        "backupTag": b.tag,
        "fileCount": b.stats.file_count,
        "size": b.stats.size,
        "phySize": b.stats.phy_size,
        "version": OUTPUT_VERSION,
    });
    match v {
        Value::Object(m) => m,
        _ => Output::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outputs_have_kanisters_keys() {
        let b = restic::BackupResult {
            id: "abc".into(),
            tag: "t".into(),
            stats: restic::BackupStats {
                file_count: "3".into(),
                size: "1 KiB".into(),
                phy_size: "2 KiB".into(),
            },
        };
        let out = backup_output(&b);
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
        assert_eq!(out["version"], "v0.0.0");
    }

    #[test]
    fn encryption_key_defaults_and_rejects_empty() {
        let m = json!({});
        assert_eq!(
            encryption_key(&Args::new(NAME, m.as_object().unwrap())).unwrap(),
            restic::DEFAULT_ENCRYPTION_KEY
        );
        let m = json!({"encryptionKey": ""});
        let e = encryption_key(&Args::new(NAME, m.as_object().unwrap()))
            .unwrap_err()
            .to_string();
        assert!(e.contains("`encryptionKey`: must not be empty"), "{e}");
        let m = json!({"encryptionKey": 1234});
        assert_eq!(
            encryption_key(&Args::new(NAME, m.as_object().unwrap())).unwrap(),
            "1234"
        );
    }
}
