//! The one writer every change passes: group commit.
//!
//! [`super::Store::write`] hands a change (a closure over a [`Tx`]) to the writer, which takes
//! everything waiting, runs each change under its own savepoint inside one transaction,
//! appends all their audit events, commits once (one fsync) and only then answers each caller.
//! On SQLite that transaction is `begin immediate`; on PostgreSQL, each instance has one
//! writer, and instances are serialised where the audit trail's head is locked, so each
//! instance's group pays for that lock and its commit once.
//!
//! The writer is the one serial path, so every round trip it makes is latency for every change
//! waiting behind it. Three things keep them few:
//! - It keeps its connection from one group to the next, out of a transaction as it left it,
//!   instead of taking it from the pool and giving it back (sqlx pings a connection on every
//!   return to its pool: one more round trip per group).
//! - A change that only records events ([`super::Store::record`]) needs no savepoint, and
//!   neither does a group whose every change may run again
//!   ([`super::Store::write_repeatable`]): it runs straight, and should one of it fail, the
//!   writer rolls the group back and runs the rest again under savepoints, without the one
//!   that failed (whose failure stands: it saw the state the changes before it leave). In
//!   such a group, events-only records are appended after the changes' own events. A change
//!   whose failure is an answer rather than an error (a conflict that wrote nothing) should
//!   return it inside `Ok`, so the group is not run twice for it.
//! - On SQLite, a group that only records events moving no proposal (pre-tool-checks) is
//!   appended and committed on the writer's own thread, with no hand-off to sqlx's connection
//!   thread per statement ([`commit_events`], [`audit::append_and_commit`]).
//!
//! A group that starts smaller than the writer expects waits, a few hundred microseconds at
//! most, for the callers the last group answered to come back ([`gather`]): executors leasing
//! and reporting in a loop otherwise split into two groups of half the size, each paying a
//! whole commit.
//!
//! The writer runs on a thread of its own, with a single-threaded runtime: its every round trip
//! ends in a wake-up, which on the server's runtime waited in a worker's queue behind the
//! requests there. On SQLite (a round trip is a hand-off to sqlx's connection thread) that
//! measured the same either way; on PostgreSQL (a round trip per statement over the network)
//! proposal submissions at 64 connections went from 5,533 and 6,854/s (p99 23.0 and 14.0 ms)
//! to 7,839 and 8,433/s (p99 14.4 and 12.8 ms), alternating runs on fresh databases.

use std::sync::Arc;

use sqlx::pool::PoolConnection;
use sqlx::{PgPool, Postgres, Sqlite, SqlitePool};
use tokio::sync::{mpsc, oneshot};
use uuid::Uuid;

use super::audit::{self, PendingEvent};
use super::changes::Changes;
use super::commands::{self, Claimed, LeaseAsk, StagedClaims, StagedSettles, Success};
use super::db::{BoxFuture, Conn, on};
use super::{Result, StorageError};
use super::{notifications, proposals, wal, webhooks};
use crate::audit::chain::Head;
use crate::audit::{Actor, AuditEvent};

mod gather;
mod staging;
mod stats;
use gather::Gather;
use staging::stage;
pub use stats::WriterStats;

/// A write transaction: the statements of one change, and the audit events it records.
/// The events are appended to the trail when the transaction commits, in the same commit.
pub struct Tx {
    held: Held,
    events: Vec<PendingEvent>,
    notices: Vec<notifications::Notice>,
    /// The chain head as this writer last committed it, if it knows it ([`audit::append`]).
    head: Option<Head>,
    /// What the writer did up front for this group's changes ([`Upfront`]).
    staged: Staged,
}

/// What a writer did for its group's changes before running them ([`stage`]).
#[derive(Default)]
struct Staged {
    /// The proposal rows it inserted.
    proposals: Option<proposals::Staged>,
    /// The leases it took.
    claims: Option<StagedClaims>,
    /// The success reports it settled.
    settles: Option<StagedSettles>,
    /// Whether it settled them in a statement that (also) leased, whether or not it leased
    /// anything (PostgreSQL).
    together: bool,
}

