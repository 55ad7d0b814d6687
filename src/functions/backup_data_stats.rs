//! BackupDataStats (Kanister `pkg/function/backup_data_stats.go`): what a
//! restic snapshot made by BackupData/CopyVolumeData holds, from a helper
//! pod (`backup-data-stats-…` in `namespace`, `image`, default the
//! kanister-tools image) running `restic stats <backupID> --mode <statsMode>`
//! against `<bucket>/<backupArtifactPrefix>`.
//!
//! `statsMode` is one of restic's counting modes: `restore-size` (default),
//! `files-by-contents`, `blobs-per-file`, `raw-data`.
//!
//! Outputs (Kanister's keys): `mode` (as restic names it), `fileCount`
//! (restic's "Total File Count", in `raw-data` mode its "Total Blob Count"),
//! `size` (restic's "Total Size", e.g. "97.659 KiB") and `version`
//! ("v0.0.0"). When restic prints no count or size (e.g. no snapshot
//! `backupID` in the repository: restic then ignores the ID and counts
//! nothing) the phase fails with "Failed to parse snapshot stats from logs".
//!
//! Differences from Kanister: see [`super::restic`] (quoting, gcs key file);
//! an unknown `statsMode` or an empty `encryptionKey` is refused before any
//! pod is made (Kanister lets restic fail on it); the parse failure says
//! what restic printed on stderr; values are trimmed (restic pads "0 B  ").
//! As in Kanister there is no `insecureTLS` argument: `restic stats` runs
//! with TLS verification on.

use serde_json::{Value, json};

use super::args::Args;
use super::context::Context;
use super::data::{self, OUTPUT_VERSION, encryption_key, non_empty};
use super::error::FunctionError;
use crate::phase_output::Output;
use crate::pods::helper as data_pod;
use crate::restic::{self, Repository};

const NAME: &str = "BackupDataStats";
/// Kanister's `backupDataStatsJobPrefix`.
pub const JOB_PREFIX: &str = "backup-data-stats-";
/// Kanister's `defaultStatsMode`.
pub const DEFAULT_MODE: &str = "restore-size";
/// restic's counting modes (`restic stats --mode`).
pub const MODES: &[&str] = &[
    "restore-size",
    "files-by-contents",
    "blobs-per-file",
    "raw-data",
];

/// `statsMode`, default `restore-size`; anything but restic's modes is refused.
pub fn stats_mode(a: &Args) -> Result<String, FunctionError> {
    let mode = a
        .opt_string("statsMode")?
        .unwrap_or_else(|| DEFAULT_MODE.to_string());
    if !MODES.contains(&mode.as_str()) {
        return Err(FunctionError::arg(
            NAME,
            "statsMode",
            format!(
                "unknown mode {mode:?}: restic stats counts in one of {} (default {DEFAULT_MODE})",
                MODES.join(", ")
            ),
        ));
    }
    Ok(mode)
}

/// The phase output of one `restic stats` run, or Kanister's parse failure.
pub fn outputs(stdout: &str, stderr: &str) -> Result<Output, FunctionError> {
    let st = restic::snapshot_stats_from_stats_log(stdout);
    if st.file_count.is_empty() || st.size.is_empty() {
        let mut why = "Failed to parse snapshot stats from logs".to_string();
        let stderr = stderr.trim();
        if !stderr.is_empty() {
            why.push_str(&format!(" (restic stderr: {stderr})"));
        }
        why.push_str(&format!("; restic stats printed: {}", stdout.trim()));
        return Err(FunctionError::failed(NAME, why));
    }
    Ok(
        match json!({
            "mode": st.mode,
            "fileCount": st.file_count,
            "size": st.size,
            "version": OUTPUT_VERSION,
        }) {
            Value::Object(m) => m,
            _ => Output::new(),
        },
    )
}

pub async fn run(ctx: &Context, a: &Args<'_>, params: &Value) -> Result<Output, FunctionError> {
    let namespace = non_empty(a, "namespace")?;
    let prefix = non_empty(a, "backupArtifactPrefix")?;
    let id = non_empty(a, "backupID")?;
    let mode = stats_mode(a)?;
    let key = encryption_key(a)?;
    let image = super::data::image_or_tools(a)?;
    let extras = super::data::pod_extras(a, ctx)?;
    let profile = data::profile(NAME, params, "Failed to validate Profile")?;
    let repo = Repository::new(&profile, &prefix, &key, false);
    let cmd = repo
        .stats_command(&id, &mode)
        .map_err(|e| FunctionError::failed(NAME, e.to_string()))?;
    let opts = extras.options(&namespace, JOB_PREFIX, &image, Default::default());
    let r = data_pod::run_in(ctx.pods(), NAME, &opts, async |target| {
        restic::Restic::new(&ctx.client, NAME, *target)
            .exec(&cmd)
            .await
            .map_err(|e| e.wrap("Failed to get backup stats"))
    })
    .await?;
    outputs(&r.stdout, &r.stderr)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mode_defaults_and_is_checked() {
        let m = json!({});
        assert_eq!(
            stats_mode(&Args::new(NAME, m.as_object().unwrap())).unwrap(),
            "restore-size"
        );
        let m = json!({"statsMode": "raw-data"});
        assert_eq!(
            stats_mode(&Args::new(NAME, m.as_object().unwrap())).unwrap(),
            "raw-data"
        );
        let m = json!({"statsMode": "Raw-Data"});
        let e = stats_mode(&Args::new(NAME, m.as_object().unwrap()))
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("BackupDataStats: argument `statsMode`: unknown mode \"Raw-Data\""),
            "{e}"
        );
        assert!(e.contains("blobs-per-file"), "{e}");
    }

    #[test]
    fn outputs_have_kanisters_keys() {
        let out = outputs(
            "scanning...\nStats in raw-data mode:\n  Total Blob Count:  4\n  Total Size:  1.000 KiB\n",
            "",
        )
        .unwrap();
        let keys: Vec<&str> = out.keys().map(String::as_str).collect();
        assert_eq!(keys, ["mode", "fileCount", "size", "version"]);
        assert_eq!(out["mode"], "raw-data");
        assert_eq!(out["fileCount"], "4");
        assert_eq!(out["size"], "1.000 KiB");
        assert_eq!(out["version"], "v0.0.0");
        let e = outputs(
            "Stats in restore-size mode:\n  Snapshots processed:  0\n  Total Size:  0 B  \n",
            "Ignoring \"abc\": no matching ID found for prefix \"abc\"\n",
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.starts_with("BackupDataStats: Failed to parse snapshot stats from logs (restic stderr: Ignoring \"abc\": no matching ID"),
            "{e}"
        );
    }
}
