//! Data path throughput: BackupData through the executor's function versus
//! restic run directly, on the same data, the same restic binary and the same
//! object store.
//!
//! `cargo bench --bench data_backup` starts the test control plane (or uses
//! `BPO_KUBECONFIG`) and the test data plane (restic and gofakes3 of
//! tools/data-plane, on 127.0.0.1), makes a Deployment with one kwok pod,
//! writes `BENCH_MB` (default 200) MB of incompressible data in `BENCH_FILES`
//! (default 300) files to a temporary directory, then in one run:
//! - **function**: `functions::execute("BackupData")` with a Context and the
//!   template parameters the executor renders (Profile from a Kanister
//!   Profile) into a fresh repository: restic is exec'd in the pod through
//!   the API server's `pods/exec`, which kwok runs on this machine;
//! - **direct**: the same three restic commands BackupData runs
//!   (`snapshots --last`, `init`, `backup --tag`) started here with the same
//!   environment, into another fresh repository.
//!
//! `BENCH_RUNS` (default 3) rounds, each into fresh repositories, the order
//! alternating; it prints each round and the medians in MB/s (10^6 bytes)
//! and their ratio. The data is written just before, so both read it from
//! the page cache. `BENCH_TIMEOUT_S` (default 900) bounds the whole run.

#[path = "../tests/support/mod.rs"]
mod support;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use blueprint_operator::executor::params;
use blueprint_operator::functions;
use blueprint_operator::model::{ActionSpec, ObjectReference};
use blueprint_operator::restic;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, ListParams};
use serde_json::{Value, json};

const BUCKET: &str = "bench-data";
const PROFILE: &str = "s3";

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn main() -> anyhow::Result<()> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let limit = Duration::from_secs(env_u64("BENCH_TIMEOUT_S", 900));
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let dir = TempDir::new();
    let r = rt.block_on(async {
        tokio::time::timeout(limit, bench(&dir.0))
            .await
            .unwrap_or_else(|_| {
                anyhow::bail!("the benchmark did not finish within {limit:?} (BENCH_TIMEOUT_S)")
            })
    });
    drop(dir);
    r
}

