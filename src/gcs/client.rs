//! A small client of Google Cloud Storage's JSON API for kando's streams and LocationDelete:
//! list (paginated), delete, download (`alt=media`, streamed) and upload (one `uploadType=media`
//! request below [`CHUNK`], else a resumable upload in [`CHUNK`]s, so memory stays bounded).
//! HTTP/1.1 through hyper and rustls as the S3 client ([`crate::aws::exchange::http_client`]);
//! every request carries a bearer token of the Profile's service account ([`super::auth`]),
//! fetched once and renewed before it expires. Requests that can be repeated (all but the
//! chunks of a resumable upload) are tried up to three times on 5xx or connection failures.

use std::future::Future;
use std::time::{Duration, Instant, SystemTime};

use bytes::Bytes;
use http::{HeaderMap, Method, StatusCode};
use http_body_util::{BodyExt, Full, Limited};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt as _};

use super::auth::{self, Token};
use super::{GcsProfile, ServiceKey};
use crate::aws::exchange::{HttpClient, http_client};
use crate::aws::s3::transfer::read_part;
use crate::aws::sigv4::uri_encode;
use crate::objectstore::is_under;

/// Upload chunk size: a multiple of 256 KiB, as resumable uploads require.
pub const CHUNK: usize = 8 << 20;
/// Time one exchange may take; largest whole answer read.
const TIMEOUT: Duration = Duration::from_secs(120);
const MAX_BODY: usize = 16 << 20;
/// A download that sends nothing for this long has failed.
const IDLE_TIMEOUT: Duration = Duration::from_secs(120);
const ATTEMPTS: u32 = 3;
/// A token is renewed this long before it expires.
const TOKEN_MARGIN: Duration = Duration::from_secs(300);

/// What went wrong talking to GCS, worded with what to check in the Profile.
#[derive(Debug, thiserror::Error)]
pub enum GcsError {
    #[error("{0}")]
    Config(String),
    #[error(
        "getting an OAuth2 token for {email} from {url}: {message} (check the Profile's \
         service-account key: is it current, and is {url} reachable?)"
    )]
    Token {
        email: String,
        url: String,
        message: String,
        /// The endpoint answered and refused the key (4xx), rather than not answering.
        refused: bool,
    },
    #[error("{op} on {url}: {message}")]
    Transport {
        op: &'static str,
        url: String,
        message: String,
    },
    #[error("{op} on {url}: {status} {message}{hint}", status = status.as_u16())]
    Service {
        op: &'static str,
        url: String,
        status: StatusCode,
        message: String,
        hint: String,
    },
    #[error("{op} on {url}: unexpected response: {message}")]
    Response {
        op: &'static str,
        url: String,
        message: String,
    },
    #[error("reading the data to upload: {0}")]
    Source(std::io::Error),
    #[error("writing the downloaded data: {0}")]
    Sink(std::io::Error),
    #[error("interrupted ({0})")]
    Interrupted(String),
}

impl GcsError {
    fn is_transient(&self) -> bool {
        match self {
            GcsError::Transport { .. } => true,
            GcsError::Service { status, .. } => status.is_server_error(),
            _ => false,
        }
    }

    /// The store answered 404.
    pub fn is_not_found(&self) -> bool {
        matches!(self, GcsError::Service { status, .. } if *status == StatusCode::NOT_FOUND)
    }
}

/// The message of a JSON API error answer (`{"error":{"code":..,"message":..}}`), or its text.
pub fn error_message(body: &[u8]) -> String {
    serde_json::from_slice::<serde_json::Value>(body)
        .ok()
        .and_then(|v| v["error"]["message"].as_str().map(str::to_string))
        .unwrap_or_else(|| {
            String::from_utf8_lossy(body)
                .trim()
                .chars()
                .take(300)
                .collect()
        })
}

/// What to check, for an error answer to `op` on `bucket`.
pub fn hint(status: StatusCode, op: &str, bucket: &str, email: &str) -> String {
    match status.as_u16() {
        404 if op == "GetObject" => String::new(),
        404 => format!(" (does bucket '{bucket}' exist? check the Profile's location.bucket)"),
        401 => " (the token was refused: check the Profile's service-account key)".into(),
        403 => format!(
            " (the service account {email} may not use bucket '{bucket}': grant it \
             roles/storage.objectAdmin on the bucket, or check the Profile's project and key)"
        ),
        _ => String::new(),
    }
}

