//! AANA's bridge paths, so an agent that uses AANA's SDK switches to Countersign by changing
//! its `base_url` to `https://HOST/aana` and setting its token to a Countersign agent token:
//!
//! - `POST /aana/pre-tool-check`, and its alias `POST /aana/tool-precheck` (the path AANA's
//!   `AANAClient.tool_precheck` calls): the bare Agent Action Contract v1 event in, the decision
//!   envelope out (AANA's fields, [`crate::domain::routing::envelope`]). As AANA's own servers
//!   do, a schema-invalid event is answered `200` with `refuse`, a blocker, and
//!   `validation_errors: [{path, message}]`: AANA's SDK raises on a non-2xx answer instead of
//!   reading a decision. The check is recorded in the audit trail either way.
//! - `POST /aana/validate-tool-precheck`: schema validation only (no decision, nothing
//!   recorded), answered `{"valid", "errors": [{path, message}], "schema_version"}`.
//!
//! Paths are AANA's: dot-separated, array indexes as numbers (`evidence_refs.0.kind`), the
//! document itself `""`. Every path needs the agent's bearer token, as `/api/v1` does.

use crate::domain::principal::Principal;
use axum::Json;
use axum::extract::State;
use serde_json::{Value, json};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::ApiState;
use super::error::ApiError;
use super::extract::{Agent, JsonBody};
use crate::domain::contract::aana::Event;
use crate::domain::contract::wire::FieldError;
use crate::domain::routing::envelope::CONTRACT_VERSION;
use crate::domain::routing::gate::Decision;
use crate::service::{ServiceError, Services};

pub fn router() -> OpenApiRouter<ApiState> {
    OpenApiRouter::new()
        .routes(routes!(aana_pre_tool_check))
        .routes(routes!(tool_precheck))
        .routes(routes!(validate))
}

/// AANA's path for a field error: `evidence_refs[0].kind` is `evidence_refs.0.kind`.
pub fn aana_path(field: &str) -> String {
    field.replace('[', ".").replace(']', "")
}

fn validation_errors(errors: &[FieldError]) -> Value {
    errors
        .iter()
        .map(|e| json!({ "path": aana_path(&e.field), "message": e.message }))
        .collect()
}

/// AANA's `/pre-tool-check`: the decision envelope in AANA's shape; a schema-invalid event is a
/// `200` refusal with `validation_errors`.
#[utoipa::path(
    post,
    path = "/pre-tool-check",
    tag = "aana",
    request_body(content = super::openapi::AgentActionEvent, content_type = "application/json"),
    responses(
        (status = 200, description = "The decision envelope (a refusal with `validation_errors` for a schema-invalid event)", body = super::openapi::DecisionEnvelope),
        (status = 400, description = "The body is not JSON", body = super::openapi::ErrorBody),
        (status = 401, description = "No valid agent token", body = super::openapi::ErrorBody),
        (status = 403, description = "`agent_id` names another agent", body = super::openapi::ErrorBody),
        (status = 413, description = "The body is over 256 KiB", body = super::openapi::ErrorBody),
        (status = 415, description = "The body is not `application/json`", body = super::openapi::ErrorBody),
    ),
    security(("agent_token" = []))
)]
async fn aana_pre_tool_check(
    state: State<ApiState>,
    agent: Agent,
    body: JsonBody,
) -> Result<Json<Value>, ApiError> {
    check(state, agent, body).await
}

/// AANA's `/tool-precheck`, the path `AANAClient.tool_precheck` calls: the same as
/// `/aana/pre-tool-check`.
#[utoipa::path(
    post,
    path = "/tool-precheck",
    tag = "aana",
    request_body(content = super::openapi::AgentActionEvent, content_type = "application/json"),
    responses(
        (status = 200, description = "The decision envelope (a refusal with `validation_errors` for a schema-invalid event)", body = super::openapi::DecisionEnvelope),
        (status = 400, description = "The body is not JSON", body = super::openapi::ErrorBody),
        (status = 401, description = "No valid agent token", body = super::openapi::ErrorBody),
        (status = 403, description = "`agent_id` names another agent", body = super::openapi::ErrorBody),
        (status = 413, description = "The body is over 256 KiB", body = super::openapi::ErrorBody),
        (status = 415, description = "The body is not `application/json`", body = super::openapi::ErrorBody),
    ),
    security(("agent_token" = []))
)]
async fn tool_precheck(
    state: State<ApiState>,
    agent: Agent,
    body: JsonBody,
) -> Result<Json<Value>, ApiError> {
    check(state, agent, body).await
}

#[tracing::instrument(skip_all, fields(agent = %agent.0))]
async fn check(
    State(state): State<ApiState>,
    agent: Agent,
    JsonBody(body): JsonBody,
) -> Result<Json<Value>, ApiError> {
    Ok(Json(aana_check(&state.services, &agent.0, &body).await?))
}

/// `agent`'s pre-tool-check answered as AANA answers it: the decision envelope, and for a
/// schema-invalid event a refusal with `validation_errors` instead of an error (also MCP's
/// `countersign_pre_tool_check`).
pub async fn aana_check(
    services: &Services,
    agent: &Principal,
    event: &Value,
) -> Result<Value, ApiError> {
    match services.pre_tool_check(agent, event).await {
        Ok(answer) => serde_json::to_value(answer).map_err(internal),
        Err(ServiceError::Invalid(errors)) => {
            let refused = Decision::schema_invalid(&errors, &services.policy());
            let mut answer = serde_json::to_value(refused).map_err(internal)?;
            if let Value::Object(fields) = &mut answer {
                fields.insert("validation_errors".into(), validation_errors(&errors));
            }
            Ok(answer)
        }
        Err(e) => Err(e.into()),
    }
}

fn internal(e: serde_json::Error) -> ApiError {
    tracing::error!(error = %e, "cannot serialise a decision");
    ApiError::Internal
}

/// AANA's schema validation of an event: no decision, nothing recorded.
#[utoipa::path(
    post,
    path = "/validate-tool-precheck",
    tag = "aana",
    request_body(content = super::openapi::AgentActionEvent, content_type = "application/json"),
    responses(
        (status = 200, description = "Whether the event is valid, and every error by path", body = super::openapi::ValidationAnswer),
        (status = 400, description = "The body is not JSON", body = super::openapi::ErrorBody),
        (status = 401, description = "No valid agent token", body = super::openapi::ErrorBody),
        (status = 413, description = "The body is over 256 KiB", body = super::openapi::ErrorBody),
        (status = 415, description = "The body is not `application/json`", body = super::openapi::ErrorBody),
    ),
    security(("agent_token" = []))
)]
#[tracing::instrument(skip_all, fields(agent = %_agent.0))]
async fn validate(_agent: Agent, JsonBody(body): JsonBody) -> Json<Value> {
    let errors = match Event::parse(&body) {
        Ok(_) => Vec::new(),
        Err(errors) => errors,
    };
    Json(json!({
        "valid": errors.is_empty(),
        "errors": validation_errors(&errors),
        "schema_version": CONTRACT_VERSION,
    }))
}
