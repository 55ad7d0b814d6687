//! What went wrong talking to RDS: every error names the AWS call, and an error answer keeps
//! AWS's code and message, worded with what to check where the code says it.

use std::time::Duration;

/// What went wrong talking to RDS.
#[derive(Debug, thiserror::Error)]
pub enum RdsError {
    /// The endpoint, region or credentials cannot be used.
    #[error("{0}")]
    Config(String),
    /// No HTTP answer: connection refused, DNS, TLS, timeout.
    #[error("RDS {call} at {endpoint}: {message}")]
    Transport {
        call: &'static str,
        endpoint: String,
        message: String,
    },
    /// AWS answered with an error document.
    #[error("RDS {call}: {code}: {message}{hint}", hint = hint(code, credentials))]
    Api {
        call: &'static str,
        status: u16,
        code: String,
        message: String,
        /// Where the credentials came from, for the hint of an authentication error.
        credentials: String,
    },
    /// A 2xx answer that is not what RDS sends.
    #[error("RDS {call} at {endpoint}: unexpected response: {message}")]
    Response {
        call: &'static str,
        endpoint: String,
        message: String,
    },
    /// A 2xx answer that is not an XML document.
    #[error("RDS {call} at {endpoint}: unexpected response: {source}")]
    Document {
        call: &'static str,
        endpoint: String,
        #[source]
        source: crate::aws::xml::XmlError,
    },
    /// A waiter gave up after its timeout.
    #[error(
        "timed out after {} waiting for {what} (last {call}: {last})",
        crate::duration::format(*after)
    )]
    WaitTimeout {
        what: String,
        call: &'static str,
        last: String,
        after: Duration,
    },
    /// A waiter saw a state it cannot leave (e.g. an instance `failed` while waiting for
    /// `available`), as AWS's waiters fail.
    #[error(
        "waiting for {what}: {call} reports status {status:?}, from which it will not get there"
    )]
    WaitFailed {
        what: String,
        call: &'static str,
        status: String,
    },
}

impl RdsError {
    /// AWS's error code, if AWS answered with one.
    pub fn code(&self) -> Option<&str> {
        match self {
            RdsError::Api { code, .. } => Some(code),
            _ => None,
        }
    }

    /// Worth another try (AWS's SDKs retry these): no answer, a server error, throttling.
    pub fn is_transient(&self) -> bool {
        match self {
            RdsError::Transport { .. } => true,
            RdsError::Api { status, code, .. } => {
                *status >= 500
                    || matches!(
                        code.as_str(),
                        "Throttling"
                            | "ThrottlingException"
                            | "ThrottledException"
                            | "RequestThrottledException"
                            | "TooManyRequestsException"
                            | "RequestLimitExceeded"
                            | "RequestThrottled"
                            | "SlowDown"
                            | "PriorRequestNotComplete"
                            | "EC2ThrottledException"
                            | "InternalFailure"
                            | "ServiceUnavailable"
                    )
            }
            _ => false,
        }
    }

    /// The `*NotFound*` answers of RDS: the named instance, cluster or snapshot does not exist.
    pub fn is_not_found(&self, code: &str) -> bool {
        self.code() == Some(code)
    }
}

/// RDS's error codes for a missing object (as AWS sends them; moto the same).
pub const DB_INSTANCE_NOT_FOUND: &str = "DBInstanceNotFound";
pub const DB_SNAPSHOT_NOT_FOUND: &str = "DBSnapshotNotFound";
pub const DB_CLUSTER_NOT_FOUND: &str = "DBClusterNotFoundFault";
pub const DB_CLUSTER_SNAPSHOT_NOT_FOUND: &str = "DBClusterSnapshotNotFoundFault";

fn hint(code: &str, credentials: &str) -> String {
    let h = match code {
        "InvalidClientTokenId" | "UnrecognizedClientException" | "AuthFailure" => {
            format!("AWS does not know this access key ID; check {credentials}")
        }
        "SignatureDoesNotMatch" => format!(
            "the secret access key does not match the access key ID (or the region is wrong); check {credentials}"
        ),
        "ExpiredToken" | "ExpiredTokenException" | "InvalidToken" => {
            format!("the session token is expired or invalid; check {credentials}")
        }
        "AccessDenied" | "AccessDeniedException" | "UnauthorizedOperation" => format!(
            "the credentials ({credentials}) may not make this call: grant it in their IAM policy"
        ),
        "MissingAuthenticationToken" | "IncompleteSignature" => {
            format!("the request was not signed as AWS expects; check {credentials}")
        }
        _ => return String::new(),
    };
    format!(" ({h})")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_name_the_call_code_and_what_to_check() {
        let e = RdsError::Api {
            call: "CreateDBSnapshot",
            status: 403,
            code: "SignatureDoesNotMatch".into(),
            message: "The request signature we calculated does not match.".into(),
            credentials: "the Secret aws-creds (credentialsSecret)".into(),
        };
        assert_eq!(
            e.to_string(),
            "RDS CreateDBSnapshot: SignatureDoesNotMatch: The request signature we calculated does not match. \
             (the secret access key does not match the access key ID (or the region is wrong); check the Secret aws-creds (credentialsSecret))"
        );
        assert!(!e.is_transient());
        let missing = RdsError::Api {
            call: "DeleteDBSnapshot",
            status: 404,
            code: DB_SNAPSHOT_NOT_FOUND.into(),
            message: "DBSnapshot snap-1 not found.".into(),
            credentials: String::new(),
        };
        assert_eq!(
            missing.to_string(),
            "RDS DeleteDBSnapshot: DBSnapshotNotFound: DBSnapshot snap-1 not found."
        );
        assert!(missing.is_not_found(DB_SNAPSHOT_NOT_FOUND));
        let throttled = RdsError::Api {
            call: "DescribeDBInstances",
            status: 400,
            code: "Throttling".into(),
            message: "Rate exceeded".into(),
            credentials: String::new(),
        };
        assert!(throttled.is_transient());
        let timeout = RdsError::WaitTimeout {
            what: "DB instance db-1 to be available".into(),
            call: "DescribeDBInstances",
            last: "status \"creating\"".into(),
            after: Duration::from_secs(1200),
        };
        assert_eq!(
            timeout.to_string(),
            "timed out after 20m waiting for DB instance db-1 to be available (last DescribeDBInstances: status \"creating\")"
        );
    }
}
