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

    /// The error a store at `endpoint` answered `body` with to `op` on `url`.
    fn service(
        op: &'static str,
        url: &str,
        status: StatusCode,
        body: &str,
        bucket: &str,
    ) -> S3Error {
        let endpoint = url.splitn(4, '/').take(3).collect::<Vec<_>>().join("/");
        S3Error::Service {
            op,
            url: url.into(),
            status,
            error: Box::new(parse_error(status, body)),
            bucket: bucket.into(),
            endpoint,
        }
    }

    #[test]
    fn error_documents_become_clear_errors() {
        // The document's decoding is tested with aws::xml; here, what the error says: the
        // request, the store's words, what to check. Last, a strict store refusing a malformed
        // request.
        for (op, url, status, body, start, then) in [
            (
                "ListObjectsV2",
                "http://127.0.0.1:9000/missing-bucket?list-type=2",
                StatusCode::NOT_FOUND,
                crate::aws::xml::tests::NO_SUCH_BUCKET,
                "ListObjectsV2 on http://127.0.0.1:9000/missing-bucket?list-type=2: 404 NoSuchBucket: The specified bucket does not exist",
                "does not exist at http://127.0.0.1:9000; check the Profile's location.bucket",
            ),
            (
                "PutObject",
                "http://s3.test/b/k",
                StatusCode::LENGTH_REQUIRED,
                "Content-Length required",
                "PutObject on http://s3.test/b/k: 411 HTTP411: Content-Length required (the store found no Content-Length on the PutObject request",
                "nothing was written",
            ),
        ] {
            let bucket = url.split(['/', '?']).nth(3).unwrap();
            let m = service(op, url, status, body, bucket).to_string();
            assert!(m.starts_with(start) && m.contains(then), "{m}");
        }
        let url = "http://127.0.0.1:9000/b";
        let e = service(
            "GetObject",
            url,
            StatusCode::NOT_FOUND,
            crate::aws::xml::tests::NO_SUCH_BUCKET,
            "b",
        );
        assert_eq!(e.code(), Some("NoSuchBucket"));

        for (status, body, op, hinted) in [
            (
                403,
                "<Error><Code>InvalidAccessKeyId</Code><Message>The AWS Access Key Id you provided does not exist in our records.</Message></Error>",
                "ListObjectsV2",
                "access key ID",
            ),
            (
                403,
                "<Error><Code>SignatureDoesNotMatch</Code><Message>The request signature we calculated does not match</Message></Error>",
                "ListObjectsV2",
                "secret access key",
            ),
            (
                400,
                "<Error><Code>AuthorizationHeaderMalformed</Code><Message>the region 'us-east-1' is wrong; expecting 'eu-west-1'</Message><Region>eu-west-1</Region></Error>",
                "ListObjectsV2",
                "location.region to eu-west-1",
            ),
            (
                400,
                "<Error><Code>BadDigest</Code><Message>The Content-MD5 you specified did not match what we received.</Message></Error>",
                "UploadPart",
                "did not match its checksum",
            ),
        ] {
            let e = parse_error(StatusCode::from_u16(status).unwrap(), body);
            assert!(hint(&e, op, "b", "e").contains(hinted), "{body}");
        }
    }
}
