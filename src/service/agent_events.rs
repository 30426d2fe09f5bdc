//! An agent's event stream (`GET /api/v1/events`): one connection for all of its proposals
//! ([`Services::agent_events`]). On open, the agent's proposals that may still move (at most
//! [`SNAPSHOT_LIMIT`], oldest first), each as `GET /api/v1/proposals/{id}` answers it; then the
//! same each time one of them moves, new ones included, also when another instance on the same
//! PostgreSQL commits the move.
//!
//! Cost: one watcher per instance ([`AgentHub`]), started by the first stream, not a read per
//! stream per change. It follows every committed move
//! ([`crate::storage::changes::Changes::moves`]), reads which agent each moved proposal belongs
//! to (one statement per wake, whatever the number of moves and streams), and tells only that
//! agent's streams, each of which then reads its agent's view of that proposal through the
//! agent's own use case (`proposal.read_own`). An idle stream costs a receiver; once no stream
//! is open the watcher stops (at the next move).
//!
//! Nothing is missed silently: when the watcher or a stream falls behind (a bounded backlog
//! overflowed), or this instance may have missed other instances' moves (its PostgreSQL
//! listener reconnected), or the snapshot was cut at its bound, the stream says so
//! ([`AgentEvent::Resync`]) and the agent re-reads the proposals it waits on. The stream ends
//! when its token is revoked (through this instance or, on PostgreSQL, any other), or when a
//! read fails (a reconnect opens a new snapshot).

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, PoisonError};

use futures_util::stream::{self, Stream};
use tokio::sync::broadcast::{self, error::RecvError, error::TryRecvError};
use tokio::sync::watch;
use uuid::Uuid;

use super::error::ServiceError;
use super::services::Services;
use super::wait::AgentView;
use crate::domain::access::UseCase;
use crate::domain::lifecycle::ProposalStatus;
use crate::domain::principal::Principal;
use crate::storage::agent_stream;
use crate::storage::changes::Move;

/// Most proposals an opening stream reports (the oldest of the agent's proposals that may
/// still move); past it the snapshot ends with [`Resync::Truncated`].
pub const SNAPSHOT_LIMIT: usize = 500;

/// Moves held for one agent's streams that they have not sent yet; past it a stream says
/// [`Resync::Lagged`].
pub const AGENT_BACKLOG: usize = 256;

/// Most moved ids the watcher maps to their agents in one read.
const BATCH: usize = 512;

/// Most proposals a stream remembers the last sent status of (to send a move once).
const REMEMBERED: usize = 4096;

/// Why an agent should re-read the proposals it waits on (`GET /api/v1/proposals/{id}`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resync {
    /// The agent has more proposals that may move than the snapshot holds.
    Truncated,
    /// This stream, or this instance's watcher, fell behind: some moves were not told.
    Lagged,
    /// This instance may have missed other instances' moves (its listener reconnected).
    Gap,
}

impl Resync {
    /// The reason, as the `resync` event names it.
    pub fn as_str(self) -> &'static str {
        match self {
            Resync::Truncated => "snapshot_truncated",
            Resync::Lagged => "lagged",
            Resync::Gap => "gap",
        }
    }
}

/// What an agent's stream tells it.
pub enum AgentEvent {
    /// One of its proposals, as it stands (in the snapshot, or after it moved).
    Status(Box<AgentView>),
    /// Re-read the proposals you wait on: this stream cannot vouch that it told every move.
    Resync(Resync),
}

/// What the watcher tells an agent's streams.
#[derive(Debug, Clone, Copy)]
enum Tell {
    Moved(Uuid),
    Resync(Resync),
}

/// One instance's watcher of every proposal move, and the agents whose streams it tells.
#[derive(Default)]
pub struct AgentHub {
    state: Mutex<HubState>,
}

#[derive(Default)]
struct HubState {
    /// Each agent with a stream open here, and the channel its streams hear.
    agents: HashMap<String, broadcast::Sender<Tell>>,
    /// Whether the watcher runs (it holds a subscription to every move while it does).
    running: bool,
}

