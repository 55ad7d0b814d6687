//! The Blob service client: one account, requests authorized with its Shared Key, sent through
//! hyper and rustls, retried with `backon`; List Blobs, Put Blob, Delete Blob (streamed
//! transfers are in [`super::transfer`]).

use std::time::Duration;

use backon::{ExponentialBuilder, Retryable as _};
use bytes::Bytes;
use http::Method;
use http_body_util::Full;

use super::AzureError;
use super::error::ServiceDetail;
use super::sharedkey::{self, ToSign};
use crate::aws::exchange::{
    Answer, Failure, HttpClient, Limits, content_length, http_client, send, store_endpoint,
};
use crate::aws::sigv4::uri_encode;
use crate::aws::xml;

/// The REST API version sent (`x-ms-version`).
pub const API_VERSION: &str = "2021-12-02";
/// Time one exchange may take; the largest error or list body read.
const LIMITS: Limits = Limits {
    timeout: Duration::from_secs(120),
    max_body: 64 << 20,
};
/// Tries of one exchange when the service or the network fails transiently.
const ATTEMPTS: usize = 3;

/// The Blob service's host suffix of each Azure cloud, by the names Azure's SDKs give them
/// (Kanister's `azure_storage_environment`); the first is the default.
pub const CLOUDS: [(&str, &str); 4] = [
    ("AzurePublicCloud", "core.windows.net"),
    ("AzureChinaCloud", "core.chinacloudapi.cn"),
    ("AzureUSGovernmentCloud", "core.usgovcloudapi.net"),
    ("AzureGermanCloud", "core.cloudapi.de"),
];

/// An account and where its Blob service is.
#[derive(Clone)]
pub struct Config {
    /// The storage account name.
    pub account: String,
    /// The account key (base64).
    pub key: String,
    /// The Profile's `location.endpoint` (see [`service_url`]).
    pub endpoint: String,
    /// The Secret's `azure_storage_environment` (empty: Azure's public cloud).
    pub environment: String,
    pub skip_ssl_verify: bool,
}

impl std::fmt::Debug for Config {
    /// Never prints the key.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Config")
            .field("account", &self.account)
            .field("endpoint", &self.endpoint)
            .field("environment", &self.environment)
            .field("skip_ssl_verify", &self.skip_ssl_verify)
            .finish_non_exhaustive()
    }
}

/// The host suffix of the cloud `environment` names (any case; empty: the public cloud).
pub fn cloud_suffix(environment: &str) -> Result<&'static str, String> {
    let env = environment.trim();
    if env.is_empty() {
        return Ok(CLOUDS[0].1);
    }
    CLOUDS
        .iter()
        .find(|(name, _)| name.eq_ignore_ascii_case(env))
        .map(|(_, suffix)| *suffix)
        .ok_or_else(|| {
            format!(
                "azure_storage_environment {env:?} names no Azure cloud; use one of {}",
                CLOUDS.map(|(n, _)| n).join(", ")
            )
        })
}

/// The URL of the account's Blob service, without a trailing `/`:
/// - no `location.endpoint`: `https://<account>.blob.<suffix of the environment's cloud>`, as
///   Kanister (its endpoint is not used for azure);
/// - an endpoint with a scheme: that URL as it is, e.g. `https://<account>.blob.core.windows.net`
///   or an emulator's path-style `http://127.0.0.1:10000/<account>`;
/// - an endpoint without one: a host suffix, `https://<account>.blob.<endpoint>` (Azure Stack,
///   private clouds).
pub fn service_url(account: &str, endpoint: &str, environment: &str) -> Result<String, String> {
    let ep = endpoint.trim().trim_end_matches('/');
    if ep.contains("://") {
        return Ok(ep.to_string());
    }
    let suffix = if ep.is_empty() {
        cloud_suffix(environment)?
    } else {
        ep
    };
    Ok(format!("https://{account}.blob.{suffix}"))
}

