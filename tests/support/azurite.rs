//! Azurite (tools/azurite), the Azure Storage emulator the tests' `azure` Profiles point at:
//! started once per test binary on the test host, over HTTPS with a certificate made here (for
//! the host, `localhost` and `*.blob.localhost`), with one storage account of our own whose
//! Shared Key signatures it checks. Stopped when the test binary exits (the watchdog of
//! [`super::server`]).
//!
//! Our Blob client reaches it path-style (`https://<host>:<port>/<account>`, the Profile's
//! `location.endpoint`). restic's azure backend only builds production URLs,
//! `https://<account>.blob.<AZURE_ENDPOINT_SUFFIX>/`: with the suffix `localhost:<port>`, a
//! name nothing here resolves, it goes through [`Azurite::proxy`], a CONNECT proxy (restic
//! honours `HTTPS_PROXY`) that opens every tunnel to Azurite; Azurite then reads the account
//! from the host name, and restic checks the certificate against [`Azurite::ca`]
//! (`RESTIC_CACERT`).

use std::io::{Read as _, Write as _};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::sync::OnceLock;
use std::time::Duration;

use anyhow::Context as _;
use blueprint_operator::azure::{AzureClient, Config};
use serde_json::{Value, json};

/// The storage account Azurite serves (lower-case letters and digits, as Azure's).
pub const ACCOUNT: &str = "bpotestaccount";
/// Its key (base64, as Azure's account keys are).
pub const KEY: &str = "YnBvLXRlc3QtYWNjb3VudC1rZXktMzItYnl0ZXMhIQ==";
/// A key of the right form that is not the account's.
pub const WRONG_KEY: &str = "d3Jvbmcta2V5LXdyb25nLWtleS13cm9uZy1rZXkhIQ==";

/// The running emulator.
#[derive(Debug)]
pub struct Azurite {
    /// `https://<host>:<port>/<account>`: a Profile's `location.endpoint`.
    pub endpoint: String,
    /// restic's `AZURE_ENDPOINT_SUFFIX` (`localhost:<port>`).
    pub suffix: String,
    /// `http://<host>:<port>` of the CONNECT proxy restic goes through (`HTTPS_PROXY`).
    pub proxy: String,
    /// The certificate Azurite serves (PEM), for `RESTIC_CACERT`.
    pub ca: PathBuf,
}

/// Azurite of this test binary; the first call starts it.
pub fn azurite() -> &'static Azurite {
    static AZ: OnceLock<Azurite> = OnceLock::new();
    AZ.get_or_init(|| start().unwrap_or_else(|e| panic!("Azurite did not start: {e:#}")))
}

fn start() -> anyhow::Result<Azurite> {
    let bin = super::server::built_tool("tools/azurite/build.sh", "azurite")?;
    let host = super::server::host();
    let port = super::server::free_port(&host)?;
    let addr = format!("{host}:{port}");
    let dir = std::env::temp_dir().join(format!("bpo-azurite-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let cert = rcgen::generate_simple_self_signed(vec![
        host.clone(),
        "localhost".into(),
        "*.blob.localhost".into(),
    ])
    .context("making Azurite's certificate")?;
    let (ca, key) = (dir.join("cert.pem"), dir.join("key.pem"));
    std::fs::write(&ca, cert.cert.pem())?;
    std::fs::write(&key, cert.signing_key.serialize_pem())?;
    let accounts = format!("AZURITE_ACCOUNTS={ACCOUNT}:{KEY}");
    let port_s = port.to_string();
    let args = [
        accounts.as_str(),
        bin.to_str().context("azurite path")?,
        "--blobHost",
        &host,
        "--blobPort",
        &port_s,
        "--cert",
        ca.to_str().context("cert path")?,
        "--key",
        key.to_str().context("key path")?,
        "--inMemoryPersistence",
        "--extentMemoryLimit",
        "512",
        // No calls home: the tests reach nothing but this machine.
        "--disableTelemetry",
        "--silent",
    ];
    let server = super::server::spawn_watched(
        "azurite",
        std::path::Path::new("/usr/bin/env"),
        &args,
        &addr,
    )?;
    server.wait_ready(Duration::from_secs(60), Duration::from_millis(200), || {
        TcpStream::connect(&addr).is_ok()
    })?;
    let proxy = connect_proxy(&host, addr.clone())?;
    Ok(Azurite {
        endpoint: format!("https://{addr}/{ACCOUNT}"),
        suffix: format!("localhost:{port}"),
        proxy: format!("http://{proxy}"),
        ca,
    })
}

