//! Database dump throughput through `kando location push|pull` (what the corpus' database
//! Blueprints run: `pg_dumpall | gzip | kando location push ... -` and `kando location pull ... - |
//! gunzip | psql`), beside the same stream to a local file, and the kando process's peak RSS.
//!
//! `cargo bench --bench kando_stream` starts the test object store (gofakes3 of tools/data-plane,
//! memory backend, on 127.0.0.1), writes a `BENCH_MB` (default 1024) MiB pg_dump-shaped SQL stream
//! (a `COPY ... FROM stdin` block of generated rows: ids, names, prices, timestamps, md5-like
//! hex; it compresses about as a real dump does) to a temporary file, then times, `BENCH_RUNS`
//! (default 3) rounds each, medians printed:
//! - **local limit**: `gzip -c < dump > dump.gz` and `gunzip -c < dump.gz | sha256sum`;
//! - **kando**: `gzip -c < dump | kando location push --profile P --path p -` and
//!   `kando location pull --profile P --path p - | gunzip -c | sha256sum` (the restored stream's
//!   hash must equal the dump's);
//! - **store alone**: `kando location push` of the already-compressed file and `pull > /dev/null`.
//!
//! Throughput is MB/s (10^6 bytes) of the uncompressed dump (of the compressed object for the
//! store-alone rows). Peak RSS comes from `/usr/bin/time -f %M` around the kando process.
//! `BENCH_TIMEOUT_S` (default 1800) bounds each command.

#[path = "../tests/support/mod.rs"]
mod support;

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use anyhow::Context as _;
use serde_json::json;

const BIN: &str = env!("CARGO_BIN_EXE_blueprint-operator");
const BUCKET: &str = "bench-kando";

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

struct TempDir(PathBuf);

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Writes a pg_dump-shaped stream of at least `bytes` bytes.
fn write_dump(path: &Path, bytes: u64) -> anyhow::Result<u64> {
    let f = std::fs::File::create(path)?;
    let mut w = std::io::BufWriter::with_capacity(1 << 20, f);
    writeln!(
        w,
        "--\n-- PostgreSQL database cluster dump (generated for the kando benchmark)\n--\n\n\
         CREATE TABLE public.orders (id bigint NOT NULL, customer text, amount numeric(12,2), \
         placed timestamp with time zone, token text);\n\n\
         COPY public.orders (id, customer, amount, placed, token) FROM stdin;"
    )?;
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut written = 0u64;
    let mut id = 0u64;
    let names = [
        "alice", "bob", "carol", "dave", "erin", "frank", "grace", "heidi",
    ];
    while written < bytes {
        id += 1;
        // xorshift64: cheap, deterministic, not compressible in the token column (as hashes).
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let line = format!(
            "{id}\t{} {}\t{}.{:02}\t2026-{:02}-{:02} {:02}:{:02}:{:02}+00\t{:016x}{:016x}\n",
            names[(x % 8) as usize],
            x % 100_000,
            x % 10_000,
            (x >> 8) % 100,
            1 + (x >> 16) % 12,
            1 + (x >> 20) % 28,
            (x >> 24) % 24,
            (x >> 28) % 60,
            (x >> 32) % 60,
            x,
            x.rotate_left(29).wrapping_mul(0x2545_F491_4F6C_DD1D),
        );
        w.write_all(line.as_bytes())?;
        written += line.len() as u64;
    }
    writeln!(
        w,
        "\\.\n\nALTER TABLE ONLY public.orders ADD CONSTRAINT orders_pkey PRIMARY KEY (id);"
    )?;
    w.flush()?;
    Ok(std::fs::metadata(path)?.len())
}

