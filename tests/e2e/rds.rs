//! The RDS functions against moto's RDS API (tests/support/moto.rs: signatures checked), run by
//! the controller (`AWS_ENDPOINT_URL_RDS` pointing at moto) from the corpus RDS Blueprints,
//! unmodified: CreateRDSSnapshot, RestoreRDSSnapshot and DeleteRDSSnapshot of a PostgreSQL
//! instance and of an Aurora cluster, their outputs as Kanister writes them, and the errors of
//! wrong credentials and of an instance that does not exist; ExportRDSSnapshotToLocation's
//! failures (a snapshot that does not exist, wrong credentials, a dump that fails, an instance
//! that never becomes available) leave no temporary instance behind. The dump itself, with
//! real PostgreSQL rows, runs on the real node (tests/real/rds.rs).

use std::time::Duration;

use anyhow::Context as _;
use blueprint_operator::aws::rds::error::{DB_CLUSTER_SNAPSHOT_NOT_FOUND, DB_SNAPSHOT_NOT_FOUND};
use blueprint_operator::model::ActionSet;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::Client;
use kube::api::{Api, PostParams};
use serde_json::{Value, json};

use crate::support;
use crate::support::controller::Controller;
use crate::support::kanister;
use crate::support::moto;

const FINISH: Duration = Duration::from_secs(180);

/// Cluster, namespace (CRDs installed) and the corpus; `None`: skipped.
async fn setup(prefix: &str) -> Option<(Client, String, std::path::PathBuf)> {
    let corpus = support::corpus::dir()?;
    let client = support::client().await;
    if !support::require_kwok(&client).await {
        return None;
    }
    support::install_crds(&client).await.expect("install CRDs");
    let ns = support::namespace(&client, prefix).await;
    Some((client, ns, corpus))
}

/// Profile `name` whose credential is moto's key (`secret` replaces its secret key), region
/// moto's, location the test object store.
async fn rds_profile(
    client: &Client,
    ns: &str,
    name: &str,
    secret: Option<&str>,
) -> anyhow::Result<()> {
    let m = moto::server();
    let store = support::data_plane::object_store();
    let secret_name = format!("{name}-aws");
    let data = json!({"aws_access_key_id": m.access_key,
                      "aws_secret_access_key": secret.unwrap_or(&m.secret_key)});
    kanister::create_secret(client, ns, &secret_name, "secrets.kanister.io/aws", data).await?;
    let credential = kanister::key_pair_credential(
        "aws_access_key_id",
        "aws_secret_access_key",
        &secret_name,
        ns,
    );
    let spec = json!({
        "location": {"type": "s3Compliant", "bucket": "rds-dumps", "endpoint": store.endpoint,
                     "region": moto::REGION},
        "credential": credential,
        "skipSSLVerify": false,
    });
    kanister::create_profile(client, ns, name, spec).await
}

async fn config_map(client: &Client, ns: &str, data: Value) -> anyhow::Result<()> {
    Api::<ConfigMap>::namespaced(client.clone(), ns)
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": "dbconfig"}, "data": data}))?,
        )
        .await?;
    Ok(())
}

/// The ActionSets of a test: actions of Blueprint `blueprint` on ConfigMap dbconfig.
struct Runs<'a> {
    client: &'a Client,
    ns: &'a str,
    blueprint: &'a str,
}

