//! DeleteRDSSnapshot (Kanister `pkg/function/delete_rds_snapshot.go`): deletes DB snapshot
//! `snapshotID` (DeleteDBSnapshot, then AWS's DBSnapshotDeleted waiter) or, with an Aurora
//! `dbEngine`, DB cluster snapshot `snapshotID` (DeleteDBClusterSnapshot). A snapshot that does
//! not exist is not an error (it may have been deleted before). No output.
//!
//! Difference from Kanister: for Aurora it waits until the cluster snapshot is gone (Kanister
//! waits for a DB *cluster* named like the snapshot to be gone, which returns at once).

use serde_json::Value;

use super::args::Args;
use super::error::FunctionError;
use super::rds;
use crate::aws::rds::{error, wait};
use crate::phase_output::Output;

const NAME: &str = "DeleteRDSSnapshot";

pub async fn run(
    _ctx: &super::Context,
    a: &Args<'_>,
    params: &Value,
) -> Result<Output, FunctionError> {
    let snapshot_id = a.string("snapshotID")?;
    let engine = a.opt_string("dbEngine")?.unwrap_or_default();
    let (rds, waits) = rds::connect(NAME, a, params)?;
    if rds::is_aurora(&engine) {
        tracing::info!(snapshot = %snapshot_id, "Deleting Aurora DB cluster snapshot");
        match rds.delete_db_cluster_snapshot(&snapshot_id).await {
            Ok(()) => {}
            Err(e) if e.is_not_found(error::DB_CLUSTER_SNAPSHOT_NOT_FOUND) => {
                tracing::info!(snapshot = %snapshot_id, "Could not find matching Aurora DB cluster snapshot; might have been deleted previously");
                return Ok(Output::new());
            }
            Err(e) => {
                return Err(FunctionError::rds(
                    NAME,
                    "Error deleting Aurora DB cluster snapshot",
                    e,
                ));
            }
        }
        wait::cluster_snapshot_deleted(&rds, &waits, &snapshot_id)
            .await
            .map_err(|e| {
                FunctionError::rds(
                    NAME,
                    "Error waiting for Aurora DB cluster snapshot to be deleted",
                    e,
                )
            })?;
    } else {
        tracing::info!(snapshot = %snapshot_id, "Deleting RDS snapshot");
        match rds.delete_db_snapshot(&snapshot_id).await {
            Ok(()) => {}
            Err(e) if e.is_not_found(error::DB_SNAPSHOT_NOT_FOUND) => {
                tracing::info!(snapshot = %snapshot_id, "Could not find matching RDS snapshot; might have been deleted previously");
                return Ok(Output::new());
            }
            Err(e) => return Err(FunctionError::rds(NAME, "Failed to delete snapshot", e)),
        }
        wait::snapshot_deleted(&rds, &waits, &snapshot_id)
            .await
            .map_err(|e| {
                FunctionError::rds(NAME, "Error while waiting for snapshot to be deleted", e)
            })?;
    }
    Ok(Output::new())
}
