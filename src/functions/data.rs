//! What the restic data functions share (as Kanister's `pkg/function/utils.go`): the Profile
//! read for a function, their common arguments (`encryptionKey`, `restorePath`, the snapshot
//! to pick, `backupInfo`, the pods of the `*All` functions), the BackupData outputs, the
//! volumes of a pod, and forgetting snapshots in a helper pod (DeleteData, DeleteDataAll).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::args::Args;
use super::context::Context;
use super::error::FunctionError;
use crate::param::profile::Profile;
use crate::phase_output::Output;
use crate::pods::helper as data_pod;
use crate::restic::{self, Repository, Snapshot, Target};

/// [`Profile::from_params`] for a function: its error reads `<function>: <context>: <why>` as the
/// Kanister function wraps it, or `<function>: <why>` with an empty `context`.
pub fn profile(
    function: &'static str,
    params: &Value,
    context: &str,
) -> Result<Profile, FunctionError> {
    Profile::from_params(params).map_err(|e| {
        let why = if context.is_empty() {
            e.to_string()
        } else {
            format!("{context}: {e}")
        };
        FunctionError::failed(function, why)
    })
}

/// The `image` argument, [`data_pod::tools_image`] when absent or blank.
pub fn image_or_tools(a: &Args) -> Result<String, FunctionError> {
    Ok(a.opt_string("image")?
        .filter(|s| !s.trim().is_empty())
        .unwrap_or_else(data_pod::tools_image))
}

/// The podOverride/podLabels/podAnnotations arguments merged with the
/// ActionSet's, as Kanister's data functions do (see [`data_pod`]).
pub fn pod_extras(a: &Args, ctx: &Context) -> Result<data_pod::PodExtras, FunctionError> {
    let pod_override =
        crate::pods::merge_overrides(a.opt_json_map("podOverride")?, ctx.pod_override.as_ref());
    let labels = crate::pods::merge_labels(a.opt_string_map("podLabels")?, &ctx.pod_labels);
    let annotations =
        crate::pods::merge_labels(a.opt_string_map("podAnnotations")?, &ctx.pod_annotations);
    Ok(data_pod::PodExtras {
        pod_override,
        labels,
        annotations,
    })
}

/// Kanister's `FunctionOutputVersion` value (`kanister.DefaultVersion`).
pub const OUTPUT_VERSION: &str = "v0.0.0";

/// `encryptionKey`, Kanister's default when absent; empty is an error.
pub fn encryption_key(a: &Args) -> Result<String, FunctionError> {
    match a.opt_string("encryptionKey")? {
        None => Ok(restic::DEFAULT_ENCRYPTION_KEY.to_string()),
        Some(k) if k.is_empty() => Err(FunctionError::arg(
            a.function,
            "encryptionKey",
            "must not be empty (omit it to use Kanister's default key; restic refuses empty passwords)",
        )),
        Some(k) => Ok(k),
    }
}

/// A required string argument that must not be empty.
pub fn non_empty(a: &Args, name: &str) -> Result<String, FunctionError> {
    let v = a.string(name)?;
    if v.trim().is_empty() {
        return Err(FunctionError::arg(a.function, name, "must not be empty"));
    }
    Ok(v)
}

/// The BackupData outputs of a [`restic::BackupResult`].
pub fn backup_output(b: &restic::BackupResult) -> Output {
    let v = json!({
        "backupID": b.id,
        "backupTag": b.tag,
        "fileCount": b.stats.file_count,
        "size": b.stats.size,
        "phySize": b.stats.phy_size,
        "version": OUTPUT_VERSION,
    });
    match v {
        Value::Object(m) => m,
        _ => Output::new(),
    }
}

/// `restorePath`, `/` when absent or empty.
pub fn restore_path(a: &Args) -> Result<String, FunctionError> {
    Ok(a.opt_string("restorePath")?
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "/".into()))
}

/// `backupTag` xor `backupIdentifier` (Kanister: "Require one argument: backupTag or backupIdentifier").
pub fn snapshot_arg(a: &Args, tag_arg: &str, id_arg: &str) -> Result<Snapshot, FunctionError> {
    let tag = a.opt_string(tag_arg)?.unwrap_or_default();
    let id = a.opt_string(id_arg)?.unwrap_or_default();
    match (tag.is_empty(), id.is_empty()) {
        (false, true) => Ok(Snapshot::Tag(tag)),
        (true, false) => Ok(Snapshot::Id(id)),
        _ => Err(FunctionError::failed(
            a.function,
            format!("Require one argument: {tag_arg} or {id_arg}"),
        )),
    }
}

