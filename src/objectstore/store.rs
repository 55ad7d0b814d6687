//! A Profile's object store whatever its location type: the Profile made a connection
//! ([`StoreProfile`]) and the few calls kando and LocationDelete make on it ([`StoreClient`]),
//! each going to the S3 client, the GCS client or the Azure Blob client. Errors are the clients' own, boxed:
//! their texts already name the request, the URL and what to check.

use std::future::Future;

use tokio::io::AsyncRead;

use super::azure::{self, AzureProfile};
use super::{S3Profile, delete_path};
use crate::aws::download::Download;
use crate::aws::s3::S3Client;
use crate::aws::upload::{Upload, upload};
use crate::azure::AzureClient;
use crate::gcs::{self, GcsClient, GcsProfile};
use crate::param::profile::{LOCATION_AZURE, LOCATION_GCS, Profile};

/// A client's error, as it words it.
pub type StoreError = Box<dyn std::error::Error + Send + Sync>;

/// A Profile, ready to connect: s3Compliant, gcs or azure.
#[derive(Debug, Clone)]
pub enum StoreProfile {
    S3(S3Profile),
    Gcs(GcsProfile),
    Azure(AzureProfile),
}

impl StoreProfile {
    /// The Profile as a connection of its location type (others: as an s3Compliant one, which
    /// names the type in its error).
    pub fn from_profile(p: &Profile) -> Result<StoreProfile, StoreError> {
        Ok(match p.location.type_.as_str() {
            LOCATION_GCS => StoreProfile::Gcs(gcs::from_profile(p)?),
            LOCATION_AZURE => StoreProfile::Azure(azure::from_profile(p)?),
            _ => StoreProfile::S3(super::from_profile(p)?),
        })
    }

    /// The bucket (S3, GCS) or container (Azure).
    pub fn bucket(&self) -> &str {
        match self {
            StoreProfile::S3(p) => &p.bucket,
            StoreProfile::Gcs(p) => &p.bucket,
            StoreProfile::Azure(p) => &p.container,
        }
    }

    /// `location.prefix`.
    pub fn prefix(&self) -> &str {
        match self {
            StoreProfile::S3(p) => &p.prefix,
            StoreProfile::Gcs(p) => &p.prefix,
            StoreProfile::Azure(p) => &p.prefix,
        }
    }
}

/// A client for a [`StoreProfile`].
pub enum StoreClient {
    S3(S3Client),
    Gcs(GcsClient),
    Azure(AzureClient),
}

impl StoreClient {
    /// A gcs Profile without an endpoint goes to this process's `STORAGE_EMULATOR_HOST` when
    /// set (see [`crate::gcs`]).
    pub fn new(profile: &StoreProfile) -> Result<StoreClient, StoreError> {
        Ok(match profile {
            StoreProfile::S3(p) => StoreClient::S3(S3Client::new(&p.config)?),
            StoreProfile::Gcs(p) => {
                let emulator = std::env::var(gcs::EMULATOR_ENV).ok();
                StoreClient::Gcs(GcsClient::new(p, emulator.as_deref())?)
            }
            StoreProfile::Azure(p) => StoreClient::Azure(AzureClient::new(&p.config)?),
        })
    }

    /// Uploads all of `src` to `key` in bounded memory; nothing appears under the key unless
    /// all of it was uploaded. `cancel` completing stops the upload.
    pub async fn upload(
        &self,
        bucket: &str,
        key: &str,
        src: &mut (impl AsyncRead + Unpin),
        cancel: impl Future<Output = String>,
    ) -> Result<u64, StoreError> {
        Ok(match self {
            StoreClient::S3(c) => upload(&Upload::new(c, bucket, key), src, cancel).await?,
            StoreClient::Gcs(c) => upload(&Upload::new(c, bucket, key), src, cancel).await?,
            StoreClient::Azure(c) => upload(&Upload::new(c, bucket, key), src, cancel).await?,
        })
    }

    /// The object at `key`, its body left to read.
    pub async fn get(&self, bucket: &str, key: &str) -> Result<Download, StoreError> {
        Ok(match self {
            StoreClient::S3(c) => c.get_object(bucket, key).await?,
            StoreClient::Gcs(c) => c.get_object(bucket, key).await?,
            StoreClient::Azure(c) => c.get_blob(bucket, key).await?,
        })
    }

    /// Deletes `path` and every key below it; returns how many objects went.
    pub async fn delete_path(&self, bucket: &str, path: &str) -> Result<usize, StoreError> {
        Ok(match self {
            StoreClient::S3(c) => delete_path(c, bucket, path).await?,
            StoreClient::Gcs(c) => c.delete_path(bucket, path).await?,
            StoreClient::Azure(c) => azure::delete_path(c, bucket, path).await?,
        })
    }
}
