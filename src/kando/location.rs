//! `kando location push|pull|delete` on an s3Compliant or gcs Profile.
//!
//! # The object key
//!
//! Kanister (`pkg/location/location.go`, `Write`/`Read`/`Delete`) uses
//! `filepath.Join(profile.Location.Prefix, <--path>)` as the object name in
//! the Profile's bucket, and `pkg/objectstore/directory.go` (`cloudName`)
//! drops the leading `/`. So the key is the Profile's `location.prefix` and
//! `--path` joined with `/` and cleaned like a path (no empty or `.`
//! elements, no leading or trailing `/`); the bucket is never part of it.
//! `--path /backups/x.gz` with prefix `team-a` is the key
//! `team-a/backups/x.gz` of the Profile's bucket, for Kanister's kando and
//! this one alike, so what one pushes the other pulls. [`object_key`] is the
//! rule, for gcs Profiles too (Kanister's `cloudName` is the same for both).
//!
//! Differences from Kanister, on purpose:
//! - a `--path` whose `..` climbs above the Profile's prefix is refused
//!   (Kanister's path cleaning lets it name another prefix's objects, or a
//!   key starting with `../`);
//! - `delete` removes the key and the keys below it (`p`, `p/...`), never
//!   siblings that merely share the text (`p-old/...`, which Kanister's raw
//!   prefix match deletes too), and refuses an empty key (the whole bucket);
//! - `pull` to a file creates or truncates it only once the object is found
//!   (Kanister opens it first and does not truncate it);
//! - `push -` refuses only a terminal on stdin (Kanister requires a pipe, so
//!   `< file` redirection fails there).

use std::future::Future;
use std::io::IsTerminal as _;
use std::os::fd::AsFd as _;

use crate::aws::s3::transfer::{DownloadError, ObjectStream, UploadError};
use crate::aws::s3::{S3Client, S3Error};
use crate::gcs::{GcsClient, GcsError, GcsProfile};
use crate::objectstore::{self, S3Profile, Store, clean_path, clean_relative};

/// The source or target that means stdin/stdout.
pub const PIPE: &str = "-";

/// Why `kando location push/pull/delete` failed: which object, which bucket or file.
#[derive(Debug, thiserror::Error)]
pub enum LocationError {
    #[error("the Profile's location.prefix {0:?} climbs with `..`; name a path in the bucket")]
    PrefixClimbs(String),
    #[error(
        "--path {path:?} climbs with `..` above the Profile's location.prefix {prefix:?}; name the \
         object's path without `..`"
    )]
    PathClimbs { path: String, prefix: String },
    #[error(
        "--path names no object (it is empty and the Profile has no location.prefix): pass --path \
         <path of the object in the bucket>"
    )]
    NoObject,
    #[error(transparent)]
    Client(Box<S3Error>),
    #[error("Stdin must be piped when the source parameter is \"-\" (stdin is a terminal)")]
    StdinIsTerminal,
    #[error("cannot use {name}: {source}")]
    StdStream {
        name: &'static str,
        source: std::io::Error,
    },
    #[error("cannot open {path}: {source}")]
    Open {
        path: String,
        source: std::io::Error,
    },
    #[error("cannot create {path}: {source}")]
    Create {
        path: String,
        source: std::io::Error,
    },
    #[error("writing {path}: {source}")]
    Write {
        path: String,
        source: std::io::Error,
    },
    #[error("failed to write contents to bucket '{bucket}' (key {key:?}): {source}")]
    Upload {
        bucket: String,
        key: String,
        source: Box<UploadError>,
    },
    #[error("failed to read key {key:?} from bucket '{bucket}': {source}")]
    Download {
        bucket: String,
        key: String,
        source: Box<DownloadError>,
    },
    #[error("read {read} bytes of key {key:?} in bucket '{bucket}', which has {len}")]
    Short {
        bucket: String,
        key: String,
        read: u64,
        len: u64,
    },
    #[error("Failed to delete item {key} in bucket '{bucket}': {source}")]
    Delete {
        bucket: String,
        key: String,
        source: Box<S3Error>,
    },
    #[error(transparent)]
    GcsClient(Box<GcsError>),
    #[error("failed to write contents to bucket '{bucket}' (key {key:?}): {source}")]
    GcsUpload {
        bucket: String,
        key: String,
        source: Box<GcsError>,
    },
    #[error("failed to read key {key:?} from bucket '{bucket}': {source}")]
    GcsDownload {
        bucket: String,
        key: String,
        source: Box<GcsError>,
    },
    #[error("Failed to delete item {key} in bucket '{bucket}': {source}")]
    GcsDelete {
        bucket: String,
        key: String,
        source: Box<GcsError>,
    },
}

