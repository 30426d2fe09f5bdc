//! The write transaction a change runs in ([`Tx`]), the writer's connection under it, and the
//! jobs a group is made of ([`Job`]): what the writer ([`super`]) and its staging
//! ([`super::staging`]) both work on. Commit appends the audit events and queues the webhook
//! deliveries and notifications they call for.

use std::sync::Arc;
use std::time::{Duration, Instant};

use sqlx::pool::PoolConnection;
use sqlx::{Postgres, Sqlite};
use uuid::Uuid;

use super::upfront::{Staged, Upfront};
use crate::audit::chain::Head;
use crate::audit::{Actor, AuditEvent};
use crate::storage::audit;
use crate::storage::audit::link::PendingEvent;
use crate::storage::changes::Changes;
use crate::storage::commands::{self, Claimed, LeaseAsk, Success};
use crate::storage::conn::{BoxFuture, Conn, on};
use crate::storage::error::Result;
use crate::storage::error::StorageError;
use crate::storage::notifications;
use crate::storage::proposals;
use crate::storage::webhooks;

/// A write transaction: the statements of one change, and the audit events it records.
/// The events are appended to the trail when the transaction commits, in the same commit.
pub struct Tx {
    pub(super) held: Held,
    pub(super) events: Vec<PendingEvent>,
    pub(super) notices: Vec<notifications::Notice>,
    /// The chain head as this writer last committed it, if it knows it ([`audit::append`]).
    pub(super) head: Option<Head>,
    /// What the writer did up front for this group's changes ([`Upfront`]).
    pub(super) staged: Staged,
}

impl Tx {
    /// The connection, for a statement.
    pub fn conn(&mut self) -> Conn<'_> {
        match &mut self.held {
            Held::Sqlite(c) => Conn::Sqlite(c),
            Held::Postgres(c) => Conn::Postgres(c),
        }
    }

    /// Records an audit event; it is written with this transaction's commit, or never.
    pub fn record(&mut self, at: time::OffsetDateTime, actor: &Actor, event: AuditEvent) {
        self.events
            .push(PendingEvent::new(at, actor.clone(), event));
    }

    /// Records an audit event built before the write ([`PendingEvent::new`], on the request's
    /// own task rather than the writer's serial path); written with this commit, or never.
    pub fn record_built(&mut self, event: PendingEvent) {
        self.events.push(event);
    }

    /// The details of an event of `kind` about `subject_type` `subject_id` recorded on this
    /// transaction and not yet committed (by this change or an earlier one of its group), if
    /// there is one: a statement of the group sees the group's rows, but its events are
    /// appended only at commit.
    pub fn recorded(
        &self,
        kind: &str,
        subject_type: &str,
        subject_id: &str,
    ) -> Option<&serde_json::Value> {
        self.events
            .iter()
            .find_map(|e| e.details_of(kind, subject_type, subject_id))
    }

    /// What the writer already did about the proposal row `row` in this group:
    /// `Some(Some(seq))` inserted it at `seq`, `Some(None)` found its id or idempotency key
    /// taken (nothing written); `None` if it did not try, and the change inserts it itself.
    pub fn staged_proposal(&self, row: &Arc<proposals::NewProposal>) -> Option<Option<i64>> {
        (self.staged.proposals.as_ref()).and_then(|staged| staged.outcome(row))
    }

    /// The lease the writer took for `ask` in this group, once: `Some(Some(_))` the command it
    /// claimed, `Some(None)` nothing `ask` may run was queued; `None` if it did not try, and
    /// the change claims for itself ([`commands::claim_next`]).
    pub fn staged_claim(&mut self, ask: &Arc<LeaseAsk>) -> Option<Option<Claimed>> {
        (self.staged.claims.as_mut()).and_then(|staged| staged.take(ask))
    }

    /// What the writer's settling of `report` in this group did, once: `Some(Some(_))` it
    /// settled, `Some(None)` it did not (the change finds out why); `None` if it did not try,
    /// and the change settles it itself ([`commands::settle_succeeded`]).
    pub fn staged_success(
        &mut self,
        report: &Arc<Success>,
    ) -> Option<Option<commands::SettledSuccess>> {
        (self.staged.settles.as_mut()).and_then(|staged| staged.take(report))
    }

    /// Tells people something with this transaction's commit (on the channels configured), or
    /// never.
    pub fn notify(&mut self, notice: notifications::Notice) {
        self.notices.push(notice);
    }

    /// Opens the group's transaction on the connection held ([`super::Writer::begin`]).
    pub(super) async fn open(&mut self, generic_plans: bool) -> Result<()> {
        // The writer's PostgreSQL connection plans generically unless told otherwise
        // (`plan_cache_mode`, set where it is opened, `db::connect_postgres`).
        let begin = match self.held {
            Held::Sqlite(_) => "begin immediate",
            Held::Postgres(_) if generic_plans => "begin",
            Held::Postgres(_) => "begin; set local plan_cache_mode = auto",
        };
        self.execute(begin).await
    }

    /// Runs statements without parameters (several, separated by `;`), unprepared: PostgreSQL
    /// takes several statements only in its simple protocol.
    pub(super) async fn execute(&mut self, sql: &'static str) -> Result<()> {
        self.held.execute(sql).await
    }

    /// Commits the change with its events, queueing the webhook deliveries and reviewers'
    /// notifications its status changes call for; answers what it changed (for waking, after)
    /// and the connection, out of its transaction.
    pub(super) async fn commit(mut self, changed: &Changes) -> Result<(Committed, Held)> {
        let events = std::mem::take(&mut self.events);
        let notices = std::mem::take(&mut self.notices);
        let known = self.head.take();
        let channels = changed.notify_channels();
        let (appended, committed_here) = match &mut self.held {
            // SQLite: the events, their webhook targets and (with nothing more to write: no
            // targets, no channels) the commit, in one hand-off to sqlx's connection thread.
            Held::Sqlite(c) if !events.is_empty() => {
                let last = channels.is_empty();
                let inline = audit::append_inline(c, events, known, audit::Begin::Open, last);
                let inline = inline.await?;
                let appended = audit::Appended {
                    changes: inline.changes,
                    head: Some(inline.head),
                    targets: Some(inline.targets),
                };
                (appended, inline.commit)
            }
            _ => (audit::append(self.conn(), events, known).await?, None),
        };
        let audit::Appended {
            changes,
            head,
            targets,
        } = appended;
        let mut committed = Committed {
            head,
            ..Committed::default()
        };
        if !changes.is_empty() {
            committed.moved = changes.iter().map(|c| c.proposal).collect();
            // On PostgreSQL this (or the append, which then read the targets) also notifies
            // the waiters of other instances.
            committed.deliveries =
                webhooks::queue_status_changes(self.conn(), &changes, targets).await?;
        }
        if !channels.is_empty() && (!changes.is_empty() || !notices.is_empty()) {
            committed.notifications =
                notifications::queue(self.conn(), channels, &changes, &notices).await?;
        }
        committed.commit = match committed_here {
            Some(took) => Some(took),
            None => {
                let started = Instant::now();
                self.held.execute("commit").await?;
                Some(started.elapsed())
            }
        };
        Ok((committed, self.held))
    }

    /// Undoes everything; answers the connection, out of its transaction. (A rollback cannot
    /// move the chain head: the caller keeps the head this transaction knew.)
    pub(super) async fn rollback(mut self) -> Result<Held> {
        self.held.execute("rollback").await?;
        Ok(self.held)
    }
}

