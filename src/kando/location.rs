//! `kando location push|pull|delete` on an s3Compliant, gcs or azure Profile.
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
//! An azure Profile's bucket is the Blob container and the key the blob's
//! name, the same rule (Kanister's stow azure container).
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

use crate::objectstore::{StoreClient, StoreError, StoreProfile, clean_path, clean_relative};

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
    Client(StoreError),
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
        source: StoreError,
    },
    #[error("failed to read key {key:?} from bucket '{bucket}': {source}")]
    Download {
        bucket: String,
        key: String,
        source: StoreError,
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
        source: StoreError,
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

fn client(profile: &StoreProfile) -> Result<StoreClient, LocationError> {
    StoreClient::new(profile).map_err(LocationError::Client)
}

/// Uploads `source` (a file, or stdin for `-`) to `path`; returns the key
/// and the bytes uploaded. `cancel` (a signal) aborts the upload.
pub async fn push(
    profile: &StoreProfile,
    path: &str,
    source: &str,
    cancel: impl Future<Output = String>,
) -> Result<(String, u64), LocationError> {
    let key = object_key(profile.prefix(), path)?;
    let client = client(profile)?;
    let mut src = if source == PIPE {
        if std::io::stdin().is_terminal() {
            return Err(LocationError::StdinIsTerminal);
        }
        std_stream(std::io::stdin().as_fd(), "stdin")?
    } else {
        tokio::fs::File::open(source)
            .await
            .map_err(|e| LocationError::Open {
                path: source.to_string(),
                source: e,
            })?
    };
    let n = client
        .upload(profile.bucket(), &key, &mut src, cancel)
        .await
        .map_err(|source| LocationError::Upload {
            bucket: profile.bucket().to_string(),
            key: key.clone(),
            source,
        })?;
    Ok((key, n))
}

/// Downloads `path` to `target` (a file, or stdout for `-`); returns the
/// key and the bytes written.
pub async fn pull(
    profile: &StoreProfile,
    path: &str,
    target: &str,
) -> Result<(String, u64), LocationError> {
    let key = object_key(profile.prefix(), path)?;
    let client = client(profile)?;
    let fail = |source: StoreError| LocationError::Download {
        bucket: profile.bucket().to_string(),
        key: key.clone(),
        source,
    };
    // The object first: a missing one leaves an existing target file alone.
    let mut obj = client.get(profile.bucket(), &key).await.map_err(fail)?;
    let n = if target == PIPE {
        obj.copy_to(&mut std_stream(std::io::stdout().as_fd(), "stdout")?)
            .await
    } else {
        let mut file =
            tokio::fs::File::create(target)
                .await
                .map_err(|source| LocationError::Create {
                    path: target.to_string(),
                    source,
                })?;
        let n = obj.copy_to(&mut file).await;
        if n.is_ok() {
            file.sync_all()
                .await
                .map_err(|source| LocationError::Write {
                    path: target.to_string(),
                    source,
                })?;
        }
        n
    }
    .map_err(|e| fail(e.into()))?;
    if let Some(len) = obj.len
        && len != n
    {
        return Err(LocationError::Short {
            bucket: profile.bucket().to_string(),
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
pub async fn delete(profile: &StoreProfile, path: &str) -> Result<(String, usize), LocationError> {
    let key = object_key(profile.prefix(), path)?;
    let client = client(profile)?;
    let n = client
        .delete_path(profile.bucket(), &key)
        .await
        .map_err(|source| LocationError::Delete {
            bucket: profile.bucket().to_string(),
            key: key.clone(),
            source,
        })?;
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
