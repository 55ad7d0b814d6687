//! Uploads of a stream of unknown length in bounded memory, as the S3, GCS and Azure clients
//! all make them ([`upload`]): the stream is read in parts; one that ends within the first part
//! is one request ([`Parts::put`]); a longer one opens a session ([`Parts::start`]) that takes
//! the parts and commits them at the end. On any failure (the source, the store, the caller's
//! `cancel`) the session is abandoned ([`Parts::abandon`]): no object, not even a truncated
//! one, appears under the key.

use std::future::Future;

use bytes::Bytes;
use tokio::io::{AsyncRead, AsyncReadExt};

/// Why an upload failed.
#[derive(Debug, thiserror::Error)]
pub enum UploadError<E> {
    #[error("{0}")]
    Store(#[from] E),
    /// Reading the source failed.
    #[error("reading the data to upload: {0}")]
    Source(std::io::Error),
    /// The stream is larger than the store takes in its most parts (the store's words).
    #[error("{0}")]
    TooLarge(String),
    /// The caller's `cancel` future completed (e.g. SIGTERM).
    #[error("interrupted ({0})")]
    Interrupted(String),
}

/// The upload of `key` in `bucket` (an Azure container) by `client`.
pub struct Upload<'a, C> {
    pub client: &'a C,
    pub bucket: &'a str,
    pub key: &'a str,
}

impl<'a, C> Upload<'a, C> {
    pub fn new(client: &'a C, bucket: &'a str, key: &'a str) -> Self {
        Upload {
            client,
            bucket,
            key,
        }
    }
}

/// One object's upload on a store.
// The uploads run on the caller's task: their futures need not be `Send`.
#[allow(async_fn_in_trait)]
pub trait Parts {
    type Error;
    /// An open upload: its ID or session URL.
    type Session;
    /// The size of part `n` (from 1); a stream that ends within part 1 is one [`Parts::put`].
    fn part_size(&self, n: u32) -> usize;
    /// What the store would refuse, found before anything is read or sent.
    fn check(&self) -> Result<(), Self::Error> {
        Ok(())
    }
    async fn put(&self, data: Bytes) -> Result<(), Self::Error>;
    async fn start(&self) -> Result<Self::Session, Self::Error>;
    /// Sends the parts, from `first` on, and commits them; the bytes uploaded.
    async fn send_parts<R: AsyncRead + Unpin>(
        &self,
        session: &Self::Session,
        first: Bytes,
        src: &mut R,
    ) -> Result<u64, UploadError<Self::Error>>;
    /// Drops a failed session's parts (best effort).
    async fn abandon(&self, session: &Self::Session);
}

/// Uploads everything `src` yields (see the module docs); the bytes uploaded. When `cancel`
/// completes first, a started session is abandoned and the result is
/// [`UploadError::Interrupted`] with what `cancel` gave.
pub async fn upload<P: Parts, R: AsyncRead + Unpin>(
    store: &P,
    src: &mut R,
    cancel: impl Future<Output = String>,
) -> Result<u64, UploadError<P::Error>> {
    store.check()?;
    let mut cancel = std::pin::pin!(cancel);
    let size = store.part_size(1);
    let first = tokio::select! {
        r = read_part(src, size) => r.map_err(UploadError::Source)?,
        why = &mut cancel => return Err(UploadError::Interrupted(why)),
    };
    if first.len() < size {
        let n = first.len() as u64;
        tokio::select! {
            r = store.put(first) => r?,
            why = &mut cancel => return Err(UploadError::Interrupted(why)),
        }
        return Ok(n);
    }
    let session = tokio::select! {
        r = store.start() => r?,
        why = &mut cancel => return Err(UploadError::Interrupted(why)),
    };
    let result = tokio::select! {
        r = store.send_parts(&session, first, src) => r,
        why = &mut cancel => Err(UploadError::Interrupted(why)),
    };
    if result.is_err() {
        store.abandon(&session).await;
    }
    result
}

