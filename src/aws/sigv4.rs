//! AWS Signature Version 4 for S3 requests, by AWS's own `aws-sigv4` crate
//! (the signer of the AWS SDK for Rust) with the settings the S3 SDK uses:
//! the path encoded once and not normalized, the payload's SHA-256 signed
//! and sent as `x-amz-content-sha256`. What stays here is building the URL
//! parts the signer reads (RFC 3986 encoding) and hashing payloads.

use std::time::SystemTime;

use aws_sigv4::http_request::{
    PayloadChecksumKind, PercentEncodingMode, SignableBody, SignableRequest, SigningSettings,
    UriPathNormalizationMode, sign,
};
use aws_sigv4::sign::v4;

/// `hex(sha256(""))`.
pub const EMPTY_SHA256: &str = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

/// Access key pair (plus the session token of temporary credentials).
#[derive(Clone, Default)]
pub struct Credentials {
    pub access_key_id: String,
    pub secret_access_key: String,
    pub session_token: Option<String>,
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Credentials")
            .field("access_key_id", &self.access_key_id)
            .field("secret_access_key", &"<redacted>")
            .field(
                "session_token",
                &self.session_token.as_ref().map(|_| "<redacted>"),
            )
            .finish()
    }
}

/// A request the signer could not sign (a header value it cannot carry).
#[derive(Debug, thiserror::Error)]
#[error("cannot sign the request: {0}")]
pub struct SignError(String);

pub fn sha256_hex(data: &[u8]) -> String {
    data_encoding::HEXLOWER.encode(ring::digest::digest(&ring::digest::SHA256, data).as_ref())
}

/// RFC 3986 encoding as SigV4 wants it: every byte but `A-Za-z0-9-._~` as
/// `%XX` (upper case); `/` kept when `keep_slash` (paths).
pub fn uri_encode(s: &str, keep_slash: bool) -> String {
    let mut out = String::with_capacity(s.len());
    for &b in s.as_bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                out.push(b as char)
            }
            b'/' if keep_slash => out.push('/'),
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

/// Query string: parameters encoded, sorted by name then value (the order
/// SigV4's canonical query has; sent in that order too).
pub fn canonical_query(params: &[(&str, &str)]) -> String {
    let mut enc: Vec<(String, String)> = params
        .iter()
        .map(|(k, v)| (uri_encode(k, false), uri_encode(v, false)))
        .collect();
    enc.sort();
    enc.iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join("&")
}

/// One request to sign: `url` is absolute with its path and query already
/// encoded; `headers` are signed as given (`host` among them when the Host
/// header differs from the URL's authority).
pub struct Request<'a> {
    pub method: &'a str,
    pub url: &'a str,
    pub headers: &'a [(&'a str, &'a str)],
    pub payload_hash: &'a str,
}

/// The headers to add to `req`: `x-amz-date`, `x-amz-content-sha256`,
/// `x-amz-security-token` (with temporary credentials) and `authorization`.
pub fn sign_s3(
    creds: &Credentials,
    region: &str,
    time: SystemTime,
    req: &Request,
) -> Result<Vec<(&'static str, String)>, SignError> {
    sign_for(creds, region, "s3", true, time, req)
}

/// The headers to add to a request of another AWS service (`service`: its signing name, e.g.
/// `rds`): `x-amz-date`, `x-amz-security-token` (temporary credentials) and `authorization`;
/// the payload's hash is signed, not sent (as AWS's SDKs do for the query protocol).
pub fn sign_service(
    creds: &Credentials,
    region: &str,
    service: &str,
    time: SystemTime,
    req: &Request,
) -> Result<Vec<(&'static str, String)>, SignError> {
    sign_for(creds, region, service, false, time, req)
}