impl Runs<'_> {
    /// Starts ActionSet `name`: `action` with Profile `profile`.
    async fn start(
        &self,
        name: &str,
        action: &str,
        profile: &str,
        artifacts: Value,
    ) -> anyhow::Result<()> {
        let (client, ns) = (self.client, self.ns);
        let spec = json!({
            "name": action, "blueprint": self.blueprint,
            "object": {"apiVersion": "v1", "resource": "configmaps", "name": "dbconfig", "namespace": ns},
            "profile": {"name": profile, "namespace": ns},
            "artifacts": artifacts,
        });
        support::kanister::create_actionset(client, ns, name, spec).await
    }

    /// Runs ActionSet `name` (`action` with Profile `aws`), asserted to complete; returns it.
    async fn complete(&self, name: &str, action: &str, artifacts: Value) -> anyhow::Result<Value> {
        self.start(name, action, "aws", artifacts).await?;
        support::wait_actionset_complete(self.client, self.ns, name).await
    }

    /// Runs ActionSet `name` (`action` with Profile `profile`, no artifacts), asserted to fail;
    /// returns its error message.
    async fn fail(&self, name: &str, action: &str, profile: &str) -> anyhow::Result<String> {
        self.start(name, action, profile, json!({})).await?;
        let a = support::wait_actionset_done(self.client, self.ns, name, FINISH).await?;
        let v = serde_json::to_value(&a)?;
        assert_eq!(v["status"]["state"], "failed", "{name}: {:#}", v["status"]);
        Ok(v["status"]["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .to_string())
    }
}

/// `InstanceCreateTime` of DB instance `id` in moto.
async fn instance_created(id: &str) -> anyhow::Result<String> {
    let r = moto::server()
        .client(None)
        .call("DescribeDBInstances", &[("DBInstanceIdentifier", id)])
        .await?;
    r.child("DBInstances")
        .and_then(|l| l.children.first())
        .and_then(|i| i.child_text("InstanceCreateTime"))
        .context("no InstanceCreateTime")
}

fn controller(ns: &str) -> Controller {
    Controller::start_with(
        ns,
        &[],
        &[("AWS_ENDPOINT_URL_RDS", &moto::server().endpoint)],
    )
}

/// Profile `aws`, ConfigMap dbconfig holding `data`, the corpus Blueprint of `file` (below
/// kanister-examples/aws-rds) and the controller: the Blueprint's name and the controller.
async fn corpus_setup(
    client: &Client,
    ns: &str,
    corpus: &std::path::Path,
    data: Value,
    file: &str,
) -> anyhow::Result<(String, Controller)> {
    rds_profile(client, ns, "aws", None).await?;
    config_map(client, ns, data).await?;
    let file = corpus.join("kanister-examples/aws-rds").join(file);
    let bp = support::kanister::create_file_blueprint(client, ns, &file).await?;
    Ok((bp, controller(ns)))
}

/// kanister-examples/aws-rds/postgresql/rds-postgres-snap-blueprint.yaml: backup makes a DB
/// snapshot with Kanister's outputs, restore replaces the instance by one restored from it,
/// delete removes it; a second delete finds nothing and completes (as Kanister's).
#[tokio::test]
async fn corpus_postgres_snapshot_blueprint_creates_and_deletes_a_db_snapshot() -> anyhow::Result<()>
{
    let Some((client, ns, corpus)) = setup("rds-snap").await else {
        return Ok(());
    };
    let (subnets, db) = (format!("{ns}-subnets"), format!("{ns}-pg"));
    moto::subnet_group(&subnets).await?;
    moto::postgres_instance(&db, "15.4", &subnets, &["sg-0a1", "sg-0b2"]).await?;
    let data = json!({"postgres.instanceid": db});
    let file = "postgresql/rds-postgres-snap-blueprint.yaml";
    let (bp, _controller) = corpus_setup(&client, &ns, &corpus, data, file).await?;
    let runs = Runs {
        client: &client,
        ns: &ns,
        blueprint: &bp,
    };

    let backup = runs.complete("backup", "backup", json!({})).await?;
    let info = backup["status"]["actions"][0]["artifacts"]["backupInfo"].clone();
    let kv = &info["keyValue"];
    let snapshot = kv["snapshotID"].as_str().unwrap_or_default().to_string();
    assert!(
        snapshot.starts_with(&format!("{db}-")) && snapshot.len() == db.len() + 11,
        "{info}"
    );
    assert_eq!(kv["instanceID"], db.as_str());
    assert_eq!(kv["securityGroupID"], "- sg-0a1\n- sg-0b2\n");
    assert_eq!(kv["allocatedStorage"], "20GiB");
    assert_eq!(kv["dbSubnetGroup"], subnets.as_str());
    let rds = moto::server().client(None);
    let snaps = rds.describe_db_snapshots(&snapshot).await?;
    assert_eq!(snaps.len(), 1);
    assert_eq!(snaps[0].status, "available");

    // restore: the instance is deleted and restored from the snapshot (a new instance: a new
    // creation time), with the snapshot's security groups.
    let created_before = instance_created(&db).await?;
    runs.complete("restore", "restore", json!({"backupInfo": info}))
        .await?;
    let restored = rds.describe_db_instances(&db).await?;
    assert_eq!(restored[0].status, "available");
    assert_eq!(restored[0].vpc_security_groups, ["sg-0a1", "sg-0b2"]);
    assert_eq!(
        restored[0].db_subnet_group.as_deref(),
        Some(subnets.as_str())
    );
    assert_ne!(
        instance_created(&db).await?,
        created_before,
        "the instance was not re-created"
    );

    runs.complete("delete", "delete", json!({"backupInfo": info}))
        .await?;
    let gone = rds.describe_db_snapshots(&snapshot).await.unwrap_err();
    assert!(gone.is_not_found(DB_SNAPSHOT_NOT_FOUND), "{gone}");
    // Deleting what is gone completes, as in Kanister.
    runs.complete("delete-again", "delete", json!({"backupInfo": info}))
        .await?;
    Ok(())
}

/// kanister-examples/aws-rds/aurora-mysql/rds-aurora-snap-blueprint.yaml: backup makes a DB
/// cluster snapshot of the Aurora cluster, restore replaces the cluster by one restored from it
/// (with Kanister's one instance), delete removes the snapshot.
#[tokio::test]
async fn corpus_aurora_snapshot_blueprint_creates_and_deletes_a_cluster_snapshot()
-> anyhow::Result<()> {
    let Some((client, ns, corpus)) = setup("rds-aurora").await else {
        return Ok(());
    };
    let (subnets, cluster) = (format!("{ns}-subnets"), format!("{ns}-au"));
    moto::subnet_group(&subnets).await?;
    moto::aurora_cluster(&cluster, &subnets, "sg-0c3").await?;
    let data = json!({"aurora.clusterID": cluster});
    let file = "aurora-mysql/rds-aurora-snap-blueprint.yaml";
    let (bp, _controller) = corpus_setup(&client, &ns, &corpus, data, file).await?;
    let runs = Runs {
        client: &client,
        ns: &ns,
        blueprint: &bp,
    };

    let backup = runs.complete("backup", "backup", json!({})).await?;
    let info = backup["status"]["actions"][0]["artifacts"]["backupInfo"].clone();
    let kv = &info["keyValue"];
    let snapshot = kv["snapshotID"].as_str().unwrap_or_default().to_string();
    assert!(snapshot.starts_with(&format!("{cluster}-")), "{info}");
    assert_eq!(kv["instanceID"], cluster.as_str());
    assert_eq!(kv["securityGroupID"], "- sg-0c3\n");
    assert_eq!(kv["allocatedStorage"], "0GiB");
    assert_eq!(kv["dbSubnetGroup"], subnets.as_str());
    let rds = moto::server().client(None);
    assert_eq!(
        rds.describe_db_cluster_snapshots(&snapshot).await?[0].status,
        "available"
    );
    // An instance snapshot was not made.
    assert!(rds.describe_db_snapshots(&snapshot).await.is_err());

    // restore: the cluster is deleted and restored from the snapshot, with one instance.
    // moto names a cluster's automated snapshot by the minute and keeps it after the cluster is
    // deleted, so a cluster re-created within the minute collides with it (AWS has no such
    // name clash): remove it first.
    let auto = rds
        .call(
            "DescribeDBClusterSnapshots",
            &[
                ("DBClusterIdentifier", cluster.as_str()),
                ("SnapshotType", "automated"),
            ],
        )
        .await?;
    for s in auto
        .child("DBClusterSnapshots")
        .map(|l| l.children.iter().collect())
        .unwrap_or_else(Vec::new)
    {
        if let Some(id) = s.child_text("DBClusterSnapshotIdentifier") {
            rds.delete_db_cluster_snapshot(&id).await?;
        }
    }
    runs.complete("restore", "restore", json!({"backupInfo": info}))
        .await?;
    let c = rds.describe_db_clusters(&cluster).await?;
    assert_eq!(c[0].status, "available");
    assert_eq!(c[0].vpc_security_groups, ["sg-0c3"]);
    assert_eq!(c[0].members, [format!("{cluster}-instance-1")]);
    assert_eq!(
        rds.describe_db_instances(&format!("{cluster}-instance-1"))
            .await?[0]
            .status,
        "available"
    );

    runs.complete("delete", "delete", json!({"backupInfo": info}))
        .await?;
    let gone = rds
        .describe_db_cluster_snapshots(&snapshot)
        .await
        .unwrap_err();
    assert!(gone.is_not_found(DB_CLUSTER_SNAPSHOT_NOT_FOUND), "{gone}");
    Ok(())
}

/// A wrong secret key: the phase fails with AWS's error for the call it made (no snapshot is
/// made); an instance that does not exist: RDS's DBInstanceNotFound, named.
#[tokio::test]
async fn wrong_credentials_and_a_missing_instance_fail_naming_the_call_and_aws_message()
-> anyhow::Result<()> {
    let Some((client, ns, corpus)) = setup("rds-bad").await else {
        return Ok(());
    };
    let (subnets, db) = (format!("{ns}-subnets"), format!("{ns}-pg"));
    moto::subnet_group(&subnets).await?;
    moto::postgres_instance(&db, "15.4", &subnets, &["sg-0a1"]).await?;
    rds_profile(&client, &ns, "wrong", Some("not-the-secret-key")).await?;
    let data = json!({"postgres.instanceid": db});
    let file = "postgresql/rds-postgres-snap-blueprint.yaml";
    let (bp, _controller) = corpus_setup(&client, &ns, &corpus, data, file).await?;
    let runs = Runs {
        client: &client,
        ns: &ns,
        blueprint: &bp,
    };

    let msg = runs.fail("backup-wrong", "backup", "wrong").await?;
    assert!(
        msg.contains("CreateRDSSnapshot: Failed to create snapshot: RDS CreateDBSnapshot: SignatureDoesNotMatch: ")
            && msg.contains("the secret access key does not match the access key ID"),
        "{msg}"
    );
    let r = moto::server()
        .client(None)
        .call(
            "DescribeDBSnapshots",
            &[
                ("DBInstanceIdentifier", db.as_str()),
                ("SnapshotType", "manual"),
            ],
        )
        .await?;
    assert!(
        r.child("DBSnapshots").is_none_or(|l| l.children.is_empty()),
        "a snapshot was made: {r:?}"
    );

    // The ConfigMap names an instance that does not exist.
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), &ns);
    cms.patch(
        "dbconfig",
        &kube::api::PatchParams::default(),
        &kube::api::Patch::Merge(json!({"data": {"postgres.instanceid": format!("{ns}-nope")}})),
    )
    .await?;
    let msg = runs.fail("backup-missing", "backup", "aws").await?;
    assert!(
        msg.contains(&format!("CreateRDSSnapshot: Failed to create snapshot: RDS CreateDBSnapshot: DBInstanceNotFound: DBInstance {ns}-nope not found")),
        "{msg}"
    );
    Ok(())
}

