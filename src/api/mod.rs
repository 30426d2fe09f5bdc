//! The JSON API for agents and executors, under `/api/v1`; AANA's bridge paths under `/aana`
//! ([`aana`]); and `/healthz`.
//!
//! Every response is JSON with snake_case fields and RFC 3339 UTC times; every error has the
//! one shape of [`error::ApiError`]. Request bodies are limited to [`MAX_BODY_BYTES`].

mod aana;
pub mod error;
mod executor;
pub mod extract;
mod health;
mod pre_tool_check;
mod proposals;
pub mod schemas;
pub mod views;

use std::sync::Arc;

use axum::Router;
use axum::extract::DefaultBodyLimit;

use crate::config::Settings;
use crate::service::Services;

/// Largest request body the API accepts: 256 KiB.
pub const MAX_BODY_BYTES: usize = 256 * 1024;

/// What API handlers share.
#[derive(Clone)]
pub struct ApiState {
    /// The use cases (store, policy, clock).
    pub services: Services,
    /// Settings.
    pub settings: Arc<Settings>,
}

/// The API routes (`/api/v1/...`) and the health check.
pub fn router(state: ApiState) -> Router {
    let v1 = Router::new()
        .merge(proposals::router())
        .merge(executor::router())
        .merge(pre_tool_check::router())
        .merge(schemas::router())
        .fallback(error::not_found)
        .method_not_allowed_fallback(error::method_not_allowed)
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES));
    let bridge = Router::new()
        .merge(aana::router())
        .fallback(error::not_found)
        .method_not_allowed_fallback(error::method_not_allowed)
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES));
    Router::new()
        .nest("/api/v1", v1)
        .nest("/aana", bridge)
        .merge(health::router())
        .with_state(state)
}
