//! A small Azure Blob Storage client for what an `azure` Profile is used for outside restic:
//! kando's `location push|pull|delete` and LocationDelete. Put Blob (one request) or Put Block +
//! Put Block List for a longer stream, Get Blob read chunk by chunk, List Blobs (prefix and
//! marker), Delete Blob; each request authorized with the storage account's Shared Key
//! ([`sharedkey`]).
//!
//! - HTTP/1.1 through hyper and rustls, the same stack and TLS settings as the S3 client
//!   ([`crate::aws::exchange::http_client`]); `skipSSLVerify` accepts any certificate.
//! - Where the account's Blob service is: [`service_url`] (Azure's public cloud by default, the
//!   other clouds by the Secret's `azure_storage_environment`, or the Profile's
//!   `location.endpoint`).
//! - Error answers are decoded (`<Error><Code>`, or the `x-ms-error-code` header) and worded with
//!   what to check in the Profile ([`error`]); transient failures are tried up to three times.

pub mod client;
pub mod error;
pub mod sharedkey;
pub mod transfer;

pub use client::{AzureClient, Config, service_url};
pub use error::AzureError;
