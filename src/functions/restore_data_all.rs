//! RestoreDataAll (Kanister `pkg/function/restore_data_all.go`): for every
//! pod (`pods`, space-separated, or the ActionSet's Deployment's or
//! StatefulSet's pods), concurrently, restore that pod's snapshot of
//! `backupInfo` (BackupDataAll's `BackupAllInfo`) from the repository
//! `<backupArtifactPrefix>/<pod>` into `restorePath` (default `/`) of a
//! helper pod (`restore-data-all-…`, `image`) that mounts the pod's PVCs at
//! the pod's mount paths, as RestoreData does with `pod` (its helpers:
//! [`super::data::fetch_pod_volumes`], [`crate::pods::helper`],
//! [`super::restic::restore`]). The output merges what the restores printed
//! as phase output (normally nothing).
//!
//! Differences from Kanister: a pod missing from `backupInfo` fails naming
//! the pods it has (Kanister restores with an empty ID and fails in restic);
//! no pods at all is an error (as in BackupDataAll).

use std::collections::BTreeMap;

use futures::future::join_all;
use serde_json::Value;

use super::args::Args;
use super::context::Context;
use super::data::{
    self, BackupInfo, encryption_key, fetch_pod_volumes, non_empty, parse_backup_info,
    per_pod_errors, pod_prefix, restore_path, target_pods,
};
use super::error::FunctionError;
use crate::phase_output::Output;
use crate::pods::helper::{self as data_pod, PodExtras};
use crate::restic::{self, Repository, Snapshot};

const NAME: &str = "RestoreDataAll";
/// Kanister's `restoreDataAllJobPrefix`.
pub const JOB_PREFIX: &str = "restore-data-all-";

/// Why `backupInfo` has no snapshot of a pod.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NoSnapshot {
    #[error("backupInfo has no BackupID for pod {0}")]
    NoId(String),
    #[error(
        "backupInfo has no backup of pod {pod} (it has: {has}); restore the pods that were backed up (`pods`)"
    )]
    NoPod { pod: String, has: String },
}

/// The snapshot of `pod` in `infos`.
pub fn snapshot_of(infos: &BTreeMap<String, BackupInfo>, pod: &str) -> Result<String, NoSnapshot> {
    match infos.get(pod) {
        Some(i) if !i.backup_id.is_empty() => Ok(i.backup_id.clone()),
        Some(_) => Err(NoSnapshot::NoId(pod.to_string())),
        None => Err(NoSnapshot::NoPod {
            pod: pod.to_string(),
            has: infos.keys().cloned().collect::<Vec<_>>().join(", "),
        }),
    }
}

/// Everything one pod's restore needs besides the pod.
struct Job<'a> {
    ctx: &'a Context,
    namespace: &'a str,
    image: &'a str,
    restore_path: &'a str,
    extras: &'a PodExtras,
    params: &'a Value,
}

async fn restore_pod(
    job: &Job<'_>,
    repo: &Repository,
    pod: &str,
    id: String,
) -> Result<Output, FunctionError> {
    let vols = fetch_pod_volumes(pod, job.params).map_err(|e| {
        FunctionError::failed(NAME, format!("Failed to get volumes of pod {pod}: {e}"))
    })?;
    let volumes = data_pod::pvc_mounts(&job.ctx.client, NAME, job.namespace, &vols).await?;
    let opts = job
        .extras
        .options(job.namespace, JOB_PREFIX, job.image, volumes);
    let snapshot = Snapshot::Id(id);
    let r = data_pod::run_in(job.ctx.pods(), NAME, &opts, async |target| {
        restic::Restic::new(&job.ctx.client, NAME, *target)
            .restore(repo, &snapshot, job.restore_path)
            .await
    })
    .await?;
    Ok(r.phase_output(NAME)?)
}

pub async fn run(ctx: &Context, a: &Args<'_>, params: &Value) -> Result<Output, FunctionError> {
    let namespace = non_empty(a, "namespace")?;
    let image = non_empty(a, "image")?;
    let prefix = non_empty(a, "backupArtifactPrefix")?;
    let infos = parse_backup_info(NAME, &a.string("backupInfo")?)?;
    let extras = super::data::pod_extras(a, ctx)?;
    let restore_path = restore_path(a)?;
    let key = encryption_key(a)?;
    let insecure_tls = a.flag("insecureTLS")?;
    let pods = target_pods(a, params, "Unsupported workload type")?;
    let profile = data::profile(NAME, params, "")?;
    let job = Job {
        ctx,
        namespace: &namespace,
        image: &image,
        restore_path: &restore_path,
        extras: &extras,
        params,
    };
    let results = join_all(pods.iter().map(|pod| {
        let repo = Repository::new(&profile, &pod_prefix(&prefix, pod), &key, insecure_tls);
        let job = &job;
        let infos = &infos;
        async move {
            let id =
                snapshot_of(infos, pod).map_err(|e| FunctionError::failed(NAME, e.to_string()))?;
            restore_pod(job, &repo, pod, id).await
        }
    }))
    .await;
    let mut out = Output::new();
    let mut errors = Vec::new();
    for (pod, r) in pods.iter().zip(results) {
        match r {
            Ok(o) => out.extend(o),
            Err(e) => errors.push((pod.clone(), e)),
        }
    }
    if !errors.is_empty() {
        return Err(per_pod_errors(NAME, "restore data", errors));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_pod_needs_its_backup() {
        let infos = parse_backup_info(
            NAME,
            r#"{"a":{"PodName":"a","BackupID":"111","BackupTag":"t"},"b":{"PodName":"b","BackupID":"","BackupTag":"t"}}"#,
        )
        .unwrap();
        assert_eq!(snapshot_of(&infos, "a").unwrap(), "111");
        assert_eq!(
            snapshot_of(&infos, "b").unwrap_err().to_string(),
            "backupInfo has no BackupID for pod b"
        );
        let e = snapshot_of(&infos, "c").unwrap_err().to_string();
        assert!(
            e.starts_with("backupInfo has no backup of pod c (it has: a, b)"),
            "{e}"
        );
    }
}
