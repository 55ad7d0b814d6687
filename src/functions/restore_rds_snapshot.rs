//! RestoreRDSSnapshot (Kanister `pkg/function/restore_rds_snapshot.go`), two ways:
//! - with `snapshotID`: replaces DB instance `instanceID` by one restored from that snapshot
//!   (DeleteDBInstance if it exists and AWS's DBInstanceDeleted waiter,
//!   RestoreDBInstanceFromDBSnapshot in `dbSubnetGroup` (default `default`) with
//!   `securityGroupID` (default the instance's groups), DBInstanceAvailable); with an Aurora
//!   `dbEngine`, replaces DB cluster `instanceID` (its instances and the cluster deleted, then
//!   RestoreDBClusterFromSnapshot with the snapshot's engine version, and one instance
//!   `<cluster>-instance-1` of class db.r5.large created in it). No output.
//! - without: restores the dump `<backupArtifactPrefix>/<backupID>` that
//!   ExportRDSSnapshotToLocation made into instance `instanceID` (PostgreSQL, `username` and
//!   `password`), from a pod in `namespace` ([`super::rds::dump`]). Output: `endpoint`.
//!
//! Difference from Kanister: when deleting the existing Aurora cluster fails, the phase fails
//! (Kanister returns success without restoring anything).

use serde_json::Value;

use super::args::Args;
use super::context::Context;
use super::error::FunctionError;
use super::rds::{self, dump, instance};
use crate::aws::rds::{RdsClient, Waits, error, wait};
use crate::param::profile::Profile;
use crate::phase_output::Output;

const NAME: &str = "RestoreRDSSnapshot";
/// Kanister's instance of a restored Aurora cluster.
const AURORA_INSTANCE_SUFFIX: &str = "instance-1";
const AURORA_INSTANCE_CLASS: &str = "db.r5.large";

pub async fn run(ctx: &Context, a: &Args<'_>, params: &Value) -> Result<Output, FunctionError> {
    let instance_id = a.string("instanceID")?;
    let snapshot_id = a.opt_string("snapshotID")?.unwrap_or_default();
    let engine = a.opt_string("dbEngine")?.unwrap_or_default();
    let subnet_group = a
        .opt_string("dbSubnetGroup")?
        .unwrap_or_else(|| "default".into());
    let extras = super::data::pod_extras(a, ctx)?;
    let groups = rds::yaml_list(NAME, a.args, "securityGroupID")?;
    // Without a snapshot: the dump's arguments are required.
    let dump_args = if snapshot_id.is_empty() {
        Some((
            a.string("backupArtifactPrefix")?,
            a.string("backupID")?,
            a.string("username")?,
            a.string("password")?,
            a.string("namespace")?,
        ))
    } else {
        None
    };
    Profile::from_params(params)
        .map_err(|e| FunctionError::failed(NAME, format!("Error validating profile: {e}")))?;
    let (rds, waits) = rds::connect(NAME, a, params)?;
    let Some((prefix, backup_id, username, password, namespace)) = dump_args else {
        let groups = match groups {
            Some(g) => Some(g),
            None => security_groups(&rds, &instance_id, &engine).await?,
        };
        if rds::is_aurora(&engine) {
            restore_aurora(
                &rds,
                &waits,
                &instance_id,
                &subnet_group,
                &snapshot_id,
                &engine,
                groups.as_deref(),
            )
            .await?;
        } else {
            instance::restore_from_snapshot(
                NAME,
                &rds,
                &waits,
                &instance_id,
                &subnet_group,
                &snapshot_id,
                groups.as_deref().unwrap_or_default(),
            )
            .await?;
        }
        return Ok(Output::new());
    };
    if engine != dump::POSTGRES_ENGINE {
        return Err(FunctionError::arg(
            NAME,
            "dbEngine",
            format!(
                "Invalid RDSDBEngine or RDSAction: dbEngine {engine:?} cannot be restored from a dump (only {})",
                dump::POSTGRES_ENGINE
            ),
        ));
    }
    let context = format!("Failed to describe DB instance. InstanceID={instance_id}");
    let (host, version) =
        instance::endpoint(NAME, &rds, &instance_id, &context, "it has no endpoint").await?;
    let script = dump::restore_script(&host, &prefix, &backup_id, &version)
        .map_err(|e| FunctionError::failed(NAME, e.to_string()))?;
    let pod = dump::pod(&extras, &namespace);
    dump::run(ctx, NAME, &pod, &script, &username, &password, params)
        .await
        .map_err(|e| {
            let s = e.to_string();
            let inner = s.strip_prefix(&format!("{NAME}: ")).unwrap_or(&s);
            FunctionError::failed(
                NAME,
                format!("Failed to restore RDS from dump. InstanceID={instance_id}: {inner}"),
            )
        })?;
    let mut out = Output::new();
    out.insert("endpoint".into(), host.into());
    Ok(out)
}

