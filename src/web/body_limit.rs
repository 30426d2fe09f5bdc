//! The request body limit, one layer around every route (the API, MCP, the pages' server
//! functions and forms, Slack's actions, single sign-on, the metrics listener, paths nothing
//! serves), so a route added later is bounded without asking.
//!
//! A body longer than the limit is answered `413` and is not read past the limit:
//!
//! - a declared length (`Content-Length`) over the limit is refused before the handler runs,
//!   without reading a byte of the body;
//! - a body of no declared length (chunked) is handed to the handler behind a counter that
//!   fails the read which would cross the limit; the handler then fails on its unreadable
//!   body before changing anything, and its answer, whatever it was, is replaced by the `413`.
//!
//! Under the machines' paths ([`super::security::serves_machines`]) the `413` carries the
//! API's JSON error (`payload_too_large`); elsewhere it is one line of text.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};

use axum::body::{Body, Bytes};
use axum::extract::Request;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::{BoxError, Router};
use http_body::{Body as _, Frame, SizeHint};
use tower::{Layer, Service};

use super::security::serves_machines;
use crate::api::error::ApiError;

/// `router` with every request body limited to `max_bytes`.
pub fn limited(router: Router, max_bytes: usize) -> Router {
    router.layer(BodyLimitLayer(max_bytes))
}

/// The limit as a tower layer: no boxing, nothing added to a request without a body.
#[derive(Debug, Clone, Copy)]
pub struct BodyLimitLayer(pub usize);

impl<S> Layer<S> for BodyLimitLayer {
    type Service = BodyLimit<S>;

    fn layer(&self, inner: S) -> Self::Service {
        BodyLimit { inner, max: self.0 }
    }
}

/// The service [`BodyLimitLayer`] wraps around the routes.
#[derive(Debug, Clone)]
pub struct BodyLimit<S> {
    inner: S,
    max: usize,
}

impl<S> Service<Request> for BodyLimit<S>
where
    S: Service<Request, Response = Response>,
{
    type Response = Response;
    type Error = S::Error;
    type Future = LimitFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: Request) -> Self::Future {
        let machines = serves_machines(req.uri().path());
        let hint = req.body().size_hint();
        if usize::try_from(hint.lower()).map_or(true, |declared| declared > self.max) {
            return LimitFuture {
                inner: None,
                refused: Some(too_large(machines, self.max)),
                tripped: None,
                machines,
                max: self.max,
            };
        }
        if hint
            .upper()
            .is_some_and(|n| usize::try_from(n).is_ok_and(|n| n <= self.max))
        {
            return LimitFuture {
                inner: Some(self.inner.call(req)),
                refused: None,
                tripped: None,
                machines,
                max: self.max,
            };
        }
        let tripped = Arc::new(AtomicBool::new(false));
        let (max, flag) = (self.max, tripped.clone());
        let req = req.map(|inner| {
            Body::new(CappedBody {
                inner,
                left: max,
                tripped: flag,
            })
        });
        LimitFuture {
            inner: Some(self.inner.call(req)),
            refused: None,
            tripped: Some(tripped),
            machines,
            max,
        }
    }
}

/// The `413`: the API's JSON error under the machines' paths, a line of text elsewhere.
fn too_large(machines: bool, max: usize) -> Response {
    if machines {
        return ApiError::PayloadTooLarge.into_response();
    }
    (
        StatusCode::PAYLOAD_TOO_LARGE,
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        format!(
            "the request body is larger than the {} KiB limit\n",
            max / 1024
        ),
    )
        .into_response()
}

pin_project_lite::pin_project! {
    /// A request on its way through [`BodyLimit`].
    pub struct LimitFuture<F> {
        // The handler's answer; `None` when the request was refused before it ran.
        #[pin]
        inner: Option<F>,
        // The `413` to answer instead.
        refused: Option<Response>,
        // Set if the body, of no declared length, crossed the limit.
        tripped: Option<Arc<AtomicBool>>,
        // Under the machines' paths: the `413` is JSON.
        machines: bool,
        max: usize,
    }
}

impl<F, E> Future for LimitFuture<F>
where
    F: Future<Output = Result<Response, E>>,
{
    type Output = Result<Response, E>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        let Some(inner) = this.inner.as_pin_mut() else {
            let refused = this.refused.take();
            return Poll::Ready(Ok(
                refused.unwrap_or_else(|| too_large(*this.machines, *this.max))
            ));
        };
        let res = std::task::ready!(inner.poll(cx))?;
        let crossed = this
            .tripped
            .as_ref()
            .is_some_and(|t| t.load(Ordering::Acquire));
        Poll::Ready(Ok(if crossed {
            too_large(*this.machines, *this.max)
        } else {
            res
        }))
    }
}

/// The body was longer than the limit.
#[derive(Debug, thiserror::Error)]
#[error("the request body is longer than the limit")]
pub struct BodyTooLarge;

/// A body of undeclared length that fails, and says so, at the frame that would cross the
/// limit.
struct CappedBody {
    inner: Body,
    left: usize,
    tripped: Arc<AtomicBool>,
}

impl http_body::Body for CappedBody {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        let this = self.get_mut();
        let frame = std::task::ready!(Pin::new(&mut this.inner).poll_frame(cx));
        if let Some(Ok(data)) = frame.as_ref().map(|f| f.as_ref().map(Frame::data_ref)) {
            let len = data.map_or(0, Bytes::len);
            match this.left.checked_sub(len) {
                Some(left) => this.left = left,
                None => {
                    this.tripped.store(true, Ordering::Release);
                    return Poll::Ready(Some(Err(BodyTooLarge.into())));
                }
            }
        }
        Poll::Ready(frame.map(|f| f.map_err(BoxError::from)))
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}