impl Staged {
    /// Whether a lease or a settle made up front was not taken by its change.
    fn left_over(&self) -> bool {
        (self.claims.as_ref()).is_some_and(StagedClaims::left_over)
            || (self.settles.as_ref()).is_some_and(StagedSettles::left_over)
    }

    /// Whether the writer made `upfront` for its change (and the change has not yet run).
    fn holds(&self, upfront: &Upfront) -> bool {
        match upfront {
            Upfront::Proposal(row) => {
                (self.proposals.as_ref()).is_some_and(|staged| staged.outcome(row).is_some())
            }
            Upfront::Claim(ask) => (self.claims.as_ref()).is_some_and(|staged| staged.holds(ask)),
            Upfront::Success(report) | Upfront::SuccessThenClaim(report, _) => {
                (self.settles.as_ref()).is_some_and(|staged| staged.holds(report))
            }
        }
    }
}

/// A change's first statement, which the writer may run for all the changes of a group that
/// start so, together (a few statements for all of them), before it runs them
/// ([`super::Store::write_staged`]).
///
/// A change that starts so must read and write only by key (and lease through the index of
/// queued commands in queue order): a group of such changes is planned generically on
/// PostgreSQL ([`Writer::begin`]), and a generic plan for a range or a scan (an expiry sweep's)
/// can read a whole table.
pub enum Upfront {
    /// It inserts this proposal row first ([`Tx::staged_proposal`]).
    Proposal(Arc<proposals::NewProposal>),
    /// It leases a command first ([`Tx::staged_claim`]).
    Claim(Arc<LeaseAsk>),
    /// It settles a success report first ([`Tx::staged_success`]).
    Success(Arc<Success>),
    /// It settles a success report first and, only if that settles, leases the next command
    /// ([`Tx::staged_success`], then [`Tx::staged_claim`]): an executor's report that asks
    /// for its next command in the same request. The writer leases for it only once the
    /// group's reports are settled, and only if this one was.
    SuccessThenClaim(Arc<Success>, Arc<LeaseAsk>),
}

impl Upfront {
    fn proposal(&self) -> Option<&Arc<proposals::NewProposal>> {
        match self {
            Upfront::Proposal(row) => Some(row),
            _ => None,
        }
    }

    fn claim(&self) -> Option<&Arc<LeaseAsk>> {
        match self {
            Upfront::Claim(ask) => Some(ask),
            _ => None,
        }
    }

    fn success(&self) -> Option<&Arc<Success>> {
        match self {
            Upfront::Success(report) | Upfront::SuccessThenClaim(report, _) => Some(report),
            _ => None,
        }
    }

    /// A lease to take only if its report settles.
    fn claim_after(&self) -> Option<(&Arc<Success>, &Arc<LeaseAsk>)> {
        match self {
            Upfront::SuccessThenClaim(report, ask) => Some((report, ask)),
            _ => None,
        }
    }
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

    /// Opens the group's transaction on the connection held ([`Writer::begin`]).
    async fn open(&mut self, generic_plans: bool) -> Result<()> {
        let begin = match self.held {
            Held::Sqlite(_) => "begin immediate",
            Held::Postgres(_) if generic_plans => {
                "begin; set local plan_cache_mode = force_generic_plan"
            }
            Held::Postgres(_) => "begin",
        };
        self.execute(begin).await
    }

    /// Runs statements without parameters (several, separated by `;`), unprepared: PostgreSQL
    /// takes several statements only in its simple protocol.
    async fn execute(&mut self, sql: &'static str) -> Result<()> {
        self.held.execute(sql).await
    }

