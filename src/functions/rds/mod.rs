//! What the four RDS functions share (Kanister's `pkg/function/rds_utils.go` and
//! `pkg/aws`): the AWS credentials and region of a call ([`connect`]), the RDS client
//! ([`client`]), its errors ([`error`]) and waiters ([`wait`]), Aurora engines, and the
//! YAML lists Kanister's outputs and arguments carry (`securityGroupID`, `databases`).
//!
//! Credentials (`credentialsSource`): `profile` (default), the ActionSet's Profile (credential
//! `keyPair`, or `secret` with `aws_access_key_id`/`aws_secret_access_key`/`aws_session_token`);
//! `secret`, the Secret named by `credentialsSecret` among the ActionSet's `secrets` or the
//! phase's `objects`. The region: the `region` argument, else the Profile's `location.region`
//! (`profile` only), else `AWS_REGION`/`AWS_DEFAULT_REGION` of the controller. Not supported
//! here (a clear error): `eks_service_account` and a Secret's `role` (both need STS).
//!
//! The endpoint: AWS's `https://rds.<region>.amazonaws.com`, or the AWS SDKs' standard
//! `AWS_ENDPOINT_URL_RDS` (else `AWS_ENDPOINT_URL`) of the controller's environment (Kanister
//! has no such setting; tests point it at moto).

use std::collections::BTreeMap;

use serde_json::Value;

use crate::aws::Credentials;
use crate::aws::rds::{RdsClient, Waits, client};
use crate::functions::args::Args;
use crate::functions::error::FunctionError;
use crate::param::profile::{self, Credential, Profile};

pub mod dump;
pub mod instance;

/// The endpoint environment variables, most specific first.
pub const ENDPOINT_ENV: [&str; 2] = ["AWS_ENDPOINT_URL_RDS", "AWS_ENDPOINT_URL"];

/// The credential arguments every RDS function takes.
pub const CREDENTIALS_SOURCE_ARG: &str = "credentialsSource";
pub const CREDENTIALS_SECRET_ARG: &str = "credentialsSecret";
pub const REGION_ARG: &str = "region";

/// Kanister's Aurora engines (`isAuroraCluster`): snapshots of clusters, not instances.
pub fn is_aurora(engine: &str) -> bool {
    matches!(engine, "aurora" | "aurora-mysql" | "aurora-postgresql")
}

/// A client and the waits, from the function's credential arguments and the template
/// parameters (Kanister's `parseCredentialsSource` + `getAwsConfig` + `rds.NewClient`).
pub fn connect(
    function: &'static str,
    a: &Args,
    params: &Value,
) -> Result<(RdsClient, Waits), FunctionError> {
    let source = a
        .opt_string(CREDENTIALS_SOURCE_ARG)?
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "profile".into());
    let secret = a.opt_string(CREDENTIALS_SECRET_ARG)?.unwrap_or_default();
    if source == "secret" && secret.is_empty() {
        return Err(FunctionError::arg(
            function,
            CREDENTIALS_SECRET_ARG,
            "credentialsSecret is required if credentialsSource is set to 'secret'",
        ));
    }
    let region_arg = a.opt_string(REGION_ARG)?.unwrap_or_default();
    let failed =
        |m: String| FunctionError::failed(function, format!("Failed to get AWS creds: {m}"));
    let (keys, profile_region, described) = match source.as_str() {
        "profile" => {
            let p = Profile::from_params(params)
                .map_err(|e| failed(format!("Profile Validation failed: {e}")))?;
            (
                profile_keys(&p).map_err(|e| failed(e.to_string()))?,
                p.location.region.clone(),
                "the Profile's credential".to_string(),
            )
        }
        "secret" => {
            let data = param_secret(params, &secret).ok_or_else(|| {
                failed(format!(
                    "Cannot find secret in actionset secrets: no Secret {secret:?} among the ActionSet's `secrets` or the phase's `objects` (credentialsSecret names one of those keys)"
                ))
            })?;
            let what = format!("the Secret {secret:?} (credentialsSecret)");
            (
                secret_keys(&data, &what).map_err(|e| failed(e.to_string()))?,
                String::new(),
                what,
            )
        }
        "eks_service_account" => {
            return Err(failed(
                "credentialsSource eks_service_account (an IAM role through the web identity token of AWS_WEB_IDENTITY_TOKEN_FILE and AWS_ROLE_ARN) is not supported by this executor; use credentialsSource profile or secret with access keys".into(),
            ));
        }
        other => {
            return Err(failed(format!(
                "Invalid awsCredentials type {other:?} (expected profile, secret or eks_service_account)"
            )));
        }
    };
    let env = |k: &str| std::env::var(k).ok().filter(|v| !v.trim().is_empty());
    let region = [Some(region_arg), Some(profile_region)]
        .into_iter()
        .flatten()
        .find(|r| !r.trim().is_empty())
        .or_else(|| env("AWS_REGION"))
        .or_else(|| env("AWS_DEFAULT_REGION"))
        .ok_or_else(|| {
            failed("no AWS region: set the function's `region` argument (or the Profile's location.region, or AWS_REGION of the controller)".into())
        })?;
    let endpoint = ENDPOINT_ENV.iter().find_map(|k| env(k));
    let client = RdsClient::new(&client::Config {
        region: region.trim().to_string(),
        endpoint,
        credentials: keys,
        credentials_source: described,
    })
    .map_err(|e| FunctionError::rds(function, "Failed to create RDS client", e))?;
    let waits = Waits::from_env()
        .map_err(|e| FunctionError::rds(function, "Failed to create RDS client", e))?;
    Ok((client, waits))
}

