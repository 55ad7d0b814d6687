//! The Kanister Profile as functions read it: the rendered `.Profile`
//! template parameter (`param.Profile`), checked as Kanister's
//! `ValidateProfile` does (same error texts), and Kanister's
//! `ResolveArtifactPrefix` (`pkg/function/utils.go`).
//!
//! One place for its users: the restic data movers, the object store client
//! (LocationDelete) and kando. Fields are found as Go's `json.Unmarshal`
//! finds them (any case), so Kanister's `toJson` spelling reads too.

use std::collections::BTreeMap;

use serde_json::{Value, json};

/// Kanister location types (`crv1alpha1.LocationType*`).
pub const LOCATION_S3: &str = "s3Compliant";
pub const LOCATION_GCS: &str = "gcs";
pub const LOCATION_AZURE: &str = "azure";
pub const LOCATION_KOPIA: &str = "kopia";

/// Kanister's `secrets.kanister.io/aws` Secret keys.
pub const AWS_SECRET_TYPE: &str = "secrets.kanister.io/aws";
pub const AWS_ACCESS_KEY_ID_KEY: &str = "aws_access_key_id";
pub const AWS_SECRET_ACCESS_KEY_KEY: &str = "aws_secret_access_key";
pub const AWS_SESSION_TOKEN_KEY: &str = "aws_session_token";
pub const AWS_ROLE_KEY: &str = "role";
/// Kanister's `secrets.kanister.io/azure` Secret keys.
pub const AZURE_SECRET_TYPE: &str = "secrets.kanister.io/azure";
pub const AZURE_ACCOUNT_ID_KEY: &str = "azure_storage_account_id";
pub const AZURE_ACCOUNT_KEY_KEY: &str = "azure_storage_key";
/// The Azure cloud (`AzurePublicCloud`, `AzureChinaCloud`, ...), optional.
pub const AZURE_ENVIRONMENT_KEY: &str = "azure_storage_environment";
/// Kanister's `secrets.kanister.io/gcp` Secret keys.
pub const GCP_SECRET_TYPE: &str = "secrets.kanister.io/gcp";
pub const GCP_PROJECT_ID_KEY: &str = "gcp_project_id";
pub const GCP_SERVICE_ACCOUNT_KEY: &str = "service-account.json";

/// Why a Profile cannot be used. The texts are Kanister's where Kanister has
/// one (callers prefix them as their Kanister function does, e.g. "Failed to
/// validate Profile: ").
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProfileError {
    #[error(
        "Profile must be non-nil (the ActionSet's action names no `profile`, or it could not be \
         read: set actions[].profile to a Kanister Profile in the ActionSet's namespace)"
    )]
    Missing,
    #[error("Empty KeyPair field")]
    EmptyKeyPair,
    #[error("Access key ID is not set")]
    NoAccessKeyId,
    #[error("Secret access key is not set")]
    NoSecretAccessKey,
    #[error("Secret for AWS credentials is nil")]
    NilSecret,
    #[error("Secret key {key} is not valid base64: {message}")]
    SecretNotBase64 { key: String, message: String },
    #[error("{kind} Secret is missing {id_key} or {secret_key}")]
    SecretKeysMissing {
        kind: &'static str,
        id_key: &'static str,
        secret_key: &'static str,
    },
    #[error("Unsupported type '{0}' for secret")]
    SecretType(String),
    #[error("Unsupported type '{0}' for credentials")]
    CredentialType(String),
    #[error("Location type not supported")]
    LocationType,
    // Reading the Profile as an S3 connection (Kanister's `getAWSSecret`).
    #[error("location type {0} is not supported here (only {LOCATION_S3})")]
    NotS3(String),
    #[error(
        "the credential's Secret sets `{AWS_ROLE_KEY}` (assume an IAM role), which this executor \
         does not do; put the role's keys in the Secret instead"
    )]
    AssumeRole,
    #[error(
        "Unsupported type '{0}' for an s3Compliant location's credential Secret (expected {AWS_SECRET_TYPE})"
    )]
    S3SecretType(String),
    #[error("Unsupported type 'kopia' for credentials of an s3Compliant location")]
    S3Kopia,
    #[error("Bucket not specified (set the Profile's location.bucket)")]
    NoBucket,
}

