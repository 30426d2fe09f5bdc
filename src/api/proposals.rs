//! `POST /api/v1/proposals` (submit) and `GET /api/v1/proposals/{id}` (poll), for agents.

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::IntoResponse;
use axum::routing::{get, post};
use axum::{Json, Router};
use serde_json::json;
use uuid::Uuid;

use super::ApiState;
use super::error::ApiError;
use super::extract::{Agent, JsonBody, PathId};
use super::views::AgentProposal;
use crate::service::Submitted;

pub fn router() -> Router<ApiState> {
    Router::new()
        .route("/proposals", post(submit))
        .route("/proposals/{id}", get(poll))
}

/// Submits a tool proposal: `201` new, `200` replay of the same request.
#[tracing::instrument(skip_all, fields(agent = %agent.0))]
async fn submit(
    State(state): State<ApiState>,
    agent: Agent,
    JsonBody(body): JsonBody,
) -> Result<impl IntoResponse, ApiError> {
    let submitted = state.services.submit(&agent.0, &body).await?;
    let (status, record) = match submitted {
        Submitted::Created(r) => (StatusCode::CREATED, r),
        Submitted::Replayed(r) => (StatusCode::OK, r),
    };
    let command = state.services.command_for_proposal(record.id).await?;
    let view = AgentProposal::new(record, command);
    Ok((status, Json(json!({ "proposal": view }))))
}

/// The agent's own proposal; any other id is `404`.
#[tracing::instrument(skip_all, fields(agent = %agent.0))]
async fn poll(
    State(state): State<ApiState>,
    agent: Agent,
    PathId(id): PathId,
) -> Result<impl IntoResponse, ApiError> {
    let id = Uuid::parse_str(&id).map_err(|_| ApiError::NotFound)?;
    let (record, command) = state.services.agent_proposal(&agent.0, id).await?;
    Ok(Json(
        json!({ "proposal": AgentProposal::new(record, command) }),
    ))
}