/// [`sign_s3`] for any service; `content_sha256`: send and sign
/// `x-amz-content-sha256` (S3 requires it; AWS's generic test suite has none).
fn sign_for(
    creds: &Credentials,
    region: &str,
    service: &str,
    content_sha256: bool,
    time: SystemTime,
    req: &Request,
) -> Result<Vec<(&'static str, String)>, SignError> {
    let identity = aws_credential_types::Credentials::new(
        creds.access_key_id.clone(),
        creds.secret_access_key.clone(),
        creds.session_token.clone(),
        None,
        "profile",
    )
    .into();
    let mut settings = SigningSettings::default();
    settings.percent_encoding_mode = PercentEncodingMode::Single;
    settings.uri_path_normalization_mode = UriPathNormalizationMode::Disabled;
    settings.payload_checksum_kind = if content_sha256 {
        PayloadChecksumKind::XAmzSha256
    } else {
        PayloadChecksumKind::NoHeader
    };
    let params = v4::SigningParams::builder()
        .identity(&identity)
        .region(region)
        .name(service)
        .time(time)
        .settings(settings)
        .build()
        .map_err(|e| SignError(e.to_string()))?
        .into();
    let signable = SignableRequest::new(
        req.method,
        req.url,
        req.headers.iter().copied(),
        SignableBody::Precomputed(req.payload_hash.to_string()),
    )
    .map_err(|e| SignError(e.to_string()))?;
    let (headers, _) = sign(signable, &params)
        .map_err(|e| SignError(e.to_string()))?
        .into_parts()
        .0
        .into_parts();
    Ok(headers
        .into_iter()
        .map(|h| (h.name(), h.value().to_string()))
        .collect())
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    fn at(amz_date: &str) -> SystemTime {
        let t = chrono::NaiveDateTime::parse_from_str(amz_date, "%Y%m%dT%H%M%SZ").unwrap();
        SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(t.and_utc().timestamp() as u64)
    }

    fn authorization(headers: &[(&'static str, String)]) -> String {
        headers
            .iter()
            .find(|(k, _)| *k == "authorization")
            .map(|(_, v)| v.clone())
            .unwrap_or_default()
    }

    /// The credentials of AWS's published SigV4 test suite.
    pub(crate) fn suite_creds() -> Credentials {
        Credentials {
            access_key_id: "AKIDEXAMPLE".into(),
            secret_access_key: "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY".into(),
            session_token: None,
        }
    }

    /// AWS's published Signature Version 4 test suite (service "service",
    /// 20150830T123600Z): the URL parts built here, signed with the settings
    /// used for S3, give AWS's published signatures.
    #[test]
    fn signer_matches_the_aws_sigv4_test_suite() {
        const DATE: &str = "20150830T123600Z";
        let sign = |method: &str, path_and_query: &str| {
            let url = format!("https://example.amazonaws.com{path_and_query}");
            let out = sign_for(
                &suite_creds(),
                "us-east-1",
                "service",
                false,
                at(DATE),
                &Request {
                    method,
                    url: &url,
                    headers: &[("host", "example.amazonaws.com")],
                    payload_hash: EMPTY_SHA256,
                },
            )
            .unwrap();
            assert!(out.contains(&("x-amz-date", DATE.to_string())), "{out:?}");
            authorization(&out)
        };
        let prefix = "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, SignedHeaders=host;x-amz-date, Signature=";
        // get-vanilla
        assert_eq!(
            sign("GET", "/"),
            format!("{prefix}5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31")
        );
        // get-vanilla-query-order-key-case: the query is sorted.
        let q = canonical_query(&[("Param2", "value2"), ("Param1", "value1")]);
        assert_eq!(q, "Param1=value1&Param2=value2");
        assert_eq!(
            sign("GET", &format!("/?{q}")),
            format!("{prefix}b97d918cfa904a5beff61c982a1b6f458b799221646efd99d3219ec94cdf2500")
        );
        // get-utf8: the path is percent-encoded once.
        let p = uri_encode("/\u{1234}", true);
        assert_eq!(p, "/%E1%88%B4");
        assert_eq!(
            sign("GET", &p),
            format!("{prefix}8318018e0b0f223aa2bbf98705b62bb787dc9c0e678f255a891fd03141be5d85")
        );
        // post-vanilla.
        assert_eq!(
            sign("POST", "/"),
            format!("{prefix}5da7c1a2acd57cee7505fc6676e4e544621c30862966e37dddb68e92efbe5d6b")
        );
    }

    /// The S3 examples of AWS's "Signature Calculations for the Authorization
    /// Header" (examplebucket, 20130524T000000Z), through [`sign_s3`] itself.
    #[test]
    fn signer_matches_the_s3_documentation_examples() {
        const DATE: &str = "20130524T000000Z";
        let creds = Credentials {
            access_key_id: "AKIAIOSFODNN7EXAMPLE".into(),
            secret_access_key: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY".into(),
            session_token: None,
        };
        let sig = |path_and_query: &str, extra: &[(&str, &str)]| {
            let url = format!("https://examplebucket.s3.amazonaws.com{path_and_query}");
            let mut headers = vec![("host", "examplebucket.s3.amazonaws.com")];
            headers.extend_from_slice(extra);
            let out = sign_s3(
                &creds,
                "us-east-1",
                at(DATE),
                &Request {
                    method: "GET",
                    url: &url,
                    headers: &headers,
                    payload_hash: EMPTY_SHA256,
                },
            )
            .unwrap();
            assert!(
                out.contains(&("x-amz-content-sha256", EMPTY_SHA256.to_string())),
                "{out:?}"
            );
            authorization(&out)
                .rsplit("Signature=")
                .next()
                .unwrap()
                .to_string()
        };
        // GET Object with a Range header.
        assert_eq!(
            sig("/test.txt", &[("range", "bytes=0-9")]),
            "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41"
        );
        // GET Bucket lifecycle: a parameter without a value.
        assert_eq!(
            sig(&format!("/?{}", canonical_query(&[("lifecycle", "")])), &[]),
            "fea454ca298b7da1c68078a5d1bdbfbbe0d65c699e0f91ac7a200a0136783543"
        );
        // GET Bucket (List Objects).
        assert_eq!(
            sig(
                &format!(
                    "/?{}",
                    canonical_query(&[("prefix", "J"), ("max-keys", "2")])
                ),
                &[]
            ),
            "34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7"
        );
        // The credential never shows in Debug output.
        assert!(!format!("{creds:?}").contains("EXAMPLEKEY"));
    }

    #[test]
    fn temporary_credentials_send_their_token() {
        let creds = Credentials {
            session_token: Some("TOKEN".into()),
            ..suite_creds()
        };
        let out = sign_s3(
            &creds,
            "us-east-1",
            at("20150830T123600Z"),
            &Request {
                method: "GET",
                url: "http://127.0.0.1:9000/b",
                headers: &[("host", "127.0.0.1:9000")],
                payload_hash: EMPTY_SHA256,
            },
        )
        .unwrap();
        assert!(out.contains(&("x-amz-security-token", "TOKEN".to_string())));
        assert!(
            authorization(&out).contains(
                "SignedHeaders=host;x-amz-content-sha256;x-amz-date;x-amz-security-token"
            )
        );
    }

    #[test]
    fn encoding_keeps_only_unreserved_characters() {
        assert_eq!(uri_encode("a-b_c.d~e09AZ", false), "a-b_c.d~e09AZ");
        assert_eq!(uri_encode("a b/c+d=é*", false), "a%20b%2Fc%2Bd%3D%C3%A9%2A");
        assert_eq!(uri_encode("dir/a b.txt", true), "dir/a%20b.txt");
        assert_eq!(
            canonical_query(&[
                ("prefix", "a/b c"),
                ("list-type", "2"),
                ("continuation-token", "x=")
            ]),
            "continuation-token=x%3D&list-type=2&prefix=a%2Fb%20c"
        );
        assert_eq!(sha256_hex(b""), EMPTY_SHA256);
    }
}
