//! `POST /api/v1/pre-tool-check` (agent token): seed 000's pre-tool-check. Takes an AANA
//! Agent Action Contract v1 event and answers the decision envelope (`route`, `gate_decision`,
//! `recommended_action`, `hard_blockers`, …) with its `check_id`. A schema-invalid event is
//! answered `422` with every error by field path. The use case is [`crate::service`]'s.

use axum::Json;
use axum::extract::State;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::ApiState;
use super::error::ApiError;
use super::extract::{Agent, JsonBody};
use crate::service::CheckAnswer;

pub fn router() -> OpenApiRouter<ApiState> {
    OpenApiRouter::new().routes(routes!(pre_tool_check))
}

/// Seed 000's pre-tool-check: may the agent run this tool call now?
///
/// Execute only when `gate_decision` is `pass`, `recommended_action` is `accept` and
/// `hard_blockers` is empty. Every check is recorded in the audit trail.
#[utoipa::path(
    post,
    path = "/pre-tool-check",
    tag = "agents",
    request_body(content = super::openapi::AgentActionEvent, content_type = "application/json"),
    responses(
        (status = 200, description = "The decision envelope", body = super::openapi::DecisionEnvelope),
        (status = 400, description = "The body is not JSON", body = super::openapi::ErrorBody),
        (status = 401, description = "No valid agent token", body = super::openapi::ErrorBody),
        (status = 403, description = "`agent_id` names another agent", body = super::openapi::ErrorBody),
        (status = 413, description = "The body is over 256 KiB", body = super::openapi::ErrorBody),
        (status = 415, description = "The body is not `application/json`", body = super::openapi::ErrorBody),
        (status = 422, description = "The event breaks the contract; every field named", body = super::openapi::ErrorBody),
    ),
    security(("agent_token" = []))
)]
#[tracing::instrument(skip_all, fields(agent = %agent.0))]
async fn pre_tool_check(
    State(state): State<ApiState>,
    agent: Agent,
    JsonBody(body): JsonBody,
) -> Result<Json<CheckAnswer>, ApiError> {
    Ok(Json(state.services.pre_tool_check(&agent.0, &body).await?))
}
