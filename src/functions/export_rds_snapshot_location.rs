//! ExportRDSSnapshotToLocation (Kanister `pkg/function/export_rds_snapshot_location.go`):
//! restores DB snapshot `snapshotID` to a temporary DB instance `<instanceID>-<10 random
//! characters>` (in `dbSubnetGroup`, default `default`, with `securityGroupID`, default the
//! groups of instance `instanceID`), dumps its PostgreSQL databases (`databases`, default all)
//! to `<backupArtifactPrefix>/backup-<10 random characters>.tar.gz` (prefix default
//! `instanceID`) of the Profile's object store from a pod in `namespace`
//! ([`super::rds::dump`]), and deletes the temporary instance. Outputs: `backupID`,
//! `snapshotID`, `instanceID`, `securityGroupID` (YAML list).
//!
//! Differences from Kanister: the temporary instance is deleted also when its restore or wait
//! fails, the phase times out or the ActionSet is deleted (Kanister deletes it only once it was
//! available, on return); a `dbEngine` other than `PostgreSQL` is refused before anything is
//! made (Kanister finds out after making the instance); see [`super::rds::dump`] for the pod.

use serde_json::Value;

use super::args::Args;
use super::context::Context;
use super::error::FunctionError;
use super::rds::{self, dump, instance};
use crate::aws::rds::RdsClient;
use crate::param::profile::Profile;
use crate::phase_output::Output;
use crate::pods::helper as data_pod;

const NAME: &str = "ExportRDSSnapshotToLocation";

pub async fn run(ctx: &Context, a: &Args<'_>, params: &Value) -> Result<Output, FunctionError> {
    let namespace = a.string("namespace")?;
    let instance_id = a.string("instanceID")?;
    let snapshot_id = a.string("snapshotID")?;
    let engine = a.string("dbEngine")?;
    let username = a.opt_string("username")?.unwrap_or_default();
    let password = a.opt_string("password")?.unwrap_or_default();
    let prefix = a
        .opt_string("backupArtifactPrefix")?
        .unwrap_or_else(|| instance_id.clone());
    let subnet_group = a
        .opt_string("dbSubnetGroup")?
        .unwrap_or_else(|| "default".into());
    let extras = super::data::pod_extras(a, ctx)?;
    let databases = rds::yaml_list(NAME, a.args, "databases")?;
    let groups = rds::yaml_list(NAME, a.args, "securityGroupID")?;
    if engine != dump::POSTGRES_ENGINE {
        return Err(FunctionError::arg(
            NAME,
            "dbEngine",
            format!(
                "Invalid RDSDBEngine or RDSAction: dbEngine {engine:?} cannot be dumped (only {})",
                dump::POSTGRES_ENGINE
            ),
        ));
    }
    Profile::from_params(params)
        .map_err(|e| FunctionError::failed(NAME, format!("Profile Validation failed: {e}")))?;
    let (rds, waits) = rds::connect(NAME, a, params)?;
    let groups = match groups {
        Some(g) => g,
        None => rds
            .describe_db_instances(&instance_id)
            .await
            .map_err(|e| {
                FunctionError::rds(
                    NAME,
                    format!("Failed to fetch security group ids. InstanceID={instance_id}"),
                    e,
                )
            })?
            .into_iter()
            .next()
            .map(|i| i.vpc_security_groups)
            .unwrap_or_default(),
    };
    let tmp = rds::random_id(&instance_id);
    tracing::info!(snapshot = %snapshot_id, instance = %tmp, "Spin up temporary RDS instance from the snapshot.");
    let temporary = instance::TempInstance::new(&rds, &waits, &tmp);
    let restored = instance::restore_from_snapshot(
        NAME,
        &rds,
        &waits,
        &tmp,
        &subnet_group,
        &snapshot_id,
        &groups,
    )
    .await;
    if let Err(e) = restored {
        temporary.delete().await;
        return Err(FunctionError::failed(
            NAME,
            format!(
                "Failed to restore snapshot. SnapshotID={snapshot_id}: {}",
                inner(&e)
            ),
        ));
    }
    let result = export(
        ctx,
        &rds,
        &tmp,
        &namespace,
        &prefix,
        databases.as_deref(),
        &username,
        &password,
        params,
        &extras,
    )
    .await;
    temporary.delete().await;
    let mut out = result?;
    out.insert("snapshotID".into(), snapshot_id.into());
    out.insert("instanceID".into(), instance_id.into());
    out.insert("securityGroupID".into(), rds::yaml_output(&groups).into());
    Ok(out)
}

/// A function error's text without the function's name (it is put in front again).
fn inner(e: &FunctionError) -> String {
    let s = e.to_string();
    s.strip_prefix(&format!("{NAME}: "))
        .map(str::to_string)
        .unwrap_or(s)
}

/// The dump of temporary instance `tmp` (its endpoint and engine version from RDS).
#[allow(clippy::too_many_arguments)]
async fn export(
    ctx: &Context,
    rds: &RdsClient,
    tmp: &str,
    namespace: &str,
    prefix: &str,
    databases: Option<&[String]>,
    username: &str,
    password: &str,
    params: &Value,
    extras: &data_pod::PodExtras,
) -> Result<Output, FunctionError> {
    let context = format!("Couldn't find endpoint for instance {tmp}");
    let (host, _) = instance::endpoint(NAME, rds, tmp, &context, "Received nil endpoint").await?;
    let backup_id = format!("backup-{}.tar.gz", crate::restic::random_tag());
    let script = dump::backup_script(&host, prefix, &backup_id, databases);
    let pod = dump::pod(extras, namespace);
    dump::run(ctx, NAME, &pod, &script, username, password, params)
        .await
        .map_err(|e| {
            FunctionError::failed(
                NAME,
                format!(
                    "Unable to extract and push db dump to location: {}",
                    inner(&e)
                ),
            )
        })
}
