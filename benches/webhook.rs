//! Load benchmark of the webhook over TLS on loopback with keep-alive connections.
//!
//! ```text
//! cargo bench --bench webhook
//! BENCH_REQUESTS=20000 BENCH_CLIENTS=16,64 cargo bench --bench webhook
//! BENCH_STAGES_ONLY=1 cargo bench --bench webhook    # the in-process stages only
//! ```
//! The server runs in a child process (this binary again, started with `BENCH_WEBHOOK_SERVE`),
//! so its CPU time (`/proc/<pid>/stat` utime + stime) and memory (VmRSS, sampled every 10 ms)
//! are its own, not the clients'. With two or more cores the server is pinned to CPU 0 and the
//! clients to the others (the server alone on one core, as it is compared with Kanister's
//! webhook; `BENCH_PIN=0` lets them share all cores). For a small and a large corpus Blueprint
//! (Kanister's MySQL and PostgreSQL WAL-E examples, `KANISTER_CORPUS`), at 16 and 64 concurrent
//! clients, each route reports requests/s, p50/p99 latency, the server's CPU µs per request,
//! its peak RSS and thread count, three times: every request with the same object ("same", as
//! GitOps tools re-send unchanged objects); each with its own, an annotation differing
//! ("distinct", [`DISTINCT`] objects); and each with its own template texts too ("new text").
//! The webhook remembers nothing between reviews, so the three show that the work does not
//! depend on what came before. Before the load, each stage of a review is timed in-process (one
//! core, no TLS): JSON decoding, the AdmissionReview, validation, normalization and the whole
//! review.
//!
//! Without `--bench` (as `cargo test --all-targets` runs it) it only sends a few requests to
//! check that everything works.
//!
//! `/mutate/blueprint` gets the Blueprint with the names of its unreferenced phases removed
//! (so it returns a patch); `/validate/blueprint` gets the normalized version (allowed).

use std::io::{BufRead as _, Write as _};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use blueprint_operator::webhook::admission::{self, Route};
use blueprint_operator::webhook::certs;
use blueprint_operator::webhook::server::{self, ServerConfig};
use serde::Deserialize as _;
use serde_json::{Value, json};

#[path = "../tests/support/webhook_client.rs"]
mod webhook_client;

mod common;

use common::env_usize;
use webhook_client::{Conn, blueprint_review, client_config};

/// The binary's allocator (src/main.rs), so the server process here allocates as it does.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

const SERVE_ENV: &str = "BENCH_WEBHOOK_SERVE";
/// Objects of the "distinct" and "new text" rows.
const DISTINCT: usize = 2048;
/// The CPU the server process is pinned to (set by the bench for its child).
const SERVER_CPU_ENV: &str = "BENCH_WEBHOOK_SERVER_CPU";

/// Pins this thread (and the threads it starts later) to `cpus`.
fn pin_to(cpus: impl IntoIterator<Item = usize>) {
    // SAFETY: a zeroed cpu_set_t is an empty set; CPU_SET and sched_setaffinity only read and
    // write that set, whose size is passed along.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        for cpu in cpus {
            libc::CPU_SET(cpu, &mut set);
        }
        if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
            eprintln!("could not pin to CPUs: {}", std::io::Error::last_os_error());
        }
    }
}

fn corpus() -> PathBuf {
    std::env::var_os("KANISTER_CORPUS")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/kanister-corpus")
        })
}

fn load_blueprint(path: &Path) -> Option<Value> {
    let text = std::fs::read_to_string(path).ok()?;
    serde_yaml::Deserializer::from_str(&text)
        .filter_map(|doc| Value::deserialize(doc).ok())
        .find(|v| v["kind"] == "Blueprint")
}

