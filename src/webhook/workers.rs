//! Where the admission CPU work (decoding, checks, encoding the answer) runs: bounded by the
//! cores, never a thread per request.
//!
//! A review of an ordinary body (up to [`INLINE_MAX_BYTES`], ~0.1 ms of CPU) runs inline on the
//! async worker that read it: handing it to another thread would cost more than the work (a
//! wake-up and two context switches), and the async workers are as many as the cores. A larger
//! body (up to 7 MiB, tens of ms) would stall the other connections of its worker, so it waits
//! for one of `size` permits (default: the cores) and runs on Tokio's blocking pool, which then
//! never holds more than `size` threads for reviews. Before this, every review went to
//! `spawn_blocking` unbounded: 64 concurrent clients grew the server to ~460 threads and
//! 66-89 MiB (13 MiB idle).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// Bodies up to this size are reviewed inline on the async worker.
pub const INLINE_MAX_BYTES: usize = 64 * 1024;

/// The bounded section for large reviews.
#[derive(Debug, Clone)]
pub struct Workers {
    permits: Arc<Semaphore>,
    size: usize,
    /// Large reviews running now, and the most ever at once (read by tests and the bench).
    busy: Arc<AtomicUsize>,
    peak: Arc<AtomicUsize>,
}

/// Why a review did not run to an answer.
#[derive(Debug, thiserror::Error)]
pub enum WorkerError {
    #[error("the review panicked or was cancelled: {0}")]
    Join(#[from] tokio::task::JoinError),
    #[error("the review pool is closed")]
    Closed,
}

impl Workers {
    /// A pool of `size` (at least 1).
    pub fn new(size: usize) -> Workers {
        let size = size.max(1);
        Workers {
            permits: Arc::new(Semaphore::new(size)),
            size,
            busy: Arc::new(AtomicUsize::new(0)),
            peak: Arc::new(AtomicUsize::new(0)),
        }
    }

    /// A pool as large as the cores this process may use.
    pub fn per_core() -> Workers {
        Workers::new(std::thread::available_parallelism().map_or(1, |n| n.get()))
    }

    pub fn size(&self) -> usize {
        self.size
    }

    /// The most large reviews that ever ran at once.
    pub fn peak(&self) -> usize {
        self.peak.load(Ordering::Relaxed)
    }

    /// Runs `review` of a body of `len` bytes: inline when small, else on the bounded pool.
    pub async fn run<T: Send + 'static>(
        &self,
        len: usize,
        review: impl FnOnce() -> T + Send + 'static,
    ) -> Result<T, WorkerError> {
        if len <= INLINE_MAX_BYTES {
            return Ok(review());
        }
        // The permit and the count go into the blocking task: a client that hangs up drops this
        // future, but not the review already running, which keeps its slot until it ends.
        let permit = self
            .permits
            .clone()
            .acquire_owned()
            .await
            .map_err(|_| WorkerError::Closed)?;
        let now = self.busy.fetch_add(1, Ordering::Relaxed) + 1;
        self.peak.fetch_max(now, Ordering::Relaxed);
        let slot = Slot {
            busy: self.busy.clone(),
            _permit: permit,
        };
        let result = tokio::task::spawn_blocking(move || {
            let _slot = slot;
            review()
        })
        .await;
        Ok(result?)
    }
}

/// A taken place in the pool, given back when the review ends (or panics).
struct Slot {
    busy: Arc<AtomicUsize>,
    _permit: OwnedSemaphorePermit,
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.busy.fetch_sub(1, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn large_reviews_never_exceed_the_pool() {
        let workers = Workers::new(2);
        let (tx, rx) = std::sync::mpsc::channel::<()>();
        let rx = Arc::new(std::sync::Mutex::new(rx));
        let started = Arc::new(AtomicUsize::new(0));
        let tasks: Vec<_> = (0..8)
            .map(|_| {
                let workers = workers.clone();
                let rx = rx.clone();
                let started = started.clone();
                tokio::spawn(async move {
                    workers
                        .run(INLINE_MAX_BYTES + 1, move || {
                            started.fetch_add(1, Ordering::SeqCst);
                            // Hold the slot until the test lets one review finish.
                            let _ = rx.lock().map(|rx| rx.recv());
                        })
                        .await
                })
            })
            .collect();
        // Wait until the pool is full, then release the reviews one by one.
        while started.load(Ordering::SeqCst) < 2 {
            tokio::task::yield_now().await;
        }
        for _ in 0..8 {
            tx.send(()).expect("a review waits");
        }
        for t in tasks {
            t.await.expect("task").expect("review");
        }
        assert_eq!(started.load(Ordering::SeqCst), 8);
        assert_eq!(workers.peak(), 2, "8 large reviews on a pool of 2");
    }

    #[tokio::test]
    async fn small_reviews_run_inline() {
        let workers = Workers::new(1);
        let here = std::thread::current().id();
        let ran_on = workers
            .run(100, move || std::thread::current().id())
            .await
            .expect("review");
        assert_eq!(ran_on, here);
        assert_eq!(workers.peak(), 0);
    }
}