/// The object key for `--path` under the Profile's `location.prefix` (see
/// the module docs).
pub fn object_key(prefix: &str, path: &str) -> Result<String, LocationError> {
    let prefix =
        clean_relative(prefix).ok_or_else(|| LocationError::PrefixClimbs(prefix.to_string()))?;
    let suffix = clean_relative(path).ok_or_else(|| LocationError::PathClimbs {
        path: path.to_string(),
        prefix: prefix.clone(),
    })?;
    let key = clean_path(&format!("/{prefix}/{suffix}"))
        .trim_start_matches('/')
        .to_string();
    if key.is_empty() {
        return Err(LocationError::NoObject);
    }
    Ok(key)
}

fn client(profile: &S3Profile) -> Result<S3Client, LocationError> {
    S3Client::new(&profile.config).map_err(|e| LocationError::Client(Box::new(e)))
}

fn gcs_client(profile: &GcsProfile) -> Result<GcsClient, LocationError> {
    let emulator = std::env::var(crate::gcs::EMULATOR_ENV).ok();
    GcsClient::new(profile, emulator.as_deref()).map_err(|e| LocationError::GcsClient(Box::new(e)))
}

/// `source` opened for reading: a file, or stdin for `-` (refused when a terminal).
async fn open_source(source: &str) -> Result<tokio::fs::File, LocationError> {
    if source == PIPE {
        if std::io::stdin().is_terminal() {
            return Err(LocationError::StdinIsTerminal);
        }
        return std_stream(std::io::stdin().as_fd(), "stdin");
    }
    tokio::fs::File::open(source)
        .await
        .map_err(|e| LocationError::Open {
            path: source.to_string(),
            source: e,
        })
}

/// An object being downloaded, from either store.
enum Download {
    S3(ObjectStream),
    Gcs(crate::gcs::client::ObjectStream),
}

impl Download {
    fn len(&self) -> Option<u64> {
        match self {
            Download::S3(o) => o.len,
            Download::Gcs(o) => o.len,
        }
    }

    async fn copy_to(
        &mut self,
        out: &mut tokio::fs::File,
        store: &Store,
        key: &str,
    ) -> Result<u64, LocationError> {
        match self {
            Download::S3(o) => o
                .copy_to(out)
                .await
                .map_err(|source| LocationError::Download {
                    bucket: store.bucket().to_string(),
                    key: key.to_string(),
                    source: Box::new(source),
                }),
            Download::Gcs(o) => o
                .copy_to(out)
                .await
                .map_err(|source| LocationError::GcsDownload {
                    bucket: store.bucket().to_string(),
                    key: key.to_string(),
                    source: Box::new(source),
                }),
        }
    }
}

/// Uploads `source` (a file, or stdin for `-`) to `path`; returns the key
/// and the bytes uploaded. `cancel` (a signal) aborts the upload.
pub async fn push(
    store: &Store,
    path: &str,
    source: &str,
    cancel: impl Future<Output = String>,
) -> Result<(String, u64), LocationError> {
    let key = object_key(store.prefix(), path)?;
    let n = match store {
        Store::S3(profile) => {
            let client = client(profile)?;
            let mut src = open_source(source).await?;
            client
                .upload(&profile.bucket, &key, &mut src, cancel)
                .await
                .map_err(|source: UploadError| LocationError::Upload {
                    bucket: profile.bucket.clone(),
                    key: key.clone(),
                    source: Box::new(source),
                })?
        }
        Store::Gcs(profile) => {
            let client = gcs_client(profile)?;
            let mut src = open_source(source).await?;
            client
                .upload(&profile.bucket, &key, &mut src, cancel)
                .await
                .map_err(|source| LocationError::GcsUpload {
                    bucket: profile.bucket.clone(),
                    key: key.clone(),
                    source: Box::new(source),
                })?
        }
    };
    Ok((key, n))
}

