//! Kanister functions run by the executor, one file per function as in
//! Kanister's `pkg/function`: the 24 of [`SUPPORTED`] (pods and exec, workloads,
//! KubeOps, waits, the restic data movers on [`restic`], LocationDelete on
//! [`s3`], CSI snapshots). The four RDS functions, which need the AWS API, fail
//! the phase with a clear "not supported" error.
//!
//! Contract with the executor: [`execute`] gets the phase's `args` already
//! rendered by the template engine (except `Wait`/`WaitV2`, which get raw args
//! and render their own `objectReference` fields with `params`), and returns
//! the phase output (string values, as Kanister's phase-output protocol).
//!
//! Cancellation: the executor may drop the returned future at any await
//! point. Pods (all made through [`pod`]) are deleted by a guard whose `Drop` spawns
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
pub mod context;
pub mod copy_volume_data;
pub mod csi_snapshot;
pub mod csi_snapshot_static;
pub mod data_pod;
pub mod delete_csi_snapshot_content;
pub mod delete_data;
pub mod delete_data_all;
mod error;
pub mod kube_exec;
pub mod kube_exec_all;
pub mod kube_ops;
pub mod kube_task;
pub mod location_delete;
pub mod multi_container_run;
pub mod objref;
pub mod output;
pub mod pod;
pub mod prepare_data;
pub mod registry;
pub mod restic;
pub mod restore_data;
pub mod restore_data_all;
pub mod s3;
pub mod scale_workload;
pub mod wait;
pub mod wait_v2;
pub mod weak;
pub mod workload;

pub use context::Context;
pub use error::FunctionError;
pub use output::Output;

/// Functions this executor implements (Kanister names).
pub const SUPPORTED: &[&str] = &[
    "KubeTask",
    "KubeExec",
    "KubeExecAll",
    "ScaleWorkload",
    "KubeOps",
    "Wait",
    "WaitV2",
    "MultiContainerRun",
    "PrepareData",
    "CreateCSISnapshot",
    "RestoreCSISnapshot",
    "DeleteCSISnapshot",
    "CreateCSISnapshotStatic",
    "DeleteCSISnapshotContent",
    "BackupData",
    "RestoreData",
    "DeleteData",
    "CopyVolumeData",
    "LocationDelete",
    "BackupDataAll",
    "RestoreDataAll",
    "DeleteDataAll",
    "BackupDataStats",
    "CheckRepository",
];

/// The 28 function names Kanister registers at HEAD, and the three `*UsingKopiaServer` ones
/// released Kanister registers (they need its RepositoryServer, which this executor lacks).
pub const KANISTER_FUNCTIONS: &[&str] = &[
    "BackupData",
    "BackupDataAll",
    "BackupDataStats",
    "BackupDataUsingKopiaServer",
    "CheckRepository",
    "CopyVolumeData",
    "CreateCSISnapshot",
    "CreateCSISnapshotStatic",
    "CreateRDSSnapshot",
    "DeleteCSISnapshot",
    "DeleteCSISnapshotContent",
    "DeleteData",
    "DeleteDataAll",
    "DeleteDataUsingKopiaServer",
    "DeleteRDSSnapshot",
    "ExportRDSSnapshotToLocation",
    "KubeExec",
    "KubeExecAll",
    "KubeOps",
    "KubeTask",
    "LocationDelete",
    "MultiContainerRun",
    "PrepareData",
    "RestoreCSISnapshot",
    "RestoreData",
    "RestoreDataAll",
    "RestoreDataUsingKopiaServer",
    "RestoreRDSSnapshot",
    "ScaleWorkload",
    "Wait",
    "WaitV2",
];

/// Why a Kanister function this executor does not run is missing, for the phase error and
/// `validate`'s warning ("" when the supported list says enough).
pub fn unsupported_hint(function: &str) -> &'static str {
    if function.ends_with("UsingKopiaServer") {
        ": it needs Kanister's Kopia RepositoryServer (an ActionSet `repositoryServer` and `.RepositoryServer` in templates), which this executor does not provide; use BackupData, RestoreData and DeleteData with a Profile"
    } else {
        ""
    }
}

/// Run one Kanister function. `func` is matched exactly (Kanister names are
/// case-sensitive); unsupported Kanister functions and unknown names fail.
pub async fn execute(
    ctx: &Context,
    func: &str,
    args: &Map<String, Value>,
    params: &Value,
) -> Result<Output, FunctionError> {
    match func {
        "KubeTask" => kube_task::run(ctx, args).await,
        "KubeExec" => kube_exec::run(ctx, args).await,
        "KubeExecAll" => kube_exec_all::run(ctx, args).await,
        "ScaleWorkload" => scale_workload::run(ctx, args).await,
        "KubeOps" => kube_ops::run(ctx, args).await,
        "Wait" => wait::run(ctx, args, params).await,
        "WaitV2" => wait_v2::run(ctx, args, params).await,
        "MultiContainerRun" => multi_container_run::run(ctx, args).await,
        "PrepareData" => prepare_data::run(ctx, args, params).await,
        "CreateCSISnapshot" => csi_snapshot::create(ctx, args).await,
        "RestoreCSISnapshot" => csi_snapshot::restore(ctx, args).await,
        "DeleteCSISnapshot" => csi_snapshot::delete(ctx, args).await,
        "CreateCSISnapshotStatic" => csi_snapshot_static::run(ctx, args).await,
        "DeleteCSISnapshotContent" => delete_csi_snapshot_content::run(ctx, args).await,
        "BackupData" => backup_data::run(ctx, args, params).await,
        "RestoreData" => restore_data::run(ctx, args, params).await,
        "DeleteData" => delete_data::run(ctx, args, params).await,
        "CopyVolumeData" => copy_volume_data::run(ctx, args, params).await,
        "LocationDelete" => location_delete::run(ctx, args, params).await,
        "BackupDataAll" => backup_data_all::run(ctx, args, params).await,
        "RestoreDataAll" => restore_data_all::run(ctx, args, params).await,
        "DeleteDataAll" => delete_data_all::run(ctx, args, params).await,
        "BackupDataStats" => backup_data_stats::run(ctx, args, params).await,
        "CheckRepository" => check_repository::run(ctx, args, params).await,
        other if KANISTER_FUNCTIONS.contains(&other) => {
            Err(FunctionError::Unsupported(other.to_string()))
        }
        other => Err(FunctionError::Unknown(other.to_string())),
    }
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
            assert!(KANISTER_FUNCTIONS.contains(&f) && !SUPPORTED.contains(&f));
            let e = FunctionError::Unsupported(f.into()).to_string();
            assert!(
                e.starts_with(&format!("function {f} is not supported by this executor: it needs Kanister's Kopia RepositoryServer")),
                "{e}"
            );
        }
        // Proposed for Kanister, never released: unknown, as Kanister reports an unregistered name.
        for (f, _) in registry::NEVER_RELEASED {
            assert!(!KANISTER_FUNCTIONS.contains(f), "{f}");
            assert_eq!(
                FunctionError::Unknown(f.to_string()).to_string(),
                format!("Requested function {{{f}}} has not been registered")
            );
        }
    }

    #[test]
    fn unsupported_message_names_the_function_and_the_supported_list() {
        let e = FunctionError::Unsupported("CreateRDSSnapshot".into()).to_string();
        assert!(
            e.starts_with("function CreateRDSSnapshot is not supported by this executor (supported: KubeTask, "),
            "{e}"
        );
        for f in SUPPORTED {
            assert!(KANISTER_FUNCTIONS.contains(f), "{f}");
        }
        assert_eq!(KANISTER_FUNCTIONS.len(), 31);
    }
}
