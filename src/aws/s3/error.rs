//! What went wrong talking to the object store, worded with what to check
//! in the Profile.

use http::StatusCode;

use crate::aws::xml::ServiceError;

/// What went wrong talking to the object store.
#[derive(Debug, thiserror::Error)]
pub enum S3Error {
    /// The endpoint or the TLS set-up is unusable.
    #[error("{0}")]
    Config(String),
    /// No HTTP answer: connection refused, DNS, TLS handshake, timeout.
    #[error("{op} on {url}: {message}")]
    Transport {
        op: &'static str,
        url: String,
        message: String,
    },
    /// The store answered with an error.
    #[error("{op} on {url}: {status} {code}: {message}{hint}",
        status = status.as_u16(), code = error.code, message = error.message,
        hint = hint(error, op, bucket, endpoint))]
    Service {
        op: &'static str,
        url: String,
        status: StatusCode,
        error: Box<ServiceError>,
        bucket: String,
        endpoint: String,
    },
    /// A 2xx answer that is not what S3 sends.
    #[error("{op} on {url}: unexpected response: {message}")]
    Response {
        op: &'static str,
        url: String,
        message: String,
    },
    /// A 2xx answer whose document is not the one S3 sends.
    #[error("{op} on {url}: unexpected response: {source}")]
    Document {
        op: &'static str,
        url: String,
        #[source]
        source: crate::aws::xml::XmlError,
    },
}

impl S3Error {
    /// Worth another try: no answer, or a server error (but 501, which
    /// says the store does not implement the call).
    pub fn is_transient(&self) -> bool {
        match self {
            S3Error::Transport { .. } => true,
            S3Error::Service { status, .. } => crate::aws::exchange::retryable_status(*status),
            _ => false,
        }
    }

    /// The S3 error code, if the store sent one.
    pub fn code(&self) -> Option<&str> {
        match self {
            S3Error::Service { error, .. } => Some(&error.code),
            _ => None,
        }
    }
}

pub(super) fn hint(e: &ServiceError, op: &str, bucket: &str, endpoint: &str) -> String {
    let h = match e.code.as_str() {
        "NoSuchKey" => format!(
            "no object at this key in bucket {bucket:?}: check the path and the Profile's location.prefix"
        ),
        "NoSuchUpload" => "the multipart upload is gone (aborted, or expired by a bucket lifecycle rule)".into(),
        "NoSuchBucket" => format!(
            "bucket {bucket:?} does not exist at {endpoint}; check the Profile's location.bucket (and location.endpoint)"
        ),
        "InvalidAccessKeyId" => "the object store does not know this access key ID; check the Secret the Profile's credential names".into(),
        "SignatureDoesNotMatch" => "the secret access key is wrong (or the region is); check the Secret the Profile's credential names and location.region".into(),
        "AccessDenied" | "Forbidden" | "AllAccessDisabled" => format!(
            "the credentials may not do this on bucket {bucket:?}; grant {} or use other credentials",
            permission(op)
        ),
        "AuthorizationHeaderMalformed" | "IllegalLocationConstraintException" => match &e.region {
            Some(r) => format!("the bucket is in region {r}; set the Profile's location.region to {r}"),
            None => "check the Profile's location.region".into(),
        },
        "PermanentRedirect" | "TemporaryRedirect" => match &e.endpoint {
            Some(ep) => format!("the bucket must be addressed at {ep}; set the Profile's location.endpoint/region accordingly"),
            None => "the bucket is in another region; set the Profile's location.region".into(),
        },
        "RequestTimeTooSkewed" => "this machine's clock differs too much from the object store's".into(),
        "InvalidBucketName" => format!("{bucket:?} is not a valid bucket name"),
        "MissingContentLength" | "HTTP411" => format!(
            "the store found no Content-Length on the {op} request and refused it; nothing was \
             written. This client sends one on every upload: check for a proxy in front of {endpoint} that drops it"
        ),
        "BadDigest" | "InvalidDigest" | "XAmzContentSHA256Mismatch" => format!(
            "the body of the {op} request did not match its checksum when it reached the store; \
             nothing was written: check for a proxy in front of {endpoint} that changes bodies, and try again"
        ),
        "HTTP400" | "InvalidRequest" | "InvalidArgument" | "MalformedXML" => format!(
            "the store refused the {op} request as malformed (its words above say what it wanted); \
             nothing was written or deleted"
        ),
        _ => return String::new(),
    };
    format!(" ({h})")
}

