//! The scheduler's requests to the API server, bounded and ordered across all
//! reconciles: at most `bound` in flight together, ActionSet creates before
//! everything else (status writes, Events, reads), and one back-off for all of
//! them when the API server says it is overloaded.
//!
//! Why: at a tick thousands of schedules are due at once. Without a bound they
//! would storm the API server; without the order each run's Event and status
//! patch would take API server time before the next schedule's create, so
//! runs would come at a third of the rate the API server accepts creates.
//!
//! A throttled request (HTTP 429, or a 5xx that says the server is busy) pauses
//! every request of the gate for a growing time (the server's Retry-After when
//! it gives one), then is sent again unchanged. For a create that is safe: a
//! run's name is derived from its schedule and tick (see
//! [`plan::run_name`](super::plan::run_name)), so a retried create whose first
//! attempt did reach the server is `AlreadyExists` (see
//! [`apply::create_runs`](super::apply)).

use std::collections::VecDeque;
use std::future::Future;
use std::sync::Mutex;
use std::time::Duration;

use tokio::sync::oneshot;
use tokio::time::Instant;

/// Which requests go first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Priority {
    /// ActionSet creates: the lag of a tick.
    Create,
    /// Everything else: status writes, Events, reads.
    Other,
}

/// First pause after a throttled request; doubled for each further attempt.
const FIRST_PAUSE: Duration = Duration::from_millis(200);
/// Longest pause (a longer Retry-After is honoured).
const MAX_PAUSE: Duration = Duration::from_secs(8);
/// A request is given up (its error returned) once throttled for this long;
/// the reconcile is then retried and plans the same tick again.
const GIVE_UP: Duration = Duration::from_secs(180);

pub struct Gate {
    state: Mutex<State>,
    /// No request is sent before this instant (a throttled one set it).
    paused_until: Mutex<Option<Instant>>,
    bound: usize,
}

struct State {
    free: usize,
    creates: VecDeque<oneshot::Sender<()>>,
    others: VecDeque<oneshot::Sender<()>>,
}

/// One request's place in flight; handed on (creates first) when dropped.
pub struct Permit<'a> {
    gate: &'a Gate,
}

impl Drop for Permit<'_> {
    fn drop(&mut self) {
        self.gate.release();
    }
}

/// What a [`Gate::send`] did: its result and whether it was sent more than once.
pub struct Sent<T> {
    pub result: Result<T, kube::Error>,
    /// Throttled at least once and sent again.
    pub retried: bool,
    /// An earlier attempt may have been carried out although refused: it was
    /// answered with a 5xx (a timeout may come after the write), not a 429 (the
    /// API server refuses those before doing anything).
    pub maybe_applied: bool,
}

impl Gate {
    /// At most `bound` requests in flight (0 is taken as 1).
    pub fn new(bound: usize) -> Self {
        let bound = bound.max(1);
        Gate {
            state: Mutex::new(State {
                free: bound,
                creates: VecDeque::new(),
                others: VecDeque::new(),
            }),
            paused_until: Mutex::new(None),
            bound,
        }
    }

    pub fn bound(&self) -> usize {
        self.bound
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        // Poisoning only means a panic elsewhere; the counts are still consistent.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn release(&self) {
        let mut s = self.lock();
        // A waiter that gave up (its receiver dropped) is skipped.
        while let Some(tx) = s.creates.pop_front() {
            if tx.send(()).is_ok() {
                return;
            }
        }
        while let Some(tx) = s.others.pop_front() {
            if tx.send(()).is_ok() {
                return;
            }
        }
        s.free += 1;
    }

