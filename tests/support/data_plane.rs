//! The test data plane (tools/data-plane): restic, which kwok's local exec finds on its PATH
//! (cluster.sh puts it there), and gofakes3, an S3-compatible object store started once per
//! test binary on 127.0.0.1 and stopped when the test binary exits (a shell watchdog on this
//! process's PID, as the cluster has), so Kanister Profiles point at a real S3 endpoint.
//!
//! The data tests that say what a strict S3 would refuse run on both [`Store`]s: gofakes3, and
//! moto's S3 behind AWS S3's request checks ([`super::moto`]).
//!
//! The store makes no bucket on first use (no `-autobucket`): gofakes3 creates such a bucket
//! with a check-then-create that concurrent first writes race (the losers get 404
//! NoSuchBucket). [`s3_profile`] creates its bucket before the Profile exists instead, once.

use std::collections::BTreeSet;
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use anyhow::Context as _;
use kube::Client;
use kube::api::{Api, PostParams};
use serde_json::json;

use super::kanister::{create_profile, create_secret, key_pair_credential};

/// Access key of the test object store (gofakes3 accepts any, restic and our client sign with it).
pub const ACCESS_KEY: &str = "bpo-test-access-key";
pub const SECRET_KEY: &str = "bpo-test-secret-key";

/// A running S3-compatible object store.
#[derive(Debug)]
pub struct ObjectStore {
    /// `http://127.0.0.1:PORT` (path-style buckets), or the `BPO_TEST_HOST_IP` address.
    pub endpoint: String,
    pub region: String,
    pub access_key: String,
    pub secret_key: String,
}

struct Paths {
    restic: PathBuf,
    gofakes3: PathBuf,
}

/// `tools/data-plane/build.sh` output (it builds what is missing, so the first call may take
/// minutes on a fresh machine; tools/test.sh builds it before `cargo test`).
fn paths() -> Result<&'static Paths, String> {
    static PATHS: OnceLock<Result<Paths, String>> = OnceLock::new();
    PATHS
        .get_or_init(|| {
            let [restic, gofakes3]: [PathBuf; 2] =
                super::server::built_tools("tools/data-plane/build.sh", &["restic", "gofakes3"])?
                    .try_into()
                    .expect("one path a key");
            Ok(Paths { restic, gofakes3 })
        })
        .as_ref()
        .map_err(Clone::clone)
}

/// True when restic and the object store are there. Tests that need them call
/// [`object_store`] or [`restic`], which fail with the build error when they are not.
pub fn available() -> bool {
    paths().is_ok()
}

/// The restic binary that kwok's local exec runs.
pub fn restic() -> PathBuf {
    match paths() {
        Ok(p) => p.restic.clone(),
        Err(e) => panic!("test data plane unavailable: {e}"),
    }
}

/// The gofakes3 binary, for tests that start (and stop) an object store of their own.
pub fn gofakes3() -> PathBuf {
    match paths() {
        Ok(p) => p.gofakes3.clone(),
        Err(e) => panic!("test data plane unavailable: {e}"),
    }
}

/// The object store of this test binary; the first call starts it.
pub fn object_store() -> &'static ObjectStore {
    static STORE: OnceLock<ObjectStore> = OnceLock::new();
    STORE.get_or_init(|| start().unwrap_or_else(|e| panic!("object store did not start: {e:#}")))
}

fn start() -> anyhow::Result<ObjectStore> {
    let bin = paths().map_err(anyhow::Error::msg)?.gofakes3.clone();
    let host = super::server::host();
    let addr = format!("{host}:{}", super::server::free_port(&host)?);
    let args = ["-backend", "memory", "-quiet", "-host", &addr];
    let store = super::server::spawn_watched("gofakes3", &bin, &args, &addr)?;
    let ready = || TcpStream::connect(&addr).is_ok();
    store.wait_ready(Duration::from_secs(30), Duration::from_millis(100), ready)?;
    Ok(ObjectStore {
        endpoint: format!("http://{addr}"),
        region: "us-east-1".into(),
        access_key: ACCESS_KEY.into(),
        secret_key: SECRET_KEY.into(),
    })
}

/// The S3 stores the data tests run on, each started once per test binary on first use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Store {
    /// gofakes3 ([`object_store`]): refuses a PutObject or UploadPart without Content-Length,
    /// checks no signatures.
    GoFakeS3,
    /// moto's S3 behind AWS S3's request checks ([`super::moto`]): SigV4 signatures (botocore's),
    /// Content-Length on every PUT and POST, bodies against Content-MD5 and x-amz-content-sha256.
    Moto,
}

