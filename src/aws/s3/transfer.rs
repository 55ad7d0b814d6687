//! Streamed transfers on the S3 client of [`super`], for `kando location
//! push/pull` (src/kando): GetObject read chunk by chunk, and uploads of a
//! stream of unknown length in bounded memory.
//!
//! An upload ([`Upload`] of an [`S3Client`], driven by [`crate::aws::upload`]) reads the stream in parts
//! ([`part_size`]: 8 MiB, 16 MiB from part 5001 on). A stream that ends within the first part
//! is one PutObject; a longer one is a multipart upload (CreateMultipartUpload, UploadPart,
//! CompleteMultipartUpload). S3 shows the object only once CompleteMultipartUpload succeeded:
//! on any failure the upload is aborted (AbortMultipartUpload).

use bytes::Bytes;
use http::Method;
use tokio::io::AsyncRead;

use super::{Exchange, Reply, S3Client, S3Error};
use crate::aws::download::Download;
use crate::aws::upload::{Parts, Upload, numbered_parts};
use crate::aws::xml::{self, complete_request_body, parse_upload_id};

/// Part size of parts 1..=5000.
pub const PART_SIZE: usize = 8 << 20;
/// Part size from part 5001 on (S3 allows at most 10000 parts).
pub const LARGE_PART_SIZE: usize = 16 << 20;
/// The S3 limit.
pub const MAX_PARTS: u32 = 10_000;

/// The size of part `n` (from 1): the stream may be up to
/// 5000 × 8 MiB + 5000 × 16 MiB = 117.2 GiB.
pub fn part_size(n: u32) -> usize {
    if n <= MAX_PARTS / 2 {
        PART_SIZE
    } else {
        LARGE_PART_SIZE
    }
}

/// The largest stream an S3 [`Upload`] takes.
pub fn max_stream_size() -> u64 {
    (1..=MAX_PARTS).map(|n| part_size(n) as u64).sum()
}

/// Why an upload failed.
pub type UploadError = crate::aws::upload::UploadError<S3Error>;

/// What [`UploadError::TooLarge`] says.
pub fn too_large() -> String {
    format!(
        "the stream is larger than {} bytes, the most S3 takes in {MAX_PARTS} parts of at most {} MiB",
        max_stream_size(),
        LARGE_PART_SIZE >> 20
    )
}

impl S3Client {
    /// GetObject, its body left to read with [`Download::next_chunk`].
    pub async fn get_object(&self, bucket: &str, key: &str) -> Result<Download, S3Error> {
        let req = Exchange {
            op: "GetObject",
            method: Method::GET,
            bucket,
            key: Some(key),
            query: &[],
            extra: &[],
        };
        match self.exchange(&req, Bytes::new(), true).await? {
            Reply::Open { url, response } => Ok(Download::new("GetObject", url, response)),
            Reply::Whole { body, .. } => Err(S3Error::Response {
                op: "GetObject",
                url: format!("{}{}", self.endpoint(), self.path(bucket, Some(key))),
                message: format!("a 2xx answer was not streamed ({} bytes)", body.len()),
            }),
        }
    }
}

impl Upload<'_, S3Client> {
    /// One request on the object, its answer read whole.
    async fn send(
        &self,
        op: &'static str,
        method: Method,
        query: &[(&str, &str)],
        body: Bytes,
    ) -> Result<(http::HeaderMap, Bytes), S3Error> {
        let (bucket, key) = (self.bucket, Some(self.key));
        self.client
            .send(op, method, bucket, key, query, &[], body)
            .await
    }

    fn url(&self) -> String {
        let c = self.client;
        format!("{}{}", c.endpoint(), c.path(self.bucket, Some(self.key)))
    }

    /// UploadPart `n`; returns the part's ETag.
    async fn upload_part(&self, upload_id: &str, n: u32, data: Bytes) -> Result<String, S3Error> {
        let num = n.to_string();
        let query = [("partNumber", num.as_str()), ("uploadId", upload_id)];
        let (headers, _) = self.send("UploadPart", Method::PUT, &query, data).await?;
        headers
            .get(http::header::ETAG)
            .and_then(|v| v.to_str().ok())
            .filter(|e| !e.is_empty())
            .map(str::to_string)
            .ok_or_else(|| S3Error::Response {
                op: "UploadPart",
                url: self.url(),
                message: format!("part {n} was accepted without an ETag header"),
            })
    }
}

