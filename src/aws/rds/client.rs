//! The RDS client: AWS's query protocol (a form-encoded POST of `Action`, `Version` and the
//! call's parameters, an XML answer), signed with SigV4 by [`crate::aws::sigv4`]
//! (service `rds`), sent through hyper and rustls, retried as AWS's SDKs retry (throttling,
//! server errors, no answer: ten attempts, Kanister's `RetryMaxAttempts`), XML read with the
//! S3 client's `quick-xml` element tree. The typed calls are the ones Kanister's
//! `pkg/aws/rds` makes; [`RdsClient::call`] makes any other (the tests set moto up with it).

use std::time::Duration;

use backon::{ExponentialBuilder, Retryable as _};
use bytes::Bytes;
use http::Method;

use super::error::RdsError;
use crate::aws::exchange::{
    self, Answer, Failure, HttpClient, Limits, Request, Signer, endpoint_parts, http_client,
};
use crate::aws::sigv4::{Credentials, sha256_hex, uri_encode};
use crate::aws::xml::{self, Element};

/// The RDS API version of the query protocol.
const VERSION: &str = "2014-10-31";
/// Time one HTTP exchange may take; largest answer read.
const LIMITS: Limits = Limits {
    timeout: Duration::from_secs(60),
    max_body: 16 << 20,
};
/// Attempts of one call (Kanister sets the SDK's `RetryMaxAttempts` to 10).
const ATTEMPTS: usize = 10;

/// Where and how to reach RDS.
#[derive(Debug, Clone)]
pub struct Config {
    pub region: String,
    /// `http(s)://host[:port]`; `None`: AWS's `https://rds.<region>.amazonaws.com`.
    pub endpoint: Option<String>,
    pub credentials: Credentials,
    /// Where the credentials came from, for error hints ("the Profile ns/name", ...).
    pub credentials_source: String,
}

/// An RDS client for one region and endpoint (cheap to clone: the connection pool is shared).
#[derive(Clone)]
pub struct RdsClient {
    http: HttpClient,
    /// `scheme://authority`, no trailing `/`.
    endpoint: String,
    authority: String,
    region: String,
    credentials: Credentials,
    credentials_source: String,
}

impl std::fmt::Debug for RdsClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RdsClient")
            .field("endpoint", &self.endpoint)
            .field("region", &self.region)
            .finish()
    }
}

impl RdsClient {
    pub fn new(cfg: &Config) -> Result<Self, RdsError> {
        let endpoint = match cfg.endpoint.as_deref().map(str::trim) {
            None | Some("") => format!("https://rds.{}.amazonaws.com", cfg.region),
            Some(e) if e.contains("://") => e.trim_end_matches('/').to_string(),
            Some(e) => format!("https://{}", e.trim_end_matches('/')),
        };
        let (_, scheme, authority) = endpoint_parts(
            &endpoint,
            &format!("the RDS endpoint {endpoint:?}"),
            "https://rds.us-east-1.amazonaws.com",
        )
        .map_err(RdsError::Config)?;
        Ok(RdsClient {
            http: http_client(scheme == "https", false).map_err(RdsError::Config)?,
            endpoint: format!("{scheme}://{authority}"),
            authority,
            region: cfg.region.clone(),
            credentials: cfg.credentials.clone(),
            credentials_source: cfg.credentials_source.clone(),
        })
    }

    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    pub fn region(&self) -> &str {
        &self.region
    }

    /// Calls `action` with `params` (query-protocol names, e.g.
    /// `VpcSecurityGroupIds.VpcSecurityGroupId.1`); returns its `<{action}Result>` element
    /// (an empty one when the answer has none). Transient failures are retried.
    pub async fn call(
        &self,
        action: &'static str,
        params: &[(&str, &str)],
    ) -> Result<Element, RdsError> {
        let mut form = vec![
            format!("Action={}", uri_encode(action, false)),
            format!("Version={VERSION}"),
        ];
        form.extend(
            params
                .iter()
                .map(|(k, v)| format!("{}={}", uri_encode(k, false), uri_encode(v, false))),
        );
        let body = Bytes::from(form.join("&"));
        let doc = (|| self.attempt(action, body.clone()))
            .retry(
                ExponentialBuilder::default()
                    .with_min_delay(Duration::from_millis(250))
                    .with_max_delay(Duration::from_secs(20))
                    .with_jitter()
                    .with_max_times(ATTEMPTS - 1),
            )
            .sleep(tokio::time::sleep)
            .when(RdsError::is_transient)
            .notify(|e, after| tracing::debug!(call = action, error = %e, ?after, "RDS: retrying"))
            .await?;
        let result = format!("{action}Result");
        Ok(doc
            .children
            .into_iter()
            .find(|c| c.name == result)
            .unwrap_or_default())
    }