    /// A place in flight; creates waiting are served before any other request.
    pub async fn acquire(&self, priority: Priority) -> Permit<'_> {
        let rx = {
            let mut s = self.lock();
            if s.free > 0 {
                // Free places exist only while nobody waits (release hands them on).
                s.free -= 1;
                return Permit { gate: self };
            }
            let (tx, rx) = oneshot::channel();
            match priority {
                Priority::Create => s.creates.push_back(tx),
                Priority::Other => s.others.push_back(tx),
            }
            rx
        };
        let mut waiting = Waiting {
            gate: self,
            rx: Some(rx),
        };
        if let Some(rx) = waiting.rx.as_mut() {
            // The sender lives in the queue until it is used; an error cannot happen while
            // the gate exists, and would only mean a place was not handed to us.
            let _ = rx.await;
        }
        waiting.rx = None;
        Permit { gate: self }
    }

    /// Wait out a pause set by a throttled request.
    async fn paused(&self) {
        loop {
            let until = *self.paused_until.lock().unwrap_or_else(|p| p.into_inner());
            match until {
                Some(t) if t > Instant::now() => tokio::time::sleep_until(t).await,
                _ => return,
            }
        }
    }

    fn pause(&self, d: Duration) {
        let mut p = self.paused_until.lock().unwrap_or_else(|p| p.into_inner());
        let until = Instant::now() + d;
        if p.is_none_or(|t| t < until) {
            *p = Some(until);
        }
    }

    /// Send the request `call` makes with a place in flight, again after a
    /// pause for as long as the API server throttles it (up to [`GIVE_UP`]).
    /// `throttled` is called for each throttled attempt.
    pub async fn send<T, F, Fut>(
        &self,
        priority: Priority,
        mut call: F,
        mut throttled: impl FnMut(),
    ) -> Sent<T>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, kube::Error>>,
    {
        let _permit = self.acquire(priority).await;
        let start = Instant::now();
        let mut attempt = 0u32;
        let mut spread = Duration::ZERO;
        let mut maybe_applied = false;
        loop {
            self.paused().await;
            // Requests throttled together come back spread over their own pause, not all at
            // the end of the shared one (where most would be refused again).
            tokio::time::sleep(spread).await;
            let result = call().await;
            match result.as_ref().err().and_then(retry_after) {
                Some(server) if start.elapsed() < GIVE_UP => {
                    throttled();
                    maybe_applied |= matches!(&result, Err(kube::Error::Api(st)) if st.code != 429);
                    let ours = FIRST_PAUSE
                        .saturating_mul(1 << attempt.min(6))
                        .min(MAX_PAUSE);
                    self.pause(server.unwrap_or_default().max(jitter(ours)));
                    spread = ours.mul_f64(random_fraction());
                    attempt += 1;
                }
                _ => {
                    return Sent {
                        result,
                        retried: attempt > 0,
                        maybe_applied,
                    };
                }
            }
        }
    }
}

/// Removes a waiter that gave up from the queue's count: a place handed to it
/// after all is handed on.
struct Waiting<'a> {
    gate: &'a Gate,
    rx: Option<oneshot::Receiver<()>>,
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        if let Some(mut rx) = self.rx.take() {
            rx.close();
            if rx.try_recv().is_ok() {
                self.gate.release();
            }
        }
    }
}

/// In [0, 1): good enough to spread retries (no cryptographic use).
fn random_fraction() -> f64 {
    use std::hash::{BuildHasher, RandomState};
    (RandomState::new().hash_one(std::time::Instant::now()) % 1024) as f64 / 1024.0
}

/// `d` to `1.25 d`, so that pauses set together do not end together.
fn jitter(d: Duration) -> Duration {
    d + d.mul_f64(random_fraction() / 4.0)
}

