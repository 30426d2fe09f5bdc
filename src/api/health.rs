//! `GET /healthz`: `200` when the database answers, `503` when it does not.

use axum::extract::State;
use axum::routing::get;
use axum::{Json, Router};
use serde_json::{Value, json};

use super::ApiState;
use super::error::ApiError;
use crate::storage::Backend;

pub fn router() -> Router<ApiState> {
    Router::new().route("/healthz", get(healthz))
}

async fn healthz(State(state): State<ApiState>) -> Result<Json<Value>, ApiError> {
    state.services.store().ping().await.map_err(|e| {
        tracing::warn!(error = %e, "health check: database not answering");
        ApiError::Unavailable
    })?;
    let database = match state.services.store().backend() {
        Backend::Sqlite => "sqlite",
        Backend::Postgres => "postgres",
    };
    Ok(Json(json!({ "status": "ok", "database": database })))
}
