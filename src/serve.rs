//! Serving connections, with limits that keep slow or idle clients from holding them:
//!
//! - **header-read timeout** (hyper's own): a request's line and headers must arrive within
//!   [`ConnectionLimits::header_timeout`]. Hyper starts that clock whenever it waits for a
//!   request, so it is also how long a kept-alive connection may sit idle;
//! - **body timeout**: the whole body must arrive within
//!   [`ConnectionLimits::body_timeout`] of the headers ([`DeadlineBody`]);
//! - **write timeout**: a client that reads nothing of its answer for
//!   [`ConnectionLimits::write_timeout`] is cut off ([`StallGuard`]);
//! - **connection cap**: at most [`ConnectionLimits::max_connections`] at once; more wait in
//!   the listen backlog until one ends.
//!
//! Each request carries the peer's address as axum's [`ConnectInfo`]. On shutdown the
//! listener closes, idle connections close, and requests in flight are answered first, for at
//! most [`ConnectionLimits::drain_limit`].

use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::{ConnectInfo, Request};
use axum::{BoxError, Router};
use http_body::{Frame, SizeHint};
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::time::{Instant, Sleep};
use tower::ServiceExt;

use crate::config::ConnectionLimits;

/// How long the accept loop pauses after a failed accept (out of file descriptors, say).
const ACCEPT_BACKOFF: Duration = Duration::from_millis(100);

/// Serves `router` on `listener` under `limits` until `shutdown` completes, then stops
/// accepting and waits for the connections in flight to finish their requests, at most
/// [`ConnectionLimits::drain_limit`].
pub async fn serve(
    listener: TcpListener,
    router: Router,
    limits: ConnectionLimits,
    shutdown: impl Future<Output = ()>,
) -> io::Result<()> {
    let permits = Arc::new(Semaphore::new(limits.max_connections.max(1)));
    let graceful = GracefulShutdown::new();
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(limits.header_timeout);
    tokio::pin!(shutdown);
    loop {
        let accepted = tokio::select! {
            biased;
            () = &mut shutdown => break,
            accepted = accept(&listener, &permits) => accepted,
        };
        let Some((stream, peer, permit)) = accepted else {
            continue;
        };
        let service =
            TowerToHyperService::new(per_connection(router.clone(), peer, limits.body_timeout));
        let io = TokioIo::new(StallGuard::new(stream, limits.write_timeout));
        let connection = graceful.watch(http.serve_connection(io, service));
        tokio::spawn(async move {
            if let Err(e) = connection.await {
                tracing::debug!(error = %e, %peer, "connection closed with an error");
            }
            drop(permit);
        });
    }
    drop(listener);
    if tokio::time::timeout(limits.drain_limit, graceful.shutdown())
        .await
        .is_err()
    {
        tracing::info!(
            limit_secs = limits.drain_limit.as_secs(),
            "requests still open at the drain limit (event streams) are cut"
        );
    }
    Ok(())
}

/// The next connection, once there is room for it.
async fn accept(
    listener: &TcpListener,
    permits: &Arc<Semaphore>,
) -> Option<(TcpStream, SocketAddr, OwnedSemaphorePermit)> {
    // The semaphore is never closed, so this waits for room and never fails.
    let permit = permits.clone().acquire_owned().await.ok()?;
    match listener.accept().await {
        Ok((stream, peer)) => {
            if let Err(e) = stream.set_nodelay(true) {
                tracing::debug!(error = %e, "cannot set TCP_NODELAY");
            }
            Some((stream, peer, permit))
        }
        Err(e) => {
            tracing::warn!(error = %e, "accepting a connection failed");
            tokio::time::sleep(ACCEPT_BACKOFF).await;
            None
        }
    }
}

/// The router as one connection sees it: its requests carry the peer's address and a body
/// with a deadline.
fn per_connection(
    router: Router,
    peer: SocketAddr,
    body_timeout: Duration,
) -> impl tower::Service<
    Request<Incoming>,
    Response = axum::response::Response,
    Error = std::convert::Infallible,
    Future: Send,
