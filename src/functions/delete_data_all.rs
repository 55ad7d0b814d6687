//! DeleteDataAll (Kanister `pkg/function/delete_data_all.go`): forget every
//! snapshot of `backupInfo` (BackupDataAll's `BackupAllInfo`), each from its
//! pod's repository `<backupArtifactPrefix>/<pod>`, from one helper pod
//! (`delete-data-all-…`, `image`, default the kanister-tools image), as
//! DeleteData does with `backupID` ([`super::restic::forget`]); with
//! `reclaimSpace: true`, `restic prune` after each forget.
//!
//! Output: `spaceFreed`, the bytes prune reported freeing in all
//! repositories, as "<n> B" (Kanister returns DeleteData's output).
//!
//! Differences from Kanister: `image` and `podOverride` are accepted as by
//! this executor's DeleteData (Kanister's `Arguments()` lists neither; it
//! always uses the tools image); an empty `backupInfo` is an argument error
//! worded for it (Kanister: "Require one argument: backupID or backupTag").

use serde_json::Value;

use super::args::Args;
use super::context::Context;
use super::data::{ForgetArgs, non_empty, parse_backup_info, pod_prefix};
use super::error::FunctionError;
use crate::phase_output::Output;
use crate::restic::Snapshot;

const NAME: &str = "DeleteDataAll";
/// Kanister's `deleteDataAllJobPrefix`.
pub const JOB_PREFIX: &str = "delete-data-all-";

pub async fn run(ctx: &Context, a: &Args<'_>, params: &Value) -> Result<Output, FunctionError> {
    let namespace = non_empty(a, "namespace")?;
    let prefix = non_empty(a, "backupArtifactPrefix")?;
    let infos = parse_backup_info(NAME, &a.string("backupInfo")?)?;
    let f = ForgetArgs::read(a, ctx, params)?;
    let mut pairs = Vec::new();
    for (pod, info) in &infos {
        if info.backup_id.is_empty() {
            return Err(FunctionError::arg(
                NAME,
                "backupInfo",
                format!("the entry of pod {pod} has no BackupID"),
            ));
        }
        let repo = f.repository(&pod_prefix(&prefix, pod));
        pairs.push((repo, Snapshot::Id(info.backup_id.clone())));
    }
    if pairs.is_empty() {
        return Err(FunctionError::arg(
            NAME,
            "backupInfo",
            "lists no backups (Require one argument: backupID or backupTag)",
        ));
    }
    f.forget_in_pod(ctx, NAME, &namespace, JOB_PREFIX, &pairs)
        .await
}