/// Why the volumes of a pod are not known (Kanister's texts, with a hint).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PodVolumesError {
    #[error(
        "Invalid Template Params (pod needs the ActionSet's object to be a Deployment or StatefulSet; give `volumes` instead)"
    )]
    NoWorkload,
    #[error("Failed to find volumes for the Pod: {0}")]
    NotFound(String),
}

/// Kanister's `FetchPodVolumes`: PVC → mount path of `pod` from the
/// `.Deployment` or `.StatefulSet` template parameter.
pub fn fetch_pod_volumes(
    pod: &str,
    params: &Value,
) -> Result<BTreeMap<String, String>, PodVolumesError> {
    let workload = ["Deployment", "StatefulSet"]
        .iter()
        .find_map(|k| params.get(*k).filter(|v| v.is_object()))
        .ok_or(PodVolumesError::NoWorkload)?;
    let claims = workload
        .pointer(&format!(
            "/PersistentVolumeClaims/{}",
            pod.replace('~', "~0").replace('/', "~1")
        ))
        .and_then(Value::as_object)
        .ok_or_else(|| PodVolumesError::NotFound(pod.to_string()))?;
    Ok(claims
        .iter()
        .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_string()))
        .collect())
}

/// One pod's backup (Kanister's `function.BackupInfo`; JSON field names as Go writes them).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct BackupInfo {
    #[serde(rename = "PodName", default)]
    pub pod_name: String,
    #[serde(rename = "BackupID", default)]
    pub backup_id: String,
    #[serde(rename = "BackupTag", default)]
    pub backup_tag: String,
}

/// The `backupInfo` argument of RestoreDataAll/DeleteDataAll (Kanister:
/// "Could not decode JSON data").
pub fn parse_backup_info(
    function: &'static str,
    text: &str,
) -> Result<BTreeMap<String, BackupInfo>, FunctionError> {
    serde_json::from_str(text).map_err(|e| {
        FunctionError::arg(
            function,
            "backupInfo",
            format!(
                "Could not decode JSON data: {e}; expected BackupDataAll's BackupAllInfo output, \
                 {{\"<pod>\":{{\"PodName\":\"<pod>\",\"BackupID\":\"<id>\",\"BackupTag\":\"<tag>\"}}}}"
            ),
        )
    })
}

