//! What the restic data functions share (as Kanister's `pkg/function/utils.go`): the Profile
//! read for a function, the `encryptionKey` argument, required non-empty arguments, and the
//! BackupData outputs.

use serde_json::{Value, json};

use super::args::Args;
use super::error::FunctionError;
use crate::param::profile::Profile;
use crate::phase_output::Output;
use crate::restic;

/// [`Profile::from_params`] for a function: its error reads `<function>: <context>: <why>` as the
/// Kanister function wraps it, or `<function>: <why>` with an empty `context`.
pub fn profile(
    function: &'static str,
    params: &Value,
    context: &str,
) -> Result<Profile, FunctionError> {
    Profile::from_params(params).map_err(|e| {
        let why = if context.is_empty() {
            e.to_string()
        } else {
            format!("{context}: {e}")
        };
        FunctionError::failed(function, why)
    })
}

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
    use serde_json::json;

    const NAME: &str = "BackupData";

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
