//! Load benchmark of the webhook over TLS on loopback with keep-alive connections:
//! requests per second and p50/p99 latency of `/validate/blueprint` and `/mutate/blueprint`.
//!
//! ```text
//! cargo bench --bench webhook
//! BENCH_REQUESTS=20000 BENCH_CONCURRENCY=8 BENCH_BLUEPRINT=path.yaml cargo bench --bench webhook
//! ```
//! Without `--bench` (as `cargo test --all-targets` runs it) it only sends a few requests to
//! check that everything works.
//!
//! The Blueprint is Kanister's MySQL example from the corpus (`KANISTER_CORPUS`, default
//! `../shared/kanister-corpus`) with its phase names removed, so `/mutate/blueprint` returns a
//! patch; `/validate/blueprint` gets the normalized version (allowed).

use std::path::PathBuf;
use std::time::{Duration, Instant};

use blueprint_operator::webhook::certs;
use blueprint_operator::webhook::server::{self, ServerConfig};
use blueprint_operator::webhook::tls::CertFiles;
use serde::Deserialize as _;
use serde_json::{Value, json};

#[path = "../tests/support/webhook_client.rs"]
mod webhook_client;
use webhook_client::{Conn, blueprint_review, client_config};

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn load_blueprint() -> (String, Value) {
    let path = std::env::var_os("BENCH_BLUEPRINT")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            std::env::var_os("KANISTER_CORPUS")
                .map(PathBuf::from)
                .unwrap_or_else(|| {
                    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/kanister-corpus")
                })
                .join("kanister-examples/mysql/mysql-blueprint.yaml")
        });
    if let Ok(text) = std::fs::read_to_string(&path) {
        for doc in serde_yaml::Deserializer::from_str(&text) {
            if let Ok(v) = Value::deserialize(doc)
                && v["kind"] == "Blueprint"
            {
                return (path.display().to_string(), v);
            }
        }
    }
    let fallback = json!({
        "apiVersion": "cr.kanister.io/v1alpha1", "kind": "Blueprint", "metadata": {"name": "bench"},
        "actions": {"backup": {"phases": [
            {"func": "KubeTask", "args": {"image": "busybox", "command": ["sh", "-c", "echo {{ .Deployment.Name }}"]}}
        ]}}
    });
    ("built-in Blueprint (corpus not found)".into(), fallback)
}

/// Removes the names of phases that no template refers to (as `.Phases.<name>`), so that
/// `/mutate/blueprint` has names to default; adds an unnamed phase if none could be removed.
fn strip_names(mut bp: Value) -> Value {
    let text = bp.to_string();
    let mut removed = false;
    if let Some(actions) = bp.get_mut("actions").and_then(Value::as_object_mut) {
        for a in actions.values_mut() {
            if let Some(phases) = a.get_mut("phases").and_then(Value::as_array_mut) {
                for p in phases {
                    let Some(o) = p.as_object_mut() else { continue };
                    let referenced = o
                        .get("name")
                        .and_then(Value::as_str)
                        .is_some_and(|n| text.contains(&format!(".Phases.{n}")));
                    if !referenced && o.remove("name").is_some() {
                        removed = true;
                    }
                }
            }
        }
        if !removed
            && let Some(phases) = actions
                .values_mut()
                .next()
                .and_then(|a| a.get_mut("phases"))
                .and_then(Value::as_array_mut)
        {
            phases.push(
                json!({"func": "KubeTask", "args": {"image": "busybox", "command": ["true"]}}),
            );
        }
    }
    bp
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

async fn run_route(
    addr: std::net::SocketAddr,
    tls: std::sync::Arc<rustls::ClientConfig>,
    route: &'static str,
    body: Vec<u8>,
    concurrency: usize,
    requests: usize,
    expect_patch: bool,
) -> (f64, Duration, Duration, usize) {
    let per_conn = requests.div_ceil(concurrency);
    let started = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..concurrency {
        let tls = tls.clone();
        let body = body.clone();
        tasks.push(tokio::spawn(async move {
            let mut conn = Conn::connect(addr, tls, "localhost")
                .await
                .expect("connect");
            let mut lat = Vec::with_capacity(per_conn);
            for _ in 0..per_conn {
                let t = Instant::now();
                let r = conn.request("POST", route, &body).await.expect("request");
                lat.push(t.elapsed());
                assert_eq!(r.status, 200, "{}", r.text());
                let v = r.json();
                assert_eq!(v["response"]["allowed"], true, "{v}");
                assert_eq!(v["response"]["patch"].is_string(), expect_patch, "{v}");
            }
            lat
        }));
    }
    let mut all = Vec::new();
    for t in tasks {
        all.extend(t.await.expect("client task"));
    }
    let wall = started.elapsed();
    all.sort();
    let rps = all.len() as f64 / wall.as_secs_f64();
    (
        rps,
        percentile(&all, 0.50),
        percentile(&all, 0.99),
        all.len(),
    )
}

fn main() {
    let full = std::env::args().any(|a| a == "--bench");
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async move {
        let dir = std::env::temp_dir().join(format!("bpo-bench-webhook-{}", std::process::id()));
        let dev = certs::generate(&["localhost".into()], 1).expect("certs");
        certs::write(&dev, &dir, true).expect("write certs");
        let running = server::start(ServerConfig {
            listen: "127.0.0.1:0".parse().unwrap(),
            probe_listen: None,
            tls: CertFiles {
                cert: dir.join("tls.crt"),
                key: dir.join("tls.key"),
            },
            tls_reload_interval: Duration::from_secs(5),
            shutdown_delay: Duration::ZERO,
            shutdown_grace: Duration::from_secs(5),
            client: None,
            lookup_timeout: Duration::from_secs(1),
            limits: Default::default(),
        })
        .await
        .expect("server");
        let tls = client_config(&dev.ca_cert_pem);
        let (source, bp) = load_blueprint();
        let unnamed = strip_names(bp);
        let normalized = blueprint_operator::blueprint::normalize(&unnamed);
        let mutate_body = blueprint_review("bench", &unnamed);
        let validate_body = blueprint_review("bench", &normalized);
        let (concurrency, requests, warmup) = if full {
            (
                env_usize("BENCH_CONCURRENCY", 4),
                env_usize("BENCH_REQUESTS", 10_000),
                500,
            )
        } else {
            (2, 20, 0)
        };
        println!(
            "webhook bench: {source} ({} bytes as AdmissionReview), {concurrency} keep-alive TLS connections, {requests} requests per route, server and client in one process on {} cores",
            validate_body.len(),
            std::thread::available_parallelism().map_or(1, |n| n.get())
        );
        println!(
            "{:<22} {:>10} {:>10} {:>10} {:>8}",
            "route", "req/s", "p50", "p99", "n"
        );
        for (route, body, patch) in [
            ("/validate/blueprint", validate_body, false),
            ("/mutate/blueprint", mutate_body, true),
        ] {
            if warmup > 0 {
                run_route(running.addr, tls.clone(), route, body.clone(), concurrency, warmup, patch).await;
            }
            let (rps, p50, p99, n) =
                run_route(running.addr, tls.clone(), route, body, concurrency, requests, patch).await;
            println!("{route:<22} {rps:>10.0} {p50:>10.2?} {p99:>10.2?} {n:>8}");
        }
        running.shutdown().await.expect("shutdown");
        let _ = std::fs::remove_dir_all(&dir);
    });
}