/// The parts loop of a store that numbers them (S3's parts, Azure's blocks): part `n` is sent
/// while part `n + 1` is read, so at most two are in memory; a stream longer than `max_parts`
/// parts fails with `too_large`. What `send` returned for each part (its ETag, its block ID),
/// in order, and the bytes sent.
pub async fn numbered_parts<R: AsyncRead + Unpin, E>(
    first: Bytes,
    src: &mut R,
    part_size: impl Fn(u32) -> usize,
    (max_parts, too_large): (u32, fn() -> String),
    mut send: impl AsyncFnMut(u32, Bytes) -> Result<String, E>,
) -> Result<(Vec<String>, u64), UploadError<E>> {
    let mut sent = Vec::new();
    let mut total = 0u64;
    let mut current = first;
    let mut n = 1u32;
    loop {
        let len = current.len() as u64;
        let (receipt, next) = tokio::join!(send(n, current), read_part(src, part_size(n + 1)));
        sent.push(receipt?);
        total += len;
        let next = next.map_err(UploadError::Source)?;
        if next.is_empty() {
            return Ok((sent, total));
        }
        if n == max_parts {
            return Err(UploadError::TooLarge(too_large()));
        }
        n += 1;
        current = next;
    }
}

/// Up to `size` bytes of `src` (fewer only at its end).
pub async fn read_part<R: AsyncRead + Unpin>(src: &mut R, size: usize) -> std::io::Result<Bytes> {
    let mut buf = Vec::with_capacity(size);
    while buf.len() < size {
        // `take` keeps read_buf from growing the buffer past `size`.
        let want = (size - buf.len()) as u64;
        if (&mut *src).take(want).read_buf(&mut buf).await? == 0 {
            break;
        }
    }
    Ok(Bytes::from(buf))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A reader that hands out a few bytes per call, like a pipe.
    struct Trickle(Vec<u8>, usize);

    impl AsyncRead for Trickle {
        fn poll_read(
            mut self: std::pin::Pin<&mut Self>,
            _: &mut std::task::Context<'_>,
            buf: &mut tokio::io::ReadBuf<'_>,
        ) -> std::task::Poll<std::io::Result<()>> {
            let at = self.1;
            let n = (self.0.len() - at).min(7).min(buf.remaining());
            buf.put_slice(&self.0[at..at + n]);
            self.1 += n;
            std::task::Poll::Ready(Ok(()))
        }
    }

    #[tokio::test]
    async fn parts_are_filled_to_their_size() {
        let data: Vec<u8> = (0..100u8).collect();
        let mut r = Trickle(data.clone(), 0);
        let a = read_part(&mut r, 40).await.unwrap();
        let b = read_part(&mut r, 40).await.unwrap();
        let c = read_part(&mut r, 40).await.unwrap();
        let d = read_part(&mut r, 40).await.unwrap();
        assert_eq!((a.len(), b.len(), c.len(), d.len()), (40, 40, 20, 0));
        assert_eq!([a, b, c].concat(), data);
    }

    #[tokio::test]
    async fn numbered_parts_stop_at_the_limit() {
        let data: Vec<u8> = (0..100u8).collect();
        let parts = async |max| {
            let first = Bytes::from(data[..10].to_vec());
            let send = async |n, b: Bytes| Ok::<_, ()>(format!("{n}:{}", b.len()));
            numbered_parts(
                first,
                &mut &data[10..],
                |_| 40,
                (max, || "too large".into()),
                send,
            )
            .await
        };
        let (ids, total) = parts(4).await.unwrap();
        assert_eq!(ids, ["1:10", "2:40", "3:40", "4:10"]);
        assert_eq!(total, 100);
        match parts(3).await {
            Err(UploadError::TooLarge(m)) => assert_eq!(m, "too large"),
            other => panic!("{other:?}"),
        }
    }
}
