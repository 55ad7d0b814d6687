//! DB instances the functions replace or make: Kanister's `restoreFromSnapshot` (delete the
//! instance if it exists, restore it from a snapshot, wait until it is available), and the
//! temporary instance of ExportRDSSnapshotToLocation, deleted by a guard when the export ends,
//! fails or is dropped (a phase timeout, the ActionSet deleted).

use crate::aws::rds::RdsClient;
use crate::aws::rds::error::DB_INSTANCE_NOT_FOUND;
use crate::aws::rds::wait::{self, Waits};
use crate::functions::error::FunctionError;

/// The endpoint address and engine version of instance `id`; a failed call reads
/// `<context>: <why>`, an instance without an endpoint `<context>: <no_endpoint>`.
pub async fn endpoint(
    function: &'static str,
    rds: &RdsClient,
    id: &str,
    context: &str,
    no_endpoint: &str,
) -> Result<(String, String), FunctionError> {
    let described = rds
        .describe_db_instances(id)
        .await
        .map_err(|e| FunctionError::rds(function, context, e))?;
    let i = described.into_iter().next().unwrap_or_default();
    let host = i
        .endpoint_address
        .ok_or_else(|| FunctionError::failed(function, format!("{context}: {no_endpoint}")))?;
    Ok((host, i.engine_version.unwrap_or_default()))
}

/// Kanister's `restoreFromSnapshot`, its errors worded as Kanister's.
pub async fn restore_from_snapshot(
    function: &'static str,
    rds: &RdsClient,
    waits: &Waits,
    instance_id: &str,
    subnet_group: &str,
    snapshot_id: &str,
    security_groups: &[String],
) -> Result<(), FunctionError> {
    let fail = |context: &'static str| move |e| FunctionError::rds(function, context, e);
    tracing::info!(instance = %instance_id, "Deleting existing RDS DB instance.");
    match rds.delete_db_instance(instance_id).await {
        Ok(()) => wait::instance_deleted(rds, waits, instance_id)
            .await
            .map_err(fail("Error while waiting RDS DB instance to be deleted"))?,
        Err(e) if e.is_not_found(DB_INSTANCE_NOT_FOUND) => {
            tracing::info!(instance = %instance_id, "RDS instance is not present DBInstanceNotFoundFault");
        }
        Err(e) => return Err(fail("Deleting the existing RDS DB instance")(e)),
    }
    tracing::info!(instance = %instance_id, snapshot = %snapshot_id, "Restoring RDS DB instance from snapshot.");
    rds.restore_db_instance_from_db_snapshot(
        instance_id,
        subnet_group,
        snapshot_id,
        security_groups,
    )
    .await
    .map_err(fail("Error restoring RDS DB instance from snapshot"))?;
    wait::instance_available(rds, waits, instance_id)
        .await
        .map_err(fail(
            "Error while waiting for new rds instance to be ready.",
        ))
}

/// Deletes instance `id` (no final snapshot) and waits until it is gone; errors are logged.
async fn delete_instance(rds: &RdsClient, waits: &Waits, id: &str) {
    tracing::info!(instance = %id, "Delete temporary RDS instance.");
    match rds.delete_db_instance(id).await {
        Ok(()) => {
            if let Err(e) = wait::instance_deleted(rds, waits, id).await {
                tracing::error!(instance = %id, error = %e, "Failed to delete rds instance");
            }
        }
        Err(e) if e.is_not_found(DB_INSTANCE_NOT_FOUND) => {}
        Err(e) => tracing::error!(instance = %id, error = %e, "Failed to delete rds instance"),
    }
}

/// A temporary DB instance: [`TempInstance::delete`] deletes it; dropped without (the phase
/// failed on the way, timed out, or its ActionSet was deleted), a task on the current Tokio
/// runtime deletes it (best effort: nothing runs if there is no runtime).
pub struct TempInstance {
    rds: RdsClient,
    waits: Waits,
    id: Option<String>,
}

impl TempInstance {
    /// Guards `id` from now on (before it is created: a delete of what does not exist is fine).
    pub fn new(rds: &RdsClient, waits: &Waits, id: &str) -> Self {
        TempInstance {
            rds: rds.clone(),
            waits: *waits,
            id: Some(id.to_string()),
        }
    }

    pub async fn delete(mut self) {
        if let Some(id) = self.id.take() {
            delete_instance(&self.rds, &self.waits, &id).await;
        }
    }
}

impl Drop for TempInstance {
    fn drop(&mut self) {
        if let Some(id) = self.id.take()
            && let Ok(handle) = tokio::runtime::Handle::try_current()
        {
            let (rds, waits) = (self.rds.clone(), self.waits);
            handle.spawn(async move { delete_instance(&rds, &waits, &id).await });
        }
    }
}