/// The groups of the instance (or Aurora cluster; none when it is gone).
async fn security_groups(
    rds: &RdsClient,
    id: &str,
    engine: &str,
) -> Result<Option<Vec<String>>, FunctionError> {
    let fail = |e| {
        FunctionError::rds(
            NAME,
            format!("Failed to fetch security group ids. InstanceID={id}"),
            e,
        )
    };
    if rds::is_aurora(engine) {
        return match rds.describe_db_clusters(id).await {
            Ok(l) => Ok(l.into_iter().next().map(|c| c.vpc_security_groups)),
            Err(e) if e.is_not_found(error::DB_CLUSTER_NOT_FOUND) => Ok(None),
            Err(e) => Err(fail(e)),
        };
    }
    let l = rds.describe_db_instances(id).await.map_err(fail)?;
    Ok(l.into_iter().next().map(|i| i.vpc_security_groups))
}

/// Kanister's `restoreAuroraFromSnapshot`.
async fn restore_aurora(
    rds: &RdsClient,
    waits: &Waits,
    cluster_id: &str,
    subnet_group: &str,
    snapshot_id: &str,
    engine: &str,
    groups: Option<&[String]>,
) -> Result<(), FunctionError> {
    let fail = |context: &'static str| move |e| FunctionError::rds(NAME, context, e);
    match rds.describe_db_clusters(cluster_id).await {
        Ok(list) => {
            let members = list
                .into_iter()
                .next()
                .map(|c| c.members)
                .unwrap_or_default();
            for m in members {
                match rds.delete_db_instance(&m).await {
                    Ok(()) => wait::instance_deleted(rds, waits, &m).await.map_err(fail(
                        "Error while waiting for RDS Aurora DB instance to be deleted",
                    ))?,
                    Err(e) if e.is_not_found(error::DB_INSTANCE_NOT_FOUND) => {}
                    Err(e) => {
                        return Err(fail(
                            "Deleting an instance of the existing Aurora DB cluster",
                        )(e));
                    }
                }
            }
            tracing::info!(cluster = %cluster_id, "Deleting existing RDS Aurora DB Cluster.");
            match rds.delete_db_cluster(cluster_id).await {
                Ok(()) => wait::cluster_deleted(rds, waits, cluster_id)
                    .await
                    .map_err(fail(
                        "Error while waiting RDS Aurora DB cluster to be deleted",
                    ))?,
                Err(e) if e.is_not_found(error::DB_CLUSTER_NOT_FOUND) => {}
                Err(e) => return Err(fail("Deleting the existing Aurora DB cluster")(e)),
            }
        }
        Err(e) if e.is_not_found(error::DB_CLUSTER_NOT_FOUND) => {
            tracing::info!(cluster = %cluster_id, "Aurora DB cluster is not found");
        }
        Err(e) => return Err(fail("Describing the existing Aurora DB cluster")(e)),
    }
    let version = rds
        .describe_db_cluster_snapshots(snapshot_id)
        .await
        .map_err(fail("Error getting the engine version before restore"))?
        .into_iter()
        .next()
        .and_then(|s| s.engine_version)
        .unwrap_or_default();
    tracing::info!(cluster = %cluster_id, snapshot = %snapshot_id, "Restoring RDS Aurora DB Cluster from snapshot.");
    let restored = rds
        .restore_db_cluster_from_snapshot(
            cluster_id,
            subnet_group,
            snapshot_id,
            engine,
            &version,
            groups,
        )
        .await
        .map_err(fail("Error restorig aurora db cluster from snapshot"))?;
    wait::cluster_available(rds, waits, &restored)
        .await
        .map_err(fail("Error waiting for DBCluster to be available"))?;
    let id = rds
        .create_db_instance_in_cluster(
            AURORA_INSTANCE_CLASS,
            &format!("{restored}-{AURORA_INSTANCE_SUFFIX}"),
            engine,
            &restored,
            subnet_group,
        )
        .await
        .map_err(fail(
            "Error while creating Aurora DB instance in the cluster.",
        ))?;
    wait::instance_available(rds, waits, &id)
        .await
        .map_err(fail(
            "Error while waiting for new RDS Aurora instance to be ready.",
        ))
}
