//! RestoreData (Kanister `pkg/function/restore_data.go`): restore a restic
//! snapshot (by `backupIdentifier` or, the latest with, `backupTag`) made by
//! BackupData/CopyVolumeData into `restorePath` (default `/`) of a new helper
//! pod (`restore-data-…`, `image`, `sh -c "tail -f /dev/null"`) that mounts
//! either the PVCs of `pod` (from the `.Deployment`/`.StatefulSet` template
//! parameters, at the mount paths the pod uses) or `volumes` (PVC → mount
//! path). Exactly one of `pod`/`volumes` and one of `backupTag`/
//! `backupIdentifier` must be given. The phase output is whatever
//! phase-output lines restic printed (normally none).
//!
//! Differences from Kanister: see [`super::restic`]; `backupPath` (listed by
//! Kanister's `Arguments()` at HEAD) is accepted and not used by the restic
//! data mover.

use serde_json::Value;

use super::args::Args;
use super::context::Context;
use super::data::{self, encryption_key, fetch_pod_volumes, non_empty, restore_path, snapshot_arg};
use super::error::FunctionError;
use crate::phase_output::Output;
use crate::pods::helper as data_pod;
use crate::restic::{self, Repository};

const NAME: &str = "RestoreData";
/// Kanister's `restoreDataJobPrefix`.
pub const JOB_PREFIX: &str = "restore-data-";

pub async fn run(ctx: &Context, a: &Args<'_>, params: &Value) -> Result<Output, FunctionError> {
    let namespace = non_empty(a, "namespace")?;
    let image = non_empty(a, "image")?;
    let prefix = non_empty(a, "backupArtifactPrefix")?;
    let extras = super::data::pod_extras(a, ctx)?;
    let restore_path = restore_path(a)?;
    let key = encryption_key(a)?;
    let pod = a.opt_string("pod")?.unwrap_or_default();
    let vols = a.opt_string_map("volumes")?.unwrap_or_default();
    if pod.is_empty() == vols.is_empty() {
        return Err(FunctionError::failed(
            NAME,
            "Require one argument: pod or volumes",
        ));
    }
    let snapshot = snapshot_arg(a, "backupTag", "backupIdentifier")?;
    let insecure_tls = a.flag("insecureTLS")?;
    let profile = data::profile(NAME, params, "")?;
    let repo = Repository::new(&profile, &prefix, &key, insecure_tls);
    let vols = if vols.is_empty() {
        fetch_pod_volumes(&pod, params).map_err(|e| FunctionError::failed(NAME, e.to_string()))?
    } else {
        vols
    };
    let volumes = data_pod::pvc_mounts(&ctx.client, NAME, &namespace, &vols).await?;
    let opts = extras.options(&namespace, JOB_PREFIX, &image, volumes);
    let r = data_pod::run_in(ctx.pods(), NAME, &opts, async |target| {
        restic::Restic::new(&ctx.client, NAME, *target)
            .restore(&repo, &snapshot, &restore_path)
            .await
    })
    .await?;
    Ok(r.phase_output(NAME)
        .map_err(|e| e.wrap("Failed to parse phase output"))?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::restic::Snapshot;
    use serde_json::json;

    #[test]
    fn tag_xor_identifier() {
        let m = json!({"backupTag": "t"});
        let a = Args::new(NAME, m.as_object().unwrap());
        assert_eq!(
            snapshot_arg(&a, "backupTag", "backupIdentifier").unwrap(),
            Snapshot::Tag("t".into())
        );
        let m = json!({"backupIdentifier": "abc", "backupTag": ""});
        let a = Args::new(NAME, m.as_object().unwrap());
        assert_eq!(
            snapshot_arg(&a, "backupTag", "backupIdentifier").unwrap(),
            Snapshot::Id("abc".into())
        );
        for m in [
            json!({}),
            json!({"backupTag": "t", "backupIdentifier": "i"}),
        ] {
            let a = Args::new(NAME, m.as_object().unwrap());
            let e = snapshot_arg(&a, "backupTag", "backupIdentifier")
                .unwrap_err()
                .to_string();
            assert_eq!(
                e,
                "RestoreData: Require one argument: backupTag or backupIdentifier"
            );
        }
    }

    #[test]
    fn pod_volumes_come_from_the_workload_params() {
        let p = json!({"StatefulSet": {"PersistentVolumeClaims": {"db-0": {"data-db-0": "/var/lib/db"}}}});
        let v = fetch_pod_volumes("db-0", &p).unwrap();
        assert_eq!(v["data-db-0"], "/var/lib/db");
        assert_eq!(
            fetch_pod_volumes("db-1", &p).unwrap_err().to_string(),
            "Failed to find volumes for the Pod: db-1"
        );
        assert!(
            fetch_pod_volumes("x", &json!({}))
                .unwrap_err()
                .to_string()
                .starts_with("Invalid Template Params")
        );
    }
}