fn fallback() -> Value {
    json!({
        "apiVersion": "cr.kanister.io/v1alpha1", "kind": "Blueprint", "metadata": {"name": "bench"},
        "actions": {"backup": {"phases": [
            {"func": "KubeTask", "args": {"image": "busybox", "command": ["sh", "-c", "echo {{ .Deployment.Name }}"]}}
        ]}}
    })
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

/// `n` reviews of `object`: one, or each with its own annotation; with `new_templates`, every
/// template text is made new too (a word appended).
fn bodies_of(object: &Value, n: usize, new_templates: bool) -> Vec<Vec<u8>> {
    if n == 1 {
        return vec![blueprint_review("bench", object)];
    }
    (0..n)
        .map(|i| {
            let mut o = object.clone();
            o["metadata"]["annotations"]["bench/n"] = json!(i.to_string());
            if new_templates {
                mark_templates(&mut o, i);
            }
            blueprint_review("bench", &o)
        })
        .collect()
}

fn mark_templates(v: &mut Value, i: usize) {
    match v {
        Value::String(s) if s.contains("{{") => s.push_str(&format!(" #{i}")),
        Value::Array(items) => items.iter_mut().for_each(|v| mark_templates(v, i)),
        Value::Object(map) => map.values_mut().for_each(|v| mark_templates(v, i)),
        _ => {}
    }
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

/// The server process's CPU time (user + system, all threads, dead ones included).
fn cpu_time(pid: u32) -> Duration {
    Duration::from_secs_f64(common::pid_cpu_secs(pid))
}

/// `(VmRSS KiB, threads)` of a process.
fn rss_threads(pid: u32) -> (u64, u64) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    };
    (field("VmRSS:"), field("Threads:"))
}

/// Samples the server's RSS and threads every 10 ms until stopped; returns the peaks.
struct Sampler {
    stop: Arc<AtomicBool>,
    thread: std::thread::JoinHandle<(u64, u64)>,
}

impl Sampler {
    fn start(pid: u32) -> Sampler {
        let stop = Arc::new(AtomicBool::new(false));
        let s = stop.clone();
        let thread = std::thread::spawn(move || {
            let mut peak = (0, 0);
            while !s.load(Ordering::Relaxed) {
                let (rss, threads) = rss_threads(pid);
                peak = (peak.0.max(rss), peak.1.max(threads));
                std::thread::sleep(Duration::from_millis(10));
            }
            peak
        });
        Sampler { stop, thread }
    }

    fn stop(self) -> (u64, u64) {
        self.stop.store(true, Ordering::Relaxed);
        self.thread.join().unwrap_or((0, 0))
    }
}

struct Run {
    rps: f64,
    p50: Duration,
    p99: Duration,
    n: usize,
}

