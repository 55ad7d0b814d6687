//! Uploads ([`Upload`] of a [`GcsClient`], driven by [`crate::aws::upload`]): one `uploadType=media` request below
//! [`CHUNK`], else a resumable upload in [`CHUNK`]s, cancelled when anything fails.

use bytes::Bytes;
use http::Method;
use tokio::io::AsyncRead;

use super::GcsError;
use super::client::{GcsClient, Req};
use crate::aws::sigv4::uri_encode;
use crate::aws::upload::{Parts, Upload, UploadError, read_part};

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

impl Upload<'_, GcsClient> {
    fn url(&self, upload_type: &str) -> String {
        format!(
            "{}/upload/storage/v1/b/{}/o?uploadType={upload_type}&name={}",
            self.client.base_url(),
            uri_encode(self.bucket, false),
            uri_encode(self.key, false)
        )
    }
}

impl Parts for Upload<'_, GcsClient> {
    type Error = GcsError;
    /// The resumable upload's session URL.
    type Session = String;

    fn part_size(&self, _: u32) -> usize {
        CHUNK
    }

    fn check(&self) -> Result<(), GcsError> {
        check_object_name(self.key).map_err(GcsError::Config)
    }

    async fn put(&self, body: Bytes) -> Result<(), GcsError> {
        let req = Req {
            headers: vec![("content-type", "application/octet-stream".into())],
            body,
            ..Req::new("UploadObject", Method::POST, self.url("media"), self.bucket)
        };
        self.client.whole(req, true).await.map(|_| ())
    }

    async fn start(&self) -> Result<String, GcsError> {
        let url = self.url("resumable");
        let req = Req {
            headers: vec![("x-upload-content-type", "application/octet-stream".into())],
            ..Req::new("StartUpload", Method::POST, url.clone(), self.bucket)
        };
        let (headers, _) = self.client.whole(req, true).await?;
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

    /// The chunks, from `first`; the next is read before one is sent, as the last one names
    /// the total.
    async fn send_parts<R: AsyncRead + Unpin>(
        &self,
        session: &String,
        first: Bytes,
        src: &mut R,
    ) -> Result<u64, UploadError<GcsError>> {
        let mut sent = 0u64;
        let mut current = first;
        loop {
            let next = read_part(src, CHUNK).await.map_err(UploadError::Source)?;
            let len = current.len() as u64;
            let last = next.is_empty();
            let req = Req {
                headers: vec![("content-range", content_range(sent, len, last))],
                body: current,
                ..Req::new("UploadChunk", Method::PUT, session.clone(), self.bucket)
            };
            self.client.whole(req, false).await?;
            sent += len;
            if last {
                return Ok(sent);
            }
            current = next;
        }
    }

    /// Cancelling the session leaves no object (GCS answers 499 to it).
    async fn abandon(&self, session: &String) {
        let req = Req::new("CancelUpload", Method::DELETE, session.clone(), self.bucket);
        let _ = self.client.send(req, false, false).await;
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