const MISSING_KEYS: &str = "Missing AWS credentials, please check that either AWS access keys or web identity token are provided";

/// Why a credential holds no usable AWS keys.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KeysError {
    #[error("the Profile's credential type kopia holds no AWS keys; use keyPair or secret")]
    Kopia,
    #[error(
        "{what} sets `{role}` (assume an IAM role), which this executor does not do; put the role's keys in it instead",
        role = profile::AWS_ROLE_KEY
    )]
    AssumeRole { what: String },
    #[error(
        "{MISSING_KEYS} ({what} needs {id} and {secret})",
        id = profile::AWS_ACCESS_KEY_ID_KEY,
        secret = profile::AWS_SECRET_ACCESS_KEY_KEY
    )]
    Missing { what: String },
}

fn profile_keys(p: &Profile) -> Result<Credentials, KeysError> {
    match &p.credential {
        Credential::KeyPair { id, secret } => Ok(Credentials {
            access_key_id: id.clone(),
            secret_access_key: secret.clone(),
            session_token: None,
        }),
        Credential::Secret { data, .. } => secret_keys(data, "the Profile's credential Secret"),
        Credential::Kopia => Err(KeysError::Kopia),
    }
}

/// AWS keys from Secret data (Kanister's `secrets.AWSAccessKeyID`, ... keys).
fn secret_keys(data: &BTreeMap<String, String>, what: &str) -> Result<Credentials, KeysError> {
    let get = |k: &str| {
        data.get(k)
            .map(|v| v.trim().to_string())
            .unwrap_or_default()
    };
    if !get(profile::AWS_ROLE_KEY).is_empty() {
        return Err(KeysError::AssumeRole {
            what: what.to_string(),
        });
    }
    let (id, secret) = (
        get(profile::AWS_ACCESS_KEY_ID_KEY),
        get(profile::AWS_SECRET_ACCESS_KEY_KEY),
    );
    if id.is_empty() || secret.is_empty() {
        return Err(KeysError::Missing {
            what: what.to_string(),
        });
    }
    let token = get(profile::AWS_SESSION_TOKEN_KEY);
    Ok(Credentials {
        access_key_id: id,
        secret_access_key: secret,
        session_token: (!token.is_empty()).then_some(token),
    })
}

/// The decoded data of Secret `name` of the ActionSet (`.Secrets`) or of the current phase's
/// `objects` (`.CurrentPhase.Secrets`, `.DeferPhase.Secrets` in a deferPhase), as Kanister's
/// `getParamSecret`.
fn param_secret(params: &Value, name: &str) -> Option<BTreeMap<String, String>> {
    use base64::Engine as _;
    let secret = [
        params.pointer("/Secrets"),
        params.pointer("/CurrentPhase/Secrets"),
        params.pointer("/DeferPhase/Secrets"),
    ]
    .into_iter()
    .flatten()
    .find_map(|m| m.get(name))?;
    let mut out = BTreeMap::new();
    for (k, v) in secret
        .get("data")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
    {
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(v.as_str().unwrap_or(""))
            .unwrap_or_default();
        out.insert(k.clone(), String::from_utf8_lossy(&bytes).into_owned());
    }
    for (k, v) in secret
        .get("stringData")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
    {
        out.insert(k.clone(), v.as_str().unwrap_or("").to_string());
    }
    Some(out)
}

/// Kanister's `GetYamlList`: a list argument, or a string holding a YAML list (what Kanister's
/// outputs carry: `securityGroupID` is `"- sg-1\n- sg-2\n"`); `None` when absent, empty or
/// `null`.
pub fn yaml_list(
    function: &'static str,
    args: &serde_json::Map<String, Value>,
    name: &str,
) -> Result<Option<Vec<String>>, FunctionError> {
    let bad = || {
        FunctionError::arg(
            function,
            name,
            format!(
                "Invalid {name} arg format: expected a list of strings, or a string holding a YAML list"
            ),
        )
    };
    match args.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Array(items)) => items
            .iter()
            .map(|v| match v {
                Value::String(s) => Ok(s.clone()),
                Value::Number(n) => Ok(n.to_string()),
                Value::Bool(b) => Ok(b.to_string()),
                _ => Err(bad()),
            })
            .collect::<Result<Vec<_>, _>>()
            .map(Some),
        Some(Value::String(s)) if s.trim().is_empty() => Ok(None),
        Some(Value::String(s)) => serde_yaml::from_str::<Option<Vec<String>>>(s).map_err(|e| {
            FunctionError::arg(
                function,
                name,
                format!("Invalid {name} arg format: {s:?} is not a YAML list of strings: {e}"),
            )
        }),
        Some(_) => Err(bad()),
    }
}