    /// One signed POST and its answer: the response document, or the error.
    async fn attempt(&self, call: &'static str, body: Bytes) -> Result<Element, RdsError> {
        let url = format!("{}/", self.endpoint);
        let content_type = "application/x-www-form-urlencoded; charset=utf-8";
        let headers = [
            ("host", self.authority.as_str()),
            ("content-type", content_type),
        ];
        let signer = Signer {
            credentials: &self.credentials,
            region: &self.region,
            service: "rds",
        };
        let payload_hash = sha256_hex(&body);
        let request = Request {
            method: Method::POST,
            url: &url,
            headers: &headers,
            body,
            payload_hash: &payload_hash,
        };
        let transport = |message: String| RdsError::Transport {
            call,
            endpoint: self.endpoint.clone(),
            message,
        };
        let answer = exchange::exchange(&self.http, &signer, request, LIMITS, false)
            .await
            .map_err(|f| match f {
                Failure::Sign(e) => RdsError::Config(format!("RDS {call}: {e}")),
                Failure::Build(e) => {
                    RdsError::Config(format!("RDS {call}: cannot build the request: {e}"))
                }
                Failure::Connect(msg) => transport(format!(
                    "{msg} (cannot connect: check that RDS is reachable from the controller, and AWS_ENDPOINT_URL_RDS if set)"
                )),
                Failure::Transport(msg) => transport(msg),
            })?;
        let (status, bytes) = match answer {
            Answer::Whole { status, body, .. } => (status, body),
            Answer::Open(_) => unreachable!("not asked to stream"),
        };
        let text = String::from_utf8_lossy(&bytes);
        let parsed = xml::parse(&text);
        if status.is_success() {
            return parsed.map_err(|source| RdsError::Document {
                call,
                endpoint: self.endpoint.clone(),
                source,
            });
        }
        // <ErrorResponse><Error><Code/><Message/></Error></ErrorResponse>, or with
        // <Errors> around the <Error> (EC2's shape, which some answers have).
        let error = parsed.ok().and_then(|d| {
            let e = find_error(&d)?;
            Some((
                e.child_text("Code").unwrap_or_default(),
                e.child_text("Message").unwrap_or_default(),
            ))
        });
        let (code, message) = match error {
            Some((code, message)) if !code.is_empty() => (code, message),
            _ => (
                format!("HTTP{}", status.as_u16()),
                xml::snippet(&text).to_string(),
            ),
        };
        Err(RdsError::Api {
            call,
            status: status.as_u16(),
            code,
            message,
            credentials: self.credentials_source.clone(),
        })
    }
}

/// The first `<Error>` element at or below `e`.
fn find_error(e: &Element) -> Option<&Element> {
    if e.name == "Error" {
        return Some(e);
    }
    e.children.iter().find_map(find_error)
}

/// An RDS list parameter: `<name>.<member>.1=...`.
pub fn list_params(name: &str, member: &str, values: &[String]) -> Vec<(String, String)> {
    values
        .iter()
        .enumerate()
        .map(|(i, v)| (format!("{name}.{member}.{}", i + 1), v.clone()))
        .collect()
}

/// A DB instance, as far as the functions read it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DbInstance {
    pub id: String,
    pub status: String,
    pub engine_version: Option<String>,
    pub endpoint_address: Option<String>,
    pub vpc_security_groups: Vec<String>,
    pub db_subnet_group: Option<String>,
}

impl DbInstance {
    fn from(e: &Element) -> Self {
        DbInstance {
            id: e.child_text("DBInstanceIdentifier").unwrap_or_default(),
            status: e.child_text("DBInstanceStatus").unwrap_or_default(),
            engine_version: e.child_text("EngineVersion"),
            endpoint_address: e.child("Endpoint").and_then(|x| x.child_text("Address")),
            vpc_security_groups: security_groups(e),
            db_subnet_group: e
                .child("DBSubnetGroup")
                .and_then(|g| g.child_text("DBSubnetGroupName")),
        }
    }
}

/// An Aurora DB cluster.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DbCluster {
    pub id: String,
    pub status: String,
    pub vpc_security_groups: Vec<String>,
    pub db_subnet_group: Option<String>,
    pub members: Vec<String>,
}