/// A Blueprint of one ExportRDSSnapshotToLocation phase, its arguments from ConfigMap dbconfig.
async fn create_export_blueprint(client: &Client, ns: &str) -> anyhow::Result<()> {
    let actions = json!({"export": {"phases": [{
            "func": "ExportRDSSnapshotToLocation", "name": "exportSnapshot",
            "args": {
                "namespace": "{{ .Object.metadata.namespace }}",
                "instanceID": "{{ index .Object.data \"instance\" }}",
                "snapshotID": "{{ index .Object.data \"snapshot\" }}",
                "dbEngine": "PostgreSQL",
                "username": "postgres", "password": "password1",
                "databases": "- app\n",
                "dbSubnetGroup": "{{ index .Object.data \"subnets\" }}",
                "backupArtifactPrefix": "rds/dumps",
            },
    }]}});
    support::kanister::create_blueprint(client, ns, "rds-export", actions).await
}

/// What the export tests start from: subnet group `<ns>-subnets`, instance `<ns>-pg` and its
/// snapshot `<ns>-pg-snap` in moto, Profile `aws` and the export Blueprint. Returns (subnet
/// group, instance, snapshot).
async fn export_setup(client: &Client, ns: &str) -> anyhow::Result<(String, String, String)> {
    let (subnets, db) = (format!("{ns}-subnets"), format!("{ns}-pg"));
    moto::subnet_group(&subnets).await?;
    moto::postgres_instance(&db, "15.4", &subnets, &["sg-0a1"]).await?;
    let snapshot = format!("{db}-snap");
    moto::server()
        .client(None)
        .create_db_snapshot(&db, &snapshot)
        .await?;
    rds_profile(client, ns, "aws", None).await?;
    create_export_blueprint(client, ns).await?;
    Ok((subnets, db, snapshot))
}