/// A list as Kanister's outputs write it (`yaml.Marshal` of a Go slice): `"- a\n- b\n"`, and
/// `"null\n"` for none.
pub fn yaml_output(list: &[String]) -> String {
    if list.is_empty() {
        return "null\n".into();
    }
    serde_yaml::to_string(list).unwrap_or_else(|_| "null\n".into())
}

/// `<base>-<10 random characters>` (Kanister's `fmt.Sprintf("%s-%s", id, rand.String(10))`).
pub fn random_id(base: &str) -> String {
    format!("{base}-{}", crate::restic::random_tag())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn yaml_lists_read_and_written_as_kanister() {
        let args = json!({"a": "- sg-1\n- sg-2\n", "b": ["x", 1], "c": "null\n", "d": "", "e": 3, "f": "{"})
            .as_object()
            .cloned()
            .unwrap();
        let l = |n| yaml_list("F", &args, n);
        assert_eq!(l("a").unwrap(), Some(vec!["sg-1".into(), "sg-2".into()]));
        assert_eq!(l("b").unwrap(), Some(vec!["x".into(), "1".into()]));
        assert_eq!(l("c").unwrap(), None);
        assert_eq!(l("d").unwrap(), None);
        assert_eq!(l("missing").unwrap(), None);
        assert!(
            l("e")
                .unwrap_err()
                .to_string()
                .contains("Invalid e arg format")
        );
        assert!(l("f").is_err());
        assert_eq!(
            yaml_output(&["sg-1".into(), "sg-2".into()]),
            "- sg-1\n- sg-2\n"
        );
        assert_eq!(yaml_output(&[]), "null\n");
        assert_eq!(
            yaml_list(
                "F",
                &json!({"a": yaml_output(&["true".into()])})
                    .as_object()
                    .cloned()
                    .unwrap(),
                "a"
            )
            .unwrap(),
            Some(vec!["true".into()])
        );
        let id = random_id("db-1");
        assert!(id.starts_with("db-1-") && id.len() == 15, "{id}");
        assert!(is_aurora("aurora-mysql") && !is_aurora("PostgreSQL") && !is_aurora(""));
    }

    #[test]
    fn credentials_come_from_the_profile_or_a_secret() {
        let a = |v: Value| v.as_object().cloned().unwrap();
        let profile = json!({"Profile": {
            "Location": {"Type": "s3Compliant", "Bucket": "b", "Region": "eu-west-1"},
            "Credential": {"Type": "keyPair", "KeyPair": {"ID": "AK", "Secret": "SK"}},
        }});
        let args = a(json!({}));
        let (c, _) = connect("F", &Args::new("F", &args), &profile).unwrap();
        assert_eq!(c.region(), "eu-west-1");
        let args = a(json!({"region": "us-west-2"}));
        let (c, _) = connect("F", &Args::new("F", &args), &profile).unwrap();
        assert_eq!(c.region(), "us-west-2");

        let secret = json!({"CurrentPhase": {"Secrets": {"aws": {"data": {
            "aws_access_key_id": "QUs=", "aws_secret_access_key": "U0s="}}}}});
        let args =
            a(json!({"credentialsSource": "secret", "credentialsSecret": "aws", "region": "r1"}));
        let (c, _) = connect("F", &Args::new("F", &args), &secret).unwrap();
        assert_eq!(c.region(), "r1");
        let err = |args: Value, params: &Value| {
            let args = a(args);
            connect("F", &Args::new("F", &args), params)
                .unwrap_err()
                .to_string()
        };
        assert!(
            err(json!({"credentialsSource": "secret"}), &secret)
                .contains("credentialsSecret is required if credentialsSource is set to 'secret'")
        );
        assert!(
            err(
                json!({"credentialsSource": "secret", "credentialsSecret": "nope", "region": "r"}),
                &secret
            )
            .contains("Cannot find secret in actionset secrets: no Secret \"nope\"")
        );
        assert!(
            err(json!({}), &json!({}))
                .contains("Profile Validation failed: Profile must be non-nil")
        );
        assert!(
            err(json!({"credentialsSource": "eks_service_account"}), &secret)
                .contains("not supported")
        );
        assert!(
            err(json!({"credentialsSource": "magic"}), &secret)
                .contains("Invalid awsCredentials type")
        );
        let role = json!({"Secrets": {"aws": {"stringData": {
            "aws_access_key_id": "AK", "aws_secret_access_key": "SK", "role": "arn:aws:iam::1:role/r"}}}});
        assert!(
            err(
                json!({"credentialsSource": "secret", "credentialsSecret": "aws", "region": "r"}),
                &role
            )
            .contains("assume an IAM role")
        );
        let empty = json!({"Secrets": {"aws": {"data": {}}}});
        assert!(
            err(
                json!({"credentialsSource": "secret", "credentialsSecret": "aws", "region": "r"}),
                &empty
            )
            .contains("Missing AWS credentials")
        );
    }
}
