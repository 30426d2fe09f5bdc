//! What every response and request gets at the edge of the web app:
//!
//! - **Security headers** on every response: a `Content-Security-Policy` whose scripts must be
//!   same-origin or carry this response's nonce (no `'unsafe-inline'`; Leptos puts the nonce on
//!   the inline scripts it writes, see [`provide_request_nonce`]), `frame-ancestors 'none'`;
//!   under the machines' paths (the API, AANA's bridge, MCP, the health check), which serve
//!   no scripts, a fixed policy that allows none, and no nonce to make for each request;
//!   `X-Content-Type-Options: nosniff`, `Referrer-Policy: same-origin`, and
//!   `Strict-Transport-Security` when cookies are `Secure` (the site is served over HTTPS).
//! - **The client's address** ([`ClientAddr`]), which sign-in throttling counts by: the
//!   socket's peer, or, when the peer is a proxy the operator trusts
//!   (`--trusted-proxies`), the nearest address in `X-Forwarded-For` that is not one of them.

use std::future::Future;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use app::ports::ClientAddr;
use axum::extract::{ConnectInfo, Request};
use axum::http::{HeaderMap, HeaderValue, header};
use axum::response::Response;
use leptos::prelude::{provide_context, use_context};
use tower::{Layer, Service};

/// This response's CSP nonce: 128 random bits, hex.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CspNonce(pub Arc<str>);

impl CspNonce {
    fn generate() -> Self {
        use rand::RngCore;
        let mut bytes = [0u8; 16];
        rand::rngs::OsRng.fill_bytes(&mut bytes);
        Self(hex::encode(bytes).into())
    }
}

/// What the edge needs to know.
#[derive(Debug, Clone, Default)]
pub struct Edge {
    /// Send HSTS (the site is served over HTTPS: cookies are `Secure`).
    pub hsts: bool,
    /// Proxies whose `X-Forwarded-For` is believed.
    pub trusted_proxies: Arc<[IpAddr]>,
}

/// The policy for a response under the machines' paths ([`serves_machines`]): JSON, and the
/// API's documentation page, which has a stylesheet and no scripts.
pub const MACHINE_POLICY: &str = "default-src 'self'; script-src 'none'; style-src 'self'; \
     img-src 'self' data:; connect-src 'self'; font-src 'self'; object-src 'none'; \
     base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/// Whether `path` is under the paths machines call (agents, executors, MCP clients, health
/// checks), where no page is rendered and so no response needs a nonce.
pub fn serves_machines(path: &str) -> bool {
    ["/api", "/aana", "/mcp", "/healthz"].iter().any(|root| {
        path.strip_prefix(root)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
    })
}

/// The policy for a page with `nonce`.
pub fn content_security_policy(nonce: &str) -> String {
    format!(
        "default-src 'self'; script-src 'self' 'nonce-{nonce}' 'wasm-unsafe-eval'; \
         style-src 'self'; img-src 'self' data:; connect-src 'self'; font-src 'self'; \
         object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
    )
}

/// The edge as a tower layer, outermost but for tracing: on the way in, the request's CSP
/// nonce (rendering reads it) and the client's address; on the way out, the security headers.
///
/// A plain layer, not `axum::middleware::from_fn`: a `from_fn` layer boxes the future of
/// everything inside it, and an agent waiting on a long poll keeps that future for as long as
/// it waits; this one adds a few bytes to the inner future instead.
#[derive(Debug, Clone)]
pub struct EdgeLayer(pub Edge);

impl<S> Layer<S> for EdgeLayer {
    type Service = EdgeService<S>;

    fn layer(&self, inner: S) -> Self::Service {
        EdgeService {
            inner,
            edge: self.0.clone(),
        }
    }
}

/// The service [`EdgeLayer`] wraps around the app.
#[derive(Debug, Clone)]
pub struct EdgeService<S> {
    inner: S,
    edge: Edge,
}

impl<S> Service<Request> for EdgeService<S>
where
    S: Service<Request, Response = Response>,
{
    type Response = Response;
    type Error = S::Error;
    type Future = EdgeFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut req: Request) -> Self::Future {
        let nonce = (!serves_machines(req.uri().path())).then(CspNonce::generate);
        let peer = req
            .extensions()
            .get::<ConnectInfo<SocketAddr>>()
            .map(|ConnectInfo(addr)| addr.ip());
        let client = client_ip(peer, req.headers(), &self.edge.trusted_proxies);
        req.extensions_mut().insert(ClientAddr(client));
        if let Some(nonce) = &nonce {
            req.extensions_mut().insert(nonce.clone());
        }
        EdgeFuture {
            inner: self.inner.call(req),
            nonce,
            hsts: self.edge.hsts,
        }
    }
}

pin_project_lite::pin_project! {
    /// A response on its way out through [`EdgeService`].
    pub struct EdgeFuture<F> {
        #[pin]
        inner: F,
        // A page's nonce; `None` under the machines' paths.
        nonce: Option<CspNonce>,
        hsts: bool,
    }
}

