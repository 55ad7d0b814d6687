//! Serving certificate: load from PEM files and reload when they change.
//!
//! Kubernetes updates a mounted Secret by writing a new timestamped directory and swapping the
//! `..data` symlink, so watching the files with inotify misses updates. We poll instead: every
//! `interval` both files are read through their paths (following symlinks) and hashed; when the
//! hash changes the new pair is parsed and, only if it is valid, swapped in atomically
//! (`RustlsConfig::reload_from_config`). Existing connections keep their session; new handshakes
//! use the new certificate. A half-written or mismatched pair is logged and the old certificate
//! stays in use until the files are consistent again.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::Context as _;
use axum_server::tls_rustls::RustlsConfig;
use rustls::pki_types::pem::PemObject as _;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use sha2::{Digest as _, Sha256};

use super::metrics::Metrics;

/// Paths of the serving certificate (chain) and its private key, both PEM.
#[derive(Debug, Clone)]
pub struct CertFiles {
    pub cert: PathBuf,
    pub key: PathBuf,
}

/// A rustls server config (TLS 1.2 and 1.3, ring provider, ALPN h2 + http/1.1) from PEM bytes.
pub fn server_config(cert_pem: &[u8], key_pem: &[u8]) -> anyhow::Result<rustls::ServerConfig> {
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(cert_pem)
        .collect::<Result<_, _>>()
        .map_err(|e| anyhow::anyhow!("certificate PEM does not parse: {e}"))?;
    anyhow::ensure!(
        !certs.is_empty(),
        "no CERTIFICATE block found in the certificate file"
    );
    let key = PrivateKeyDer::from_pem_slice(key_pem).map_err(|e| {
        anyhow::anyhow!("no usable private key (PKCS#8, PKCS#1 or SEC1 PEM) in the key file: {e}")
    })?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .context("TLS protocol versions")?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .context("certificate and key do not form a valid pair")?;
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(config)
}

/// Contents of both files and their combined hash.
struct Loaded {
    cert: Vec<u8>,
    key: Vec<u8>,
    hash: [u8; 32],
}

async fn read_pair(files: &CertFiles) -> anyhow::Result<Loaded> {
    let cert = tokio::fs::read(&files.cert)
        .await
        .with_context(|| format!("reading --tls-cert-file {}", files.cert.display()))?;
    let key = tokio::fs::read(&files.key)
        .await
        .with_context(|| format!("reading --tls-key-file {}", files.key.display()))?;
    let mut h = Sha256::new();
    h.update((cert.len() as u64).to_le_bytes());
    h.update(&cert);
    h.update(&key);
    Ok(Loaded {
        cert,
        key,
        hash: h.finalize().into(),
    })
}

/// The TLS state shared by the server, the reloader and `/readyz`.
#[derive(Clone)]
pub struct Tls {
    files: CertFiles,
    config: RustlsConfig,
    ready: Arc<AtomicBool>,
    hash: Arc<std::sync::Mutex<[u8; 32]>>,
}

impl std::fmt::Debug for Tls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tls")
            .field("files", &self.files)
            .field("ready", &self.is_loaded())
            .finish()
    }
}

impl Tls {
    /// Loads the pair once; fails with a message naming the file and the problem.
    pub async fn load(files: CertFiles) -> anyhow::Result<Self> {
        let loaded = read_pair(&files).await?;
        let cfg = server_config(&loaded.cert, &loaded.key).with_context(|| {
            format!(
                "TLS from {} and {}",
                files.cert.display(),
                files.key.display()
            )
        })?;
        Ok(Self {
            files,
            config: RustlsConfig::from_config(Arc::new(cfg)),
            ready: Arc::new(AtomicBool::new(true)),
            hash: Arc::new(std::sync::Mutex::new(loaded.hash)),
        })
    }

    /// Waits until the files exist and form a valid pair (a Secret volume may be populated a
    /// little after start), retrying every `interval`; returns early with an error on shutdown.
    pub async fn wait_load(
        files: CertFiles,
        interval: Duration,
        mut shutdown: tokio::sync::watch::Receiver<bool>,
    ) -> anyhow::Result<Self> {
        let mut last_err = String::new();
        loop {
            match Self::load(files.clone()).await {
                Ok(tls) => return Ok(tls),
                Err(e) => {
                    let msg = format!("{e:#}");
                    if msg != last_err {
                        tracing::warn!(error = %msg, "TLS not loaded yet; not ready, retrying");
                        last_err = msg;
                    }
                }
            }
            tokio::select! {
                _ = tokio::time::sleep(interval) => {}
                _ = shutdown.changed() => anyhow::bail!("shut down before the TLS certificate could be loaded"),
            }
        }
    }

    pub fn rustls_config(&self) -> RustlsConfig {
        self.config.clone()
    }

    pub fn is_loaded(&self) -> bool {
        self.ready.load(Ordering::Relaxed)
    }

    pub fn files(&self) -> &CertFiles {
        &self.files
    }

    /// Checks the files once: returns `Ok(true)` when a new valid pair was swapped in,
    /// `Ok(false)` when nothing changed, and an error (old pair kept) when the new content is
    /// unreadable or invalid.
    pub async fn reload_if_changed(&self) -> anyhow::Result<bool> {
        let loaded = read_pair(&self.files).await?;
        if *self.hash.lock().expect("tls hash lock") == loaded.hash {
            return Ok(false);
        }
        let cfg = server_config(&loaded.cert, &loaded.key).with_context(|| {
            format!(
                "new TLS pair in {} and {} (keeping the previous one)",
                self.files.cert.display(),
                self.files.key.display()
            )
        })?;
        self.config.reload_from_config(Arc::new(cfg));
        *self.hash.lock().expect("tls hash lock") = loaded.hash;
        Ok(true)
    }

    /// Polls the files every `interval` until `shutdown` fires.
    pub async fn watch(
        self,
        interval: Duration,
        metrics: Metrics,
        mut shutdown: tokio::sync::watch::Receiver<bool>,
    ) {
        let mut last_err = String::new();
        loop {
            tokio::select! {
                _ = tokio::time::sleep(interval) => {}
                _ = shutdown.changed() => return,
            }
            match self.reload_if_changed().await {
                Ok(true) => {
                    last_err.clear();
                    metrics.tls_reload("success");
                    tracing::info!(cert = %self.files.cert.display(), "reloaded the TLS certificate");
                }
                Ok(false) => {}
                Err(e) => {
                    let msg = format!("{e:#}");
                    if msg != last_err {
                        metrics.tls_reload("failure");
                        tracing::warn!(error = %msg, "TLS reload failed; still serving the previous certificate");
                        last_err = msg;
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rejects_garbage_with_reasons() {
        let err = server_config(b"not pem", b"not pem").unwrap_err();
        assert!(err.to_string().contains("no CERTIFICATE"), "{err:#}");
        let c = crate::webhook::certs::generate(&["localhost".into()], 1).unwrap();
        let err = server_config(c.cert_pem.as_bytes(), b"junk").unwrap_err();
        assert!(err.to_string().contains("private key"), "{err:#}");
        let other = crate::webhook::certs::generate(&["localhost".into()], 1).unwrap();
        let err = server_config(c.cert_pem.as_bytes(), other.key_pem.as_bytes()).unwrap_err();
        assert!(format!("{err:#}").contains("valid pair"), "{err:#}");
    }
}
