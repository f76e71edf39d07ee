//! How long a connection may stay open without working for it.
//!
//! Upstream's API server closes a connection whose request headers have not
//! all arrived within `ReadHeaderTimeout` (32 s), and a kept-alive connection
//! with no request for `IdleTimeout` (90 s); Go also bounds the TLS
//! handshake. Without them, clients that connect and send nothing, or one
//! header byte a second (slowloris), keep their connections (and file
//! descriptors) forever, and a thousand of them lock every other client out.
//!
//! hyper enforces the header timeout of HTTP/1 requests itself (its timer
//! also runs while a kept-alive connection waits for its next request).
//! What it does not cover (a connection that has not sent its first bytes,
//! when hyper-util has not even chosen HTTP/1 or HTTP/2 yet, and HTTP/2
//! connections with no stream open) is covered here: [`TimeoutAcceptor`]
//! counts each connection's requests in flight (a response counts until its
//! body has been sent, so a watch keeps its connection busy for as long as
//! it lasts), and the connection reads as closed once it has had none for
//! the header timeout (before its first request) or the idle timeout
//! (after one).

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::{Body, Bytes, HttpBody};
use axum::http::{Request, Response};
use axum_server::accept::Accept;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::{Instant, Sleep};

/// The connection timeouts (see the README's resource limits).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnectionTimeouts {
    /// From the end of the TLS handshake to the end of the first request's
    /// headers, and (HTTP/1) from a kept-alive connection's last response
    /// to the end of its next request's headers: upstream's
    /// `ReadHeaderTimeout`.
    pub header_read: Duration,
    /// A connection with no request in flight after its first one is closed
    /// after this: upstream's `IdleTimeout`.
    pub idle: Duration,
    /// The TLS handshake.
    pub tls_handshake: Duration,
}

impl Default for ConnectionTimeouts {
    fn default() -> Self {
        ConnectionTimeouts {
            header_read: Duration::from_secs(32),
            idle: Duration::from_secs(90),
            tls_handshake: Duration::from_secs(10),
        }
    }
}

/// What one connection is doing, shared by its stream and its service.
struct Activity {
    in_flight: AtomicUsize,
    /// Whether a request has ever started on it.
    served: AtomicBool,
    /// When the last request in flight ended (or the connection opened).
    idle_since: Mutex<Instant>,
}

impl Activity {
    fn new() -> Arc<Activity> {
        Arc::new(Activity {
            in_flight: AtomicUsize::new(0),
            served: AtomicBool::new(false),
            idle_since: Mutex::new(Instant::now()),
        })
    }

    /// When the connection is to be closed if nothing happens until then;
    /// `None` while a request is in flight.
    fn close_at(&self, timeouts: &ConnectionTimeouts) -> Option<Instant> {
        if self.in_flight.load(Ordering::Acquire) > 0 {
            return None;
        }
        let since = *self.idle_since.lock().unwrap_or_else(|e| e.into_inner());
        let allowed = if self.served.load(Ordering::Acquire) {
            timeouts.idle
        } else {
            timeouts.header_read
        };
        Some(since + allowed)
    }
}

/// One request in flight on its connection, until dropped.
struct InFlight(Arc<Activity>);

impl InFlight {
    fn enter(activity: &Arc<Activity>) -> InFlight {
        activity.served.store(true, Ordering::Release);
        activity.in_flight.fetch_add(1, Ordering::AcqRel);
        InFlight(activity.clone())
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        // The time first, so a reader that sees no request in flight sees
        // the idle period starting now.
        *self.0.idle_since.lock().unwrap_or_else(|e| e.into_inner()) = Instant::now();
        self.0.in_flight.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Wraps another acceptor (TLS): the connection's stream reads as closed
/// when it has been idle too long, and its service counts its requests.
#[derive(Clone)]
pub struct TimeoutAcceptor<A> {
    inner: A,
    timeouts: ConnectionTimeouts,
}

impl<A> TimeoutAcceptor<A> {
    pub fn new(inner: A, timeouts: ConnectionTimeouts) -> Self {
        TimeoutAcceptor { inner, timeouts }
    }
}

impl<A, I, S> Accept<I, S> for TimeoutAcceptor<A>
where
    A: Accept<I, S>,
    A::Future: Send + 'static,
{
    type Stream = IdleClosing<A::Stream>;
    type Service = CountRequests<A::Service>;
    type Future = Pin<Box<dyn Future<Output = io::Result<(Self::Stream, Self::Service)>> + Send>>;

    fn accept(&self, stream: I, service: S) -> Self::Future {
        let accepted = self.inner.accept(stream, service);
        let timeouts = self.timeouts;
        Box::pin(async move {
            let (stream, service) = accepted.await?;
            // The clock starts once the handshake is done (it has its own
            // timeout).
            let activity = Activity::new();
            Ok((
                IdleClosing {
                    inner: stream,
                    activity: activity.clone(),
                    timeouts,
                    timer: Box::pin(tokio::time::sleep(Duration::ZERO)),
                },
                CountRequests {
                    inner: service,
                    activity,
                },
            ))
        })
    }
}

/// A connection's stream that reads as closed (end of file) once the
/// connection has been idle too long; hyper then closes it.
pub struct IdleClosing<S> {
    inner: S,
    activity: Arc<Activity>,
    timeouts: ConnectionTimeouts,
    timer: Pin<Box<Sleep>>,
}

impl<S: AsyncRead + Unpin> AsyncRead for IdleClosing<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = &mut *self;
        if let Poll::Ready(read) = Pin::new(&mut this.inner).poll_read(cx, buf) {
            return Poll::Ready(read);
        }
        // Nothing to read: arm the timer for when the connection is due to
        // close (or, while busy, to look again an idle period from now).
        loop {
            let now = Instant::now();
            let wake_at = match this.activity.close_at(&this.timeouts) {
                Some(at) if at <= now => {
                    tracing::debug!("closing a connection idle past its timeout");
                    return Poll::Ready(Ok(()));
                }
                Some(at) => at,
                None if this.timer.deadline() > now => this.timer.deadline(),
                None => now + this.timeouts.idle,
            };
            if this.timer.deadline() != wake_at {
                this.timer.as_mut().reset(wake_at);
            }
            if this.timer.as_mut().poll(cx).is_pending() {
                return Poll::Pending;
            }
        }
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for IdleClosing<S> {
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

/// A connection's service that counts its requests in flight, each until
/// its response body has ended or been dropped.
#[derive(Clone)]
pub struct CountRequests<S> {
    inner: S,
    activity: Arc<Activity>,
}

impl<S, B> tower::Service<Request<B>> for CountRequests<S>
where
    S: tower::Service<Request<B>, Response = Response<Body>>,
    S::Future: Send + 'static,
{
    type Response = Response<Body>;
    type Error = S::Error;
    type Future = Pin<Box<dyn Future<Output = Result<Response<Body>, S::Error>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request<B>) -> Self::Future {
        let in_flight = InFlight::enter(&self.activity);
        let response = self.inner.call(request);
        Box::pin(async move {
            let response = response.await?;
            Ok(response.map(|body| {
                Body::new(CountedBody {
                    inner: body,
                    _in_flight: in_flight,
                })
            }))
        })
    }
}

/// A response body that keeps its request counted while it lives.
struct CountedBody {
    inner: Body,
    _in_flight: InFlight,
}

impl HttpBody for CountedBody {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Bytes>, axum::Error>>> {
        Pin::new(&mut self.inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}