/// The host suffix restic's azure backend is given (`AZURE_ENDPOINT_SUFFIX`): restic reaches
/// only `https://<account>.blob.<suffix>/`. `None` for Azure's public cloud, restic's default
/// (the environment Kanister runs restic with); the suffix of the Secret's cloud, or of the
/// Profile's `location.endpoint` as [`service_url`] reads it. An endpoint restic cannot reach
/// (`http://`, path-style, another host) is refused, never silently replaced by Azure's.
pub fn endpoint_suffix(
    account: &str,
    endpoint: &str,
    environment: &str,
) -> Result<Option<String>, String> {
    let url = service_url(account, endpoint, environment)?;
    let want = format!("https://{account}.blob.");
    let suffix = url
        .strip_prefix(&want)
        .filter(|rest| !rest.is_empty() && !rest.contains('/'))
        .ok_or_else(|| {
            format!(
                "restic's azure backend reaches the Blob service only at {want}<suffix>/, not at \
                 {url:?} (the Profile's location.endpoint {endpoint:?}): set location.endpoint to \
                 the host suffix (e.g. core.windows.net, or host:port) or to {want}<suffix>"
            )
        })?;
    Ok((suffix != CLOUDS[0].1).then(|| suffix.to_string()))
}

/// What one request is: the operation's name (for messages), method, container, blob, query
/// parameters (unencoded) and extra headers.
pub(super) struct Exchange<'a> {
    pub op: &'static str,
    pub method: Method,
    pub container: &'a str,
    pub blob: Option<&'a str>,
    pub query: &'a [(&'a str, &'a str)],
    pub headers: &'a [(&'a str, &'a str)],
}

/// A Blob service client for one account.
pub struct AzureClient {
    http: HttpClient,
    /// `scheme://authority`.
    origin: String,
    /// Path of the service URL, without a trailing `/` (path-style emulators: `/<account>`).
    base_path: String,
    account: String,
    key: String,
}

impl AzureClient {
    pub fn new(cfg: &Config) -> Result<Self, AzureError> {
        if cfg.account.trim().is_empty() {
            return Err(AzureError::Config(
                "the storage account name is empty; set it in the Secret the Profile's credential names".into(),
            ));
        }
        let url = service_url(&cfg.account, &cfg.endpoint, &cfg.environment)
            .map_err(AzureError::Config)?;
        let (scheme, authority, base_path) = store_endpoint(
            &url,
            &format!("the Blob service URL {url:?} (from the Profile's location.endpoint)"),
            "https://<account>.blob.core.windows.net",
            &cfg.endpoint,
        )
        .map_err(AzureError::Config)?;
        // The key is checked now, so a bad one fails before anything is read or sent.
        sharedkey::authorization(&cfg.account, &cfg.key, "")
            .map_err(|e| AzureError::Config(e.to_string()))?;
        Ok(AzureClient {
            http: http_client(scheme == "https", cfg.skip_ssl_verify)
                .map_err(AzureError::Config)?,
            origin: format!("{scheme}://{authority}"),
            base_path,
            account: cfg.account.trim().to_string(),
            key: cfg.key.clone(),
        })
    }

    pub fn account(&self) -> &str {
        &self.account
    }

    /// `/<base>/<container>[/<blob>]`, encoded.
    pub(super) fn path(&self, container: &str, blob: Option<&str>) -> String {
        let mut p = format!("{}/{}", self.base_path, uri_encode(container, false));
        if let Some(b) = blob {
            p.push('/');
            p.push_str(&uri_encode(b, true));
        }
        p
    }

    /// The URL of a container or blob, for messages.
    pub fn url(&self, container: &str, blob: Option<&str>) -> String {
        format!("{}{}", self.origin, self.path(container, blob))
    }