/// `Some` when the API server refused the request as overloaded (429, or 503 /
/// 504 / a 5xx whose reason says so): with the delay it asked for, if any.
pub fn retry_after(e: &kube::Error) -> Option<Option<Duration>> {
    let kube::Error::Api(s) = e else {
        return None;
    };
    let busy_reason = matches!(
        s.reason.as_str(),
        "TooManyRequests" | "ServerTimeout" | "Timeout"
    ) || s.message.to_ascii_lowercase().contains("too many requests");
    let asked = s
        .details
        .as_ref()
        .map(|d| d.retry_after_seconds)
        .filter(|&secs| secs > 0)
        .map(|secs| Duration::from_secs(u64::from(secs)));
    let busy = s.code == 429
        || s.code == 503
        || s.code == 504
        || (s.code >= 500 && (busy_reason || asked.is_some()));
    busy.then_some(asked)
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube::core::{Status, response::StatusDetails};
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    fn api_error(code: u16, reason: &str, retry: u32) -> kube::Error {
        let mut s = Status::failure("x", reason).with_code(code);
        if retry > 0 {
            s = s.with_details(StatusDetails {
                name: String::new(),
                group: String::new(),
                kind: String::new(),
                uid: String::new(),
                causes: Vec::new(),
                retry_after_seconds: retry,
            });
        }
        kube::Error::Api(s.boxed())
    }

    #[test]
    fn throttling_is_recognized() {
        assert_eq!(retry_after(&api_error(429, "", 0)), Some(None));
        assert_eq!(
            retry_after(&api_error(429, "TooManyRequests", 3)),
            Some(Some(Duration::from_secs(3)))
        );
        assert_eq!(retry_after(&api_error(500, "ServerTimeout", 0)), Some(None));
        assert_eq!(retry_after(&api_error(503, "", 0)), Some(None));
        assert_eq!(retry_after(&api_error(500, "InternalError", 0)), None);
        assert_eq!(retry_after(&api_error(409, "AlreadyExists", 0)), None);
        assert_eq!(retry_after(&api_error(403, "Forbidden", 0)), None);
    }

    #[tokio::test]
    async fn never_more_in_flight_than_the_bound_and_creates_go_first() {
        let gate = Arc::new(Gate::new(2));
        let a = gate.acquire(Priority::Other).await;
        let b = gate.acquire(Priority::Other).await;
        let order = Arc::new(Mutex::new(Vec::new()));
        let mut tasks = Vec::new();
        // Queued in this order: others first, then creates.
        for (i, p) in [
            (0, Priority::Other),
            (1, Priority::Other),
            (2, Priority::Create),
            (3, Priority::Create),
        ] {
            let (gate2, order) = (gate.clone(), order.clone());
            tasks.push(tokio::spawn(async move {
                let permit = gate2.acquire(p).await;
                order.lock().unwrap().push(i);
                drop(permit);
            }));
            // The task queues itself on its first poll; wait until it has.
            while {
                let s = gate.lock();
                s.creates.len() + s.others.len() <= i
            } {
                tokio::task::yield_now().await;
            }
        }
        assert_eq!(gate.lock().free, 0);
        drop(a);
        drop(b);
        for t in tasks {
            t.await.unwrap();
        }
        assert_eq!(*order.lock().unwrap(), vec![2, 3, 0, 1]);
        assert_eq!(gate.lock().free, 2, "every place returned");
    }

    #[tokio::test]
    async fn a_waiter_that_gives_up_loses_no_place() {
        let gate = Gate::new(1);
        let p = gate.acquire(Priority::Create).await;
        {
            let waiting = gate.acquire(Priority::Create);
            // Polled once (queued), then dropped.
            let _ = tokio::time::timeout(Duration::ZERO, waiting).await;
        }
        drop(p);
        assert_eq!(gate.lock().free, 1);
        let _again = gate.acquire(Priority::Other).await;
        assert_eq!(gate.lock().free, 0);
    }

    #[tokio::test]
    async fn a_throttled_request_is_sent_again_after_a_pause() {
        let gate = Gate::new(4);
        let calls = AtomicUsize::new(0);
        let mut throttled = 0;
        let t0 = Instant::now();
        let sent = gate
            .send(
                Priority::Create,
                || {
                    let n = calls.fetch_add(1, Ordering::SeqCst);
                    async move {
                        if n < 2 {
                            Err(api_error(429, "TooManyRequests", 0))
                        } else {
                            Ok(n)
                        }
                    }
                },
                || throttled += 1,
            )
            .await;
        assert_eq!(sent.result.unwrap(), 2);
        assert!(sent.retried);
        assert!(
            !sent.maybe_applied,
            "429s are refused before anything is done"
        );
        assert_eq!(throttled, 2);
        // Paused 200 ms, then 400 ms (at least).
        assert!(t0.elapsed() >= FIRST_PAUSE * 3);
        // Other errors are returned at once.
        let sent = gate
            .send(
                Priority::Other,
                || async { Err::<(), _>(api_error(409, "AlreadyExists", 0)) },
                || {},
            )
            .await;
        assert!(sent.result.is_err());
        assert!(!sent.retried);
    }
}
