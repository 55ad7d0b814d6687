//! Object keys of a Profile's store as Kanister's `pkg/location` forms them: the artifact path
//! below the Profile's bucket and `location.prefix`, cleaned like a path; refusals for an
//! artifact that names another bucket, the whole bucket, or climbs above the prefix
//! (LocationDelete's rules, see `functions/location_delete.rs`).

/// `key` is `path` itself or below it.
pub fn is_under(key: &str, path: &str) -> bool {
    key == path
        || key
            .strip_prefix(path)
            .is_some_and(|rest| rest.starts_with('/'))
}

/// Of the keys listed with prefix `path`, those that are `path` or below it: a listing by
/// prefix also returns siblings that merely share it (`path-other`), which are left alone.
pub fn keys_under(listed: Vec<String>, path: &str) -> Vec<String> {
    listed.into_iter().filter(|k| is_under(k, path)).collect()
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
        let listed = ["time-log", "time-log/a", "time-logs/a", "time-log-old"].map(String::from);
        assert_eq!(
            keys_under(listed.to_vec(), "time-log"),
            ["time-log", "time-log/a"]
        );
    }

    #[test]
    fn clean_path_matches_go() {
        assert_eq!(clean_path("/"), "/");
        assert_eq!(clean_path("//a//b/"), "/a/b");
        assert_eq!(clean_path("/a/../../b"), "/b");
        assert_eq!(clean_path("/./a/./"), "/a");
    }
}