/// The IAM permission an operation needs.
fn permission(op: &str) -> &'static str {
    match op {
        "GetObject" => "s3:GetObject",
        "PutObject" | "CreateMultipartUpload" | "UploadPart" | "CompleteMultipartUpload" => {
            "s3:PutObject"
        }
        "AbortMultipartUpload" => "s3:AbortMultipartUpload",
        "ListObjectsV2" => "s3:ListBucket",
        "DeleteObject" | "DeleteObjects" => "s3:DeleteObject",
        _ => "s3:ListBucket and s3:DeleteObject",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::aws::xml::parse_error;

    #[test]
    fn error_documents_become_clear_errors() {
        let body = r#"<?xml version="1.0" encoding="UTF-8"?>
<Error><Code>NoSuchBucket</Code><Message>The specified bucket does not exist</Message>
<BucketName>missing-bucket</BucketName><RequestId>4442587FB7D0A2F9</RequestId></Error>"#;
        // The document's decoding is tested with aws::xml; here, what the error says.
        let se = parse_error(StatusCode::NOT_FOUND, body);
        let e = S3Error::Service {
            op: "ListObjectsV2",
            url: "http://127.0.0.1:9000/missing-bucket?list-type=2".into(),
            status: StatusCode::NOT_FOUND,
            error: Box::new(se),
            bucket: "missing-bucket".into(),
            endpoint: "http://127.0.0.1:9000".into(),
        };
        let m = e.to_string();
        assert!(
            m.starts_with("ListObjectsV2 on http://127.0.0.1:9000/missing-bucket?list-type=2: 404 NoSuchBucket: The specified bucket does not exist"),
            "{m}"
        );
        assert!(m.contains("check the Profile's location.bucket"), "{m}");
        assert_eq!(e.code(), Some("NoSuchBucket"));

        let wrong_key = parse_error(
            StatusCode::FORBIDDEN,
            "<Error><Code>InvalidAccessKeyId</Code><Message>The AWS Access Key Id you provided does not exist in our records.</Message></Error>",
        );
        assert!(hint(&wrong_key, "ListObjectsV2", "b", "e").contains("access key ID"));
        let wrong_secret = parse_error(
            StatusCode::FORBIDDEN,
            "<Error><Code>SignatureDoesNotMatch</Code><Message>The request signature we calculated does not match</Message></Error>",
        );
        assert!(hint(&wrong_secret, "ListObjectsV2", "b", "e").contains("secret access key"));
        let region = parse_error(
            StatusCode::BAD_REQUEST,
            "<Error><Code>AuthorizationHeaderMalformed</Code><Message>the region 'us-east-1' is wrong; expecting 'eu-west-1'</Message><Region>eu-west-1</Region></Error>",
        );
        assert!(hint(&region, "ListObjectsV2", "b", "e").contains("location.region to eu-west-1"));
        // A strict store refusing a malformed request: the request and the store's words.
        let e = S3Error::Service {
            op: "PutObject",
            url: "http://s3.test/b/k".into(),
            status: StatusCode::LENGTH_REQUIRED,
            error: Box::new(parse_error(
                StatusCode::LENGTH_REQUIRED,
                "Content-Length required",
            )),
            bucket: "b".into(),
            endpoint: "http://s3.test".into(),
        };
        let m = e.to_string();
        assert!(
            m.starts_with("PutObject on http://s3.test/b/k: 411 HTTP411: Content-Length required (the store found no Content-Length on the PutObject request"),
            "{m}"
        );
        assert!(m.contains("nothing was written"), "{m}");
        let digest = parse_error(
            StatusCode::BAD_REQUEST,
            "<Error><Code>BadDigest</Code><Message>The Content-MD5 you specified did not match what we received.</Message></Error>",
        );
        assert!(hint(&digest, "UploadPart", "b", "e").contains("did not match its checksum"));
    }
}
