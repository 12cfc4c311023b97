//! The listeners' accept loop. `axum::serve` has no connection limit and
//! no timeouts, and sleeps a second after a failed accept: 1,100 idle
//! connections under a 1,024 file descriptor limit stopped all three
//! listeners. Here each listener admits at most `max` connections, and at
//! most `per_address_max` from one caller address (a trusted proxy
//! excepted); one over either is accepted and closed at once, so the
//! backlog keeps moving and everyone else is still answered. Each
//! connection is closed when its request head takes longer than
//! `header_timeout` from its first byte, or when it has no request in
//! progress and nothing moves either way for `idle_timeout`; a body's own
//! timeout is the envelope's (`http::envelope`).

use std::collections::HashMap;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, ready};
use std::time::Duration;

use axum::Router;
use axum::extract::ConnectInfo;
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::time::{Instant, Sleep};
use tower_service::Service;

/// What the accept loop enforces, resolved from `config::ConnectionSettings`.
#[derive(Debug, Clone)]
pub(crate) struct Limits {
    pub max: usize,
    pub per_address_max: usize,
    pub header_timeout: Duration,
    pub idle_timeout: Duration,
    /// Addresses the per-address share does not apply to.
    pub exempt: Vec<IpAddr>,
}

/// File descriptors kept back from the listeners' share for the databases,
/// logs, webhook deliveries and the rate feed.
const DESCRIPTORS_RESERVED: u64 = 512;
/// The default connection limit of one listener, however high the file
/// descriptor limit.
const CONNECTIONS_DEFAULT_MAX: usize = 4096;

/// Raises the soft limit on open files to the hard limit, returning the
/// soft limit in force afterwards.
pub(crate) fn raise_descriptor_limit() -> u64 {
    let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit and setrlimit only read and write the struct given.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) != 0 {
            return 1024;
        }
        if limit.rlim_cur < limit.rlim_max {
            let raised = libc::rlimit { rlim_cur: limit.rlim_max, rlim_max: limit.rlim_max };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &raised) == 0 {
                limit.rlim_cur = limit.rlim_max;
            }
        }
    }
    limit.rlim_cur
}

impl Limits {
    /// The limits for a process that may open `descriptors` files: three
    /// listeners' connections stay well under it, whatever was configured.
    pub(crate) fn resolve(
        settings: &crate::config::ConnectionSettings,
        descriptors: u64,
        exempt: Vec<IpAddr>,
    ) -> Limits {
        let ceiling = usize::try_from(descriptors.saturating_sub(DESCRIPTORS_RESERVED) / 4)
            .unwrap_or(usize::MAX)
            .max(16);
        let wanted = settings.max.unwrap_or(CONNECTIONS_DEFAULT_MAX);
        if wanted > ceiling {
            tracing::warn!(
                wanted,
                ceiling,
                descriptors,
                "the connection limit is lowered to stay within the open file limit"
            );
        }
        let max = wanted.min(ceiling);
        let per_address_max = settings.per_address_max.unwrap_or((max / 8).max(1)).min(max);
        Limits {
            max,
            per_address_max,
            header_timeout: settings.header_timeout,
            idle_timeout: settings.idle_timeout,
            exempt,
        }
    }
}

/// Counts a listener's open connections, in all and per address.
struct Gate {
    limits: Limits,
    open: Mutex<Open>,
}

#[derive(Default)]
struct Open {
    total: usize,
    by_address: HashMap<IpAddr, usize>,
}

/// One admitted connection; dropping it gives its place back.
struct Admitted {
    gate: Arc<Gate>,
    address: IpAddr,
}

impl Gate {
    fn admit(self: &Arc<Self>, address: IpAddr) -> Option<Admitted> {
        let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        if open.total >= self.limits.max {
            return None;
        }
        let exempt = self.limits.exempt.contains(&address);
        let from_address = open.by_address.entry(address).or_insert(0);
        if !exempt && *from_address >= self.limits.per_address_max {
            return None;
        }
        *from_address += 1;
        open.total += 1;
        Some(Admitted { gate: self.clone(), address })
    }
}