/// The pods to work on: `pods` (space-separated; a list is accepted too)
/// when given and not blank, else the ActionSet's Deployment's or
/// StatefulSet's pods. `no_workload` is Kanister's error text for when
/// neither is there.
pub fn target_pods(
    a: &Args,
    params: &Value,
    no_workload: &str,
) -> Result<Vec<String>, FunctionError> {
    let given: Vec<String> = a
        .opt_string_list("pods")?
        .unwrap_or_default()
        .iter()
        .flat_map(|s| s.split_whitespace().map(str::to_string).collect::<Vec<_>>())
        .collect();
    if !given.is_empty() {
        return Ok(given);
    }
    let (kind, workload) = ["Deployment", "StatefulSet"]
        .iter()
        .find_map(|k| params.get(*k).filter(|v| v.is_object()).map(|v| (*k, v)))
        .ok_or_else(|| {
            FunctionError::failed(
                a.function,
                format!(
                    "{no_workload}: give `pods`, or run the action on a Deployment or StatefulSet"
                ),
            )
        })?;
    let pods: Vec<String> = workload
        .get("Pods")
        .and_then(Value::as_array)
        .map(|l| {
            l.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default();
    if pods.is_empty() {
        let name = workload.get("Name").and_then(Value::as_str).unwrap_or("");
        return Err(FunctionError::failed(
            a.function,
            format!(
                "the {kind} {name} has no running pods, so there is nothing to work on (scale it up first, or give `pods`)"
            ),
        ));
    }
    Ok(pods)
}

/// `<prefix>/<pod>`: the per-pod artifact prefix of the `*All` functions.
pub fn pod_prefix(prefix: &str, pod: &str) -> String {
    format!("{}/{pod}", prefix.trim_end_matches('/'))
}

/// Kanister's per-pod failure wording, all failures one per line.
pub fn per_pod_errors(
    function: &'static str,
    what: &str,
    errors: Vec<(String, FunctionError)>,
) -> FunctionError {
    let lines: Vec<String> = errors
        .into_iter()
        .map(|(pod, e)| {
            let inner = crate::pods::without_function(function, e.to_string());
            format!("Failed to {what} for pod {pod}: {inner}")
        })
        .collect();
    FunctionError::failed(function, lines.join("\n"))
}

/// What BackupData and BackupDataAll read after the namespace and the pod(s).
pub struct BackupArgs {
    pub container: String,
    pub include_path: String,
    pub prefix: String,
    key: String,
    insecure_tls: bool,
    profile: Profile,
}

impl BackupArgs {
    pub fn read(a: &Args, params: &Value) -> Result<BackupArgs, FunctionError> {
        Ok(BackupArgs {
            container: non_empty(a, "container")?,
            include_path: non_empty(a, "includePath")?,
            prefix: non_empty(a, "backupArtifactPrefix")?,
            key: encryption_key(a)?,
            insecure_tls: a.flag("insecureTLS")?,
            profile: profile(a.function, params, "Failed to validate Profile")?,
        })
    }

    /// The repository at artifact prefix `path`.
    pub fn repository(&self, path: &str) -> Repository {
        Repository::new(&self.profile, path, &self.key, self.insecure_tls)
    }
}

/// What DeleteData and DeleteDataAll read after the snapshots to forget.
pub struct ForgetArgs {
    pub key: String,
    pub reclaim: bool,
    pub insecure_tls: bool,
    pub image: String,
    pub extras: data_pod::PodExtras,
    pub profile: Profile,
}

impl ForgetArgs {
    pub fn read(a: &Args, ctx: &Context, params: &Value) -> Result<ForgetArgs, FunctionError> {
        Ok(ForgetArgs {
            key: encryption_key(a)?,
            reclaim: a.flag("reclaimSpace")?,
            insecure_tls: a.flag("insecureTLS")?,
            image: image_or_tools(a)?,
            extras: pod_extras(a, ctx)?,
            profile: profile(a.function, params, "")?,
        })
    }

    /// The repository at artifact prefix `path`.
    pub fn repository(&self, path: &str) -> Repository {
        Repository::new(&self.profile, path, &self.key, self.insecure_tls)
    }

    /// Runs [`forget_all`] for `snapshots` in a helper pod of `namespace` (`job_prefix`).
    pub async fn forget_in_pod(
        &self,
        ctx: &Context,
        function: &'static str,
        namespace: &str,
        job_prefix: &str,
        snapshots: &[(Repository, Snapshot)],
    ) -> Result<Output, FunctionError> {
        let opts = self
            .extras
            .options(namespace, job_prefix, &self.image, Default::default());
        data_pod::run_in(ctx.pods(), function, &opts, async |target| {
            forget_all(ctx, function, target, snapshots, self.reclaim).await
        })
        .await
    }
}

/// Forgets each snapshot of its repository from `target` (a tag resolved to its snapshot ID
/// first), each followed by `restic prune` when `reclaim`; outputs `spaceFreed`, the bytes the
/// prunes freed as "<n> B".
async fn forget_all(
    ctx: &Context,
    function: &'static str,
    target: &Target<'_>,
    snapshots: &[(Repository, Snapshot)],
    reclaim: bool,
) -> Result<Output, FunctionError> {
    let restic = restic::Restic::new(&ctx.client, function, *target);
    let mut freed = 0i64;
    for (repo, snap) in snapshots {
        let id = match snap {
            Snapshot::Id(id) => id.clone(),
            Snapshot::Tag(tag) => restic.snapshot_id_by_tag(repo, tag).await?,
        };
        restic.forget(repo, &id).await?;
        if reclaim {
            let s = restic
                .prune(repo)
                .await
                .map_err(|e| e.wrap("Error executing prune command"))?;
            freed += restic::parse_restic_size_bytes(&s);
        }
    }
    Ok(match json!({"spaceFreed": format!("{freed} B")}) {
        Value::Object(m) => m,
        _ => Output::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const NAME: &str = "BackupData";

    #[test]
    fn outputs_have_kanisters_keys() {
        let b = restic::BackupResult {
            id: "abc".into(),
            tag: "t".into(),
            stats: restic::BackupStats {
                file_count: "3".into(),
                size: "1 KiB".into(),
                phy_size: "2 KiB".into(),
            },
        };
        let out = backup_output(&b);
        let keys: Vec<&str> = out.keys().map(String::as_str).collect();
        assert_eq!(
            keys,
            [
                "backupID",
                "backupTag",
                "fileCount",
                "size",
                "phySize",
                "version"
            ]
        );
        assert_eq!(out["version"], "v0.0.0");
    }

    #[test]
    fn encryption_key_defaults_and_rejects_empty() {
        let m = json!({});
        assert_eq!(
            encryption_key(&Args::new(NAME, m.as_object().unwrap())).unwrap(),
            restic::DEFAULT_ENCRYPTION_KEY
        );
        let m = json!({"encryptionKey": ""});
        let e = encryption_key(&Args::new(NAME, m.as_object().unwrap()))
            .unwrap_err()
            .to_string();
        assert!(e.contains("`encryptionKey`: must not be empty"), "{e}");
        let m = json!({"encryptionKey": 1234});
        assert_eq!(
            encryption_key(&Args::new(NAME, m.as_object().unwrap())).unwrap(),
            "1234"
        );
    }
}
