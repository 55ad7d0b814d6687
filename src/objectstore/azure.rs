//! An `azure` Profile as a Blob service connection (Kanister's `getAzureSecret`): credential
//! `keyPair` (ID = the storage account name, Secret = its key) or `secret` of type
//! `secrets.kanister.io/azure` (`azure_storage_account_id`, `azure_storage_key`, optional
//! `azure_storage_environment`); the Profile's bucket is the container.

use super::keys_under;
use crate::azure::client::Config;
use crate::azure::{AzureClient, AzureError};
use crate::param::profile::{
    AZURE_ACCOUNT_ID_KEY, AZURE_ACCOUNT_KEY_KEY, AZURE_ENVIRONMENT_KEY, AZURE_SECRET_TYPE,
    Credential, LOCATION_AZURE, Profile,
};

/// An azure Profile, ready to connect.
#[derive(Debug, Clone)]
pub struct AzureProfile {
    /// The container (`location.bucket`).
    pub container: String,
    /// `location.prefix` (may be empty).
    pub prefix: String,
    pub config: Config,
}

/// Why an azure Profile cannot be used; the texts are Kanister's where it has one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AzureProfileError {
    #[error("location type {0} is not azure")]
    NotAzure(String),
    #[error(
        "Unsupported type '{0}' for an azure location's credential Secret (expected {AZURE_SECRET_TYPE})"
    )]
    SecretType(String),
    #[error(
        "Failed to extract azure credentials: Secret has an unknown field {0:?} (it may hold \
         {AZURE_ACCOUNT_ID_KEY}, {AZURE_ACCOUNT_KEY_KEY} and {AZURE_ENVIRONMENT_KEY})"
    )]
    UnknownField(String),
    #[error(
        "Failed to extract azure credentials: Azure secret is missing storage account ID or \
         storage key ({AZURE_ACCOUNT_ID_KEY}, {AZURE_ACCOUNT_KEY_KEY})"
    )]
    MissingKeys,
    #[error("Unsupported type 'kopia' for credentials of an azure location")]
    Kopia,
    #[error("Container not specified (set the Profile's location.bucket to the Blob container)")]
    NoContainer,
}

/// The storage account, its key and the cloud's name from the Profile's credential.
pub fn credentials(c: &Credential) -> Result<(String, String, String), AzureProfileError> {
    match c {
        Credential::KeyPair { id, secret } => Ok((id.clone(), secret.clone(), String::new())),
        Credential::Secret { type_, data } if type_ == AZURE_SECRET_TYPE => {
            let known = [
                AZURE_ACCOUNT_ID_KEY,
                AZURE_ACCOUNT_KEY_KEY,
                AZURE_ENVIRONMENT_KEY,
            ];
            if let Some(k) = data.keys().find(|k| !known.contains(&k.as_str())) {
                return Err(AzureProfileError::UnknownField(k.clone()));
            }
            let get = |k: &str| data.get(k).cloned().unwrap_or_default();
            let (account, key) = (get(AZURE_ACCOUNT_ID_KEY), get(AZURE_ACCOUNT_KEY_KEY));
            if account.is_empty() || key.is_empty() {
                return Err(AzureProfileError::MissingKeys);
            }
            Ok((account, key, get(AZURE_ENVIRONMENT_KEY)))
        }
        Credential::Secret { type_, .. } => Err(AzureProfileError::SecretType(type_.clone())),
        Credential::Kopia => Err(AzureProfileError::Kopia),
    }
}

/// An azure [`Profile`] as a Blob service connection.
pub fn from_profile(p: &Profile) -> Result<AzureProfile, AzureProfileError> {
    let l = &p.location;
    if l.type_ != LOCATION_AZURE {
        return Err(AzureProfileError::NotAzure(l.type_.clone()));
    }
    let (account, key, environment) = credentials(&p.credential)?;
    if l.bucket.is_empty() {
        return Err(AzureProfileError::NoContainer);
    }
    Ok(AzureProfile {
        container: l.bucket.clone(),
        prefix: l.prefix.clone(),
        config: Config {
            account,
            key,
            endpoint: l.endpoint.clone(),
            environment,
            skip_ssl_verify: p.skip_ssl_verify,
        },
    })
}

/// Deletes the blob `path` and every blob below it (`path/...`, not `path-old`); returns how
/// many went. A blob already gone (deleted by someone else meanwhile) counts as deleted.
pub async fn delete_path(
    client: &AzureClient,
    container: &str,
    path: &str,
) -> Result<usize, AzureError> {
    let names = keys_under(client.list(container, path).await?, path);
    for name in &names {
        match client.delete_blob(container, name).await {
            Err(e) if e.code() == Some("BlobNotFound") => {}
            other => other?,
        }
    }
    Ok(names.len())
}

#[cfg(test)]
mod tests {
    use super::*;
    use base64::Engine as _;
    use serde_json::{Value, json};

    fn profile(cred: Value) -> Result<AzureProfile, String> {
        let params = json!({"Profile": {
            "Location": {"Type": "azure", "Bucket": "backups", "Prefix": "team-a", "Endpoint": "http://127.0.0.1:10000/acct"},
            "Credential": cred, "SkipSSLVerify": true}});
        let p = Profile::from_params(&params).map_err(|e| e.to_string())?;
        from_profile(&p).map_err(|e| e.to_string())
    }

    #[test]
    fn key_pair_and_secret_profiles() {
        let p = profile(json!({"Type": "keyPair", "KeyPair": {"ID": "acct", "Secret": "a2V5"}}))
            .unwrap();
        assert_eq!(
            (p.container.as_str(), p.prefix.as_str()),
            ("backups", "team-a")
        );
        assert_eq!(
            (p.config.account.as_str(), p.config.key.as_str()),
            ("acct", "a2V5")
        );
        assert_eq!(p.config.endpoint, "http://127.0.0.1:10000/acct");
        assert!(p.config.skip_ssl_verify);

        let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
        let secret = |data: Value| json!({"Type": "secret", "Secret": {"type": "secrets.kanister.io/azure", "metadata": {"name": "az"}, "data": data}});
        let p = profile(secret(
            json!({"azure_storage_account_id": b64("acct"), "azure_storage_key": b64("a2V5"),
            "azure_storage_environment": b64("AzureChinaCloud")}),
        ))
        .unwrap();
        assert_eq!(p.config.account, "acct");
        assert_eq!(p.config.environment, "AzureChinaCloud");

        let e = profile(secret(json!({"azure_storage_account_id": b64("acct"), "azure_storage_key": b64("k"), "extra": b64("x")})))
            .unwrap_err();
        assert!(e.contains("unknown field \"extra\""), "{e}");
        let e = profile(secret(json!({"azure_storage_account_id": b64("acct")}))).unwrap_err();
        assert!(e.contains("azure_storage_key"), "{e}");
        let aws = json!({"Type": "secret", "Secret": {"type": "secrets.kanister.io/aws", "metadata": {"name": "a"}, "data": {
            "aws_access_key_id": b64("AK"), "aws_secret_access_key": b64("SK")}}});
        assert!(
            profile(aws)
                .unwrap_err()
                .contains("expected secrets.kanister.io/azure")
        );

        let no_container = Profile::from_params(&json!({"Profile": {"Location": {"Type": "azure"},
            "Credential": {"Type": "keyPair", "KeyPair": {"ID": "a", "Secret": "k"}}}}))
        .unwrap();
        assert!(
            from_profile(&no_container)
                .unwrap_err()
                .to_string()
                .contains("Container not specified")
        );
    }
}
