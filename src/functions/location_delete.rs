//! LocationDelete (Kanister `pkg/function/location_delete.go` and
//! `pkg/location`): deletes every object under the artifact path in the
//! Profile's object store. Run by the controller itself (no pod), through
//! the S3 client of [`super::s3`]; no output.
//!
//! The key prefix is Kanister's: the Profile's bucket is cut from the front
//! of `artifact`, the rest is joined to the Profile's `location.prefix` and
//! cleaned like a path (`a//b/./c/` is `a/b/c`), without a leading `/`. So
//! `artifact: "{{ .Profile.Location.Bucket }}/time-log"` deletes
//! `time-log/...` of the Profile's bucket.
//!
//! Differences from Kanister, on purpose:
//! - the artifact is a *path*: the objects deleted are the key itself and the
//!   keys below it (`time-log`, `time-log/...`), never siblings that merely
//!   share the text (`time-logs/...`), which Kanister's raw prefix match
//!   deletes too;
//! - the bucket is cut only as a whole path element (`<bucket>` or
//!   `<bucket>/...`; Kanister's `TrimPrefix` also cuts `<bucket>x/...` to
//!   `x/...`), and `s3://<bucket>/<path>` is accepted (the bucket must be the
//!   Profile's);
//! - an artifact that resolves to the whole bucket is refused (Kanister
//!   deletes every object of the bucket), and so is one whose `..` climbs
//!   above the Profile's `location.prefix` (Kanister's path cleaning lets
//!   `<bucket>/../other-team` delete another prefix);
//! - only `s3Compliant` locations (gcs and azure fail with a clear error);
//!   credentials `keyPair`, or `secret` with AWS keys (no role assumption).

use serde_json::Value;

use super::args::Args;
use super::s3::{self, S3Client};
use super::{Context, FunctionError, Output};

const NAME: &str = "LocationDelete";

pub async fn run(_ctx: &Context, a: &Args<'_>, params: &Value) -> Result<Output, FunctionError> {
    let artifact = a.string("artifact")?;
    let profile = s3::profile_from_params(params)
        .map_err(|m| FunctionError::failed(NAME, format!("Failed to validate Profile: {m}")))?;
    let prefix = key_prefix(&artifact, &profile.bucket, &profile.prefix)
        .map_err(|e| FunctionError::arg(NAME, "artifact", e.to_string()))?;
    let client =
        S3Client::new(&profile.config).map_err(|e| FunctionError::failed(NAME, e.to_string()))?;
    let n = delete_path(&client, &profile.bucket, &prefix)
        .await
        .map_err(|e| {
            FunctionError::failed(
                NAME,
                format!(
                    "Failed to delete item {prefix} in bucket {}: {e}",
                    profile.bucket
                ),
            )
        })?;
    tracing::info!(bucket = %profile.bucket, prefix = %prefix, objects = n, "LocationDelete: deleted");
    Ok(Output::new())
}

/// Deletes `path` and every key below it; returns how many objects went.
pub async fn delete_path(
    client: &S3Client,
    bucket: &str,
    path: &str,
) -> Result<usize, s3::S3Error> {
    let keys: Vec<String> = client
        .list_all(bucket, path, None)
        .await?
        .into_iter()
        .filter(|k| is_under(k, path))
        .collect();
    client.delete_keys(bucket, &keys).await
}

/// `key` is `path` itself or below it.
pub fn is_under(key: &str, path: &str) -> bool {
    key == path
        || key
            .strip_prefix(path)
            .is_some_and(|rest| rest.starts_with('/'))
}

/// Why an `artifact` names no path LocationDelete may delete.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KeyPrefixError {
    #[error(
        "{artifact:?} names bucket {named:?} but the Profile's bucket is {bucket:?}; LocationDelete deletes only in the Profile's bucket"
    )]
    OtherBucket {
        artifact: String,
        named: String,
        bucket: String,
    },
    #[error(
        "{artifact:?} climbs with `..` above the Profile's location.prefix {profile_prefix:?}; \
         LocationDelete deletes only below it: name the artifact's path without `..`"
    )]
    Climbs {
        artifact: String,
        profile_prefix: String,
    },
    #[error(
        "{artifact:?} resolves to the whole bucket {bucket:?}; LocationDelete refuses to delete every object of a bucket, name the path of the artifact below it (e.g. {bucket}/my-app/backups)"
    )]
    WholeBucket { artifact: String, bucket: String },
}

/// The object key prefix for `artifact` (see the module docs).
pub fn key_prefix(
    artifact: &str,
    bucket: &str,
    profile_prefix: &str,
) -> Result<String, KeyPrefixError> {
    let a = artifact.trim();
    let suffix = if let Some(rest) = a.strip_prefix("s3://") {
        let (b, path) = rest.split_once('/').unwrap_or((rest, ""));
        if b != bucket {
            return Err(KeyPrefixError::OtherBucket {
                artifact: a.to_string(),
                named: b.to_string(),
                bucket: bucket.to_string(),
            });
        }
        path
    } else if a == bucket {
        ""
    } else if let Some(rest) = a.strip_prefix(bucket).and_then(|r| r.strip_prefix('/')) {
        rest
    } else {
        a
    };
    // `..` may move within the artifact's path, never above it: that would
    // leave the Profile's location.prefix (another team's data).
    let suffix = clean_relative(suffix).ok_or_else(|| KeyPrefixError::Climbs {
        artifact: a.to_string(),
        profile_prefix: profile_prefix.to_string(),
    })?;
    let cleaned = clean_path(&format!("/{profile_prefix}/{suffix}"));
    let key = cleaned.trim_start_matches('/').to_string();
    if key.is_empty() {
        return Err(KeyPrefixError::WholeBucket {
            artifact: a.to_string(),
            bucket: bucket.to_string(),
        });
    }
    Ok(key)
}