/// Both stores, for tests that run on each.
pub const STORES: [Store; 2] = [Store::GoFakeS3, Store::Moto];

impl Store {
    pub fn get(self) -> &'static ObjectStore {
        match self {
            Store::GoFakeS3 => object_store(),
            Store::Moto => {
                static MOTO: OnceLock<ObjectStore> = OnceLock::new();
                MOTO.get_or_init(|| {
                    let m = super::moto::server();
                    ObjectStore {
                        endpoint: m.endpoint.clone(),
                        region: super::moto::REGION.into(),
                        access_key: m.access_key.clone(),
                        secret_key: m.secret_key.clone(),
                    }
                })
            }
        }
    }

    /// An S3 client of this store, with its credentials.
    pub fn client(self) -> blueprint_operator::aws::s3::S3Client {
        use blueprint_operator::aws::s3::{Config, S3Client};
        let store = self.get();
        S3Client::new(&Config {
            endpoint: store.endpoint.clone(),
            region: store.region.clone(),
            credentials: store.credentials(),
            skip_ssl_verify: false,
        })
        .expect("S3 client")
    }
}

impl ObjectStore {
    pub fn credentials(&self) -> blueprint_operator::aws::s3::Credentials {
        blueprint_operator::aws::s3::Credentials {
            access_key_id: self.access_key.clone(),
            secret_access_key: self.secret_key.clone(),
            session_token: None,
        }
    }
}

/// Creates `bucket` in [`object_store`]; see [`create_bucket_in`].
pub fn create_bucket(bucket: &str) -> anyhow::Result<()> {
    create_bucket_in(Store::GoFakeS3, bucket)
}

/// Creates `bucket` in `store` (CreateBucket, signed), once per test binary: later calls and
/// a bucket that already exists are no-ops. Blocks briefly (one local HTTP exchange).
pub fn create_bucket_in(kind: Store, bucket: &str) -> anyhow::Result<()> {
    static MADE: Mutex<BTreeSet<(Store, String)>> = Mutex::new(BTreeSet::new());
    let mut made = MADE.lock().unwrap_or_else(|e| e.into_inner());
    if made.contains(&(kind, bucket.to_string())) {
        return Ok(());
    }
    let store = kind.get();
    let answer = signed_exchange(kind, "PUT", &format!("/{bucket}"), Some(0), b"", None, None)
        .with_context(|| format!("CreateBucket {bucket} on {}", store.endpoint))?;
    let status = super::http::status(&answer);
    // 409 BucketAlreadyExists: made before, e.g. by restic (which creates a missing bucket).
    anyhow::ensure!(
        status == 200 || status == 409,
        "CreateBucket {bucket} on {}: {answer}",
        store.endpoint
    );
    made.insert((kind, bucket.to_string()));
    Ok(())
}