/// Callers that word their own failures take the text.
impl From<ProfileError> for String {
    fn from(e: ProfileError) -> String {
        e.to_string()
    }
}

/// A Profile location: the CRD's own type, as in Kanister's `param.Profile`.
pub use crate::model::Location;

/// A Profile credential (`param.Credential`).
#[derive(Clone, PartialEq, Eq)]
pub enum Credential {
    /// `keyPair`: ID and secret read from the referenced Secret.
    KeyPair { id: String, secret: String },
    /// `secret`: the whole Secret; `data` is base64-decoded.
    Secret {
        type_: String,
        data: BTreeMap<String, String>,
    },
    /// `kopia` (accepted by ValidateProfile, unusable by restic).
    Kopia,
}

impl std::fmt::Debug for Credential {
    /// Never prints secret values.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Credential::KeyPair { id, .. } => write!(f, "KeyPair {{ id: {id:?}, secret: *** }}"),
            Credential::Secret { type_, data } => write!(
                f,
                "Secret {{ type: {type_:?}, keys: {:?} }}",
                data.keys().collect::<Vec<_>>()
            ),
            Credential::Kopia => write!(f, "Kopia"),
        }
    }
}

/// The `.Profile` template parameter (`param.Profile`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Profile {
    pub location: Location,
    pub credential: Credential,
    pub skip_ssl_verify: bool,
}

/// The `.Profile` parameter for a Profile object, as Kanister's `fetchProfile` fills
/// `param.Profile`: `key_pair` (ID, secret) and `secret` (the Secret object) are what its
/// credential's Secrets held, read by the caller; [`Profile::from_params`] reads it back.
pub fn param_value(
    profile: &crate::model::Profile,
    key_pair: Option<(String, String)>,
    secret: Option<Value>,
) -> Value {
    let l = &profile.location;
    let mut credential = json!({"Type": profile.credential.type_});
    if let Some((id, secret)) = key_pair {
        credential["KeyPair"] = json!({"ID": id, "Secret": secret});
    }
    if let Some(s) = secret {
        credential["Secret"] = s;
    }
    if let Some(k) = &profile.credential.kopia_server_secret {
        credential["KopiaServerSecret"] = k.clone();
    }
    json!({
        "Location": {
            "Type": l.type_, "Bucket": l.bucket, "Endpoint": l.endpoint,
            "Prefix": l.prefix, "Region": l.region,
        },
        "Credential": credential,
        "SkipSSLVerify": profile.skip_ssl_verify,
    })
}

/// `v.<path>` by Go field names (`/Credential/Type`), each matched as [`super::get`] does.
fn str_at<'a>(v: &'a Value, path: &str) -> &'a str {
    path.split('/')
        .skip(1)
        .try_fold(v, super::get)
        .and_then(Value::as_str)
        .unwrap_or("")
}

impl Profile {
    /// `params["Profile"]` checked as Kanister's `ValidateProfile`.
    pub fn from_params(params: &Value) -> Result<Profile, ProfileError> {
        let p = match params.get(super::PROFILE) {
            Some(p) if p.is_object() => p,
            _ => return Err(ProfileError::Missing),
        };
        let cred_type = str_at(p, "/Credential/Type");
        let credential = match cred_type {
            "keyPair" => {
                let kp = super::get(p, "Credential")
                    .and_then(|c| super::get(c, "KeyPair"))
                    .filter(|v| v.is_object())
                    .ok_or(ProfileError::EmptyKeyPair)?;
                let id = str_at(kp, "/ID");
                let secret = str_at(kp, "/Secret");
                if id.is_empty() {
                    return Err(ProfileError::NoAccessKeyId);
                }
                if secret.is_empty() {
                    return Err(ProfileError::NoSecretAccessKey);
                }
                Credential::KeyPair {
                    id: id.into(),
                    secret: secret.into(),
                }
            }
            "secret" => {
                let s = super::get(p, "Credential")
                    .and_then(|c| super::get(c, "Secret"))
                    .filter(|v| v.is_object())
                    .ok_or(ProfileError::NilSecret)?;
                let data = decode_secret_data(s)?;
                let type_ = str_at(s, "/type").to_string();
                validate_secret(&type_, &data)?;
                Credential::Secret { type_, data }
            }
            "kopia" => Credential::Kopia,
            other => return Err(ProfileError::CredentialType(other.to_string())),
        };
        let l = super::get(p, "Location").cloned().unwrap_or(Value::Null);
        let location = Location {
            type_: str_at(&l, "/Type").into(),
            bucket: str_at(&l, "/Bucket").into(),
            endpoint: str_at(&l, "/Endpoint").into(),
            prefix: str_at(&l, "/Prefix").into(),
            region: str_at(&l, "/Region").into(),
        };
        match location.type_.as_str() {
            LOCATION_S3 | LOCATION_GCS | LOCATION_AZURE | LOCATION_KOPIA => {}
            _ => return Err(ProfileError::LocationType),
        }
        Ok(Profile {
            location,
            credential,
            skip_ssl_verify: super::get(p, "SkipSSLVerify")
                .and_then(Value::as_bool)
                .unwrap_or(false),
        })
    }
}

