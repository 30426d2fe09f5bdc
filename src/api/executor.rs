//! The executor queue over HTTP:
//!
//! - `POST /api/v1/executor/lease` `{"tools": [...], "wait": 0..60, "lease_seconds": N}` (all
//!   optional): `200` with the command, its lease token and signed grant, or `204` when nothing
//!   is ready by the end of the wait;
//! - `POST /api/v1/executor/commands/{id}/heartbeat` `{"lease_token", "lease_seconds"?}`;
//! - `POST /api/v1/executor/commands/{id}/complete` `{"lease_token", "result", "next"?}`:
//!   with `next` (a lease body without `wait`), the executor's next command is leased in the
//!   report's transaction if the report is taken, and answered as `next` (null when none is
//!   ready): one request per command for an executor's loop;
//! - `POST /api/v1/executor/commands/{id}/fail`
//!   `{"lease_token", "error", "side_effect": "none"|"possible"|"done"}`;
//! - `GET /api/v1/executor/public-key`: the Ed25519 key grants verify with.
//!
//! Every report needs the current lease token from its holder; anything else is `409`, changes
//! nothing, and is recorded as drift.

use std::time::Duration;

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use time::format_description::well_known::Rfc3339;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use uuid::Uuid;

use super::ApiState;
use super::error::ApiError;
use super::extract::{Executor, JsonBody, PathId};
use super::openapi::{
    CommandAnswer, CompleteAnswer, CompleteBody, ErrorBody, FailBody, HeartbeatAnswer,
    HeartbeatBody, LeaseAnswer, LeaseBody, PublicKeyAnswer,
};
use super::views::CommandView;
use crate::domain::FieldError;
use crate::domain::command::grant::GRANT_FORMAT;
use crate::domain::command::retry::SideEffect;
use crate::domain::command::scope::ToolScope;
use crate::domain::command::{MAX_LEASE_WAIT_SECONDS, Outcome, check_report, lease_seconds};
use crate::domain::contract::wire::{WireEnum, whole_number};
use crate::service::{LeaseRequest, Leased, Report};

pub fn router() -> OpenApiRouter<ApiState> {
    OpenApiRouter::new()
        .routes(routes!(lease))
        .routes(routes!(public_key))
        .routes(routes!(heartbeat))
        .routes(routes!(complete))
        .routes(routes!(fail))
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

/// An optional whole number field.
fn whole(body: &Value, field: &str, errors: &mut Vec<FieldError>) -> Option<u64> {
    match body.get(field) {
        None => None,
        Some(v) => {
            let n = whole_number(v);
            if n.is_none() {
                errors.push(FieldError::new(field, "must be a whole number of seconds"));
            }
            n
        }
    }
}

/// The optional `tools` filter: a list of tool names or globs.
fn tools(body: &Value, errors: &mut Vec<FieldError>) -> Option<ToolScope> {
    let list = match body.get("tools") {
        None => return None,
        Some(Value::Array(list)) => list,
        Some(_) => {
            errors.push(FieldError::new(
                "tools",
                "must be a list of tool names or globs",
            ));
            return None;
        }
    };
    let names: Option<Vec<&str>> = list.iter().map(Value::as_str).collect();
    let Some(names) = names else {
        errors.push(FieldError::new("tools", "every entry must be a string"));
        return None;
    };
    ToolScope::from_patterns(names)
        .map_err(|m| errors.push(FieldError::new("tools", m)))
        .ok()
}

/// Leases the oldest command this executor may run: `200` with the command, a lease token and
/// a signed grant, `204` if none is ready within `wait` seconds.
#[utoipa::path(
    post,
    path = "/executor/lease",
    tag = "executors",
    request_body(content = LeaseBody, content_type = "application/json"),
    responses(
        (status = 200, description = "A command, its lease token and signed grant", body = LeaseAnswer),
        (status = 204, description = "Nothing ready by the end of the wait"),
        (status = 400, description = "The body is not JSON", body = ErrorBody),
        (status = 401, description = "No valid executor token", body = ErrorBody),
        (status = 415, description = "The body is not `application/json`", body = ErrorBody),
        (status = 422, description = "A field breaks the contract", body = ErrorBody),
        (status = 429, description = "`too_many_waits`: the token already holds as many waiting requests as it may (a `wait` over zero is one)", body = ErrorBody),
    ),
    security(("executor_token" = []))
)]
#[tracing::instrument(skip_all, fields(executor = %executor.0))]
async fn lease(
    State(state): State<ApiState>,
    executor: Executor,
    JsonBody(body): JsonBody,
) -> Result<Response, ApiError> {
    let request = lease_request(&body, &executor, true)?;
    // A long poll holds one of the token's waiting places, as an agent's wait does.
    let _waiting = match request.wait.is_zero() {
        true => None,
        false => Some(state.limits.waiting_place(executor.2)?),
    };
    let Some(leased) = state.services.lease(&executor.0, &request).await? else {
        return Ok(StatusCode::NO_CONTENT.into_response());
    };
    Ok(Json(lease_answer(leased)?).into_response())
}