    /// Commits the change with its events, queueing the webhook deliveries and reviewers'
    /// notifications its status changes call for; answers what it changed (for waking, after)
    /// and the connection, out of its transaction.
    async fn commit(mut self, changed: &Changes) -> Result<(Committed, Held)> {
        let events = std::mem::take(&mut self.events);
        let notices = std::mem::take(&mut self.notices);
        let known = self.head.take();
        let audit::Appended {
            changes,
            head,
            targets,
        } = audit::append(&mut self, events, known).await?;
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
        let channels = changed.notify_channels();
        if !channels.is_empty() && (!changes.is_empty() || !notices.is_empty()) {
            committed.notifications =
                notifications::queue(self.conn(), channels, &changes, &notices).await?;
        }
        self.held.execute("commit").await?;
        Ok((committed, self.held))
    }

    /// Undoes everything; answers the connection, out of its transaction. (A rollback cannot
    /// move the chain head: the caller keeps the head this transaction knew.)
    async fn rollback(mut self) -> Result<Held> {
        self.held.execute("rollback").await?;
        Ok(self.held)
    }
}

/// The writer's connection. Taken from its pool marked to close when dropped, never to go
/// back: one dropped inside a transaction (a group that failed half-way) is closed, which
/// rolls the transaction back, and the writer takes a fresh one for its next group.
enum Held {
    Sqlite(PoolConnection<Sqlite>),
    Postgres(PoolConnection<Postgres>),
}

impl Held {
    fn conn(&mut self) -> Conn<'_> {
        match self {
            Held::Sqlite(c) => Conn::Sqlite(c),
            Held::Postgres(c) => Conn::Postgres(c),
        }
    }

    async fn execute(&mut self, sql: &'static str) -> Result<()> {
        on!(self.conn(), |c| sqlx::Executor::execute(c, sql)
            .await
            .map(|_| ()))?;
        Ok(())
    }
}

/// What a commit changed, for those waiting on it.
#[derive(Default)]
struct Committed {
    /// Proposals whose status moved.
    moved: Vec<Uuid>,
    /// Webhook deliveries queued.
    deliveries: usize,
    /// Reviewers' notifications queued.
    notifications: usize,
    /// The chain head the commit left, if known.
    head: Option<Head>,
}

/// A change's closure: runs against a [`Tx`]; an `Err` leaves nothing of it behind.
pub(super) type Change<R, E> =
    Box<dyn for<'t> FnOnce(&'t mut Tx) -> BoxFuture<'t, Result<R, E>> + Send>;

/// A change that may run more than once: its only effects are its statements and what it
/// records, and every run starts from its own inputs.
pub(super) type Repeatable<R, E> =
    Box<dyn for<'t> Fn(&'t mut Tx) -> BoxFuture<'t, Result<R, E>> + Send>;

/// What a job does, which decides how a group can run it.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Runs {
    /// Statements, once: a savepoint in a group undoes them if it fails.
    Once,
    /// Statements, and it may run again: a group of such runs without savepoints.
    Again,
    /// Only audit events: nothing to undo.
    Events,
}

/// A change waiting for the writer, its result type erased.
pub(super) trait Job: Send {
    /// Runs the change; `true` if it succeeded (and its writes should stay).
    fn run<'t>(&'t mut self, tx: &'t mut Tx) -> BoxFuture<'t, bool>;
    /// Answers the caller once the batch is durable (`None`) or failed.
    fn finish(self: Box<Self>, failure: Option<&str>);
    /// What the change does.
    fn runs(&self) -> Runs {
        Runs::Once
    }
    /// The statement the change starts with, if the writer may run it together with the
    /// same statement of the other changes in its group ([`stage`]).
    fn upfront(&self) -> Option<&Upfront> {
        None
    }
}

/// A change's closure, to run once or as often as a group needs.
enum Body<R, E> {
    Once(Option<Change<R, E>>),
    Again(Repeatable<R, E>),
}

/// A change and where its answer goes.
pub(super) struct TypedJob<R, E> {
    body: Body<R, E>,
    outcome: Option<Result<R, E>>,
    reply: oneshot::Sender<Result<R, E>>,
    /// The statement it starts with, which the writer may run for it.
    upfront: Option<Upfront>,
}

