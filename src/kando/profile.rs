//! The `--profile` JSON: a Kanister `param.Profile` as Blueprints render it
//! with `'{{ toJson .Profile }}'`, read as Go's `json.Unmarshal` reads it
//! into that struct (Kanister `pkg/kando/location.go`, `unmarshalProfileFlag`).
//!
//! Go matches JSON keys to struct fields ignoring case, so both spellings
//! work: Kanister's own `toJson` writes `{"Location":{"type":..,"bucket":..}}`
//! (the CRD's JSON tags), this executor's writes `{"Location":{"Type":..,
//! "Bucket":..}}`. The value is checked against `param.Profile`'s schema
//! ([`crate::param`]) and put in `toJson`'s spelling, then the Profile is
//! checked and made a connection of its location type by the executor's own
//! code ([`crate::objectstore::StoreProfile`], as LocationDelete does).

use serde_json::{Map, Value};

use crate::objectstore::StoreProfile;
use crate::param::{self, Ty, profile};

/// Why `--profile` is no s3Compliant, gcs or azure Profile kando can use.
#[derive(Debug, thiserror::Error)]
pub enum ProfileFlagError {
    #[error("Please provide the --profile flag")]
    Missing,
    #[error(
        "failed to unmarshal profile: {0} (pass the Profile as --profile '{{{{ toJson .Profile }}}}')"
    )]
    Json(#[source] serde_json::Error),
    #[error("--profile is null: the ActionSet's action names no Profile (set actions[].profile)")]
    Null,
    #[error("failed to unmarshal profile: {at} must be {want}, not {got}")]
    Type {
        at: String,
        want: &'static str,
        got: &'static str,
    },
    #[error(
        "the Profile's location type is kopia: Kanister's Kopia repository server data path \
         (kando location push/pull/delete through a Kopia server, --output-name, \
         --kopia-snapshot) is not supported by this kando; use an s3Compliant, gcs or azure Profile"
    )]
    Kopia,
    #[error("Unsupported Location type: {0}")]
    UnsupportedLocation(String),
    #[error("invalid --profile: {0}")]
    Invalid(#[source] profile::ProfileError),
    #[error("invalid --profile: {0}")]
    Store(#[source] crate::objectstore::StoreError),
}

/// The Profile of `--profile`, ready to connect (s3Compliant, gcs or azure).
pub fn parse(json: &str) -> Result<StoreProfile, ProfileFlagError> {
    if json.is_empty() {
        return Err(ProfileFlagError::Missing);
    }
    let v: Value = serde_json::from_str(json).map_err(ProfileFlagError::Json)?;
    if v.is_null() {
        return Err(ProfileFlagError::Null);
    }
    let profile = canonical(&v, param::profile_ty(), "Profile")?;
    let location_type = param::get(&profile, "Location")
        .and_then(|l| param::get(l, "Type"))
        .and_then(Value::as_str)
        .unwrap_or("");
    match location_type {
        profile::LOCATION_S3 | profile::LOCATION_GCS | profile::LOCATION_AZURE => {}
        profile::LOCATION_KOPIA => return Err(ProfileFlagError::Kopia),
        other => return Err(ProfileFlagError::UnsupportedLocation(other.to_string())),
    }
    let profile = profile::Profile::from_params(&serde_json::json!({ "Profile": profile }))
        .map_err(ProfileFlagError::Invalid)?;
    StoreProfile::from_profile(&profile).map_err(ProfileFlagError::Store)
}

/// `v` read as a value of struct type `ty`: keys matched to fields ignoring
/// case (the last of several spellings winning, as Go does) and written as
/// `json.Marshal` would; other keys dropped. Strings, booleans and nested
/// structs are checked; maps, embedded metadata and the rest are kept as given.
fn canonical(v: &Value, ty: &Ty, at: &str) -> Result<Value, ProfileFlagError> {
    let obj = match v {
        Value::Object(o) => o,
        Value::Null => return Ok(Value::Null),
        other => return Err(type_error(at, "a JSON object", other)),
    };
    let fields = ty.as_struct().map(|(_, f)| f).unwrap_or_default();
    let mut out = Map::new();
    for (k, val) in obj {
        let Some(field) = fields.iter().find(|f| {
            f.name.eq_ignore_ascii_case(k) || f.json.is_some_and(|j| j.eq_ignore_ascii_case(k))
        }) else {
            continue;
        };
        let here = format!("{at}.{}", field.name);
        let val = match (&field.ty, val) {
            (_, Value::Null) => Value::Null,
            (Ty::Str, Value::String(_)) | (Ty::Bool, Value::Bool(_)) => val.clone(),
            (Ty::Str, other) => return Err(type_error(&here, "a string", other)),
            (Ty::Bool, other) => return Err(type_error(&here, "true or false", other)),
            (ty, _) if !field.embedded && ty.as_struct().is_some() => canonical(val, ty, &here)?,
            _ => val.clone(),
        };
        out.insert(field.json.unwrap_or(field.name).to_string(), val);
    }
    Ok(Value::Object(out))
}

fn type_error(at: &str, want: &'static str, got: &Value) -> ProfileFlagError {
    let got = match got {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    };
    ProfileFlagError::Type {
        at: at.to_string(),
        want,
        got,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What Kanister's `{{ toJson .Profile }}` prints for a keyPair Profile.
    const KANISTER_JSON: &str = r#"{"Location":{"type":"s3Compliant","bucket":"b","endpoint":"http://minio:9000","prefix":"team-a","region":"eu-west-1"},"Credential":{"Type":"keyPair","KeyPair":{"ID":"AK","Secret":"SK"},"Secret":null,"KopiaServerSecret":null},"SkipSSLVerify":true}"#;
    /// What this executor's template engine prints for the same Profile.
    const OUR_JSON: &str = r#"{"Location":{"Type":"s3Compliant","Bucket":"b","Endpoint":"http://minio:9000","Prefix":"team-a","Region":"eu-west-1"},"Credential":{"Type":"keyPair","KeyPair":{"ID":"AK","Secret":"SK"}},"SkipSSLVerify":true}"#;

    fn s3(json: &str) -> crate::objectstore::S3Profile {
        match parse(json).unwrap() {
            StoreProfile::S3(p) => p,
            other => panic!("not an S3 profile: {other:?}"),
        }
    }

    #[test]
    fn both_spellings_of_the_profile() {
        for j in [KANISTER_JSON, OUR_JSON] {
            let p = s3(j);
            assert_eq!((p.bucket.as_str(), p.prefix.as_str()), ("b", "team-a"));
            assert_eq!(p.config.endpoint, "http://minio:9000");
            assert_eq!(p.config.region, "eu-west-1");
            assert!(p.config.skip_ssl_verify);
            assert_eq!(p.config.credentials.access_key_id, "AK");
            assert_eq!(p.config.credentials.secret_access_key, "SK");
        }
        // Any case, as Go's json.Unmarshal; the last spelling wins.
        let p = s3(
            r#"{"location":{"TYPE":"s3Compliant","bucket":"x","Bucket":"y"},"credential":{"type":"keyPair","keypair":{"id":"a","secret":"s"}}}"#,
        );
        assert_eq!(p.bucket, "y");
        assert!(!p.config.skip_ssl_verify);
    }

    #[test]
    fn gcs_profiles_in_kanisters_spelling() {
        let key = crate::gcs::test_key_json("http://127.0.0.1:1/token");
        let j = serde_json::json!({"Location": {"type": "gcs", "bucket": "b", "prefix": "team-a",
            "endpoint": "", "region": ""},
            "Credential": {"Type": "keyPair", "KeyPair": {"ID": "proj", "Secret": key},
                "Secret": null, "KopiaServerSecret": null}, "SkipSSLVerify": false});
        match parse(&j.to_string()).unwrap() {
            StoreProfile::Gcs(g) => {
                assert_eq!((g.bucket.as_str(), g.prefix.as_str()), ("b", "team-a"));
                assert_eq!(g.project_id, "proj");
            }
            other => panic!("not GCS: {other:?}"),
        }
    }

    #[test]
    fn secret_credentials() {
        let j = r#"{"Location":{"type":"s3Compliant","bucket":"b"},"Credential":{"Type":"secret","Secret":{"type":"secrets.kanister.io/aws","metadata":{"name":"s"},"data":{"aws_access_key_id":"QUs=","aws_secret_access_key":"U0s="}}}}"#;
        let p = s3(j);
        assert_eq!(p.config.credentials.access_key_id, "AK");
        assert_eq!(p.config.credentials.secret_access_key, "SK");
    }

    /// Kanister's `toJson` of an azure Profile with a `secrets.kanister.io/azure` Secret.
    #[test]
    fn azure_profiles() {
        let j = r#"{"Location":{"type":"azure","bucket":"backups","prefix":"team-a"},"Credential":{"Type":"secret","KeyPair":null,"Secret":{"type":"secrets.kanister.io/azure","metadata":{"name":"az"},"data":{"azure_storage_account_id":"YWNjdA==","azure_storage_key":"a2V5"}}}}"#;
        let StoreProfile::Azure(p) = parse(j).unwrap() else {
            panic!("not azure")
        };
        assert_eq!(
            (p.container.as_str(), p.prefix.as_str()),
            ("backups", "team-a")
        );
        assert_eq!(
            (p.config.account.as_str(), p.config.key.as_str()),
            ("acct", "key")
        );
        let e = parse(r#"{"Location":{"type":"azure"},"Credential":{"Type":"keyPair","KeyPair":{"ID":"acct","Secret":"k"}}}"#)
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("invalid --profile: Container not specified"),
            "{e}"
        );
    }

    #[test]
    fn bad_profiles_are_named() {
        assert_eq!(
            parse("").unwrap_err().to_string(),
            "Please provide the --profile flag"
        );
        assert!(
            parse("{")
                .unwrap_err()
                .to_string()
                .starts_with("failed to unmarshal profile: ")
        );
        assert!(
            parse("null")
                .unwrap_err()
                .to_string()
                .contains("names no Profile")
        );
        let e = parse(r#"{"Location":{"type":"s3Compliant","bucket":5}}"#)
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "failed to unmarshal profile: Profile.Location.Bucket must be a string, not a number"
        );
        let e = parse(r#"{"SkipSSLVerify":"yes"}"#).unwrap_err().to_string();
        assert!(
            e.contains("Profile.SkipSSLVerify must be true or false"),
            "{e}"
        );
        let e = parse(r#"{"Location":{"type":"kopia"},"Credential":{"Type":"kopia"}}"#)
            .unwrap_err()
            .to_string();
        assert!(e.contains("Kopia repository server"), "{e}");
        let e = parse(r#"{"Location":{"type":"gcs","bucket":"b"},"Credential":{"Type":"keyPair","KeyPair":{"ID":"p","Secret":"k"}}}"#).unwrap_err().to_string();
        assert!(
            e.starts_with("invalid --profile: the gcs Profile's service-account key"),
            "{e}"
        );
        let e = parse(r#"{"Location":{"type":"ftp"}}"#)
            .unwrap_err()
            .to_string();
        assert_eq!(e, "Unsupported Location type: ftp");
        let e = parse(r#"{"Location":{"type":"s3Compliant","bucket":"b"},"Credential":{"Type":"keyPair","KeyPair":{"ID":"","Secret":"k"}}}"#).unwrap_err().to_string();
        assert_eq!(e, "invalid --profile: Access key ID is not set");
        let e = parse(r#"{"Location":{"type":"s3Compliant"},"Credential":{"Type":"keyPair","KeyPair":{"ID":"a","Secret":"k"}}}"#).unwrap_err().to_string();
        assert!(e.contains("Bucket not specified"), "{e}");
    }
}