impl DbCluster {
    fn from(e: &Element) -> Self {
        DbCluster {
            id: e.child_text("DBClusterIdentifier").unwrap_or_default(),
            status: e.child_text("Status").unwrap_or_default(),
            vpc_security_groups: security_groups(e),
            db_subnet_group: e.child_text("DBSubnetGroup").filter(|s| !s.is_empty()),
            members: e
                .child("DBClusterMembers")
                .map(|m| {
                    m.children
                        .iter()
                        .filter_map(|c| c.child_text("DBInstanceIdentifier"))
                        .collect()
                })
                .unwrap_or_default(),
        }
    }
}

/// A DB snapshot or DB cluster snapshot.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Snapshot {
    pub id: String,
    pub status: String,
    pub allocated_storage: Option<i64>,
    pub engine_version: Option<String>,
}

impl Snapshot {
    fn from(e: &Element, id_field: &str) -> Self {
        Snapshot {
            id: e.child_text(id_field).unwrap_or_default(),
            status: e.child_text("Status").unwrap_or_default(),
            allocated_storage: e
                .child_text("AllocatedStorage")
                .and_then(|s| s.parse().ok()),
            engine_version: e.child_text("EngineVersion"),
        }
    }
}

/// `VpcSecurityGroups/VpcSecurityGroupMembership/VpcSecurityGroupId`.
fn security_groups(e: &Element) -> Vec<String> {
    e.child("VpcSecurityGroups")
        .map(|g| {
            g.children
                .iter()
                .filter_map(|m| m.child_text("VpcSecurityGroupId"))
                .collect()
        })
        .unwrap_or_default()
}

/// The `<item>` elements of list `list` in `result`.
fn items<'a>(result: &'a Element, list: &str) -> Vec<&'a Element> {
    result
        .child(list)
        .map(|l| l.children.iter().collect())
        .unwrap_or_default()
}

/// What a call answered that the functions need, or an error naming the call.
fn required<'a>(
    result: &'a Element,
    call: &'static str,
    endpoint: &str,
    child: &str,
) -> Result<&'a Element, RdsError> {
    result.child(child).ok_or_else(|| RdsError::Response {
        call,
        endpoint: endpoint.to_string(),
        message: format!("the answer has no {child}"),
    })
}

/// The calls Kanister's `pkg/aws/rds` makes.
impl RdsClient {
    pub async fn create_db_snapshot(
        &self,
        instance_id: &str,
        snapshot_id: &str,
    ) -> Result<Snapshot, RdsError> {
        let of = ("DBInstanceIdentifier", instance_id);
        self.create_snapshot("CreateDBSnapshot", of, "DBSnapshot", snapshot_id)
            .await
    }

    pub async fn create_db_cluster_snapshot(
        &self,
        cluster_id: &str,
        snapshot_id: &str,
    ) -> Result<Snapshot, RdsError> {
        let of = ("DBClusterIdentifier", cluster_id);
        self.create_snapshot(
            "CreateDBClusterSnapshot",
            of,
            "DBClusterSnapshot",
            snapshot_id,
        )
        .await
    }

    /// `call` makes snapshot `<kind>Identifier` = `snapshot_id` of `of` (parameter, id); the
    /// answer's `<kind>` is the snapshot.
    async fn create_snapshot(
        &self,
        call: &'static str,
        of: (&str, &str),
        kind: &str,
        snapshot_id: &str,
    ) -> Result<Snapshot, RdsError> {
        let id_field = format!("{kind}Identifier");
        let r = self
            .call(call, &[of, (id_field.as_str(), snapshot_id)])
            .await?;
        Ok(Snapshot::from(
            required(&r, call, &self.endpoint, kind)?,
            &id_field,
        ))
    }

    /// `call` with `<id_param>` = `id`: the `<list>` items of the answer, read by `from`.
    async fn describe<T>(
        &self,
        call: &'static str,
        id_param: &str,
        id: &str,
        list: &str,
        from: impl Fn(&Element) -> T,
    ) -> Result<Vec<T>, RdsError> {
        let r = self.call(call, &[(id_param, id)]).await?;
        Ok(items(&r, list).into_iter().map(from).collect())
    }

    pub async fn describe_db_instances(&self, id: &str) -> Result<Vec<DbInstance>, RdsError> {
        let (call, param) = ("DescribeDBInstances", "DBInstanceIdentifier");
        self.describe(call, param, id, "DBInstances", DbInstance::from)
            .await
    }

    pub async fn describe_db_clusters(&self, id: &str) -> Result<Vec<DbCluster>, RdsError> {
        let (call, param) = ("DescribeDBClusters", "DBClusterIdentifier");
        self.describe(call, param, id, "DBClusters", DbCluster::from)
            .await
    }

