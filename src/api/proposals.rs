//! `POST /api/v1/proposals` (submit), `GET /api/v1/proposals/{id}` (poll, or wait with
//! `?wait=SECONDS`, 0..60) and `GET /api/v1/proposals/{id}/events` (a server-sent-events stream
//! of status changes that ends after the final status), for agents. A waiting request holds
//! one of its token's waiting places ([`super::limits`]) until it answers.

use crate::domain::principal::Principal;
use std::convert::Infallible;
use std::time::Duration;

use axum::Json;
use axum::extract::{RawQuery, State};
use axum::http::StatusCode;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures_util::StreamExt;
use futures_util::stream::{self, Stream};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use uuid::Uuid;

use super::ApiState;
use super::error::ApiError;
use super::extract::{Agent, JsonBody, PathId};
use super::openapi::{ErrorBody, ProposalAnswer, ToolProposalBody};
use super::views::{AgentProposal, ProposalEnvelope};
use crate::domain::lifecycle::{ProposalStatus, status_at};
use crate::service::{AgentView, MAX_WAIT, Services, Submitted};

pub fn router() -> OpenApiRouter<ApiState> {
    OpenApiRouter::new()
        .routes(routes!(submit))
        .routes(routes!(poll))
        .routes(routes!(events))
}

/// Submits a tool proposal: `201` new, `200` replay of the same request.
///
/// The policy routes it at once: `accept` queues its command, `ask`/`defer` wait for
/// reviewers, `refuse` ends it; the answer carries the route and machine-readable blockers.
/// Resubmitting the same body with the same `idempotency_key` returns the original.
#[utoipa::path(
    post,
    path = "/proposals",
    tag = "agents",
    request_body(content = ToolProposalBody, content_type = "application/json"),
    responses(
        (status = 201, description = "Created and routed", body = ProposalAnswer),
        (status = 200, description = "The same request again: the original proposal", body = ProposalAnswer),
        (status = 400, description = "The body is not JSON", body = ErrorBody),
        (status = 401, description = "No valid agent token", body = ErrorBody),
        (status = 403, description = "`proposed_by` is another agent", body = ErrorBody),
        (status = 409, description = "The proposal id is taken", body = ErrorBody),
        (status = 413, description = "The body is over 256 KiB", body = ErrorBody),
        (status = 415, description = "The body is not `application/json`", body = ErrorBody),
        (status = 422, description = "The proposal breaks the contract, or its idempotency key was used for another request", body = ErrorBody),
    ),
    security(("agent_token" = []))
)]
#[tracing::instrument(skip_all, fields(agent = %agent.0))]
async fn submit(
    State(state): State<ApiState>,
    agent: Agent,
    JsonBody(body): JsonBody,
) -> Result<impl IntoResponse, ApiError> {
    let submitted = (state.services)
        .submit_with_token(&agent.0, Some(agent.1), &body)
        .await?;
    let (status, record) = match submitted {
        Submitted::Created(r) => (StatusCode::CREATED, r),
        Submitted::Replayed(r) => (StatusCode::OK, r),
    };
    // A new proposal has a command only when the policy accepted it outright; a replayed one
    // only once it was approved or accepted.
    let command = if record.status.may_have_command() {
        (state.services.agent_proposal(&agent.0, record.id).await?).1
    } else {
        None
    };
    let view = ProposalEnvelope::from(AgentProposal::new(record, command));
    Ok((status, Json(view)))
}

/// `wait` from the query string: whole seconds, 0..60; anything else names the field.
fn wait_of(query: Option<&str>) -> Result<Duration, ApiError> {
    // Digits need no percent-decoding; anything else is refused below.
    let wait = query
        .into_iter()
        .flat_map(|q| q.split('&'))
        .find_map(|pair| pair.strip_prefix("wait="));
    let Some(wait) = wait else {
        return Ok(Duration::ZERO);
    };
    match wait.parse::<u64>() {
        Ok(s) if s <= MAX_WAIT.as_secs() => Ok(Duration::from_secs(s)),
        _ => Err(ApiError::field(
            "wait",
            format!("must be whole seconds from 0 to {}", MAX_WAIT.as_secs()),
        )),
    }
}

fn proposal_id(id: &str) -> Result<Uuid, ApiError> {
    Uuid::parse_str(id).map_err(|_| ApiError::NotFound)
}

