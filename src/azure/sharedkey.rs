//! Azure Storage's Shared Key authorization (the account key signs each request): the string to
//! sign of the Blob service (version 2015-02-21 and later: a zero `Content-Length` is written
//! empty) and its HMAC-SHA256, as "Authorize with Shared Key" in Azure Storage's REST reference
//! describes them. Pure functions; the client adds the header.

use base64::Engine as _;

/// Why a request cannot be signed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SignError {
    #[error(
        "the storage account key is not base64 ({0}); copy the key (key1 or key2) of the storage \
         account into the Secret the Profile's credential names"
    )]
    KeyNotBase64(String),
}

/// One request as Shared Key sees it: the method, the standard headers by lower-case name, the
/// `x-ms-*` headers, the account, the URL path as sent (encoded) and the query (decoded).
pub struct ToSign<'a> {
    pub method: &'a str,
    pub headers: &'a [(&'a str, &'a str)],
    pub account: &'a str,
    pub path: &'a str,
    pub query: &'a [(&'a str, &'a str)],
}

/// The standard headers in the string to sign, in order.
const STANDARD: [&str; 11] = [
    "content-encoding",
    "content-language",
    "content-length",
    "content-md5",
    "content-type",
    "date",
    "if-modified-since",
    "if-match",
    "if-none-match",
    "if-unmodified-since",
    "range",
];

/// The string to sign.
pub fn string_to_sign(r: &ToSign<'_>) -> String {
    let header = |name: &str| {
        r.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.trim())
            .unwrap_or("")
    };
    let mut s = format!("{}\n", r.method.to_ascii_uppercase());
    for name in STANDARD {
        let v = header(name);
        // Since version 2015-02-21 a zero length is an empty line.
        let v = if name == "content-length" && v == "0" {
            ""
        } else {
            v
        };
        s.push_str(v);
        s.push('\n');
    }
    let mut ms: Vec<(String, &str)> = r
        .headers
        .iter()
        .filter(|(k, _)| k.to_ascii_lowercase().starts_with("x-ms-"))
        .map(|(k, v)| (k.to_ascii_lowercase(), v.trim()))
        .collect();
    ms.sort();
    for (k, v) in ms {
        s.push_str(&format!("{k}:{v}\n"));
    }
    s.push_str(&canonical_resource(r.account, r.path, r.query));
    s
}

/// `/<account><path>`, then one `\n<name>:<values>` line per query parameter (names lower-case
/// and sorted, several values of one name sorted and joined with `,`).
pub fn canonical_resource(account: &str, path: &str, query: &[(&str, &str)]) -> String {
    let path = if path.is_empty() { "/" } else { path };
    let mut s = format!("/{account}{path}");
    let mut params: std::collections::BTreeMap<String, Vec<&str>> = Default::default();
    for (k, v) in query {
        params.entry(k.to_ascii_lowercase()).or_default().push(v);
    }
    for (k, mut vs) in params {
        vs.sort();
        s.push_str(&format!("\n{k}:{}", vs.join(",")));
    }
    s
}

/// `SharedKey <account>:<base64 HMAC-SHA256 of the string to sign>`.
pub fn authorization(
    account: &str,
    key_b64: &str,
    string_to_sign: &str,
) -> Result<String, SignError> {
    let key = base64::engine::general_purpose::STANDARD
        .decode(key_b64.trim())
        .map_err(|e| SignError::KeyNotBase64(e.to_string()))?;
    let key = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, &key);
    let mac = ring::hmac::sign(&key, string_to_sign.as_bytes());
    Ok(format!(
        "SharedKey {account}:{}",
        base64::engine::general_purpose::STANDARD.encode(mac.as_ref())
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Azurite's well-known development account key (public, in Azure's docs).
    const DEV_KEY: &str =
        "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IDunHJq6y/L3ftoJbBOzhQk5vYPsDq0JOQAA7j4whQ==";

    /// The example of "Authorize with Shared Key": Get Container Metadata.
    #[test]
    fn string_to_sign_of_the_reference_example() {
        let r = ToSign {
            method: "GET",
            headers: &[
                ("x-ms-version", "2015-02-21"),
                ("x-ms-date", "Sun, 11 Oct 2009 21:49:13 GMT"),
            ],
            account: "myaccount",
            path: "/mycontainer",
            query: &[
                ("restype", "container"),
                ("comp", "metadata"),
                ("timeout", "20"),
            ],
        };
        assert_eq!(
            string_to_sign(&r),
            "GET\n\n\n\n\n\n\n\n\n\n\n\nx-ms-date:Sun, 11 Oct 2009 21:49:13 GMT\n\
             x-ms-version:2015-02-21\n/myaccount/mycontainer\ncomp:metadata\nrestype:container\ntimeout:20"
        );
    }

    #[test]
    fn put_with_length_type_and_repeated_query_values() {
        let r = ToSign {
            method: "put",
            headers: &[
                ("Content-Length", "11"),
                ("content-type", "application/octet-stream"),
                ("X-MS-Blob-Type", " BlockBlob "),
                ("x-ms-date", "Fri, 26 Jun 2015 23:39:12 GMT"),
            ],
            account: "acct",
            path: "/c/a%20b/k",
            query: &[("include", "uncommitted"), ("Include", "metadata")],
        };
        assert_eq!(
            string_to_sign(&r),
            "PUT\n\n\n11\n\napplication/octet-stream\n\n\n\n\n\n\nx-ms-blob-type:BlockBlob\n\
             x-ms-date:Fri, 26 Jun 2015 23:39:12 GMT\n/acct/c/a%20b/k\ninclude:metadata,uncommitted"
        );
        // A zero length is an empty line; an account root is `/`.
        let zero = ToSign {
            method: "PUT",
            headers: &[("content-length", "0")],
            account: "a",
            path: "",
            query: &[],
        };
        assert_eq!(string_to_sign(&zero), format!("PUT{}/a/", "\n".repeat(12)));
    }

    /// The signature, checked against `openssl dgst -sha256 -mac HMAC` with the same key:
    /// `printf 'GET\n...' | openssl dgst -sha256 -mac HMAC -macopt hexkey:<key as hex> -binary | base64`.
    #[test]
    fn signature_matches_openssl() {
        let sts = "GET\n\n\n\n\n\n\n\n\n\n\n\nx-ms-date:Sun, 11 Oct 2009 21:49:13 GMT\n\
                   x-ms-version:2015-02-21\n/devstoreaccount1/mycontainer\ncomp:metadata\nrestype:container";
        assert_eq!(
            authorization("devstoreaccount1", DEV_KEY, sts).unwrap(),
            format!("SharedKey devstoreaccount1:{}", OPENSSL_SIGNATURE)
        );
        let e = authorization("a", "not base64!", sts)
            .unwrap_err()
            .to_string();
        assert!(e.contains("storage account key is not base64"), "{e}");
    }

    const OPENSSL_SIGNATURE: &str = "Df3GPjK5V+zkwsJP9nvMaiNYVJRFsNMNmM3+4ISfvIs=";
}
