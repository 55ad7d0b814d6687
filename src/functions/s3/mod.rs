//! A small S3 client for what the controller itself does on a Profile's object
//! store (LocationDelete): ListObjectsV2 (paginated), PutObject, DeleteObject
//! and DeleteObjects, signed with AWS Signature Version 4.
//!
//! - HTTP/1.1 through hyper (the stack kube already uses), `http://` and
//!   `https://` endpoints, TLS with rustls (ring) and the system's root
//!   certificates; `skipSSLVerify` accepts any server certificate.
//! - Path-style URLs only (`<endpoint>/<bucket>/<key>`), as Kanister's stow
//!   provider uses whenever an endpoint is set; without an endpoint
//!   `https://s3.<region>.amazonaws.com`. Region default `us-east-1`; when
//!   the store answers that the bucket is in another region
//!   (AuthorizationHeaderMalformed / PermanentRedirect naming it), that
//!   region is used from then on (Kanister looks the bucket's region up too).
//! - Payloads are signed (`x-amz-content-sha256` is the body's SHA-256).
//! - DeleteObjects sends `x-amz-checksum-sha256` (AWS accepts it in place of
//!   `Content-MD5`); stores that refuse the batch call (NotImplemented,
//!   MissingContentMD5, ...) get one DeleteObject per key instead.
//! - Error responses are decoded (`<Error><Code>`) and worded with what to
//!   check in the Profile; transient failures (5xx, connection errors) are
//!   retried three times.
//!
//! The XML reader is deliberately tiny: it reads the few flat elements S3
//! responses carry (`Contents/Key`, `IsTruncated`, `NextContinuationToken`,
//! `Error/Code`, ...), with XML entity decoding.

use std::sync::Arc;
use std::time::Duration;

use base64::Engine as _;
use bytes::Bytes;
use http::{Method, Request, StatusCode, Uri};
use http_body_util::{BodyExt, Full, Limited};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use serde_json::Value;
use sha2::{Digest, Sha256};

use super::profile::{self, Credential, Profile, ProfileError};

pub mod transfer;

/// `hex(sha256(""))`.
pub const EMPTY_SHA256: &str = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
/// Region used when the Profile names none.
pub const DEFAULT_REGION: &str = "us-east-1";
/// Keys per DeleteObjects request (the S3 maximum).
const DELETE_BATCH: usize = 1000;
/// Time one HTTP exchange may take.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(120);
/// Largest response body read (list pages are well below this).
const MAX_BODY: usize = 64 << 20;
const ATTEMPTS: u32 = 3;

// ---------------------------------------------------------------------------
// Signature Version 4 (pure)
// ---------------------------------------------------------------------------

/// Access key pair (plus the session token of temporary credentials).
#[derive(Clone, Default)]
pub struct Credentials {
    pub access_key_id: String,
    pub secret_access_key: String,
    pub session_token: Option<String>,
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Credentials")
            .field("access_key_id", &self.access_key_id)
            .field("secret_access_key", &"<redacted>")
            .field(
                "session_token",
                &self.session_token.as_ref().map(|_| "<redacted>"),
            )
            .finish()
    }
}

/// HMAC-SHA256 (RFC 2104) over `sha2`.
pub fn hmac_sha256(key: &[u8], data: &[u8]) -> [u8; 32] {
    const BLOCK: usize = 64;
    let mut k = [0u8; BLOCK];
    if key.len() > BLOCK {
        k[..32].copy_from_slice(&Sha256::digest(key));
    } else {
        k[..key.len()].copy_from_slice(key);
    }
    let mut ipad = [0x36u8; BLOCK];
    let mut opad = [0x5cu8; BLOCK];
    for i in 0..BLOCK {
        ipad[i] ^= k[i];
        opad[i] ^= k[i];
    }
    let inner = Sha256::new()
        .chain_update(ipad)
        .chain_update(data)
        .finalize();
    Sha256::new()
        .chain_update(opad)
        .chain_update(inner)
        .finalize()
        .into()
}

pub fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        s.push(DIGITS[(b >> 4) as usize] as char);
        s.push(DIGITS[(b & 15) as usize] as char);
    }
    s
}

pub fn sha256_hex(data: &[u8]) -> String {
    hex(&Sha256::digest(data))
}

/// RFC 3986 encoding as SigV4 wants it: every byte but `A-Za-z0-9-._~` as
/// `%XX` (upper case); `/` kept when `keep_slash` (paths).
pub fn uri_encode(s: &str, keep_slash: bool) -> String {
    let mut out = String::with_capacity(s.len());
    for &b in s.as_bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                out.push(b as char)
            }
            b'/' if keep_slash => out.push('/'),
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

/// Canonical query string: parameters encoded, sorted by name then value.
pub fn canonical_query(params: &[(&str, &str)]) -> String {
    let mut enc: Vec<(String, String)> = params
        .iter()
        .map(|(k, v)| (uri_encode(k, false), uri_encode(v, false)))
        .collect();
    enc.sort();
    enc.iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join("&")
}

/// One request to sign. `path` is the canonical (already encoded) URI,
/// `query` the canonical query string, `headers` every header to sign.
pub struct SignInput<'a> {
    pub method: &'a str,
    pub path: &'a str,
    pub query: &'a str,
    pub headers: &'a [(String, String)],
    pub payload_hash: &'a str,
}

/// The canonical request and the `SignedHeaders` list.
pub fn canonical_request(req: &SignInput) -> (String, String) {
    let mut hs: Vec<(String, String)> = req
        .headers
        .iter()
        .map(|(k, v)| {
            (
                k.to_ascii_lowercase(),
                v.split_whitespace().collect::<Vec<_>>().join(" "),
            )
        })
        .collect();
    hs.sort_by(|a, b| a.0.cmp(&b.0));
    // Repeated headers: values joined with commas, in the order given.
    let mut merged: Vec<(String, String)> = Vec::new();
    for (k, v) in hs {
        match merged.last_mut() {
            Some((lk, lv)) if *lk == k => {
                lv.push(',');
                lv.push_str(&v);
            }
            _ => merged.push((k, v)),
        }
    }
    let canonical_headers: String = merged.iter().map(|(k, v)| format!("{k}:{v}\n")).collect();
    let signed = merged
        .iter()
        .map(|(k, _)| k.as_str())
        .collect::<Vec<_>>()
        .join(";");
    let creq = format!(
        "{}\n{}\n{}\n{}\n{}\n{}",
        req.method, req.path, req.query, canonical_headers, signed, req.payload_hash
    );
    (creq, signed)
}

/// `<date>/<region>/<service>/aws4_request`.
pub fn scope(amz_date: &str, region: &str, service: &str) -> String {
    format!("{}/{region}/{service}/aws4_request", &amz_date[..8])
}

pub fn string_to_sign(amz_date: &str, scope: &str, canonical_request: &str) -> String {
    format!(
        "AWS4-HMAC-SHA256\n{amz_date}\n{scope}\n{}",
        sha256_hex(canonical_request.as_bytes())
    )
}

pub fn signing_key(secret: &str, date: &str, region: &str, service: &str) -> [u8; 32] {
    let k = hmac_sha256(format!("AWS4{secret}").as_bytes(), date.as_bytes());
    let k = hmac_sha256(&k, region.as_bytes());
    let k = hmac_sha256(&k, service.as_bytes());
    hmac_sha256(&k, b"aws4_request")
}

