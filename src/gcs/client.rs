//! A small client of Google Cloud Storage's JSON API for kando's streams and LocationDelete:
//! list (paginated), delete, download (`alt=media`, streamed); uploads are [`super::upload`]'s.
//! HTTP/1.1 through hyper and rustls as the S3 client ([`crate::aws::exchange::http_client`]);
//! every request carries a bearer token of the Profile's service account ([`super::auth`]),
//! fetched once and renewed before it expires. Requests that can be repeated (all but the
//! chunks of a resumable upload) are tried up to three times on 5xx or connection failures.

use std::time::{Duration, Instant, SystemTime};

use bytes::Bytes;
use http::{HeaderMap, Method, StatusCode};
use http_body_util::Full;

use super::auth::{self, Token};
use super::error::{error_message, hint};
use super::{GcsError, GcsProfile, ServiceKey};
use crate::aws::download::Download;
use crate::aws::exchange::{Answer, HttpClient, Limits, http_client, send};
use crate::aws::sigv4::uri_encode;
use crate::objectstore::keys_under;

pub use super::upload::CHUNK;

/// Time one exchange may take; largest whole answer read.
const LIMITS: Limits = Limits {
    timeout: Duration::from_secs(120),
    max_body: 16 << 20,
};
const ATTEMPTS: u32 = 3;
/// A token is renewed this long before it expires.
const TOKEN_MARGIN: Duration = Duration::from_secs(300);

/// One request: what it is for messages, and what is sent.
pub(super) struct Req<'a> {
    pub op: &'static str,
    pub method: Method,
    pub url: String,
    pub headers: Vec<(&'static str, String)>,
    pub body: Bytes,
    pub bucket: &'a str,
}

impl<'a> Req<'a> {
    /// A request without headers or body.
    pub fn new(op: &'static str, method: Method, url: String, bucket: &'a str) -> Self {
        Req {
            op,
            method,
            url,
            headers: vec![],
            body: Bytes::new(),
            bucket,
        }
    }
}

/// A GCS client for one Profile.
pub struct GcsClient {
    http: HttpClient,
    base: String,
    key: ServiceKey,
    token: tokio::sync::Mutex<Option<(Token, Instant)>>,
}

impl GcsClient {
    /// For `profile`, given the process's `STORAGE_EMULATOR_HOST` (see [`super`]).
    pub fn new(profile: &GcsProfile, emulator_host: Option<&str>) -> Result<Self, GcsError> {
        let base = profile.base_url(emulator_host);
        let mut https = false;
        for (what, url) in [
            ("the gcs Profile's endpoint", base.as_str()),
            (
                "the service-account key's token_uri",
                &profile.key.token_uri,
            ),
        ] {
            let uri: http::Uri = url
                .parse()
                .map_err(|e| GcsError::Config(format!("{what} {url:?} is not a URL ({e})")))?;
            match uri.scheme_str() {
                Some("https") => https = true,
                Some("http") => {}
                _ => {
                    return Err(GcsError::Config(format!(
                        "{what} {url:?} must be an http:// or https:// URL"
                    )));
                }
            }
            if uri.host().is_none_or(str::is_empty) {
                return Err(GcsError::Config(format!("{what} {url:?} names no host")));
            }
        }
        let http = http_client(https, profile.skip_ssl_verify).map_err(GcsError::Config)?;
        Ok(GcsClient {
            http,
            base,
            key: profile.key.clone(),
            token: tokio::sync::Mutex::new(None),
        })
    }

    /// The JSON API base URL requests go to.
    pub fn base_url(&self) -> &str {
        &self.base
    }

    fn object_url(&self, bucket: &str, key: &str) -> String {
        format!(
            "{}/storage/v1/b/{}/o/{}",
            self.base,
            uri_encode(bucket, false),
            uri_encode(key, false)
        )
    }