    /// One exchange, retried on connection errors and 5xx (three attempts, backing off 200 ms
    /// then 800 ms). A 2xx answer is read whole, or with `stream` returned unread (the timeout
    /// then covers only the wait for its headers).
    pub(super) async fn exchange(
        &self,
        req: &Exchange<'_>,
        body: Bytes,
        stream: bool,
    ) -> Result<Answer, AzureError> {
        (|| self.attempt(req, &body, stream))
            .retry(
                ExponentialBuilder::default()
                    .with_min_delay(Duration::from_millis(200))
                    .with_factor(4.0)
                    .with_max_times(ATTEMPTS - 1),
            )
            .sleep(tokio::time::sleep)
            .when(AzureError::is_transient)
            .await
    }

    async fn attempt(
        &self,
        req: &Exchange<'_>,
        body: &Bytes,
        stream: bool,
    ) -> Result<Answer, AzureError> {
        let op = req.op;
        let path = self.path(req.container, req.blob);
        let query: Vec<String> = req
            .query
            .iter()
            .map(|(k, v)| format!("{}={}", uri_encode(k, false), uri_encode(v, false)))
            .collect();
        let url = if query.is_empty() {
            format!("{}{path}", self.origin)
        } else {
            format!("{}{path}?{}", self.origin, query.join("&"))
        };
        let date = chrono::Utc::now()
            .format("%a, %d %b %Y %H:%M:%S GMT")
            .to_string();
        let length = content_length(&req.method, body.len()).map(|n| n.to_string());
        let mut headers: Vec<(&str, &str)> =
            vec![("x-ms-date", &date), ("x-ms-version", API_VERSION)];
        if let Some(n) = &length {
            headers.push(("content-length", n));
        }
        headers.extend(req.headers.iter().copied());
        let auth = sharedkey::authorization(
            &self.account,
            &self.key,
            &sharedkey::string_to_sign(&ToSign {
                method: req.method.as_str(),
                headers: &headers,
                account: &self.account,
                path: &path,
                query: req.query,
            }),
        )
        .map_err(|e| AzureError::Config(e.to_string()))?;
        let mut rb = http::Request::builder()
            .method(req.method.clone())
            .uri(&url)
            .header("authorization", auth)
            .header(
                "user-agent",
                concat!("blueprint-operator/", env!("CARGO_PKG_VERSION")),
            );
        for (k, v) in &headers {
            rb = rb.header(*k, *v);
        }
        let request = rb.body(Full::new(body.clone())).map_err(|e| {
            AzureError::Config(format!("{op}: cannot build the request for {url}: {e}"))
        })?;
        let transport = |message: String| AzureError::Transport {
            op,
            url: url.clone(),
            message,
        };
        let answer = send(&self.http, request, LIMITS, stream)
            .await
            .map_err(|f| match f {
                Failure::Connect(msg) if !msg.contains("skipSSLVerify") => transport(format!(
                    "{msg} (cannot connect to {}: check the Profile's location.endpoint and that the Blob service is reachable from here)",
                    self.origin
                )),
                Failure::Connect(msg) | Failure::Transport(msg) => transport(msg),
                Failure::Sign(msg) | Failure::Build(msg) => AzureError::Config(msg),
            })?;
        let (status, headers, body) = match answer {
            Answer::Whole {
                status,
                headers,
                body,
            } if !status.is_success() => (status, headers, body),
            ok => return Ok(ok),
        };
        let text = String::from_utf8_lossy(&body);
        let decoded = xml::parse_error(status, &text);
        // Azure names the error in a header too (the only place a HEAD answer has it).
        let code = headers
            .get("x-ms-error-code")
            .and_then(|v| v.to_str().ok())
            .filter(|c| !c.is_empty())
            .map(str::to_string)
            .unwrap_or(decoded.code);
        Err(AzureError::Service {
            op,
            status,
            detail: Box::new(ServiceDetail {
                url,
                code,
                message: decoded.message.lines().next().unwrap_or("").to_string(),
                container: req.container.to_string(),
                account: self.account.clone(),
            }),
        })
    }

