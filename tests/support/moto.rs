//! moto's standalone server (tools/moto/build.sh), the AWS API stand-in of the RDS function
//! tests and the strict S3 of the data tests: started once per test binary on 127.0.0.1 (or
//! `BPO_TEST_HOST_IP`), stopped when the binary exits (the same watchdog as the object store's).
//! It checks signatures: at start an IAM user with an allow-all policy and its access key are
//! made, then moto's IAM authentication is switched on, so every call must be signed with that
//! key (SigV4 computed by botocore, an implementation independent of ours) and a wrong key or
//! secret gets AWS's InvalidClientTokenId / SignatureDoesNotMatch. It runs behind
//! tools/moto/strict_server.py, which refuses what AWS S3 refuses and moto takes (a PUT or POST
//! without Content-Length, bodies that differ from their Content-MD5 or x-amz-content-sha256).
//! Each test makes DB instances, clusters and buckets of its own names; the server's state is
//! shared by the binary's tests.
#![allow(dead_code)]

use std::io::{Read as _, Write as _};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::sync::OnceLock;
use std::time::Duration;

use anyhow::Context as _;
use blueprint_operator::aws::rds::client::{Config, RdsClient};
use blueprint_operator::aws::s3::Credentials;

pub const REGION: &str = "us-east-1";

/// A running moto server and the key it accepts.
#[derive(Debug)]
pub struct Moto {
    /// `http://HOST:PORT`.
    pub endpoint: String,
    pub access_key: String,
    pub secret_key: String,
    /// Subnets of moto's default VPC (for DB subnet groups).
    pub subnets: Vec<String>,
}

impl Moto {
    /// A client signing with the server's key (`secret` replaces the secret key when given).
    pub fn client(&self, secret: Option<&str>) -> RdsClient {
        RdsClient::new(&Config {
            region: REGION.into(),
            endpoint: Some(self.endpoint.clone()),
            credentials: Credentials {
                access_key_id: self.access_key.clone(),
                secret_access_key: secret.unwrap_or(&self.secret_key).to_string(),
                session_token: None,
            },
            credentials_source: "the test's moto key".into(),
        })
        .expect("RDS client for moto")
    }
}

/// `tools/moto/build.sh` output: the moto_server script (built on first use: ~1 min).
fn server_path() -> Result<&'static PathBuf, String> {
    static PATH: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    PATH.get_or_init(|| {
        let mut paths = super::server::built_tools("tools/moto/build.sh", &["moto_server"])?;
        Ok(paths.remove(0))
    })
    .as_ref()
    .map_err(Clone::clone)
}

/// The moto server of this test binary; the first call starts it (and builds it if needed).
pub fn server() -> &'static Moto {
    static MOTO: OnceLock<Moto> = OnceLock::new();
    MOTO.get_or_init(|| start().unwrap_or_else(|e| panic!("moto did not start: {e:#}")))
}

