//! A Profile's object store whatever its location type: the Profile made a connection
//! ([`StoreProfile`]) and the few calls kando and LocationDelete make on it ([`StoreClient`]),
//! each going to the S3 client or the Azure Blob client. Errors are the clients' own, boxed:
//! their texts already name the request, the URL and what to check.

use std::future::Future;

use tokio::io::{AsyncRead, AsyncWrite};

use super::azure::{self, AzureProfile};
use super::{S3Profile, delete_path};
use crate::aws::s3::S3Client;
use crate::aws::s3::transfer::ObjectStream;
use crate::azure::AzureClient;
use crate::azure::transfer::BlobStream;
use crate::param::profile::{LOCATION_AZURE, Profile};

/// A client's error, as it words it.
pub type StoreError = Box<dyn std::error::Error + Send + Sync>;

/// A Profile, ready to connect: s3Compliant or azure.
#[derive(Debug, Clone)]
pub enum StoreProfile {
    S3(S3Profile),
    Azure(AzureProfile),
}

impl StoreProfile {
    /// The Profile as a connection of its location type (others: as an s3Compliant one, which
    /// names the type in its error).
    pub fn from_profile(p: &Profile) -> Result<StoreProfile, StoreError> {
        if p.location.type_ == LOCATION_AZURE {
            return Ok(StoreProfile::Azure(azure::from_profile(p)?));
        }
        Ok(StoreProfile::S3(super::from_profile(p)?))
    }

    /// The bucket (S3) or container (Azure).
    pub fn bucket(&self) -> &str {
        match self {
            StoreProfile::S3(p) => &p.bucket,
            StoreProfile::Azure(p) => &p.container,
        }
    }

    /// `location.prefix`.
    pub fn prefix(&self) -> &str {
        match self {
            StoreProfile::S3(p) => &p.prefix,
            StoreProfile::Azure(p) => &p.prefix,
        }
    }
}

/// A client for a [`StoreProfile`].
pub enum StoreClient {
    S3(S3Client),
    Azure(AzureClient),
}

/// An object being read.
pub enum ObjectReader {
    S3(ObjectStream),
    Azure(BlobStream),
}

impl ObjectReader {
    /// The length the store announced.
    pub fn announced_len(&self) -> Option<u64> {
        match self {
            ObjectReader::S3(o) => o.len,
            ObjectReader::Azure(o) => o.len,
        }
    }

    /// Writes the rest of the object to `out`; returns the bytes written.
    pub async fn copy_to<W: AsyncWrite + Unpin>(&mut self, out: &mut W) -> Result<u64, StoreError> {
        Ok(match self {
            ObjectReader::S3(o) => o.copy_to(out).await?,
            ObjectReader::Azure(o) => o.copy_to(out).await?,
        })
    }
}

impl StoreClient {
    pub fn new(profile: &StoreProfile) -> Result<StoreClient, StoreError> {
        Ok(match profile {
            StoreProfile::S3(p) => StoreClient::S3(S3Client::new(&p.config)?),
            StoreProfile::Azure(p) => StoreClient::Azure(AzureClient::new(&p.config)?),
        })
    }

    /// Uploads all of `src` to `key` in bounded memory; nothing appears under the key unless
    /// all of it was uploaded. `cancel` completing stops the upload.
    pub async fn upload<R, C>(
        &self,
        bucket: &str,
        key: &str,
        src: &mut R,
        cancel: C,
    ) -> Result<u64, StoreError>
    where
        R: AsyncRead + Unpin,
        C: Future<Output = String>,
    {
        Ok(match self {
            StoreClient::S3(c) => c.upload(bucket, key, src, cancel).await?,
            StoreClient::Azure(c) => c.upload(bucket, key, src, cancel).await?,
        })
    }

    /// The object at `key`, its body left to read.
    pub async fn get(&self, bucket: &str, key: &str) -> Result<ObjectReader, StoreError> {
        Ok(match self {
            StoreClient::S3(c) => ObjectReader::S3(c.get_object(bucket, key).await?),
            StoreClient::Azure(c) => ObjectReader::Azure(c.get_blob(bucket, key).await?),
        })
    }

    /// Deletes `path` and every key below it; returns how many objects went.
    pub async fn delete_path(&self, bucket: &str, path: &str) -> Result<usize, StoreError> {
        Ok(match self {
            StoreClient::S3(c) => delete_path(c, bucket, path).await?,
            StoreClient::Azure(c) => azure::delete_path(c, bucket, path).await?,
        })
    }
}