    /// A valid bearer token, fetched when there is none or it is about to expire.
    async fn bearer(&self) -> Result<String, GcsError> {
        let mut cached = self.token.lock().await;
        if let Some((t, until)) = cached.as_ref()
            && Instant::now() < *until
        {
            return Ok(t.access_token.clone());
        }
        let failed = |message: String, refused: bool| GcsError::Token {
            email: self.key.client_email.clone(),
            url: self.key.token_uri.clone(),
            message,
            refused,
        };
        let fail = |message: String| failed(message, true);
        let now = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or_default();
        let jwt = auth::assertion(&self.key, now).map_err(fail)?;
        let body = Bytes::from(auth::token_request_body(&jwt));
        let mut last = String::new();
        for _ in 0..ATTEMPTS {
            let request = http::Request::post(&self.key.token_uri)
                .header("content-type", "application/x-www-form-urlencoded")
                .header("content-length", body.len())
                .body(Full::new(body.clone()))
                .map_err(|e| fail(e.to_string()))?;
            match send(&self.http, request, LIMITS, false).await {
                Ok(Answer::Whole {
                    status, body: b, ..
                }) => {
                    if status.is_server_error() {
                        last = format!("{} {}", status.as_u16(), error_message(&b));
                        continue;
                    }
                    let token = auth::parse_token_answer(status.is_success(), &b)
                        .map_err(|m| fail(format!("{} {m}", status.as_u16())))?;
                    let life = Duration::from_secs(token.expires_in).saturating_sub(TOKEN_MARGIN);
                    let value = token.access_token.clone();
                    *cached = Some((token, Instant::now() + life));
                    return Ok(value);
                }
                Ok(Answer::Open(_)) => unreachable!("not asked to stream"),
                Err(f) => last = f.message(),
            }
        }
        Err(failed(last, false))
    }

    /// One authorized exchange, tried again on transient failures when `retry`.
    pub(super) async fn send(
        &self,
        req: Req<'_>,
        stream: bool,
        retry: bool,
    ) -> Result<Answer, GcsError> {
        let attempts = if retry { ATTEMPTS } else { 1 };
        let mut n = 0;
        loop {
            n += 1;
            match self.send_once(&req, stream).await {
                Err(e) if n < attempts && e.is_transient() => {
                    tokio::time::sleep(Duration::from_millis(200 << n)).await;
                }
                r => return r,
            }
        }
    }

    async fn send_once(&self, req: &Req<'_>, stream: bool) -> Result<Answer, GcsError> {
        let token = self.bearer().await?;
        let mut rb = http::Request::builder()
            .method(req.method.clone())
            .uri(&req.url)
            .header("authorization", format!("Bearer {token}"))
            .header(
                "user-agent",
                concat!("blueprint-operator/", env!("CARGO_PKG_VERSION")),
            );
        for (k, v) in &req.headers {
            rb = rb.header(*k, v);
        }
        if let Some(len) = crate::aws::exchange::content_length(&req.method, req.body.len()) {
            rb = rb.header(http::header::CONTENT_LENGTH, len);
        }
        let request = rb
            .body(Full::new(req.body.clone()))
            .map_err(|e| GcsError::Config(format!("{} {}: {e}", req.op, req.url)))?;
        let answer = send(&self.http, request, LIMITS, stream)
            .await
            .map_err(|f| GcsError::Transport {
                op: req.op,
                url: req.url.clone(),
                message: f.message(),
            })?;
        match answer {
            // A resumable upload's chunk is answered 308 with more to send.
            Answer::Whole { status, body, .. }
                if !status.is_success() && status != StatusCode::PERMANENT_REDIRECT =>
            {
                Err(GcsError::Service {
                    op: req.op,
                    url: req.url.clone(),
                    status,
                    message: error_message(&body),
                    hint: hint(status, req.op, req.bucket, &self.key.client_email),
                })
            }
            ok => Ok(ok),
        }
    }

    pub(super) async fn whole(
        &self,
        req: Req<'_>,
        retry: bool,
    ) -> Result<(HeaderMap, Bytes), GcsError> {
        match self.send(req, false, retry).await? {
            Answer::Whole { headers, body, .. } => Ok((headers, body)),
            Answer::Open(_) => unreachable!("not asked to stream"),
        }
    }