impl AgentHub {
    /// A receiver of `agent`'s moves from now on; starts the watcher, subscribed to every move
    /// before this returns, if it is not running.
    fn subscribe(self: &Arc<Self>, agent: &str, services: &Services) -> broadcast::Receiver<Tell> {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let receiver = state
            .agents
            .entry(agent.to_owned())
            .or_insert_with(|| broadcast::Sender::new(AGENT_BACKLOG))
            .subscribe();
        if !state.running {
            state.running = true;
            let moves = services.store().changes().moves();
            tokio::spawn(follow_moves(Arc::clone(self), services.clone(), moves));
        }
        receiver
    }

    /// Forgets agents without a stream; `false` when none is left (the watcher then stops, and
    /// the next stream starts it again).
    fn keep_going(&self) -> bool {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        state.agents.retain(|_, s| s.receiver_count() > 0);
        state.running = !state.agents.is_empty();
        state.running
    }

    fn tell_all(&self, tell: Tell) {
        let state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        for sender in state.agents.values() {
            // Fails only when its last stream just closed: nobody to tell.
            let _ = sender.send(tell);
        }
    }

    fn tell_owners(&self, owners: Vec<(Uuid, String)>) {
        let state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        for (id, agent) in owners {
            if let Some(sender) = state.agents.get(&agent) {
                let _ = sender.send(Tell::Moved(id));
            }
        }
    }
}

/// What one wake of the watcher collected.
#[derive(Default)]
struct Batch {
    ids: Vec<Uuid>,
    resync: Option<Resync>,
}

impl Batch {
    /// Adds what was heard; `false` when nothing more will be (the store is gone).
    fn add(&mut self, heard: Result<Move, RecvError>) -> bool {
        match heard {
            Ok(Move::Proposal(id)) => self.ids.push(id),
            Ok(Move::Gap) => self.resync = Some(Resync::Gap),
            Err(RecvError::Lagged(_)) => self.resync = Some(Resync::Lagged),
            Err(RecvError::Closed) => return false,
        }
        true
    }
}

/// The watcher: waits for moves, takes what else is already there (up to [`BATCH`]), reads
/// their agents in one statement and tells those agents' streams; stops once no stream is
/// left.
async fn follow_moves(
    hub: Arc<AgentHub>,
    services: Services,
    mut moves: broadcast::Receiver<Move>,
) {
    loop {
        let mut batch = Batch::default();
        if !batch.add(moves.recv().await) {
            return;
        }
        while batch.ids.len() < BATCH {
            let heard = match moves.try_recv() {
                Ok(m) => Ok(m),
                Err(TryRecvError::Empty) => break,
                Err(TryRecvError::Lagged(n)) => Err(RecvError::Lagged(n)),
                Err(TryRecvError::Closed) => Err(RecvError::Closed),
            };
            if !batch.add(heard) {
                return;
            }
        }
        if !hub.keep_going() {
            return;
        }
        if let Some(why) = batch.resync {
            hub.tell_all(Tell::Resync(why));
        }
        batch.ids.sort_unstable();
        batch.ids.dedup();
        match services.moved_owners(&batch.ids).await {
            Ok(owners) => hub.tell_owners(owners),
            Err(e) => {
                tracing::warn!(error = %e, "reading the agents of moved proposals failed");
                hub.tell_all(Tell::Resync(Resync::Lagged));
            }
        }
    }
}

/// One open stream: what it still has to send, what it hears, and what it last sent.
struct Feed {
    services: Services,
    who: Principal,
    token: Uuid,
    snapshot: VecDeque<Uuid>,
    truncated: bool,
    tells: broadcast::Receiver<Tell>,
    revocations: watch::Receiver<u64>,
    /// Each proposal's status as last sent: a move is sent once, however many wakes tell it.
    sent: HashMap<Uuid, ProposalStatus>,
    ended: bool,
}

/// What woke a stream waiting for its next event.
enum Woke {
    Revocation(bool),
    Tell(Result<Tell, RecvError>),
}

