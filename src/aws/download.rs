//! An object being downloaded, as the S3 (GetObject), GCS (`alt=media`) and Azure (Get Blob)
//! clients all return it: the 2xx answer's body read chunk by chunk, the length the store
//! announced, and errors that name the request and its URL.

use std::time::Duration;

use bytes::Bytes;
use http_body_util::BodyExt as _;
use tokio::io::{AsyncWrite, AsyncWriteExt as _};

/// Longest wait for the next bytes of a body being read.
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(120);

/// A download in progress.
pub struct Download {
    op: &'static str,
    url: String,
    body: hyper::body::Incoming,
    /// `Content-Length`, when the store sent one (and the body is sent as stored).
    pub len: Option<u64>,
}

/// Why a download stopped.
#[derive(Debug, thiserror::Error)]
pub enum DownloadError {
    /// The connection broke or stayed silent for [`IDLE_TIMEOUT`].
    #[error("{op} on {url}: {message}")]
    Read {
        op: &'static str,
        url: String,
        message: String,
    },
    /// Writing to the destination failed.
    #[error("writing the downloaded data: {0}")]
    Sink(std::io::Error),
}

impl Download {
    /// The body of `op`'s answer from `url`, of the length its `Content-Length` says.
    pub fn new(
        op: &'static str,
        url: String,
        response: http::Response<hyper::body::Incoming>,
    ) -> Self {
        let len = response
            .headers()
            .get(http::header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok()?.parse().ok());
        Download {
            op,
            url,
            body: response.into_body(),
            len,
        }
    }

    /// The next bytes; `None` at the end.
    pub async fn next_chunk(&mut self) -> Result<Option<Bytes>, DownloadError> {
        loop {
            let frame = tokio::time::timeout(IDLE_TIMEOUT, self.body.frame())
                .await
                .map_err(|_| {
                    self.read_error(format!("no data for {} s", IDLE_TIMEOUT.as_secs()))
                })?;
            match frame {
                None => return Ok(None),
                Some(Err(e)) => return Err(self.read_error(format!("reading the object: {e}"))),
                Some(Ok(f)) => {
                    if let Ok(data) = f.into_data()
                        && !data.is_empty()
                    {
                        return Ok(Some(data));
                    }
                }
            }
        }
    }

    /// Writes the rest of the object to `out` (then flushes it); returns the bytes written.
    pub async fn copy_to<W: AsyncWrite + Unpin>(
        &mut self,
        out: &mut W,
    ) -> Result<u64, DownloadError> {
        let mut n = 0u64;
        while let Some(chunk) = self.next_chunk().await? {
            out.write_all(&chunk).await.map_err(DownloadError::Sink)?;
            n += chunk.len() as u64;
        }
        out.flush().await.map_err(DownloadError::Sink)?;
        Ok(n)
    }

    fn read_error(&self, message: String) -> DownloadError {
        DownloadError::Read {
            op: self.op,
            url: self.url.clone(),
            message,
        }
    }
}