fn decode_secret_data(secret: &Value) -> Result<BTreeMap<String, String>, ProfileError> {
    use base64::Engine;
    let mut out = BTreeMap::new();
    if let Some(m) = secret.get("data").and_then(Value::as_object) {
        for (k, v) in m {
            let b64 = v.as_str().unwrap_or("");
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(b64)
                .map_err(|e| ProfileError::SecretNotBase64 {
                    key: k.clone(),
                    message: e.to_string(),
                })?;
            out.insert(k.clone(), String::from_utf8_lossy(&bytes).into_owned());
        }
    }
    if let Some(m) = secret.get("stringData").and_then(Value::as_object) {
        for (k, v) in m {
            out.insert(k.clone(), v.as_str().unwrap_or("").to_string());
        }
    }
    Ok(out)
}

/// Kanister's `secrets.ValidateCredentials` for the Secret types restic can use.
fn validate_secret(type_: &str, data: &BTreeMap<String, String>) -> Result<(), ProfileError> {
    let has = |k: &str| data.get(k).is_some_and(|v| !v.is_empty());
    let (kind, id_key, secret_key) = match type_ {
        AWS_SECRET_TYPE => ("AWS", AWS_ACCESS_KEY_ID_KEY, AWS_SECRET_ACCESS_KEY_KEY),
        AZURE_SECRET_TYPE => ("Azure", AZURE_ACCOUNT_ID_KEY, AZURE_ACCOUNT_KEY_KEY),
        GCP_SECRET_TYPE => ("GCP", GCP_PROJECT_ID_KEY, GCP_SERVICE_ACCOUNT_KEY),
        other => return Err(ProfileError::SecretType(other.to_string())),
    };
    if !has(id_key) || !has(secret_key) {
        return Err(ProfileError::SecretKeysMissing {
            kind,
            id_key,
            secret_key,
        });
    }
    Ok(())
}

/// Kanister's `ResolveArtifactPrefix`: prepend the Profile's bucket unless
/// the prefix already starts with it (`bucket/x` stays, `x` → `bucket/x`).
/// Like Go's `path.Join`, the result is cleaned (no doubled or trailing `/`).
pub fn resolve_artifact_prefix(artifact_prefix: &str, profile: &Profile) -> String {
    if artifact_prefix.split('/').next() == Some(profile.location.bucket.as_str()) {
        return artifact_prefix.to_string();
    }
    path_join(&[&profile.location.bucket, artifact_prefix])
}

/// Go's `path.Join` for relative parts: non-empty elements joined by `/`,
/// `.` dropped, `..` applied.
fn path_join(parts: &[&str]) -> String {
    let mut out: Vec<&str> = Vec::new();
    let absolute = parts
        .iter()
        .find(|p| !p.is_empty())
        .is_some_and(|p| p.starts_with('/'));
    for p in parts {
        for seg in p.split('/') {
            match seg {
                "" | "." => {}
                ".." => {
                    if out.last().is_some_and(|l| *l != "..") {
                        out.pop();
                    } else if !absolute {
                        out.push("..");
                    }
                }
                s => out.push(s),
            }
        }
    }
    let joined = out.join("/");
    if absolute {
        format!("/{joined}")
    } else {
        joined
    }
}