/// Temporary instances (`<db>-<10 characters>`) moto still has.
async fn temporary_instances(db: &str) -> anyhow::Result<Vec<String>> {
    Ok(moto::instance_ids()
        .await?
        .into_iter()
        .filter(|i| i.starts_with(&format!("{db}-")))
        .collect())
}

/// Waits (at most `timeout`) until moto has no temporary instance of `db` left.
async fn no_temporary_instance_left(db: &str, timeout: Duration) -> anyhow::Result<()> {
    support::poll(timeout, || async {
        temporary_instances(db).await.ok()?.is_empty().then_some(())
    })
    .await
    .context("the temporary instance is deleted")
}

/// ExportRDSSnapshotToLocation fails clearly and leaves no temporary instance: a snapshot that
/// does not exist, wrong credentials, a dump that fails (the database host does not resolve
/// here: the pod's exec runs on this machine), and, through a proxy on which instances never
/// become available, a wait that times out (`BPO_RDS_WAIT_TIMEOUT`).
#[tokio::test]
async fn export_failures_name_the_call_and_leave_no_temporary_instance() -> anyhow::Result<()> {
    let Some((client, ns, _)) = setup("rds-export").await else {
        return Ok(());
    };
    support::data_plane::create_bucket("rds-dumps")?;
    let (subnets, db, snapshot) = export_setup(&client, &ns).await?;
    rds_profile(&client, &ns, "wrong", Some("not-the-secret-key")).await?;
    let runs = Runs {
        client: &client,
        ns: &ns,
        blueprint: "rds-export",
    };
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), &ns);
    let set = |snapshot: String| {
        let cms = cms.clone();
        let (db, subnets) = (db.clone(), subnets.clone());
        async move {
            let cm = json!({"data": {"instance": db, "snapshot": snapshot, "subnets": subnets}});
            if cms.get_opt("dbconfig").await?.is_some() {
                cms.patch(
                    "dbconfig",
                    &kube::api::PatchParams::default(),
                    &kube::api::Patch::Merge(cm),
                )
                .await?;
            } else {
                let mut cm = cm;
                cm["metadata"] = json!({"name": "dbconfig"});
                cms.create(&PostParams::default(), &serde_json::from_value(cm)?)
                    .await?;
            }
            anyhow::Ok(())
        }
    };
    let controller = controller(&ns);

    set(format!("{db}-nope")).await?;
    let msg = runs.fail("missing", "export", "aws").await?;
    assert!(
        msg.contains(&format!("ExportRDSSnapshotToLocation: Failed to restore snapshot. SnapshotID={db}-nope: Error restoring RDS DB instance from snapshot: RDS RestoreDBInstanceFromDBSnapshot: DBSnapshotNotFound: ")),
        "{msg}"
    );
    assert_eq!(temporary_instances(&db).await?, Vec::<String>::new());

    set(snapshot.clone()).await?;
    let msg = runs.fail("wrong", "export", "wrong").await?;
    assert!(
        msg.contains(
            "ExportRDSSnapshotToLocation: Failed to fetch security group ids. InstanceID="
        ) && msg.contains("RDS DescribeDBInstances: SignatureDoesNotMatch: "),
        "{msg}"
    );
    assert_eq!(temporary_instances(&db).await?, Vec::<String>::new());

    let msg = runs.fail("dump-fails", "export", "aws").await?;
    assert!(
        msg.contains("ExportRDSSnapshotToLocation: Unable to extract and push db dump to location: Failed to exec command in pod"),
        "{msg}"
    );
    no_temporary_instance_left(&db, support::WAIT).await?;
    support::function_pods_gone(&client, &ns).await?;
    controller.kill().await;

    // Instances never become available: the wait times out, the instance is deleted.
    let _controller = Controller::start_with(
        &ns,
        &[],
        &[
            ("AWS_ENDPOINT_URL_RDS", moto::never_available_proxy()),
            ("BPO_RDS_WAIT_TIMEOUT", "3s"),
        ],
    );
    let msg = runs.fail("timeout", "export", "aws").await?;
    assert!(
        msg.contains("Error while waiting for new rds instance to be ready.: timed out after 3s waiting for DB instance ")
            && msg.contains("to be available (last DescribeDBInstances: status \"modifying\")"),
        "{msg}"
    );
    no_temporary_instance_left(&db, support::WAIT).await?;
    Ok(())
}

