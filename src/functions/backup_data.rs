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
//! detection, the gcs key in a private file); an empty `encryptionKey` is
//! refused up front (restic would refuse it anyway).

use serde_json::Value;

use super::args::Args;
use super::context::Context;
use super::data::{BackupArgs, backup_output, non_empty};
use super::error::FunctionError;
use crate::phase_output::Output;
use crate::restic::{self, Target};

const NAME: &str = "BackupData";

pub async fn run(ctx: &Context, a: &Args<'_>, params: &Value) -> Result<Output, FunctionError> {
    let namespace = non_empty(a, "namespace")?;
    let pod = non_empty(a, "pod")?;
    let args = BackupArgs::read(a, params)?;
    let target = Target {
        namespace: &namespace,
        pod: &pod,
        container: Some(&args.container),
    };
    let repo = args.repository(&args.prefix);
    let b = restic::Restic::new(&ctx.client, NAME, target)
        .backup(&repo, &args.include_path)
        .await
        .map_err(|e| e.wrap("Failed to backup data"))?;
    Ok(backup_output(&b))
}