impl Services {
    /// Agent `who`'s event stream: the snapshot, then each move of its proposals (see the
    /// module's documentation); `token` is the id of the API token it presented, and the
    /// stream ends once that token is revoked. The snapshot's ids are read when this is
    /// called, after the stream has subscribed to moves, so a move in between is not missed.
    pub async fn agent_events(
        &self,
        who: &Principal,
        token: Uuid,
        hub: &Arc<AgentHub>,
    ) -> Result<impl Stream<Item = AgentEvent> + Send + 'static, ServiceError> {
        let agent = self.agent_of(who, UseCase::ReadOwnProposal)?;
        let revocations = self.revocations();
        let tells = hub.subscribe(agent, self);
        let limit = i64::try_from(SNAPSHOT_LIMIT).unwrap_or(i64::MAX);
        let mut read = self.read().await?;
        let mut snapshot = agent_stream::open_of_agent(read.conn(), agent, limit + 1).await?;
        let active = agent_stream::token_active(read.conn(), token).await?;
        drop(read);
        let truncated = snapshot.len() > SNAPSHOT_LIMIT;
        snapshot.truncate(SNAPSHOT_LIMIT);
        let feed = Feed {
            services: self.clone(),
            who: who.clone(),
            token,
            snapshot: snapshot.into(),
            truncated,
            tells,
            revocations,
            sent: HashMap::new(),
            ended: !active,
        };
        Ok(stream::unfold(feed, Feed::next))
    }

    /// The agent of each of the proposals `ids` (the watcher's one read per wake).
    async fn moved_owners(&self, ids: &[Uuid]) -> Result<Vec<(Uuid, String)>, ServiceError> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let mut read = self.read().await?;
        Ok(agent_stream::owners(read.conn(), ids).await?)
    }

    /// Whether the API token `id` still stands; a failed read says no (fail closed). A stream
    /// opened with it ends when it does not.
    pub async fn stream_token_stands(&self, id: Uuid) -> bool {
        let stands = async {
            let mut read = self.read().await?;
            Ok::<_, ServiceError>(agent_stream::token_active(read.conn(), id).await?)
        };
        stands.await.unwrap_or_else(|e| {
            tracing::warn!(error = %e, "reading an event stream's token failed");
            false
        })
    }
}

impl Feed {
    /// The next event: the snapshot's, then whatever the watcher tells; `None` ends the stream.
    async fn next(mut self) -> Option<(AgentEvent, Self)> {
        if self.ended {
            return None;
        }
        while let Some(id) = self.snapshot.pop_front() {
            if let Some(view) = self.fresh(id).await? {
                return Some((AgentEvent::Status(view), self));
            }
        }
        if std::mem::take(&mut self.truncated) {
            return Some((AgentEvent::Resync(Resync::Truncated), self));
        }
        loop {
            let woke = tokio::select! {
                biased;
                changed = self.revocations.changed() => Woke::Revocation(changed.is_ok()),
                tell = self.tells.recv() => Woke::Tell(tell),
            };
            let told = match woke {
                Woke::Revocation(open) => {
                    if !open || !self.services.stream_token_stands(self.token).await {
                        return None;
                    }
                    continue;
                }
                Woke::Tell(Ok(Tell::Moved(id))) => match self.fresh(id).await? {
                    Some(view) => AgentEvent::Status(view),
                    None => continue,
                },
                Woke::Tell(Ok(Tell::Resync(why))) => AgentEvent::Resync(why),
                Woke::Tell(Err(RecvError::Lagged(_))) => AgentEvent::Resync(Resync::Lagged),
                Woke::Tell(Err(RecvError::Closed)) => return None,
            };
            return Some((told, self));
        }
    }

    /// Proposal `id` as the agent sees it now, unless its status is the one last sent
    /// (`Some(None)`); `None` when the read failed (the stream ends).
    async fn fresh(&mut self, id: Uuid) -> Option<Option<Box<AgentView>>> {
        let view = match Box::pin(self.services.agent_proposal(&self.who, id)).await {
            Ok(view) => view,
            // Not (or no longer) the agent's: nothing to tell.
            Err(ServiceError::NotFound) => return Some(None),
            Err(e) => {
                tracing::warn!(error = %e, proposal.id = %id, "agent event stream ended");
                return None;
            }
        };
        let status = view.0.status;
        if self.sent.get(&id) == Some(&status) {
            return Some(None);
        }
        if self.sent.len() >= REMEMBERED {
            self.sent.retain(|_, s| !s.is_final());
            if self.sent.len() >= REMEMBERED {
                self.sent.clear();
            }
        }
        self.sent.insert(id, status);
        Some(Some(Box::new(view)))
    }
}