impl Drop for Admitted {
    fn drop(&mut self) {
        let mut open = self.gate.open.lock().unwrap_or_else(|e| e.into_inner());
        open.total = open.total.saturating_sub(1);
        if let Some(count) = open.by_address.get_mut(&self.address) {
            *count = count.saturating_sub(1);
            if *count == 0 {
                open.by_address.remove(&self.address);
            }
        }
    }
}

/// Serves `app` on `listener` until `stop` turns true, then lets the open
/// connections finish their requests.
pub(crate) async fn serve(
    listener: TcpListener,
    app: Router,
    limits: Limits,
    mut stop: tokio::sync::watch::Receiver<bool>,
) -> io::Result<()> {
    let gate = Arc::new(Gate { limits, open: Mutex::new(Open::default()) });
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    let mut refused: u64 = 0;
    loop {
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(e) => {
                    // Out of descriptors (or a connection reset before it
                    // was accepted): try again shortly rather than spin.
                    tracing::debug!(error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(5)).await;
                    continue;
                }
            },
            () = stopping(&mut stop) => break,
        };
        let Some(admitted) = gate.admit(peer.ip()) else {
            refused = refused.wrapping_add(1);
            if refused.is_power_of_two() {
                tracing::warn!(peer = %peer.ip(), refused, "connection refused: over the listener's limits");
            }
            drop(stream);
            continue;
        };
        let _ = stream.set_nodelay(true);
        let timeouts = Timeouts { header: gate.limits.header_timeout, idle: gate.limits.idle_timeout };
        let connection = connection(stream, peer, app.clone(), timeouts);
        let connection = graceful.watch(connection);
        tokio::spawn(async move {
            let _ = connection.await;
            drop(admitted);
        });
    }
    drop(listener);
    graceful.shutdown().await;
    Ok(())
}

async fn stopping(stop: &mut tokio::sync::watch::Receiver<bool>) {
    let _ = stop.wait_for(|stopping| *stopping).await;
}

fn connection(
    stream: TcpStream,
    peer: SocketAddr,
    app: Router,
    timeouts: Timeouts,
) -> hyper::server::conn::http1::Connection<
    TokioIo<Watched>,
    impl hyper::service::Service<
        hyper::Request<Incoming>,
        Response = axum::response::Response,
        Error = std::convert::Infallible,
        Future = impl Future<Output = Result<axum::response::Response, std::convert::Infallible>> + Send,
    > + Send,
> {
    let requests = Arc::new(Requests::default());
    let io = Watched::new(stream, requests.clone(), timeouts);
    let service = hyper::service::service_fn(move |mut request: hyper::Request<Incoming>| {
        request.extensions_mut().insert(ConnectInfo(peer));
        requests.started.fetch_add(1, Ordering::AcqRel);
        requests.in_progress.store(true, Ordering::Release);
        let requests = requests.clone();
        let response = app.clone().call(request.map(axum::body::Body::new));
        async move {
            let response = response.await;
            requests.in_progress.store(false, Ordering::Release);
            response
        }
    });
    hyper::server::conn::http1::Builder::new().serve_connection(TokioIo::new(io), service)
}

#[derive(Clone, Copy)]
struct Timeouts {
    header: Duration,
    idle: Duration,
}

/// What the connection's service tells its socket: whether a request is
/// being handled, and how many have started (a head that was being read
/// is complete once the count moves).
#[derive(Default)]
pub(crate) struct Requests {
    in_progress: AtomicBool,
    started: AtomicU64,
}

/// A connection's socket, closed (reads and writes fail with `TimedOut`)
/// when its request head runs past the header timeout or it sits idle past
/// the idle timeout. While a request is being handled neither applies: the
/// body has its own timeout and a handler its own work.
pub(crate) struct Watched {
    inner: TcpStream,
    requests: Arc<Requests>,
    header_timeout: Duration,
    idle_timeout: Duration,
    /// When the next request's head began to arrive, and how many requests
    /// had started then.
    head_started: Option<(Instant, u64)>,
    last_activity: Instant,
    /// Armed at or before the deadline; on firing, the real deadline is
    /// checked again (activity only moves it later).
    timer: Pin<Box<Sleep>>,
    /// The task that last found nothing to read while a request was in
    /// progress, when no timer could be armed: woken once the response is
    /// written, so it arms the idle timer then (otherwise an idle
    /// kept-alive connection would wait for a byte that never comes).
    unarmed: Option<std::task::Waker>,
}

