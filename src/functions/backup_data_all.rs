//! BackupDataAll (Kanister `pkg/function/backup_data_all.go`): BackupData of
//! `includePath` in `container` of every pod, concurrently, each pod into its
//! own restic repository `<backupArtifactPrefix>/<pod>` (resolved against the
//! Profile's bucket as BackupData does). The pods are `pods` (space-separated)
//! or, without it, those of the ActionSet's Deployment or StatefulSet
//! (`.Deployment.Pods`, `.StatefulSet.Pods`). Runs on the restic layer of
//! [`super::restic`] ([`restic::backup`], exec'd in each pod's container).
//!
//! Outputs: `BackupAllInfo`, the JSON Kanister writes (Go's `json.Marshal`
//! of `map[string]BackupInfo`: pods sorted, fields `PodName`, `BackupID`,
//! `BackupTag`), e.g.
//! `{"db-0":{"PodName":"db-0","BackupID":"1c3d…","BackupTag":"a1b2c3d4e5"}}`,
//! which RestoreDataAll and DeleteDataAll take as `backupInfo`; and `version`.
//!
//! Differences from Kanister: no pods at all (a workload scaled to zero, an
//! empty `pods`) is an error instead of a successful backup of nothing
//! (`BackupAllInfo` `{}`); see BackupData for the rest.

use std::collections::BTreeMap;

use futures::future::join_all;
use serde_json::{Value, json};

use super::args::Args;
use super::context::Context;
use super::data::{
    BackupArgs, BackupInfo, OUTPUT_VERSION, non_empty, per_pod_errors, pod_prefix, target_pods,
};
use super::error::FunctionError;
use crate::phase_output::Output;
use crate::restic::{self, Target};

const NAME: &str = "BackupDataAll";
/// Kanister's `BackupDataAllOutput`.
pub const OUTPUT_KEY: &str = "BackupAllInfo";

/// `BackupAllInfo` text: pod → [`BackupInfo`], keys sorted.
pub fn backup_all_info(infos: &BTreeMap<String, BackupInfo>) -> String {
    serde_json::to_string(infos).unwrap_or_else(|_| "{}".into())
}

pub async fn run(ctx: &Context, a: &Args<'_>, params: &Value) -> Result<Output, FunctionError> {
    let namespace = non_empty(a, "namespace")?;
    let args = BackupArgs::read(a, params)?;
    let pods = target_pods(a, params, "Failed to get pods")?;
    let results = join_all(pods.iter().map(|pod| {
        let repo = args.repository(&pod_prefix(&args.prefix, pod));
        let (namespace, container, include_path) =
            (&namespace, &args.container, &args.include_path);
        async move {
            let target = Target {
                namespace,
                pod,
                container: Some(container),
            };
            restic::Restic::new(&ctx.client, NAME, target)
                .backup(&repo, include_path)
                .await
        }
    }))
    .await;
    let mut infos = BTreeMap::new();
    let mut errors = Vec::new();
    for (pod, r) in pods.iter().zip(results) {
        match r {
            Ok(b) => {
                infos.insert(
                    pod.clone(),
                    BackupInfo {
                        pod_name: pod.clone(),
                        backup_id: b.id,
                        backup_tag: b.tag,
                    },
                );
            }
            Err(e) => errors.push((pod.clone(), e.into())),
        }
    }
    if !errors.is_empty() {
        return Err(per_pod_errors(NAME, "backup data", errors));
    }
    Ok(
        match json!({OUTPUT_KEY: backup_all_info(&infos), "version": OUTPUT_VERSION}) {
            Value::Object(m) => m,
            _ => Output::new(),
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::functions::data::parse_backup_info;

    #[test]
    fn backup_all_info_is_what_go_marshals() {
        let mut m = BTreeMap::new();
        for (pod, id, tag) in [("web-1", "bbbb", "t2"), ("web-0", "aaaa", "t1")] {
            m.insert(
                pod.to_string(),
                BackupInfo {
                    pod_name: pod.into(),
                    backup_id: id.into(),
                    backup_tag: tag.into(),
                },
            );
        }
        let s = backup_all_info(&m);
        assert_eq!(
            s,
            r#"{"web-0":{"PodName":"web-0","BackupID":"aaaa","BackupTag":"t1"},"web-1":{"PodName":"web-1","BackupID":"bbbb","BackupTag":"t2"}}"#
        );
        assert_eq!(parse_backup_info(NAME, &s).unwrap(), m);
        // Kanister-written info with fields missing still decodes.
        let partial = parse_backup_info(NAME, r#"{"p":{"BackupID":"x"}}"#).unwrap();
        assert_eq!(partial["p"].backup_id, "x");
        let e = parse_backup_info(NAME, "not json").unwrap_err().to_string();
        assert!(
            e.starts_with("BackupDataAll: argument `backupInfo`: Could not decode JSON data"),
            "{e}"
        );
        assert!(parse_backup_info(NAME, "[1]").is_err());
    }

    #[test]
    fn pods_come_from_the_argument_or_the_workload() {
        let p = json!({"StatefulSet": {"Name": "db", "Pods": ["db-0", "db-1"]}});
        let m = json!({"pods": " a  b "});
        let a = Args::new(NAME, m.as_object().unwrap());
        assert_eq!(
            target_pods(&a, &p, "Failed to get pods").unwrap(),
            ["a", "b"]
        );
        // Cassandra's "{{ range .StatefulSet.Pods }} {{.}}{{end}}" rendered empty: the workload's.
        let m = json!({"pods": " "});
        let a = Args::new(NAME, m.as_object().unwrap());
        assert_eq!(target_pods(&a, &p, "x").unwrap(), ["db-0", "db-1"]);
        let m = json!({});
        let a = Args::new(NAME, m.as_object().unwrap());
        let d =
            json!({"Deployment": {"Name": "web", "Pods": ["w-1"]}, "StatefulSet": {"Pods": ["s"]}});
        assert_eq!(target_pods(&a, &d, "x").unwrap(), ["w-1"]);
        let e = target_pods(&a, &json!({"Namespace": {}}), "Failed to get pods")
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("BackupDataAll: Failed to get pods: give `pods`"),
            "{e}"
        );
        let e = target_pods(&a, &json!({"Deployment": {"Name": "web", "Pods": []}}), "x")
            .unwrap_err()
            .to_string();
        assert!(e.contains("the Deployment web has no running pods"), "{e}");
    }

    #[test]
    fn per_pod_prefixes_and_errors() {
        assert_eq!(pod_prefix("bucket/app/", "p-0"), "bucket/app/p-0");
        let e = per_pod_errors(
            NAME,
            "backup data",
            vec![
                ("a".into(), FunctionError::failed(NAME, "boom")),
                ("b".into(), FunctionError::failed(NAME, "bang")),
            ],
        )
        .to_string();
        assert_eq!(
            e,
            "BackupDataAll: Failed to backup data for pod a: boom\nFailed to backup data for pod b: bang"
        );
    }
}
