//! CopyVolumeData (Kanister `pkg/function/copy_volume_data.go`): back up a
//! PVC into a restic repository (`<bucket>/<dataArtifactPrefix>`) from a
//! helper pod (`copy-vol-data-…`, `image`, default the kanister-tools image)
//! that mounts the PVC at `mountPath` (default Kanister's
//! `/mnt/vol_data/<pvc>`, read-only when the PVC is ReadOnlyMany).
//!
//! Outputs (Kanister's keys): `backupID`, `backupRoot` (the mount point, the
//! path inside the snapshot), `backupArtifactLocation` (the resolved
//! repository path `bucket/prefix`), `backupTag`, `fileCount`, `size`,
//! `phySize`, `version`. RestoreData with `backupArtifactPrefix:
//! <backupArtifactLocation>`, `backupTag`/`backupIdentifier` and `volumes:
//! {<pvc>: <backupRoot>}` puts the data back.
//!
//! Differences from Kanister: see [`super::restic`].

use std::collections::BTreeMap;

use serde_json::Value;

use super::args::Args;
use super::context::Context;
use super::data::{self, backup_output, encryption_key, non_empty};
use super::error::FunctionError;
use crate::phase_output::Output;
use crate::pods::helper as data_pod;
use crate::restic::{self, Repository};

const NAME: &str = "CopyVolumeData";
/// Kanister's `CopyVolumeDataJobPrefix`.
pub const JOB_PREFIX: &str = "copy-vol-data-";

/// Kanister's `CopyVolumeDataMountPoint`: where the PVC is mounted by default.
pub fn default_mount_point(pvc: &str) -> String {
    format!("/mnt/vol_data/{pvc}")
}

pub async fn run(ctx: &Context, a: &Args<'_>, params: &Value) -> Result<Output, FunctionError> {
    let namespace = non_empty(a, "namespace")?;
    let pvc = non_empty(a, "volume")?;
    let prefix = non_empty(a, "dataArtifactPrefix")?;
    let key = encryption_key(a)?;
    let insecure_tls = a.flag("insecureTLS")?;
    let image = super::data::image_or_tools(a)?;
    let mount_point = a
        .opt_string("mountPath")?
        .filter(|s| !s.trim().is_empty())
        .unwrap_or_else(|| default_mount_point(&pvc));
    let extras = super::data::pod_extras(a, ctx)?;
    let profile = data::profile(NAME, params, "Failed to validate Profile")?;
    let repo = Repository::new(&profile, &prefix, &key, insecure_tls);
    let mount = data_pod::pvc_mount(&ctx.client, NAME, &namespace, &pvc, &mount_point).await?;
    let opts = extras.options(
        &namespace,
        JOB_PREFIX,
        &image,
        BTreeMap::from([(pvc, mount)]),
    );
    let b = data_pod::run_in(ctx.pods(), NAME, &opts, async |target| {
        restic::Restic::new(&ctx.client, NAME, *target)
            .backup(&repo, &mount_point)
            .await
    })
    .await?;
    let mut out = backup_output(&b);
    out.insert("backupRoot".into(), Value::String(mount_point));
    out.insert(
        "backupArtifactLocation".into(),
        Value::String(repo.path.clone()),
    );
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_mount_point_is_kanisters() {
        assert_eq!(default_mount_point("data"), "/mnt/vol_data/data");
    }
}
