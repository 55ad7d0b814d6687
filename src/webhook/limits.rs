//! Connection limits of the webhook's listeners: how many connections at once, and how long a
//! connection may sit idle or take to send a request's headers.
//!
//! The API server calls the webhook with a timeout of at most 30 s over a few keep-alive
//! connections, so anything slower than that is not the API server: a client that trickles
//! headers (slowloris), never finishes a body or parks connections must not hold sockets and
//! tasks forever. hyper's own `header_read_timeout` also runs while a keep-alive connection is
//! idle (it restarts when hyper waits for the next request), so it cannot tell "idle between
//! requests" (fine for minutes: Go's clients keep idle connections 90 s) from "headers arriving
//! too slowly" (seconds). This module tracks that per connection instead:
//!
//! * [`GuardAcceptor`] takes a slot of the connection limit before the TLS handshake (a full
//!   server refuses by closing the socket at once, so the API server fails fast and retries
//!   another replica instead of queueing behind an attacker), and wraps the stream and the
//!   service of each accepted connection;
//! * [`GuardedStream`] fails a read that waits past the current deadline: `idle` after the last
//!   response (or, for HTTP/2, while no request is open), `header` from the first byte of an
//!   HTTP/1 request (and from the handshake for a connection's first request);
//! * [`GuardedService`] marks the connection busy while a request is handled (no read deadline
//!   then: the handler bounds the body read with `body_timeout` itself and answers 408).

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use axum_server::accept::Accept;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::time::{Instant, Sleep};
use tower_service::Service;

use super::metrics::Metrics;

/// The limits, from the `webhook` flags.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// From the first byte of a request (or the end of the handshake) to the end of its headers.
    pub header_timeout: Duration,
    /// To receive a request's body once its headers arrived.
    pub body_timeout: Duration,
    /// A keep-alive connection with no request in progress is closed after this.
    pub idle_timeout: Duration,
    /// To complete the TLS handshake.
    pub handshake_timeout: Duration,
    /// Connections open at once per listener (the handshake counts); more are closed at once.
    pub max_connections: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            header_timeout: Duration::from_secs(10),
            body_timeout: Duration::from_secs(15),
            // Longer than the 90 s Go's HTTP clients keep idle connections, so the API server
            // closes them first and never sends a request on a connection we are closing.
            idle_timeout: Duration::from_secs(120),
            handshake_timeout: Duration::from_secs(10),
            max_connections: 512,
        }
    }
}

/// Whether a stream speaks HTTP/2 (negotiated by ALPN): its idle connections carry PINGs and
/// SETTINGS, which must not count as the start of a request.
pub trait Negotiated {
    fn is_h2(&self) -> bool;
}

impl Negotiated for TcpStream {
    fn is_h2(&self) -> bool {
        false
    }
}

impl<S> Negotiated for tokio_rustls::server::TlsStream<S> {
    fn is_h2(&self) -> bool {
        self.get_ref().1.alpn_protocol() == Some(b"h2")
    }
}

/// Where a connection is between requests.
#[derive(Debug, Clone, Copy)]
enum Phase {
    /// No request in progress since this instant.
    Idle(Instant),
    /// An HTTP/1 request's first byte (or the handshake's end) came at this instant.
    Head(Instant),
    /// This many requests are being handled.
    Busy(usize),
}

#[derive(Debug)]
struct Conn {
    phase: Mutex<Phase>,
    h2: bool,
    header_timeout: Duration,
    idle_timeout: Duration,
}

impl Conn {
    fn lock(&self) -> std::sync::MutexGuard<'_, Phase> {
        self.phase.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Bytes arrived: on an idle HTTP/1 connection they start a request's headers.
    fn on_read(&self) {
        let mut p = self.lock();
        if let Phase::Idle(_) = *p
            && !self.h2
        {
            *p = Phase::Head(Instant::now());
        }
    }

    /// The deadline a pending read is held to, and which timeout it is.
    fn deadline(&self) -> Option<(Instant, &'static str)> {
        match *self.lock() {
            Phase::Idle(since) => Some((since + self.idle_timeout, "idle")),
            Phase::Head(since) => Some((since + self.header_timeout, "header")),
            Phase::Busy(_) => None,
        }
    }

    fn begin(&self) {
        let mut p = self.lock();
        *p = match *p {
            Phase::Busy(n) => Phase::Busy(n + 1),
            _ => Phase::Busy(1),
        };
    }

    fn end(&self) {
        let mut p = self.lock();
        *p = match *p {
            Phase::Busy(n) if n > 1 => Phase::Busy(n - 1),
            _ => Phase::Idle(Instant::now()),
        };
    }
}

/// Wraps a listener's acceptor (TLS or plain) with the connection limit and the deadlines.
#[derive(Clone)]
pub struct GuardAcceptor<A> {
    inner: A,
    slots: Arc<Semaphore>,
    limits: Limits,
    metrics: Metrics,
}

impl<A> GuardAcceptor<A> {
    pub fn new(inner: A, limits: Limits, metrics: Metrics) -> Self {
        GuardAcceptor {
            inner,
            slots: Arc::new(Semaphore::new(limits.max_connections.max(1))),
            limits,
            metrics,
        }
    }
}

