//! Google Cloud Storage for `gcs` Profiles: the Profile read as a GCS connection ([`from_profile`],
//! as Kanister's `pkg/location` reads it), a service-account token ([`auth`]) and a small JSON
//! API client ([`client`]) for what kando's `location` commands and LocationDelete do.
//!
//! Credentials, as Kanister's Profiles carry them:
//! - `keyPair`: `ID` is the Google project id, `Secret` the service account's JSON key;
//! - `secret` of type `secrets.kanister.io/gcp`: keys `gcp_project_id` and
//!   `service-account.json` (Kanister's `ValidateGCPCredentials`; Kanister's own location and
//!   restic code read only `keyPair` for gcs).
//!
//! Where requests go: the Profile's `location.endpoint` when set (Kanister ignores it for gcs
//! and always uses `https://storage.googleapis.com`; here it names an emulator or private
//! endpoint), else `STORAGE_EMULATOR_HOST` of this process's environment (as Google's
//! clients read it: `host:port`, plain http), else `https://storage.googleapis.com`. Every
//! request carries an OAuth2 token got with the key (a JWT signed RS256 to the key's
//! `token_uri`). Not supported: workload identity and other application-default credentials
//! (a Profile without a key), HMAC keys.

use serde::Deserialize;

use crate::param::profile::{
    Credential, GCP_PROJECT_ID_KEY, GCP_SECRET_TYPE, GCP_SERVICE_ACCOUNT_KEY, LOCATION_GCS, Profile,
};

pub mod auth;
pub mod client;
pub mod error;
pub mod upload;

pub use client::GcsClient;
pub use error::GcsError;

/// Google's JSON API host, used when neither the Profile nor the environment names another.
pub const GCS_HOST: &str = "https://storage.googleapis.com";
/// The environment variable Google's clients (and restic's gs backend) read for an emulator.
pub const EMULATOR_ENV: &str = "STORAGE_EMULATOR_HOST";
/// Where a service-account key gets its tokens when it names no `token_uri`.
pub const DEFAULT_TOKEN_URI: &str = "https://oauth2.googleapis.com/token";

/// Why a gcs Profile cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    #[error("location type {0} is not gcs")]
    NotGcs(String),
    #[error("Bucket not specified (set the Profile's location.bucket)")]
    NoBucket,
    #[error(
        "Unsupported type '{0}' for a gcs location's credential Secret (expected {GCP_SECRET_TYPE} \
         with {GCP_PROJECT_ID_KEY} and {GCP_SERVICE_ACCOUNT_KEY})"
    )]
    SecretType(String),
    #[error("Unsupported type 'kopia' for credentials of a gcs location")]
    Kopia,
    #[error(
        "the gcs Profile's credential names no Google project id (keyPair ID, or \
         {GCP_PROJECT_ID_KEY} of the {GCP_SECRET_TYPE} Secret)"
    )]
    NoProject,
    #[error(
        "the gcs Profile's service-account key (keyPair secret, or {GCP_SERVICE_ACCOUNT_KEY} of the \
         {GCP_SECRET_TYPE} Secret) is not a service account's JSON key: {0} (create one with \
         `gcloud iam service-accounts keys create`; workload identity is not supported)"
    )]
    Key(String),
}

/// A service account's JSON key: who signs, with what, for which token endpoint.
#[derive(Clone, PartialEq, Eq)]
pub struct ServiceKey {
    pub client_email: String,
    /// PKCS#8 PEM (`-----BEGIN PRIVATE KEY-----`).
    pub private_key: String,
    pub token_uri: String,
    /// The key as given (restic reads it from a file).
    pub json: String,
}

impl std::fmt::Debug for ServiceKey {
    /// Never prints the private key.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "ServiceKey {{ client_email: {:?}, token_uri: {:?}, private_key: *** }}",
            self.client_email, self.token_uri
        )
    }
}

