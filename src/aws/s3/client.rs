//! The S3 client: one endpoint, requests signed by [`crate::aws::sigv4`], sent
//! through hyper and rustls, retried with `backon`; ListObjectsV2,
//! PutObject, DeleteObject, DeleteObjects (streamed transfers are in
//! [`super::transfer`]).

use std::time::Duration;

use backon::{ExponentialBuilder, Retryable as _};
use base64::Engine as _;
use bytes::Bytes;
use http::{Method, StatusCode};

use super::{DEFAULT_REGION, S3Error};
use crate::aws::exchange::{
    self, Answer, Failure, HttpClient, Limits, Request, Signer, http_client, store_endpoint,
};
use crate::aws::sigv4::{Credentials, canonical_query, sha256_hex, uri_encode};
use crate::aws::xml::{self, DeleteFailure, ListPage, ServiceError};

/// Keys per DeleteObjects request (the S3 maximum).
const DELETE_BATCH: usize = 1000;
/// Time one HTTP exchange may take; largest response body read (list pages are well below it).
const LIMITS: Limits = Limits {
    timeout: Duration::from_secs(120),
    max_body: 64 << 20,
};
/// Tries of one exchange when the store or the network fails transiently.
const ATTEMPTS: u32 = 3;

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

/// A successful answer.
pub(super) enum Reply {
    Whole {
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
        let (scheme, authority, base_path) = store_endpoint(
            &endpoint,
            &format!("the Profile's location.endpoint {:?}", cfg.endpoint),
            "http://minio.example:9000",
            &cfg.endpoint,
        )
        .map_err(S3Error::Config)?;
        let client =
            http_client(scheme == "https", cfg.skip_ssl_verify).map_err(S3Error::Config)?;
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

    /// One signed exchange; returns the 2xx headers and body or the decoded error.
    #[allow(clippy::too_many_arguments)]
    pub(super) async fn send(
        &self,
        op: &'static str,
        method: Method,
        bucket: &str,
        key: Option<&str>,
        query: &[(&str, &str)],
        extra: &[(&str, String)],
        body: Bytes,
    ) -> Result<(http::HeaderMap, Bytes), S3Error> {
        let req = Exchange {
            op,
            method,
            bucket,
            key,
            query,
            extra,
        };
        match self.exchange(&req, body, false).await? {
            Reply::Whole { headers, body } => Ok((headers, body)),
            Reply::Open { .. } => unreachable!("not asked to stream"),
        }
    }

    /// One signed exchange, retried on connection errors and 5xx (three
    /// attempts, backing off 200 ms then 800 ms) and once more when the store
    /// names the bucket's region. A 2xx answer is read whole, or with
    /// `stream` returned unread (the timeout then covers only the wait for
    /// its headers).
    pub(super) async fn exchange(
        &self,
        req: &Exchange<'_>,
        body: Bytes,
        stream: bool,
    ) -> Result<Reply, S3Error> {
        let payload_hash = sha256_hex(&body);
        let attempts = || {
            (|| self.attempt(req, &body, &payload_hash, stream))
                .retry(
                    ExponentialBuilder::default()
                        .with_min_delay(Duration::from_millis(200))
                        .with_factor(4.0)
                        .with_max_times(ATTEMPTS as usize - 1),
                )
                .sleep(tokio::time::sleep)
                .when(S3Error::is_transient)
        };
        match attempts().await {
            Err(S3Error::Service { status, error, .. })
                if self.learn_region(status, &error, error.region.as_deref()) =>
            {
                attempts().await
            }
            other => other,
        }
    }

    /// One signed request and its answer: a 2xx [`Reply`], or the error.
    async fn attempt(
        &self,
        req: &Exchange<'_>,
        body: &Bytes,
        payload_hash: &str,
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
        let route = self.route();
        let url = format!("{}://{}{target}", self.scheme, route.authority);
        let mut headers: Vec<(&str, &str)> = vec![("host", &route.authority)];
        headers.extend(extra.iter().map(|(k, v)| (*k, v.as_str())));
        let signer = Signer {
            credentials: &self.credentials,
            region: &route.region,
            service: "s3",
        };
        let request = Request {
            method: method.clone(),
            url: &url,
            headers: &headers,
            body: body.clone(),
            payload_hash,
        };
        let transport = |message: String| S3Error::Transport {
            op,
            url: url.clone(),
            message,
        };
        let answer = exchange::exchange(&self.http, &signer, request, LIMITS, stream)
            .await
            .map_err(|f| match f {
                Failure::Sign(e) => S3Error::Config(format!("{op} on {url}: {e}")),
                Failure::Build(e) => {
                    S3Error::Config(format!("{op}: cannot build the request for {url}: {e}"))
                }
                Failure::Connect(msg) if !msg.contains("skipSSLVerify") => transport(format!(
                    "{msg} (cannot connect to {}: check the Profile's location.endpoint and that the object store is reachable from here)",
                    route.endpoint
                )),
                Failure::Connect(msg) | Failure::Transport(msg) => transport(msg),
            })?;
        let (status, headers, bytes) = match answer {
            Answer::Open(response) => return Ok(Reply::Open { url, response }),
            Answer::Whole {
                status,
                headers,
                body,
            } if !status.is_success() => (status, headers, body),
            Answer::Whole { headers, body, .. } => return Ok(Reply::Whole { headers, body }),
        };
        let mut error = xml::parse_error(status, &String::from_utf8_lossy(&bytes));
        // A 301 names the bucket's region only in this header.
        if let Some(r) = headers
            .get("x-amz-bucket-region")
            .and_then(|v| v.to_str().ok())
        {
            error.region = Some(r.to_string());
        }
        Err(S3Error::Service {
            op,
            url,
            status,
            error: Box::new(error),
            bucket: bucket.to_string(),
            endpoint: route.endpoint,
        })
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
        let op = "ListObjectsV2";
        let (_, body) = self
            .send(op, Method::GET, bucket, None, &q, &[], Bytes::new())
            .await?;
        xml::parse_list_page(&String::from_utf8_lossy(&body)).map_err(|source| S3Error::Document {
            op: "ListObjectsV2",
            url: format!("{}{}", self.endpoint(), self.path(bucket, None)),
            source,
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
        let body = Bytes::from(xml::delete_request_body(keys));
        let checksum = base64::engine::general_purpose::STANDARD
            .encode(ring::digest::digest(&ring::digest::SHA256, &body));
        let extra = [
            ("content-type", "application/xml".to_string()),
            ("x-amz-checksum-sha256", checksum),
            ("x-amz-sdk-checksum-algorithm", "SHA256".to_string()),
        ];
        let query = [("delete", "")];
        let (_, out) = self
            .send(
                "DeleteObjects",
                Method::POST,
                bucket,
                None,
                &query,
                &extra,
                body,
            )
            .await?;
        xml::parse_delete_result(&String::from_utf8_lossy(&out)).map_err(|source| {
            S3Error::Document {
                op: "DeleteObjects",
                url: format!("{}{}?delete", self.endpoint(), self.path(bucket, None)),
                source,
            }
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
        S3Error::Response { .. } | S3Error::Document { .. } => true,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::aws::sigv4::tests::suite_creds;

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
}