/// The `Authorization` header value for `req` at `amz_date` (`YYYYMMDDTHHMMSSZ`).
pub fn authorization(
    creds: &Credentials,
    region: &str,
    service: &str,
    amz_date: &str,
    req: &SignInput,
) -> String {
    let (creq, signed) = canonical_request(req);
    let scope = scope(amz_date, region, service);
    let sts = string_to_sign(amz_date, &scope, &creq);
    let key = signing_key(&creds.secret_access_key, &amz_date[..8], region, service);
    let sig = hex(&hmac_sha256(&key, sts.as_bytes()));
    format!(
        "AWS4-HMAC-SHA256 Credential={}/{scope}, SignedHeaders={signed}, Signature={sig}",
        creds.access_key_id
    )
}

// ---------------------------------------------------------------------------
// XML (pure)
// ---------------------------------------------------------------------------

/// Decodes the five predefined entities and numeric character references.
pub fn xml_unescape(s: &str) -> String {
    if !s.contains('&') {
        return s.to_string();
    }
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = rest.find('&') {
        out.push_str(&rest[..i]);
        rest = &rest[i..];
        let Some(end) = rest.find(';').filter(|&e| e <= 12) else {
            out.push('&');
            rest = &rest[1..];
            continue;
        };
        let ent = &rest[1..end];
        let decoded = match ent {
            "amp" => Some('&'),
            "lt" => Some('<'),
            "gt" => Some('>'),
            "quot" => Some('"'),
            "apos" => Some('\''),
            _ => ent
                .strip_prefix("#x")
                .or_else(|| ent.strip_prefix("#X"))
                .and_then(|h| u32::from_str_radix(h, 16).ok())
                .or_else(|| ent.strip_prefix('#').and_then(|d| d.parse().ok()))
                .and_then(char::from_u32),
        };
        match decoded {
            Some(c) => {
                out.push(c);
                rest = &rest[end + 1..];
            }
            None => {
                out.push('&');
                rest = &rest[1..];
            }
        }
    }
    out.push_str(rest);
    out
}

/// The raw inner text of every `<tag>…</tag>` (also `<tag attr="…">` and
/// `<tag/>`, which is empty) in `xml`, in document order. Elements of the
/// same name must not nest (true of every element read here).
pub fn elements<'a>(xml: &'a str, tag: &str) -> Vec<&'a str> {
    let open = format!("<{tag}");
    let close = format!("</{tag}>");
    let mut out = Vec::new();
    let mut pos = 0;
    while let Some(i) = xml[pos..].find(&open) {
        let start = pos + i + open.len();
        let Some(gt) = xml[start..].find('>') else {
            break;
        };
        let between = &xml[start..start + gt];
        // `<Key>` must not match `<KeyCount>`.
        if !(between.is_empty() || between.starts_with([' ', '\t', '\r', '\n', '/'])) {
            pos = start;
            continue;
        }
        let body_start = start + gt + 1;
        if between.ends_with('/') {
            out.push(&xml[body_start..body_start]);
            pos = body_start;
            continue;
        }
        let Some(end) = xml[body_start..].find(&close) else {
            break;
        };
        out.push(&xml[body_start..body_start + end]);
        pos = body_start + end + close.len();
    }
    out
}

/// The decoded text of the first `<tag>` element, if any.
pub fn element(xml: &str, tag: &str) -> Option<String> {
    elements(xml, tag).first().map(|s| xml_unescape(s.trim()))
}

/// One page of ListObjectsV2.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ListPage {
    pub keys: Vec<String>,
    pub is_truncated: bool,
    pub next_continuation_token: Option<String>,
}

/// Parses a `ListBucketResult` document.
pub fn parse_list_page(xml: &str) -> Result<ListPage, String> {
    if !xml.contains("<ListBucketResult") {
        return Err(format!(
            "expected a ListBucketResult document, got: {}",
            snippet(xml)
        ));
    }
    let keys = elements(xml, "Contents")
        .into_iter()
        .map(|c| {
            elements(c, "Key")
                .first()
                .map(|k| xml_unescape(k))
                .ok_or_else(|| format!("a <Contents> element has no <Key>: {}", snippet(c)))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let is_truncated = match element(xml, "IsTruncated").as_deref() {
        None | Some("false") | Some("") => false,
        Some("true") => true,
        Some(other) => return Err(format!("<IsTruncated> is {other:?}, not true/false")),
    };
    let next_continuation_token = element(xml, "NextContinuationToken").filter(|t| !t.is_empty());
    Ok(ListPage {
        keys,
        is_truncated,
        next_continuation_token,
    })
}

/// A key DeleteObjects could not delete.
#[derive(Debug, Clone, PartialEq)]
pub struct DeleteFailure {
    pub key: String,
    pub code: String,
    pub message: String,
}

/// The `<Error>` entries of a `DeleteResult` document.
pub fn parse_delete_result(xml: &str) -> Result<Vec<DeleteFailure>, String> {
    if !xml.contains("<DeleteResult") {
        return Err(format!(
            "expected a DeleteResult document, got: {}",
            snippet(xml)
        ));
    }
    Ok(elements(xml, "Error")
        .into_iter()
        .map(|e| DeleteFailure {
            key: element(e, "Key").unwrap_or_default(),
            code: element(e, "Code").unwrap_or_default(),
            message: element(e, "Message").unwrap_or_default(),
        })
        .collect())
}

/// The DeleteObjects request body (quiet mode: only failures come back).
pub fn delete_request_body(keys: &[String]) -> String {
    let mut s =
        String::from(r#"<?xml version="1.0" encoding="UTF-8"?><Delete><Quiet>true</Quiet>"#);
    for k in keys {
        s.push_str("<Object><Key>");
        s.push_str(&xml_escape(k));
        s.push_str("</Key></Object>");
    }
    s.push_str("</Delete>");
    s
}

pub(super) fn xml_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            // Characters XML 1.0 cannot carry literally.
            c if (c as u32) < 0x20 && !matches!(c, '\t' | '\n' | '\r') => {
                out.push_str(&format!("&#x{:X};", c as u32))
            }
            '\r' => out.push_str("&#xD;"),
            c => out.push(c),
        }
    }
    out
}

/// An S3 `<Error>` response.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ServiceError {
    pub code: String,
    pub message: String,
    pub bucket: Option<String>,
    pub region: Option<String>,
    pub endpoint: Option<String>,
    pub request_id: Option<String>,
}

/// Decodes an error body; an empty or non-XML body gives a code from the status.
pub fn parse_error(status: StatusCode, body: &str) -> ServiceError {
    let code = element(body, "Code").filter(|c| !c.is_empty());
    match code {
        Some(code) => ServiceError {
            code,
            message: element(body, "Message").unwrap_or_default(),
            bucket: element(body, "BucketName"),
            region: element(body, "Region"),
            endpoint: element(body, "Endpoint"),
            request_id: element(body, "RequestId"),
        },
        None => ServiceError {
            code: match status {
                StatusCode::NOT_FOUND => "NotFound".into(),
                StatusCode::FORBIDDEN => "Forbidden".into(),
                StatusCode::METHOD_NOT_ALLOWED => "MethodNotAllowed".into(),
                StatusCode::NOT_IMPLEMENTED => "NotImplemented".into(),
                s => format!("HTTP{}", s.as_u16()),
            },
            message: snippet(body),
            ..ServiceError::default()
        },
    }
}

fn snippet(s: &str) -> String {
    let s = s.trim();
    if s.len() <= 300 {
        return s.to_string();
    }
    let mut end = 300;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &s[..end])
}

// ---------------------------------------------------------------------------
// Errors
// ---------------------------------------------------------------------------

