//! DeleteData (Kanister `pkg/function/delete_data.go`): forget restic
//! snapshots made by BackupData/CopyVolumeData, from a helper pod
//! (`delete-data-…`, `image`, default the kanister-tools image). Snapshots
//! are named by `backupID` or `backupTag` (exactly one; each may be a
//! space-separated list, matched by position with the space-separated
//! `backupArtifactPrefix` list); a tag is resolved to its snapshot ID with
//! `restic snapshots --tag <tag> --json`. With `reclaimSpace: true`,
//! `restic prune` runs after each forget.
//!
//! Output: `spaceFreed`, the bytes prune reported freeing, as "<n> B"
//! ("0 B" without reclaimSpace).
//!
//! Differences from Kanister: see [`super::restic`]; more IDs/tags than
//! artifact prefixes is an argument error (Kanister indexes out of range).

use serde_json::{Map, Value, json};

use super::args::Args;
use super::backup_data::{encryption_key, non_empty};
use super::data_pod::{self, PodOptions};
use super::restic::{self, Profile, Repository, Snapshot};
use super::restore_data::snapshot_arg;
use super::{Context, FunctionError, Output};

const NAME: &str = "DeleteData";
/// Kanister's `deleteDataJobPrefix`.
pub const JOB_PREFIX: &str = "delete-data-";

/// The (artifact prefix, snapshot) pairs to forget, Kanister's `strings.Fields` pairing.
pub fn targets(prefixes: &str, snapshot: &Snapshot) -> Result<Vec<(String, Snapshot)>, String> {
    let paths: Vec<&str> = prefixes.split_whitespace().collect();
    let (names, arg, make): (Vec<&str>, &str, fn(String) -> Snapshot) = match snapshot {
        Snapshot::Id(s) => (s.split_whitespace().collect(), "backupID", Snapshot::Id),
        Snapshot::Tag(s) => (s.split_whitespace().collect(), "backupTag", Snapshot::Tag),
    };
    if names.len() > paths.len() {
        return Err(format!(
            "{arg} lists {} snapshots but backupArtifactPrefix only {} paths (give one path per snapshot, space-separated)",
            names.len(),
            paths.len()
        ));
    }
    Ok(names
        .iter()
        .zip(paths)
        .map(|(n, p)| (p.to_string(), make(n.to_string())))
        .collect())
}

/// `backupID` xor `backupTag` (Kanister: "Require one argument: backupID or backupTag").
pub fn snapshot(a: &Args) -> Result<Snapshot, FunctionError> {
    snapshot_arg(a, "backupTag", "backupID")
        .map_err(|_| FunctionError::failed(NAME, "Require one argument: backupID or backupTag"))
}

pub async fn run(
    ctx: &Context,
    args: &Map<String, Value>,
    params: &Value,
) -> Result<Output, FunctionError> {
    let a = Args::new(NAME, args);
    a.check_supported()?;
    let namespace = non_empty(&a, "namespace")?;
    let prefix = non_empty(&a, "backupArtifactPrefix")?;
    let snapshot = snapshot(&a)?;
    let key = encryption_key(&a)?;
    let reclaim = a.opt_bool("reclaimSpace")?.unwrap_or(false);
    let insecure_tls = a.opt_bool("insecureTLS")?.unwrap_or(false);
    let image = a
        .opt_string("image")?
        .filter(|s| !s.trim().is_empty())
        .unwrap_or_else(data_pod::tools_image);
    let extras = data_pod::pod_extras(&a, ctx)?;
    let profile = Profile::from_params(params).map_err(|e| FunctionError::failed(NAME, e))?;
    let pairs = targets(&prefix, &snapshot)
        .map_err(|e| FunctionError::arg(NAME, "backupArtifactPrefix", e))?;
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
    let result = delete_all(ctx, &helper, &profile, &pairs, &key, insecure_tls, reclaim).await;
    helper.delete().await;
    let freed = result?;
    Ok(match json!({"spaceFreed": format!("{freed} B")}) {
        Value::Object(m) => m,
        _ => Output::new(),
    })
}

async fn delete_all(
    ctx: &Context,
    helper: &data_pod::HelperPod,
    profile: &Profile,
    pairs: &[(String, Snapshot)],
    key: &str,
    insecure_tls: bool,
    reclaim: bool,
) -> Result<i64, FunctionError> {
    let target = helper.target();
    let mut freed = 0i64;
    for (path, snap) in pairs {
        let repo = Repository::new(profile, path, key, insecure_tls);
        let id = match snap {
            Snapshot::Id(id) => id.clone(),
            Snapshot::Tag(tag) => {
                restic::snapshot_id_by_tag(ctx, NAME, &target, &repo, tag).await?
            }
        };
        restic::forget(ctx, NAME, &target, &repo, &id).await?;
        if reclaim {
            let s = restic::prune(ctx, NAME, &target, &repo)
                .await
                .map_err(|e| restic::wrap(NAME, "Error executing prune command", e))?;
            freed += restic::parse_restic_size_bytes(&s);
        }
    }
    Ok(freed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backup_id_or_backup_tag() {
        let m = serde_json::json!({"backupID": "abc"});
        assert_eq!(
            snapshot(&Args::new(NAME, m.as_object().unwrap())).unwrap(),
            Snapshot::Id("abc".into())
        );
        let m = serde_json::json!({"backupTag": "t"});
        assert_eq!(
            snapshot(&Args::new(NAME, m.as_object().unwrap())).unwrap(),
            Snapshot::Tag("t".into())
        );
        for m in [
            serde_json::json!({}),
            serde_json::json!({"backupID": "a", "backupTag": "t"}),
        ] {
            let e = snapshot(&Args::new(NAME, m.as_object().unwrap())).unwrap_err();
            assert_eq!(
                e.to_string(),
                "DeleteData: Require one argument: backupID or backupTag"
            );
        }
    }

    #[test]
    fn ids_pair_with_prefixes_by_position() {
        let t = targets("a b", &Snapshot::Id("1 2".into())).unwrap();
        assert_eq!(
            t,
            vec![
                ("a".to_string(), Snapshot::Id("1".into())),
                ("b".to_string(), Snapshot::Id("2".into()))
            ]
        );
        let t = targets("a b", &Snapshot::Tag("x".into())).unwrap();
        assert_eq!(t, vec![("a".to_string(), Snapshot::Tag("x".into()))]);
        let e = targets("a", &Snapshot::Tag("x y".into())).unwrap_err();
        assert!(
            e.starts_with("backupTag lists 2 snapshots but backupArtifactPrefix only 1"),
            "{e}"
        );
    }
}
