//! A Profile's object store, as Kanister's `pkg/location`: the s3Compliant Profile made an S3
//! connection ([`profile_from_params`]), the object keys an artifact names ([`key`]), and deleting
//! a path with what is below it ([`delete_path`]); an azure Profile made a Blob service
//! connection ([`azure`]); a gcs one is [`crate::gcs::from_profile`]'s. Any of them behind
//! [`StoreProfile`] and [`StoreClient`]. LocationDelete and kando's `location` commands use it;
//! the clients themselves are [`crate::aws::s3`], [`crate::gcs`] and [`crate::azure`].

use serde_json::Value;

use crate::aws::s3::{Config, Credentials, S3Client, S3Error};
use crate::param::profile::{self, Credential, Profile, ProfileError};

pub mod azure;
mod key;
mod store;

pub use azure::{AzureProfile, AzureProfileError};
pub use key::{KeyPrefixError, clean_path, clean_relative, is_under, key_prefix, keys_under};
pub use store::{StoreClient, StoreError, StoreProfile};

/// An s3Compliant Profile (`.Profile` template parameter), ready to connect.
#[derive(Debug, Clone)]
pub struct S3Profile {
    pub bucket: String,
    /// `location.prefix` (may be empty).
    pub prefix: String,
    pub config: Config,
}

/// The Profile from the template parameters (`params["Profile"]`), checked
/// by [`Profile::from_params`] (Kanister's `ValidateProfile`, same texts),
/// then made an S3 connection (Kanister's `getAWSSecret`): credential
/// `keyPair`, or `secret` of type `secrets.kanister.io/aws` without a `role`.
pub fn profile_from_params(params: &Value) -> Result<S3Profile, ProfileError> {
    from_profile(&Profile::from_params(params)?)
}

/// An s3Compliant [`Profile`] as an S3 connection.
pub fn from_profile(p: &Profile) -> Result<S3Profile, ProfileError> {
    let l = &p.location;
    if l.type_ != profile::LOCATION_S3 {
        return Err(ProfileError::NotS3(l.type_.clone()));
    }
    let credentials = match &p.credential {
        Credential::KeyPair { id, secret } => Credentials {
            access_key_id: id.clone(),
            secret_access_key: secret.clone(),
            session_token: None,
        },
        Credential::Secret { type_, data } if type_ == profile::AWS_SECRET_TYPE => {
            let get = |k: &str| data.get(k).cloned().unwrap_or_default();
            if !get(profile::AWS_ROLE_KEY).is_empty() {
                return Err(ProfileError::AssumeRole);
            }
            let token = get(profile::AWS_SESSION_TOKEN_KEY);
            Credentials {
                access_key_id: get(profile::AWS_ACCESS_KEY_ID_KEY),
                secret_access_key: get(profile::AWS_SECRET_ACCESS_KEY_KEY),
                session_token: (!token.is_empty()).then_some(token),
            }
        }
        Credential::Secret { type_, .. } => return Err(ProfileError::S3SecretType(type_.clone())),
        Credential::Kopia => return Err(ProfileError::S3Kopia),
    };
    if l.bucket.is_empty() {
        return Err(ProfileError::NoBucket);
    }
    Ok(S3Profile {
        bucket: l.bucket.clone(),
        prefix: l.prefix.clone(),
        config: Config {
            endpoint: l.endpoint.clone(),
            region: l.region.clone(),
            credentials,
            skip_ssl_verify: p.skip_ssl_verify,
        },
    })
}

/// Deletes `path` and every key below it; returns how many objects went.
pub async fn delete_path(client: &S3Client, bucket: &str, path: &str) -> Result<usize, S3Error> {
    let keys = keys_under(client.list_all(bucket, path, None).await?, path);
    client.delete_keys(bucket, &keys).await
}

#[cfg(test)]
mod tests {
    use super::*;
    use base64::Engine as _;
    use serde_json::json;

    fn profile(cred: Value, location: Value) -> Value {
        json!({"Profile": {"Location": location, "Credential": cred, "SkipSSLVerify": true}})
    }

    #[test]
    fn profiles_are_validated_like_kanister() {
        let loc = json!({"Type": "s3Compliant", "Bucket": "b", "Endpoint": "http://e:1", "Prefix": "p", "Region": ""});
        let kp = json!({"Type": "keyPair", "KeyPair": {"ID": "id", "Secret": "s"}});
        let p = profile_from_params(&profile(kp.clone(), loc.clone())).unwrap();
        assert_eq!(p.bucket, "b");
        assert_eq!(p.prefix, "p");
        assert!(p.config.skip_ssl_verify);
        assert_eq!(p.config.credentials.access_key_id, "id");

        let err = |v: Value| profile_from_params(&v).unwrap_err().to_string();
        assert!(err(json!({})).starts_with("Profile must be non-nil"));
        assert_eq!(
            err(profile(
                json!({"Type": "keyPair", "KeyPair": {"ID": "", "Secret": "s"}}),
                loc.clone()
            )),
            "Access key ID is not set"
        );
        assert!(
            err(profile(kp.clone(), json!({"Type": "gcs", "Bucket": "b"})))
                .contains("location type gcs is not supported")
        );
        assert_eq!(
            err(profile(kp.clone(), json!({"Type": "ftp", "Bucket": "b"}))),
            "Location type not supported"
        );
        assert!(
            err(profile(kp, json!({"Type": "s3Compliant"}))).starts_with("Bucket not specified")
        );

        // Credential type secret: a Kubernetes Secret with the AWS keys.
        let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
        let sec = json!({"Type": "secret", "Secret": {"type": "secrets.kanister.io/aws", "metadata": {"name": "aws"}, "data": {
            "aws_access_key_id": b64("AK"), "aws_secret_access_key": b64("SK"), "aws_session_token": b64("T")}}});
        let p = profile_from_params(&profile(sec, loc.clone())).unwrap();
        assert_eq!(p.config.credentials.secret_access_key, "SK");
        assert_eq!(p.config.credentials.session_token.as_deref(), Some("T"));
        let role = json!({"Type": "secret", "Secret": {"type": "secrets.kanister.io/aws", "metadata": {"name": "aws"}, "data": {
            "aws_access_key_id": b64("AK"), "aws_secret_access_key": b64("SK"), "role": b64("arn:x")}}});
        assert!(err(profile(role, loc)).contains("IAM role"));
    }
}
