//! One signed request and its answer, as the S3 and RDS clients send it: SigV4 headers added
//! to the request's own, a user agent, one deadline for the answer, a bounded body. Each client
//! words a [`Failure`] its own way and decodes its own error documents; retries are theirs too.

use std::time::{Duration, SystemTime};

use bytes::Bytes;
use http::{HeaderMap, Method, StatusCode};
use http_body_util::{BodyExt, Full, Limited};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;

use super::sigv4::{self, Credentials};
use super::tls::{tls_config, tls_hint};
use crate::kube_error::describe_chain;

pub type HttpClient = Client<hyper_rustls::HttpsConnector<HttpConnector>, Full<Bytes>>;

/// An HTTP/1.1 client for `http://` and `https://` (rustls, see [`tls_config`]); the error is
/// worded for the user.
pub fn http_client(https: bool, skip_verify: bool) -> Result<HttpClient, String> {
    let tls = tls_config(https, skip_verify)?;
    let mut http = HttpConnector::new();
    http.enforce_http(false);
    http.set_connect_timeout(Some(Duration::from_secs(15)));
    let connector = hyper_rustls::HttpsConnectorBuilder::new()
        .with_tls_config(tls)
        .https_or_http()
        .enable_http1()
        .wrap_connector(http);
    Ok(Client::builder(TokioExecutor::new())
        .pool_idle_timeout(Duration::from_secs(30))
        .build(connector))
}

/// The scheme (`http` or `https`) and authority of `endpoint`; `named` words it in the error
/// (`the RDS endpoint "..."`), `example` is a URL that would do.
pub fn endpoint_parts(
    endpoint: &str,
    named: &str,
    example: &str,
) -> Result<(http::Uri, String, String), String> {
    let uri: http::Uri = endpoint
        .parse()
        .map_err(|e| format!("{named} is not a URL ({e}); expected e.g. {example}"))?;
    let scheme = uri.scheme_str().unwrap_or("https").to_ascii_lowercase();
    if scheme != "http" && scheme != "https" {
        return Err(format!(
            "{named} has scheme {scheme:?}; only http and https are supported"
        ));
    }
    let authority = uri
        .authority()
        .filter(|a| !a.host().is_empty())
        .map(|a| a.as_str().to_string())
        .ok_or_else(|| format!("{named} names no host"))?;
    Ok((uri, scheme, authority))
}

/// [`endpoint_parts`] of an object store's URL, made from the Profile's `location.endpoint`
/// `profile_endpoint`, which must not have a query string: the scheme, the authority and the
/// base path.
pub fn store_endpoint(
    url: &str,
    named: &str,
    example: &str,
    profile_endpoint: &str,
) -> Result<(String, String, String), String> {
    let (uri, scheme, authority) = endpoint_parts(url, named, example)?;
    if uri.query().is_some() {
        return Err(format!(
            "the Profile's location.endpoint {profile_endpoint:?} must not have a query string"
        ));
    }
    Ok((
        scheme,
        authority,
        uri.path().trim_end_matches('/').to_string(),
    ))
}

/// Who signs and for which AWS service: `s3` is signed with S3's settings.
pub struct Signer<'a> {
    pub credentials: &'a Credentials,
    pub region: &'a str,
    pub service: &'static str,
}

/// One request: the URL, the headers to sign (with `host`), the body and its SHA-256.
pub struct Request<'a> {
    pub method: Method,
    pub url: &'a str,
    pub headers: &'a [(&'a str, &'a str)],
    pub body: Bytes,
    pub payload_hash: &'a str,
}

/// How long an answer may take and how large a body is read.
#[derive(Clone, Copy)]
pub struct Limits {
    pub timeout: Duration,
    pub max_body: usize,
}

/// An answer: read whole, or (a 2xx when asked to stream) with its body unread.
pub enum Answer {
    Whole {
        status: StatusCode,
        headers: HeaderMap,
        body: Bytes,
    },
    Open(http::Response<hyper::body::Incoming>),
}

/// Why no answer was read.
#[derive(Debug)]
pub enum Failure {
    /// The request could not be signed.
    Sign(String),
    /// The request could not be built.
    Build(String),
    /// No connection (the text has the TLS hint when the certificate was the reason).
    Connect(String),
    /// Any other transport failure: the exchange, reading the body, the deadline.
    Transport(String),
}