    /// An exchange read whole.
    pub(super) async fn send(
        &self,
        req: &Exchange<'_>,
        body: Bytes,
    ) -> Result<(http::HeaderMap, Bytes), AzureError> {
        match self.exchange(req, body, false).await? {
            Answer::Whole { headers, body, .. } => Ok((headers, body)),
            Answer::Open(_) => unreachable!("not asked to stream"),
        }
    }

    /// Put Blob: `data` as a block blob, in one request.
    pub async fn put_blob(
        &self,
        container: &str,
        blob: &str,
        data: Bytes,
    ) -> Result<(), AzureError> {
        let headers = [("x-ms-blob-type", "BlockBlob")];
        self.put("PutBlob", (container, blob), &[], &headers, data)
            .await
    }

    /// A PUT of `body` to a blob: Put Blob, Put Block, Put Block List.
    pub(super) async fn put(
        &self,
        op: &'static str,
        (container, blob): (&str, &str),
        query: &[(&str, &str)],
        headers: &[(&str, &str)],
        body: Bytes,
    ) -> Result<(), AzureError> {
        let req = Exchange {
            op,
            method: Method::PUT,
            container,
            blob: Some(blob),
            query,
            headers,
        };
        self.send(&req, body).await.map(|_| ())
    }

    /// Create Container (private).
    pub async fn create_container(&self, container: &str) -> Result<(), AzureError> {
        let req = Exchange {
            op: "CreateContainer",
            method: Method::PUT,
            container,
            blob: None,
            query: &[("restype", "container")],
            headers: &[],
        };
        self.send(&req, Bytes::new()).await.map(|_| ())
    }

    /// Delete Blob, with its snapshots.
    pub async fn delete_blob(&self, container: &str, blob: &str) -> Result<(), AzureError> {
        let req = Exchange {
            op: "DeleteBlob",
            method: Method::DELETE,
            container,
            blob: Some(blob),
            query: &[],
            headers: &[("x-ms-delete-snapshots", "include")],
        };
        self.send(&req, Bytes::new()).await.map(|_| ())
    }

    /// The names of every blob starting with `prefix` (List Blobs, page after page).
    pub async fn list(&self, container: &str, prefix: &str) -> Result<Vec<String>, AzureError> {
        let mut names = Vec::new();
        let mut marker = String::new();
        loop {
            let mut query = vec![("restype", "container"), ("comp", "list")];
            if !prefix.is_empty() {
                query.push(("prefix", prefix));
            }
            if !marker.is_empty() {
                query.push(("marker", &marker));
            }
            let req = Exchange {
                op: "ListBlobs",
                method: Method::GET,
                container,
                blob: None,
                query: &query,
                headers: &[],
            };
            let (_, body) = self.send(&req, Bytes::new()).await?;
            let page = parse_list_page(&String::from_utf8_lossy(&body)).map_err(|message| {
                AzureError::Response {
                    op: "ListBlobs",
                    url: self.url(container, None),
                    message,
                }
            })?;
            names.extend(page.0);
            match page.1 {
                Some(next) if next != marker => marker = next,
                _ => return Ok(names),
            }
        }
    }
}

