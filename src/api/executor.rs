//! The executor queue: `POST /api/v1/executor/lease`, then
//! `POST /api/v1/executor/commands/{id}/complete` or `/fail` with the lease token.

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};
use serde_json::{Value, json};
use time::format_description::well_known::Rfc3339;
use uuid::Uuid;

use super::ApiState;
use super::error::ApiError;
use super::extract::{Executor, JsonBody, PathId};
use super::views::CommandView;
use crate::domain::FieldError;
use crate::domain::command::{Outcome, check_report, lease_seconds};
use crate::service::Report;

pub fn router() -> Router<ApiState> {
    Router::new()
        .route("/executor/lease", post(lease))
        .route("/executor/commands/{id}/complete", post(complete))
        .route("/executor/commands/{id}/fail", post(fail))
}

fn only_fields(body: &Value, allowed: &[&str]) -> Result<(), ApiError> {
    let Value::Object(map) = body else {
        return Err(ApiError::field("", "the body must be a JSON object"));
    };
    let unknown: Vec<FieldError> = map
        .keys()
        .filter(|k| !allowed.contains(&k.as_str()))
        .map(|k| FieldError::new(k.as_str(), "is not a known field"))
        .collect();
    if unknown.is_empty() {
        Ok(())
    } else {
        Err(ApiError::validation(unknown))
    }
}

/// Leases the oldest waiting command: `200` with the command and a lease token, `204` if none.
#[tracing::instrument(skip_all, fields(executor = %executor.0))]
async fn lease(
    State(state): State<ApiState>,
    executor: Executor,
    JsonBody(body): JsonBody,
) -> Result<Response, ApiError> {
    only_fields(&body, &["lease_seconds"])?;
    let requested = match body.get("lease_seconds") {
        None | Some(Value::Null) => None,
        Some(v) => Some(v.as_u64().ok_or_else(|| {
            ApiError::field("lease_seconds", "must be a whole number of seconds")
        })?),
    };
    let seconds = lease_seconds(requested).map_err(|m| ApiError::field("lease_seconds", m))?;
    let leased = state.services.lease(&executor.0, seconds).await?;
    let Some(leased) = leased else {
        return Ok(StatusCode::NO_CONTENT.into_response());
    };
    Ok(Json(json!({
        "command": CommandView::from(leased.command),
        "lease_token": leased.lease_token.expose(),
        "lease_expires_at": leased.lease_expires_at.format(&Rfc3339).map_err(|_| ApiError::Internal)?,
    }))
    .into_response())
}

async fn report(
    state: ApiState,
    executor: String,
    id: String,
    body: Value,
    outcome: Outcome,
) -> Result<Response, ApiError> {
    let report_field = match outcome {
        Outcome::Succeeded => "result",
        Outcome::Failed => "error",
    };
    let id = Uuid::parse_str(&id).map_err(|_| ApiError::NotFound)?;
    only_fields(&body, &["lease_token", report_field])?;
    let mut errors = Vec::new();
    let lease_token = match body.get("lease_token") {
        Some(Value::String(s)) if !s.is_empty() => Some(s.clone()),
        Some(Value::String(_)) | None | Some(Value::Null) => {
            errors.push(FieldError::new("lease_token", "is required"));
            None
        }
        Some(_) => {
            errors.push(FieldError::new("lease_token", "must be a string"));
            None
        }
    };
    let payload = body.get(report_field).cloned().unwrap_or(Value::Null);
    if let Err(m) = check_report(&payload) {
        errors.push(FieldError::new(report_field, m));
    }
    let (Some(lease_token), true) = (lease_token, errors.is_empty()) else {
        return Err(ApiError::validation(errors));
    };
    let report = Report {
        command_id: id,
        lease_token,
        outcome,
        body: payload,
    };
    let command = state.services.report(&executor, report).await?;
    Ok(Json(json!({ "command": CommandView::from(command) })).into_response())
}

/// Reports success.
#[tracing::instrument(skip_all, fields(executor = %executor.0))]
async fn complete(
    State(state): State<ApiState>,
    executor: Executor,
    PathId(id): PathId,
    JsonBody(body): JsonBody,
) -> Result<Response, ApiError> {
    report(state, executor.0, id, body, Outcome::Succeeded).await
}

/// Reports failure.
#[tracing::instrument(skip_all, fields(executor = %executor.0))]
async fn fail(
    State(state): State<ApiState>,
    executor: Executor,
    PathId(id): PathId,
    JsonBody(body): JsonBody,
) -> Result<Response, ApiError> {
    report(state, executor.0, id, body, Outcome::Failed).await
}
