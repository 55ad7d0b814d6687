//! The webhook server in-process on 127.0.0.1: HTTPS admission, probes, metrics, body limit,
//! certificate reload through a Secret-volume style symlink swap, graceful shutdown.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use blueprint_operator::webhook::certs::{self, DevCerts};
use blueprint_operator::webhook::limits::Limits;
use blueprint_operator::webhook::server::{self, ServerConfig};
use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject as _;
use serde_json::json;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

#[path = "support/webhook_client.rs"]
mod webhook_client;
use webhook_client::{Conn, blueprint_review, client_config};

const DEADLINE: Duration = Duration::from_secs(60);

fn temp_dir(name: &str) -> PathBuf {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .subsec_nanos();
    let d = std::env::temp_dir().join(format!("bpo-{name}-{}-{nanos}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn dev_certs() -> DevCerts {
    certs::generate(&["localhost".into(), "127.0.0.1".into()], 2).unwrap()
}

/// Writes the pair the way the kubelet fills a Secret volume: `<dir>/..<ts>/tls.*`, a `..data`
/// symlink to it, and `tls.crt`/`tls.key` symlinks through `..data`. Each call swaps `..data`
/// atomically (rename over the old link).
fn write_secret_volume(dir: &Path, generation: u32, cert: &[u8], key: &[u8]) {
    let ts = format!("..2026_01_01_00_00_{generation:02}");
    let data = dir.join(&ts);
    std::fs::create_dir_all(&data).unwrap();
    std::fs::write(data.join("tls.crt"), cert).unwrap();
    std::fs::write(data.join("tls.key"), key).unwrap();
    let tmp = dir.join("..data_tmp");
    let _ = std::fs::remove_file(&tmp);
    std::os::unix::fs::symlink(&ts, &tmp).unwrap();
    std::fs::rename(&tmp, dir.join("..data")).unwrap();
    for f in ["tls.crt", "tls.key"] {
        let link = dir.join(f);
        if std::fs::symlink_metadata(&link).is_err() {
            std::os::unix::fs::symlink(format!("..data/{f}"), &link).unwrap();
        }
    }
}

fn config(dir: &Path, probe: Option<SocketAddr>) -> ServerConfig {
    ServerConfig {
        probe_listen: probe,
        tls_reload_interval: Duration::from_millis(100),
        ..ServerConfig::local(dir)
    }
}

fn leaf_der(pem: &str) -> Vec<u8> {
    CertificateDer::pem_slice_iter(pem.as_bytes())
        .next()
        .unwrap()
        .unwrap()
        .to_vec()
}

/// Plain-HTTP GET (Connection: close) → (status, body).
async fn http_get(addr: SocketAddr, path: &str) -> anyhow::Result<(u16, String)> {
    let mut s = tokio::net::TcpStream::connect(addr).await?;
    s.write_all(format!("GET {path} HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n").as_bytes())
        .await?;
    let mut out = String::new();
    s.read_to_string(&mut out).await?;
    let status = out
        .split_whitespace()
        .nth(1)
        .unwrap_or("0")
        .parse()
        .unwrap_or(0);
    let body = out
        .split_once("\r\n\r\n")
        .map(|x| x.1)
        .unwrap_or("")
        .to_owned();
    Ok((status, body))
}

async fn eventually<F, Fut>(what: &str, mut f: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = tokio::time::Instant::now() + DEADLINE;
    while !f().await {
        assert!(
            tokio::time::Instant::now() < deadline,
            "{what}: not within {DEADLINE:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn free_port() -> SocketAddr {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
}

fn valid_blueprint() -> serde_json::Value {
    json!({
        "apiVersion": "cr.kanister.io/v1alpha1", "kind": "Blueprint",
        "metadata": {"name": "demo"},
        "actions": {"backup": {"phases": [
            {"func": "KubeTask", "args": {"image": "busybox", "command": ["true"]}}
        ]}}
    })
}

#[tokio::test]
async fn serves_admission_probes_and_metrics_over_tls() {
    let dir = temp_dir("srv");
    let c = dev_certs();
    write_secret_volume(&dir, 1, c.cert_pem.as_bytes(), c.key_pem.as_bytes());
    let running = server::start(config(&dir, Some(free_port())))
        .await
        .unwrap();
    let tls = client_config(&c.ca_cert_pem);
    let mut conn = Conn::connect(running.addr, tls.clone(), "localhost")
        .await
        .unwrap();

    // Keep-alive: several requests on one connection.
    for (i, route) in [
        "/mutate/blueprint",
        "/validate/blueprint",
        "/validate/blueprint",
    ]
    .into_iter()
    .enumerate()
    {
        let uid = format!("uid-{i}");
        let r = conn
            .request("POST", route, &blueprint_review(&uid, &valid_blueprint()))
            .await
            .unwrap();
        assert_eq!(r.status, 200, "{}", r.text());
        assert_eq!(r.header("content-type"), Some("application/json"));
        let v = r.json();
        assert_eq!(v["response"]["uid"], uid.as_str());
        assert_eq!(v["response"]["allowed"], true);
        if route == "/mutate/blueprint" {
            assert!(v["response"]["patch"].is_string(), "name defaulted: {v}");
        }
    }
    let r = conn
        .request("POST", "/validate/blueprint", b"{oops")
        .await
        .unwrap();
    assert_eq!(r.status, 400);
    assert!(r.text().contains("not valid JSON"), "{}", r.text());

    for path in ["/healthz", "/readyz"] {
        let r = conn.request("GET", path, b"").await.unwrap();
        assert_eq!(r.status, 200, "{path}");
    }
    let (status, body) = http_get(running.probe_addr.unwrap(), "/readyz")
        .await
        .unwrap();
    assert_eq!((status, body.as_str()), (200, "ok"));
    let r = conn.request("GET", "/metrics", b"").await.unwrap();
    let text = r.text();
    assert!(
        r.header("content-type")
            .unwrap()
            .starts_with("application/openmetrics-text")
    );
    assert!(
        text.contains(r#"blueprint_operator_webhook_requests_total{route="/validate/blueprint",verdict="allowed"} 2"#),
        "{text}"
    );
    assert!(
        text.contains(r#"blueprint_operator_webhook_requests_total{route="/mutate/blueprint",verdict="patched"} 1"#),
        "{text}"
    );
    assert!(
        text.contains(r#"blueprint_operator_webhook_requests_total{route="/validate/blueprint",verdict="bad_request"} 1"#),
        "{text}"
    );

    // Over the body limit: 413 with the reason.
    let mut big = Conn::connect(running.addr, tls.clone(), "localhost")
        .await
        .unwrap();
    let body = vec![b' '; blueprint_operator::webhook::MAX_BODY_BYTES + 1];
    let r = big
        .request("POST", "/validate/blueprint", &body)
        .await
        .unwrap();
    assert_eq!(r.status, 413, "{}", r.text());
    assert!(r.text().contains("limit"), "{}", r.text());
    // Just under the limit is read (and refused as not JSON, not as too large).
    let mut ok = Conn::connect(running.addr, tls, "localhost").await.unwrap();
    let body = vec![b' '; blueprint_operator::webhook::MAX_BODY_BYTES - 1];
    let r = ok
        .request("POST", "/validate/blueprint", &body)
        .await
        .unwrap();
    assert_eq!(r.status, 400, "{}", r.text());

    let addr = running.addr;
    running.shutdown().await.unwrap();
    assert!(
        tokio::net::TcpStream::connect(addr).await.is_err(),
        "still accepting after shutdown"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn reloads_the_certificate_on_a_symlink_swap_without_dropping_connections() {
    let dir = temp_dir("reload");
    let first = dev_certs();
    write_secret_volume(&dir, 1, first.cert_pem.as_bytes(), first.key_pem.as_bytes());
    let running = server::start(config(&dir, None)).await.unwrap();
    let mut old_conn = Conn::connect(running.addr, client_config(&first.ca_cert_pem), "localhost")
        .await
        .unwrap();
    assert_eq!(
        old_conn.peer_certificate().unwrap(),
        leaf_der(&first.cert_pem)
    );

    // A broken pair (key of another certificate) is refused: the old certificate stays.
    let other = dev_certs();
    write_secret_volume(&dir, 2, first.cert_pem.as_bytes(), other.key_pem.as_bytes());
    let metrics = running.metrics();
    eventually("failed reload counted", || {
        let m = metrics.clone();
        async move {
            m.encode()
                .contains(r#"blueprint_operator_webhook_tls_reloads_total{result="failure"} 1"#)
        }
    })
    .await;
    let conn = Conn::connect(running.addr, client_config(&first.ca_cert_pem), "localhost")
        .await
        .unwrap();
    assert_eq!(conn.peer_certificate().unwrap(), leaf_der(&first.cert_pem));

    // A new valid pair (new CA) is picked up by new connections.
    let second = dev_certs();
    write_secret_volume(
        &dir,
        3,
        second.cert_pem.as_bytes(),
        second.key_pem.as_bytes(),
    );
    let addr = running.addr;
    let cfg = client_config(&second.ca_cert_pem);
    eventually("new certificate served", || {
        let cfg = cfg.clone();
        let want = leaf_der(&second.cert_pem);
        async move {
            match Conn::connect(addr, cfg, "localhost").await {
                Ok(c) => c.peer_certificate() == Some(want),
                Err(_) => false,
            }
        }
    })
    .await;
    assert!(
        metrics
            .encode()
            .contains(r#"blueprint_operator_webhook_tls_reloads_total{result="success"} 1"#)
    );

    // The connection made before the swap still works.
    let r = old_conn
        .request(
            "POST",
            "/validate/blueprint",
            &blueprint_review("u", &valid_blueprint()),
        )
        .await
        .unwrap();
    assert_eq!(r.status, 200);
    running.shutdown().await.unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn not_ready_until_the_certificate_exists() {
    let dir = temp_dir("wait");
    let probe = free_port();
    let cfg = config(&dir, Some(probe));
    let starting = tokio::spawn(server::start(cfg));
    eventually("probe listener up and not ready", || async move {
        matches!(http_get(probe, "/readyz").await, Ok((503, body)) if body.contains("TLS certificate not loaded"))
    })
    .await;
    let (status, _) = http_get(probe, "/healthz").await.unwrap();
    assert_eq!(status, 200, "liveness does not depend on TLS");

    let c = dev_certs();
    write_secret_volume(&dir, 1, c.cert_pem.as_bytes(), c.key_pem.as_bytes());
    let running = starting.await.unwrap().unwrap();
    let (status, _) = http_get(probe, "/readyz").await.unwrap();
    assert_eq!(status, 200);
    running.shutdown().await.unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}

fn limited(dir: &Path, limits: Limits) -> ServerConfig {
    ServerConfig {
        limits,
        ..config(dir, Some(free_port()))
    }
}

fn short_limits() -> Limits {
    Limits {
        header_timeout: Duration::from_secs(60),
        body_timeout: Duration::from_secs(60),
        idle_timeout: Duration::from_secs(60),
        handshake_timeout: Duration::from_secs(60),
        max_connections: 64,
    }
}

/// A server with `limits` serving a fresh certificate from its own Secret volume `dir`, and a
/// client config `tls` that trusts it.
struct LimitedServer {
    dir: PathBuf,
    running: server::Running,
    tls: Arc<rustls::ClientConfig>,
}

impl LimitedServer {
    async fn start(name: &str, limits: Limits) -> LimitedServer {
        let dir = temp_dir(name);
        let c = dev_certs();
        write_secret_volume(&dir, 1, c.cert_pem.as_bytes(), c.key_pem.as_bytes());
        let running = server::start(limited(&dir, limits)).await.unwrap();
        let tls = client_config(&c.ca_cert_pem);
        LimitedServer { dir, running, tls }
    }

    /// A new connection, which must complete its handshake.
    async fn connect(&self) -> Conn {
        Conn::connect(self.running.addr, self.tls.clone(), "localhost")
            .await
            .unwrap()
    }

    async fn stop(self) {
        self.running.shutdown().await.unwrap();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn closed_count(metrics: &str, reason: &str) -> u64 {
    let key =
        format!("blueprint_operator_webhook_connections_closed_total{{reason=\"{reason}\"}} ");
    metrics
        .lines()
        .find_map(|l| l.strip_prefix(&key))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0)
}

/// Writes `prefix`, then `drip` one byte every 100 ms (at most 600 bytes) while reading what the
/// server sends; returns what it sent once it closed the connection. Never closes first: if the
/// server does not cut the connection, this fails after the drip plus `DEADLINE`.
async fn drip_until_closed(conn: Conn, prefix: &[u8], drip: u8) -> String {
    let (mut rd, mut wr) = tokio::io::split(conn.into_stream());
    let reader = tokio::spawn(async move {
        let mut out = Vec::new();
        let _ = rd.read_to_end(&mut out).await;
        String::from_utf8_lossy(&out).into_owned()
    });
    wr.write_all(prefix).await.unwrap();
    wr.flush().await.unwrap();
    for _ in 0..600 {
        if reader.is_finished() {
            break;
        }
        if wr.write_all(&[drip]).await.is_err() || wr.flush().await.is_err() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let out = tokio::time::timeout(DEADLINE, reader)
        .await
        .expect("the server never closed the slow connection")
        .unwrap();
    drop(wr);
    out
}

#[tokio::test]
async fn headers_sent_byte_by_byte_are_cut_off() {
    let limits = Limits {
        header_timeout: Duration::from_secs(1),
        ..short_limits()
    };
    let srv = LimitedServer::start("slowloris", limits).await;
    let out = drip_until_closed(
        srv.connect().await,
        b"POST /validate/blueprint HTTP/1.1\r\nhost: x\r\nx-slow: ",
        b'a',
    )
    .await;
    assert!(!out.contains("200 OK"), "{out}");
    assert_eq!(closed_count(&srv.running.metrics().encode(), "header"), 1);

    // A normal client on a fresh connection is served meanwhile.
    let mut ok = srv.connect().await;
    let r = ok
        .request(
            "POST",
            "/validate/blueprint",
            &blueprint_review("u", &valid_blueprint()),
        )
        .await
        .unwrap();
    assert_eq!(r.status, 200, "{}", r.text());
    srv.stop().await;
}

#[tokio::test]
async fn a_body_sent_byte_by_byte_gets_408_and_the_connection_closes() {
    let limits = Limits {
        body_timeout: Duration::from_secs(1),
        ..short_limits()
    };
    let srv = LimitedServer::start("slowbody", limits).await;
    let out = drip_until_closed(
        srv.connect().await,
        b"POST /validate/blueprint HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: 100000\r\n\r\n",
        b' ',
    )
    .await;
    assert!(out.starts_with("HTTP/1.1 408"), "{out}");
    assert!(out.contains("--body-timeout"), "{out}");
    assert!(
        out.to_ascii_lowercase().contains("connection: close"),
        "{out}"
    );
    srv.stop().await;
}

#[tokio::test]
async fn idle_keep_alive_connections_are_closed_after_the_idle_timeout_not_the_header_timeout() {
    let limits = Limits {
        header_timeout: Duration::from_secs(1),
        idle_timeout: Duration::from_secs(10),
        ..short_limits()
    };
    let srv = LimitedServer::start("idle", limits).await;
    let mut conn = srv.connect().await;
    let review = blueprint_review("u", &valid_blueprint());
    let r = conn
        .request("POST", "/validate/blueprint", &review)
        .await
        .unwrap();
    assert_eq!(r.status, 200);
    // Idle for three header timeouts, watched the whole time: the server does not close it.
    let closed = tokio::time::timeout(Duration::from_secs(3), conn.wait_closed()).await;
    assert!(
        closed.is_err(),
        "idle connection cut by the header timeout: {closed:?}"
    );
    let r = conn
        .request("POST", "/validate/blueprint", &review)
        .await
        .unwrap();
    assert_eq!(r.status, 200, "idle connection cut by the header timeout");
    // Then idle past the idle timeout: the server closes it.
    tokio::time::timeout(DEADLINE, conn.wait_closed())
        .await
        .expect("idle connection never closed")
        .unwrap();
    assert_eq!(closed_count(&srv.running.metrics().encode(), "idle"), 1);
    srv.stop().await;
}

#[tokio::test]
async fn connections_over_the_limit_are_refused_and_the_server_stays_healthy() {
    let limits = Limits {
        max_connections: 2,
        ..short_limits()
    };
    let srv = LimitedServer::start("limit", limits).await;
    let review = blueprint_review("u", &valid_blueprint());
    let mut first = srv.connect().await;
    let second = srv.connect().await;
    // The third is closed before its handshake completes (or right after it, on TLS 1.3).
    let third = async {
        let mut c = Conn::connect(srv.running.addr, srv.tls.clone(), "localhost").await?;
        c.request("POST", "/validate/blueprint", &review).await
    };
    assert!(
        tokio::time::timeout(DEADLINE, third)
            .await
            .expect("third connection neither served nor refused")
            .is_err(),
        "a third connection was served over a limit of 2"
    );
    assert!(closed_count(&srv.running.metrics().encode(), "limit") >= 1);
    // The open connections and the probe listener keep working.
    let r = first
        .request("POST", "/validate/blueprint", &review)
        .await
        .unwrap();
    assert_eq!(r.status, 200);
    let (status, _) = http_get(srv.running.probe_addr.unwrap(), "/healthz")
        .await
        .unwrap();
    assert_eq!(status, 200);
    // A closed connection frees its slot.
    drop(second);
    let addr = srv.running.addr;
    eventually("a slot freed for a new connection", || {
        let tls = srv.tls.clone();
        let review = review.clone();
        async move {
            match Conn::connect(addr, tls, "localhost").await {
                Ok(mut c) => matches!(
                    c.request("POST", "/validate/blueprint", &review).await,
                    Ok(r) if r.status == 200
                ),
                Err(_) => false,
            }
        }
    })
    .await;
    srv.stop().await;
}

#[tokio::test]
async fn the_tls_handshake_timeout_flag_decides_how_long_a_handshake_may_take() {
    // Every other timeout far away: only --tls-handshake-timeout can close this connection.
    let limits = Limits {
        handshake_timeout: Duration::from_secs(1),
        header_timeout: Duration::from_secs(600),
        body_timeout: Duration::from_secs(600),
        idle_timeout: Duration::from_secs(600),
        ..short_limits()
    };
    let srv = LimitedServer::start("handshake", limits).await;
    let mut tcp = tokio::net::TcpStream::connect(srv.running.addr)
        .await
        .unwrap();
    // The header of a 512-byte handshake record, and nothing after it: the server waits for
    // the ClientHello that never comes.
    tcp.write_all(&[0x16, 0x03, 0x01, 0x02, 0x00])
        .await
        .unwrap();
    tcp.flush().await.unwrap();
    let mut buf = [0u8; 64];
    let read = tokio::time::timeout(DEADLINE, tcp.read(&mut buf))
        .await
        .expect("the server kept a connection without a TLS handshake open");
    assert!(
        matches!(read, Ok(0) | Err(_)),
        "expected the connection to close, got {read:?}"
    );
    // A real client is served meanwhile.
    let mut ok = srv.connect().await;
    let r = ok
        .request(
            "POST",
            "/validate/blueprint",
            &blueprint_review("u", &valid_blueprint()),
        )
        .await
        .unwrap();
    assert_eq!(r.status, 200, "{}", r.text());
    srv.stop().await;

    // The other way round: a handshake slower than the TLS acceptor's own default (10 s) is
    // served when --tls-handshake-timeout allows it, so the flag, not a default, decides.
    let limits = Limits {
        handshake_timeout: Duration::from_secs(40),
        header_timeout: Duration::from_secs(600),
        body_timeout: Duration::from_secs(600),
        idle_timeout: Duration::from_secs(600),
        ..short_limits()
    };
    let srv = LimitedServer::start("handshake-slow", limits).await;
    let tcp = tokio::net::TcpStream::connect(srv.running.addr)
        .await
        .unwrap();
    // The client's own pace (the stimulus, not a wait for the server).
    tokio::time::sleep(Duration::from_secs(12)).await;
    let name = rustls::pki_types::ServerName::try_from("localhost").unwrap();
    let handshake = tokio_rustls::TlsConnector::from(srv.tls.clone())
        .connect(name, tcp)
        .await;
    assert!(
        handshake.is_ok(),
        "a 12 s handshake was cut although --tls-handshake-timeout is 40 s: {:?}",
        handshake.err()
    );
    srv.stop().await;
}

/// The README's drain on SIGTERM, through the binary: `/readyz` answers 503 at once, the HTTPS
/// listener stops accepting after `--shutdown-delay`, and a request in flight then still gets
/// its answer before the process exits 0.
#[tokio::test]
async fn sigterm_turns_readyz_503_and_the_request_in_flight_is_answered() {
    let dir = temp_dir("sigterm");
    let c = dev_certs();
    write_secret_volume(&dir, 1, c.cert_pem.as_bytes(), c.key_pem.as_bytes());
    let (https, probe) = (free_port(), free_port());
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_blueprint-operator"))
        .arg("webhook")
        .args(["--listen", &https.to_string()])
        .args(["--probe-listen", &probe.to_string()])
        .arg("--tls-cert-file")
        .arg(dir.join("tls.crt"))
        .arg("--tls-key-file")
        .arg(dir.join("tls.key"))
        .args(["--no-blueprint-lookup", "--log-level", "warn"])
        .args(["--shutdown-delay", "3", "--shutdown-grace", "60"])
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    eventually("the webhook is ready", || async {
        matches!(http_get(probe, "/readyz").await, Ok((200, _)))
    })
    .await;

    // A request in flight: its headers and half its body.
    let body = blueprint_review("in-flight", &valid_blueprint());
    let (first, rest) = body.split_at(body.len() / 2);
    let conn = Conn::connect(https, client_config(&c.ca_cert_pem), "localhost")
        .await
        .unwrap();
    let mut stream = conn.into_stream();
    let head = format!(
        "POST /validate/blueprint HTTP/1.1\r\nhost: webhook\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).await.unwrap();
    stream.write_all(first).await.unwrap();
    stream.flush().await.unwrap();

    let pid = child.id().unwrap().to_string();
    let killed = std::process::Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .unwrap();
    assert!(killed.success());
    eventually("/readyz answers 503", || async {
        matches!(http_get(probe, "/readyz").await, Ok((503, body)) if body.contains("shutting down"))
    })
    .await;
    // Within the delay a new request is still answered, and its connection is not kept alive:
    // the API server must not reuse a connection this pod is about to close.
    let mut conn = Conn::connect(https, client_config(&c.ca_cert_pem), "localhost")
        .await
        .expect("still accepting during --shutdown-delay");
    let during = conn
        .request(
            "POST",
            "/validate/blueprint",
            &blueprint_review("during", &valid_blueprint()),
        )
        .await
        .unwrap();
    assert_eq!(during.status, 200, "{}", during.text());
    assert_eq!(
        during.header("connection"),
        Some("close"),
        "an answer during the shutdown delay keeps its connection alive"
    );
    eventually("the HTTPS listener stops accepting", || async {
        tokio::net::TcpStream::connect(https).await.is_err()
    })
    .await;

    // The request in flight finishes and is answered.
    stream.write_all(rest).await.unwrap();
    stream.flush().await.unwrap();
    let mut answer = Vec::new();
    // Bytes read before the close stay in `answer`, also when the close is not a clean TLS one.
    let _ = tokio::time::timeout(DEADLINE, stream.read_to_end(&mut answer))
        .await
        .expect("the connection of the request in flight was not closed after its answer");
    let answer = String::from_utf8_lossy(&answer);
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert!(answer.contains(r#""uid":"in-flight""#), "{answer}");
    assert!(answer.contains(r#""allowed":true"#), "{answer}");

    let status = tokio::time::timeout(DEADLINE, child.wait())
        .await
        .expect("the webhook did not exit after the drain")
        .unwrap();
    assert!(status.success(), "{status}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Bounded work: 16 clients sending large Blueprints at once never get more reviews running
/// than the pool sized to the cores (before, every review took a blocking thread of its own).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_large_reviews_never_exceed_the_pool() {
    let dir = temp_dir("pool");
    let c = dev_certs();
    write_secret_volume(&dir, 1, c.cert_pem.as_bytes(), c.key_pem.as_bytes());
    let running = server::start(config(&dir, None)).await.unwrap();
    let tls = client_config(&c.ca_cert_pem);
    // Over the inline limit, so each review goes to the pool.
    let mut bp = valid_blueprint();
    bp["metadata"]["annotations"] = json!({
        "bench/padding": "x".repeat(blueprint_operator::webhook::workers::INLINE_MAX_BYTES)
    });
    let body = Arc::new(blueprint_review("big", &bp));
    let addr = running.addr;
    let clients: Vec<_> = (0..16)
        .map(|_| {
            let (tls, body) = (tls.clone(), body.clone());
            tokio::spawn(async move {
                let mut conn = Conn::connect(addr, tls, "localhost").await?;
                for _ in 0..4 {
                    let r = conn.request("POST", "/validate/blueprint", &body).await?;
                    anyhow::ensure!(r.status == 200, "{}", r.text());
                    anyhow::ensure!(r.json()["response"]["allowed"] == true, "{}", r.text());
                }
                anyhow::Ok(())
            })
        })
        .collect();
    for c in clients {
        c.await.unwrap().unwrap();
    }
    let (peak, size) = running.review_workers();
    assert!(peak >= 1, "no review went to the pool");
    assert!(
        peak <= size,
        "{peak} reviews ran at once on a pool of {size}"
    );
    running.shutdown().await.unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}
