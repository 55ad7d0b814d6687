//! The RDS dump path with real rows: the corpus Blueprint
//! `kanister-examples/aws-rds/postgresql/rds-postgres-dump-blueprint.yaml`, AS WRITTEN, run by the
//! installed controller against moto (tests/support/moto.rs, on the node's bridge address; the
//! controller's `AWS_ENDPOINT_URL_RDS` points at it) with the real PostgreSQL of
//! `databases::postgres` standing in for the database behind every DB instance moto reports:
//! the cluster's CoreDNS answers each `*.rds.amazonaws.com` name as `rds-endpoint.bpo.test`
//! (tools/control-plane/real-node/Corefile.in), which this test maps to the PostgreSQL Service in
//! the node's `dns-hosts`. So ExportRDSSnapshotToLocation's pg_dump (from the temporary instance
//! restored from the snapshot) and RestoreRDSSnapshot's psql move real rows, in pods of
//! `ghcr.io/kanisterio/postgres-kanister-tools:0.119.0` (the functions' default image, built here
//! by tools/images/build.sh), through kando to the test object store.

use std::path::PathBuf;

use serde_json::{Value, json};

use crate::databases::{
    PG_PASSWORD, PG_ROWS, PG_SELECT, PG_STS, apply_in, assert_pg_rows_back, corpus_blueprint, exec,
    keys, postgres, psql,
};
use crate::functions::run_spec;
use crate::install::{NS, apply_yaml};
use crate::real::kubectl;
use crate::support::moto;

const BLUEPRINT: &str = "kanister-examples/aws-rds/postgresql/rds-postgres-dump-blueprint.yaml";
/// The Blueprint's `backupArtifactPrefix`.
const DUMP_PREFIX: &str = "test-postgresql-instance/postgres/";
/// The name CoreDNS gives every `*.rds.amazonaws.com` query (Corefile.in).
const RDS_NAME: &str = "rds-endpoint.bpo.test";
const CONTROLLER: &str = "deployment/blueprint-operator-controller";