/// GCS's object naming rules that a store refuses (`400`), checked before anything is sent:
/// 1 to 1024 bytes of UTF-8, no carriage return or line feed, not `.` or `..`.
pub fn check_object_name(name: &str) -> Result<(), String> {
    let why = if name.is_empty() || name.len() > 1024 {
        format!("is {} bytes long (GCS takes 1 to 1024)", name.len())
    } else if name.contains(['\r', '\n']) {
        "has a carriage return or line feed (GCS refuses them)".to_string()
    } else if name == "." || name == ".." {
        "is `.` or `..` (GCS refuses them)".to_string()
    } else {
        return Ok(());
    };
    Err(format!(
        "the object name {:?} {why}; pass another --path",
        name.chars().take(80).collect::<String>()
    ))
}

/// One request: what it is for messages, and what is sent.
struct Req<'a> {
    op: &'static str,
    method: Method,
    url: String,
    headers: Vec<(&'static str, String)>,
    body: Bytes,
    bucket: &'a str,
}

/// A 2xx answer: read whole, or (asked to stream) its body still to read.
enum Answer {
    Whole { headers: HeaderMap, body: Bytes },
    Open(http::Response<hyper::body::Incoming>),
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
            match self.roundtrip(request, false).await {
                Ok((status, _, Some(b))) => {
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
                Ok(_) => unreachable!("not asked to stream"),
                Err(m) => last = m,
            }
        }
        Err(failed(last, false))
    }

    /// Sends `request`; the answer's status, headers and (unless a 2xx to stream) body.
    async fn roundtrip(
        &self,
        request: http::Request<Full<Bytes>>,
        stream: bool,
    ) -> Result<
        (
            StatusCode,
            Result<HeaderMap, http::Response<hyper::body::Incoming>>,
            Option<Bytes>,
        ),
        String,
    > {
        tokio::time::timeout(TIMEOUT, async {
            let resp =
                self.http.request(request).await.map_err(|e| {
                    crate::aws::tls::tls_hint(crate::kube_error::describe_chain(&e))
                })?;
            let status = resp.status();
            if stream && status.is_success() {
                return Ok((status, Err(resp), None));
            }
            let headers = resp.headers().clone();
            let body = Limited::new(resp.into_body(), MAX_BODY)
                .collect()
                .await
                .map_err(|e| format!("reading the response: {e}"))?
                .to_bytes();
            Ok((status, Ok(headers), Some(body)))
        })
        .await
        .unwrap_or_else(|_| Err(format!("no answer within {} s", TIMEOUT.as_secs())))
    }

    /// One authorized exchange, tried again on transient failures when `retry`.
    async fn send(&self, req: Req<'_>, stream: bool, retry: bool) -> Result<Answer, GcsError> {
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
        let (status, headers, body) =
            self.roundtrip(request, stream)
                .await
                .map_err(|message| GcsError::Transport {
                    op: req.op,
                    url: req.url.clone(),
                    message,
                })?;
        // A resumable upload's chunk is answered 308 with more to send.
        if status.is_success() || status == StatusCode::PERMANENT_REDIRECT {
            return Ok(match headers {
                Err(open) => Answer::Open(open),
                Ok(headers) => Answer::Whole {
                    headers,
                    body: body.unwrap_or_default(),
                },
            });
        }
        Err(GcsError::Service {
            op: req.op,
            url: req.url.clone(),
            status,
            message: error_message(&body.unwrap_or_default()),
            hint: hint(status, req.op, req.bucket, &self.key.client_email),
        })
    }

    async fn whole(&self, req: Req<'_>, retry: bool) -> Result<(HeaderMap, Bytes), GcsError> {
        match self.send(req, false, retry).await? {
            Answer::Whole { headers, body } => Ok((headers, body)),
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
                    Req {
                        op: "ListObjects",
                        method: Method::GET,
                        url: url.clone(),
                        headers: vec![],
                        body: Bytes::new(),
                        bucket,
                    },
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
        let r = self
            .whole(
                Req {
                    op: "DeleteObject",
                    method: Method::DELETE,
                    url: self.object_url(bucket, key),
                    headers: vec![],
                    body: Bytes::new(),
                    bucket,
                },
                true,
            )
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
        self.whole(
            Req {
                op: "ListObjects",
                method: Method::GET,
                url,
                headers: vec![],
                body: Bytes::new(),
                bucket,
            },
            true,
        )
        .await
        .map(|_| ())
    }

    /// Deletes `path` and every object below it (`path/...`, never `path-other`); returns how
    /// many objects went.
    pub async fn delete_path(&self, bucket: &str, path: &str) -> Result<usize, GcsError> {
        let keys: Vec<String> = self
            .list_all(bucket, path)
            .await?
            .into_iter()
            .filter(|k| is_under(k, path))
            .collect();
        for k in &keys {
            self.delete_object(bucket, k).await?;
        }
        Ok(keys.len())
    }

    /// The object's body, to read with [`ObjectStream::copy_to`].
    pub async fn get_object(&self, bucket: &str, key: &str) -> Result<ObjectStream, GcsError> {
        let url = format!("{}?alt=media", self.object_url(bucket, key));
        let req = Req {
            op: "GetObject",
            method: Method::GET,
            url: url.clone(),
            headers: vec![],
            body: Bytes::new(),
            bucket,
        };
        match self.send(req, true, true).await? {
            Answer::Open(resp) => {
                // A transcoded (gzip-stored) object's length is not what arrives.
                let len = resp
                    .headers()
                    .get(http::header::CONTENT_LENGTH)
                    .filter(|_| !resp.headers().contains_key(http::header::CONTENT_ENCODING))
                    .and_then(|v| v.to_str().ok()?.parse().ok());
                Ok(ObjectStream {
                    url,
                    body: resp.into_body(),
                    len,
                })
            }
            Answer::Whole { .. } => Err(GcsError::Response {
                op: "GetObject",
                url,
                message: "a 308 answer to a download".into(),
            }),
        }
    }

    /// Uploads everything `src` yields to `key`; returns the bytes uploaded. When `cancel`
    /// completes first, a started resumable upload is cancelled and the result is
    /// [`GcsError::Interrupted`] with what `cancel` gave.
    pub async fn upload<R, C>(
        &self,
        bucket: &str,
        key: &str,
        src: &mut R,
        cancel: C,
    ) -> Result<u64, GcsError>
    where
        R: AsyncRead + Unpin,
        C: Future<Output = String>,
    {
        check_object_name(key).map_err(GcsError::Config)?;
        let mut cancel = std::pin::pin!(cancel);
        let first = tokio::select! {
            r = read_part(src, CHUNK) => r.map_err(GcsError::Source)?,
            why = &mut cancel => return Err(GcsError::Interrupted(why)),
        };
        if first.len() < CHUNK {
            let n = first.len() as u64;
            let url = format!(
                "{}/upload/storage/v1/b/{}/o?uploadType=media&name={}",
                self.base,
                uri_encode(bucket, false),
                uri_encode(key, false)
            );
            let req = Req {
                op: "UploadObject",
                method: Method::POST,
                url,
                headers: vec![("content-type", "application/octet-stream".into())],
                body: first,
                bucket,
            };
            tokio::select! {
                r = self.whole(req, true) => r?,
                why = &mut cancel => return Err(GcsError::Interrupted(why)),
            };
            return Ok(n);
        }
        let session = tokio::select! {
            r = self.start_resumable(bucket, key) => r?,
            why = &mut cancel => return Err(GcsError::Interrupted(why)),
        };
        let result = tokio::select! {
            r = self.upload_chunks(bucket, &session, first, src) => r,
            why = &mut cancel => Err(GcsError::Interrupted(why)),
        };
        if result.is_err() {
            // Cancelling the session leaves no object (GCS answers 499 to it).
            let req = Req {
                op: "CancelUpload",
                method: Method::DELETE,
                url: session,
                headers: vec![],
                body: Bytes::new(),
                bucket,
            };
            let _ = self.send(req, false, false).await;
        }
        result
    }

    /// Starts a resumable upload; its session URL.
    async fn start_resumable(&self, bucket: &str, key: &str) -> Result<String, GcsError> {
        let url = format!(
            "{}/upload/storage/v1/b/{}/o?uploadType=resumable&name={}",
            self.base,
            uri_encode(bucket, false),
            uri_encode(key, false)
        );
        let (headers, _) = self
            .whole(
                Req {
                    op: "StartUpload",
                    method: Method::POST,
                    url: url.clone(),
                    headers: vec![("x-upload-content-type", "application/octet-stream".into())],
                    body: Bytes::new(),
                    bucket,
                },
                true,
            )
            .await?;
        headers
            .get(http::header::LOCATION)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string)
            .ok_or_else(|| GcsError::Response {
                op: "StartUpload",
                url,
                message: "no Location header (the upload session)".into(),
            })
    }

    /// The chunks of a resumable upload, from `first`; the last one names the total.
    async fn upload_chunks<R: AsyncRead + Unpin>(
        &self,
        bucket: &str,
        session: &str,
        first: Bytes,
        src: &mut R,
    ) -> Result<u64, GcsError> {
        let mut sent = 0u64;
        let mut current = first;
        loop {
            let next = read_part(src, CHUNK).await.map_err(GcsError::Source)?;
            let len = current.len() as u64;
            let last = next.is_empty();
            let range = content_range(sent, len, last);
            let req = Req {
                op: "UploadChunk",
                method: Method::PUT,
                url: session.to_string(),
                headers: vec![("content-range", range)],
                body: current,
                bucket,
            };
            self.whole(req, false).await?;
            sent += len;
            if last {
                return Ok(sent);
            }
            current = next;
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

/// `Content-Range` of a resumable upload's chunk of `len` bytes at `start`; the last chunk
/// names the total, others `*`.
pub fn content_range(start: u64, len: u64, last: bool) -> String {
    let end = start + len - 1;
    if last {
        format!("bytes {start}-{end}/{}", start + len)
    } else {
        format!("bytes {start}-{end}/*")
    }
}

/// A downloaded object's body.
pub struct ObjectStream {
    url: String,
    body: hyper::body::Incoming,
    /// `Content-Length`, when the store sent one (and no transcoding).
    pub len: Option<u64>,
}

impl ObjectStream {
    /// Writes the rest of the object to `out` (then flushes it); returns the bytes written.
    pub async fn copy_to<W: AsyncWrite + Unpin>(&mut self, out: &mut W) -> Result<u64, GcsError> {
        let mut n = 0u64;
        while let Some(data) = crate::aws::exchange::next_data(&mut self.body, IDLE_TIMEOUT)
            .await
            .map_err(|message| GcsError::Transport {
                op: "GetObject",
                url: self.url.clone(),
                message,
            })?
        {
            out.write_all(&data).await.map_err(GcsError::Sink)?;
            n += data.len() as u64;
        }
        out.flush().await.map_err(GcsError::Sink)?;
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunk_ranges() {
        assert_eq!(content_range(0, 8, false), "bytes 0-7/*");
        assert_eq!(content_range(8, 2, true), "bytes 8-9/10");
        assert_eq!(CHUNK % (256 << 10), 0);
    }

    #[test]
    fn object_names_gcs_refuses() {
        assert!(check_object_name("team-a/backups/x.gz").is_ok());
        assert!(check_object_name(&"é".repeat(512)).is_ok());
        let e = check_object_name(&"é".repeat(513)).unwrap_err();
        assert!(
            e.contains("is 1026 bytes long (GCS takes 1 to 1024)"),
            "{e}"
        );
        assert!(check_object_name("a\nb").unwrap_err().contains("line feed"));
        assert!(check_object_name("..").unwrap_err().contains("`..`"));
        assert!(check_object_name("").is_err());
    }

    #[test]
    fn errors_say_what_to_check() {
        let m = error_message(
            br#"{"error":{"code":404,"message":"The specified bucket does not exist."}}"#,
        );
        assert_eq!(m, "The specified bucket does not exist.");
        assert_eq!(error_message(b" not found\n"), "not found");
        assert!(hint(StatusCode::NOT_FOUND, "ListObjects", "b", "e").contains("location.bucket"));
        assert_eq!(hint(StatusCode::NOT_FOUND, "GetObject", "b", "e"), "");
        assert!(hint(StatusCode::FORBIDDEN, "UploadObject", "b", "sa@p").contains("sa@p"));
        assert!(hint(StatusCode::UNAUTHORIZED, "ListObjects", "b", "e").contains("key"));
    }

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