> + Clone
+ Send
+ 'static {
    router.map_request(move |req: Request<Incoming>| {
        let deadline = Instant::now() + body_timeout;
        let mut req = req.map(|body| Body::new(DeadlineBody::new(body, deadline)));
        req.extensions_mut().insert(ConnectInfo(peer));
        req
    })
}

/// A request body that fails once its deadline passes with data still missing. Data that has
/// arrived is always handed over, however late the handler reads it.
pub struct DeadlineBody {
    inner: Incoming,
    deadline: Instant,
    timer: Option<Pin<Box<Sleep>>>,
}

impl DeadlineBody {
    fn new(inner: Incoming, deadline: Instant) -> Self {
        Self {
            inner,
            deadline,
            timer: None,
        }
    }
}

/// The body did not arrive in time.
#[derive(Debug, thiserror::Error)]
#[error("the request body did not arrive in time")]
pub struct BodyTimedOut;

impl http_body::Body for DeadlineBody {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        let this = self.get_mut();
        match Pin::new(&mut this.inner).poll_frame(cx) {
            Poll::Ready(frame) => Poll::Ready(frame.map(|f| f.map_err(BoxError::from))),
            Poll::Pending => {
                let deadline = this.deadline;
                let timer = this
                    .timer
                    .get_or_insert_with(|| Box::pin(tokio::time::sleep_until(deadline)));
                match timer.as_mut().poll(cx) {
                    Poll::Ready(()) => Poll::Ready(Some(Err(BodyTimedOut.into()))),
                    Poll::Pending => Poll::Pending,
                }
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

/// A stream whose writes fail once they have made no progress for `limit`: the client stopped
/// reading. Reads pass through untouched (hyper's header timeout and [`DeadlineBody`] bound
/// those).
pub struct StallGuard<S> {
    inner: S,
    limit: Duration,
    stalled: Option<Pin<Box<Sleep>>>,
}

impl<S> StallGuard<S> {
    /// Guards `inner`'s writes.
    pub fn new(inner: S, limit: Duration) -> Self {
        Self {
            inner,
            limit,
            stalled: None,
        }
    }

    /// Passes a write's result on, starting the stall clock when it could not proceed and
    /// stopping it when it did.
    fn watch<T>(
        &mut self,
        result: Poll<io::Result<T>>,
        cx: &mut Context<'_>,
    ) -> Poll<io::Result<T>> {
        if result.is_ready() {
            self.stalled = None;
            return result;
        }
        let limit = self.limit;
        let timer = self
            .stalled
            .get_or_insert_with(|| Box::pin(tokio::time::sleep(limit)));
        match timer.as_mut().poll(cx) {
            Poll::Ready(()) => Poll::Ready(Err(io::Error::new(
                io::ErrorKind::TimedOut,
                "the client stopped reading",
            ))),
            Poll::Pending => Poll::Pending,
        }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for StallGuard<S> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_read(cx, buf)
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for StallGuard<S> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let result = Pin::new(&mut this.inner).poll_write(cx, buf);
        this.watch(result, cx)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let result = Pin::new(&mut this.inner).poll_write_vectored(cx, bufs);
        this.watch(result, cx)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let result = Pin::new(&mut this.inner).poll_flush(cx);
        this.watch(result, cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let result = Pin::new(&mut this.inner).poll_shutdown(cx);
        this.watch(result, cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncWriteExt;

    #[tokio::test]
    async fn a_write_nobody_reads_fails_after_the_limit() {
        // A pipe of 16 bytes whose other end never reads.
        let (near, _far) = tokio::io::duplex(16);
        let mut guarded = StallGuard::new(near, Duration::from_millis(50));
        let written = guarded.write_all(&[0u8; 64]).await;
        let e = written.expect_err("the write stalls");
        assert_eq!(e.kind(), io::ErrorKind::TimedOut);
    }
}
