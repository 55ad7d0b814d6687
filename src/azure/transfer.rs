//! Streamed transfers on the Blob client of [`super`], for `kando location push/pull`: Get Blob
//! read chunk by chunk, and uploads of a stream of unknown length in bounded memory.
//!
//! An upload ([`Upload`] of an [`AzureClient`], driven by [`crate::aws::upload`]) reads the stream in blocks of
//! [`BLOCK_SIZE`]. A stream that ends within the first block is one Put Blob; a longer one is
//! Put Block per block and one Put Block List that commits them. The blob exists only once the
//! list is committed: on a failure nothing is committed (the service discards uncommitted
//! blocks after a week; an existing blob keeps its content).

use base64::Engine as _;
use bytes::Bytes;
use http::Method;
use tokio::io::AsyncRead;

use super::AzureError;
use super::client::{AzureClient, Exchange};
use crate::aws::download::Download;
use crate::aws::exchange::Answer;
use crate::aws::upload::{Parts, Upload, UploadError, numbered_parts};

/// Size of each block (Azure takes up to 4000 MiB per block).
pub const BLOCK_SIZE: usize = 8 << 20;
/// The most blocks a block blob has.
pub const MAX_BLOCKS: u32 = 50_000;

/// What [`UploadError::TooLarge`] says.
pub fn too_large() -> String {
    format!(
        "the stream is larger than {} bytes, the most this client puts in {MAX_BLOCKS} blocks of {} MiB",
        MAX_BLOCKS as u64 * BLOCK_SIZE as u64,
        BLOCK_SIZE >> 20
    )
}

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
}

impl Parts for Upload<'_, AzureClient> {
    type Error = AzureError;
    /// Blocks need no session: uncommitted, they are not the blob's.
    type Session = ();

    fn part_size(&self, _: u32) -> usize {
        BLOCK_SIZE
    }

    async fn put(&self, data: Bytes) -> Result<(), AzureError> {
        self.client.put_blob(self.bucket, self.key, data).await
    }

    async fn start(&self) -> Result<(), AzureError> {
        Ok(())
    }

    async fn send_parts<R: AsyncRead + Unpin>(
        &self,
        _: &(),
        first: Bytes,
        src: &mut R,
    ) -> Result<u64, UploadError<AzureError>> {
        let (c, blob) = (self.client, (self.bucket, self.key));
        // Put Block: uncommitted until Put Block List.
        let send = async |n, data| {
            let id = block_id(n);
            let query = [("comp", "block"), ("blockid", id.as_str())];
            c.put("PutBlock", blob, &query, &[], data)
                .await
                .map(|()| id)
        };
        let (ids, total) =
            numbered_parts(first, src, |_| BLOCK_SIZE, (MAX_BLOCKS, too_large), send).await?;
        let (query, headers) = (
            [("comp", "blocklist")],
            [("content-type", "application/xml")],
        );
        let list = Bytes::from(block_list_body(&ids));
        c.put("PutBlockList", blob, &query, &headers, list).await?;
        Ok(total)
    }

    async fn abandon(&self, _: &()) {}
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
        assert!(too_large().contains("50000 blocks of 8 MiB"));
    }
}