/// A lease's body (`{"tools", "wait", "lease_seconds"}`, all optional; `wait` only where
/// `may_wait`) as what the service is asked; each broken rule named by its field.
fn lease_request(
    body: &Value,
    executor: &Executor,
    may_wait: bool,
) -> Result<LeaseRequest, ApiError> {
    let allowed: &[&str] = if may_wait {
        &["lease_seconds", "wait", "tools"]
    } else {
        &["lease_seconds", "tools"]
    };
    only_fields(body, allowed)?;
    let mut errors = Vec::new();
    let requested = whole(body, "lease_seconds", &mut errors);
    let seconds = lease_seconds(requested)
        .map_err(|m| errors.push(FieldError::new("lease_seconds", m)))
        .ok();
    let wait = whole(body, "wait", &mut errors).unwrap_or(0);
    if wait > MAX_LEASE_WAIT_SECONDS {
        errors.push(FieldError::new(
            "wait",
            format!("must be between 0 and {MAX_LEASE_WAIT_SECONDS} seconds"),
        ));
    }
    let wanted = tools(body, &mut errors);
    let (Some(seconds), true) = (seconds, errors.is_empty()) else {
        return Err(ApiError::validation(errors));
    };
    Ok(LeaseRequest {
        executor: executor.0.name().to_owned(),
        scope: executor.1.clone(),
        wanted,
        lease_seconds: seconds,
        wait: Duration::from_secs(wait),
    })
}

/// A leased command as the API answers it: the command, its lease token and signed grant.
fn lease_answer(leased: Leased) -> Result<Value, ApiError> {
    Ok(json!({
        "command": CommandView::from(leased.command),
        "lease_token": leased.lease_token.expose(),
        "lease_expires_at": leased.lease_expires_at.format(&Rfc3339).map_err(|_| ApiError::Internal)?,
        "grant": leased.grant,
    }))
}

/// The Ed25519 public key that verifies grants.
#[utoipa::path(
    get,
    path = "/executor/public-key",
    tag = "executors",
    responses(
        (status = 200, description = "The key", body = PublicKeyAnswer),
        (status = 401, description = "No valid executor token", body = ErrorBody),
    ),
    security(("executor_token" = []))
)]
async fn public_key(State(state): State<ApiState>, _executor: Executor) -> Json<Value> {
    Json(json!({
        "algorithm": "ed25519",
        "public_key": state.services.grant_public_key(),
        "encoding": "hex",
        "grant_format": GRANT_FORMAT,
        "signed": "the RFC 8785 canonical JSON of the grant without its `signature` field",
    }))
}