/// What went wrong talking to the object store.
#[derive(Debug, thiserror::Error)]
pub enum S3Error {
    /// The endpoint or the TLS set-up is unusable.
    #[error("{0}")]
    Config(String),
    /// No HTTP answer: connection refused, DNS, TLS handshake, timeout.
    #[error("{op} on {url}: {message}")]
    Transport {
        op: &'static str,
        url: String,
        message: String,
    },
    /// The store answered with an error.
    #[error("{op} on {url}: {status} {code}: {message}{hint}",
        status = status.as_u16(), code = error.code, message = error.message,
        hint = hint(error, op, bucket, endpoint))]
    Service {
        op: &'static str,
        url: String,
        status: StatusCode,
        error: Box<ServiceError>,
        bucket: String,
        endpoint: String,
    },
    /// A 2xx answer that is not what S3 sends.
    #[error("{op} on {url}: unexpected response: {message}")]
    Response {
        op: &'static str,
        url: String,
        message: String,
    },
}

impl S3Error {
    /// The S3 error code, if the store sent one.
    pub fn code(&self) -> Option<&str> {
        match self {
            S3Error::Service { error, .. } => Some(&error.code),
            _ => None,
        }
    }
}

fn hint(e: &ServiceError, op: &str, bucket: &str, endpoint: &str) -> String {
    let h = match e.code.as_str() {
        "NoSuchKey" => format!(
            "no object at this key in bucket {bucket:?}: check the path and the Profile's location.prefix"
        ),
        "NoSuchUpload" => "the multipart upload is gone (aborted, or expired by a bucket lifecycle rule)".into(),
        "NoSuchBucket" => format!(
            "bucket {bucket:?} does not exist at {endpoint}; check the Profile's location.bucket (and location.endpoint)"
        ),
        "InvalidAccessKeyId" => "the object store does not know this access key ID; check the Secret the Profile's credential names".into(),
        "SignatureDoesNotMatch" => "the secret access key is wrong (or the region is); check the Secret the Profile's credential names and location.region".into(),
        "AccessDenied" | "Forbidden" | "AllAccessDisabled" => format!(
            "the credentials may not do this on bucket {bucket:?}; grant {} or use other credentials",
            permission(op)
        ),
        "AuthorizationHeaderMalformed" | "IllegalLocationConstraintException" => match &e.region {
            Some(r) => format!("the bucket is in region {r}; set the Profile's location.region to {r}"),
            None => "check the Profile's location.region".into(),
        },
        "PermanentRedirect" | "TemporaryRedirect" => match &e.endpoint {
            Some(ep) => format!("the bucket must be addressed at {ep}; set the Profile's location.endpoint/region accordingly"),
            None => "the bucket is in another region; set the Profile's location.region".into(),
        },
        "RequestTimeTooSkewed" => "this machine's clock differs too much from the object store's".into(),
        "InvalidBucketName" => format!("{bucket:?} is not a valid bucket name"),
        _ => return String::new(),
    };
    format!(" ({h})")
}

/// The IAM permission an operation needs.
fn permission(op: &str) -> &'static str {
    match op {
        "GetObject" => "s3:GetObject",
        "PutObject" | "CreateMultipartUpload" | "UploadPart" | "CompleteMultipartUpload" => {
            "s3:PutObject"
        }
        "AbortMultipartUpload" => "s3:AbortMultipartUpload",
        "ListObjectsV2" => "s3:ListBucket",
        "DeleteObject" | "DeleteObjects" => "s3:DeleteObject",
        _ => "s3:ListBucket and s3:DeleteObject",
    }
}

fn error_chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut parts = vec![e.to_string()];
    let mut cur = e.source();
    while let Some(s) = cur {
        let t = s.to_string();
        if !parts.iter().any(|p| p.contains(&t)) {
            parts.push(t);
        }
        cur = s.source();
    }
    parts.join(": ")
}

// ---------------------------------------------------------------------------
// The client
// ---------------------------------------------------------------------------

/// Where and how to reach the store.
#[derive(Debug, Clone)]
pub struct Config {
    /// `http(s)://host[:port][/path]`; empty: AWS S3 of `region`; no scheme: https.
    pub endpoint: String,
    /// Empty: [`DEFAULT_REGION`].
    pub region: String,
    pub credentials: Credentials,
    pub skip_ssl_verify: bool,
}

type HttpClient = Client<hyper_rustls::HttpsConnector<HttpConnector>, Full<Bytes>>;

/// Where requests go and how they are signed; corrected once when the
/// store names the bucket's region (as Kanister looks the region up).
#[derive(Debug, Clone)]
struct Route {
    authority: String,
    region: String,
    /// For messages: the endpoint as used.
    endpoint: String,
}

/// What one request is: the operation's name (for messages), method,
/// bucket, key, query parameters and extra headers (all signed).
pub(super) struct Exchange<'a> {
    pub op: &'static str,
    pub method: Method,
    pub bucket: &'a str,
    pub key: Option<&'a str>,
    pub query: &'a [(&'a str, &'a str)],
    pub extra: &'a [(&'a str, String)],
}

/// A successful answer (or, `Whole`, any answer inside
/// [`S3Client::exchange`]).
pub(super) enum Reply {
    Whole {
        status: StatusCode,
        headers: http::HeaderMap,
        body: Bytes,
    },
    /// A 2xx answer whose body is still to be read.
    Open {
        url: String,
        response: http::Response<hyper::body::Incoming>,
    },
}

/// An S3 client for one endpoint.
pub struct S3Client {
    http: HttpClient,
    scheme: String,
    /// Path of the endpoint, without a trailing `/` (usually empty).
    base_path: String,
    credentials: Credentials,
    /// No endpoint in the Profile: AWS, whose host follows the region.
    aws_default: bool,
    route: std::sync::Mutex<Route>,
}

impl S3Client {
    pub fn new(cfg: &Config) -> Result<Self, S3Error> {
        let region = if cfg.region.trim().is_empty() {
            DEFAULT_REGION.to_string()
        } else {
            cfg.region.trim().to_string()
        };
        let endpoint = match cfg.endpoint.trim() {
            "" => format!("https://s3.{region}.amazonaws.com"),
            e if e.contains("://") => e.to_string(),
            e => format!("https://{e}"),
        };
        let uri: Uri = endpoint.parse().map_err(|e| {
            S3Error::Config(format!(
                "the Profile's location.endpoint {:?} is not a URL ({e}); expected e.g. http://minio.example:9000",
                cfg.endpoint
            ))
        })?;
        let scheme = uri.scheme_str().unwrap_or("https").to_ascii_lowercase();
        if scheme != "http" && scheme != "https" {
            return Err(S3Error::Config(format!(
                "the Profile's location.endpoint {:?} has scheme {scheme:?}; only http and https are supported",
                cfg.endpoint
            )));
        }
        let authority = uri
            .authority()
            .filter(|a| !a.host().is_empty())
            .map(|a| a.as_str().to_string())
            .ok_or_else(|| {
                S3Error::Config(format!(
                    "the Profile's location.endpoint {:?} names no host",
                    cfg.endpoint
                ))
            })?;
        if uri.query().is_some() {
            return Err(S3Error::Config(format!(
                "the Profile's location.endpoint {:?} must not have a query string",
                cfg.endpoint
            )));
        }
        let base_path = uri.path().trim_end_matches('/').to_string();
        let tls = tls_config(scheme == "https", cfg.skip_ssl_verify)?;
        let mut http = HttpConnector::new();
        http.enforce_http(false);
        http.set_connect_timeout(Some(Duration::from_secs(15)));
        let connector = hyper_rustls::HttpsConnectorBuilder::new()
            .with_tls_config(tls)
            .https_or_http()
            .enable_http1()
            .wrap_connector(http);
        let client = Client::builder(TokioExecutor::new())
            .pool_idle_timeout(Duration::from_secs(30))
            .build(connector);
        Ok(S3Client {
            http: client,
            scheme,
            base_path,
            credentials: cfg.credentials.clone(),
            aws_default: cfg.endpoint.trim().is_empty(),
            route: std::sync::Mutex::new(Route {
                authority,
                region,
                endpoint: endpoint.trim_end_matches('/').to_string(),
            }),
        })
    }