impl Failure {
    /// What went wrong, in words.
    pub fn message(self) -> String {
        match self {
            Failure::Sign(m) | Failure::Build(m) | Failure::Connect(m) | Failure::Transport(m) => m,
        }
    }
}

/// An object store's answer worth another try: a server error, but 501, which says the store
/// does not implement the call.
pub fn retryable_status(status: StatusCode) -> bool {
    status.is_server_error() && status != StatusCode::NOT_IMPLEMENTED
}

/// The `Content-Length` a request carries. hyper writes none for an empty body, and S3 answers
/// a PUT or POST without one `411 MissingContentLength` (an empty object, CreateMultipartUpload):
/// those always say their length, 0 included; other methods only a body's (RFC 9110 §8.6).
pub fn content_length(method: &Method, len: usize) -> Option<usize> {
    (len > 0 || *method == Method::PUT || *method == Method::POST).then_some(len)
}

/// Signs `req` and sends it; the deadline covers the whole answer, or with `stream` only the
/// wait for a 2xx answer's headers.
pub async fn exchange(
    http: &HttpClient,
    signer: &Signer<'_>,
    req: Request<'_>,
    limits: Limits,
    stream: bool,
) -> Result<Answer, Failure> {
    let unsigned = sigv4::Request {
        method: req.method.as_str(),
        url: req.url,
        headers: req.headers,
        payload_hash: req.payload_hash,
    };
    let now = SystemTime::now();
    let signed = if signer.service == "s3" {
        sigv4::sign_s3(signer.credentials, signer.region, now, &unsigned)
    } else {
        sigv4::sign_service(
            signer.credentials,
            signer.region,
            signer.service,
            now,
            &unsigned,
        )
    }
    .map_err(|e| Failure::Sign(e.to_string()))?;
    let length = content_length(&req.method, req.body.len());
    let mut rb = http::Request::builder().method(req.method).uri(req.url);
    for (k, v) in req
        .headers
        .iter()
        .copied()
        .chain(signed.iter().map(|(k, v)| (*k, v.as_str())))
    {
        rb = rb.header(k, v);
    }
    rb = rb.header(
        "user-agent",
        concat!("blueprint-operator/", env!("CARGO_PKG_VERSION")),
    );
    if let Some(len) = length {
        rb = rb.header(http::header::CONTENT_LENGTH, len);
    }
    let request = rb
        .body(Full::new(req.body))
        .map_err(|e| Failure::Build(e.to_string()))?;
    send(http, request, limits, stream).await
}

/// Sends a ready request; the deadline covers the whole answer, or with `stream` only the wait
/// for a 2xx answer's headers.
pub async fn send(
    http: &HttpClient,
    request: http::Request<Full<Bytes>>,
    limits: Limits,
    stream: bool,
) -> Result<Answer, Failure> {
    tokio::time::timeout(limits.timeout, async {
        let resp = http.request(request).await.map_err(|e| {
            let msg = tls_hint(describe_chain(&e));
            if e.is_connect() {
                Failure::Connect(msg)
            } else {
                Failure::Transport(msg)
            }
        })?;
        let status = resp.status();
        if stream && status.is_success() {
            return Ok(Answer::Open(resp));
        }
        let headers = resp.headers().clone();
        let body = Limited::new(resp.into_body(), limits.max_body)
            .collect()
            .await
            .map_err(|e| Failure::Transport(format!("reading the response: {e}")))?
            .to_bytes();
        Ok(Answer::Whole {
            status,
            headers,
            body,
        })
    })
    .await
    .unwrap_or_else(|_| {
        Err(Failure::Transport(format!(
            "no answer within {} s",
            limits.timeout.as_secs()
        )))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uploads_always_say_their_length() {
        assert_eq!(content_length(&Method::PUT, 0), Some(0));
        assert_eq!(content_length(&Method::POST, 0), Some(0));
        assert_eq!(content_length(&Method::PUT, 1024), Some(1024));
        assert_eq!(content_length(&Method::POST, 7), Some(7));
        assert_eq!(content_length(&Method::GET, 0), None);
        assert_eq!(content_length(&Method::DELETE, 0), None);
        assert_eq!(content_length(&Method::DELETE, 3), Some(3));
    }
}
