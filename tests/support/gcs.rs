//! Google Cloud Storage for the tests of gcs Profiles: fake-gcs-server (tools/data-plane/gcs),
//! started once per test binary on [`super::server::host`], and a token endpoint beside it that
//! checks what Google's checks: the service account's JWT (RS256, verified with the test key's
//! public half, and naming the endpoint as its audience) before it hands out a token. The
//! Profiles' service-account key is the test key of `src/gcs/testdata` with this endpoint as its
//! `token_uri`, so our client and restic's gs backend (Google's Go client) both go through the
//! whole OAuth2 flow. fake-gcs-server itself checks no token.

use std::net::TcpStream;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use anyhow::Context as _;
use base64::Engine as _;
use serde_json::{Value, json};

/// The Google project id of the test Profiles.
pub const PROJECT: &str = "bpo-test-project";
/// The service account the test key belongs to.
pub const ACCOUNT: &str = "bpo-test@bpo-test-project.iam.gserviceaccount.com";

/// The running emulator and token endpoint.
#[derive(Debug)]
pub struct Gcs {
    /// `http://HOST:PORT` of fake-gcs-server (JSON API under `/storage/v1`).
    pub endpoint: String,
    /// `http://HOST:PORT/token`.
    pub token_uri: String,
    /// Tokens handed out and JWTs refused so far.
    pub tokens: Arc<AtomicUsize>,
    pub refused: Arc<AtomicUsize>,
}

/// The emulator of this test binary; the first call starts it.
pub fn server() -> &'static Gcs {
    static GCS: OnceLock<Gcs> = OnceLock::new();
    GCS.get_or_init(|| start().unwrap_or_else(|e| panic!("fake-gcs-server did not start: {e:#}")))
}

fn start() -> anyhow::Result<Gcs> {
    let bin = super::server::built_tool("tools/data-plane/build.sh", "fake-gcs-server")?;
    let host = super::server::host();
    let port = super::server::free_port(&host)?.to_string();
    let addr = format!("{host}:{port}");
    let url = format!("http://{addr}");
    let args = [
        "-scheme",
        "http",
        "-host",
        &host,
        "-port",
        &port,
        "-backend",
        "memory",
        "-external-url",
        &url,
        "-public-host",
        &addr,
        "-log-level",
        "warn",
    ];
    let server = super::server::spawn_watched("fake-gcs-server", &bin, &args, &addr)?;
    server.wait_ready(Duration::from_secs(30), Duration::from_millis(100), || {
        TcpStream::connect(&addr).is_ok()
    })?;
    let (token_uri, tokens, refused) = token_endpoint(&host)?;
    Ok(Gcs {
        endpoint: url,
        token_uri,
        tokens,
        refused,
    })
}

/// The token endpoint, served from a thread of its own (tests use runtimes of their own).
fn token_endpoint(host: &str) -> anyhow::Result<(String, Arc<AtomicUsize>, Arc<AtomicUsize>)> {
    let listener = std::net::TcpListener::bind((host, 0))?;
    listener.set_nonblocking(true)?;
    let uri = format!("http://{}/token", listener.local_addr()?);
    let tokens = Arc::new(AtomicUsize::new(0));
    let refused = Arc::new(AtomicUsize::new(0));
    let (t, r, aud) = (tokens.clone(), refused.clone(), uri.clone());
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        rt.block_on(async move {
            let listener = tokio::net::TcpListener::from_std(listener).expect("listener");
            let app = axum::Router::new().route(
                "/token",
                axum::routing::post(move |body: String| {
                    let answer = check_token_request(&body, &aud);
                    let counter = if answer.is_ok() { &t } else { &r };
                    counter.fetch_add(1, Ordering::Relaxed);
                    async move {
                        match answer {
                            Ok(()) => (
                                axum::http::StatusCode::OK,
                                json!({"access_token": "bpo-test-token", "token_type": "Bearer",
                                       "expires_in": 3600})
                                .to_string(),
                            ),
                            Err(why) => (
                                axum::http::StatusCode::BAD_REQUEST,
                                json!({"error": "invalid_grant", "error_description": why})
                                    .to_string(),
                            ),
                        }
                    }
                }),
            );
            let _ = axum::serve(listener, app).await;
        });
    });
    Ok((uri, tokens, refused))
}

