//! What went wrong talking to Azure Blob Storage, worded with what to check in the Profile.

use http::StatusCode;

/// What went wrong talking to the Blob service.
#[derive(Debug, thiserror::Error)]
pub enum AzureError {
    /// The endpoint, the key or the TLS set-up is unusable.
    #[error("{0}")]
    Config(String),
    /// No HTTP answer: connection refused, DNS, TLS handshake, timeout.
    #[error("{op} on {url}: {message}")]
    Transport {
        op: &'static str,
        url: String,
        message: String,
    },
    /// The service answered with an error.
    #[error("{op} on {url}: {status} {code}: {message}{hint}",
        url = detail.url, status = status.as_u16(), code = detail.code, message = detail.message,
        hint = hint(&detail.code, op, &detail.container, &detail.account))]
    Service {
        op: &'static str,
        status: StatusCode,
        detail: Box<ServiceDetail>,
    },
    /// A 2xx answer that is not what the Blob service sends.
    #[error("{op} on {url}: unexpected response: {message}")]
    Response {
        op: &'static str,
        url: String,
        message: String,
    },
}

/// What the service said, and to whom.
#[derive(Debug)]
pub struct ServiceDetail {
    pub url: String,
    /// The error code (`x-ms-error-code`, or the `<Error>` document's `<Code>`).
    pub code: String,
    pub message: String,
    pub container: String,
    pub account: String,
}

impl AzureError {
    /// Worth another try: no answer, or a server error (but 501).
    pub fn is_transient(&self) -> bool {
        match self {
            AzureError::Transport { .. } => true,
            AzureError::Service { status, .. } => crate::aws::exchange::retryable_status(*status),
            _ => false,
        }
    }

    /// The Blob service's error code, if it sent one.
    pub fn code(&self) -> Option<&str> {
        match self {
            AzureError::Service { detail, .. } => Some(&detail.code),
            _ => None,
        }
    }
}

fn hint(code: &str, op: &str, container: &str, account: &str) -> String {
    let h = match code {
        "BlobNotFound" => format!(
            "no blob at this name in container {container:?}: check the path and the Profile's location.prefix"
        ),
        "ContainerNotFound" => format!(
            "container {container:?} does not exist in storage account {account:?}; check the \
             Profile's location.bucket (the container) and create it"
        ),
        "AuthenticationFailed" | "AuthorizationFailure" | "InvalidAuthenticationInfo" => format!(
            "the storage account key does not sign for account {account:?}; check the Secret the \
             Profile's credential names (keyPair: ID = the account name, Secret = its key; or \
             azure_storage_account_id / azure_storage_key)"
        ),
        "ResourceNotFound" | "AccountNotFound" | "InvalidResourceName" | "OutOfRangeInput" => {
            format!(
                "check the storage account {account:?} and the container name {container:?} \
                 (3-63 lower-case letters, digits and dashes)"
            )
        }
        "AuthorizationPermissionMismatch" | "InsufficientAccountPermissions" => format!(
            "the credentials may not do {op} in container {container:?}; use the account key"
        ),
        "InvalidHeaderValue"
        | "InvalidQueryParameterValue"
        | "InvalidInput"
        | "InvalidUri"
        | "MissingRequiredHeader"
        | "InvalidXmlDocument"
        | "InvalidBlockList"
        | "HTTP400"
        | "HTTP411" => format!(
            "the service refused the {op} request as malformed (its words above say what it \
             wanted); nothing was written or deleted"
        ),
        _ => return String::new(),
    };
    format!(" ({h})")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn service(code: &str) -> String {
        AzureError::Service {
            op: "PutBlob",
            status: StatusCode::FORBIDDEN,
            detail: Box::new(ServiceDetail {
                url: "http://h/a/c/k".into(),
                code: code.into(),
                message: "Server failed to authenticate the request.".into(),
                container: "c".into(),
                account: "a".into(),
            }),
        }
        .to_string()
    }

    #[test]
    fn errors_say_what_to_check() {
        let e = service("AuthenticationFailed");
        assert!(
            e.starts_with("PutBlob on http://h/a/c/k: 403 AuthenticationFailed: Server failed"),
            "{e}"
        );
        assert!(
            e.contains("storage account key does not sign for account \"a\""),
            "{e}"
        );
        assert!(service("ContainerNotFound").contains("container \"c\" does not exist"));
        assert!(service("InvalidHeaderValue").contains("nothing was written or deleted"));
        assert!(!service("Other").contains('('));
    }
}