/// One request to `kind`, signed with its key (or with `secret` instead of its secret), sent as
/// written: `target` is the path and query, `length` the Content-Length header if any,
/// `hash` the x-amz-content-sha256 signed and sent (default: the body's). The whole answer.
pub fn signed_exchange(
    kind: Store,
    method: &str,
    target: &str,
    length: Option<usize>,
    body: &[u8],
    hash: Option<&str>,
    secret: Option<&str>,
) -> anyhow::Result<String> {
    use blueprint_operator::aws::sigv4;
    let store = kind.get();
    let addr = store.endpoint.trim_start_matches("http://");
    let mut credentials = store.credentials();
    if let Some(s) = secret {
        credentials.secret_access_key = s.to_string();
    }
    let body_hash = sigv4::sha256_hex(body);
    let signed = sigv4::sign_s3(
        &credentials,
        &store.region,
        std::time::SystemTime::now(),
        &sigv4::Request {
            method,
            url: &format!("{}{target}", store.endpoint),
            headers: &[("host", addr)],
            payload_hash: hash.unwrap_or(&body_hash),
        },
    )?;
    let mut head = format!("{method} {target} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n");
    for (k, v) in &signed {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    if let Some(n) = length {
        head.push_str(&format!("Content-Length: {n}\r\n"));
    }
    let request = format!("{head}\r\n{}", String::from_utf8_lossy(body));
    Ok(super::http::exchange(
        addr,
        &request,
        Duration::from_secs(30),
    )?)
}

/// Creates `bucket` ([`create_bucket`]), then, in `ns`, the Secret `<name>-creds` and a
/// Kanister Profile `name` of location type s3Compliant on [`object_store`], bucket `bucket`,
/// as Kanister users write them (credential type keyPair, fields aws_access_key_id /
/// aws_secret_access_key).
pub async fn s3_profile(client: &Client, ns: &str, name: &str, bucket: &str) -> anyhow::Result<()> {
    s3_profile_on(Store::GoFakeS3, client, ns, name, bucket).await
}

/// [`s3_profile`] on `kind`.
pub async fn s3_profile_on(
    kind: Store,
    client: &Client,
    ns: &str,
    name: &str,
    bucket: &str,
) -> anyhow::Result<()> {
    let store = kind.get();
    create_bucket_in(kind, bucket)?;
    let secret_name = format!("{name}-creds");
    let data = json!({
        "aws_access_key_id": store.access_key,
        "aws_secret_access_key": store.secret_key,
    });
    create_secret(client, ns, &secret_name, "secrets.kanister.io/aws", data).await?;
    let credential = key_pair_credential(
        "aws_access_key_id",
        "aws_secret_access_key",
        &secret_name,
        ns,
    );
    let spec = json!({
        "location": {
            "type": "s3Compliant", "bucket": bucket,
            "endpoint": store.endpoint, "region": store.region,
        },
        "credential": credential,
        "skipSSLVerify": false,
    });
    create_profile(client, ns, name, spec).await
}

/// Client and a fresh namespace `<prefix>-<random>` with the CRDs and an s3Compliant Profile
/// `profile` for `bucket` of [`object_store`]. Fails without the data plane; `None`: skipped, an
/// existing cluster without the kwok node ([`super::require_kwok`]).
pub async fn setup(prefix: &str, profile: &str, bucket: &str) -> Option<(kube::Client, String)> {
    setup_on(Store::GoFakeS3, prefix, profile, bucket).await
}

/// [`setup`] and the [`DataTest`] of its namespace, the directory tagged `tag`.
pub async fn data_test(
    prefix: &str,
    profile: &str,
    bucket: &str,
    tag: &str,
) -> anyhow::Result<Option<DataTest>> {
    let Some((client, ns)) = setup(prefix, profile, bucket).await else {
        return Ok(None);
    };
    Ok(Some(DataTest::new(client, ns, profile, tag).await?))
}

/// [`setup`] with the Profile on `kind`.
pub async fn setup_on(
    kind: Store,
    prefix: &str,
    profile: &str,
    bucket: &str,
) -> Option<(kube::Client, String)> {
    let client = super::client().await;
    if !super::require_kwok(&client).await {
        return None;
    }
    assert!(
        available(),
        "the test data plane (restic, gofakes3) is not available: run tools/data-plane/build.sh"
    );
    super::install_crds(&client).await.expect("install CRDs");
    let ns = super::namespace(&client, prefix).await;
    s3_profile_on(kind, &client, &ns, profile, bucket)
        .await
        .expect("create the Profile");
    Some((client, ns))
}

/// The template parameters the executor would render with: fetched by the executor's own code
/// from an action naming `object` and the Profile `profile` of `ns`.
pub async fn template_params(
    ns: &str,
    profile: &str,
    object: serde_json::Value,
) -> anyhow::Result<serde_json::Value> {
    let p = fetch_params(
        ns,
        json!({
            "name": "backup", "object": object,
            "profile": {"name": profile, "namespace": ns},
            "preferredVersion": "",
        }),
    )
    .await?;
    anyhow::ensure!(p.get("Profile").is_some(), "no Profile in {p:?}");
    Ok(p)
}

/// [`template_params`] for an action on Deployment `app`.
pub async fn app_params(ns: &str, profile: &str) -> anyhow::Result<serde_json::Value> {
    let app = json!({"kind": "Deployment", "name": "app", "namespace": ns});
    template_params(ns, profile, app).await
}

/// The template parameters the executor fetches, with its own code, for the action `spec`
/// (an ActionSpec as JSON).
pub async fn fetch_params(ns: &str, spec: serde_json::Value) -> anyhow::Result<serde_json::Value> {
    let spec: blueprint_operator::model::ActionSpec = serde_json::from_value(spec)?;
    let (p, err) = blueprint_operator::executor::params::fetch_base(
        &super::rbac::controller_client(),
        ns,
        &spec,
        "2026-01-01T00:00:00Z",
    )
    .await;
    anyhow::ensure!(err.is_none(), "fetching params: {err:?}");
    Ok(serde_json::Value::Object(p))
}

/// An S3 client of the test object store, with its credentials.
pub fn store_client() -> blueprint_operator::aws::s3::S3Client {
    Store::GoFakeS3.client()
}

/// A data-mover function call as the controller makes it, on no object (they take none).
pub fn ctx(ns: &str) -> blueprint_operator::functions::Context {
    super::call::ctx(ns, blueprint_operator::model::ObjectReference::default())
}

/// The string output `key` of a function; panics naming it when it is missing.
pub fn out_str(out: &blueprint_operator::functions::Output, key: &str) -> String {
    out.get(key)
        .and_then(serde_json::Value::as_str)
        .unwrap_or_else(|| panic!("output {key} missing in {out:?}"))
        .to_string()
}

/// A PVC `name` (ReadWriteOnce) bound to a hostPath PV at `/mnt/vol_data/<name>`, where
/// CopyVolumeData's pod mounts it (a directory of this machine under kwok), so that the
/// scheduler places pods using it; returns the PV's name, to delete with [`delete_pv`].
pub async fn vol_data_pvc(client: &Client, ns: &str, name: &str) -> anyhow::Result<String> {
    use k8s_openapi::api::core::v1::{PersistentVolume, PersistentVolumeClaim};
    let pv_name = format!("{ns}-{name}");
    let pvs: Api<PersistentVolume> = Api::all(client.clone());
    let pv: PersistentVolume = serde_json::from_value(json!({
        "metadata": {"name": pv_name},
        "spec": {
            "capacity": {"storage": "1Gi"},
            "accessModes": ["ReadWriteOnce"],
            "hostPath": {"path": format!("/mnt/vol_data/{name}")},
            "storageClassName": "",
            "persistentVolumeReclaimPolicy": "Retain",
            "claimRef": {"namespace": ns, "name": name},
        },
    }))?;
    pvs.create(&PostParams::default(), &pv).await?;
    let pvcs: Api<PersistentVolumeClaim> = Api::namespaced(client.clone(), ns);
    let pvc: PersistentVolumeClaim = serde_json::from_value(json!({
        "metadata": {"name": name},
        "spec": {
            "accessModes": ["ReadWriteOnce"],
            "resources": {"requests": {"storage": "1Gi"}},
            "storageClassName": "",
            "volumeName": pv_name,
        },
    }))?;
    pvcs.create(&PostParams::default(), &pvc).await?;
    super::wait_for(&pvcs, name, super::WAIT, |c| {
        c.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Bound")
    })
    .await
    .context("PVC Bound")?;
    Ok(pv_name)
}

/// Deletes PV `name` (cluster-scoped, so not removed with the test's namespace); best effort.
pub async fn delete_pv(client: &Client, name: &str) {
    let pvs: Api<k8s_openapi::api::core::v1::PersistentVolume> = Api::all(client.clone());
    let _ = pvs.delete(name, &Default::default()).await;
}

/// A Deployment `app` with one Running pod; returns the pod's name.
pub async fn app_pod(client: &Client, ns: &str) -> anyhow::Result<String> {
    super::running_deployment_pod(client, ns, "app").await
}

/// Writes `files` (path relative to `root`, contents) under `root`.
pub fn write_files(root: &std::path::Path, files: &[(&str, Vec<u8>)]) {
    for (rel, data) in files {
        let p = root.join(rel);
        std::fs::create_dir_all(p.parent().expect("a file has a parent")).expect("mkdir");
        std::fs::write(&p, data).expect("write file");
    }
}

/// `restic <args> --no-cache` on `<bucket>/<path>` of the test object store, run directly (not
/// through a pod); its standard output.
pub fn restic_direct(bucket: &str, path: &str, key: &str, args: &[&str]) -> anyhow::Result<String> {
    restic_on(Store::GoFakeS3, bucket, path, key, args)
}

/// [`restic_direct`] on `kind`.
pub fn restic_on(
    kind: Store,
    bucket: &str,
    path: &str,
    key: &str,
    args: &[&str],
) -> anyhow::Result<String> {
    let store = kind.get();
    let out = Command::new(restic())
        .args(args)
        .arg("--no-cache")
        .env("AWS_ACCESS_KEY_ID", &store.access_key)
        .env("AWS_SECRET_ACCESS_KEY", &store.secret_key)
        .env(
            "RESTIC_REPOSITORY",
            format!("s3:{}/{bucket}/{path}", store.endpoint),
        )
        .env("RESTIC_PASSWORD", key)
        .stdin(Stdio::null())
        .output()?;
    anyhow::ensure!(
        out.status.success(),
        "restic {args:?} on {path} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// `restic snapshots --json` of `<bucket>/<path>` on the test object store.
pub fn snapshots(bucket: &str, path: &str, key: &str) -> anyhow::Result<Vec<serde_json::Value>> {
    snapshots_on(Store::GoFakeS3, bucket, path, key)
}

/// [`snapshots`] on `kind`.
pub fn snapshots_on(
    kind: Store,
    bucket: &str,
    path: &str,
    key: &str,
) -> anyhow::Result<Vec<serde_json::Value>> {
    let out = restic_on(kind, bucket, path, key, &["snapshots", "--json"])?;
    Ok(serde_json::from_str(&out)?)
}

/// Runs a restic command line of the restic functions as the pod's exec runs it (`bash -c`, the
/// environment on stdin), here on this machine, with `env` added (a PATH that finds restic, ...).
pub fn run_locally<K, V>(
    cmd: &blueprint_operator::restic::ResticCommand,
    env: impl IntoIterator<Item = (K, V)>,
) -> std::process::Output
where
    K: AsRef<std::ffi::OsStr>,
    V: AsRef<std::ffi::OsStr>,
{
    use std::io::Write as _;
    let mut child = Command::new(&cmd.argv[0])
        .args(&cmd.argv[1..])
        .envs(env)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("starting {}: {e}", cmd.argv[0]));
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(cmd.stdin.as_bytes())
        .expect("writing the environment to stdin");
    child.wait_with_output().expect("waiting for the command")
}

/// `dir` before this process's PATH.
pub fn path_with(dir: &std::path::Path) -> String {
    format!(
        "{}:{}",
        dir.display(),
        std::env::var("PATH").unwrap_or_default()
    )
}

/// What a data-mover test works with once its namespace is made ([`setup`] or the like): the
/// Running pod of Deployment `app`, the template parameters of an action on it naming a Profile,
/// a function-call context and a temporary directory.
pub struct DataTest {
    pub client: Client,
    pub ns: String,
    /// The app's Running pod.
    pub pod: String,
    /// The template parameters, `.Profile` included.
    pub params: serde_json::Value,
    pub ctx: blueprint_operator::functions::Context,
    pub dir: super::files::TempDir,
}

impl DataTest {
    /// The app of `ns` and the parameters with Profile `profile`; the directory tagged `tag`.
    pub async fn new(client: Client, ns: String, profile: &str, tag: &str) -> anyhow::Result<Self> {
        let pod = app_pod(&client, &ns).await?;
        let params = app_params(&ns, profile).await?;
        Ok(DataTest {
            ctx: ctx(&ns),
            dir: super::files::TempDir::new(tag),
            client,
            ns,
            pod,
            params,
        })
    }

    /// Runs `func` with `args` and the test's template parameters.
    pub async fn call(
        &self,
        func: &str,
        args: serde_json::Value,
    ) -> Result<blueprint_operator::functions::Output, blueprint_operator::functions::FunctionError>
    {
        super::call::call_with(&self.ctx, func, args, &self.params).await
    }

    /// Runs `func`, which must fail (`why` says why); the error's text.
    pub async fn call_err(&self, func: &str, args: serde_json::Value, why: &str) -> String {
        self.call_err_with(func, args, &self.params, why).await
    }

    /// [`Self::call_err`] with the template parameters `params` instead of the test's.
    pub async fn call_err_with(
        &self,
        func: &str,
        args: serde_json::Value,
        params: &serde_json::Value,
        why: &str,
    ) -> String {
        super::call::call_with(&self.ctx, func, args, params)
            .await
            .expect_err(why)
            .to_string()
    }

    /// BackupData's arguments: `include` in the app's container, to `prefix`, with `key`.
    pub fn backup_args(
        &self,
        include: &std::path::Path,
        prefix: &str,
        key: &str,
    ) -> serde_json::Value {
        json!({"namespace": self.ns, "pod": self.pod, "container": "app",
               "includePath": include.to_str().expect("a UTF-8 path"),
               "backupArtifactPrefix": prefix, "encryptionKey": key})
    }
}