async fn run_route(
    addr: std::net::SocketAddr,
    tls: Arc<rustls::ClientConfig>,
    route: &'static str,
    bodies: Arc<Vec<Vec<u8>>>,
    clients: usize,
    requests: usize,
    expect_patch: bool,
) -> Run {
    let per_conn = requests.div_ceil(clients);
    // Connect first, so the handshakes are not part of the figures.
    let mut conns = Vec::new();
    for _ in 0..clients {
        conns.push(
            Conn::connect(addr, tls.clone(), "localhost")
                .await
                .expect("connect"),
        );
    }
    let started = Instant::now();
    let mut tasks = Vec::new();
    for (c, mut conn) in conns.into_iter().enumerate() {
        let bodies = bodies.clone();
        tasks.push(tokio::spawn(async move {
            let mut lat = Vec::with_capacity(per_conn);
            for j in 0..per_conn {
                // The clients between them go round the bodies in order.
                let body = &bodies[(c + j * clients) % bodies.len()];
                let t = Instant::now();
                let r = conn.request("POST", route, body).await.expect("request");
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
    Run {
        rps: all.len() as f64 / wall.as_secs_f64(),
        p50: percentile(&all, 0.50),
        p99: percentile(&all, 0.99),
        n: all.len(),
    }
}

/// This thread's CPU time.
fn thread_cpu() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid timespec for clock_gettime to fill.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

/// CPU µs of one call of `f`: the least mean over 5 batches of `rounds` calls (CPU time, so
/// other processes on the machine count only through caches).
fn time_us(rounds: usize, mut f: impl FnMut()) -> f64 {
    (0..5)
        .map(|_| {
            let t = thread_cpu();
            for _ in 0..rounds {
                f();
            }
            (thread_cpu() - t).as_secs_f64() * 1e6 / rounds as f64
        })
        .fold(f64::INFINITY, f64::min)
}

/// Times each stage of a review in this process (one thread, no TLS, no HTTP).
fn stages(name: &str, route: Route, body: &[u8], rounds: usize) {
    let mut review: Value = serde_json::from_slice(body).expect("review parses");
    let obj = review["request"]["object"].take();
    let decode = time_us(rounds, || {
        std::hint::black_box(serde_json::from_slice::<Value>(body).expect("JSON"));
    });
    let parse = time_us(rounds, || {
        std::hint::black_box(admission::parse(route, body).expect("review"));
    });
    let validate = time_us(rounds, || {
        std::hint::black_box(blueprint_operator::blueprint::validate(&obj));
    });
    let normalize = time_us(rounds, || {
        std::hint::black_box(blueprint_operator::blueprint::normalize(&obj));
    });
    let whole = time_us(rounds, || {
        std::hint::black_box(admission::handle_review(route, body));
    });
    println!(
        "{name:<6} {:<20} {decode:>8.1} {parse:>8.1} {validate:>9.1} {normalize:>9.1} {whole:>8.1}",
        route.path()
    );
}

/// The child: serves with the certificate in `dir` until stdin closes.
fn serve(dir: &Path) {
    if let Some(cpu) = std::env::var(SERVER_CPU_ENV)
        .ok()
        .and_then(|c| c.parse().ok())
    {
        // Before the runtime exists, so that it sizes itself (and the review pool) to one core.
        pin_to([cpu]);
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async move {
        let running = server::start(ServerConfig::local(dir))
            .await
            .expect("server");
        println!("listening {}", running.addr);
        std::io::stdout().flush().expect("stdout");
        tokio::task::spawn_blocking(|| {
            let mut sink = String::new();
            while std::io::stdin().read_line(&mut sink).is_ok_and(|n| n > 0) {}
        })
        .await
        .expect("stdin");
        running.shutdown().await.expect("shutdown");
    });
}

fn main() {
    if let Some(dir) = std::env::var_os(SERVE_ENV) {
        serve(Path::new(&dir));
        return;
    }
    let full = std::env::args().any(|a| a == "--bench");
    let dir = std::env::temp_dir().join(format!("bpo-bench-webhook-{}", std::process::id()));
    let dev = certs::generate(&["localhost".into()], 1).expect("certs");
    certs::write(&dev, &dir, true).expect("write certs");

    let corpus = corpus();
    let mut blueprints = Vec::new();
    for (name, rel) in [
        ("small", "kanister-examples/mysql/mysql-blueprint.yaml"),
        (
            "large",
            "kanister-examples/postgresql-wale/postgresql-blueprint.yaml",
        ),
    ] {
        let bp = load_blueprint(&corpus.join(rel));
        let source = if bp.is_some() {
            rel
        } else {
            "built-in (corpus not found)"
        };
        let unnamed = strip_names(bp.unwrap_or_else(fallback));
        let normalized = blueprint_operator::blueprint::normalize(&unnamed);
        let validate_body = blueprint_review("bench", &normalized);
        let mutate_body = blueprint_review("bench", &unnamed);
        blueprints.push((
            name,
            source,
            validate_body,
            mutate_body,
            normalized,
            unnamed,
        ));
    }
    let clients: Vec<usize> = std::env::var("BENCH_CLIENTS")
        .ok()
        .map(|v| v.split(',').filter_map(|c| c.trim().parse().ok()).collect())
        .filter(|v: &Vec<usize>| !v.is_empty())
        .unwrap_or_else(|| if full { vec![16, 64] } else { vec![2] });
    let (requests, warmup) = if full {
        (env_usize("BENCH_REQUESTS", 10_000), 1_000)
    } else {
        (20, 0)
    };
    let distinct = if full { DISTINCT } else { 4 };
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!(
        "webhook bench: {cores} cores, load average {} at start",
        load.split_whitespace()
            .take(3)
            .collect::<Vec<_>>()
            .join(" ")
    );
    for (name, source, v, ..) in &blueprints {
        println!("{name}: {source}, {} bytes as AdmissionReview", v.len());
    }

    // BENCH_STAGES_ONLY=1: the in-process stages alone (quick, and needs no quiet machine for
    // the load), to compare changes to the review path.
    let stages_only = std::env::var("BENCH_STAGES_ONLY").is_ok_and(|v| v == "1");
    let looped = std::env::var("BENCH_LOOP").ok();
    if (full || stages_only) && looped.is_none() {
        let rounds = env_usize("BENCH_STAGES_ROUNDS", 400);
        println!(
            "\nstages, CPU µs per review in-process (one thread, no TLS, best of 5 x {rounds}):"
        );
        println!(
            "{:<6} {:<20} {:>8} {:>8} {:>9} {:>9} {:>8}",
            "", "route", "json", "parse", "validate", "normalize", "review"
        );
        for (name, _, v, m, ..) in &blueprints {
            stages(name, Route::ValidateBlueprint, v, rounds);
            stages(name, Route::MutateBlueprint, m, rounds);
        }
    }
    if stages_only {
        // BENCH_LOOP=<small|large>-<validate|mutate>:<n>: instead of the table, n whole reviews
        // of that body, for `perf stat -e instructions:u` or `perf record`.
        if let Some((which, n)) = looped.and_then(|l| {
            Some((
                l.split_once(':')?.0.to_owned(),
                l.split_once(':')?.1.parse().ok()?,
            ))
        }) {
            for (name, _, v, m, ..) in &blueprints {
                for (route, body) in [("validate", v), ("mutate", m)] {
                    if which == format!("{name}-{route}") {
                        let route = if route == "validate" {
                            Route::ValidateBlueprint
                        } else {
                            Route::MutateBlueprint
                        };
                        for _ in 0..n {
                            std::hint::black_box(admission::handle_review(route, body));
                        }
                    }
                }
            }
        }
        let _ = std::fs::remove_dir_all(&dir);
        return;
    }

    // As the webhooks are compared: the server alone on one core (CPU 0), the clients on
    // the others, so that they do not take turns on the server's core. BENCH_PIN=0 shares all.
    let pin = cores > 1 && std::env::var("BENCH_PIN").map_or(true, |v| v != "0");
    let mut command = std::process::Command::new(std::env::current_exe().expect("own path"));
    command.env(SERVE_ENV, &dir);
    if pin {
        command.env(SERVER_CPU_ENV, "0");
        pin_to(1..cores);
    }
    let mut child = command
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("start the server process");
    let pid = child.id();
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.take().expect("stdout"))
        .read_line(&mut line)
        .expect("server address");
    let addr: std::net::SocketAddr = line
        .trim()
        .strip_prefix("listening ")
        .and_then(|a| a.parse().ok())
        .unwrap_or_else(|| panic!("server said {line:?}"));
    let (idle_rss, idle_threads) = rss_threads(pid);
    println!(
        "\nserver process idle: RSS {:.1} MiB, {idle_threads} threads; {requests} requests per row after {warmup} warm-up; {}",
        idle_rss as f64 / 1024.0,
        if pin {
            format!("server on CPU 0, clients on CPUs 1-{}", cores - 1)
        } else {
            "server and clients share the cores".to_string()
        }
    );
    println!(
        "{:<6} {:<20} {:<9} {:>7} {:>8} {:>9} {:>9} {:>10} {:>9} {:>7}",
        "",
        "route",
        "objects",
        "clients",
        "req/s",
        "p50",
        "p99",
        "CPU µs/req",
        "RSS MiB",
        "threads"
    );

    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let tls = client_config(&dev.ca_cert_pem);
    rt.block_on(async {
        for (name, _, _, _, normalized, unnamed) in &blueprints {
            for (route, object, patch) in [
                ("/validate/blueprint", normalized, false),
                ("/mutate/blueprint", unnamed, true),
            ] {
                for (objects, label, new_templates) in [
                    (1, "same", false),
                    (distinct, "distinct", false),
                    (distinct, "new text", true),
                ] {
                    let bodies = Arc::new(bodies_of(object, objects, new_templates));
                    for &c in &clients {
                        if warmup > 0 {
                            run_route(addr, tls.clone(), route, bodies.clone(), c, warmup, patch)
                                .await;
                        }
                        let sampler = Sampler::start(pid);
                        let cpu0 = cpu_time(pid);
                        let r =
                            run_route(addr, tls.clone(), route, bodies.clone(), c, requests, patch)
                                .await;
                        let cpu = cpu_time(pid).saturating_sub(cpu0);
                        let (rss, threads) = sampler.stop();
                        println!(
                            "{name:<6} {route:<20} {label:<9} {c:>7} {:>8.0} {:>9.2?} {:>9.2?} {:>10.1} {:>9.1} {threads:>7}",
                            r.rps,
                            r.p50,
                            r.p99,
                            cpu.as_secs_f64() * 1e6 / r.n as f64,
                            rss as f64 / 1024.0
                        );
                    }
                }
            }
        }
    });
    drop(child.stdin.take());
    let status = child.wait().expect("server exit");
    assert!(status.success(), "server process: {status}");
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!(
        "load average {} at the end",
        load.split_whitespace()
            .take(3)
            .collect::<Vec<_>>()
            .join(" ")
    );
    let _ = std::fs::remove_dir_all(&dir);
}
