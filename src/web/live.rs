//! Server-sent events that tell an open page something changed, so new proposals,
//! colleagues' decisions and expiries appear without a reload.
//!
//! - `GET /events/desk`, for the queue. Every state change appends to the audit chain, so the
//!   chain's head moving is the one signal, and reading it is one row (`audit_chain`). Each
//!   open queue's stream reads it every [`TICK`] and sends a `change` event when it moved; that
//!   works alike for changes made by this instance and by others on the same PostgreSQL.
//! - `GET /events/proposals/{id}?seen=STATUS`, for one proposal's page: a `change` event each
//!   time that proposal's status moves (a colleague's decision, its expiry, its command's
//!   outcome), woken by the commit itself as agents' waits are (on PostgreSQL also other
//!   instances' commits, by NOTIFY), and at once when the status differs from `seen`, the one
//!   the page shows (it moved before the stream opened, or while the browser reconnected). The chain's head would not do here: opening a GDPR or HIPAA proposal records
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
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use futures_util::stream::{self, Stream};

use app::dto::AppError;

use serde::Deserialize;
use uuid::Uuid;

use crate::domain::lifecycle::{ProposalStatus, status_at};
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

/// `?seen=STATUS`: the status the page shows; a stream opened after it moved says so at once.
#[derive(Debug, Deserialize)]
struct Seen {
    seen: Option<String>,
}

async fn proposal_events(
    State(services): State<Services>,
    Extension(session): Extension<SessionHandle>,
    Path(id): Path<String>,
    Query(Seen { seen }): Query<Seen>,
) -> Response {
    let viewer = match signed_in(&session).await {
        Ok(v) => v,
        Err(code) => return code.into_response(),
    };
    let Ok(uuid) = Uuid::parse_str(id.trim()) else {
        return StatusCode::NOT_FOUND.into_response();
    };
    // Watch first, then read: a change between the read and the stream is not missed.
    let watching = services.store().changes().watch(uuid);
    let p = match super::proposal::reviewable(&services, &viewer, &id).await {
        Ok((_, p)) => p,
        Err(AppError::Forbidden(_)) => return StatusCode::FORBIDDEN.into_response(),
        Err(AppError::NotFound) => return StatusCode::NOT_FOUND.into_response(),
        Err(_) => return StatusCode::INTERNAL_SERVER_ERROR.into_response(),
    };
    let now = status_at(p.status, p.expires_at, services.now());
    // The page rendered another status (it moved before the stream opened, or while the
    // browser reconnected): tell it at once.
    let behind = seen.is_some_and(|s| s != now.as_str());
    let moves = StatusMoves {
        services,
        id: uuid,
        watching,
        last: now,
        behind,
    };
    Sse::new(status_moves(moves))
        .keep_alive(KeepAlive::default())
        .into_response()
}

/// The viewer of a signed-in session, or the status to answer.
async fn signed_in(session: &SessionHandle) -> Result<app::dto::Viewer, StatusCode> {
    match session.0.viewer().await {
        Ok(Some(v)) => Ok(v),
        Ok(None) => Err(StatusCode::UNAUTHORIZED),
        Err(e) => {
            tracing::error!(error = %e, "reading the session failed");
            Err(StatusCode::INTERNAL_SERVER_ERROR)
        }
    }
}

/// One proposal page's stream: what it watches and the status it last told.
struct StatusMoves {
    services: Services,
    id: Uuid,
    watching: Watching,
    last: ProposalStatus,
    behind: bool,
}

/// A `change` event (data: the new status) each time the watched proposal's status moves
/// from the one last told; a wake-up that moved nothing (another instance's reconnect) sends
/// nothing.
fn status_moves(moves: StatusMoves) -> impl Stream<Item = Result<Event, Infallible>> {
    stream::unfold(moves, |mut m| async move {
        if std::mem::take(&mut m.behind) {
            return Some((Ok(change(m.last)), m));
        }
        loop {
            m.watching.changed().await;
            let status = match m.services.proposal(m.id).await {
                Ok(Some(p)) => status_at(p.status, p.expires_at, m.services.now()),
                Ok(None) => return None,
                Err(e) => {
                    tracing::warn!(error = %e, proposal.id = %m.id, "reading a watched proposal failed");
                    continue;
                }
            };
            if status != m.last {
                m.last = status;
                return Some((Ok(change(status)), m));
            }
        }
    })
}

fn change(status: ProposalStatus) -> Event {
    Event::default().event("change").data(status.as_str())
}

async fn events(
    State(services): State<Services>,
    Extension(session): Extension<SessionHandle>,
) -> Response {
    let viewer = match signed_in(&session).await {
        Ok(v) => v,
        Err(code) => return code.into_response(),
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
