//! Server-sent events that tell an open page something changed, so new proposals,
//! colleagues' decisions and expiries appear without a reload.
//!
//! - `GET /events/desk`, for the queue. Every state change appends to the audit chain, so the
//!   chain's head moving is the one signal, and reading it is one row (`audit_chain`). One
//!   watcher per instance reads it every [`TICK`] while any queue listens, and fans it out (a
//!   `watch` channel) to every open queue's stream, which sends a `change` event when it
//!   moved; that works alike for changes made by this instance and by others on the same
//!   PostgreSQL. A stream reads the head once, when it opens (its starting point); after that
//!   an idle stream costs a receiver and its keep-alive comment, no read. With no stream open
//!   the watcher sleeps. The page passes `?seen=SEQ`, the head its rows were read at: a stream
//!   that opens at another head sends a `change` at once, so a move between the page's read
//!   and the stream's opening is not missed. Who may open it is the `queue.view` use case's
//!   answer.
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
//!
//! A session holds at most [`STREAMS_PER_SESSION`] streams at once (both kinds together); one
//! more is `429`, until one of them ends. Each stream ends after [`LIFETIME`]: the browser
//! reconnects by itself, and the reconnection is let in only if the session still may (signed
//! out, disabled or moved to another role or domain meanwhile, it is not).

use std::convert::Infallible;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use app::ports::SessionHandle;
use axum::Extension;
use axum::Router;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use futures_util::stream::{self, Stream, StreamExt};
use tokio::sync::{Notify, watch};
use tower_sessions::Session;
use tower_sessions::session::Id;

use app::dto::AppError;

use serde::Deserialize;
use uuid::Uuid;

use super::fn_status::status_for;
use crate::api::limits::{Place, Places};
use crate::domain::lifecycle::{ProposalStatus, status_at};
use crate::domain::principal::Principal;
use crate::service::Services;
use crate::service::Watching;

/// How often the watcher looks at the chain's head while a queue listens.
pub const TICK: Duration = Duration::from_secs(1);

/// Most event streams one session may hold open at once.
pub const STREAMS_PER_SESSION: u32 = 16;

/// The longest one stream stays open (its viewer's session and rights were checked when it
/// opened).
pub const LIFETIME: Duration = Duration::from_secs(600);

/// `events`, ended after [`LIFETIME`].
fn for_a_while<S: Stream>(events: S) -> impl Stream<Item = S::Item> {
    events.take_until(tokio::time::sleep(LIFETIME))
}

/// What the event routes share: one per instance.
#[derive(Clone)]
struct Live {
    services: Services,
    head: Arc<HeadWatch>,
    streams: Arc<Places<Id>>,
}

/// The event routes; they need the session layer around them.
pub fn router(services: Services) -> Router {
    let live = Live {
        services,
        head: Arc::new(HeadWatch {
            head: watch::Sender::new(None),
            wanted: Notify::new(),
            started: OnceLock::new(),
        }),
        streams: Arc::new(Places::new(STREAMS_PER_SESSION)),
    };
    Router::new()
        .route("/events/desk", get(events))
        .route("/events/proposals/{id}", get(proposal_events))
        .with_state(live)
}

/// The chain's head as last read (`None` before the first read), followed by one task for
/// all of an instance's desk streams.
struct HeadWatch {
    head: watch::Sender<Option<i64>>,
    /// Wakes the watcher when a stream subscribes.
    wanted: Notify,
    started: OnceLock<()>,
}

impl HeadWatch {
    /// A receiver of the head; starts the watcher on first use, and wakes it if it slept.
    fn subscribe(self: &Arc<Self>, services: &Services) -> watch::Receiver<Option<i64>> {
        let receiver = self.head.subscribe();
        self.started.get_or_init(|| {
            tokio::spawn(follow_head(Arc::clone(self), services.clone()));
        });
        self.wanted.notify_one();
        receiver
    }
}

/// Reads the head every [`TICK`] while any stream listens and tells them when it moved; with
/// none, sleeps until one subscribes.
async fn follow_head(watch: Arc<HeadWatch>, services: Services) {
    let mut tick = tokio::time::interval(TICK);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        if watch.head.receiver_count() == 0 {
            // A subscription since the count was read left a permit: this returns at once.
            watch.wanted.notified().await;
            continue;
        }
        tick.tick().await;
        match services.trail_head().await {
            Ok(seq) => {
                watch.head.send_if_modified(|head| {
                    let moved = *head != Some(seq);
                    *head = Some(seq);
                    moved
                });
            }
            Err(e) => tracing::warn!(error = %e, "reading the chain head for live pages failed"),
        }
    }
}

/// Why a stream was not opened.
enum NoPlace {
    /// The request has no session.
    NoSession,
    /// The session holds as many streams as it may.
    Full(u32),
}

impl IntoResponse for NoPlace {
    fn into_response(self) -> Response {
        match self {
            NoPlace::NoSession => StatusCode::UNAUTHORIZED.into_response(),
            NoPlace::Full(limit) => (
                StatusCode::TOO_MANY_REQUESTS,
                [(axum::http::header::RETRY_AFTER, "1")],
                format!(
                    "this session already has {limit} live streams open, as many as it may; \
                     close a page\n"
                ),
            )
                .into_response(),
        }
    }
}