fn start() -> anyhow::Result<Moto> {
    let bin = server_path().map_err(anyhow::Error::msg)?.clone();
    let host = super::server::host();
    let port = super::server::free_port(&host)?;
    let addr = format!("{host}:{port}");
    // moto_server's own interpreter (the venv's) runs it behind the strict checks.
    let python = bin.with_file_name("python3");
    let strict = concat!(env!("CARGO_MANIFEST_DIR"), "/tools/moto/strict_server.py");
    let args = [strict, "-H", &host, "-p", &port.to_string()];
    let moto = super::server::spawn_watched("moto", &python, &args, &addr)?;
    let ready = || post(&addr, "/moto-api/reset", "", None).is_ok();
    moto.wait_ready(Duration::from_secs(60), Duration::from_millis(200), ready)?;
    // Before authentication is on: the IAM user and key, the default VPC's subnets.
    let iam = |body: &str| {
        post(
            &addr,
            "/",
            &format!("{body}&Version=2010-05-08"),
            Some("iam"),
        )
        .with_context(|| format!("IAM {body}"))
    };
    iam("Action=CreateUser&UserName=bpo-test")?;
    iam(&format!(
        "Action=PutUserPolicy&UserName=bpo-test&PolicyName=all&PolicyDocument={}",
        blueprint_operator::aws::sigv4::uri_encode(
            r#"{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"*","Resource":"*"}]}"#,
            false
        )
    ))?;
    let key = iam("Action=CreateAccessKey&UserName=bpo-test")?;
    let subnets = post(
        &addr,
        "/",
        "Action=DescribeSubnets&Version=2016-11-15",
        Some("ec2"),
    )?;
    let access_key = between(&key, "<AccessKeyId>", "</AccessKeyId>")
        .first()
        .cloned()
        .context("CreateAccessKey: no AccessKeyId")?;
    let secret_key = between(&key, "<SecretAccessKey>", "</SecretAccessKey>")
        .first()
        .cloned()
        .context("CreateAccessKey: no SecretAccessKey")?;
    post(&addr, "/moto-api/reset-auth", "0", None).context("switching IAM authentication on")?;
    Ok(Moto {
        endpoint: format!("http://{addr}"),
        access_key,
        secret_key,
        subnets: between(&subnets, "<subnetId>", "</subnetId>"),
    })
}

/// The texts between `open` and `close` in `s`.
fn between(s: &str, open: &str, close: &str) -> Vec<String> {
    s.split(open)
        .skip(1)
        .filter_map(|p| p.split(close).next())
        .map(str::to_string)
        .collect()
}

/// One unsigned POST (moto routes a form to a service by the Authorization header's scope);
/// the 2xx body.
fn post(addr: &str, path: &str, body: &str, service: Option<&str>) -> anyhow::Result<String> {
    // moto's own API reads the raw body (no form content type).
    let headers = service
        .map(|svc| {
            format!(
                "Authorization: AWS4-HMAC-SHA256 Credential=setup/20260101/{REGION}/{svc}/aws4_request, SignedHeaders=host, Signature=0\r\nContent-Type: application/x-www-form-urlencoded\r\n"
            )
        })
        .unwrap_or_default();
    let request = format!(
        "POST {path} HTTP/1.1\r\nHost: {addr}\r\n{headers}Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let answer = super::http::exchange(addr, &request, Duration::from_secs(30))?;
    let status = super::http::status(&answer);
    anyhow::ensure!((200..300).contains(&status), "POST {path} {body}: {answer}");
    Ok(answer)
}

/// Makes DB subnet group `name` over two of moto's default subnets.
pub async fn subnet_group(name: &str) -> anyhow::Result<()> {
    let m = server();
    let mut params = vec![
        ("DBSubnetGroupName", name.to_string()),
        ("DBSubnetGroupDescription", "test".to_string()),
    ];
    for (i, s) in m.subnets.iter().take(2).enumerate() {
        params.push((
            [
                "SubnetIds.SubnetIdentifier.1",
                "SubnetIds.SubnetIdentifier.2",
            ][i],
            s.clone(),
        ));
    }
    let p: Vec<(&str, &str)> = params.iter().map(|(k, v)| (*k, v.as_str())).collect();
    m.client(None).call("CreateDBSubnetGroup", &p).await?;
    Ok(())
}

/// A PostgreSQL DB instance `id` (version `version`) in subnet group `subnets`, with security
/// groups `sgs`.
pub async fn postgres_instance(
    id: &str,
    version: &str,
    subnets: &str,
    sgs: &[&str],
) -> anyhow::Result<()> {
    let mut p = vec![
        ("DBInstanceIdentifier", id),
        ("Engine", "postgres"),
        ("EngineVersion", version),
        ("DBInstanceClass", "db.t3.micro"),
        ("MasterUsername", "postgres"),
        ("MasterUserPassword", "password1"),
        ("AllocatedStorage", "20"),
        ("DBSubnetGroupName", subnets),
    ];
    let keys = [
        "VpcSecurityGroupIds.VpcSecurityGroupId.1",
        "VpcSecurityGroupIds.VpcSecurityGroupId.2",
    ];
    p.extend(keys.iter().copied().zip(sgs.iter().copied()));
    server().client(None).call("CreateDBInstance", &p).await?;
    Ok(())
}

/// An Aurora MySQL cluster `id` in subnet group `subnets`, with security group `sg`.
pub async fn aurora_cluster(id: &str, subnets: &str, sg: &str) -> anyhow::Result<()> {
    server()
        .client(None)
        .call(
            "CreateDBCluster",
            &[
                ("DBClusterIdentifier", id),
                ("Engine", "aurora-mysql"),
                ("MasterUsername", "admin"),
                ("MasterUserPassword", "password1"),
                ("DBSubnetGroupName", subnets),
                ("VpcSecurityGroupIds.VpcSecurityGroupId.1", sg),
            ],
        )
        .await?;
    Ok(())
}

/// The identifiers of every DB instance moto has.
pub async fn instance_ids() -> anyhow::Result<Vec<String>> {
    let r = server()
        .client(None)
        .call("DescribeDBInstances", &[])
        .await?;
    Ok(r.child("DBInstances")
        .map(|l| {
            l.children
                .iter()
                .filter_map(|i| i.child_text("DBInstanceIdentifier"))
                .collect()
        })
        .unwrap_or_default())
}

/// A proxy in front of [`server`] on which every DB instance stays `modifying`: each answer's
/// `<DBInstanceStatus>available</DBInstanceStatus>` reads `modifying` (same length, so the
/// answer's Content-Length holds; requests, signatures included, pass unchanged). For waits
/// that must time out. Started once per test binary; returns its endpoint.
pub fn never_available_proxy() -> &'static str {
    static PROXY: OnceLock<String> = OnceLock::new();
    PROXY.get_or_init(|| {
        let upstream = server().endpoint.trim_start_matches("http://").to_string();
        let host = super::server::host();
        let listener = TcpListener::bind((host.as_str(), 0)).expect("bind the proxy");
        let endpoint = format!("http://{}", listener.local_addr().expect("proxy address"));
        std::thread::spawn(move || {
            for conn in listener.incoming().flatten() {
                let upstream = upstream.clone();
                std::thread::spawn(move || {
                    let _ = relay(conn, &upstream);
                });
            }
        });
        endpoint
    })
}

