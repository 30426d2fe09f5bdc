//! `POST /api/v1/proposals` (submit) and `GET /api/v1/proposals/{id}` (poll), for agents.

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::IntoResponse;
use axum::routing::{get, post};
use axum::{Json, Router};
use serde_json::json;
use time::OffsetDateTime;
use uuid::Uuid;

use super::ApiState;
use super::error::ApiError;
use super::extract::{Agent, JsonBody, PathId};
use super::views::ProposalView;
use crate::domain::Route;
use crate::domain::command::CommandSpec;
use crate::domain::contract::canonical::request_hash_sha256;
use crate::domain::contract::proposal::ToolProposal;
use crate::domain::lifecycle::ProposalStatus;
use crate::domain::principal::ActorKind;
use crate::domain::route_proposal;
use crate::domain::routing::scan::audit_safe_name;
use crate::storage::{AuditEntry, Conflict, NewProposal, StorageError, Submitted};

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
    let contract = match ToolProposal::parse(&body) {
        Ok(contract) => contract,
        Err(errors) => {
            // The rejection is recorded by field path only (messages may quote the rejected
            // values); nothing else is stored.
            let entry = AuditEntry {
                actor_kind: ActorKind::Agent,
                actor: agent.0.clone(),
                action: "proposal.rejected_input",
                subject_type: "proposal",
                subject_id: body
                    .get("proposal_id")
                    .and_then(|v| v.as_str())
                    .and_then(|s| Uuid::parse_str(s).ok())
                    .map_or_else(|| "unidentified".to_owned(), |id| id.to_string()),
                before_status: None,
                after_status: None,
                details: json!({ "fields": errors.iter().map(|e| audit_safe_name(&e.field)).collect::<Vec<_>>() }),
            };
            state.store.append_audit(&entry).await?;
            return Err(ApiError::validation(errors));
        }
    };
    if contract.proposed_by != agent.0 {
        return Err(ApiError::Forbidden {
            code: "proposer_mismatch",
            message: format!(
                "`proposed_by` is `{}` but this token belongs to agent `{}`",
                contract.proposed_by, agent.0
            ),
        });
    }
    let request_hash = request_hash_sha256(&body);
    let routing = route_proposal(&contract.facts(), &state.policy);
    let now = OffsetDateTime::now_utc();
    let authorization_state = contract.effective_authorization();
    let (status, command) = match routing.route {
        Route::Accept => (
            ProposalStatus::Accepted,
            Some((
                Uuid::now_v7(),
                CommandSpec::for_approved(
                    &contract,
                    &request_hash,
                    "policy",
                    authorization_state,
                    now,
                )
                .only_for(state.policy.executors_for(&contract.tool.name)),
            )),
        ),
        Route::Ask | Route::Defer => (ProposalStatus::Pending, None),
        Route::Refuse => (ProposalStatus::Refused, None),
    };
    // A proposal waiting for a human expires after the policy's expiry for its tool.
    let expires_at = (status == ProposalStatus::Pending).then(|| {
        now + time::Duration::seconds(i64::try_from(routing.expires_after_secs).unwrap_or(i64::MAX))
    });
    let new = NewProposal {
        agent: agent.0,
        status,
        expires_at,
        authorization_state,
        request_hash,
        routing,
        contract,
        now,
        command,
    };
    let (status, record) = match state.store.submit_proposal(&new).await {
        Ok(Submitted::Created(r)) => (StatusCode::CREATED, r),
        Ok(Submitted::Replayed(r)) => (StatusCode::OK, r),
        Err(StorageError::Conflict(Conflict::IdempotencyKeyReused)) => {
            return Err(ApiError::Unprocessable {
                code: "idempotency_key_reused",
                message: "this idempotency_key was already used for a different request; use a new key for a new request".into(),
                details: vec![crate::domain::FieldError::new(
                    "idempotency_key",
                    "already used by this agent with a different body",
                )],
            });
        }
        Err(StorageError::Conflict(Conflict::ProposalIdTaken)) => {
            return Err(ApiError::Conflict {
                code: "proposal_id_conflict",
                message: "a different proposal already has this proposal_id; generate a new UUID"
                    .into(),
            });
        }
        Err(e) => return Err(e.into()),
    };
    tracing::info!(proposal.id = %record.id, status = %record.status, route = %record.routing.route, "proposal received");
    let command = state.store.command_for_proposal(record.id).await?;
    Ok((
        status,
        Json(json!({ "proposal": ProposalView::new(record, command) })),
    ))
}

/// The agent's own proposal; any other id is `404`.
#[tracing::instrument(skip_all, fields(agent = %agent.0))]
async fn poll(
    State(state): State<ApiState>,
    agent: Agent,
    PathId(id): PathId,
) -> Result<impl IntoResponse, ApiError> {
    let id = Uuid::parse_str(&id).map_err(|_| ApiError::NotFound)?;
    let record = state
        .store
        .proposal(id)
        .await?
        .filter(|p| p.agent == agent.0)
        .ok_or(ApiError::NotFound)?;
    let command = state.store.command_for_proposal(id).await?;
    Ok(Json(
        json!({ "proposal": ProposalView::new(record, command) }),
    ))
}
