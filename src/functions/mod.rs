//! Kanister functions run by the executor, one file per function as in
//! Kanister's `pkg/function`, each registered in [`registry`]: 28 run here (pods and exec, workloads,
//! KubeOps, waits, the restic data movers on [`crate::restic`], LocationDelete on
//! [`crate::objectstore`], CSI snapshots, the four RDS functions on [`crate::aws::rds`]). The three Kopia
//! RepositoryServer functions of released Kanister are known but not run.
//!
//! Contract with the executor: [`execute`] gets the phase's `args` already
//! rendered by the template engine (except `Wait`/`WaitV2`, which get raw args
//! and render their own `objectReference` fields with `params`), and returns
//! the phase output (string values, as Kanister's phase-output protocol).
//!
//! Cancellation: the executor may drop the returned future at any await
//! point. Pods (all made through [`crate::pods`]) are deleted by a guard whose `Drop` spawns
//! a cleanup task on the current Tokio runtime (best effort: if the runtime
//! itself is shutting down the pod stays behind). A dropped KubeExec/KubeExecAll
//! closes its exec stream; whether the remote process stops is up to the
//! container runtime (as with Kanister). ScaleWorkload has no own timeout: its
//! readiness wait ends only when the workload is ready or the future is dropped.

use serde_json::{Map, Value};

pub mod args;
pub mod backup_data;
pub mod backup_data_all;
pub mod backup_data_stats;
pub mod check_repository;
mod conditions;
pub mod context;
pub mod copy_volume_data;
pub mod create_csi_snapshot;
pub mod create_rds_snapshot;
pub mod csi;
pub mod csi_snapshot_static;
mod data;
pub mod delete_csi_snapshot;
pub mod delete_csi_snapshot_content;
pub mod delete_data;
pub mod delete_data_all;
pub mod delete_rds_snapshot;
pub(crate) mod error;
pub mod export_rds_snapshot_location;
pub mod kube_exec;
pub mod kube_exec_all;
pub mod kube_ops;
pub mod kube_task;
pub mod location_delete;
pub mod multi_container_run;
pub mod objref;
pub mod prepare_data;
pub mod rds;
pub mod registry;
pub mod restore_csi_snapshot;
pub mod restore_data;
pub mod restore_data_all;
pub mod restore_rds_snapshot;
pub mod scale_workload;
pub mod wait;
pub mod wait_v2;
pub mod weak;

pub use crate::phase_output::Output;
pub use context::Context;
pub use error::FunctionError;

/// Run one Kanister function ([`registry::run`]). `func` is matched exactly (Kanister names
/// are case-sensitive); unsupported Kanister functions and unknown names fail.
pub async fn execute(
    ctx: &Context,
    func: &str,
    args: &Map<String, Value>,
    params: &Value,
) -> Result<Output, FunctionError> {
    registry::run(ctx, func, args, params).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kopia_server_functions_are_known_but_unsupported_with_the_reason() {
        for f in [
            "BackupDataUsingKopiaServer",
            "RestoreDataUsingKopiaServer",
            "DeleteDataUsingKopiaServer",
        ] {
            let function = registry::function(f).unwrap();
            assert!(!function.runs());
            let e = registry::unsupported(function).to_string();
            assert!(
                e.starts_with(&format!("function {f} is not supported by this executor: it needs Kanister's Kopia RepositoryServer")),
                "{e}"
            );
        }
        // Proposed for Kanister, never released: unknown, as Kanister reports an unregistered name.
        for (f, _) in registry::NEVER_RELEASED {
            assert!(registry::function(f).is_none(), "{f}");
            assert_eq!(
                FunctionError::Unknown(f.to_string()).to_string(),
                format!("Requested function {{{f}}} has not been registered")
            );
        }
    }

    #[test]
    fn unsupported_message_names_the_function_and_the_supported_list() {
        let e = registry::unsupported(registry::function("BackupDataUsingKopiaServer").unwrap())
            .to_string();
        assert!(
            e.starts_with(
                "function BackupDataUsingKopiaServer is not supported by this executor: "
            ) && e.contains(" (supported: KubeTask, "),
            "{e}"
        );
        for f in registry::supported() {
            assert!(e.contains(f), "{e} lacks {f}");
        }
    }
}