/// The elements of path `p` without empty or `.` ones, each `..` removing the element before
/// it; `None` when a `..` has none to remove and `may_climb` is false (else it is dropped).
fn clean_elements(p: &str, may_climb: bool) -> Option<Vec<&str>> {
    let mut parts: Vec<&str> = Vec::new();
    for seg in p.split('/') {
        match seg {
            "" | "." => {}
            ".." => {
                if parts.pop().is_none() && !may_climb {
                    return None;
                }
            }
            s => parts.push(s),
        }
    }
    Some(parts)
}

/// A relative path cleaned like [`clean_path`]; `None` when a `..` climbs
/// above its start.
pub fn clean_relative(p: &str) -> Option<String> {
    clean_elements(p, false).map(|parts| parts.join("/"))
}

/// Go's `path.Clean` for a rooted path: no empty or `.` elements, `..`
/// removes the element before it (never above the root).
pub fn clean_path(p: &str) -> String {
    format!("/{}", clean_elements(p, true).unwrap_or_default().join("/"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn artifact_paths_as_kanister_resolves_them() {
        for (artifact, profile_prefix, key) in [
            // The time-log Blueprint: "{{ .Profile.Location.Bucket }}/time-log".
            ("tl-bucket/time-log", "", "time-log"),
            // Without the bucket in front: taken as a path in the bucket.
            ("time-log/run-1", "", "time-log/run-1"),
            ("/time-log/", "", "time-log"),
            // The Profile's location.prefix goes in front.
            ("tl-bucket/time-log", "team-a/", "team-a/time-log"),
            ("tl-bucket", "team-a", "team-a"),
            // s3:// URLs of the Profile's bucket.
            ("s3://tl-bucket/time-log/x", "", "time-log/x"),
            // Cleaned like a path.
            ("tl-bucket//a/./b/../c/", "", "a/c"),
            ("tl-bucket/a/../b", "team-a", "team-a/b"),
            // The bucket is cut only as a whole element.
            ("tl-bucketx/a", "", "tl-bucketx/a"),
        ] {
            assert_eq!(
                key_prefix(artifact, "tl-bucket", profile_prefix).unwrap(),
                key,
                "{artifact} with prefix {profile_prefix:?}"
            );
        }
        let e = key_prefix("s3://other/time-log", "tl-bucket", "")
            .unwrap_err()
            .to_string();
        assert!(e.contains("names bucket \"other\""), "{e}");
    }

    #[test]
    fn the_whole_bucket_is_refused() {
        for a in [
            "tl-bucket",
            "tl-bucket/",
            "s3://tl-bucket",
            "/",
            ".",
            "tl-bucket/a/..",
        ] {
            let e = key_prefix(a, "tl-bucket", "").unwrap_err().to_string();
            assert!(e.contains("whole bucket"), "{a}: {e}");
        }
    }

    /// `..` must not leave the Profile's prefix (or the bucket's root).
    #[test]
    fn dot_dot_cannot_escape_the_profile_prefix() {
        for a in [
            "tl-bucket/../team-b/backups",
            "../team-b",
            "s3://tl-bucket/x/../../team-b",
            "tl-bucket/a/../../..",
        ] {
            let e = key_prefix(a, "tl-bucket", "team-a")
                .unwrap_err()
                .to_string();
            assert!(
                e.contains("climbs with `..` above the Profile's location.prefix \"team-a\""),
                "{a}: {e}"
            );
        }
        let e = key_prefix("tl-bucket/../../a", "tl-bucket", "")
            .unwrap_err()
            .to_string();
        assert!(e.contains("climbs with `..`"), "{e}");
        assert_eq!(clean_relative("a/./b/../c"), Some("a/c".into()));
        assert_eq!(clean_relative("a/../.."), None);
    }

    #[test]
    fn only_the_path_and_what_is_below_it() {
        assert!(is_under("time-log", "time-log"));
        assert!(is_under("time-log/a", "time-log"));
        assert!(is_under("time-log/a/b", "time-log"));
        assert!(!is_under("time-logs/a", "time-log"));
        assert!(!is_under("time-lo", "time-log"));
        assert!(!is_under("x/time-log", "time-log"));
    }

    #[test]
    fn clean_path_matches_go() {
        assert_eq!(clean_path("/"), "/");
        assert_eq!(clean_path("//a//b/"), "/a/b");
        assert_eq!(clean_path("/a/../../b"), "/b");
        assert_eq!(clean_path("/./a/./"), "/a");
    }
}