    pub async fn describe_db_snapshots(&self, id: &str) -> Result<Vec<Snapshot>, RdsError> {
        let (call, param) = ("DescribeDBSnapshots", "DBSnapshotIdentifier");
        self.describe(call, param, id, "DBSnapshots", |e| Snapshot::from(e, param))
            .await
    }

    pub async fn describe_db_cluster_snapshots(&self, id: &str) -> Result<Vec<Snapshot>, RdsError> {
        let (call, param) = ("DescribeDBClusterSnapshots", "DBClusterSnapshotIdentifier");
        self.describe(call, param, id, "DBClusterSnapshots", |e| {
            Snapshot::from(e, param)
        })
        .await
    }

    pub async fn delete_db_snapshot(&self, id: &str) -> Result<(), RdsError> {
        self.call("DeleteDBSnapshot", &[("DBSnapshotIdentifier", id)])
            .await
            .map(drop)
    }

    pub async fn delete_db_cluster_snapshot(&self, id: &str) -> Result<(), RdsError> {
        self.call(
            "DeleteDBClusterSnapshot",
            &[("DBClusterSnapshotIdentifier", id)],
        )
        .await
        .map(drop)
    }

    /// Deletes an instance without a final snapshot (as Kanister does).
    pub async fn delete_db_instance(&self, id: &str) -> Result<(), RdsError> {
        self.call(
            "DeleteDBInstance",
            &[("DBInstanceIdentifier", id), ("SkipFinalSnapshot", "true")],
        )
        .await
        .map(drop)
    }

    /// Deletes a cluster without a final snapshot (as Kanister does).
    pub async fn delete_db_cluster(&self, id: &str) -> Result<(), RdsError> {
        self.call(
            "DeleteDBCluster",
            &[("DBClusterIdentifier", id), ("SkipFinalSnapshot", "true")],
        )
        .await
        .map(drop)
    }

    pub async fn restore_db_instance_from_db_snapshot(
        &self,
        instance_id: &str,
        subnet_group: &str,
        snapshot_id: &str,
        security_groups: &[String],
    ) -> Result<(), RdsError> {
        let sgs = list_params("VpcSecurityGroupIds", "VpcSecurityGroupId", security_groups);
        let mut params = vec![
            ("DBInstanceIdentifier", instance_id),
            ("DBSnapshotIdentifier", snapshot_id),
            ("DBSubnetGroupName", subnet_group),
        ];
        params.extend(sgs.iter().map(|(k, v)| (k.as_str(), v.as_str())));
        self.call("RestoreDBInstanceFromDBSnapshot", &params)
            .await
            .map(drop)
    }

    /// Restores Aurora cluster `cluster_id` from cluster snapshot `snapshot_id`; returns the
    /// cluster's identifier as AWS reports it.
    #[allow(clippy::too_many_arguments)]
    pub async fn restore_db_cluster_from_snapshot(
        &self,
        cluster_id: &str,
        subnet_group: &str,
        snapshot_id: &str,
        engine: &str,
        engine_version: &str,
        security_groups: Option<&[String]>,
    ) -> Result<String, RdsError> {
        const CALL: &str = "RestoreDBClusterFromSnapshot";
        let sgs = list_params(
            "VpcSecurityGroupIds",
            "VpcSecurityGroupId",
            security_groups.unwrap_or_default(),
        );
        let mut params = vec![
            ("Engine", engine),
            ("EngineVersion", engine_version),
            ("DBClusterIdentifier", cluster_id),
            ("SnapshotIdentifier", snapshot_id),
            ("DBSubnetGroupName", subnet_group),
        ];
        params.extend(sgs.iter().map(|(k, v)| (k.as_str(), v.as_str())));
        let r = self.call(CALL, &params).await?;
        Ok(DbCluster::from(required(&r, CALL, &self.endpoint, "DBCluster")?).id)
    }

