//! `kando location push|pull|delete` on an s3Compliant Profile.
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
//! rule.
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

use crate::functions::location_delete::{self, clean_path, clean_relative};
use crate::functions::s3::transfer::{DownloadError, UploadError};
use crate::functions::s3::{S3Client, S3Profile};

/// The source or target that means stdin/stdout.
pub const PIPE: &str = "-";

/// The object key for `--path` under the Profile's `location.prefix` (see
/// the module docs).
pub fn object_key(prefix: &str, path: &str) -> Result<String, String> {
    let prefix = clean_relative(prefix).ok_or_else(|| {
        format!(
            "the Profile's location.prefix {prefix:?} climbs with `..`; name a path in the bucket"
        )
    })?;
    let suffix = clean_relative(path).ok_or_else(|| {
        format!(
            "--path {path:?} climbs with `..` above the Profile's location.prefix {prefix:?}; \
             name the object's path without `..`"
        )
    })?;
    let key = clean_path(&format!("/{prefix}/{suffix}"))
        .trim_start_matches('/')
        .to_string();
    if key.is_empty() {
        return Err(
            "--path names no object (it is empty and the Profile has no location.prefix): \
             pass --path <path of the object in the bucket>"
                .into(),
        );
    }
    Ok(key)
}

fn client(profile: &S3Profile) -> Result<S3Client, String> {
    S3Client::new(&profile.config).map_err(|e| e.to_string())
}

/// Uploads `source` (a file, or stdin for `-`) to `path`; returns the key
/// and the bytes uploaded. `cancel` (a signal) aborts the upload.
pub async fn push(
    profile: &S3Profile,
    path: &str,
    source: &str,
    cancel: impl Future<Output = String>,
) -> Result<(String, u64), String> {
    let key = object_key(&profile.prefix, path)?;
    let client = client(profile)?;
    let fail = |e: UploadError| {
        format!(
            "failed to write contents to bucket '{}' (key {key:?}): {e}",
            profile.bucket
        )
    };
    let n = if source == PIPE {
        if std::io::stdin().is_terminal() {
            return Err(
                "Stdin must be piped when the source parameter is \"-\" (stdin is a terminal)"
                    .into(),
            );
        }
        let mut stdin = std_stream(std::io::stdin().as_fd(), "stdin")?;
        client
            .upload(&profile.bucket, &key, &mut stdin, cancel)
            .await
            .map_err(fail)?
    } else {
        let mut file = tokio::fs::File::open(source)
            .await
            .map_err(|e| format!("cannot open {source}: {e}"))?;
        client
            .upload(&profile.bucket, &key, &mut file, cancel)
            .await
            .map_err(fail)?
    };
    Ok((key, n))
}

/// Downloads `path` to `target` (a file, or stdout for `-`); returns the
/// key and the bytes written.
pub async fn pull(profile: &S3Profile, path: &str, target: &str) -> Result<(String, u64), String> {
    let key = object_key(&profile.prefix, path)?;
    let client = client(profile)?;
    let fail = |e: DownloadError| {
        format!(
            "failed to read key {key:?} from bucket '{}': {e}",
            profile.bucket
        )
    };
    // The object first: a missing one leaves an existing target file alone.
    let mut obj = client
        .get_object(&profile.bucket, &key)
        .await
        .map_err(|e| fail(e.into()))?;
    let n = if target == PIPE {
        obj.copy_to(&mut std_stream(std::io::stdout().as_fd(), "stdout")?)
            .await
    } else {
        let mut file = tokio::fs::File::create(target)
            .await
            .map_err(|e| format!("cannot create {target}: {e}"))?;
        let n = obj.copy_to(&mut file).await;
        if n.is_ok() {
            file.sync_all()
                .await
                .map_err(|e| format!("writing {target}: {e}"))?;
        }
        n
    }
    .map_err(fail)?;
    if let Some(len) = obj.len
        && len != n
    {
        return Err(format!(
            "read {n} bytes of key {key:?} in bucket '{}', which has {len}",
            profile.bucket
        ));
    }
    Ok((key, n))
}

/// stdin or stdout as an async file (tokio's `fs` reads and writes it on
/// its blocking threads, as its `io-std` would).
fn std_stream(fd: std::os::fd::BorrowedFd<'_>, name: &str) -> Result<tokio::fs::File, String> {
    let fd = fd
        .try_clone_to_owned()
        .map_err(|e| format!("cannot use {name}: {e}"))?;
    Ok(tokio::fs::File::from_std(std::fs::File::from(fd)))
}

/// Deletes the object at `path` and every object below it; returns the key
/// and how many objects went.
pub async fn delete(profile: &S3Profile, path: &str) -> Result<(String, usize), String> {
    let key = object_key(&profile.prefix, path)?;
    let client = client(profile)?;
    let n = location_delete::delete_path(&client, &profile.bucket, &key)
        .await
        .map_err(|e| {
            format!(
                "Failed to delete item {key} in bucket '{}': {e}",
                profile.bucket
            )
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
        assert!(object_key("", "").unwrap_err().contains("names no object"));
        assert!(
            object_key("", "/./")
                .unwrap_err()
                .contains("names no object")
        );
        let e = object_key("team-a", "../team-b/x").unwrap_err();
        assert!(
            e.contains("climbs with `..` above the Profile's location.prefix \"team-a\""),
            "{e}"
        );
        assert!(object_key("", "a/../../b").is_err());
        assert!(
            object_key("../x", "a")
                .unwrap_err()
                .contains("location.prefix")
        );
    }
}