/// Relays the requests of one client connection, one upstream connection each.
fn relay(client: TcpStream, upstream: &str) -> std::io::Result<()> {
    use std::io::BufRead as _;
    let mut reader = std::io::BufReader::new(client.try_clone()?);
    let mut client = client;
    loop {
        let mut head = Vec::new();
        loop {
            let mut line = String::new();
            if reader.read_line(&mut line)? == 0 {
                return Ok(());
            }
            let end = line == "\r\n";
            head.push(line);
            if end {
                break;
            }
        }
        let len = head
            .iter()
            .find_map(|l| {
                let (k, v) = l.split_once(':')?;
                k.eq_ignore_ascii_case("content-length")
                    .then(|| v.trim().parse().unwrap_or(0))
            })
            .unwrap_or(0usize);
        let mut body = vec![0; len];
        reader.read_exact(&mut body)?;
        let mut up = TcpStream::connect(upstream)?;
        let mut req: String = head[..head.len() - 1]
            .iter()
            .filter(|l| !l.to_ascii_lowercase().starts_with("connection:"))
            .map(String::as_str)
            .collect();
        req.push_str("Connection: close\r\n\r\n");
        up.write_all(req.as_bytes())?;
        up.write_all(&body)?;
        let mut answer = Vec::new();
        up.read_to_end(&mut answer)?;
        let answer = String::from_utf8_lossy(&answer).replace(
            "<DBInstanceStatus>available</DBInstanceStatus>",
            "<DBInstanceStatus>modifying</DBInstanceStatus>",
        );
        client.write_all(answer.as_bytes())?;
        if answer
            .split("\r\n\r\n")
            .next()
            .is_some_and(|h| h.to_ascii_lowercase().contains("connection: close"))
        {
            return Ok(());
        }
    }
}