/// An environment variable set on the installed controller (rolled out, every pod without it
/// gone), removed again when dropped: later tests get the install as it was.
struct ControllerEnv(&'static str);

impl ControllerEnv {
    async fn set(name: &'static str, value: &str) -> Self {
        let pods = || crate::real::pod_names(NS, "app.kubernetes.io/component=controller");
        let before = pods().unwrap();
        kubectl(&[
            "set",
            "env",
            "-n",
            NS,
            CONTROLLER,
            &format!("{name}={value}"),
        ])
        .unwrap();
        let guard = ControllerEnv(name);
        kubectl(&["rollout", "status", "-n", NS, CONTROLLER, "--timeout=180s"]).unwrap();
        // A terminating replica could still hold the Lease and run an ActionSet without it.
        crate::support::poll(crate::real::WAIT, || async {
            pods()
                .ok()
                .filter(|now| !now.iter().any(|p| before.contains(p)))
        })
        .await
        .unwrap_or_else(|e| panic!("the controller's pods without {name} did not go: {e}"));
        guard
    }
}

impl Drop for ControllerEnv {
    fn drop(&mut self) {
        let unset = format!("{}-", self.0);
        if let Err(e) = kubectl(&["set", "env", "-n", NS, CONTROLLER, &unset]) {
            eprintln!("could not remove {} from the controller: {e:#}", self.0);
        }
    }
}

/// The node's extra DNS names (`$BPO_CLUSTER_DIR/real-node/dns-hosts`, read by CoreDNS every
/// second), emptied again when dropped.
struct DnsHosts(PathBuf);

impl DnsHosts {
    fn set(text: &str) -> Self {
        let dir = std::env::var_os("BPO_CLUSTER_DIR")
            .expect("BPO_CLUSTER_DIR: the real node's cluster directory (tools/test.sh --real)");
        let path = PathBuf::from(dir).join("real-node/dns-hosts");
        assert!(path.exists(), "{} is missing", path.display());
        std::fs::write(&path, text).unwrap();
        DnsHosts(path)
    }
}

impl Drop for DnsHosts {
    fn drop(&mut self) {
        let _ = std::fs::write(&self.0, "");
    }
}

/// The manual DB snapshots moto has of instance `db`.
async fn snapshots(db: &str) -> Vec<String> {
    let r = moto::server()
        .client(None)
        .call(
            "DescribeDBSnapshots",
            &[("DBInstanceIdentifier", db), ("SnapshotType", "manual")],
        )
        .await
        .unwrap_or_else(|e| panic!("DescribeDBSnapshots: {e}"));
    r.child("DBSnapshots")
        .map(|l| {
            l.children
                .iter()
                .filter_map(|s| s.child_text("DBSnapshotIdentifier"))
                .collect()
        })
        .unwrap_or_default()
}

/// The DB instances moto has whose identifier starts with `prefix`.
async fn instances_with_prefix(prefix: &str) -> Vec<String> {
    moto::instance_ids()
        .await
        .unwrap()
        .into_iter()
        .filter(|i| i.starts_with(prefix))
        .collect()
}

#[tokio::test]
#[ignore = "real tier: tools/test.sh --real"]
async fn corpus_rds_postgres_dump_blueprint_dumps_restores_and_deletes_real_rows_through_moto() {
    let bucket = "bpo-real-rds";
    let ns = postgres("rds", bucket).await;
    let m = moto::server();
    let _endpoint = ControllerEnv::set("AWS_ENDPOINT_URL_RDS", &m.endpoint).await;
    let service_ip = kubectl(&[
        "get",
        "service",
        "-n",
        &ns,
        PG_STS,
        "-o",
        "jsonpath={.spec.clusterIP}",
    ])
    .unwrap();
    let _dns = DnsHosts::set(&format!("{} {RDS_NAME}\n", service_ip.trim()));

    // The DB instance the Blueprint backs up, in moto.
    let (subnets, db) = (format!("{ns}-subnets"), format!("{ns}-pg"));
    moto::subnet_group(&subnets).await.unwrap();
    moto::postgres_instance(&db, "15.4", &subnets, &["sg-0a1"])
        .await
        .unwrap();
    let described = m
        .client(None)
        .describe_db_instances(&db)
        .await
        .unwrap()
        .into_iter()
        .next()
        .unwrap();
    let host = described.endpoint_address.clone().unwrap();
    assert!(host.ends_with(".rds.amazonaws.com"), "{described:?}");
    // Its name reaches the real PostgreSQL from a pod (CoreDNS reads dns-hosts within a second).
    let pg_pod = format!("{PG_STS}-0");
    let probe = format!(
        "PGPASSWORD={PG_PASSWORD} PGCONNECT_TIMEOUT=5 psql -h {host} -U postgres -At -c 'SELECT 1' postgres"
    );
    crate::support::poll(crate::real::WAIT, || async {
        kubectl(&["exec", "-n", &ns, &pg_pod, "--", "bash", "-c", &probe])
            .ok()
            .filter(|out| out.trim() == "1")
    })
    .await
    .unwrap_or_else(|e| panic!("{host} does not reach PostgreSQL from a pod: {e}"));

    exec(
        &ns,
        &pg_pod,
        "psql -v ON_ERROR_STOP=1 -h /var/run/postgresql -U postgres -c 'CREATE DATABASE shop'",
    );
    psql(&ns, PG_ROWS);
    let rows = psql(&ns, PG_SELECT);
    assert_eq!(rows.lines().count(), 502, "{rows}");

    // What the Blueprint reads: the ConfigMap (its object), the AWS keys and the database user.
    apply_yaml(&format!(
        r#"apiVersion: v1
kind: Secret
metadata: {{name: aws-creds, namespace: {ns}}}
type: secrets.kanister.io/aws
stringData: {{aws_access_key_id: {key}, aws_secret_access_key: {secret}}}
---
apiVersion: v1
kind: Secret
metadata: {{name: db-creds, namespace: {ns}}}
stringData: {{username: postgres, password: {PG_PASSWORD}}}
---
apiVersion: v1
kind: ConfigMap
metadata: {{name: dbconfig, namespace: {ns}}}
data:
  aws.secret: aws-creds
  aws.region: {region}
  postgres.instanceid: {db}
  postgres.secret: db-creds
  postgres.databases: |
    - shop
"#,
        key = m.access_key,
        secret = m.secret_key,
        region = moto::REGION,
    ))
    .unwrap();
    apply_in(&ns, &corpus_blueprint(BLUEPRINT));
    let action = |name: &str, object: Value, artifacts: Value| {
        json!({
            "name": name, "blueprint": "rds-postgres-dump-bp", "object": object,
            "profile": {"name": "s3", "namespace": ns}, "artifacts": artifacts,
        })
    };
    let config_map =
        json!({"apiVersion": "v1", "resource": "configmaps", "name": "dbconfig", "namespace": ns});

    // backup: CreateRDSSnapshot, ExportRDSSnapshotToLocation (pg_dump of a temporary instance
    // restored from the snapshot, pushed to the store), DeleteRDSSnapshot.
    let backup = run_spec(&ns, action("backup", config_map.clone(), json!({}))).await;
    assert_eq!(backup["status"]["state"], "complete", "{backup:#}");
    let info = backup["status"]["actions"][0]["artifacts"]["backupInfo"].clone();
    let kv = &info["keyValue"];
    let backup_id = kv["backupID"].as_str().unwrap_or_default().to_string();
    assert!(
        backup_id.starts_with("backup-") && backup_id.ends_with(".tar.gz"),
        "{info}"
    );
    assert!(
        kv["snapshotID"]
            .as_str()
            .is_some_and(|s| s.starts_with(&format!("{db}-"))),
        "{info}"
    );
    assert_eq!(kv["instanceID"], db.as_str(), "{info}");
    assert_eq!(kv["securityGroupID"], "- sg-0a1\n", "{info}");
    assert_eq!(kv["dbSubnetGroup"], subnets.as_str(), "{info}");
    assert_eq!(
        keys(bucket, DUMP_PREFIX).await,
        vec![format!("{DUMP_PREFIX}{backup_id}")],
        "the dump is in the store"
    );
    // The Blueprint's last phase deleted the snapshot; the temporary instance is gone too.
    assert_eq!(snapshots(&db).await, Vec::<String>::new(), "{info}");
    assert_eq!(
        instances_with_prefix(&db).await,
        vec![db.clone()],
        "no temporary instance is left"
    );

    // restore: RestoreRDSSnapshot without a snapshot psql's the dump into instance `db`.
    psql(&ns, "DROP TABLE items");
    assert_eq!(
        psql(
            &ns,
            "SELECT count(*) FROM pg_tables WHERE tablename = 'items'"
        )
        .trim(),
        "0"
    );
    let restore = run_spec(
        &ns,
        action("restore", config_map, json!({"backupInfo": info})),
    )
    .await;
    assert_eq!(restore["status"]["state"], "complete", "{restore:#}");
    assert_eq!(
        restore["status"]["actions"][0]["phases"][0]["output"]["endpoint"],
        host.as_str(),
        "{restore:#}"
    );
    assert_pg_rows_back(&ns, &rows);

    // delete: a KubeTask (ghcr.io/kanisterio/kanister-tools:0.117.0) removes the dump; it renders
    // `.Namespace.Name`, so it runs on the namespace (as `kanctl --namespacetargets`).
    let delete = run_spec(
        &ns,
        action(
            "delete",
            json!({"kind": "Namespace", "name": ns, "namespace": ns}),
            json!({"backupInfo": info}),
        ),
    )
    .await;
    assert_eq!(delete["status"]["state"], "complete", "{delete:#}");
    assert_eq!(
        keys(bucket, DUMP_PREFIX).await,
        Vec::<String>::new(),
        "the dump is gone"
    );
    assert_eq!(
        instances_with_prefix(&db).await,
        vec![db.clone()],
        "no temporary instance is left"
    );
}