/// Downloads `path` to `target` (a file, or stdout for `-`); returns the
/// key and the bytes written.
pub async fn pull(store: &Store, path: &str, target: &str) -> Result<(String, u64), LocationError> {
    let key = object_key(store.prefix(), path)?;
    // The object first: a missing one leaves an existing target file alone.
    let mut obj = match store {
        Store::S3(profile) => Download::S3(
            client(profile)?
                .get_object(&profile.bucket, &key)
                .await
                .map_err(|e| LocationError::Download {
                    bucket: profile.bucket.clone(),
                    key: key.clone(),
                    source: Box::new(DownloadError::from(e)),
                })?,
        ),
        Store::Gcs(profile) => Download::Gcs(
            gcs_client(profile)?
                .get_object(&profile.bucket, &key)
                .await
                .map_err(|e| LocationError::GcsDownload {
                    bucket: profile.bucket.clone(),
                    key: key.clone(),
                    source: Box::new(e),
                })?,
        ),
    };
    let n = if target == PIPE {
        let mut out = std_stream(std::io::stdout().as_fd(), "stdout")?;
        obj.copy_to(&mut out, store, &key).await?
    } else {
        let mut file =
            tokio::fs::File::create(target)
                .await
                .map_err(|source| LocationError::Create {
                    path: target.to_string(),
                    source,
                })?;
        let n = obj.copy_to(&mut file, store, &key).await?;
        file.sync_all()
            .await
            .map_err(|source| LocationError::Write {
                path: target.to_string(),
                source,
            })?;
        n
    };
    if let Some(len) = obj.len()
        && len != n
    {
        return Err(LocationError::Short {
            bucket: store.bucket().to_string(),
            key,
            read: n,
            len,
        });
    }
    Ok((key, n))
}

/// stdin or stdout as an async file (tokio's `fs` reads and writes it on
/// its blocking threads, as its `io-std` would).
fn std_stream(
    fd: std::os::fd::BorrowedFd<'_>,
    name: &'static str,
) -> Result<tokio::fs::File, LocationError> {
    let fd = fd
        .try_clone_to_owned()
        .map_err(|source| LocationError::StdStream { name, source })?;
    Ok(tokio::fs::File::from_std(std::fs::File::from(fd)))
}

/// Deletes the object at `path` and every object below it; returns the key
/// and how many objects went.
pub async fn delete(store: &Store, path: &str) -> Result<(String, usize), LocationError> {
    let key = object_key(store.prefix(), path)?;
    let n = match store {
        Store::S3(profile) => objectstore::delete_path(&client(profile)?, &profile.bucket, &key)
            .await
            .map_err(|source| LocationError::Delete {
                bucket: profile.bucket.clone(),
                key: key.clone(),
                source: Box::new(source),
            })?,
        Store::Gcs(profile) => gcs_client(profile)?
            .delete_path(&profile.bucket, &key)
            .await
            .map_err(|source| LocationError::GcsDelete {
                bucket: profile.bucket.clone(),
                key: key.clone(),
                source: Box::new(source),
            })?,
    };
    Ok((key, n))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Go's `filepath.Join(prefix, path)` without the leading `/`, for the
    /// paths Blueprints pass (the corpus: `/mongodb-replicaset-backups/...`,
    /// `${s3_path}`, `{{ .ArtifactsIn.x.KeyValue.path }}`).
    #[test]
    fn keys_as_kanister_forms_them() {
        let k = |prefix: &str, path: &str| object_key(prefix, path).unwrap();
        assert_eq!(k("", "backups/db.gz"), "backups/db.gz");
        assert_eq!(k("", "/backups/db.gz"), "backups/db.gz");
        assert_eq!(k("team-a", "/backups/db.gz"), "team-a/backups/db.gz");
        assert_eq!(k("/team-a/", "backups/db.gz"), "team-a/backups/db.gz");
        assert_eq!(k("team-a//x", "a//b/./c/"), "team-a/x/a/b/c");
        assert_eq!(k("p", "a/../b"), "p/b");
        // The bucket is not cut from --path (unlike LocationDelete's artifact).
        assert_eq!(k("", "bucket/x"), "bucket/x");
        // An empty path names the prefix itself.
        assert_eq!(k("team-a", ""), "team-a");
    }

    #[test]
    fn keys_that_are_refused() {
        assert!(
            object_key("", "")
                .unwrap_err()
                .to_string()
                .contains("names no object")
        );
        assert!(
            object_key("", "/./")
                .unwrap_err()
                .to_string()
                .contains("names no object")
        );
        let e = object_key("team-a", "../team-b/x").unwrap_err().to_string();
        assert!(
            e.contains("climbs with `..` above the Profile's location.prefix \"team-a\""),
            "{e}"
        );
        assert!(object_key("", "a/../../b").is_err());
        assert!(
            object_key("../x", "a")
                .unwrap_err()
                .to_string()
                .contains("location.prefix")
        );
    }
}
