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
//! - On SQLite, every group ends on the writer's own thread: its events appended, their
//!   webhook targets read and (with nothing more to write) the commit, in one hand-off to
//!   sqlx's connection thread instead of one a statement ([`audit::append_inline`]); a group
//!   that only records events moving no proposal (pre-tool-checks) is begun there too
//!   ([`commit_events`], [`audit::append_and_commit`]).
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

use sqlx::{PgPool, SqlitePool};
use tokio::sync::{mpsc, oneshot};

use super::audit;
use super::audit::link::PendingEvent;
use super::changes::Changes;
use super::conn::BoxFuture;
use super::error::{Result, StorageError};
use super::wal;
use crate::audit::chain::Head;

mod gather;
mod staging;
mod stats;
pub mod tx;
pub mod upfront;
use gather::Gather;
use staging::stage;
pub use stats::WriterStats;
pub use tx::Tx;
use tx::{Committed, Failure, Held, Job, Runs};
use upfront::Staged;
pub use upfront::Upfront;

/// A change's closure: runs against a [`Tx`]; an `Err` leaves nothing of it behind.
pub(super) type Change<R, E> =
    Box<dyn for<'t> FnOnce(&'t mut Tx) -> BoxFuture<'t, Result<R, E>> + Send>;

/// A change that may run more than once: its only effects are its statements and what it
/// records, and every run starts from its own inputs.
pub(super) type Repeatable<R, E> =
    Box<dyn for<'t> Fn(&'t mut Tx) -> BoxFuture<'t, Result<R, E>> + Send>;

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

    fn finish(self: Box<Self>, failure: Option<&Failure>) {
        let answer = match (failure, self.outcome) {
            // A failed change keeps its own error even when the batch also failed.
            (_, Some(Err(e))) => Err(e),
            (None, Some(Ok(r))) => Ok(r),
            (Some(f), _) => Err(f.error().into()),
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

    fn finish(self: Box<Self>, failure: Option<&Failure>) {
        let answer = failure.map_or(Ok(()), |f| Err(f.error()));
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
    /// only record events) plans its statements generically (`plan_cache_mode`, which the
    /// writer's connection sets when it opens): such changes read and write by
    /// key, and lease through the index on queued commands in queue order, whose generic plans
    /// are their custom ones (the lease's, checked with `explain analyze` on 7,600 queued
    /// commands and no statistics: that index, in order, stopping at the leases asked for).
    /// Their statements read arrays (`unnest`), whose length a custom plan knows, so
    /// PostgreSQL's plan cache judged a custom plan cheaper every time and planned a success
    /// report's statement, or a lone lease's, afresh for every group (0.26 ms each, of a
    /// group's 1.5 ms). Other groups keep PostgreSQL's choice, set for their transaction in
    /// the same round trip as `begin`: a generic plan for the expiry sweep, for one, reads
    /// every pending proposal (benches/README.md, 2026-11-25).
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
                Some(Failure {
                    why: e.to_string(),
                    unavailable: e.is_unavailable(),
                })
            }
        };
        gather.committed(batch.len(), jobs.len());
        for job in batch.drain(..) {
            job.finish(failure.as_ref());
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
    if batch.iter().all(|job| job.runs() == Runs::Events) {
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
    let (commit, took) = (committed.commit, started.elapsed());
    tracing::debug!(
        changes = batch.len(),
        ?ran,
        ?commit,
        ?took,
        "group committed"
    );
    writer.stats.committed(&staged);
    writer.stats.timed(took, commit);
    Ok(writer.committed(held, committed))
}

/// A group whose changes only record events. When none of them moves a proposal (nothing to
/// wake, deliver or notify), the events are appended and committed on SQLite on the writer's
/// own thread ([`audit::append_and_commit`]), and on PostgreSQL in one statement outside a
/// transaction ([`audit::append_alone`]) once the writer knows the head (its commit, inside
/// that statement, is not timed apart); otherwise the group commits as any.
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
    let quiet = !events.is_empty()
        && tx.notices.is_empty()
        && events.iter().all(|e| e.moved_proposal().is_none());
    let (committed, held) = match (&mut tx.held, tx.head.take()) {
        (Held::Sqlite(c), known) if quiet => {
            let appended = events.len();
            let (head, took) = audit::append_and_commit(c, events, known).await?;
            writer.stats.appended(appended);
            let committed = Committed {
                head: Some(head),
                commit: Some(took),
                ..Committed::default()
            };
            (committed, tx.held)
        }
        (Held::Postgres(c), Some(known)) if quiet => {
            let head = audit::append_alone(c, events, known).await?;
            let committed = Committed {
                head: Some(head),
                ..Committed::default()
            };
            (committed, tx.held)
        }
        (_, known) => {
            tx.head = known;
            tx.events = events;
            tx.open(true).await?;
            tx.commit(changed).await?
        }
    };
    let (commit, took) = (committed.commit, started.elapsed());
    tracing::debug!(changes = batch.len(), ?commit, ?took, "group committed");
    writer.stats.timed(took, commit);
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
