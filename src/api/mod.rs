//! The JSON API for agents and executors, under `/api/v1`; AANA's bridge paths under `/aana`
//! ([`aana`]); and `/healthz`.
//!
//! Every response is JSON with snake_case fields and RFC 3339 UTC times; every error has the
//! one shape of [`error::ApiError`]. Request bodies are limited to [`MAX_BODY_BYTES`], on these
//! routes as on every other (`web::body_limit`, around the whole router).

mod aana;
mod agent_events;
pub mod error;
mod executor;
pub mod extract;
mod gateway;
mod health;
pub mod limits;
mod mcp;
pub mod openapi;
mod pre_tool_check;
mod proposals;
pub mod schemas;
pub mod views;

use std::sync::Arc;

use axum::Router;
use utoipa_axum::router::OpenApiRouter;

use crate::config::Settings;
use crate::service::Services;

/// Largest request body any route accepts: 256 KiB.
pub const MAX_BODY_BYTES: usize = 256 * 1024;

/// What API handlers share, behind one `Arc`: axum clones the state for every request, and
/// one reference count costs less than one per part (the use cases hold a dozen).
#[derive(Clone)]
pub struct ApiState(Arc<ApiShared>);

/// The parts of [`ApiState`].
pub struct ApiShared {
    /// The use cases (store, policy, clock).
    pub services: Services,
    /// Settings.
    pub settings: Arc<Settings>,
    /// Per-token rate limits.
    pub limits: Arc<limits::TokenLimits>,
    /// The agents' event streams' one watcher on this instance (`GET /api/v1/events`).
    pub agent_hub: Arc<crate::service::AgentHub>,
    /// The MCP gateway, when `serve --gateway` names one (`POST /mcp/gateway`).
    pub gateway: Option<Arc<crate::gateway::Gateway>>,
}

impl ApiState {
    /// The state of the API routes.
    pub fn new(shared: ApiShared) -> Self {
        Self(Arc::new(shared))
    }
}

impl std::ops::Deref for ApiState {
    type Target = ApiShared;

    fn deref(&self) -> &ApiShared {
        &self.0
    }
}

/// The API routes (`/api/v1/...`, `/aana/...`) and the health check. The OpenAPI document is
/// assembled from the same routers ([`openapi`]).
pub fn router(state: ApiState) -> Router {
    let (v1, v1_doc) = OpenApiRouter::new()
        .merge(proposals::router())
        .merge(agent_events::router())
        .merge(executor::router())
        .merge(pre_tool_check::router())
        .merge(schemas::router())
        .merge(openapi::router())
        .split_for_parts();
    let (bridge, bridge_doc) = aana::router().split_for_parts();
    let (health, health_doc) = health::router().split_for_parts();
    let mut doc = openapi::base()
        .nest("/api/v1", v1_doc)
        .nest("/aana", bridge_doc);
    doc.merge(health_doc);
    openapi::publish(doc);
    let v1 = finish(v1);
    let bridge = finish(bridge);
    Router::new()
        .nest("/api/v1", v1)
        .nest("/aana", bridge)
        .merge(health)
        .with_state(state.clone())
        .merge(gateway::router(state.clone()))
        .merge(mcp::router(state))
}

/// JSON errors for unknown paths and methods.
fn finish(router: Router<ApiState>) -> Router<ApiState> {
    router
        .fallback(error::not_found)
        .method_not_allowed_fallback(error::method_not_allowed)
}