    fn route(&self) -> Route {
        self.route.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// The endpoint requests go to (`scheme://host[:port][/path]`).
    pub fn endpoint(&self) -> String {
        self.route().endpoint
    }

    /// The region requests are signed for.
    pub fn region(&self) -> String {
        self.route().region
    }

    /// Adopts the bucket's region named by an error answer; true when that
    /// changed something (the request is then worth one more try).
    fn learn_region(&self, status: StatusCode, error: &ServiceError, header: Option<&str>) -> bool {
        let named = header
            .map(str::to_string)
            .or_else(|| error.region.clone())
            .filter(|r| !r.is_empty());
        let wrong_region = matches!(
            error.code.as_str(),
            "AuthorizationHeaderMalformed"
                | "PermanentRedirect"
                | "IllegalLocationConstraintException"
        ) || status == StatusCode::MOVED_PERMANENTLY;
        let Some(region) = named.filter(|_| wrong_region) else {
            return false;
        };
        let mut r = self.route.lock().unwrap_or_else(|e| e.into_inner());
        if r.region == region {
            return false;
        }
        tracing::info!(from = %r.region, to = %region, "S3: using the bucket's region");
        r.region = region.clone();
        if self.aws_default {
            r.authority = format!("s3.{region}.amazonaws.com");
            r.endpoint = format!("https://{}", r.authority);
        }
        true
    }

    /// `/<base>/<bucket>[/<key>]`, encoded.
    pub(super) fn path(&self, bucket: &str, key: Option<&str>) -> String {
        let mut p = format!("{}/{}", self.base_path, uri_encode(bucket, false));
        if let Some(k) = key {
            p.push('/');
            p.push_str(&uri_encode(k, true));
        }
        p
    }

    /// One signed exchange; returns the 2xx body or the decoded error.
    #[allow(clippy::too_many_arguments)]
    async fn send(
        &self,
        op: &'static str,
        method: Method,
        bucket: &str,
        key: Option<&str>,
        query: &[(&str, &str)],
        extra: &[(&str, String)],
        body: Bytes,
    ) -> Result<Bytes, S3Error> {
        let req = Exchange {
            op,
            method,
            bucket,
            key,
            query,
            extra,
        };
        match self.exchange(&req, body, false).await? {
            Reply::Whole { body, .. } => Ok(body),
            Reply::Open { .. } => unreachable!("not asked to stream"),
        }
    }

    /// One signed exchange, retried on connection errors and 5xx (three
    /// attempts) and once more when the store names the bucket's region.
    /// A 2xx answer is read whole, or with `stream` returned unread (the
    /// timeout then covers only the wait for its headers).
    pub(super) async fn exchange(
        &self,
        req: &Exchange<'_>,
        body: Bytes,
        stream: bool,
    ) -> Result<Reply, S3Error> {
        let Exchange {
            op,
            ref method,
            bucket,
            key,
            query,
            extra,
        } = *req;
        let path = self.path(bucket, key);
        let q = canonical_query(query);
        let target = if q.is_empty() {
            path.clone()
        } else {
            format!("{path}?{q}")
        };
        let payload_hash = sha256_hex(&body);
        let mut attempt = 0;
        let mut region_learned = false;
        loop {
            attempt += 1;
            let route = self.route();
            let url = format!("{}://{}{target}", self.scheme, route.authority);
            let amz_date = chrono::Utc::now().format("%Y%m%dT%H%M%SZ").to_string();
            let mut headers: Vec<(String, String)> = vec![
                ("host".into(), route.authority.clone()),
                ("x-amz-content-sha256".into(), payload_hash.clone()),
                ("x-amz-date".into(), amz_date.clone()),
            ];
            if let Some(t) = &self.credentials.session_token {
                headers.push(("x-amz-security-token".into(), t.clone()));
            }
            for (k, v) in extra {
                headers.push((k.to_string(), v.clone()));
            }
            let auth = authorization(
                &self.credentials,
                &route.region,
                "s3",
                &amz_date,
                &SignInput {
                    method: method.as_str(),
                    path: &path,
                    query: &q,
                    headers: &headers,
                    payload_hash: &payload_hash,
                },
            );
            let mut rb = Request::builder().method(method.clone()).uri(&url);
            for (k, v) in &headers {
                rb = rb.header(k.as_str(), v.as_str());
            }
            rb = rb.header("authorization", auth).header(
                "user-agent",
                concat!("blueprint-operator/", env!("CARGO_PKG_VERSION")),
            );
            let req = rb.body(Full::new(body.clone())).map_err(|e| {
                S3Error::Config(format!("{op}: cannot build the request for {url}: {e}"))
            })?;
            let transport = |message: String| S3Error::Transport {
                op,
                url: url.clone(),
                message,
            };
            let result = tokio::time::timeout(REQUEST_TIMEOUT, async {
                let resp = self
                    .http
                    .request(req)
                    .await
                    .map_err(|e| {
                        let msg = tls_hint(error_chain(&e));
                        if e.is_connect() && !msg.contains("skipSSLVerify") {
                            transport(format!(
                                "{msg} (cannot connect to {}: check the Profile's location.endpoint and that the object store is reachable from here)",
                                route.endpoint
                            ))
                        } else {
                            transport(msg)
                        }
                    })?;
                let status = resp.status();
                if stream && status.is_success() {
                    return Ok(Reply::Open {
                        url: url.clone(),
                        response: resp,
                    });
                }
                let headers = resp.headers().clone();
                let bytes = Limited::new(resp.into_body(), MAX_BODY)
                    .collect()
                    .await
                    .map_err(|e| transport(format!("reading the response: {e}")))?
                    .to_bytes();
                Ok::<_, S3Error>(Reply::Whole {
                    status,
                    headers,
                    body: bytes,
                })
            })
            .await
            .unwrap_or_else(|_| {
                Err(transport(format!(
                    "no answer within {} s",
                    REQUEST_TIMEOUT.as_secs()
                )))
            });
            let retry = attempt < ATTEMPTS
                && match &result {
                    Err(S3Error::Transport { .. }) => true,
                    Ok(Reply::Whole { status: s, .. }) => {
                        s.is_server_error() && *s != StatusCode::NOT_IMPLEMENTED
                    }
                    Ok(Reply::Open { .. }) | Err(_) => false,
                };
            if retry {
                tokio::time::sleep(Duration::from_millis(200 * 4u64.pow(attempt - 1))).await;
                continue;
            }
            let (status, headers, bytes) = match result? {
                Reply::Whole {
                    status,
                    headers,
                    body,
                } if !status.is_success() => (status, headers, body),
                reply => return Ok(reply),
            };
            let bucket_region = headers
                .get("x-amz-bucket-region")
                .and_then(|v| v.to_str().ok());
            let error = parse_error(status, &String::from_utf8_lossy(&bytes));
            if !region_learned && self.learn_region(status, &error, bucket_region) {
                region_learned = true;
                attempt -= 1;
                continue;
            }
            return Err(S3Error::Service {
                op,
                url,
                status,
                error: Box::new(error),
                bucket: bucket.to_string(),
                endpoint: route.endpoint,
            });
        }
    }

    /// One ListObjectsV2 page.
    pub async fn list_objects_v2(
        &self,
        bucket: &str,
        prefix: &str,
        continuation_token: Option<&str>,
        max_keys: Option<u32>,
    ) -> Result<ListPage, S3Error> {
        let max = max_keys.map(|m| m.to_string());
        let mut q: Vec<(&str, &str)> = vec![("list-type", "2"), ("prefix", prefix)];
        if let Some(t) = continuation_token {
            q.push(("continuation-token", t));
        }
        if let Some(m) = &max {
            q.push(("max-keys", m));
        }
        let body = self
            .send(
                "ListObjectsV2",
                Method::GET,
                bucket,
                None,
                &q,
                &[],
                Bytes::new(),
            )
            .await?;
        parse_list_page(&String::from_utf8_lossy(&body)).map_err(|message| S3Error::Response {
            op: "ListObjectsV2",
            url: format!("{}{}", self.endpoint(), self.path(bucket, None)),
            message,
        })
    }

    /// Every key starting with `prefix`, following continuation tokens.
    pub async fn list_all(
        &self,
        bucket: &str,
        prefix: &str,
        page_size: Option<u32>,
    ) -> Result<Vec<String>, S3Error> {
        let mut keys = Vec::new();
        let mut token: Option<String> = None;
        loop {
            let page = self
                .list_objects_v2(bucket, prefix, token.as_deref(), page_size)
                .await?;
            keys.extend(page.keys);
            if !page.is_truncated {
                return Ok(keys);
            }
            match page.next_continuation_token {
                Some(t) if token.as_deref() != Some(t.as_str()) => token = Some(t),
                other => {
                    return Err(S3Error::Response {
                        op: "ListObjectsV2",
                        url: format!("{}{}", self.endpoint(), self.path(bucket, None)),
                        message: format!(
                            "the listing is truncated but the continuation token is {}",
                            if other.is_some() {
                                "repeated"
                            } else {
                                "missing"
                            }
                        ),
                    });
                }
            }
        }
    }

    pub async fn put_object(&self, bucket: &str, key: &str, data: Bytes) -> Result<(), S3Error> {
        self.send("PutObject", Method::PUT, bucket, Some(key), &[], &[], data)
            .await
            .map(|_| ())
    }

    /// DeleteObject (deleting a missing key succeeds, as in S3).
    pub async fn delete_object(&self, bucket: &str, key: &str) -> Result<(), S3Error> {
        match self
            .send(
                "DeleteObject",
                Method::DELETE,
                bucket,
                Some(key),
                &[],
                &[],
                Bytes::new(),
            )
            .await
        {
            Err(e) if e.code() == Some("NoSuchKey") => Ok(()),
            r => r.map(|_| ()),
        }
    }

    /// One DeleteObjects request (at most 1000 keys); returns the keys that failed.
    pub async fn delete_objects(
        &self,
        bucket: &str,
        keys: &[String],
    ) -> Result<Vec<DeleteFailure>, S3Error> {
        let body = Bytes::from(delete_request_body(keys));
        let checksum = base64::engine::general_purpose::STANDARD.encode(Sha256::digest(&body));
        let extra = [
            ("content-type", "application/xml".to_string()),
            ("x-amz-checksum-sha256", checksum),
            ("x-amz-sdk-checksum-algorithm", "SHA256".to_string()),
        ];
        let out = self
            .send(
                "DeleteObjects",
                Method::POST,
                bucket,
                None,
                &[("delete", "")],
                &extra,
                body,
            )
            .await?;
        parse_delete_result(&String::from_utf8_lossy(&out)).map_err(|message| S3Error::Response {
            op: "DeleteObjects",
            url: format!("{}{}?delete", self.endpoint(), self.path(bucket, None)),
            message,
        })
    }

    /// Deletes `keys`: DeleteObjects in batches, or one DeleteObject per key
    /// when the store does not do batch deletes. Returns how many were deleted.
    pub async fn delete_keys(&self, bucket: &str, keys: &[String]) -> Result<usize, S3Error> {
        let mut batch_ok = true;
        let mut failures: Vec<DeleteFailure> = Vec::new();
        for chunk in keys.chunks(DELETE_BATCH) {
            if batch_ok {
                match self.delete_objects(bucket, chunk).await {
                    Ok(f) => {
                        failures.extend(f.into_iter().filter(|f| f.code != "NoSuchKey"));
                        continue;
                    }
                    Err(e) if batch_unsupported(&e) => batch_ok = false,
                    Err(e) => return Err(e),
                }
            }
            for k in chunk {
                self.delete_object(bucket, k).await?;
            }
        }
        if failures.is_empty() {
            return Ok(keys.len());
        }
        let shown: Vec<String> = failures
            .iter()
            .take(5)
            .map(|f| format!("{}: {} {}", f.key, f.code, f.message))
            .collect();
        Err(S3Error::Service {
            op: "DeleteObjects",
            url: format!("{}{}?delete", self.endpoint(), self.path(bucket, None)),
            status: StatusCode::OK,
            error: Box::new(ServiceError {
                code: failures[0].code.clone(),
                message: format!(
                    "{} of {} objects were not deleted: {}{}",
                    failures.len(),
                    keys.len(),
                    shown.join("; "),
                    if failures.len() > 5 { "; …" } else { "" }
                ),
                ..ServiceError::default()
            }),
            bucket: bucket.to_string(),
            endpoint: self.endpoint(),
        })
    }
}

/// DeleteObjects refused as such (not for lack of rights or a missing bucket).
fn batch_unsupported(e: &S3Error) -> bool {
    match e {
        S3Error::Service { status, error, .. } => {
            matches!(
                error.code.as_str(),
                "NotImplemented"
                    | "MissingContentMD5"
                    | "InvalidRequest"
                    | "MethodNotAllowed"
                    | "InvalidArgument"
                    | "BadDigest"
                    | "InvalidDigest"
            ) || *status == StatusCode::NOT_IMPLEMENTED
                || *status == StatusCode::METHOD_NOT_ALLOWED
        }
        S3Error::Response { .. } => true,
        _ => false,
    }
}

fn tls_hint(msg: String) -> String {
    if msg.contains("certificate") || msg.contains("UnknownIssuer") {
        format!(
            "{msg} (the server's TLS certificate is not trusted: install its CA on this machine, or set skipSSLVerify: true in the Profile)"
        )
    } else {
        msg
    }
}

fn tls_config(https: bool, skip_verify: bool) -> Result<rustls::ClientConfig, S3Error> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| S3Error::Config(format!("TLS set-up: {e}")))?;
    let cfg = if skip_verify {
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(NoVerify(provider)))
            .with_no_client_auth()
    } else if https {
        use hyper_rustls::ConfigBuilderExt as _;
        builder
            .with_native_roots()
            .map_err(|e| {
                S3Error::Config(format!(
                    "TLS set-up: cannot load this machine's root certificates ({e}); install CA certificates or set skipSSLVerify: true in the Profile"
                ))
            })?
            .with_no_client_auth()
    } else {
        builder
            .with_root_certificates(rustls::RootCertStore::empty())
            .with_no_client_auth()
    };
    Ok(cfg)
}