impl ServiceKey {
    /// The key file's fields Google's clients read (`type`, `client_email`, `private_key`,
    /// `token_uri`); the rest (ids, cert URLs) is not needed.
    pub fn parse(json: &str) -> Result<ServiceKey, ConfigError> {
        #[derive(Deserialize)]
        struct File {
            #[serde(rename = "type", default)]
            type_: String,
            #[serde(default)]
            client_email: String,
            #[serde(default)]
            private_key: String,
            #[serde(default)]
            token_uri: String,
        }
        let f: File = serde_json::from_str(json).map_err(|e| ConfigError::Key(e.to_string()))?;
        if f.type_ != "service_account" {
            return Err(ConfigError::Key(format!(
                "its \"type\" is {:?}, not \"service_account\"",
                f.type_
            )));
        }
        for (name, v) in [
            ("client_email", &f.client_email),
            ("private_key", &f.private_key),
        ] {
            if v.trim().is_empty() {
                return Err(ConfigError::Key(format!("it has no \"{name}\"")));
            }
        }
        Ok(ServiceKey {
            client_email: f.client_email,
            private_key: f.private_key,
            token_uri: if f.token_uri.trim().is_empty() {
                DEFAULT_TOKEN_URI.to_string()
            } else {
                f.token_uri
            },
            json: json.to_string(),
        })
    }
}

/// A gcs Profile, ready to connect.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GcsProfile {
    pub bucket: String,
    /// `location.prefix` (may be empty).
    pub prefix: String,
    pub project_id: String,
    pub key: ServiceKey,
    /// The Profile's `location.endpoint` (empty: none).
    pub endpoint: String,
    pub skip_ssl_verify: bool,
}

impl GcsProfile {
    /// The JSON API base URL for this Profile ([`base_url`]).
    pub fn base_url(&self, emulator_host: Option<&str>) -> String {
        base_url(&self.endpoint, emulator_host)
    }
}

/// The JSON API base URL (`scheme://host[:port]`) for a Profile's `location.endpoint`, given
/// the process's `STORAGE_EMULATOR_HOST` (see the module docs).
pub fn base_url(endpoint: &str, emulator_host: Option<&str>) -> String {
    let with_scheme = |e: &str, default: &str| {
        let e = e.trim().trim_end_matches('/');
        if e.contains("://") {
            e.to_string()
        } else {
            format!("{default}://{e}")
        }
    };
    match (endpoint.trim(), emulator_host.map(str::trim)) {
        ("", Some(h)) if !h.is_empty() => with_scheme(h, "http"),
        ("", _) => GCS_HOST.to_string(),
        (e, _) => with_scheme(e, "https"),
    }
}

/// The project id and service-account key JSON a gcs Profile's credential carries.
pub fn credentials(c: &Credential) -> Result<(String, String), ConfigError> {
    let (project, key) = match c {
        Credential::KeyPair { id, secret } => (id.clone(), secret.clone()),
        Credential::Secret { type_, data } if type_ == GCP_SECRET_TYPE => {
            let get = |k: &str| data.get(k).cloned().unwrap_or_default();
            (get(GCP_PROJECT_ID_KEY), get(GCP_SERVICE_ACCOUNT_KEY))
        }
        Credential::Secret { type_, .. } => return Err(ConfigError::SecretType(type_.clone())),
        Credential::Kopia => return Err(ConfigError::Kopia),
    };
    if project.trim().is_empty() {
        return Err(ConfigError::NoProject);
    }
    Ok((project, key))
}

/// A gcs [`Profile`] as a GCS connection.
pub fn from_profile(p: &Profile) -> Result<GcsProfile, ConfigError> {
    let l = &p.location;
    if l.type_ != LOCATION_GCS {
        return Err(ConfigError::NotGcs(l.type_.clone()));
    }
    let (project_id, key) = credentials(&p.credential)?;
    let key = ServiceKey::parse(&key)?;
    if l.bucket.is_empty() {
        return Err(ConfigError::NoBucket);
    }
    Ok(GcsProfile {
        bucket: l.bucket.clone(),
        prefix: l.prefix.clone(),
        project_id,
        key,
        endpoint: l.endpoint.clone(),
        skip_ssl_verify: p.skip_ssl_verify,
    })
}