impl Watched {
    fn new(inner: TcpStream, requests: Arc<Requests>, timeouts: Timeouts) -> Watched {
        let now = Instant::now();
        Watched {
            inner,
            requests,
            header_timeout: timeouts.header,
            idle_timeout: timeouts.idle,
            head_started: None,
            last_activity: now,
            timer: Box::pin(tokio::time::sleep_until(now + timeouts.idle)),
            unarmed: None,
        }
    }

    /// Forgets a head whose request has since started.
    fn settle(&mut self) -> bool {
        let started = self.requests.started.load(Ordering::Acquire);
        if self.head_started.is_some_and(|(_, count)| count != started) {
            self.head_started = None;
        }
        self.requests.in_progress.load(Ordering::Acquire)
    }

    fn moved(&mut self, read: bool) {
        let now = Instant::now();
        self.last_activity = now;
        if read && !self.settle() && self.head_started.is_none() {
            self.head_started = Some((now, self.requests.started.load(Ordering::Acquire)));
        }
        if !read
            && self.unarmed.is_some()
            && !self.requests.in_progress.load(Ordering::Acquire)
            && let Some(waker) = self.unarmed.take()
        {
            waker.wake();
        }
    }

    fn deadline(&mut self) -> Option<Instant> {
        if self.settle() {
            return None;
        }
        Some(match self.head_started {
            Some((started, _)) => started + self.header_timeout,
            None => self.last_activity + self.idle_timeout,
        })
    }

    /// `Ready(Err)` once the deadline has passed; otherwise the timer is
    /// armed to wake this task by then.
    /// A write's result: bytes written count as activity; a write that
    /// waits is still subject to the deadline.
    fn after_write(
        &mut self,
        cx: &mut Context<'_>,
        written: Poll<io::Result<usize>>,
    ) -> Poll<io::Result<usize>> {
        match written {
            Poll::Ready(Ok(written)) => {
                if written > 0 {
                    self.moved(false);
                }
                Poll::Ready(Ok(written))
            }
            Poll::Ready(Err(e)) => Poll::Ready(Err(e)),
            Poll::Pending => self.poll_deadline(cx).map(Err),
        }
    }

    fn poll_deadline(&mut self, cx: &mut Context<'_>) -> Poll<io::Error> {
        loop {
            let Some(deadline) = self.deadline() else {
                self.unarmed = Some(cx.waker().clone());
                return Poll::Pending;
            };
            if deadline < self.timer.deadline() {
                self.timer.as_mut().reset(deadline);
            }
            ready!(self.timer.as_mut().poll(cx));
            if Instant::now() >= deadline {
                let what = if self.head_started.is_some() { "request head" } else { "idle connection" };
                return Poll::Ready(io::Error::new(io::ErrorKind::TimedOut, format!("{what} timed out")));
            }
            self.timer.as_mut().reset(deadline);
        }
    }
}

impl AsyncRead for Watched {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        match Pin::new(&mut this.inner).poll_read(cx, buf) {
            Poll::Ready(Ok(())) => {
                if buf.filled().len() > before {
                    this.moved(true);
                }
                Poll::Ready(Ok(()))
            }
            Poll::Ready(Err(e)) => Poll::Ready(Err(e)),
            Poll::Pending => this.poll_deadline(cx).map(Err),
        }
    }
}

impl AsyncWrite for Watched {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let written = Pin::new(&mut this.inner).poll_write(cx, buf);
        this.after_write(cx, written)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let written = Pin::new(&mut this.inner).poll_write_vectored(cx, bufs);
        this.after_write(cx, written)
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
