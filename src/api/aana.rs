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

use axum::extract::State;
use axum::routing::post;
use axum::{Json, Router};
use serde_json::{Value, json};

use super::ApiState;
use super::error::ApiError;
use super::extract::{Agent, JsonBody};
use crate::domain::contract::aana::Event;
use crate::domain::contract::wire::FieldError;
use crate::domain::routing::envelope::CONTRACT_VERSION;
use crate::domain::routing::gate::Decision;
use crate::service::ServiceError;

pub fn router() -> Router<ApiState> {
    Router::new()
        .route("/pre-tool-check", post(pre_tool_check))
        .route("/tool-precheck", post(pre_tool_check))
        .route("/validate-tool-precheck", post(validate))
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

#[tracing::instrument(skip_all, fields(agent = %agent.0))]
async fn pre_tool_check(
    State(state): State<ApiState>,
    agent: Agent,
    JsonBody(body): JsonBody,
) -> Result<Json<Value>, ApiError> {
    match state.services.pre_tool_check(&agent.0, &body).await {
        Ok(answer) => Ok(Json(serde_json::to_value(answer).map_err(internal)?)),
        Err(ServiceError::Invalid(errors)) => {
            let refused = Decision::schema_invalid(&errors, state.services.policy());
            let mut answer = serde_json::to_value(refused).map_err(internal)?;
            if let Value::Object(fields) = &mut answer {
                fields.insert("validation_errors".into(), validation_errors(&errors));
            }
            Ok(Json(answer))
        }
        Err(e) => Err(e.into()),
    }
}

fn internal(e: serde_json::Error) -> ApiError {
    tracing::error!(error = %e, "cannot serialise a decision");
    ApiError::Internal
}

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