/// A service-account key for tests: the PEM of `testdata/test-key.pem`, `token_uri` as given.
#[cfg(test)]
pub(crate) fn test_key_json(token_uri: &str) -> String {
    serde_json::json!({
        "type": "service_account", "project_id": "proj", "private_key_id": "k1",
        "private_key": include_str!("testdata/test-key.pem"),
        "client_email": "bpo@proj.iam.gserviceaccount.com", "token_uri": token_uri,
    })
    .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use base64::Engine as _;
    use serde_json::{Value, json};

    fn params(cred: Value, endpoint: &str) -> Value {
        json!({"Profile": {
            "Location": {"Type": "gcs", "Bucket": "b", "Endpoint": endpoint, "Prefix": "p", "Region": ""},
            "Credential": cred, "SkipSSLVerify": false}})
    }

    fn read(v: &Value) -> Result<GcsProfile, String> {
        let p = Profile::from_params(v).map_err(|e| e.to_string())?;
        from_profile(&p).map_err(|e| e.to_string())
    }

    #[test]
    fn key_pair_and_gcp_secret_profiles() {
        let key = test_key_json("http://127.0.0.1:1/token");
        let kp = json!({"Type": "keyPair", "KeyPair": {"ID": "proj-1", "Secret": key}});
        let g = read(&params(kp, "")).unwrap();
        assert_eq!((g.bucket.as_str(), g.prefix.as_str()), ("b", "p"));
        assert_eq!(g.project_id, "proj-1");
        assert_eq!(g.key.client_email, "bpo@proj.iam.gserviceaccount.com");
        assert_eq!(g.key.token_uri, "http://127.0.0.1:1/token");
        assert!(!format!("{g:?}").contains("PRIVATE KEY"), "key in Debug");

        let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
        let sec = json!({"Type": "secret", "Secret": {"type": "secrets.kanister.io/gcp",
            "metadata": {"name": "gcp"},
            "data": {"gcp_project_id": b64("proj-2"), "service-account.json": b64(&key)}}});
        let g = read(&params(sec, "")).unwrap();
        assert_eq!(g.project_id, "proj-2");
        assert_eq!(g.key.json, key);
    }

    #[test]
    fn where_requests_go() {
        let key = test_key_json("");
        let kp = json!({"Type": "keyPair", "KeyPair": {"ID": "p", "Secret": key}});
        let g = read(&params(kp.clone(), "")).unwrap();
        assert_eq!(g.key.token_uri, DEFAULT_TOKEN_URI);
        assert_eq!(g.base_url(None), GCS_HOST);
        assert_eq!(g.base_url(Some("")), GCS_HOST);
        assert_eq!(g.base_url(Some("127.0.0.1:4443")), "http://127.0.0.1:4443");
        let g = read(&params(kp.clone(), "http://fake:8080/")).unwrap();
        assert_eq!(g.base_url(Some("127.0.0.1:4443")), "http://fake:8080");
        let g = read(&params(kp, "gcs.internal")).unwrap();
        assert_eq!(g.base_url(None), "https://gcs.internal");
    }

    #[test]
    fn bad_gcs_profiles_are_named() {
        let kp =
            |secret: &str| json!({"Type": "keyPair", "KeyPair": {"ID": "p", "Secret": secret}});
        let e = read(&params(kp("not json"), "")).unwrap_err();
        assert!(e.contains("is not a service account's JSON key"), "{e}");
        let e = read(&params(kp(r#"{"type":"authorized_user"}"#), "")).unwrap_err();
        assert!(e.contains("not \"service_account\""), "{e}");
        let e = read(&params(
            kp(r#"{"type":"service_account","client_email":"a"}"#),
            "",
        ))
        .unwrap_err();
        assert!(e.contains("no \"private_key\""), "{e}");
        let aws = json!({"Type": "secret", "Secret": {"type": "secrets.kanister.io/aws",
            "data": {"aws_access_key_id": "QQ==", "aws_secret_access_key": "QQ=="}}});
        let e = read(&params(aws, "")).unwrap_err();
        assert!(e.contains("expected secrets.kanister.io/gcp"), "{e}");
        let missing = json!({"Type": "secret", "Secret": {"type": "secrets.kanister.io/gcp",
            "data": {"gcp_project_id": "QQ=="}}});
        let e = read(&params(missing, "")).unwrap_err();
        assert!(e.contains("service-account.json"), "{e}");
        let mut no_bucket = params(kp(&test_key_json("")), "");
        no_bucket["Profile"]["Location"]["Bucket"] = json!("");
        assert!(
            read(&no_bucket)
                .unwrap_err()
                .starts_with("Bucket not specified")
        );
    }
}