/// A place for one more stream of `session`.
fn stream_place(live: &Live, session: &Session) -> Result<Place<Id>, NoPlace> {
    let id = session.id().ok_or(NoPlace::NoSession)?;
    live.streams.take(id).map_err(NoPlace::Full)
}

/// `?seen=STATUS`: the status the page shows; a stream opened after it moved says so at once.
#[derive(Debug, Deserialize)]
struct Seen {
    seen: Option<String>,
}

async fn proposal_events(
    State(live): State<Live>,
    Extension(session): Extension<SessionHandle>,
    Extension(cookie): Extension<Session>,
    Path(id): Path<String>,
    Query(Seen { seen }): Query<Seen>,
) -> Response {
    let viewer = match signed_in(&session).await {
        Ok(v) => v,
        Err(code) => return code.into_response(),
    };
    let services = live.services.clone();
    let Ok(uuid) = Uuid::parse_str(id.trim()) else {
        return StatusCode::NOT_FOUND.into_response();
    };
    // Watch first, then read: a change between the read and the stream is not missed.
    let watching = services.store().changes().watch(uuid);
    let (who, p) = match super::proposal::reviewable(&services, &viewer, &id).await {
        Ok(found) => found,
        Err(AppError::Forbidden(_)) => return StatusCode::FORBIDDEN.into_response(),
        Err(AppError::NotFound) => return StatusCode::NOT_FOUND.into_response(),
        Err(e) => return status_for(&e).into_response(),
    };
    let place = match stream_place(&live, &cookie) {
        Ok(place) => place,
        Err(refused) => return refused.into_response(),
    };
    let now = status_at(p.status, p.expires_at, services.now());
    // The page rendered another status (it moved before the stream opened, or while the
    // browser reconnected): tell it at once.
    let behind = seen.is_some_and(|s| s != now.as_str());
    let moves = StatusMoves {
        services,
        who,
        id: uuid,
        watching,
        last: now,
        behind,
        _place: place,
    };
    Sse::new(for_a_while(status_moves(moves)))
        .keep_alive(KeepAlive::default())
        .into_response()
}

/// The viewer of a signed-in session, or the status to answer.
async fn signed_in(session: &SessionHandle) -> Result<app::dto::Viewer, StatusCode> {
    match session.0.viewer().await {
        Ok(Some(v)) => Ok(v),
        Ok(None) => Err(StatusCode::UNAUTHORIZED),
        // Logged where it was made: the database not answering, or what failed.
        Err(e) => Err(status_for(&e)),
    }
}

/// One proposal page's stream: what it watches and the status it last told.
struct StatusMoves {
    services: Services,
    who: Principal,
    id: Uuid,
    watching: Watching,
    last: ProposalStatus,
    behind: bool,
    /// Held for as long as the stream is open.
    _place: Place<Id>,
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
            let status = match m.services.proposal(&m.who, m.id).await {
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

/// `?seen=SEQ`: the trail's head the queue page was read at; a stream opened after it moved
/// says so at once.
#[derive(Debug, Deserialize)]
struct SeenHead {
    seen: Option<i64>,
}

async fn events(
    State(live): State<Live>,
    Extension(session): Extension<SessionHandle>,
    Extension(cookie): Extension<Session>,
    Query(SeenHead { seen }): Query<SeenHead>,
) -> Response {
    let viewer = match signed_in(&session).await {
        Ok(v) => v,
        Err(code) => return code.into_response(),
    };
    let who = match super::principal(&live.services, &viewer).await {
        Ok(who) => who,
        Err(e) => return status_for(&e).into_response(),
    };
    // Subscribe first, then read this stream's own starting point: a move after the read is
    // told, whatever the watcher last read.
    let head = live.head.subscribe(&live.services);
    let now = match live.services.desk_position(&who).await {
        Ok(seq) => seq,
        // Denied: 403; the database not answering: 503.
        Err(e) => return status_for(&super::internal(e)).into_response(),
    };
    let place = match stream_place(&live, &cookie) {
        Ok(place) => place,
        Err(refused) => return refused.into_response(),
    };
    // The page was read at another head (the desk moved before the stream opened, or while
    // the browser reconnected): tell it at once.
    let behind = seen.is_some_and(|s| s != now);
    Sse::new(for_a_while(changes(head, now, behind, place)))
        .keep_alive(KeepAlive::default())
        .into_response()
}

/// A `change` event each time the watcher reads a head other than the one this stream last
/// told (at first: `seen`, read when it opened), and one at once when `behind`.
fn changes(
    head: watch::Receiver<Option<i64>>,
    seen: i64,
    behind: bool,
    place: Place<Id>,
) -> impl Stream<Item = Result<Event, Infallible>> {
    stream::unfold(
        (head, seen, behind, place),
        |(mut head, mut seen, behind, place)| async move {
            if behind {
                let event = Event::default().event("change").data(seen.to_string());
                return Some((Ok(event), (head, seen, false, place)));
            }
            loop {
                head.changed().await.ok()?;
                let now = *head.borrow_and_update();
                if let Some(n) = now.filter(|n| *n != seen) {
                    seen = n;
                    let event = Event::default().event("change").data(n.to_string());
                    return Some((Ok(event), (head, seen, false, place)));
                }
            }
        },
    )
}
