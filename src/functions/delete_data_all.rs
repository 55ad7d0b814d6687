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

use serde_json::{Map, Value, json};

use super::args::Args;
use super::backup_data::{encryption_key, non_empty};
use super::backup_data_all::{parse_backup_info, pod_prefix};
use super::data_pod::{self, HelperPod, PodOptions};
use super::restic::{self, Profile, Repository};
use super::{Context, FunctionError, Output};

const NAME: &str = "DeleteDataAll";
/// Kanister's `deleteDataAllJobPrefix`.
pub const JOB_PREFIX: &str = "delete-data-all-";

pub async fn run(
    ctx: &Context,
    args: &Map<String, Value>,
    params: &Value,
) -> Result<Output, FunctionError> {
    let a = Args::new(NAME, args);
    a.check_supported()?;
    let namespace = non_empty(&a, "namespace")?;
    let prefix = non_empty(&a, "backupArtifactPrefix")?;
    let infos = parse_backup_info(NAME, &a.string("backupInfo")?)?;
    let key = encryption_key(&a)?;
    let reclaim = a.opt_bool("reclaimSpace")?.unwrap_or(false);
    let insecure_tls = a.opt_bool("insecureTLS")?.unwrap_or(false);
    let image = a
        .opt_string("image")?
        .filter(|s| !s.trim().is_empty())
        .unwrap_or_else(data_pod::tools_image);
    let extras = data_pod::pod_extras(&a, ctx)?;
    let profile = Profile::from_params(params).map_err(|e| FunctionError::failed(NAME, e))?;
    let mut pairs = Vec::new();
    for (pod, info) in &infos {
        if info.backup_id.is_empty() {
            return Err(FunctionError::arg(
                NAME,
                "backupInfo",
                format!("the entry of pod {pod} has no BackupID"),
            ));
        }
        pairs.push((pod_prefix(&prefix, pod), info.backup_id.clone()));
    }
    if pairs.is_empty() {
        return Err(FunctionError::arg(
            NAME,
            "backupInfo",
            "lists no backups (Require one argument: backupID or backupTag)",
        ));
    }
    let opts = PodOptions {
        namespace,
        generate_name: JOB_PREFIX.into(),
        image,
        volumes: Default::default(),
        pod_override: extras.pod_override,
        labels: extras.labels,
        annotations: extras.annotations,
    };
    let helper = data_pod::start(ctx, NAME, &opts).await?;
    let result = forget_all(ctx, &helper, &profile, &pairs, &key, insecure_tls, reclaim).await;
    helper.delete().await;
    let freed = result?;
    Ok(match json!({"spaceFreed": format!("{freed} B")}) {
        Value::Object(m) => m,
        _ => Output::new(),
    })
}

async fn forget_all(
    ctx: &Context,
    helper: &HelperPod,
    profile: &Profile,
    pairs: &[(String, String)],
    key: &str,
    insecure_tls: bool,
    reclaim: bool,
) -> Result<i64, FunctionError> {
    let target = helper.target();
    let mut freed = 0i64;
    for (path, id) in pairs {
        let repo = Repository::new(profile, path, key, insecure_tls);
        restic::forget(ctx, NAME, &target, &repo, id).await?;
        if reclaim {
            let s = restic::prune(ctx, NAME, &target, &repo)
                .await
                .map_err(|e| restic::wrap(NAME, "Error executing prune command", e))?;
            freed += restic::parse_restic_size_bytes(&s);
        }
    }
    Ok(freed)
}
