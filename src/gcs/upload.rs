//! Uploads: one `uploadType=media` request below [`CHUNK`], else a resumable upload in
//! [`CHUNK`]s (memory stays bounded), cancelled when anything fails so no object appears.

use std::future::Future;

use bytes::Bytes;
use http::Method;
use tokio::io::AsyncRead;

use super::GcsError;
use super::client::{GcsClient, Req};
use crate::aws::s3::transfer::read_part;
use crate::aws::sigv4::uri_encode;

/// Upload chunk size: a multiple of 256 KiB, as resumable uploads require.
pub const CHUNK: usize = 8 << 20;

/// GCS's object naming rules that a store refuses (`400`), checked before anything is sent:
/// 1 to 1024 bytes of UTF-8, no carriage return or line feed, not `.` or `..`.
pub fn check_object_name(name: &str) -> Result<(), String> {
    let why = if name.is_empty() || name.len() > 1024 {
        format!("is {} bytes long (GCS takes 1 to 1024)", name.len())
    } else if name.contains(['\r', '\n']) {
        "has a carriage return or line feed (GCS refuses them)".to_string()
    } else if name == "." || name == ".." {
        "is `.` or `..` (GCS refuses them)".to_string()
    } else {
        return Ok(());
    };
    Err(format!(
        "the object name {:?} {why}; pass another --path",
        name.chars().take(80).collect::<String>()
    ))
}

impl GcsClient {
    /// Uploads everything `src` yields to `key`; returns the bytes uploaded. When `cancel`
    /// completes first, a started resumable upload is cancelled and the result is
    /// [`GcsError::Interrupted`] with what `cancel` gave.
    pub async fn upload<R, C>(
        &self,
        bucket: &str,
        key: &str,
        src: &mut R,
        cancel: C,
    ) -> Result<u64, GcsError>
    where
        R: AsyncRead + Unpin,
        C: Future<Output = String>,
    {
        check_object_name(key).map_err(GcsError::Config)?;
        let mut cancel = std::pin::pin!(cancel);
        let first = tokio::select! {
            r = read_part(src, CHUNK) => r.map_err(GcsError::Source)?,
            why = &mut cancel => return Err(GcsError::Interrupted(why)),
        };
        if first.len() < CHUNK {
            let n = first.len() as u64;
            let url = format!(
                "{}/upload/storage/v1/b/{}/o?uploadType=media&name={}",
                self.base_url(),
                uri_encode(bucket, false),
                uri_encode(key, false)
            );
            let req = Req {
                op: "UploadObject",
                method: Method::POST,
                url,
                headers: vec![("content-type", "application/octet-stream".into())],
                body: first,
                bucket,
            };
            tokio::select! {
                r = self.whole(req, true) => r?,
                why = &mut cancel => return Err(GcsError::Interrupted(why)),
            };
            return Ok(n);
        }
        let session = tokio::select! {
            r = self.start_resumable(bucket, key) => r?,
            why = &mut cancel => return Err(GcsError::Interrupted(why)),
        };
        let result = tokio::select! {
            r = self.upload_chunks(bucket, &session, first, src) => r,
            why = &mut cancel => Err(GcsError::Interrupted(why)),
        };
        if result.is_err() {
            // Cancelling the session leaves no object (GCS answers 499 to it).
            let req = Req {
                op: "CancelUpload",
                method: Method::DELETE,
                url: session,
                headers: vec![],
                body: Bytes::new(),
                bucket,
            };
            let _ = self.send(req, false, false).await;
        }
        result
    }

    /// Starts a resumable upload; its session URL.
    async fn start_resumable(&self, bucket: &str, key: &str) -> Result<String, GcsError> {
        let url = format!(
            "{}/upload/storage/v1/b/{}/o?uploadType=resumable&name={}",
            self.base_url(),
            uri_encode(bucket, false),
            uri_encode(key, false)
        );
        let (headers, _) = self
            .whole(
                Req {
                    op: "StartUpload",
                    method: Method::POST,
                    url: url.clone(),
                    headers: vec![("x-upload-content-type", "application/octet-stream".into())],
                    body: Bytes::new(),
                    bucket,
                },
                true,
            )
            .await?;
        headers
            .get(http::header::LOCATION)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string)
            .ok_or_else(|| GcsError::Response {
                op: "StartUpload",
                url,
                message: "no Location header (the upload session)".into(),
            })
    }

    /// The chunks of a resumable upload, from `first`; the last one names the total.
    async fn upload_chunks<R: AsyncRead + Unpin>(
        &self,
        bucket: &str,
        session: &str,
        first: Bytes,
        src: &mut R,
    ) -> Result<u64, GcsError> {
        let mut sent = 0u64;
        let mut current = first;
        loop {
            let next = read_part(src, CHUNK).await.map_err(GcsError::Source)?;
            let len = current.len() as u64;
            let last = next.is_empty();
            let range = content_range(sent, len, last);
            let req = Req {
                op: "UploadChunk",
                method: Method::PUT,
                url: session.to_string(),
                headers: vec![("content-range", range)],
                body: current,
                bucket,
            };
            self.whole(req, false).await?;
            sent += len;
            if last {
                return Ok(sent);
            }
            current = next;
        }
    }
}

/// `Content-Range` of a resumable upload's chunk of `len` bytes at `start`; the last chunk
/// names the total, others `*`.
pub fn content_range(start: u64, len: u64, last: bool) -> String {
    let end = start + len - 1;
    if last {
        format!("bytes {start}-{end}/{}", start + len)
    } else {
        format!("bytes {start}-{end}/*")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunk_ranges() {
        assert_eq!(content_range(0, 8, false), "bytes 0-7/*");
        assert_eq!(content_range(8, 2, true), "bytes 8-9/10");
        assert_eq!(CHUNK % (256 << 10), 0);
    }

    #[test]
    fn object_names_gcs_refuses() {
        assert!(check_object_name("team-a/backups/x.gz").is_ok());
        assert!(check_object_name(&"é".repeat(512)).is_ok());
        let e = check_object_name(&"é".repeat(513)).unwrap_err();
        assert!(
            e.contains("is 1026 bytes long (GCS takes 1 to 1024)"),
            "{e}"
        );
        assert!(check_object_name("a\nb").unwrap_err().contains("line feed"));
        assert!(check_object_name("..").unwrap_err().contains("`..`"));
        assert!(check_object_name("").is_err());
    }
}