impl<R, E> TypedJob<R, E> {
    /// `change`, answering on `reply`.
    pub(super) fn new(change: Change<R, E>, reply: oneshot::Sender<Result<R, E>>) -> Self {
        Self::with(Body::Once(Some(change)), reply)
    }

    /// `change`, which may run more than once, answering on `reply`.
    pub(super) fn repeatable(
        change: Repeatable<R, E>,
        reply: oneshot::Sender<Result<R, E>>,
    ) -> Self {
        Self::with(Body::Again(change), reply)
    }

    /// `change`, which may run more than once and starts with `upfront` (unless the writer
    /// ran it: [`Tx::staged_proposal`], [`Tx::staged_claim`], [`Tx::staged_success`]),
    /// answering on `reply`.
    pub(super) fn staged(
        upfront: Upfront,
        change: Repeatable<R, E>,
        reply: oneshot::Sender<Result<R, E>>,
    ) -> Self {
        Self {
            upfront: Some(upfront),
            ..Self::with(Body::Again(change), reply)
        }
    }

    fn with(body: Body<R, E>, reply: oneshot::Sender<Result<R, E>>) -> Self {
        Self {
            body,
            outcome: None,
            reply,
            upfront: None,
        }
    }
}

impl<R: Send + 'static, E: From<StorageError> + Send + 'static> Job for TypedJob<R, E> {
    fn run<'t>(&'t mut self, tx: &'t mut Tx) -> BoxFuture<'t, bool> {
        Box::pin(async move {
            let outcome = match &mut self.body {
                Body::Once(change) => match change.take() {
                    Some(change) => change(tx).await,
                    None => return false,
                },
                Body::Again(change) => change(tx).await,
            };
            let ok = outcome.is_ok();
            self.outcome = Some(outcome);
            ok
        })
    }

    fn runs(&self) -> Runs {
        match self.body {
            Body::Once(_) => Runs::Once,
            Body::Again(_) => Runs::Again,
        }
    }

    fn upfront(&self) -> Option<&Upfront> {
        self.upfront.as_ref()
    }

    fn finish(self: Box<Self>, failure: Option<&str>) {
        let answer = match (failure, self.outcome) {
            // A failed change keeps its own error even when the batch also failed.
            (_, Some(Err(e))) => Err(e),
            (None, Some(Ok(r))) => Ok(r),
            (Some(why), _) => Err(StorageError::Batch(why.to_owned()).into()),
            (None, None) => Err(StorageError::Batch("the change never ran".into()).into()),
        };
        // The caller may have gone away (request cancelled); the change stands regardless.
        let _ = self.reply.send(answer);
    }
}

/// Audit events that change nothing else ([`super::Store::record`]): appended with the
/// group, no statement of their own, so no savepoint either.
pub(super) struct EventsJob {
    events: Vec<PendingEvent>,
    reply: oneshot::Sender<Result<()>>,
}

impl EventsJob {
    /// `events`, answering on `reply` once they are durable.
    pub(super) fn new(events: Vec<PendingEvent>, reply: oneshot::Sender<Result<()>>) -> Self {
        Self { events, reply }
    }
}

impl Job for EventsJob {
    fn run<'t>(&'t mut self, tx: &'t mut Tx) -> BoxFuture<'t, bool> {
        tx.events.append(&mut self.events);
        Box::pin(std::future::ready(true))
    }

    fn finish(self: Box<Self>, failure: Option<&str>) {
        let answer = failure.map_or(Ok(()), |why| Err(StorageError::Batch(why.to_owned())));
        // As for any change: the events stand even if the caller has gone away.
        let _ = self.reply.send(answer);
    }

    fn runs(&self) -> Runs {
        Runs::Events
    }
}

/// The writer task is gone (the server is shutting down).
pub(super) fn stopped() -> StorageError {
    StorageError::Batch("the writer has stopped".into())
}