/// Runs `script` with bash (pipefail); returns the seconds it took and its stdout.
fn timed(script: &str, env: &[(&str, &str)]) -> anyhow::Result<(f64, String)> {
    let limit = env_u64("BENCH_TIMEOUT_S", 1800);
    let start = Instant::now();
    let out = Command::new("timeout")
        .arg(limit.to_string())
        .args(["bash", "-o", "pipefail", "-c", script])
        .envs(env.iter().copied())
        .output()
        .with_context(|| format!("running {script}"))?;
    let secs = start.elapsed().as_secs_f64();
    anyhow::ensure!(
        out.status.success(),
        "{script} failed ({}): {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    Ok((secs, String::from_utf8_lossy(&out.stdout).into_owned()))
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

fn main() -> anyhow::Result<()> {
    let mib = env_u64("BENCH_MB", 1024);
    let runs = env_u64("BENCH_RUNS", 3).max(1);
    anyhow::ensure!(
        Path::new("/usr/bin/time").exists(),
        "/usr/bin/time is missing (Debian package `time`): it measures kando's peak RSS"
    );
    let store = support::data_plane::object_store();
    support::data_plane::create_bucket(BUCKET)?;
    let profile = json!({
        "Location": {"Type": "s3Compliant", "Bucket": BUCKET, "Endpoint": store.endpoint,
                     "Prefix": "", "Region": store.region},
        "Credential": {"Type": "keyPair", "KeyPair": {"ID": store.access_key, "Secret": store.secret_key}},
        "SkipSSLVerify": false,
    })
    .to_string();

    let dir = TempDir(std::env::temp_dir().join(format!("bpo-bench-kando-{}", std::process::id())));
    std::fs::create_dir_all(&dir.0)?;
    let d = dir.0.to_str().context("temporary directory path")?;
    let t = Instant::now();
    let size = write_dump(&dir.0.join("dump.sql"), mib << 20)?;
    let (_, sum) = timed(&format!("sha256sum < {d}/dump.sql"), &[])?;
    let sum = sum
        .split_whitespace()
        .next()
        .unwrap_or_default()
        .to_string();
    println!(
        "dump: {size} bytes ({:.0} MiB) written in {:.1}s, sha256 {sum}",
        size as f64 / 1048576.0,
        t.elapsed().as_secs_f64()
    );

    let env = [("BIN", BIN), ("P", profile.as_str())];
    let kando = "/usr/bin/time -f %M -o \"$RSS\" \"$BIN\" kando";
    let mb = |bytes: u64, secs: f64| bytes as f64 / 1e6 / secs;
    let rss = |f: &str| -> anyhow::Result<u64> {
        let text = std::fs::read_to_string(f)?;
        text.lines()
            .last()
            .and_then(|l| l.trim().parse().ok())
            .with_context(|| format!("no peak RSS in {f}: {text}"))
    };
    let (mut local_b, mut local_r, mut kando_b, mut kando_r, mut raw_b, mut raw_r) =
        (vec![], vec![], vec![], vec![], vec![], vec![]);
    let (mut rss_push, mut rss_pull) = (0u64, 0u64);
    let mut gz = 0u64;
    for round in 0..runs {
        let (s, _) = timed(&format!("gzip -c < {d}/dump.sql > {d}/dump.sql.gz"), &[])?;
        local_b.push(mb(size, s));
        gz = std::fs::metadata(dir.0.join("dump.sql.gz"))?.len();
        let (s, out) = timed(&format!("gunzip -c < {d}/dump.sql.gz | sha256sum"), &[])?;
        anyhow::ensure!(out.starts_with(&sum), "local gunzip gave another stream");
        local_r.push(mb(size, s));

        let path = format!("bench/round-{round}/dump.sql.gz");
        let rss_file = format!("{d}/rss");
        let mut env = env.to_vec();
        env.push(("RSS", rss_file.as_str()));
        let (s, _) = timed(
            &format!(
                "gzip -c < {d}/dump.sql | {kando} location push --profile \"$P\" --path {path} -"
            ),
            &env,
        )?;
        kando_b.push(mb(size, s));
        rss_push = rss_push.max(rss(&rss_file)?);
        let (s, out) = timed(
            &format!(
                "{kando} location pull --profile \"$P\" --path {path} - | gunzip -c | sha256sum"
            ),
            &env,
        )?;
        anyhow::ensure!(
            out.starts_with(&sum),
            "the pulled stream differs from the dump"
        );
        kando_r.push(mb(size, s));
        rss_pull = rss_pull.max(rss(&rss_file)?);

        let raw = format!("bench/round-{round}/raw.gz");
        let (s, _) = timed(
            &format!("{kando} location push --profile \"$P\" --path {raw} {d}/dump.sql.gz"),
            &env,
        )?;
        raw_b.push(mb(gz, s));
        rss_push = rss_push.max(rss(&rss_file)?);
        let (s, _) = timed(
            &format!("{kando} location pull --profile \"$P\" --path {raw} - > /dev/null"),
            &env,
        )?;
        raw_r.push(mb(gz, s));
        rss_pull = rss_pull.max(rss(&rss_file)?);
        timed(
            &format!("\"$BIN\" kando location delete --profile \"$P\" --path bench/round-{round}"),
            &env,
        )?;
        println!(
            "round {}: local gzip {:.1} / gunzip {:.1} MB/s; kando push {:.1} / pull {:.1} MB/s; \
             store alone push {:.1} / pull {:.1} MB/s",
            round + 1,
            local_b[round as usize],
            local_r[round as usize],
            kando_b[round as usize],
            kando_r[round as usize],
            raw_b[round as usize],
            raw_r[round as usize],
        );
    }
    println!(
        "medians of {runs}: backup  `gzip | kando location push` {:.1} MB/s vs `gzip > file` {:.1} MB/s ({:.0}%)",
        median(kando_b.clone()),
        median(local_b.clone()),
        100.0 * median(kando_b) / median(local_b)
    );
    println!(
        "                  restore `kando location pull | gunzip` {:.1} MB/s vs `gunzip < file` {:.1} MB/s ({:.0}%)",
        median(kando_r.clone()),
        median(local_r.clone()),
        100.0 * median(kando_r) / median(local_r)
    );
    println!(
        "                  store alone ({:.0} MiB compressed object): push {:.1} MB/s, pull {:.1} MB/s",
        gz as f64 / 1048576.0,
        median(raw_b),
        median(raw_r)
    );
    println!(
        "kando peak RSS: push {:.1} MiB, pull {:.1} MiB",
        rss_push as f64 / 1024.0,
        rss_pull as f64 / 1024.0
    );
    Ok(())
}