    /// Every object name under `prefix` (a raw prefix, as the API matches it).
    pub async fn list_all(&self, bucket: &str, prefix: &str) -> Result<Vec<String>, GcsError> {
        let mut names = Vec::new();
        let mut page = String::new();
        loop {
            let mut url = format!(
                "{}/storage/v1/b/{}/o?prefix={}",
                self.base,
                uri_encode(bucket, false),
                uri_encode(prefix, false)
            );
            if !page.is_empty() {
                url.push_str(&format!("&pageToken={}", uri_encode(&page, false)));
            }
            let (_, body) = self
                .whole(
                    Req::new("ListObjects", Method::GET, url.clone(), bucket),
                    true,
                )
                .await?;
            let v: serde_json::Value =
                serde_json::from_slice(&body).map_err(|e| GcsError::Response {
                    op: "ListObjects",
                    url,
                    message: e.to_string(),
                })?;
            names.extend(
                v["items"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|i| i["name"].as_str().map(str::to_string)),
            );
            match v["nextPageToken"].as_str() {
                Some(t) if !t.is_empty() => page = t.to_string(),
                _ => return Ok(names),
            }
        }
    }

    /// Deletes one object; one that is already gone counts as deleted.
    pub async fn delete_object(&self, bucket: &str, key: &str) -> Result<(), GcsError> {
        let url = self.object_url(bucket, key);
        let r = self
            .whole(Req::new("DeleteObject", Method::DELETE, url, bucket), true)
            .await;
        match r {
            Err(e) if e.is_not_found() => {
                // The bucket itself missing is not "already gone".
                self.list_page_exists(bucket).await?;
                Ok(())
            }
            r => r.map(|_| ()),
        }
    }

    /// Fails naming the bucket when it does not exist.
    async fn list_page_exists(&self, bucket: &str) -> Result<(), GcsError> {
        let url = format!(
            "{}/storage/v1/b/{}/o?maxResults=1",
            self.base,
            uri_encode(bucket, false)
        );
        let req = Req::new("ListObjects", Method::GET, url, bucket);
        self.whole(req, true).await.map(|_| ())
    }

    /// Deletes `path` and every object below it (`path/...`, never `path-other`); returns how
    /// many objects went.
    pub async fn delete_path(&self, bucket: &str, path: &str) -> Result<usize, GcsError> {
        let keys = keys_under(self.list_all(bucket, path).await?, path);
        for k in &keys {
            self.delete_object(bucket, k).await?;
        }
        Ok(keys.len())
    }

    /// The object's body, left to read.
    pub async fn get_object(&self, bucket: &str, key: &str) -> Result<Download, GcsError> {
        let url = format!("{}?alt=media", self.object_url(bucket, key));
        let req = Req::new("GetObject", Method::GET, url.clone(), bucket);
        match self.send(req, true, true).await? {
            Answer::Open(resp) => {
                let transcoded = resp.headers().contains_key(http::header::CONTENT_ENCODING);
                let mut download = Download::new("GetObject", url, resp);
                if transcoded {
                    // A gzip-stored object's length is not what arrives.
                    download.len = None;
                }
                Ok(download)
            }
            Answer::Whole { .. } => Err(GcsError::Response {
                op: "GetObject",
                url,
                message: "a 308 answer to a download".into(),
            }),
        }
    }
}

/// Fails when the token endpoint refuses `profile`'s key (an answer, not a connection failure:
/// where restic runs may reach the endpoint when this process cannot). restic's gs backend
/// retries a refused token for many minutes; this names the key at once.
pub async fn check_key(profile: &GcsProfile) -> Result<(), GcsError> {
    match GcsClient::new(profile, None)?.bearer().await {
        Err(e @ GcsError::Token { refused: true, .. }) => Err(e),
        Err(e) => {
            tracing::debug!(error = %e, "gcs: the key could not be checked here");
            Ok(())
        }
        Ok(_) => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_are_checked() {
        let key =
            ServiceKey::parse(&super::super::test_key_json("http://127.0.0.1:9/token")).unwrap();
        let profile = |endpoint: &str| GcsProfile {
            bucket: "b".into(),
            prefix: String::new(),
            project_id: "p".into(),
            key: key.clone(),
            endpoint: endpoint.into(),
            skip_ssl_verify: false,
        };
        let c = GcsClient::new(&profile("http://127.0.0.1:4443"), None).unwrap();
        assert_eq!(
            c.object_url("b", "a/b c"),
            "http://127.0.0.1:4443/storage/v1/b/b/o/a%2Fb%20c"
        );
        let e = GcsClient::new(&profile("ftp://x"), None)
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("must be an http:// or https:// URL"), "{e}");
        let e = GcsClient::new(&profile("http://exa mple"), None)
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("the gcs Profile's endpoint"), "{e}");
    }
}