/// Most changes one group transaction takes.
const MAX_BATCH: usize = 512;
/// How many changes may wait for the writer before callers wait to hand theirs over.
const WRITER_QUEUE: usize = 4_096;

/// Where the writer takes its connection from: a pool of its own, of one connection.
pub(super) enum WritePool {
    /// The SQLite file's write connection (`wal_autocheckpoint` off), and the checkpoint
    /// task's requests to rewind the log ([`wal`]).
    Sqlite(SqlitePool, Arc<wal::Rewind>),
    /// A PostgreSQL connection, opened when the writer first needs it.
    Postgres(PgPool),
}

/// The writer's state between groups: its pool, and the connection it keeps.
struct Writer {
    pool: WritePool,
    idle: Option<Held>,
    /// The chain head as the last group committed it.
    head: Option<Head>,
    /// Running totals.
    stats: Arc<WriterStats>,
}

impl Writer {
    /// Opens the group's transaction, on the connection kept from the last group or a fresh
    /// one. On SQLite `begin immediate` takes the write lock up front, so a CLI writing the
    /// same file waits (busy timeout) instead of failing to upgrade a read transaction.
    ///
    /// On PostgreSQL, a group of changes that each start with an [`Upfront`] statement (or
    /// only record events) plans its statements generically (`plan_cache_mode`, set in the
    /// same round trip as `begin`, for this transaction only): such changes read and write by
    /// key, and lease through the index on queued commands in queue order, whose generic plans
    /// are their custom ones (the lease's, checked with `explain analyze` on 7,600 queued
    /// commands and no statistics: that index, in order, stopping at the leases asked for).
    /// Their statements read arrays (`unnest`), whose length a custom plan knows, so
    /// PostgreSQL's plan cache judged a custom plan cheaper every time and planned a success
    /// report's statement, or a lone lease's, afresh for every group (0.26 ms each, of a
    /// group's 1.5 ms). Other groups keep PostgreSQL's choice: a generic
    /// plan for the expiry sweep, for one, reads every pending proposal (benches/README.md,
    /// 2026-11-25).
    async fn begin(&mut self, generic_plans: bool) -> Result<Tx> {
        let mut tx = self.hold().await?;
        tx.open(generic_plans).await?;
        Ok(tx)
    }

    /// The group's connection (kept from the last group, or a fresh one), no transaction open
    /// yet ([`Writer::begin`] opens one).
    async fn hold(&mut self) -> Result<Tx> {
        let mut held = match self.idle.take() {
            Some(held) => held,
            None => match &self.pool {
                WritePool::Sqlite(p, _) => Held::Sqlite(p.acquire().await?),
                WritePool::Postgres(p) => Held::Postgres(p.acquire().await?),
            },
        };
        if let (WritePool::Sqlite(_, rewind), Held::Sqlite(c)) = (&self.pool, &mut held)
            && rewind.take()
            && let Err(e) = wal::rewind(c).await
        {
            // The log stays long until the next request; the group goes on regardless.
            tracing::warn!(error = %e, "WAL rewind failed");
        }
        match &mut held {
            Held::Sqlite(c) => c.close_on_drop(),
            Held::Postgres(c) => c.close_on_drop(),
        }
        Ok(Tx {
            held,
            events: Vec::new(),
            notices: Vec::new(),
            head: self.head.take(),
            staged: Staged::default(),
        })
    }

    /// Keeps `held` for the next group and the head `committed` left; answers the rest.
    fn committed(&mut self, held: Held, mut committed: Committed) -> Committed {
        self.idle = Some(held);
        self.head = committed.head.take();
        committed
    }

    /// Rolls `tx` back and opens the group's transaction again, from before anything in it
    /// (the head stays the one the rolled-back transaction knew).
    async fn start_over(&mut self, mut tx: Tx) -> Result<Tx> {
        self.head = tx.head.take();
        self.idle = Some(tx.rollback().await?);
        self.begin(false).await
    }
}

