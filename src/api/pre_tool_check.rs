//! `POST /api/v1/pre-tool-check` (agent token): seed 000's pre-tool-check. Takes an AANA
//! Agent Action Contract v1 event and answers the decision envelope (`route`, `gate_decision`,
//! `recommended_action`, `hard_blockers`, …) with its `check_id`. A schema-invalid event is
//! answered `422` with every error by field path. The use case is [`crate::service`]'s.

use axum::extract::State;
use axum::routing::post;
use axum::{Json, Router};

use super::ApiState;
use super::error::ApiError;
use super::extract::{Agent, JsonBody};
use crate::service::CheckAnswer;

pub fn router() -> Router<ApiState> {
    Router::new().route("/pre-tool-check", post(pre_tool_check))
}

#[tracing::instrument(skip_all, fields(agent = %agent.0))]
async fn pre_tool_check(
    State(state): State<ApiState>,
    agent: Agent,
    JsonBody(body): JsonBody,
) -> Result<Json<CheckAnswer>, ApiError> {
    Ok(Json(state.services.pre_tool_check(&agent.0, &body).await?))
}
