//! What went wrong talking to GCS, worded with what to check in the Profile.

use http::StatusCode;

/// What went wrong talking to GCS, worded with what to check in the Profile.
#[derive(Debug, thiserror::Error)]
pub enum GcsError {
    #[error("{0}")]
    Config(String),
    #[error(
        "getting an OAuth2 token for {email} from {url}: {message} (check the Profile's \
         service-account key: is it current, and is {url} reachable?)"
    )]
    Token {
        email: String,
        url: String,
        message: String,
        /// The endpoint answered and refused the key (4xx), rather than not answering.
        refused: bool,
    },
    #[error("{op} on {url}: {message}")]
    Transport {
        op: &'static str,
        url: String,
        message: String,
    },
    #[error("{op} on {url}: {status} {message}{hint}", status = status.as_u16())]
    Service {
        op: &'static str,
        url: String,
        status: StatusCode,
        message: String,
        hint: String,
    },
    #[error("{op} on {url}: unexpected response: {message}")]
    Response {
        op: &'static str,
        url: String,
        message: String,
    },
}

impl GcsError {
    pub(super) fn is_transient(&self) -> bool {
        match self {
            GcsError::Transport { .. } => true,
            GcsError::Service { status, .. } => status.is_server_error(),
            _ => false,
        }
    }

    /// The store answered 404.
    pub fn is_not_found(&self) -> bool {
        matches!(self, GcsError::Service { status, .. } if *status == StatusCode::NOT_FOUND)
    }
}

/// The message of a JSON API error answer (`{"error":{"code":..,"message":..}}`), or its text.
pub fn error_message(body: &[u8]) -> String {
    serde_json::from_slice::<serde_json::Value>(body)
        .ok()
        .and_then(|v| v["error"]["message"].as_str().map(str::to_string))
        .unwrap_or_else(|| {
            String::from_utf8_lossy(body)
                .trim()
                .chars()
                .take(300)
                .collect()
        })
}

/// What to check, for an error answer to `op` on `bucket`.
pub fn hint(status: StatusCode, op: &str, bucket: &str, email: &str) -> String {
    match status.as_u16() {
        404 if op == "GetObject" => String::new(),
        404 => format!(" (does bucket '{bucket}' exist? check the Profile's location.bucket)"),
        401 => " (the token was refused: check the Profile's service-account key)".into(),
        403 => format!(
            " (the service account {email} may not use bucket '{bucket}': grant it \
             roles/storage.objectAdmin on the bucket, or check the Profile's project and key)"
        ),
        _ => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_say_what_to_check() {
        let m = error_message(
            br#"{"error":{"code":404,"message":"The specified bucket does not exist."}}"#,
        );
        assert_eq!(m, "The specified bucket does not exist.");
        assert_eq!(error_message(b" not found\n"), "not found");
        assert!(hint(StatusCode::NOT_FOUND, "ListObjects", "b", "e").contains("location.bucket"));
        assert_eq!(hint(StatusCode::NOT_FOUND, "GetObject", "b", "e"), "");
        assert!(hint(StatusCode::FORBIDDEN, "UploadObject", "b", "sa@p").contains("sa@p"));
        assert!(hint(StatusCode::UNAUTHORIZED, "ListObjects", "b", "e").contains("key"));
    }
}