/// Template parameters with an s3Compliant Profile, as the executor renders them (for tests).
#[cfg(test)]
pub(crate) fn s3_params() -> Value {
    serde_json::json!({"Profile": {
        "Location": {"Type": "s3Compliant", "Bucket": "bkt", "Endpoint": "http://127.0.0.1:9000/",
                     "Prefix": "", "Region": "us-east-1"},
        "Credential": {"Type": "keyPair", "KeyPair": {"ID": "AKID", "Secret": "s3cr$t'x"}},
        "SkipSSLVerify": false,
    }})
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn err(p: &Value) -> String {
        Profile::from_params(p).unwrap_err().to_string()
    }

    #[test]
    fn the_parameter_written_for_a_profile_object_reads_back() {
        let object: crate::model::Profile = serde_json::from_value(json!({
            "location": {"type": "s3Compliant", "bucket": "b", "endpoint": "http://e",
                "prefix": "p", "region": "r"},
            "credential": {"type": "keyPair",
                "keyPair": {"idField": "id", "secretField": "key",
                    "secret": {"name": "s", "namespace": "ns"}}},
            "skipSSLVerify": true,
        }))
        .unwrap();
        let value = param_value(&object, Some(("AKID".into(), "SK".into())), None);
        let read = Profile::from_params(&json!({ "Profile": value })).unwrap();
        assert_eq!(read.location.bucket, "b");
        assert_eq!(read.location.endpoint, "http://e");
        assert_eq!(read.location.prefix, "p");
        assert_eq!(read.location.region, "r");
        assert!(read.skip_ssl_verify);
        assert_eq!(
            read.credential,
            Credential::KeyPair {
                id: "AKID".into(),
                secret: "SK".into()
            }
        );
        // Without the key pair's Secret it is Kanister's "Empty KeyPair field".
        let value = param_value(&object, None, None);
        assert_eq!(
            Profile::from_params(&json!({ "Profile": value })),
            Err(ProfileError::EmptyKeyPair)
        );
    }

    #[test]
    fn profile_validation_uses_kanisters_texts() {
        assert!(err(&json!({})).starts_with("Profile must be non-nil"));
        let mut p = s3_params();
        p["Profile"]["Credential"]["KeyPair"]["ID"] = json!("");
        assert_eq!(err(&p), "Access key ID is not set");
        let mut p = s3_params();
        p["Profile"]["Credential"]["KeyPair"]["Secret"] = json!("");
        assert_eq!(err(&p), "Secret access key is not set");
        let mut p = s3_params();
        p["Profile"]["Credential"] = json!({"Type": "keyPair"});
        assert_eq!(err(&p), "Empty KeyPair field");
        let mut p = s3_params();
        p["Profile"]["Credential"]["Type"] = json!("token");
        assert_eq!(err(&p), "Unsupported type 'token' for credentials");
        let mut p = s3_params();
        p["Profile"]["Location"]["Type"] = json!("ftp");
        assert_eq!(err(&p), "Location type not supported");
        let prof = Profile::from_params(&s3_params()).unwrap();
        assert_eq!(prof.location.bucket, "bkt");
        assert!(!format!("{prof:?}").contains("s3cr"), "secret in Debug");
    }

    #[test]
    fn artifact_prefix_gets_the_bucket_once() {
        let prof = Profile::from_params(&s3_params()).unwrap();
        assert_eq!(
            resolve_artifact_prefix("bkt/time-log", &prof),
            "bkt/time-log"
        );
        assert_eq!(
            resolve_artifact_prefix("s3-bucket/path/artifactPrefix", &prof),
            "bkt/s3-bucket/path/artifactPrefix"
        );
        assert_eq!(resolve_artifact_prefix("a//b/", &prof), "bkt/a/b");
        assert_eq!(resolve_artifact_prefix("bkt", &prof), "bkt");
        assert_eq!(path_join(&["", "/x/../y"]), "/y");
    }
}