/// An ActionSet deleted while its export waits for the temporary instance: the phase is
/// cancelled and the temporary instance is deleted all the same (instances never become
/// available through the proxy; the wait would last 10 minutes).
#[tokio::test]
async fn export_cancelled_by_deleting_the_actionset_deletes_the_temporary_instance()
-> anyhow::Result<()> {
    let Some((client, ns, _)) = setup("rds-cancel").await else {
        return Ok(());
    };
    let (subnets, db, snapshot) = export_setup(&client, &ns).await?;
    let runs = Runs {
        client: &client,
        ns: &ns,
        blueprint: "rds-export",
    };
    config_map(
        &client,
        &ns,
        json!({"instance": db, "snapshot": snapshot, "subnets": subnets}),
    )
    .await?;
    let _controller = Controller::start_with(
        &ns,
        &[],
        &[
            ("AWS_ENDPOINT_URL_RDS", moto::never_available_proxy()),
            ("BPO_RDS_WAIT_TIMEOUT", "10m"),
        ],
    );
    runs.start("export", "export", "aws", json!({})).await?;
    let tmp = support::poll(FINISH, || async {
        temporary_instances(&db).await.ok()?.into_iter().next()
    })
    .await
    .context("the temporary instance is made")?;
    Api::<ActionSet>::namespaced(client.clone(), &ns)
        .delete("export", &Default::default())
        .await?;
    no_temporary_instance_left(&db, FINISH)
        .await
        .with_context(|| format!("the temporary instance {tmp} is deleted"))?;
    Ok(())
}
