//! A small S3 client for what the controller itself does on a Profile's
//! object store (LocationDelete) and for kando's streams: ListObjectsV2
//! (paginated), PutObject, DeleteObject and DeleteObjects, GetObject and
//! multipart uploads ([`transfer`]), signed with AWS Signature Version 4.
//!
//! - HTTP/1.1 through hyper (the stack kube already uses), `http://` and
//!   `https://` endpoints, TLS with rustls (ring) and the system's root
//!   certificates; `skipSSLVerify` accepts any server certificate ([`crate::aws::tls`]).
//! - Path-style URLs only (`<endpoint>/<bucket>/<key>`), as Kanister's stow
//!   provider uses whenever an endpoint is set; without an endpoint
//!   `https://s3.<region>.amazonaws.com`. Region default `us-east-1`; when
//!   the store answers that the bucket is in another region
//!   (AuthorizationHeaderMalformed / PermanentRedirect naming it), that
//!   region is used from then on (Kanister looks the bucket's region up too).
//! - Signed by AWS's `aws-sigv4` ([`crate::aws::sigv4`]); payloads are signed
//!   (`x-amz-content-sha256` is the body's SHA-256).
//! - DeleteObjects sends `x-amz-checksum-sha256` (AWS accepts it in place of
//!   `Content-MD5`); stores that refuse the batch call (NotImplemented,
//!   MissingContentMD5, ...) get one DeleteObject per key instead.
//! - Documents are read and written with `quick-xml` ([`crate::aws::xml`]); error
//!   responses are decoded (`<Error><Code>`) and worded with what to check in
//!   the Profile ([`error`]); transient failures (5xx, connection errors) are
//!   tried up to three times with `backon` ([`client`]).

pub mod client;
pub mod error;
pub mod transfer;

pub use crate::aws::Credentials;
pub use crate::aws::xml::{DeleteFailure, ListPage, ServiceError};
pub use client::{Config, S3Client};
use client::{Exchange, Reply};
pub use error::S3Error;

/// Region used when the Profile names none.
pub const DEFAULT_REGION: &str = "us-east-1";