/// Whether a group of `batch` plans generically on PostgreSQL ([`Writer::begin`]).
fn plans_generically(batch: &[Box<dyn Job>]) -> bool {
    (batch.iter()).all(|job| job.upfront().is_some() || job.runs() == Runs::Events)
}

/// Starts the writer; answers where to send it changes. It stops once every sender is gone.
pub(super) fn spawn(
    pool: WritePool,
    changes: Arc<Changes>,
    stats: Arc<WriterStats>,
) -> Result<mpsc::Sender<Box<dyn Job>>> {
    let (sender, jobs) = mpsc::channel(WRITER_QUEUE);
    let writer = Writer {
        pool,
        idle: None,
        head: None,
        stats,
    };
    // Its own runtime drives the I/O of the connections it opens (PostgreSQL's sockets); it
    // ends, and the thread with it, once every sender is gone.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    std::thread::Builder::new()
        .name("countersign-writer".into())
        .spawn(move || runtime.block_on(run(writer, jobs, changes)))?;
    Ok(sender)
}

/// The writer: commits changes in groups, one transaction (one fsync) per group, and wakes
/// the waiters of every proposal a group moved once it is durable. A group waits briefly for
/// the callers the last one answered ([`gather`]).
async fn run(mut writer: Writer, mut jobs: mpsc::Receiver<Box<dyn Job>>, changes: Arc<Changes>) {
    let mut batch: Vec<Box<dyn Job>> = Vec::with_capacity(MAX_BATCH);
    let mut gather = Gather::default();
    while gather.next(&mut jobs, &mut batch, MAX_BATCH).await > 0 {
        let failure = match commit_batch(&mut writer, &mut batch, &changes).await {
            Ok(committed) => {
                changes.proposals_changed(committed.moved);
                if committed.deliveries > 0 {
                    changes.deliveries_queued();
                }
                if committed.notifications > 0 {
                    changes.notifications_queued();
                }
                None
            }
            Err(e) => {
                tracing::error!(error = %e, changes = batch.len(), "write batch failed");
                Some(e.to_string())
            }
        };
        gather.committed(batch.len(), jobs.len());
        for job in batch.drain(..) {
            job.finish(failure.as_deref());
        }
    }
}

/// Runs one group and commits it; the writer keeps its connection only if the group ended
/// cleanly (committed or rolled back).
async fn commit_batch(
    writer: &mut Writer,
    batch: &mut [Box<dyn Job>],
    changed: &Changes,
) -> Result<Committed> {
    let started = std::time::Instant::now();
    if matches!(writer.pool, WritePool::Sqlite(..))
        && batch.iter().all(|job| job.runs() == Runs::Events)
    {
        return commit_events(writer, batch, changed, started).await;
    }
    let mut tx = writer.begin(plans_generically(batch)).await?;
    if let [only] = batch {
        // A batch of one needs no savepoint: its failure rolls the transaction back.
        if !only.run(&mut tx).await {
            writer.head = tx.head.take();
            writer.idle = Some(tx.rollback().await?);
            return Ok(Committed::default());
        }
    } else if batch.iter().all(|job| job.runs() != Runs::Once) {
        if let Err(e) = stage(&mut tx, batch).await {
            // A row the group's statement could not insert (or a lease or report the
            // statement could not make): start over without staging, so each change makes its
            // own and only the one at fault fails.
            tracing::warn!(error = %e, "a group's statement made together failed; one by one");
            tx = writer.start_over(tx).await?;
        }
        if let Some(failed) = run_straight(&mut tx, batch).await {
            // Start over from before the group, without the change that failed (and without
            // the rows staged for it and the others: the rollback undid them).
            tx = writer.start_over(tx).await?;
            run_under_savepoints(&mut tx, batch, Some(failed)).await?;
        }
    } else {
        run_under_savepoints(&mut tx, batch, None).await?;
    }
    let ran = started.elapsed();
    if tx.staged.left_over() {
        // Each change takes what was made up front for it; a lease or a settle no change
        // took would commit a command leased to nobody, or settled without its event.
        return Err(StorageError::Batch(
            "a lease or report made up front was not taken by its change".into(),
        ));
    }
    // A group that started over holds nothing staged (its transaction is a fresh one).
    let staged = std::mem::take(&mut tx.staged);
    let (committed, held) = tx.commit(changed).await?;
    tracing::debug!(changes = batch.len(), ?ran, took = ?started.elapsed(), "group committed");
    writer.stats.committed(&staged);
    Ok(writer.committed(held, committed))
}