/// `skipSSLVerify`: any certificate, any name (signatures still checked).
#[derive(Debug)]
struct NoVerify(Arc<rustls::crypto::CryptoProvider>);

impl rustls::client::danger::ServerCertVerifier for NoVerify {
    fn verify_server_cert(
        &self,
        _end_entity: &rustls::pki_types::CertificateDer<'_>,
        _intermediates: &[rustls::pki_types::CertificateDer<'_>],
        _server_name: &rustls::pki_types::ServerName<'_>,
        _ocsp_response: &[u8],
        _now: rustls::pki_types::UnixTime,
    ) -> Result<rustls::client::danger::ServerCertVerified, rustls::Error> {
        Ok(rustls::client::danger::ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &rustls::pki_types::CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &rustls::pki_types::CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

// ---------------------------------------------------------------------------
// Profile
// ---------------------------------------------------------------------------

/// An s3Compliant Profile (`.Profile` template parameter), ready to connect.
#[derive(Debug, Clone)]
pub struct S3Profile {
    pub bucket: String,
    /// `location.prefix` (may be empty).
    pub prefix: String,
    pub config: Config,
}

/// The Profile from the template parameters (`params["Profile"]`), checked
/// by [`Profile::from_params`] (Kanister's `ValidateProfile`, same texts),
/// then made an S3 connection (Kanister's `getAWSSecret`): credential
/// `keyPair`, or `secret` of type `secrets.kanister.io/aws` without a `role`.
pub fn profile_from_params(params: &Value) -> Result<S3Profile, ProfileError> {
    from_profile(&Profile::from_params(params)?)
}

/// An s3Compliant [`Profile`] as an S3 connection.
pub fn from_profile(p: &Profile) -> Result<S3Profile, ProfileError> {
    let l = &p.location;
    if l.type_ != profile::LOCATION_S3 {
        return Err(ProfileError::NotS3(l.type_.clone()));
    }
    let credentials = match &p.credential {
        Credential::KeyPair { id, secret } => Credentials {
            access_key_id: id.clone(),
            secret_access_key: secret.clone(),
            session_token: None,
        },
        Credential::Secret { type_, data } if type_ == profile::AWS_SECRET_TYPE => {
            let get = |k: &str| data.get(k).cloned().unwrap_or_default();
            if !get(profile::AWS_ROLE_KEY).is_empty() {
                return Err(ProfileError::AssumeRole);
            }
            let token = get(profile::AWS_SESSION_TOKEN_KEY);
            Credentials {
                access_key_id: get(profile::AWS_ACCESS_KEY_ID_KEY),
                secret_access_key: get(profile::AWS_SECRET_ACCESS_KEY_KEY),
                session_token: (!token.is_empty()).then_some(token),
            }
        }
        Credential::Secret { type_, .. } => return Err(ProfileError::S3SecretType(type_.clone())),
        Credential::Kopia => return Err(ProfileError::S3Kopia),
    };
    if l.bucket.is_empty() {
        return Err(ProfileError::NoBucket);
    }
    Ok(S3Profile {
        bucket: l.bucket.clone(),
        prefix: l.prefix.clone(),
        config: Config {
            endpoint: l.endpoint.clone(),
            region: l.region.clone(),
            credentials,
            skip_ssl_verify: p.skip_ssl_verify,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn unhex(s: &str) -> Vec<u8> {
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    #[test]
    fn hmac_matches_rfc_4231() {
        let c1 = hmac_sha256(&[0x0b; 20], b"Hi There");
        assert_eq!(
            hex(&c1),
            "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7"
        );
        let c2 = hmac_sha256(b"Jefe", b"what do ya want for nothing?");
        assert_eq!(
            hex(&c2),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
        // Key longer than the block: hashed first.
        let c6 = hmac_sha256(
            &[0xaa; 131],
            b"Test Using Larger Than Block-Size Key - Hash Key First",
        );
        assert_eq!(
            hex(&c6),
            "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"
        );
        assert_eq!(unhex("0aff"), vec![10, 255]);
    }

    fn suite_creds() -> Credentials {
        Credentials {
            access_key_id: "AKIDEXAMPLE".into(),
            secret_access_key: "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY".into(),
            session_token: None,
        }
    }

    fn h(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    /// AWS Signature Version 4 test suite (service "service", 20150830T123600Z).
    #[test]
    fn signer_matches_the_aws_sigv4_test_suite() {
        const DATE: &str = "20150830T123600Z";
        let headers = h(&[("Host", "example.amazonaws.com"), ("X-Amz-Date", DATE)]);
        let sign = |method: &str, path: &str, query: &str| {
            authorization(
                &suite_creds(),
                "us-east-1",
                "service",
                DATE,
                &SignInput {
                    method,
                    path,
                    query,
                    headers: &headers,
                    payload_hash: EMPTY_SHA256,
                },
            )
        };
        // get-vanilla, step by step.
        let req = SignInput {
            method: "GET",
            path: "/",
            query: "",
            headers: &headers,
            payload_hash: EMPTY_SHA256,
        };
        let (creq, signed) = canonical_request(&req);
        assert_eq!(
            creq,
            "GET\n/\n\nhost:example.amazonaws.com\nx-amz-date:20150830T123600Z\n\nhost;x-amz-date\ne3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
        assert_eq!(signed, "host;x-amz-date");
        let sc = scope(DATE, "us-east-1", "service");
        assert_eq!(sc, "20150830/us-east-1/service/aws4_request");
        assert_eq!(
            string_to_sign(DATE, &sc, &creq),
            "AWS4-HMAC-SHA256\n20150830T123600Z\n20150830/us-east-1/service/aws4_request\nbb579772317eb040ac9ed261061d46c1f17a8133879d6129b6e1c25292927e63"
        );
        let prefix = "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, SignedHeaders=host;x-amz-date, Signature=";
        assert_eq!(
            sign("GET", "/", ""),
            format!("{prefix}5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31")
        );
        // get-vanilla-query-order-key-case: the query is sorted.
        let q = canonical_query(&[("Param2", "value2"), ("Param1", "value1")]);
        assert_eq!(q, "Param1=value1&Param2=value2");
        assert_eq!(
            sign("GET", "/", &q),
            format!("{prefix}b97d918cfa904a5beff61c982a1b6f458b799221646efd99d3219ec94cdf2500")
        );
        // get-utf8: the path is percent-encoded once.
        let p = uri_encode("/\u{1234}", true);
        assert_eq!(p, "/%E1%88%B4");
        assert_eq!(
            sign("GET", &p, ""),
            format!("{prefix}8318018e0b0f223aa2bbf98705b62bb787dc9c0e678f255a891fd03141be5d85")
        );
        // post-vanilla.
        assert_eq!(
            sign("POST", "/", ""),
            format!("{prefix}5da7c1a2acd57cee7505fc6676e4e544621c30862966e37dddb68e92efbe5d6b")
        );
    }

    /// The S3 examples of "Signature Calculations for the Authorization
    /// Header" (examplebucket, 20130524T000000Z).
    #[test]
    fn signer_matches_the_s3_documentation_examples() {
        const DATE: &str = "20130524T000000Z";
        let creds = Credentials {
            access_key_id: "AKIAIOSFODNN7EXAMPLE".into(),
            secret_access_key: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY".into(),
            session_token: None,
        };
        let base = [
            ("Host", "examplebucket.s3.amazonaws.com"),
            ("x-amz-content-sha256", EMPTY_SHA256),
            ("x-amz-date", DATE),
        ];
        let sig = |path: &str, query: &str, extra: &[(&str, &str)]| {
            let mut all = h(&base);
            all.extend(h(extra));
            let a = authorization(
                &creds,
                "us-east-1",
                "s3",
                DATE,
                &SignInput {
                    method: "GET",
                    path,
                    query,
                    headers: &all,
                    payload_hash: EMPTY_SHA256,
                },
            );
            a.rsplit("Signature=").next().unwrap().to_string()
        };
        // GET Object with a Range header.
        assert_eq!(
            sig("/test.txt", "", &[("Range", "bytes=0-9")]),
            "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41"
        );
        // GET Bucket lifecycle: a parameter without a value.
        assert_eq!(
            sig("/", &canonical_query(&[("lifecycle", "")]), &[]),
            "fea454ca298b7da1c68078a5d1bdbfbbe0d65c699e0f91ac7a200a0136783543"
        );
        // GET Bucket (List Objects).
        assert_eq!(
            sig(
                "/",
                &canonical_query(&[("prefix", "J"), ("max-keys", "2")]),
                &[]
            ),
            "34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7"
        );
        // The credential never shows in Debug output.
        assert!(!format!("{creds:?}").contains("EXAMPLEKEY"));
    }

    #[test]
    fn encoding_keeps_only_unreserved_characters() {
        assert_eq!(uri_encode("a-b_c.d~e09AZ", false), "a-b_c.d~e09AZ");
        assert_eq!(uri_encode("a b/c+d=é*", false), "a%20b%2Fc%2Bd%3D%C3%A9%2A");
        assert_eq!(uri_encode("dir/a b.txt", true), "dir/a%20b.txt");
        assert_eq!(
            canonical_query(&[
                ("prefix", "a/b c"),
                ("list-type", "2"),
                ("continuation-token", "x=")
            ]),
            "continuation-token=x%3D&list-type=2&prefix=a%2Fb%20c"
        );
        // Header values: whitespace runs become one space, names lower case.
        let hs = h(&[("X-Amz-Meta-A", "  one   two "), ("Host", "h")]);
        let (creq, signed) = canonical_request(&SignInput {
            method: "PUT",
            path: "/",
            query: "",
            headers: &hs,
            payload_hash: "UNSIGNED-PAYLOAD",
        });
        assert!(creq.contains("host:h\nx-amz-meta-a:one two\n"), "{creq}");
        assert_eq!(signed, "host;x-amz-meta-a");
    }

    #[test]
    fn list_pages_are_parsed_with_entities_and_tokens() {
        let page1 = r#"<?xml version="1.0" encoding="UTF-8"?>
<ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">
  <Name>bucket</Name><Prefix>time-log/</Prefix><KeyCount>3</KeyCount><MaxKeys>3</MaxKeys>
  <IsTruncated>true</IsTruncated>
  <NextContinuationToken>1ueGcxLPRx1Tr/XYExHnhbYLgveDs2J/wm36Hy4vbOwM=</NextContinuationToken>
  <Contents><Key>time-log/a &amp; b.txt</Key><LastModified>2026-01-01T00:00:00.000Z</LastModified>
    <ETag>&quot;d41d8cd98f00b204e9800998ecf8427e&quot;</ETag><Size>0</Size><StorageClass>STANDARD</StorageClass></Contents>
  <Contents><Key>time-log/&lt;x&gt;&#233;&#x263A;</Key><Size>1</Size></Contents>
  <Contents>
    <Key>time-log/sub/c</Key><Owner><ID>x</ID></Owner>
  </Contents>
</ListBucketResult>"#;
        let p = parse_list_page(page1).unwrap();
        assert_eq!(
            p.keys,
            vec!["time-log/a & b.txt", "time-log/<x>é☺", "time-log/sub/c"]
        );
        assert!(p.is_truncated);
        assert_eq!(
            p.next_continuation_token.as_deref(),
            Some("1ueGcxLPRx1Tr/XYExHnhbYLgveDs2J/wm36Hy4vbOwM=")
        );
        let last = r#"<ListBucketResult><Name>b</Name><KeyCount>1</KeyCount>
            <IsTruncated>false</IsTruncated><Contents><Key>k</Key></Contents></ListBucketResult>"#;
        let p = parse_list_page(last).unwrap();
        assert_eq!(p.keys, vec!["k"]);
        assert!(!p.is_truncated);
        assert_eq!(p.next_continuation_token, None);
        // Empty listing.
        let empty = "<ListBucketResult><Name>b</Name><KeyCount>0</KeyCount><IsTruncated>false</IsTruncated></ListBucketResult>";
        assert_eq!(parse_list_page(empty).unwrap(), ListPage::default());
        // Not a listing, or a broken one.
        assert!(
            parse_list_page("<html>proxy error</html>")
                .unwrap_err()
                .contains("ListBucketResult")
        );
        assert!(
            parse_list_page(
                "<ListBucketResult><Contents><Size>1</Size></Contents></ListBucketResult>"
            )
            .unwrap_err()
            .contains("no <Key>")
        );
        assert!(
            parse_list_page(
                "<ListBucketResult><IsTruncated>maybe</IsTruncated></ListBucketResult>"
            )
            .is_err()
        );
    }

    #[test]
    fn elements_do_not_confuse_prefixes_of_names() {
        let x = "<KeyCount>2</KeyCount><Key a=\"1\">x</Key><Key/><Keys>no</Keys><Key>y</Key>";
        assert_eq!(elements(x, "Key"), vec!["x", "", "y"]);
        assert_eq!(
            xml_unescape("a &amp;amp; &bogus; & &#65;"),
            "a &amp; &bogus; & A"
        );
    }

    #[test]
    fn error_documents_become_clear_errors() {
        let body = r#"<?xml version="1.0" encoding="UTF-8"?>
<Error><Code>NoSuchBucket</Code><Message>The specified bucket does not exist</Message>
<BucketName>missing-bucket</BucketName><RequestId>4442587FB7D0A2F9</RequestId></Error>"#;
        let se = parse_error(StatusCode::NOT_FOUND, body);
        assert_eq!(se.code, "NoSuchBucket");
        assert_eq!(se.bucket.as_deref(), Some("missing-bucket"));
        assert_eq!(se.request_id.as_deref(), Some("4442587FB7D0A2F9"));
        let e = S3Error::Service {
            op: "ListObjectsV2",
            url: "http://127.0.0.1:9000/missing-bucket?list-type=2".into(),
            status: StatusCode::NOT_FOUND,
            error: Box::new(se),
            bucket: "missing-bucket".into(),
            endpoint: "http://127.0.0.1:9000".into(),
        };
        let m = e.to_string();
        assert!(
            m.starts_with("ListObjectsV2 on http://127.0.0.1:9000/missing-bucket?list-type=2: 404 NoSuchBucket: The specified bucket does not exist"),
            "{m}"
        );
        assert!(m.contains("check the Profile's location.bucket"), "{m}");
        assert_eq!(e.code(), Some("NoSuchBucket"));

        let wrong_key = parse_error(
            StatusCode::FORBIDDEN,
            "<Error><Code>InvalidAccessKeyId</Code><Message>The AWS Access Key Id you provided does not exist in our records.</Message></Error>",
        );
        assert!(hint(&wrong_key, "ListObjectsV2", "b", "e").contains("access key ID"));
        let wrong_secret = parse_error(
            StatusCode::FORBIDDEN,
            "<Error><Code>SignatureDoesNotMatch</Code><Message>The request signature we calculated does not match</Message></Error>",
        );
        assert!(hint(&wrong_secret, "ListObjectsV2", "b", "e").contains("secret access key"));
        let region = parse_error(
            StatusCode::BAD_REQUEST,
            "<Error><Code>AuthorizationHeaderMalformed</Code><Message>the region 'us-east-1' is wrong; expecting 'eu-west-1'</Message><Region>eu-west-1</Region></Error>",
        );
        assert!(hint(&region, "ListObjectsV2", "b", "e").contains("location.region to eu-west-1"));
        // No body (HEAD, proxies): the status names it.
        let bare = parse_error(StatusCode::FORBIDDEN, "");
        assert_eq!(bare.code, "Forbidden");
        let html = parse_error(StatusCode::BAD_GATEWAY, "<html>bad gateway</html>");
        assert_eq!(html.code, "HTTP502");
        assert!(html.message.contains("bad gateway"));
    }

    #[test]
    fn delete_bodies_and_results() {
        let body = delete_request_body(&["a&b".into(), "c<d>".into(), "t\u{1}".into()]);
        assert!(body.contains("<Quiet>true</Quiet>"));
        assert!(
            body.contains(
                "<Object><Key>a&amp;b</Key></Object><Object><Key>c&lt;d&gt;</Key></Object>"
            )
        );
        assert!(body.contains("<Key>t&#x1;</Key>"));
        let ok = parse_delete_result("<DeleteResult></DeleteResult>").unwrap();
        assert!(ok.is_empty());
        let failed = parse_delete_result(
            "<DeleteResult><Deleted><Key>x</Key></Deleted><Error><Key>y</Key><Code>AccessDenied</Code><Message>Access Denied</Message></Error></DeleteResult>",
        )
        .unwrap();
        assert_eq!(
            failed,
            vec![DeleteFailure {
                key: "y".into(),
                code: "AccessDenied".into(),
                message: "Access Denied".into()
            }]
        );
        assert!(parse_delete_result("<Error><Code>x</Code></Error>").is_err());
    }

    #[test]
    fn endpoints_are_checked() {
        let cfg = |e: &str| Config {
            endpoint: e.into(),
            region: String::new(),
            credentials: suite_creds(),
            skip_ssl_verify: false,
        };
        let c = S3Client::new(&cfg("http://127.0.0.1:9000/")).unwrap();
        assert_eq!(c.endpoint(), "http://127.0.0.1:9000");
        assert_eq!(c.region(), "us-east-1");
        assert_eq!(c.path("b", Some("x y/z")), "/b/x%20y/z");
        let c = S3Client::new(&cfg("http://host:9000/minio")).unwrap();
        assert_eq!(c.path("b", None), "/minio/b");
        let e = S3Client::new(&cfg("ftp://host")).err().unwrap().to_string();
        assert!(e.contains("only http and https"), "{e}");
        let e = S3Client::new(&cfg("http://")).err().unwrap().to_string();
        assert!(e.contains("location.endpoint"), "{e}");
        let e = S3Client::new(&cfg("http://h?x=1"))
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("query string"), "{e}");
    }

    #[test]
    fn the_buckets_region_is_learned_once() {
        let cfg = |e: &str| Config {
            endpoint: e.into(),
            region: String::new(),
            credentials: suite_creds(),
            skip_ssl_verify: false,
        };
        let wrong = ServiceError {
            code: "AuthorizationHeaderMalformed".into(),
            region: Some("eu-west-1".into()),
            ..ServiceError::default()
        };
        // AWS without an endpoint: the host follows the region.
        let c = S3Client::new(&cfg("")).unwrap();
        assert_eq!(c.endpoint(), "https://s3.us-east-1.amazonaws.com");
        assert!(c.learn_region(StatusCode::BAD_REQUEST, &wrong, None));
        assert_eq!(c.region(), "eu-west-1");
        assert_eq!(c.endpoint(), "https://s3.eu-west-1.amazonaws.com");
        assert!(!c.learn_region(StatusCode::BAD_REQUEST, &wrong, None));
        // A 301 names the region in a header.
        let moved = ServiceError {
            code: "PermanentRedirect".into(),
            ..ServiceError::default()
        };
        assert!(c.learn_region(StatusCode::MOVED_PERMANENTLY, &moved, Some("ap-south-1")));
        assert_eq!(c.endpoint(), "https://s3.ap-south-1.amazonaws.com");
        // A custom endpoint keeps its host; other errors teach nothing.
        let c = S3Client::new(&cfg("http://minio:9000")).unwrap();
        assert!(c.learn_region(StatusCode::BAD_REQUEST, &wrong, None));
        assert_eq!(
            (c.region().as_str(), c.endpoint().as_str()),
            ("eu-west-1", "http://minio:9000")
        );
        let denied = ServiceError {
            code: "AccessDenied".into(),
            region: Some("x".into()),
            ..ServiceError::default()
        };
        assert!(!c.learn_region(StatusCode::FORBIDDEN, &denied, None));
    }

    fn profile(cred: Value, location: Value) -> Value {
        json!({"Profile": {"Location": location, "Credential": cred, "SkipSSLVerify": true}})
    }

    #[test]
    fn profiles_are_validated_like_kanister() {
        let loc = json!({"Type": "s3Compliant", "Bucket": "b", "Endpoint": "http://e:1", "Prefix": "p", "Region": ""});
        let kp = json!({"Type": "keyPair", "KeyPair": {"ID": "id", "Secret": "s"}});
        let p = profile_from_params(&profile(kp.clone(), loc.clone())).unwrap();
        assert_eq!(p.bucket, "b");
        assert_eq!(p.prefix, "p");
        assert!(p.config.skip_ssl_verify);
        assert_eq!(p.config.credentials.access_key_id, "id");

        let err = |v: Value| profile_from_params(&v).unwrap_err().to_string();
        assert!(err(json!({})).starts_with("Profile must be non-nil"));
        assert_eq!(
            err(profile(
                json!({"Type": "keyPair", "KeyPair": {"ID": "", "Secret": "s"}}),
                loc.clone()
            )),
            "Access key ID is not set"
        );
        assert!(
            err(profile(kp.clone(), json!({"Type": "gcs", "Bucket": "b"})))
                .contains("location type gcs is not supported")
        );
        assert_eq!(
            err(profile(kp.clone(), json!({"Type": "ftp", "Bucket": "b"}))),
            "Location type not supported"
        );
        assert!(
            err(profile(kp, json!({"Type": "s3Compliant"}))).starts_with("Bucket not specified")
        );

        // Credential type secret: a Kubernetes Secret with the AWS keys.
        let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
        let sec = json!({"Type": "secret", "Secret": {"type": "secrets.kanister.io/aws", "metadata": {"name": "aws"}, "data": {
            "aws_access_key_id": b64("AK"), "aws_secret_access_key": b64("SK"), "aws_session_token": b64("T")}}});
        let p = profile_from_params(&profile(sec, loc.clone())).unwrap();
        assert_eq!(p.config.credentials.secret_access_key, "SK");
        assert_eq!(p.config.credentials.session_token.as_deref(), Some("T"));
        let role = json!({"Type": "secret", "Secret": {"type": "secrets.kanister.io/aws", "metadata": {"name": "aws"}, "data": {
            "aws_access_key_id": b64("AK"), "aws_secret_access_key": b64("SK"), "role": b64("arn:x")}}});
        assert!(err(profile(role, loc)).contains("IAM role"));
    }
}