impl<A, S> Accept<TcpStream, S> for GuardAcceptor<A>
where
    A: Accept<TcpStream, S>,
    A::Future: Send + 'static,
    A::Stream: Negotiated + Send + 'static,
    A::Service: Send + 'static,
{
    type Stream = GuardedStream<A::Stream>;
    type Service = GuardedService<A::Service>;
    type Future = Pin<Box<dyn Future<Output = io::Result<(Self::Stream, Self::Service)>> + Send>>;

    fn accept(&self, stream: TcpStream, service: S) -> Self::Future {
        let Ok(permit) = self.slots.clone().try_acquire_owned() else {
            self.metrics.connection_closed("limit");
            drop(stream);
            return Box::pin(std::future::ready(Err(io::Error::other(format!(
                "connection refused: {} connections open, the --max-connections limit",
                self.limits.max_connections
            )))));
        };
        // As Go's servers and clients do: a response goes out when written, not after the
        // peer's delayed ACK of the previous one (Nagle's algorithm held replies up to 40 ms).
        if let Err(e) = stream.set_nodelay(true) {
            tracing::debug!(error = %e, "TCP_NODELAY not set");
        }
        let accepted = self.inner.accept(stream, service);
        let limits = self.limits;
        let metrics = self.metrics.clone();
        Box::pin(async move {
            let (stream, service) = accepted.await?;
            let h2 = stream.is_h2();
            let now = Instant::now();
            let conn = Arc::new(Conn {
                // HTTP/1: the first request must start at once (the client connected to send
                // it); HTTP/2: PINGs and SETTINGS come first, so only the idle deadline applies.
                phase: Mutex::new(if h2 {
                    Phase::Idle(now)
                } else {
                    Phase::Head(now)
                }),
                h2,
                header_timeout: limits.header_timeout,
                idle_timeout: limits.idle_timeout,
            });
            Ok((
                GuardedStream {
                    inner: stream,
                    conn: conn.clone(),
                    timer: Box::pin(tokio::time::sleep_until(now)),
                    metrics,
                    _slot: permit,
                },
                GuardedService {
                    inner: service,
                    conn,
                },
            ))
        })
    }
}

/// A connection's stream: holds its slot of the limit and fails reads past the deadline.
pub struct GuardedStream<T> {
    inner: T,
    conn: Arc<Conn>,
    timer: Pin<Box<Sleep>>,
    metrics: Metrics,
    _slot: OwnedSemaphorePermit,
}

impl<T: AsyncRead + Unpin> AsyncRead for GuardedStream<T> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        match Pin::new(&mut self.inner).poll_read(cx, buf) {
            Poll::Ready(Ok(())) => {
                if buf.filled().len() > before {
                    self.conn.on_read();
                }
                Poll::Ready(Ok(()))
            }
            Poll::Ready(Err(e)) => Poll::Ready(Err(e)),
            Poll::Pending => {
                let Some((deadline, which)) = self.conn.deadline() else {
                    return Poll::Pending;
                };
                if self.timer.deadline() != deadline {
                    self.timer.as_mut().reset(deadline);
                }
                match self.timer.as_mut().poll(cx) {
                    Poll::Ready(()) => {
                        self.metrics.connection_closed(which);
                        Poll::Ready(Err(io::Error::new(
                            io::ErrorKind::TimedOut,
                            format!("connection closed: {which} timeout"),
                        )))
                    }
                    Poll::Pending => Poll::Pending,
                }
            }
        }
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for GuardedStream<T> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

/// A connection's service: marks the connection busy while a request is handled.
#[derive(Clone)]
pub struct GuardedService<S> {
    inner: S,
    conn: Arc<Conn>,
}

/// Ends the busy mark when the response is ready or the request is dropped.
struct BusyGuard(Arc<Conn>);

impl Drop for BusyGuard {
    fn drop(&mut self) {
        self.0.end();
    }
}

impl<S, R> Service<R> for GuardedService<S>
where
    S: Service<R>,
    S::Future: Send + 'static,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = Pin<Box<dyn Future<Output = Result<S::Response, S::Error>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: R) -> Self::Future {
        self.conn.begin();
        let busy = BusyGuard(self.conn.clone());
        let fut = self.inner.call(req);
        Box::pin(async move {
            let out = fut.await;
            drop(busy);
            out
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn conn(h2: bool, phase: Phase) -> Conn {
        Conn {
            phase: Mutex::new(phase),
            h2,
            header_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(120),
        }
    }

    #[tokio::test]
    async fn accepted_connections_send_without_nagle_delay() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let _client = TcpStream::connect(addr).await.unwrap();
        let (stream, _) = listener.accept().await.unwrap();
        assert!(!stream.nodelay().unwrap(), "a fresh socket has Nagle on");
        let mut registry = prometheus_client::registry::Registry::default();
        let acceptor = GuardAcceptor::new(
            axum_server::accept::DefaultAcceptor::new(),
            Limits::default(),
            Metrics::new(&mut registry, &[]),
        );
        let (guarded, _service) = acceptor.accept(stream, ()).await.unwrap();
        assert!(guarded.inner.nodelay().unwrap());
    }

    #[tokio::test]
    async fn http1_bytes_after_idle_start_the_header_deadline() {
        let c = conn(false, Phase::Idle(Instant::now()));
        assert_eq!(c.deadline().unwrap().1, "idle");
        c.on_read();
        let (at, which) = c.deadline().unwrap();
        assert_eq!(which, "header");
        assert!(at <= Instant::now() + Duration::from_secs(10));
        c.begin();
        assert!(c.deadline().is_none(), "no read deadline while busy");
        c.end();
        assert_eq!(c.deadline().unwrap().1, "idle");
    }

    #[tokio::test]
    async fn http2_frames_while_idle_keep_the_idle_deadline() {
        let c = conn(true, Phase::Idle(Instant::now()));
        c.on_read();
        assert_eq!(c.deadline().unwrap().1, "idle");
        c.begin();
        c.begin();
        c.end();
        assert!(c.deadline().is_none(), "one stream still open");
        c.end();
        assert_eq!(c.deadline().unwrap().1, "idle");
    }
}