    /// Creates an instance in Aurora cluster `cluster_id`; returns its identifier.
    pub async fn create_db_instance_in_cluster(
        &self,
        instance_class: &str,
        instance_id: &str,
        engine: &str,
        cluster_id: &str,
        subnet_group: &str,
    ) -> Result<String, RdsError> {
        const CALL: &str = "CreateDBInstance";
        let r = self
            .call(
                CALL,
                &[
                    ("DBInstanceClass", instance_class),
                    ("DBInstanceIdentifier", instance_id),
                    ("Engine", engine),
                    ("DBSubnetGroupName", subnet_group),
                    ("DBClusterIdentifier", cluster_id),
                ],
            )
            .await?;
        Ok(DbInstance::from(required(&r, CALL, &self.endpoint, "DBInstance")?).id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn instances_clusters_and_snapshots_are_read_from_rds_documents() {
        let doc = xml::parse(
            r#"<DescribeDBInstancesResponse xmlns="http://rds.amazonaws.com/doc/2014-10-31/">
  <DescribeDBInstancesResult><DBInstances><DBInstance>
    <DBInstanceIdentifier>pg-1</DBInstanceIdentifier><DBInstanceStatus>available</DBInstanceStatus>
    <EngineVersion>13.4</EngineVersion>
    <Endpoint><Address>pg-1.abc.us-east-1.rds.amazonaws.com</Address><Port>5432</Port></Endpoint>
    <VpcSecurityGroups>
      <VpcSecurityGroupMembership><Status>active</Status><VpcSecurityGroupId>sg-1</VpcSecurityGroupId></VpcSecurityGroupMembership>
      <VpcSecurityGroupMembership><Status>active</Status><VpcSecurityGroupId>sg-2</VpcSecurityGroupId></VpcSecurityGroupMembership>
    </VpcSecurityGroups>
    <DBSubnetGroup><DBSubnetGroupName>subnets-a</DBSubnetGroupName></DBSubnetGroup>
  </DBInstance></DBInstances></DescribeDBInstancesResult>
</DescribeDBInstancesResponse>"#,
        )
        .unwrap();
        let result = doc.child("DescribeDBInstancesResult").unwrap();
        let i = DbInstance::from(items(result, "DBInstances")[0]);
        assert_eq!(
            i,
            DbInstance {
                id: "pg-1".into(),
                status: "available".into(),
                engine_version: Some("13.4".into()),
                endpoint_address: Some("pg-1.abc.us-east-1.rds.amazonaws.com".into()),
                vpc_security_groups: vec!["sg-1".into(), "sg-2".into()],
                db_subnet_group: Some("subnets-a".into()),
            }
        );
        let c = xml::parse(
            "<DBCluster><DBClusterIdentifier>au</DBClusterIdentifier><Status>available</Status>\
             <DBSubnetGroup>sub</DBSubnetGroup><DBClusterMembers><DBClusterMember>\
             <DBInstanceIdentifier>au-1</DBInstanceIdentifier></DBClusterMember></DBClusterMembers></DBCluster>",
        )
        .unwrap();
        let c = DbCluster::from(&c);
        assert_eq!(c.members, ["au-1"]);
        assert_eq!(c.db_subnet_group.as_deref(), Some("sub"));
        assert!(c.vpc_security_groups.is_empty());
        let s = xml::parse(
            "<DBSnapshot><DBSnapshotIdentifier>s</DBSnapshotIdentifier><Status>creating</Status>\
             <AllocatedStorage>20</AllocatedStorage></DBSnapshot>",
        )
        .unwrap();
        assert_eq!(
            Snapshot::from(&s, "DBSnapshotIdentifier").allocated_storage,
            Some(20)
        );
        assert_eq!(
            list_params(
                "VpcSecurityGroupIds",
                "VpcSecurityGroupId",
                &["a".into(), "b".into()]
            ),
            [
                (
                    "VpcSecurityGroupIds.VpcSecurityGroupId.1".to_string(),
                    "a".to_string()
                ),
                (
                    "VpcSecurityGroupIds.VpcSecurityGroupId.2".to_string(),
                    "b".to_string()
                )
            ]
        );
    }

    #[test]
    fn error_documents_of_both_shapes_are_read() {
        for doc in [
            "<ErrorResponse><Error><Type>Sender</Type><Code>DBSnapshotNotFound</Code><Message>m</Message></Error></ErrorResponse>",
            "<ErrorResponse><Errors><Error><Code>DBSnapshotNotFound</Code><Message>m</Message></Error></Errors></ErrorResponse>",
        ] {
            let d = xml::parse(doc).unwrap();
            let e = find_error(&d).unwrap();
            assert_eq!(e.child_text("Code").as_deref(), Some("DBSnapshotNotFound"));
        }
    }

    #[test]
    fn endpoints_are_checked() {
        let cfg = |e: Option<&str>| Config {
            region: "eu-west-1".into(),
            endpoint: e.map(str::to_string),
            credentials: Credentials::default(),
            credentials_source: String::new(),
        };
        assert_eq!(
            RdsClient::new(&cfg(None)).unwrap().endpoint(),
            "https://rds.eu-west-1.amazonaws.com"
        );
        assert_eq!(
            RdsClient::new(&cfg(Some("http://127.0.0.1:5000/")))
                .unwrap()
                .endpoint(),
            "http://127.0.0.1:5000"
        );
        let e = RdsClient::new(&cfg(Some("ftp://x")))
            .unwrap_err()
            .to_string();
        assert!(e.contains("only http and https"), "{e}");
    }
}