/// The `lease_token` field, required.
fn lease_token(body: &Value, errors: &mut Vec<FieldError>) -> Option<String> {
    match body.get("lease_token") {
        Some(Value::String(s)) if !s.is_empty() => Some(s.clone()),
        Some(Value::String(_)) | None | Some(Value::Null) => {
            errors.push(FieldError::new("lease_token", "is required"));
            None
        }
        Some(_) => {
            errors.push(FieldError::new("lease_token", "must be a string"));
            None
        }
    }
}

/// Extends the lease: `200` with the new end, `409` for a lease the caller does not hold.
#[utoipa::path(
    post,
    path = "/executor/commands/{id}/heartbeat",
    tag = "executors",
    params(("id" = uuid::Uuid, Path, description = "The command's id")),
    request_body(content = HeartbeatBody, content_type = "application/json"),
    responses(
        (status = 200, description = "The lease's new end", body = HeartbeatAnswer),
        (status = 400, description = "The body is not JSON", body = ErrorBody),
        (status = 401, description = "No valid executor token", body = ErrorBody),
        (status = 404, description = "No such command", body = ErrorBody),
        (status = 409, description = "The caller does not hold this lease (recorded as drift)", body = ErrorBody),
        (status = 415, description = "The body is not `application/json`", body = ErrorBody),
        (status = 422, description = "A field breaks the contract", body = ErrorBody),
    ),
    security(("executor_token" = []))
)]
#[tracing::instrument(skip_all, fields(executor = %executor.0))]
async fn heartbeat(
    State(state): State<ApiState>,
    executor: Executor,
    PathId(id): PathId,
    JsonBody(body): JsonBody,
) -> Result<Response, ApiError> {
    let id = Uuid::parse_str(&id).map_err(|_| ApiError::NotFound)?;
    only_fields(&body, &["lease_token", "lease_seconds"])?;
    let mut errors = Vec::new();
    let token = lease_token(&body, &mut errors);
    let requested = whole(&body, "lease_seconds", &mut errors);
    let seconds = lease_seconds(requested)
        .map_err(|m| errors.push(FieldError::new("lease_seconds", m)))
        .ok();
    let (Some(token), Some(seconds), true) = (token, seconds, errors.is_empty()) else {
        return Err(ApiError::validation(errors));
    };
    let command = state
        .services
        .heartbeat(&executor.0, id, &token, seconds)
        .await?;
    let until = command
        .lease_expires_at
        .and_then(|t| t.format(&Rfc3339).ok());
    Ok(Json(json!({ "command_id": command.id, "lease_expires_at": until })).into_response())
}

/// The optional `side_effect` of a failure; `possible` when absent. Unknown values fail.
fn side_effect(body: &Value, errors: &mut Vec<FieldError>) -> SideEffect {
    match body.get("side_effect") {
        None | Some(Value::Null) => SideEffect::Possible,
        Some(Value::String(s)) => SideEffect::parse(s).unwrap_or_else(|| {
            errors.push(FieldError::new("side_effect", SideEffect::expected()));
            SideEffect::Possible
        }),
        Some(_) => {
            errors.push(FieldError::new("side_effect", SideEffect::expected()));
            SideEffect::Possible
        }
    }
}

/// `error` with each field it names placed under `parent` (`next.tools`).
fn under(parent: &str, error: ApiError) -> ApiError {
    match error {
        ApiError::Unprocessable {
            code,
            message,
            details,
        } => ApiError::Unprocessable {
            code,
            message,
            details: (details.into_iter())
                .map(|e| match e.field.as_str() {
                    "" => FieldError::new(parent, e.message),
                    field => FieldError::new(format!("{parent}.{field}"), e.message),
                })
                .collect(),
        },
        other => other,
    }
}