/// A CONNECT proxy on `host` that tunnels every request to `target`; returns its address.
fn connect_proxy(host: &str, target: String) -> anyhow::Result<String> {
    let listener = TcpListener::bind((host, 0))?;
    let addr = listener.local_addr()?.to_string();
    std::thread::spawn(move || {
        for conn in listener.incoming().flatten() {
            let target = target.clone();
            std::thread::spawn(move || {
                let _ = tunnel(conn, &target);
            });
        }
    });
    Ok(addr)
}

fn tunnel(mut client: TcpStream, target: &str) -> std::io::Result<()> {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        if client.read(&mut byte)? == 0 || head.len() > 8192 {
            return Ok(());
        }
        head.push(byte[0]);
    }
    if !head.starts_with(b"CONNECT ") {
        return client.write_all(b"HTTP/1.1 405 Method Not Allowed\r\ncontent-length: 0\r\n\r\n");
    }
    let upstream = TcpStream::connect(target)?;
    client.write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")?;
    let (mut c2, mut u2) = (client.try_clone()?, upstream.try_clone()?);
    let up = std::thread::spawn(move || {
        let _ = std::io::copy(&mut c2, &mut u2);
        let _ = u2.shutdown(std::net::Shutdown::Write);
    });
    let (mut u, mut c) = (upstream, client);
    let _ = std::io::copy(&mut u, &mut c);
    let _ = c.shutdown(std::net::Shutdown::Write);
    let _ = up.join();
    Ok(())
}

/// A Blob client of the emulator with `key`.
pub fn client_with(key: &str) -> AzureClient {
    AzureClient::new(&Config {
        account: ACCOUNT.into(),
        key: key.into(),
        endpoint: azurite().endpoint.clone(),
        environment: String::new(),
        skip_ssl_verify: true,
    })
    .expect("Azurite client")
}

/// A Blob client of the emulator.
pub fn client() -> AzureClient {
    client_with(KEY)
}

/// Creates `container` once per test binary.
pub async fn create_container(container: &str) -> anyhow::Result<()> {
    static MADE: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());
    if MADE.lock().unwrap().iter().any(|c| c == container) {
        return Ok(());
    }
    match client().create_container(container).await {
        Err(e) if e.code() != Some("ContainerAlreadyExists") => return Err(e.into()),
        _ => {}
    }
    MADE.lock().unwrap().push(container.to_string());
    Ok(())
}

/// A keyPair Profile (as `toJson .Profile` prints it) on `container` of the emulator.
pub fn profile(container: &str, prefix: &str, key: &str) -> Value {
    json!({
        "Location": {"Type": "azure", "Bucket": container, "Endpoint": azurite().endpoint,
                     "Prefix": prefix, "Region": ""},
        "Credential": {"Type": "keyPair", "KeyPair": {"ID": ACCOUNT, "Secret": key}},
        "SkipSSLVerify": true,
    })
}

/// The names of the blobs under `prefix`, sorted.
pub async fn list(container: &str, prefix: &str) -> Vec<String> {
    let mut names = client().list(container, prefix).await.expect("list blobs");
    names.sort();
    names
}

/// Kanister Profile `name` in `ns` of location type azure on `container` of the emulator, with
/// credential type secret: a `secrets.kanister.io/azure` Secret holding the account and `key`.
pub async fn kanister_profile(
    client: &kube::Client,
    ns: &str,
    name: &str,
    container: &str,
    key: &str,
) -> anyhow::Result<()> {
    use super::kanister::{create_profile, create_secret};
    let secret_name = format!("{name}-azure");
    let data = json!({"azure_storage_account_id": ACCOUNT, "azure_storage_key": key});
    create_secret(client, ns, &secret_name, "secrets.kanister.io/azure", data).await?;
    let spec = json!({
        "location": {"type": "azure", "bucket": container, "endpoint": azurite().endpoint},
        "credential": {
            "type": "secret",
            "secret": {"apiVersion": "v1", "kind": "Secret", "name": secret_name, "namespace": ns},
        },
        "skipSSLVerify": true,
    });
    create_profile(client, ns, name, spec).await
}