impl Parts for Upload<'_, S3Client> {
    type Error = S3Error;
    /// The multipart upload's ID.
    type Session = String;

    fn part_size(&self, n: u32) -> usize {
        part_size(n)
    }

    async fn put(&self, data: Bytes) -> Result<(), S3Error> {
        self.client.put_object(self.bucket, self.key, data).await
    }

    /// CreateMultipartUpload.
    async fn start(&self) -> Result<String, S3Error> {
        let op = "CreateMultipartUpload";
        let query = [("uploads", "")];
        let (_, body) = self.send(op, Method::POST, &query, Bytes::new()).await?;
        parse_upload_id(&String::from_utf8_lossy(&body)).map_err(|source| S3Error::Document {
            op,
            url: format!("{}?uploads", self.url()),
            source,
        })
    }

    /// UploadPart of each part, then CompleteMultipartUpload.
    async fn send_parts<R: AsyncRead + Unpin>(
        &self,
        upload_id: &String,
        first: Bytes,
        src: &mut R,
    ) -> Result<u64, UploadError> {
        let send = async |n, data| self.upload_part(upload_id, n, data).await;
        let (etags, total) =
            numbered_parts(first, src, part_size, (MAX_PARTS, too_large), send).await?;
        let parts: Vec<(u32, String)> = (1..).zip(etags).collect();
        let (op, query) = (
            "CompleteMultipartUpload",
            [("uploadId", upload_id.as_str())],
        );
        let body = Bytes::from(complete_request_body(&parts));
        let (_, answer) = self.send(op, Method::POST, &query, body).await?;
        // S3 may answer 200 and still fail, with an <Error> document.
        let text = String::from_utf8_lossy(&answer);
        if text.contains("<Error>") {
            return Err(UploadError::Store(S3Error::Service {
                op,
                url: self.url(),
                status: http::StatusCode::OK,
                error: Box::new(xml::parse_error(http::StatusCode::OK, &text)),
                bucket: self.bucket.to_string(),
                endpoint: self.client.endpoint(),
            }));
        }
        Ok(total)
    }

    /// AbortMultipartUpload.
    async fn abandon(&self, upload_id: &String) {
        let (op, query) = ("AbortMultipartUpload", [("uploadId", upload_id.as_str())]);
        if let Err(e) = self.send(op, Method::DELETE, &query, Bytes::new()).await {
            let (bucket, key) = (self.bucket, self.key);
            tracing::warn!(%bucket, %key, %upload_id, error = %e,
                "the failed multipart upload could not be aborted (no object was made; its parts stay until a lifecycle rule removes them)");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn part_sizes_stay_within_s3_limits() {
        assert_eq!(part_size(1), 8 << 20);
        assert_eq!(part_size(5000), 8 << 20);
        assert_eq!(part_size(5001), 16 << 20);
        assert_eq!(part_size(MAX_PARTS), 16 << 20);
        // S3: every part but the last at least 5 MiB, at most 5 GiB.
        assert!((1..=MAX_PARTS).all(|n| part_size(n) >= 5 << 20 && part_size(n) <= 5 << 30));
        assert_eq!(
            max_stream_size(),
            5000 * (8u64 << 20) + 5000 * (16u64 << 20)
        );
        assert!(too_large().contains("10000 parts"));
    }

    #[test]
    fn multipart_documents() {
        let xml = r#"<?xml version="1.0" encoding="UTF-8"?>
<InitiateMultipartUploadResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">
<Bucket>b</Bucket><Key>k</Key><UploadId>VXBsb2FkIElE&amp;x</UploadId></InitiateMultipartUploadResult>"#;
        assert_eq!(parse_upload_id(xml).unwrap(), "VXBsb2FkIElE&x");
        assert!(
            parse_upload_id("<Error/>")
                .unwrap_err()
                .to_string()
                .contains("InitiateMultipartUploadResult")
        );
        assert!(
            parse_upload_id("<InitiateMultipartUploadResult><UploadId></UploadId></InitiateMultipartUploadResult>")
                .unwrap_err()
                .to_string()
                .contains("no UploadId")
        );
        let body = complete_request_body(&[(1, "\"a1\"".into()), (2, "\"b2\"".into())]);
        assert!(body.ends_with(
            "<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>&quot;a1&quot;</ETag></Part><Part><PartNumber>2</PartNumber><ETag>&quot;b2&quot;</ETag></Part></CompleteMultipartUpload>"
        ));
    }
}
