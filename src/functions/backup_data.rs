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
use super::data::{self, backup_output, encryption_key, non_empty};
use super::error::FunctionError;
use crate::phase_output::Output;
use crate::restic::{self, Repository, Target};

const NAME: &str = "BackupData";

pub async fn run(ctx: &Context, a: &Args<'_>, params: &Value) -> Result<Output, FunctionError> {
    let namespace = non_empty(a, "namespace")?;
    let pod = non_empty(a, "pod")?;
    let container = non_empty(a, "container")?;
    let include_path = non_empty(a, "includePath")?;
    let prefix = non_empty(a, "backupArtifactPrefix")?;
    let key = encryption_key(a)?;
    let insecure_tls = a.flag("insecureTLS")?;
    let profile = data::profile(NAME, params, "Failed to validate Profile")?;
    let repo = Repository::new(&profile, &prefix, &key, insecure_tls);
    let target = Target {
        namespace: &namespace,
        pod: &pod,
        container: Some(&container),
    };
    let b = restic::backup(&ctx.client, NAME, &target, &repo, &include_path)
        .await
        .map_err(|e| e.wrap("Failed to backup data"))?;
    Ok(backup_output(&b))
}
