//! A small S3 client for what the controller itself does on a Profile's
//! object store (LocationDelete) and for kando's streams: ListObjectsV2
//! (paginated), PutObject, DeleteObject and DeleteObjects, GetObject and
//! multipart uploads ([`transfer`]), signed with AWS Signature Version 4.
//!
//! - HTTP/1.1 through hyper (the stack kube already uses), `http://` and
//!   `https://` endpoints, TLS with rustls (ring) and the system's root
//!   certificates; `skipSSLVerify` accepts any server certificate ([`tls`]).
//! - Path-style URLs only (`<endpoint>/<bucket>/<key>`), as Kanister's stow
//!   provider uses whenever an endpoint is set; without an endpoint
//!   `https://s3.<region>.amazonaws.com`. Region default `us-east-1`; when
//!   the store answers that the bucket is in another region
//!   (AuthorizationHeaderMalformed / PermanentRedirect naming it), that
//!   region is used from then on (Kanister looks the bucket's region up too).
//! - Signed by AWS's `aws-sigv4` ([`sigv4`]); payloads are signed
//!   (`x-amz-content-sha256` is the body's SHA-256).
//! - DeleteObjects sends `x-amz-checksum-sha256` (AWS accepts it in place of
//!   `Content-MD5`); stores that refuse the batch call (NotImplemented,
//!   MissingContentMD5, ...) get one DeleteObject per key instead.
//! - Documents are read and written with `quick-xml` ([`xml`]); error
//!   responses are decoded (`<Error><Code>`) and worded with what to check in
//!   the Profile ([`error`]); transient failures (5xx, connection errors) are
//!   tried up to three times with `backon` ([`client`]).

use serde_json::Value;

use super::profile::{self, Credential, Profile, ProfileError};

pub mod client;
pub mod error;
pub mod sigv4;
pub(crate) mod tls;
pub mod transfer;
pub mod xml;

pub use client::{Config, S3Client};
use client::{Exchange, Reply};
pub use error::S3Error;
pub use sigv4::{Credentials, EMPTY_SHA256};
pub use xml::{DeleteFailure, ListPage, ServiceError};

/// Region used when the Profile names none.
pub const DEFAULT_REGION: &str = "us-east-1";

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
