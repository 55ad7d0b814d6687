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

use serde_json::Value;

use super::args::Args;
use super::context::Context;
use super::data::{ForgetArgs, non_empty, snapshot_arg};
use super::error::FunctionError;
use crate::phase_output::Output;
use crate::restic::Snapshot;

const NAME: &str = "DeleteData";
/// Kanister's `deleteDataJobPrefix`.
pub const JOB_PREFIX: &str = "delete-data-";

/// More snapshots than artifact prefixes.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "{arg} lists {snapshots} snapshots but backupArtifactPrefix only {paths} paths (give one path per snapshot, space-separated)"
)]
pub struct TooManySnapshots {
    pub arg: &'static str,
    pub snapshots: usize,
    pub paths: usize,
}

/// The (artifact prefix, snapshot) pairs to forget, Kanister's `strings.Fields` pairing.
pub fn targets(
    prefixes: &str,
    snapshot: &Snapshot,
) -> Result<Vec<(String, Snapshot)>, TooManySnapshots> {
    let paths: Vec<&str> = prefixes.split_whitespace().collect();
    let (names, arg, make): (Vec<&str>, &str, fn(String) -> Snapshot) = match snapshot {
        Snapshot::Id(s) => (s.split_whitespace().collect(), "backupID", Snapshot::Id),
        Snapshot::Tag(s) => (s.split_whitespace().collect(), "backupTag", Snapshot::Tag),
    };
    if names.len() > paths.len() {
        return Err(TooManySnapshots {
            arg,
            snapshots: names.len(),
            paths: paths.len(),
        });
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

pub async fn run(ctx: &Context, a: &Args<'_>, params: &Value) -> Result<Output, FunctionError> {
    let namespace = non_empty(a, "namespace")?;
    let prefix = non_empty(a, "backupArtifactPrefix")?;
    let snapshot = snapshot(a)?;
    let f = ForgetArgs::read(a, ctx, params)?;
    let pairs = targets(&prefix, &snapshot)
        .map_err(|e| FunctionError::arg(NAME, "backupArtifactPrefix", e.to_string()))?;
    let snapshots = pairs
        .into_iter()
        .map(|(path, s)| (f.repository(&path), s))
        .collect::<Vec<_>>();
    f.forget_in_pod(ctx, NAME, &namespace, JOB_PREFIX, &snapshots)
        .await
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
        let e = targets("a", &Snapshot::Tag("x y".into()))
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("backupTag lists 2 snapshots but backupArtifactPrefix only 1"),
            "{e}"
        );
    }
}
