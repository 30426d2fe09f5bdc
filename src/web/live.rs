//! Server-sent events that tell an open page something changed, so new proposals,
//! colleagues' decisions and expiries appear without a reload.
//!
//! - `GET /events/desk`, for the queue. Every state change appends to the audit chain, so the
//!   chain's head moving is the one signal, and reading it is one row (`audit_chain`). Each
//!   open queue's stream reads it every [`TICK`] and sends a `change` event when it moved; that
//!   works alike for changes made by this instance and by others on the same PostgreSQL.
//! - `GET /events/proposals/{id}`, for one proposal's page: a `change` event each time that
//!   proposal's status moves (a colleague's decision, its expiry, its command's outcome), woken
//!   by the commit itself as agents' waits are (on PostgreSQL also other instances' commits,
//!   by NOTIFY). The chain's head would not do here: opening a GDPR or HIPAA proposal records
//!   a view, which moves the head, so a page refetching on the head would loop. Only people
//!   who may open the proposal get its stream.
//!
//! The page refetches what it shows (at most once per event), and the server decides nothing
//! here: the streams carry no data beyond a seq.

use std::convert::Infallible;
use std::time::Duration;

use app::ports::SessionHandle;
use axum::Extension;
use axum::Router;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use futures_util::stream::{self, Stream};

use app::dto::AppError;

use crate::domain::principal::Role;
use crate::service::Services;
use crate::storage::changes::Watching;

/// How often a stream looks at the chain's head.
pub const TICK: Duration = Duration::from_secs(1);

/// The event route; it needs the session layer around it.
pub fn router(services: Services) -> Router {
    Router::new()
        .route("/events/desk", get(events))
        .route("/events/proposals/{id}", get(proposal_events))
        .with_state(services)
}

async fn proposal_events(
    State(services): State<Services>,
    Extension(session): Extension<SessionHandle>,
    Path(id): Path<String>,
) -> Response {
    let viewer = match session.0.viewer().await {
        Ok(Some(v)) => v,
        Ok(None) => return StatusCode::UNAUTHORIZED.into_response(),
        Err(e) => {
            tracing::error!(error = %e, "reading the session failed");
            return StatusCode::INTERNAL_SERVER_ERROR.into_response();
        }
    };
    let id = match super::proposal::reviewable(&services, &viewer, &id).await {
        Ok((_, p)) => p.id,
        Err(AppError::Forbidden(_)) => return StatusCode::FORBIDDEN.into_response(),
        Err(AppError::NotFound) => return StatusCode::NOT_FOUND.into_response(),
        Err(_) => return StatusCode::INTERNAL_SERVER_ERROR.into_response(),
    };
    let watching = services.store().changes().watch(id);
    Sse::new(status_moves(watching))
        .keep_alive(KeepAlive::default())
        .into_response()
}

/// A `change` event each time the watched proposal's status moves (its seq: how many moves
/// this stream has seen).
fn status_moves(watching: Watching) -> impl Stream<Item = Result<Event, Infallible>> {
    stream::unfold((watching, 0_u64), |(mut watching, seen)| async move {
        watching.changed().await;
        let seen = seen.wrapping_add(1);
        let event = Event::default().event("change").data(seen.to_string());
        Some((Ok(event), (watching, seen)))
    })
}

async fn events(
    State(services): State<Services>,
    Extension(session): Extension<SessionHandle>,
) -> Response {
    let viewer = match session.0.viewer().await {
        Ok(Some(v)) => v,
        Ok(None) => return StatusCode::UNAUTHORIZED.into_response(),
        Err(e) => {
            tracing::error!(error = %e, "reading the session failed");
            return StatusCode::INTERNAL_SERVER_ERROR.into_response();
        }
    };
    let role = super::role_of(&viewer);
    if !(role.can_view_proposals() || role == Role::Admin) {
        return StatusCode::FORBIDDEN.into_response();
    }
    Sse::new(changes(services))
        .keep_alive(KeepAlive::default())
        .into_response()
}

/// A `change` event each time the chain's head has moved since the last look.
fn changes(services: Services) -> impl Stream<Item = Result<Event, Infallible>> {
    stream::unfold((services, None::<i64>), |(services, mut seen)| async move {
        let mut tick = tokio::time::interval(TICK);
        loop {
            tick.tick().await;
            let head = match services.trail_head().await {
                Ok(seq) => seq,
                Err(e) => {
                    tracing::warn!(error = %e, "reading the chain head for live pages failed");
                    continue;
                }
            };
            match seen {
                Some(s) if s == head => {}
                Some(_) => {
                    let event = Event::default().event("change").data(head.to_string());
                    return Some((Ok(event), (services, Some(head))));
                }
                None => seen = Some(head),
            }
        }
    })
}
