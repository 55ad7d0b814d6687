//! AWS's wire protocol as the S3 and RDS clients speak it: SigV4 signing by AWS's `aws-sigv4`
//! ([`sigv4`]), rustls with the system roots or skipSSLVerify ([`tls`]), the XML documents
//! ([`xml`]), the one signed request exchange both clients make ([`exchange`]), and the
//! download every object store client (S3, GCS, Azure) returns ([`download`]) and the upload
//! they all make ([`upload`]).

pub mod download;
pub mod exchange;
pub mod rds;
pub mod s3;
pub mod sigv4;
pub(crate) mod tls;
pub mod upload;
pub mod xml;

pub use sigv4::Credentials;