/// A temporary directory, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new() -> TempDir {
        let p = std::env::temp_dir().join(format!("bpo-bench-data-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).expect("create temp dir");
        TempDir(p)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Incompressible, deterministic bytes (xorshift64*), written in 1 MiB pieces.
fn write_noise(path: &Path, seed: u64, len: usize) -> std::io::Result<()> {
    use std::io::Write;
    let mut f = std::io::BufWriter::new(std::fs::File::create(path)?);
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut buf = Vec::with_capacity(1 << 20);
    let mut left = len;
    while left > 0 {
        buf.clear();
        let n = left.min(1 << 20);
        while buf.len() < n {
            x ^= x >> 12;
            x ^= x << 25;
            x ^= x >> 27;
            buf.extend_from_slice(&x.wrapping_mul(0x2545_F491_4F6C_DD1D).to_le_bytes());
        }
        buf.truncate(n);
        f.write_all(&buf)?;
        left -= n;
    }
    f.flush()
}

/// `files` files (sizes varying ±50% around the mean) in a few directories,
/// `total` bytes together.
fn write_data(root: &Path, total: usize, files: usize) -> anyhow::Result<usize> {
    let mean = total / files.max(1);
    let mut written = 0;
    for i in 0..files {
        let len = if i + 1 == files {
            total - written
        } else {
            // mean/2 .. 3*mean/2, deterministic.
            mean / 2 + (i * 7919 % (mean.max(1) + 1))
        }
        .min(total - written);
        let d = root.join(format!("dir-{:02}", i % 16));
        std::fs::create_dir_all(&d)?;
        write_noise(&d.join(format!("file-{i:04}.bin")), i as u64 + 1, len)?;
        written += len;
    }
    Ok(written)
}

fn mb_per_s(bytes: usize, d: Duration) -> f64 {
    bytes as f64 / 1e6 / d.as_secs_f64()
}

/// One restic command, started here, its output returned (or its stderr as the error).
async fn restic_direct(env: &[(String, String)], args: &[&str]) -> anyhow::Result<String> {
    let out = tokio::process::Command::new(support::data_plane::restic())
        .args(args)
        .envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .stdin(Stdio::null())
        .kill_on_drop(true)
        .output()
        .await?;
    anyhow::ensure!(
        out.status.success(),
        "restic {}: {}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

async fn bench(dir: &Path) -> anyhow::Result<()> {
    let total_mb = env_u64("BENCH_MB", 200) as usize;
    let files = env_u64("BENCH_FILES", 300).max(1) as usize;
    anyhow::ensure!(
        support::data_plane::available(),
        "the test data plane (restic, gofakes3) is not available: run tools/data-plane/build.sh"
    );
    let client = support::client().await;
    anyhow::ensure!(
        support::require_kwok(&client).await,
        "the cluster has no kwok node (start it with tools/control-plane/cluster.sh)"
    );
    support::install_crds(&client).await?;
    let ns = support::namespace(&client, "bench-data").await;
    support::data_plane::s3_profile(&client, &ns, PROFILE, BUCKET).await?;
    support::create_deployment(&client, &ns, "app", 1).await?;
    let pods: Api<Pod> = Api::namespaced(client.clone(), &ns);
    let pod = support::poll(support::WAIT, || async {
        let l = pods
            .list(&ListParams::default().labels("app=app"))
            .await
            .ok()?;
        l.items
            .into_iter()
            .find(|p| p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running"))
            .and_then(|p| p.metadata.name)
    })
    .await
    .context("Running pod of Deployment app")?;
    let spec: ActionSpec = serde_json::from_value(json!({
        "name": "backup",
        "object": {"kind": "Deployment", "name": "app", "namespace": ns},
        "profile": {"name": PROFILE, "namespace": ns},
        "preferredVersion": "",
    }))?;
    let (p, err) = params::fetch_base(&client, &ns, &spec, "2026-01-01T00:00:00Z").await;
    anyhow::ensure!(err.is_none(), "template parameters: {err:?}");
    let p = Value::Object(p);

    let data = dir.join("data");
    let t = Instant::now();
    let bytes = write_data(&data, total_mb * 1_000_000, files)?;
    println!(
        "data: {:.1} MB incompressible in {files} files ({:.1} s to write)",
        bytes as f64 / 1e6,
        t.elapsed().as_secs_f64()
    );

    let ctx = functions::Context {
        client: client.clone(),
        namespace: ns.clone(),
        object: ObjectReference::default(),
        pod_override: None,
        pod_labels: BTreeMap::new(),
        pod_annotations: BTreeMap::new(),
        actionset: None,
        controller: None,
    };
    let path = data.to_str().context("temp path is not UTF-8")?.to_string();
    let runs = env_u64("BENCH_RUNS", 3).max(1) as usize;
    let (mut fun, mut dir_total, mut dir_backup) = (Vec::new(), Vec::new(), Vec::new());
    for run in 0..runs {
        // Alternate the order, so neither side always comes second.
        let mut f = Duration::ZERO;
        let mut d = (Duration::ZERO, Duration::ZERO, Duration::ZERO);
        for side in [run % 2, 1 - run % 2] {
            if side == 0 {
                f = through_function(
                    &ctx,
                    &p,
                    &pod,
                    &path,
                    &format!("{ns}/function-{run}"),
                    files,
                )
                .await?;
            } else {
                d = direct(&path, &format!("{ns}/direct-{run}")).await?;
            }
        }
        println!(
            "run {}: function {:6.2} s {:6.1} MB/s | direct {:6.2} s {:6.1} MB/s (backup alone {:.2} s, snapshots+init {:.2} s)",
            run + 1,
            f.as_secs_f64(),
            mb_per_s(bytes, f),
            d.0.as_secs_f64(),
            mb_per_s(bytes, d.0),
            d.1.as_secs_f64(),
            d.2.as_secs_f64()
        );
        fun.push(f);
        dir_total.push(d.0);
        dir_backup.push(d.1);
    }
    let (f, d, b) = (median(fun), median(dir_total), median(dir_backup));
    println!("median of {runs} run(s):");
    println!(
        "BackupData (function, exec in the pod):  {:7.2} s  {:7.1} MB/s",
        f.as_secs_f64(),
        mb_per_s(bytes, f)
    );
    println!(
        "restic direct (snapshots+init+backup):   {:7.2} s  {:7.1} MB/s  (backup alone {:.2} s, {:.1} MB/s)",
        d.as_secs_f64(),
        mb_per_s(bytes, d),
        b.as_secs_f64(),
        mb_per_s(bytes, b)
    );
    println!(
        "ratio function/direct: {:.3} (throughput {:.0}% of restic's; overhead {:+.2} s)",
        f.as_secs_f64() / d.as_secs_f64(),
        100.0 * d.as_secs_f64() / f.as_secs_f64(),
        f.as_secs_f64() - d.as_secs_f64()
    );
    Ok(())
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

/// BackupData through `functions::execute` into a fresh repository `prefix`.
async fn through_function(
    ctx: &functions::Context,
    p: &Value,
    pod: &str,
    path: &str,
    prefix: &str,
    files: usize,
) -> anyhow::Result<Duration> {
    let args = json!({"namespace": ctx.namespace, "pod": pod, "container": "app",
        "includePath": path, "backupArtifactPrefix": prefix});
    let t = Instant::now();
    let out = functions::execute(ctx, "BackupData", args.as_object().expect("args"), p)
        .await
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    let took = t.elapsed();
    let count = out.get("fileCount").and_then(Value::as_str).unwrap_or("");
    anyhow::ensure!(
        count == files.to_string(),
        "BackupData reported fileCount {count:?}, expected {files}: {out:?}"
    );
    Ok(took)
}

/// The same restic commands BackupData runs, started here with the same
/// environment (Kanister's default key) into a fresh repository `prefix`:
/// (total, backup alone, snapshots + init).
async fn direct(path: &str, prefix: &str) -> anyhow::Result<(Duration, Duration, Duration)> {
    let store = support::data_plane::object_store();
    let env = vec![
        ("AWS_ACCESS_KEY_ID".to_string(), store.access_key.clone()),
        (
            "AWS_SECRET_ACCESS_KEY".to_string(),
            store.secret_key.clone(),
        ),
        (
            "RESTIC_REPOSITORY".to_string(),
            format!("s3:{}/{BUCKET}/{prefix}", store.endpoint),
        ),
        (
            "RESTIC_PASSWORD".to_string(),
            restic::DEFAULT_ENCRYPTION_KEY.to_string(),
        ),
    ];
    let t = Instant::now();
    let exists = restic_direct(&env, &["snapshots", "--last", "--json"]).await;
    anyhow::ensure!(
        exists.is_err(),
        "the direct repository {prefix} already exists"
    );
    restic_direct(&env, &["init"]).await?;
    let setup = t.elapsed();
    let tb = Instant::now();
    restic_direct(&env, &["backup", "--tag", "benchtag01", path]).await?;
    Ok((t.elapsed(), tb.elapsed(), setup))
}
