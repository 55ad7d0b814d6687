//! A service account's OAuth2 token, as Google's clients get it (RFC 7523, Google's "OAuth 2.0
//! for Server to Server Applications"): a JWT naming the account, the scope and the token
//! endpoint, signed RS256 with the key's private key by `ring`, sent to the key's `token_uri`;
//! the answer's `access_token` is the bearer token. The exchange itself is the client's
//! ([`super::client`]); here are its pure parts.

use base64::Engine as _;
use rustls::pki_types::PrivatePkcs8KeyDer;
use rustls::pki_types::pem::PemObject as _;
use serde::Deserialize;

use super::ServiceKey;

/// Read and write objects (what restic's gs backend asks for too).
pub const SCOPE: &str = "https://www.googleapis.com/auth/devstorage.read_write";
/// How long the signed assertion is valid (Google's maximum).
const LIFETIME_SECS: u64 = 3600;
/// The grant type of a JWT bearer assertion.
pub const GRANT_TYPE: &str = "urn:ietf:params:oauth:grant-type:jwt-bearer";

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

/// The signed assertion `header.claims.signature` for `key` at `now` (seconds since the epoch).
pub fn assertion(key: &ServiceKey, now: u64) -> Result<String, String> {
    let header = b64(br#"{"alg":"RS256","typ":"JWT"}"#);
    let claims = serde_json::json!({
        "iss": key.client_email, "scope": SCOPE, "aud": key.token_uri,
        "iat": now, "exp": now + LIFETIME_SECS,
    });
    let signed = format!("{header}.{}", b64(claims.to_string().as_bytes()));
    let der = PrivatePkcs8KeyDer::from_pem_slice(key.private_key.as_bytes()).map_err(|e| {
        format!("the service-account key's private_key is not a PKCS#8 PEM key ({e})")
    })?;
    let pair = ring::signature::RsaKeyPair::from_pkcs8(der.secret_pkcs8_der())
        .map_err(|e| format!("the service-account key's private_key is no RSA key ({e})"))?;
    let mut sig = vec![0; pair.public().modulus_len()];
    pair.sign(
        &ring::signature::RSA_PKCS1_SHA256,
        &ring::rand::SystemRandom::new(),
        signed.as_bytes(),
        &mut sig,
    )
    .map_err(|_| "signing the token request failed".to_string())?;
    Ok(format!("{signed}.{}", b64(&sig)))
}

/// The form body of the token request.
pub fn token_request_body(assertion: &str) -> String {
    let enc = |s: &str| crate::aws::sigv4::uri_encode(s, false);
    format!(
        "grant_type={}&assertion={}",
        enc(GRANT_TYPE),
        enc(assertion)
    )
}

/// A token and how many seconds it lives.
#[derive(Clone, PartialEq, Eq)]
pub struct Token {
    pub access_token: String,
    pub expires_in: u64,
}

impl std::fmt::Debug for Token {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Token {{ expires_in: {}, access_token: *** }}",
            self.expires_in
        )
    }
}

/// The token endpoint's answer: the token, or why there is none (its `error` and
/// `error_description`, e.g. `invalid_grant: Invalid JWT Signature.`).
pub fn parse_token_answer(ok: bool, body: &[u8]) -> Result<Token, String> {
    #[derive(Deserialize)]
    struct Answer {
        #[serde(default)]
        access_token: String,
        #[serde(default)]
        expires_in: Option<u64>,
        #[serde(default)]
        error: String,
        #[serde(default)]
        error_description: String,
    }
    let text = || {
        String::from_utf8_lossy(body)
            .chars()
            .take(300)
            .collect::<String>()
    };
    let a: Answer = serde_json::from_slice(body).map_err(|_| text())?;
    if ok && !a.access_token.is_empty() {
        return Ok(Token {
            access_token: a.access_token,
            expires_in: a.expires_in.unwrap_or(LIFETIME_SECS),
        });
    }
    Err(match (a.error.as_str(), a.error_description.as_str()) {
        ("", "") => text(),
        (e, "") => e.to_string(),
        (e, d) => format!("{e}: {d}"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_assertion_is_signed_rs256_by_the_key() {
        let key = ServiceKey::parse(&super::super::test_key_json("http://t/token")).unwrap();
        let jwt = assertion(&key, 1_700_000_000).unwrap();
        let parts: Vec<&str> = jwt.split('.').collect();
        assert_eq!(parts.len(), 3);
        let dec = |s: &str| {
            base64::engine::general_purpose::URL_SAFE_NO_PAD
                .decode(s)
                .unwrap()
        };
        let header: serde_json::Value = serde_json::from_slice(&dec(parts[0])).unwrap();
        assert_eq!(header["alg"], "RS256");
        let claims: serde_json::Value = serde_json::from_slice(&dec(parts[1])).unwrap();
        assert_eq!(claims["iss"], "bpo@proj.iam.gserviceaccount.com");
        assert_eq!(claims["aud"], "http://t/token");
        assert_eq!(claims["scope"], SCOPE);
        assert_eq!(claims["exp"], 1_700_003_600u64);
        // Verified with the key's public half (PKCS#1 DER, written by openssl).
        let public = ring::signature::UnparsedPublicKey::new(
            &ring::signature::RSA_PKCS1_2048_8192_SHA256,
            include_bytes!("testdata/test-key.pub.der").as_slice(),
        );
        let signed = format!("{}.{}", parts[0], parts[1]);
        public.verify(signed.as_bytes(), &dec(parts[2])).unwrap();
        assert!(public.verify(b"other", &dec(parts[2])).is_err());

        let mut bad = key.clone();
        bad.private_key = "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n".into();
        assert!(assertion(&bad, 0).unwrap_err().contains("no RSA key"));
        bad.private_key = "garbage".into();
        assert!(
            assertion(&bad, 0)
                .unwrap_err()
                .contains("not a PKCS#8 PEM key")
        );
    }

    #[test]
    fn token_answers() {
        let t = parse_token_answer(
            true,
            br#"{"access_token":"ya29.x","expires_in":3599,"token_type":"Bearer"}"#,
        )
        .unwrap();
        assert_eq!((t.access_token.as_str(), t.expires_in), ("ya29.x", 3599));
        assert!(!format!("{t:?}").contains("ya29"));
        let e = parse_token_answer(
            false,
            br#"{"error":"invalid_grant","error_description":"Invalid JWT Signature."}"#,
        );
        assert_eq!(e.unwrap_err(), "invalid_grant: Invalid JWT Signature.");
        assert_eq!(parse_token_answer(false, b"<html>").unwrap_err(), "<html>");
        assert!(token_request_body("a.b").starts_with(
            "grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer&assertion=a.b"
        ));
    }
}