/// The writer's connection. Taken from its pool marked to close when dropped, never to go
/// back: one dropped inside a transaction (a group that failed half-way) is closed, which
/// rolls the transaction back, and the writer takes a fresh one for its next group.
pub(super) enum Held {
    /// SQLite.
    Sqlite(PoolConnection<Sqlite>),
    /// PostgreSQL.
    Postgres(PoolConnection<Postgres>),
}

impl Held {
    /// The connection, for a statement.
    fn conn(&mut self) -> Conn<'_> {
        match self {
            Held::Sqlite(c) => Conn::Sqlite(c),
            Held::Postgres(c) => Conn::Postgres(c),
        }
    }

    pub(super) async fn execute(&mut self, sql: &'static str) -> Result<()> {
        on!(self.conn(), |c| sqlx::Executor::execute(c, sql)
            .await
            .map(|_| ()))?;
        Ok(())
    }
}

/// What a commit changed, for those waiting on it.
#[derive(Default)]
pub(super) struct Committed {
    /// Proposals whose status moved.
    pub(super) moved: Vec<Uuid>,
    /// Webhook deliveries queued.
    pub(super) deliveries: usize,
    /// Reviewers' notifications queued.
    pub(super) notifications: usize,
    /// The chain head the commit left, if known.
    pub(super) head: Option<Head>,
    /// How long the `commit` statement took (the disk's flush, on either backend), if the
    /// group committed.
    pub(super) commit: Option<Duration>,
}

/// What a job does, which decides how a group can run it.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Runs {
    /// Statements, once: a savepoint in a group undoes them if it fails.
    Once,
    /// Statements, and it may run again: a group of such runs without savepoints.
    Again,
    /// Only audit events: nothing to undo.
    Events,
}

/// A change waiting for the writer, its result type erased.
pub(crate) trait Job: Send {
    /// Runs the change; `true` if it succeeded (and its writes should stay).
    fn run<'t>(&'t mut self, tx: &'t mut Tx) -> BoxFuture<'t, bool>;
    /// Answers the caller once the batch is durable (`None`) or failed.
    fn finish(self: Box<Self>, failure: Option<&Failure>);
    /// What the change does.
    fn runs(&self) -> Runs {
        Runs::Once
    }
    /// The statement the change starts with, if the writer may run it together with the
    /// same statement of the other changes in its group ([`super::staging::stage`]).
    fn upfront(&self) -> Option<&Upfront> {
        None
    }
}

/// Why a group failed, as each of its changes hears it.
pub(crate) struct Failure {
    pub(super) why: String,
    /// The database did not answer (the callers say `503`, not `500`).
    pub(super) unavailable: bool,
}

impl Failure {
    pub(super) fn error(&self) -> StorageError {
        match self.unavailable {
            true => StorageError::Unavailable(self.why.clone()),
            false => StorageError::Batch(self.why.clone()),
        }
    }
}