/// The blob names and the next marker of an `EnumerationResults` document.
pub fn parse_list_page(doc: &str) -> Result<(Vec<String>, Option<String>), String> {
    let root = xml::parse(doc)
        .ok()
        .filter(|e| e.name == "EnumerationResults")
        .ok_or_else(|| {
            format!(
                "expected an EnumerationResults document, got: {}",
                xml::snippet(doc)
            )
        })?;
    let names = root
        .child("Blobs")
        .map(|b| {
            b.children("Blob")
                .filter_map(|blob| blob.child("Name").map(|n| n.text.clone()))
                .collect()
        })
        .unwrap_or_default();
    let next = root.child_text("NextMarker").filter(|m| !m.is_empty());
    Ok((names, next))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn where_the_blob_service_is() {
        for (endpoint, env, url) in [
            ("", "", "https://acct.blob.core.windows.net"),
            (
                "",
                "azurechinacloud",
                "https://acct.blob.core.chinacloudapi.cn",
            ),
            (
                "",
                "AzureUSGovernmentCloud",
                "https://acct.blob.core.usgovcloudapi.net",
            ),
            (
                "http://127.0.0.1:10000/acct/",
                "",
                "http://127.0.0.1:10000/acct",
            ),
            (
                "azurestack.example",
                "Mars",
                "https://acct.blob.azurestack.example",
            ),
        ] {
            assert_eq!(service_url("acct", endpoint, env).unwrap(), url);
        }
        let mars = service_url("acct", "", "Mars").unwrap_err();
        assert!(mars.contains("names no Azure cloud"));
    }

    #[test]
    fn restics_endpoint_suffix() {
        let s = |e: &str, env: &str| endpoint_suffix("acct", e, env);
        for (endpoint, env, suffix) in [
            ("", "", None),
            ("", "AzurePublicCloud", None),
            ("", "AzureChinaCloud", Some("core.chinacloudapi.cn")),
            ("localhost:10000", "", Some("localhost:10000")),
            (
                "https://acct.blob.azurestack.example:443/",
                "",
                Some("azurestack.example:443"),
            ),
            ("https://acct.blob.core.windows.net", "", None),
        ] {
            assert_eq!(
                s(endpoint, env).unwrap().as_deref(),
                suffix,
                "{endpoint} {env}"
            );
        }
        let e = s("http://127.0.0.1:10000/acct", "").unwrap_err();
        assert!(e.contains("only at https://acct.blob.<suffix>/"), "{e}");
        assert!(s("https://other.blob.core.windows.net", "").is_err());
        assert!(s("", "Mars").unwrap_err().contains("names no Azure cloud"));
    }

    #[test]
    fn list_pages() {
        let doc = r#"<?xml version="1.0" encoding="utf-8"?><EnumerationResults ServiceEndpoint="http://h/a" ContainerName="c"><Prefix>p/</Prefix><Blobs><Blob><Name>p/a &amp; b</Name><Properties/></Blob><Blob><Name>p/c</Name></Blob></Blobs><NextMarker>m2</NextMarker></EnumerationResults>"#;
        let (names, next) = parse_list_page(doc).unwrap();
        assert_eq!(names, ["p/a & b", "p/c"]);
        assert_eq!(next.as_deref(), Some("m2"));
        let last = r#"<EnumerationResults><Blobs/><NextMarker/></EnumerationResults>"#;
        assert_eq!(parse_list_page(last).unwrap(), (vec![], None));
        assert!(
            parse_list_page("<Error/>")
                .unwrap_err()
                .contains("EnumerationResults")
        );
    }

    #[test]
    fn bad_configs_are_refused_before_any_request() {
        let cfg = |account: &str, key: &str, endpoint: &str| Config {
            account: account.into(),
            key: key.into(),
            endpoint: endpoint.into(),
            environment: String::new(),
            skip_ssl_verify: false,
        };
        let err = |c: Config| AzureClient::new(&c).err().unwrap().to_string();
        assert!(err(cfg("", "a2V5", "")).contains("account name is empty"));
        assert!(err(cfg("a", "%%", "")).contains("not base64"));
        assert!(err(cfg("a", "a2V5", "ftp://x")).contains("only http and https"));
        let c = AzureClient::new(&cfg("a", "a2V5", "http://127.0.0.1:1/a")).unwrap();
        assert_eq!(c.url("c", Some("d/e f")), "http://127.0.0.1:1/a/c/d/e%20f");
        // The key never shows in Debug.
        assert!(!format!("{:?}", cfg("a", "a2V5", "")).contains("a2V5"));
    }
}
