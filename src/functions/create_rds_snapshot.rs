//! CreateRDSSnapshot (Kanister `pkg/function/create_rds_snapshot.go`): a manual snapshot
//! `<instanceID>-<10 random characters>` of an RDS DB instance (CreateDBSnapshot, then AWS's
//! DBSnapshotAvailable waiter) or, with an Aurora `dbEngine`, of the DB cluster `instanceID`
//! (CreateDBClusterSnapshot, DBClusterSnapshotAvailable). Outputs, as Kanister's:
//! `snapshotID`, `instanceID`, `securityGroupID` (the instance's or cluster's VPC security
//! groups as a YAML list, `null` for none), `allocatedStorage` (`<GiB>GiB`, `0GiB` for Aurora)
//! and `dbSubnetGroup` (the instance's or cluster's DB subnet group).
//!
//! Differences from Kanister: one DescribeDBInstances (or DescribeDBClusters) gives both the
//! security groups and the subnet group (Kanister calls it twice); an instance without a
//! DB subnet group outputs `dbSubnetGroup: null` (Kanister dereferences it and panics).

use serde_json::Value;

use super::args::Args;
use super::error::FunctionError;
use super::rds;
use crate::aws::rds::{RdsError, error::DB_CLUSTER_NOT_FOUND, wait};
use crate::phase_output::Output;

const NAME: &str = "CreateRDSSnapshot";

pub async fn run(
    _ctx: &super::Context,
    a: &Args<'_>,
    params: &Value,
) -> Result<Output, FunctionError> {
    let instance_id = a.string("instanceID")?;
    let engine = a.opt_string("dbEngine")?.unwrap_or_default();
    let (rds, waits) = rds::connect(NAME, a, params)?;
    let snapshot_id = rds::random_id(&instance_id);
    let failed = |context: &str| {
        let context = context.to_string();
        move |e: RdsError| FunctionError::rds(NAME, context, e)
    };
    tracing::info!(snapshot = %snapshot_id, instance = %instance_id, "Creating RDS snapshot");
    let allocated = if rds::is_aurora(&engine) {
        rds.create_db_cluster_snapshot(&instance_id, &snapshot_id)
            .await
            .map_err(failed("Failed to create cluster snapshot"))?;
        wait::cluster_snapshot_available(&rds, &waits, &snapshot_id)
            .await
            .map_err(failed("Error while waiting snapshot to be available"))?;
        0
    } else {
        let snap = rds
            .create_db_snapshot(&instance_id, &snapshot_id)
            .await
            .map_err(failed("Failed to create snapshot"))?;
        wait::snapshot_available(&rds, &waits, &snapshot_id)
            .await
            .map_err(failed("Error while waiting snapshot to be available"))?;
        snap.allocated_storage.unwrap_or(0)
    };
    let fetch = failed(&format!(
        "Failed to fetch security group ids. InstanceID={instance_id}"
    ));
    let (groups, subnet_group) = if rds::is_aurora(&engine) {
        match rds.describe_db_clusters(&instance_id).await {
            Ok(list) => list
                .into_iter()
                .next()
                .map(|c| (c.vpc_security_groups, c.db_subnet_group))
                .unwrap_or_default(),
            // As Kanister: a cluster that is gone has no groups.
            Err(e) if e.is_not_found(DB_CLUSTER_NOT_FOUND) => Default::default(),
            Err(e) => return Err(fetch(e)),
        }
    } else {
        let list = rds
            .describe_db_instances(&instance_id)
            .await
            .map_err(fetch)?;
        let i = list.into_iter().next().ok_or_else(|| {
            FunctionError::failed(
                NAME,
                format!("Could not get DBInstance with the instanceID {instance_id}"),
            )
        })?;
        (i.vpc_security_groups, i.db_subnet_group)
    };
    let mut out = Output::new();
    out.insert("snapshotID".into(), snapshot_id.into());
    out.insert("instanceID".into(), instance_id.into());
    out.insert("securityGroupID".into(), rds::yaml_output(&groups).into());
    out.insert("allocatedStorage".into(), format!("{allocated}GiB").into());
    out.insert(
        "dbSubnetGroup".into(),
        subnet_group.map_or(Value::Null, Value::String),
    );
    Ok(out)
}