async fn report(
    state: ApiState,
    executor: Executor,
    id: String,
    body: Value,
    outcome: Outcome,
) -> Result<Response, ApiError> {
    let (report_field, allowed): (&str, &[&str]) = match outcome {
        Outcome::Succeeded => ("result", &["lease_token", "result", "next"]),
        Outcome::Failed => ("error", &["lease_token", "error", "side_effect"]),
    };
    let id = Uuid::parse_str(&id).map_err(|_| ApiError::NotFound)?;
    only_fields(&body, allowed)?;
    let mut errors = Vec::new();
    // A success report may ask for the executor's next command (a lease body, without `wait`);
    // its broken rules are named under `next`, with the report's own.
    let next = match body.get("next").map(|n| lease_request(n, &executor, false)) {
        None => None,
        Some(Ok(next)) => Some(next),
        Some(Err(e)) => match under("next", e) {
            ApiError::Unprocessable { details, .. } => {
                errors.extend(details);
                None
            }
            other => return Err(other),
        },
    };
    let lease_token = lease_token(&body, &mut errors);
    let payload = body.get(report_field).cloned().unwrap_or(Value::Null);
    if let Err(m) = check_report(&payload) {
        errors.push(FieldError::new(report_field, m));
    }
    let side_effect = side_effect(&body, &mut errors);
    let (Some(lease_token), true) = (lease_token, errors.is_empty()) else {
        return Err(ApiError::validation(errors));
    };
    let report = Report {
        command_id: id,
        lease_token,
        outcome,
        body: payload,
        side_effect,
    };
    let Some(next) = next else {
        let command = state.services.report(&executor.0, report).await?;
        return Ok(Json(json!({ "command": CommandView::from(command) })).into_response());
    };
    let (command, leased) = (state.services)
        .report_and_lease(&executor.0, report, &next)
        .await?;
    let next = leased.map(lease_answer).transpose()?;
    Ok(Json(json!({ "command": CommandView::from(command), "next": next })).into_response())
}

/// Reports success.
#[utoipa::path(
    post,
    path = "/executor/commands/{id}/complete",
    tag = "executors",
    params(("id" = uuid::Uuid, Path, description = "The command's id")),
    request_body(content = CompleteBody, content_type = "application/json"),
    responses(
        (status = 200, description = "The command, settled; with `next` when the report asked for the executor's next command", body = CompleteAnswer),
        (status = 400, description = "The body is not JSON", body = ErrorBody),
        (status = 401, description = "No valid executor token", body = ErrorBody),
        (status = 404, description = "No such command", body = ErrorBody),
        (status = 409, description = "The caller does not hold this lease (recorded as drift)", body = ErrorBody),
        (status = 415, description = "The body is not `application/json`", body = ErrorBody),
        (status = 422, description = "A field breaks the contract", body = ErrorBody),
    ),
    security(("executor_token" = []))
)]
#[tracing::instrument(skip_all, fields(executor = %executor.0))]
async fn complete(
    State(state): State<ApiState>,
    executor: Executor,
    PathId(id): PathId,
    JsonBody(body): JsonBody,
) -> Result<Response, ApiError> {
    report(state, executor, id, body, Outcome::Succeeded).await
}

/// Reports failure.
#[utoipa::path(
    post,
    path = "/executor/commands/{id}/fail",
    tag = "executors",
    params(("id" = uuid::Uuid, Path, description = "The command's id")),
    request_body(content = FailBody, content_type = "application/json"),
    responses(
        (status = 200, description = "The command, settled or queued again", body = CommandAnswer),
        (status = 400, description = "The body is not JSON", body = ErrorBody),
        (status = 401, description = "No valid executor token", body = ErrorBody),
        (status = 404, description = "No such command", body = ErrorBody),
        (status = 409, description = "The caller does not hold this lease (recorded as drift)", body = ErrorBody),
        (status = 415, description = "The body is not `application/json`", body = ErrorBody),
        (status = 422, description = "A field breaks the contract", body = ErrorBody),
    ),
    security(("executor_token" = []))
)]
#[tracing::instrument(skip_all, fields(executor = %executor.0))]
async fn fail(
    State(state): State<ApiState>,
    executor: Executor,
    PathId(id): PathId,
    JsonBody(body): JsonBody,
) -> Result<Response, ApiError> {
    report(state, executor, id, body, Outcome::Failed).await
}
