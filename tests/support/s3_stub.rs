//! A small S3 stand-in on 127.0.0.1 that checks AWS Signature V4 of what
//! arrives on the wire (gofakes3 checks none), with its own verifier written
//! from AWS's specification ([`expected_signature`], not the client's signer,
//! which is the `aws-sigv4` crate): every request must be signed
//! with [`GOOD_KEY`]/[`GOOD_SECRET`] for region [`STUB_REGION`], or gets the
//! error S3 sends (InvalidAccessKeyId, SignatureDoesNotMatch,
//! AuthorizationHeaderMalformed naming the region).
//!
//! Signed requests get empty listings and delete results, and a multipart
//! upload flow whose parts can be made to fail or to hang; every request is
//! recorded ([`Stub::log`]) so tests can see e.g. that an upload was aborted.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use axum::body::Body;
use axum::extract::{Request, State};
use axum::response::Response;
use tokio::sync::Notify;

pub const GOOD_KEY: &str = "AKIDSIGCHECK";
pub const GOOD_SECRET: &str = "the-right-secret/with+chars";
/// The region of the stand-in's bucket.
pub const STUB_REGION: &str = "eu-central-1";

/// What the stub does and saw.
#[derive(Default)]
pub struct Stub {
    /// `UploadPart` of this number answers 403 AccessDenied.
    pub fail_part: Option<u32>,
    /// `UploadPart` of this number never answers.
    pub hang_part: Option<u32>,
    /// Requests of this method are answered with this status, error code and message (as a
    /// strict store refuses a malformed request).
    pub refuse: Option<(&'static str, u16, &'static str, &'static str)>,
    /// `(method, query)` of every signed request, in order of arrival.
    pub log: Mutex<Vec<(String, String)>>,
    /// Signalled on every request.
    pub arrived: Notify,
}

impl Stub {
    pub fn log(&self) -> Vec<(String, String)> {
        self.log.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Waits until a logged request satisfies `f` (bounded by support::WAIT).
    pub async fn wait_for(&self, what: &str, f: impl Fn(&(String, String)) -> bool) {
        let found = tokio::time::timeout(super::WAIT, async {
            loop {
                let notified = self.arrived.notified();
                if self.log().iter().any(&f) {
                    return;
                }
                notified.await;
            }
        })
        .await;
        assert!(
            found.is_ok(),
            "the stub never saw {what}; it saw {:?}",
            self.log()
        );
    }
}

/// Serves `stub` on 127.0.0.1 until the returned task is aborted.
pub async fn serve(stub: Arc<Stub>) -> (SocketAddr, tokio::task::JoinHandle<()>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind the S3 stub");
    let addr = listener.local_addr().expect("stub address");
    let app = router(stub);
    let task = tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    (addr, task)
}

pub fn router(stub: Arc<Stub>) -> axum::Router {
    axum::Router::new().fallback(handle).with_state(stub)
}

fn pct_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let hex = (b[i] == b'%' && i + 2 < b.len())
            .then(|| std::str::from_utf8(&b[i + 1..i + 3]).ok())
            .flatten()
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match hex {
            Some(v) => {
                out.push(v);
                i += 3;
            }
            None => {
                out.push(b[i]);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn s3_error(status: u16, code: &str, msg: &str) -> Response {
    Response::builder()
        .status(status)
        .header("content-type", "application/xml")
        .body(Body::from(format!(
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?><Error><Code>{code}</Code><Message>{msg}</Message><RequestId>stub</RequestId></Error>"
        )))
        .expect("response")
}

fn ok(body: impl Into<Body>) -> Response {
    Response::builder()
        .status(200)
        .body(body.into())
        .expect("response")
}

/// Checks the request's signature against [`GOOD_KEY`]/[`GOOD_SECRET`]
/// from what was received, then answers as S3 would.
async fn handle(State(stub): State<Arc<Stub>>, req: Request) -> Response {
    let (parts, body) = req.into_parts();
    let body = axum::body::to_bytes(body, 64 << 20)
        .await
        .unwrap_or_default();
    if let Some(refused) = check_signature(&parts, &body) {
        return refused;
    }
    let query = parts.uri.query().unwrap_or("").to_string();
    let method = parts.method.to_string();
    stub.log
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .push((method.clone(), query.clone()));
    stub.arrived.notify_waiters();
    let param = |name: &str| {
        query.split('&').find_map(|kv| {
            let (k, v) = kv.split_once('=').unwrap_or((kv, ""));
            (k == name).then(|| pct_decode(v))
        })
    };
    if let Some((m, status, code, message)) = stub.refuse
        && m == method
    {
        return s3_error(status, code, message);
    }
    match method.as_str() {
        "POST" if param("uploads").is_some() => ok(
            "<InitiateMultipartUploadResult><Bucket>b</Bucket><Key>k</Key><UploadId>stub-upload</UploadId></InitiateMultipartUploadResult>",
        ),
        "POST" if param("uploadId").is_some() => ok(
            "<CompleteMultipartUploadResult><ETag>\"done-2\"</ETag></CompleteMultipartUploadResult>",
        ),
        "POST" => ok("<DeleteResult></DeleteResult>"),
        "PUT" => {
            let n: Option<u32> = param("partNumber").and_then(|n| n.parse().ok());
            if n.is_some() && n == stub.fail_part {
                return s3_error(403, "AccessDenied", "Access Denied");
            }
            if n.is_some() && n == stub.hang_part {
                std::future::pending::<()>().await;
            }
            Response::builder()
                .status(200)
                .header("etag", format!("\"etag-{}\"", n.unwrap_or(0)))
                .body(Body::empty())
                .expect("response")
        }
        "DELETE" => Response::builder()
            .status(204)
            .body(Body::empty())
            .expect("response"),
        _ if param("list-type").is_some() => ok(
            "<ListBucketResult><Name>b</Name><KeyCount>0</KeyCount><IsTruncated>false</IsTruncated></ListBucketResult>",
        ),
        _ => ok("stub object"),
    }
}

/// `Some(refusal)` when the signature is not right.
fn check_signature(parts: &http::request::Parts, body: &[u8]) -> Option<Response> {
    let hdr = |n: &str| {
        parts
            .headers
            .get(n)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_string()
    };
    let auth = hdr("authorization");
    let field = |name: &str| {
        auth.split([',', ' '])
            .find_map(|p| p.trim().strip_prefix(&format!("{name}=")))
            .unwrap_or("")
            .to_string()
    };
    let credential = field("Credential");
    let signed_headers = field("SignedHeaders");
    let signature = field("Signature");
    let mut cred = credential.splitn(2, '/');
    let key_id = cred.next().unwrap_or("");
    let scope = cred.next().unwrap_or("");
    if key_id != GOOD_KEY {
        return Some(s3_error(
            403,
            "InvalidAccessKeyId",
            "The AWS Access Key Id you provided does not exist in our records.",
        ));
    }
    let payload_hash = hdr("x-amz-content-sha256");
    if payload_hash != hex(ring::digest::digest(&ring::digest::SHA256, body).as_ref()) {
        return Some(s3_error(
            400,
            "XAmzContentSHA256Mismatch",
            "payload hash differs",
        ));
    }
    let pairs: Vec<(String, String)> = parts
        .uri
        .query()
        .unwrap_or("")
        .split('&')
        .filter(|s| !s.is_empty())
        .map(|kv| {
            let (k, v) = kv.split_once('=').unwrap_or((kv, ""));
            (pct_decode(k), pct_decode(v))
        })
        .collect();
    let refs: Vec<(&str, &str)> = pairs
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    let headers: Vec<(String, String)> = signed_headers
        .split(';')
        .map(|h| (h.to_string(), hdr(h)))
        .collect();
    let amz_date = hdr("x-amz-date");
    let region = scope.split('/').nth(1).unwrap_or("");
    if region != STUB_REGION {
        return Some(Response::builder()
            .status(400)
            .body(Body::from(format!(
                "<Error><Code>AuthorizationHeaderMalformed</Code><Message>the region '{region}' is wrong; expecting '{STUB_REGION}'</Message><Region>{STUB_REGION}</Region></Error>"
            )))
            .expect("response"));
    }
    let expected = expected_signature(
        GOOD_SECRET,
        &amz_date,
        scope,
        &SignedRequest {
            method: parts.method.as_str(),
            path: parts.uri.path(),
            query: &refs,
            headers: &headers,
            payload_hash: &payload_hash,
        },
    );
    if expected != signature || !signed_headers.contains("host") {
        return Some(s3_error(
            403,
            "SignatureDoesNotMatch",
            "The request signature we calculated does not match the signature you provided.",
        ));
    }
    None
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// RFC 3986 encoding of SigV4: all but `A-Za-z0-9-._~` as `%XX`.
fn sigv4_encode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// What a signature covers, as received.
pub struct SignedRequest<'a> {
    pub method: &'a str,
    /// The path as sent (S3: encoded once, not normalized).
    pub path: &'a str,
    /// Decoded query parameters.
    pub query: &'a [(&'a str, &'a str)],
    /// The signed headers (name as listed in SignedHeaders, value as received).
    pub headers: &'a [(String, String)],
    pub payload_hash: &'a str,
}

/// The hex signature AWS would compute for `req` (Signature Version 4,
/// "Create a signed AWS API request" in the IAM user guide), with `scope`
/// `<date>/<region>/<service>/aws4_request`.
pub fn expected_signature(
    secret: &str,
    amz_date: &str,
    scope: &str,
    req: &SignedRequest,
) -> String {
    let mut query: Vec<(String, String)> = req
        .query
        .iter()
        .map(|(k, v)| (sigv4_encode(k), sigv4_encode(v)))
        .collect();
    query.sort();
    let query: Vec<String> = query.iter().map(|(k, v)| format!("{k}={v}")).collect();
    let mut headers: Vec<(String, String)> = req
        .headers
        .iter()
        .map(|(k, v)| {
            let v = v.split_whitespace().collect::<Vec<_>>().join(" ");
            (k.to_ascii_lowercase(), v)
        })
        .collect();
    headers.sort();
    let canonical_headers: String = headers.iter().map(|(k, v)| format!("{k}:{v}\n")).collect();
    let signed: Vec<&str> = headers.iter().map(|(k, _)| k.as_str()).collect();
    let canonical_request = format!(
        "{}\n{}\n{}\n{}\n{}\n{}",
        req.method,
        req.path,
        query.join("&"),
        canonical_headers,
        signed.join(";"),
        req.payload_hash
    );
    let string_to_sign = format!(
        "AWS4-HMAC-SHA256\n{amz_date}\n{scope}\n{}",
        hex(ring::digest::digest(&ring::digest::SHA256, canonical_request.as_bytes()).as_ref())
    );
    let hmac = |key: &[u8], data: &str| {
        ring::hmac::sign(
            &ring::hmac::Key::new(ring::hmac::HMAC_SHA256, key),
            data.as_bytes(),
        )
    };
    let mut key = hmac(
        format!("AWS4{secret}").as_bytes(),
        scope.split('/').next().unwrap_or(""),
    );
    for part in scope.split('/').skip(1) {
        key = hmac(key.as_ref(), part);
    }
    hex(hmac(key.as_ref(), &string_to_sign).as_ref())
}
