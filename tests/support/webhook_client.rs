//! A minimal HTTPS/1.1 keep-alive client (tokio-rustls) for the webhook tests and the bench.
//! Included by them with `#[path = "support/webhook_client.rs"] mod webhook_client;` (it is not
//! a test target of its own).
#![allow(dead_code)]

use std::net::SocketAddr;
use std::sync::Arc;

use anyhow::Context as _;
use rustls::pki_types::pem::PemObject as _;
use rustls::pki_types::{CertificateDer, ServerName};
use tokio::io::{AsyncBufReadExt as _, AsyncReadExt as _, AsyncWriteExt as _, BufReader};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;
use tokio_rustls::client::TlsStream;

/// A rustls client config trusting only `ca_pem`.
pub fn client_config(ca_pem: &str) -> Arc<rustls::ClientConfig> {
    let mut roots = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(ca_pem.as_bytes()) {
        roots.add(cert.expect("CA PEM")).expect("CA cert");
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    Arc::new(
        rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .expect("protocol versions")
            .with_root_certificates(roots)
            .with_no_client_auth(),
    )
}

/// One keep-alive connection.
pub struct Conn {
    stream: BufReader<TlsStream<TcpStream>>,
}

#[derive(Debug)]
pub struct Reply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Reply {
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.text()))
    }
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// The write buffer of Go's `http.Transport` (its `WriteBufferSize` default).
const GO_WRITE_BUFFER: usize = 4096;

impl Conn {
    pub async fn connect(
        addr: SocketAddr,
        config: Arc<rustls::ClientConfig>,
        server_name: &str,
    ) -> anyhow::Result<Conn> {
        let tcp = TcpStream::connect(addr).await?;
        tcp.set_nodelay(true)?;
        let name = ServerName::try_from(server_name.to_owned())?;
        let tls = TlsConnector::from(config).connect(name, tcp).await?;
        Ok(Conn {
            stream: BufReader::new(tls),
        })
    }

    /// The peer's leaf certificate (DER).
    pub fn peer_certificate(&self) -> Option<Vec<u8>> {
        let (_, conn) = self.stream.get_ref().get_ref();
        conn.peer_certificates()
            .and_then(|c| c.first())
            .map(|c| c.to_vec())
    }

    /// Waits until the server closes the connection (EOF or a reset); bytes instead are an error.
    pub async fn wait_closed(&mut self) -> anyhow::Result<()> {
        let mut buf = [0u8; 512];
        match self.stream.read(&mut buf).await {
            Ok(0) | Err(_) => Ok(()),
            Ok(n) => anyhow::bail!(
                "expected the connection to close, got {}",
                String::from_utf8_lossy(&buf[..n])
            ),
        }
    }

    /// The raw TLS stream, for tests that write byte by byte.
    pub fn into_stream(self) -> TlsStream<TcpStream> {
        self.stream.into_inner()
    }

    pub async fn request(
        &mut self,
        method: &str,
        path: &str,
        body: &[u8],
    ) -> anyhow::Result<Reply> {
        let head = format!(
            "{method} {path} HTTP/1.1\r\nhost: webhook\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
            body.len()
        );
        // Written as the API server's Go client writes it: through a 4 KiB buffer, so a small
        // review goes out in one TLS record and a large one in 4 KiB records.
        let request = [head.as_bytes(), body].concat();
        let s = self.stream.get_mut();
        for chunk in request.chunks(GO_WRITE_BUFFER) {
            s.write_all(chunk).await?;
        }
        s.flush().await?;
        self.read_reply().await
    }

    async fn read_reply(&mut self) -> anyhow::Result<Reply> {
        let mut line = String::new();
        self.stream.read_line(&mut line).await?;
        anyhow::ensure!(!line.is_empty(), "connection closed before a response");
        let status: u16 = line
            .split_whitespace()
            .nth(1)
            .context("status line")?
            .parse()?;
        let mut headers = Vec::new();
        loop {
            line.clear();
            self.stream.read_line(&mut line).await?;
            let l = line.trim_end();
            if l.is_empty() {
                break;
            }
            let (k, v) = l.split_once(':').context("header line")?;
            headers.push((k.trim().to_ascii_lowercase(), v.trim().to_owned()));
        }
        let get = |k: &str| headers.iter().find(|(h, _)| h == k).map(|(_, v)| v.clone());
        let mut body = Vec::new();
        if let Some(len) = get("content-length") {
            body.resize(len.parse()?, 0);
            self.stream.read_exact(&mut body).await?;
        } else if get("transfer-encoding").is_some_and(|t| t.contains("chunked")) {
            loop {
                line.clear();
                self.stream.read_line(&mut line).await?;
                let size = usize::from_str_radix(line.trim(), 16)?;
                let mut chunk = vec![0; size + 2];
                self.stream.read_exact(&mut chunk).await?;
                if size == 0 {
                    break;
                }
                body.extend_from_slice(&chunk[..size]);
            }
        }
        Ok(Reply {
            status,
            headers,
            body,
        })
    }
}

/// An AdmissionReview for `object` (a JSON value) of the given kind.
pub fn review(
    uid: &str,
    group: &str,
    kind: &str,
    object: &serde_json::Value,
    dry_run: bool,
) -> Vec<u8> {
    let resource = format!("{}s", kind.to_ascii_lowercase());
    serde_json::to_vec(&serde_json::json!({
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": uid,
            "kind": {"group": group, "version": "v1alpha1", "kind": kind},
            "resource": {"group": group, "version": "v1alpha1", "resource": resource},
            "name": object.pointer("/metadata/name").cloned().unwrap_or(serde_json::json!("")),
            "namespace": "default",
            "operation": "CREATE",
            "userInfo": {"username": "tester"},
            "object": object,
            "oldObject": null,
            "dryRun": dry_run,
            "options": {"apiVersion": "meta.k8s.io/v1", "kind": "CreateOptions"}
        }
    }))
    .expect("review JSON")
}

/// A Blueprint review.
pub fn blueprint_review(uid: &str, object: &serde_json::Value) -> Vec<u8> {
    review(uid, "cr.kanister.io", "Blueprint", object, false)
}
