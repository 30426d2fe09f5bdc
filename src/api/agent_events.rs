//! `GET /api/v1/events`: an agent's one event stream for all of its proposals (server-sent
//! events; the use case is [`Services::agent_events`]). It holds one of its token's waiting
//! places ([`super::limits`]) for as long as it is open.
//!
//! Events: `status`, with `id:` the proposal's id and data exactly the body
//! `GET /api/v1/proposals/{id}` answers (`{"proposal": …}`), for each of the agent's proposals
//! that may still move when the stream opens (the snapshot), then each time one of them moves;
//! `resync`, with data `{"reason": "snapshot_truncated" | "lagged" | "gap"}`, when the agent
//! should re-read the proposals it waits on. Keep-alive comments flow while idle.
//!
//! [`Services::agent_events`]: crate::service::Services::agent_events

use std::convert::Infallible;

use axum::extract::State;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures_util::StreamExt;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::ApiState;
use super::error::ApiError;
use super::extract::Agent;
use super::openapi::ErrorBody;
use super::views::{AgentProposal, ProposalEnvelope};
use crate::service::AgentEvent;

pub fn router() -> OpenApiRouter<ApiState> {
    OpenApiRouter::new().routes(routes!(agent_events))
}

/// Server-sent events for all of the agent's proposals: on open a `status` event for each one
/// not yet final (at most 500, oldest first), then one each time one of them moves (new ones
/// included). `resync` says to re-read: the snapshot was cut, or moves may have been missed.
#[utoipa::path(
    get,
    path = "/events",
    tag = "agents",
    responses(
        (status = 200, description = "`text/event-stream`: `status` events (`id:` the proposal's id, data `{\"proposal\": …}` as `GET /api/v1/proposals/{id}` answers it) and `resync` events (data `{\"reason\": \"snapshot_truncated\" | \"lagged\" | \"gap\"}`); the stream ends when the token is revoked", content_type = "text/event-stream", body = String),
        (status = 401, description = "No valid agent token", body = ErrorBody),
        (status = 403, description = "Not an agent token", body = ErrorBody),
    ),
    security(("agent_token" = []))
)]
#[tracing::instrument(skip_all, fields(agent = %agent.0))]
async fn agent_events(State(state): State<ApiState>, agent: Agent) -> Result<Response, ApiError> {
    let slot = state.limits.waiting_place(agent.1)?;
    let events = (state.services)
        .agent_events(&agent.0, agent.1, &state.agent_hub)
        .await?;
    // The stream holds its token's place among the waiting until it ends; an event that cannot
    // be written ends it (never one an agent cannot parse).
    let stream = events.scan(slot, |_held, event| {
        std::future::ready(sse_event(event).map(Ok::<_, Infallible>))
    });
    Ok(Sse::new(stream)
        .keep_alive(KeepAlive::default())
        .into_response())
}

/// The event as sent; `None` if it cannot be serialized.
fn sse_event(event: AgentEvent) -> Option<Event> {
    match event {
        AgentEvent::Status(view) => {
            let (record, command) = *view;
            let id = record.id.to_string();
            let body = ProposalEnvelope::from(AgentProposal::new(record, command));
            match serde_json::to_string(&body) {
                Ok(data) => Some(Event::default().event("status").id(id).data(data)),
                Err(e) => {
                    tracing::error!(error = %e, "status event not serializable");
                    None
                }
            }
        }
        AgentEvent::Resync(why) => {
            let data = serde_json::json!({ "reason": why.as_str() }).to_string();
            Some(Event::default().event("resync").data(data))
        }
    }
}
