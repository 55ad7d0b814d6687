//! Streamed transfers on the Blob client of [`super`], for `kando location push/pull`: Get Blob
//! read chunk by chunk, and uploads of a stream of unknown length in bounded memory.
//!
//! An upload reads the stream in blocks of [`BLOCK_SIZE`]. A stream that ends within the first
//! block is one Put Blob; a longer one is Put Block per block (the next block read while the
//! current one is sent, so at most two are in memory) and one Put Block List that commits them.
//! The blob exists only once the list is committed: on any failure (the source, the service, a
//! signal) nothing is committed and no blob, not even a truncated one, appears under the name
//! (the service discards uncommitted blocks after a week; an existing blob keeps its content).

use std::future::Future;

use base64::Engine as _;
use bytes::Bytes;
use http::Method;
use tokio::io::AsyncRead;

use super::AzureError;
use super::client::{AzureClient, Exchange};
use crate::aws::download::Download;
use crate::aws::exchange::Answer;
use crate::aws::s3::transfer::read_part;

/// Size of each block (Azure takes up to 4000 MiB per block).
pub const BLOCK_SIZE: usize = 8 << 20;
/// The most blocks a block blob has.
pub const MAX_BLOCKS: u32 = 50_000;

/// The block ID of block `n`: base64 of a fixed-length text (a blob's IDs must all have the
/// same length).
pub fn block_id(n: u32) -> String {
    base64::engine::general_purpose::STANDARD.encode(format!("block-{n:06}"))
}

/// The Put Block List body committing `ids` in order.
pub fn block_list_body(ids: &[String]) -> String {
    let mut s = String::from(r#"<?xml version="1.0" encoding="utf-8"?><BlockList>"#);
    for id in ids {
        s.push_str(&format!("<Latest>{id}</Latest>"));
    }
    s.push_str("</BlockList>");
    s
}

impl AzureClient {
    /// Get Blob, its body left to read.
    pub async fn get_blob(&self, container: &str, blob: &str) -> Result<Download, AzureError> {
        let req = Exchange {
            op: "GetBlob",
            method: Method::GET,
            container,
            blob: Some(blob),
            query: &[],
            headers: &[],
        };
        match self.exchange(&req, Bytes::new(), true).await? {
            Answer::Open(response) => {
                let url = self.url(container, Some(blob));
                Ok(Download::new("GetBlob", url, response))
            }
            Answer::Whole { body, .. } => Err(AzureError::Response {
                op: "GetBlob",
                url: self.url(container, Some(blob)),
                message: format!("a 2xx answer was not streamed ({} bytes)", body.len()),
            }),
        }
    }

    /// Put Block `id` of `blob` (uncommitted until [`Self::put_block_list`]).
    pub async fn put_block(
        &self,
        container: &str,
        blob: &str,
        id: &str,
        data: Bytes,
    ) -> Result<(), AzureError> {
        let req = Exchange {
            op: "PutBlock",
            method: Method::PUT,
            container,
            blob: Some(blob),
            query: &[("comp", "block"), ("blockid", id)],
            headers: &[],
        };
        self.send(&req, data).await.map(|_| ())
    }

    /// Put Block List: commits `ids`, in order, as the blob's content.
    pub async fn put_block_list(
        &self,
        container: &str,
        blob: &str,
        ids: &[String],
    ) -> Result<(), AzureError> {
        let req = Exchange {
            op: "PutBlockList",
            method: Method::PUT,
            container,
            blob: Some(blob),
            query: &[("comp", "blocklist")],
            headers: &[("content-type", "application/xml")],
        };
        self.send(&req, Bytes::from(block_list_body(ids)))
            .await
            .map(|_| ())
    }

    /// Uploads everything `src` yields to `blob` (see the module docs); returns the bytes
    /// uploaded. When `cancel` completes first, nothing is committed and the result is
    /// [`AzureError::Interrupted`] with what `cancel` gave.
    pub async fn upload<R, C>(
        &self,
        container: &str,
        blob: &str,
        src: &mut R,
        cancel: C,
    ) -> Result<u64, AzureError>
    where
        R: AsyncRead + Unpin,
        C: Future<Output = String>,
    {
        let mut cancel = std::pin::pin!(cancel);
        tokio::select! {
            r = self.upload_blocks(container, blob, src) => r,
            why = &mut cancel => Err(AzureError::Interrupted(why)),
        }
    }

    async fn upload_blocks<R: AsyncRead + Unpin>(
        &self,
        container: &str,
        blob: &str,
        src: &mut R,
    ) -> Result<u64, AzureError> {
        let first = read_part(src, BLOCK_SIZE)
            .await
            .map_err(AzureError::Source)?;
        if first.len() < BLOCK_SIZE {
            let n = first.len() as u64;
            self.put_blob(container, blob, first).await?;
            return Ok(n);
        }
        let mut ids: Vec<String> = Vec::new();
        let mut total = 0u64;
        let mut current = first;
        let mut n = 1u32;
        loop {
            let len = current.len() as u64;
            let id = block_id(n);
            // The next block is read while this one is sent.
            let (sent, next) = tokio::join!(
                self.put_block(container, blob, &id, current),
                read_part(src, BLOCK_SIZE)
            );
            sent?;
            ids.push(id);
            total += len;
            let next = next.map_err(AzureError::Source)?;
            if next.is_empty() {
                break;
            }
            if n == MAX_BLOCKS {
                return Err(AzureError::TooLarge);
            }
            n += 1;
            current = next;
        }
        self.put_block_list(container, blob, &ids).await?;
        Ok(total)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn block_ids_and_list() {
        assert_eq!(block_id(1), "YmxvY2stMDAwMDAx");
        assert!(
            (1..=MAX_BLOCKS)
                .step_by(997)
                .all(|n| block_id(n).len() == block_id(1).len())
        );
        assert_eq!(
            block_list_body(&[block_id(1), block_id(2)]),
            r#"<?xml version="1.0" encoding="utf-8"?><BlockList><Latest>YmxvY2stMDAwMDAx</Latest><Latest>YmxvY2stMDAwMDAy</Latest></BlockList>"#
        );
        assert!(
            AzureError::TooLarge
                .to_string()
                .contains("50000 blocks of 8 MiB")
        );
    }
}