/// SQLite: a group whose changes only record events. When none of them moves a proposal
/// (nothing to wake, deliver or notify), the events are appended and committed on the
/// writer's own thread ([`audit::append_and_commit`]); otherwise the group commits as any.
async fn commit_events(
    writer: &mut Writer,
    batch: &mut [Box<dyn Job>],
    changed: &Changes,
    started: std::time::Instant,
) -> Result<Committed> {
    let mut tx = writer.hold().await?;
    for job in batch.iter_mut() {
        job.run(&mut tx).await;
    }
    let events = std::mem::take(&mut tx.events);
    let (committed, held) = match tx.held {
        Held::Sqlite(ref mut c)
            if !events.is_empty()
                && tx.notices.is_empty()
                && events.iter().all(|e| e.moved_proposal().is_none()) =>
        {
            let appended = events.len();
            let head = audit::append_and_commit(c, events, tx.head.take()).await?;
            writer.stats.appended(appended);
            let committed = Committed {
                head: Some(head),
                ..Committed::default()
            };
            (committed, tx.held)
        }
        _ => {
            tx.events = events;
            tx.open(false).await?;
            tx.commit(changed).await?
        }
    };
    tracing::debug!(changes = batch.len(), took = ?started.elapsed(), "group committed");
    Ok(writer.committed(held, committed))
}

/// Runs a group of changes that may all run again, without savepoints: first those that run
/// statements, then, once they all succeeded, those that only record events (which so never
/// run twice). Of those that run statements, those whose first statement the writer made up
/// front ([`stage`]) run first: the others may see what those made (a report on a command a
/// staged report settled), so their events must follow. Answers the first that failed, if one
/// did; the transaction must then be rolled back.
async fn run_straight(tx: &mut Tx, batch: &mut [Box<dyn Job>]) -> Option<usize> {
    let staged: Vec<bool> = batch
        .iter()
        .map(|job| job.upfront().is_some_and(|u| tx.staged.holds(u)))
        .collect();
    for first in [true, false] {
        for (i, job) in batch.iter_mut().enumerate() {
            if staged[i] == first && job.runs() == Runs::Again && !job.run(tx).await {
                return Some(i);
            }
        }
    }
    for job in batch.iter_mut().filter(|job| job.runs() == Runs::Events) {
        job.run(tx).await;
    }
    None
}

/// Runs a group's changes but `skip` (one that already failed), each that runs statements
/// under its own savepoint, so a failed one (on PostgreSQL also a failed statement, which
/// would abort the whole transaction) rolls back alone. Releasing one and opening the next is
/// one round trip, not two, and a change that only records events opens none.
async fn run_under_savepoints(
    tx: &mut Tx,
    batch: &mut [Box<dyn Job>],
    skip: Option<usize>,
) -> Result<()> {
    let mut open = false;
    for (i, job) in batch.iter_mut().enumerate() {
        if Some(i) == skip {
            continue;
        }
        if job.runs() == Runs::Events {
            job.run(tx).await;
            continue;
        }
        tx.execute(if open {
            "release change; savepoint change"
        } else {
            "savepoint change"
        })
        .await?;
        open = true;
        let (events_before, notices_before) = (tx.events.len(), tx.notices.len());
        if !job.run(tx).await {
            tx.events.truncate(events_before);
            tx.notices.truncate(notices_before);
            tx.execute("rollback to change").await?;
        }
    }
    if open {
        tx.execute("release change").await?;
    }
    Ok(())
}