/// Google's checks of a JWT bearer grant: the grant type, an RS256 signature by the account's
/// key, the account as issuer, the endpoint as audience, a lifetime of at most an hour.
fn check_token_request(form: &str, audience: &str) -> Result<(), String> {
    let field = |k: &str| {
        form.split('&')
            .find_map(|kv| kv.strip_prefix(&format!("{k}=")))
            .map(|v| v.replace("%3A", ":").replace("%3a", ":"))
    };
    if field("grant_type").as_deref() != Some("urn:ietf:params:oauth:grant-type:jwt-bearer") {
        return Err(format!("Invalid grant_type in {form:?}"));
    }
    let jwt = field("assertion").ok_or("no assertion")?;
    let parts: Vec<&str> = jwt.split('.').collect();
    let [header, claims, sig] = parts[..] else {
        return Err("Invalid JWT: not three parts".into());
    };
    let dec = |s: &str| base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(s);
    let public = ring::signature::UnparsedPublicKey::new(
        &ring::signature::RSA_PKCS1_2048_8192_SHA256,
        include_bytes!("../../src/gcs/testdata/test-key.pub.der").as_slice(),
    );
    let sig = dec(sig).map_err(|e| e.to_string())?;
    public
        .verify(format!("{header}.{claims}").as_bytes(), &sig)
        .map_err(|_| "Invalid JWT Signature.".to_string())?;
    let claims: Value = serde_json::from_slice(&dec(claims).map_err(|e| e.to_string())?)
        .map_err(|e| e.to_string())?;
    let lifetime = claims["exp"].as_u64().unwrap_or(0) - claims["iat"].as_u64().unwrap_or(0);
    if claims["iss"] != ACCOUNT || claims["aud"] != audience || lifetime > 3600 {
        return Err(format!("Invalid JWT claims: {claims}"));
    }
    Ok(())
}

/// The service-account JSON key of the test account, its tokens from [`server`]'s endpoint.
pub fn key_json() -> String {
    key_json_with(include_str!("../../src/gcs/testdata/test-key.pem"))
}

/// [`key_json`] with another private key (PEM), which the token endpoint refuses.
pub fn key_json_with(private_key: &str) -> String {
    json!({
        "type": "service_account", "project_id": PROJECT, "private_key_id": "bpo-test",
        "private_key": private_key, "client_email": ACCOUNT,
        "client_id": "1", "token_uri": server().token_uri,
    })
    .to_string()
}

/// Creates `bucket` in the emulator, once per test binary.
pub fn create_bucket(bucket: &str) -> anyhow::Result<()> {
    static MADE: Mutex<Vec<String>> = Mutex::new(Vec::new());
    let mut made = MADE.lock().unwrap_or_else(|e| e.into_inner());
    if made.iter().any(|b| b == bucket) {
        return Ok(());
    }
    let gcs = server();
    let addr = gcs.endpoint.trim_start_matches("http://");
    let body = json!({ "name": bucket }).to_string();
    let request = format!(
        "POST /storage/v1/b?project={PROJECT} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    let answer = super::http::exchange(addr, &request, Duration::from_secs(30))
        .with_context(|| format!("creating bucket {bucket}"))?;
    let status = super::http::status(&answer);
    anyhow::ensure!(
        status == 200 || status == 409,
        "creating bucket {bucket}: {answer}"
    );
    made.push(bucket.to_string());
    Ok(())
}

/// The `.Profile` parameter of a gcs Profile on the emulator (this executor's `toJson`
/// spelling), credential keyPair: project id and service-account key.
pub fn profile(bucket: &str, prefix: &str) -> Value {
    create_bucket(bucket).expect("create bucket");
    json!({
        "Location": {"Type": "gcs", "Bucket": bucket, "Endpoint": server().endpoint,
                     "Prefix": prefix, "Region": ""},
        "Credential": {"Type": "keyPair", "KeyPair": {"ID": PROJECT, "Secret": key_json()}},
        "SkipSSLVerify": false,
    })
}

/// A client of the emulator, as kando makes it for [`profile`].
pub fn client(bucket: &str) -> blueprint_operator::gcs::GcsClient {
    let params = json!({ "Profile": profile(bucket, "") });
    let p = blueprint_operator::param::profile::Profile::from_params(&params).expect("profile");
    let g = blueprint_operator::gcs::from_profile(&p).expect("gcs profile");
    blueprint_operator::gcs::GcsClient::new(&g, None).expect("client")
}

/// In `ns`, the Secret `<name>-creds` (type `secrets.kanister.io/gcp`, Kanister's keys) and a
/// Kanister Profile `name` of location type gcs on the emulator, bucket `bucket`, credential
/// keyPair naming the Secret's fields (Kanister's GKE Profiles).
pub async fn kanister_profile(
    client: &kube::Client,
    ns: &str,
    name: &str,
    bucket: &str,
) -> anyhow::Result<()> {
    use super::kanister::{create_profile, create_secret, key_pair_credential};
    create_bucket(bucket)?;
    let secret_name = format!("{name}-creds");
    let data = json!({"gcp_project_id": PROJECT, "service-account.json": key_json()});
    create_secret(client, ns, &secret_name, "secrets.kanister.io/gcp", data).await?;
    let spec = json!({
        "location": {"type": "gcs", "bucket": bucket, "endpoint": server().endpoint},
        "credential": key_pair_credential("gcp_project_id", "service-account.json", &secret_name, ns),
        "skipSSLVerify": false,
    });
    create_profile(client, ns, name, spec).await
}

/// Object names under `prefix` in `bucket`, sorted (on a thread of its own, so sync and async
/// tests can call it).
pub fn list(bucket: &str, prefix: &str) -> Vec<String> {
    let (bucket, prefix) = (bucket.to_string(), prefix.to_string());
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        let mut names = rt
            .block_on(client(&bucket).list_all(&bucket, &prefix))
            .expect("list");
        names.sort();
        names
    })
    .join()
    .expect("list thread")
}