impl<F, E> Future for EdgeFuture<F>
where
    F: Future<Output = Result<Response, E>>,
{
    type Output = Result<Response, E>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        let mut res = std::task::ready!(this.inner.poll(cx))?;
        security_headers(res.headers_mut(), this.nonce.as_ref(), *this.hsts);
        Poll::Ready(Ok(res))
    }
}

/// The security headers of a page whose CSP names `nonce`, or (`None`) of a response under the
/// machines' paths.
fn security_headers(headers: &mut HeaderMap, nonce: Option<&CspNonce>, hsts: bool) {
    let csp = match nonce {
        Some(nonce) => HeaderValue::from_str(&content_security_policy(&nonce.0)).ok(),
        None => Some(HeaderValue::from_static(MACHINE_POLICY)),
    };
    if let Some(csp) = csp {
        headers.insert(header::CONTENT_SECURITY_POLICY, csp);
    }
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("same-origin"),
    );
    if hsts {
        headers.insert(
            header::STRICT_TRANSPORT_SECURITY,
            HeaderValue::from_static("max-age=63072000; includeSubDomains"),
        );
    }
}

/// For the Leptos context of a request: the nonce the response's CSP names, so the inline
/// scripts Leptos writes (hydration, resolved resources) carry it.
pub fn provide_request_nonce() {
    let nonce = use_context::<axum::http::request::Parts>()
        .and_then(|parts| parts.extensions.get::<CspNonce>().cloned());
    if let Some(nonce) = nonce {
        provide_context(leptos::nonce::Nonce::from_value(nonce.0));
    }
}

/// The client behind `peer`: `peer` itself unless it is a trusted proxy; then, walking
/// `X-Forwarded-For` from the nearest hop, the first address that is not a trusted proxy (a
/// malformed hop stops the walk at the last good one).
pub fn client_ip(peer: Option<IpAddr>, headers: &HeaderMap, trusted: &[IpAddr]) -> IpAddr {
    let peer = peer.unwrap_or(IpAddr::V4(Ipv4Addr::UNSPECIFIED));
    if !trusted.contains(&peer) {
        return peer;
    }
    let forwarded: Vec<&str> = headers
        .get_all("x-forwarded-for")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .collect();
    let mut nearest = peer;
    for hop in forwarded.iter().rev().flat_map(|v| v.rsplit(',')) {
        match hop.trim().parse::<IpAddr>() {
            Ok(ip) if trusted.contains(&ip) => nearest = ip,
            Ok(ip) => return ip,
            Err(_) => return nearest,
        }
    }
    nearest
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().expect("ip")
    }

    fn forwarded(values: &[&str]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for v in values {
            h.append("x-forwarded-for", HeaderValue::from_str(v).expect("value"));
        }
        h
    }

    #[test]
    fn only_a_trusted_proxy_may_name_the_client() {
        let proxy = ip("10.0.0.1");
        let h = forwarded(&["203.0.113.9"]);
        assert_eq!(
            client_ip(Some(ip("198.51.100.7")), &h, &[proxy]),
            ip("198.51.100.7")
        );
        assert_eq!(client_ip(Some(proxy), &h, &[proxy]), ip("203.0.113.9"));
        assert_eq!(client_ip(Some(proxy), &h, &[]), proxy);
    }

    #[test]
    fn the_nearest_untrusted_hop_wins_over_what_the_client_claimed() {
        let (p1, p2) = (ip("10.0.0.1"), ip("10.0.0.2"));
        // The client wrote "1.1.1.1" itself; the proxies appended what they saw.
        let h = forwarded(&["1.1.1.1, 203.0.113.9", "10.0.0.2"]);
        assert_eq!(client_ip(Some(p1), &h, &[p1, p2]), ip("203.0.113.9"));
        let junk = forwarded(&["203.0.113.9, not-an-address"]);
        assert_eq!(client_ip(Some(p1), &junk, &[p1]), p1);
    }

    #[test]
    fn scripts_need_the_nonce_and_nobody_frames_the_pages() {
        let csp = content_security_policy("abc");
        assert!(csp.contains("script-src 'self' 'nonce-abc'"));
        assert!(!csp.contains("unsafe-inline"));
        assert!(csp.contains("frame-ancestors 'none'"));
    }

    #[test]
    fn machines_paths_get_a_policy_that_allows_no_script() {
        for path in [
            "/api/v1/proposals/x",
            "/api/v1/docs",
            "/aana/tool-precheck",
            "/mcp",
            "/healthz",
        ] {
            assert!(serves_machines(path), "{path}");
        }
        for path in [
            "/",
            "/login",
            "/audit",
            "/proposals/x",
            "/apiary",
            "/pkg/countersign.js",
        ] {
            assert!(!serves_machines(path), "{path}");
        }
        assert!(MACHINE_POLICY.contains("script-src 'none'"));
        assert!(MACHINE_POLICY.contains("frame-ancestors 'none'"));
        assert!(HeaderValue::from_str(MACHINE_POLICY).is_ok());
    }
}