/// The agent's own proposal (any other id is `404`); with `?wait=N`, answered as soon as it is
/// past `pending` or its status changes, else after `N` seconds, unchanged.
#[utoipa::path(
    get,
    path = "/proposals/{id}",
    tag = "agents",
    params(
        ("id" = uuid::Uuid, Path, description = "The proposal's id"),
        ("wait" = Option<u32>, Query, minimum = 0, maximum = 60, description = "Seconds to wait for the status to change (0..60)"),
    ),
    responses(
        (status = 200, description = "The proposal (unchanged if the wait ended first)", body = ProposalAnswer),
        (status = 401, description = "No valid agent token", body = ErrorBody),
        (status = 404, description = "No such proposal of this agent's", body = ErrorBody),
        (status = 422, description = "`wait` is not whole seconds from 0 to 60", body = ErrorBody),
    ),
    security(("agent_token" = []))
)]
#[tracing::instrument(skip_all, fields(agent = %agent.0))]
async fn poll(
    State(state): State<ApiState>,
    agent: Agent,
    PathId(id): PathId,
    RawQuery(query): RawQuery,
) -> Result<impl IntoResponse, ApiError> {
    let id = proposal_id(&id)?;
    let wait = wait_of(query.as_deref())?;
    let _waiting = match wait.is_zero() {
        true => None,
        false => Some(state.limits.waiting_place(agent.1)?),
    };
    let (record, command) = state.services.await_proposal(&agent.0, id, wait).await?;
    Ok(Json(ProposalEnvelope::from(AgentProposal::new(
        record, command,
    ))))
}

/// Server-sent events: a `status` event with the proposal now, then one per status change;
/// the stream ends after a final status (`rejected`, `refused`, `expired`,
/// `changes_requested`, `withdrawn`, `succeeded`, `failed`).
#[utoipa::path(
    get,
    path = "/proposals/{id}/events",
    tag = "agents",
    params(("id" = uuid::Uuid, Path, description = "The proposal's id")),
    responses(
        (status = 200, description = "`text/event-stream`: one `status` event per status, data `{\"proposal\": …}`", content_type = "text/event-stream", body = String),
        (status = 401, description = "No valid agent token", body = ErrorBody),
        (status = 404, description = "No such proposal of this agent's", body = ErrorBody),
    ),
    security(("agent_token" = []))
)]
#[tracing::instrument(skip_all, fields(agent = %agent.0))]
async fn events(
    State(state): State<ApiState>,
    agent: Agent,
    PathId(id): PathId,
) -> Result<Response, ApiError> {
    let id = proposal_id(&id)?;
    let slot = state.limits.waiting_place(agent.1)?;
    let first = state.services.agent_proposal(&agent.0, id).await?;
    let stream = status_events(state.services.clone(), (agent.0, agent.1), id, first);
    // The stream holds its token's place among the waiting until it ends.
    let stream = stream.map(move |event| {
        let _held = &slot;
        event
    });
    Ok(Sse::new(stream)
        .keep_alive(KeepAlive::default())
        .into_response())
}

/// How long one stream waits for a change before it looks again (keep-alives flow meanwhile).
const STREAM_WAIT: Duration = Duration::from_secs(60);

enum Next {
    Send(Box<AgentView>),
    Watch(ProposalStatus),
    Done,
}

/// Proposal `id`'s status events for `agent`, who opened the stream with API token `token`:
/// one now, one per move, until a final status or the token's revocation (through this
/// instance or, on PostgreSQL, any other).
fn status_events(
    services: Services,
    (agent, token): (Principal, Uuid),
    id: Uuid,
    first: AgentView,
) -> impl Stream<Item = Result<Event, Infallible>> {
    let revocations = services.revocations();
    stream::unfold(Next::Send(Box::new(first)), move |next| {
        let (services, agent) = (services.clone(), agent.clone());
        let mut revocations = revocations.clone();
        async move {
            let mut next = next;
            loop {
                match next {
                    Next::Done => return None,
                    Next::Send(view) => {
                        let (record, command) = *view;
                        let status = status_at(record.status, record.expires_at, services.now());
                        let view = ProposalEnvelope::from(AgentProposal::new(record, command));
                        let data = match serde_json::to_string(&view) {
                            Ok(data) => data,
                            Err(e) => {
                                // Never an event an agent cannot parse: the stream ends.
                                tracing::error!(error = %e, "status event not serializable");
                                return None;
                            }
                        };
                        let event = Event::default().event("status").data(data);
                        let after = if status.is_final() {
                            Next::Done
                        } else {
                            Next::Watch(status)
                        };
                        return Some((Ok(event), after));
                    }
                    Next::Watch(seen) => {
                        let change = services.next_change(&agent, id, seen, STREAM_WAIT);
                        let changed = tokio::select! {
                            biased;
                            open = revocations.changed() => Err(open.is_ok()),
                            changed = change => Ok(changed),
                        };
                        let changed = match changed {
                            Ok(changed) => changed,
                            // A revocation somewhere: this stream's token may be the one (and
                            // with the revocations' channel gone, nothing would tell).
                            Err(open) => {
                                if !open || !services.stream_token_stands(token).await {
                                    return None;
                                }
                                next = Next::Watch(seen);
                                continue;
                            }
                        };
                        next = match changed {
                            Ok(Some(view)) => Next::Send(Box::new(view)),
                            Ok(None) => Next::Watch(seen),
                            Err(e) => {
                                tracing::warn!(error = %e, proposal.id = %id, "status stream ended");
                                Next::Done
                            }
                        };
                    }
                }
            }
        }
    })
}
