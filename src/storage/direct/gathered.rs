//! PostgreSQL: agents' point reads gathered, the reads waiting at one moment answered by one
//! statement ([`super`]).
//!
//! A status read by id is one indexed lookup; what it costs is everything around that lookup:
//! a statement's round trip through the protocol (bind, execute, sync), a PostgreSQL backend
//! woken for it, and on the server a write, a wake-up and a read of the socket. On two cores
//! shared by the server, PostgreSQL and the load generator, that was about 90 µs of the
//! server's CPU and 60 µs of the database's a read (benches/README.md, thirty-first session).
//!
//! So the reads agents poll go to one reader task, on a connection of its own taken out of
//! the pool (sqlx's pool pings every connection it takes back, a round trip after each read).
//! It takes every read waiting (up to [`MOST_IDS`]) and answers them all from one statement
//! (`where id = any($1)`); the reads that arrive meanwhile wait for its next statement. One
//! read alone is answered at once, and under load each statement answers many. Each read
//! decodes its own row, on its own task: the reader only moves rows.
//!
//! One reader, because it served more reads, with a shorter tail, than several: measured on
//! two cores shared by the server, PostgreSQL and wrk (status reads of 100 proposals in turn
//! at 64 connections, 10 s, `release`), one reader read 24,845–26,358/s at p99 4.27–4.78 ms;
//! two 22,245–22,834/s at p99 5.77–6.42 ms; four 20,402–20,915/s at p99 9.58–12.09 ms; one
//! statement a read on four connections, as before, 15,029–16,385/s at p99 5.38–5.62 ms. More
//! statements in flight only queue on the cores, behind one another.
//!
//! Each read is answered by a statement that began after it was asked: what an agent reads
//! after its submission was acknowledged includes that submission.
//!
//! - A read that waits longer than a read waits for the pool (its acquire timeout) is answered
//!   unavailable (`503`), as the pool answers while the database does not.
//! - A statement that fails, or takes that long, closes its connection (the reader opens
//!   another for its next statement), and each of its reads is read again through the pool.
//!
//! The reader's connection is named `countersign point reads` in `pg_stat_activity`.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use prometheus::IntCounter;
use sqlx::postgres::PgRow;
use sqlx::{PgConnection, PgPool};
use tokio::sync::{mpsc, oneshot};
use uuid::Uuid;

use super::super::commands::CommandRecord;
use super::super::error::Result;
use super::super::proposals::{ProposalRecord, with_command};

/// A proposal by id and the command running it, or nothing when there is no such proposal.
pub(crate) type Found = Option<(ProposalRecord, Option<CommandRecord>)>;

/// The most reads one statement answers: every read of 64 connections at once.
pub const MOST_IDS: usize = 64;

/// The name the reader's connection carries in `pg_stat_activity`.
pub const APPLICATION_NAME: &str = "countersign point reads";

/// A read waiting for a reader: the proposal's id, and where its answer goes: its row (none
/// if there is no such proposal), or `None` if its statement failed (read it through the pool).
/// Each read decodes its own row, on its own task.
struct Ask {
    id: Uuid,
    answer: oneshot::Sender<Option<Option<Arc<PgRow>>>>,
}

/// What the reader has done since the server started.
#[derive(Debug, Default)]
pub struct Counts {
    reads: AtomicU64,
    statements: AtomicU64,
    /// `/metrics`' counters of the same, (reads, statements), once the service layer gave them.
    metrics: OnceLock<(IntCounter, IntCounter)>,
}

impl Counts {
    /// Counts into `reads` and `statements` too (`/metrics`), from now on.
    pub fn count_into(&self, reads: IntCounter, statements: IntCounter) {
        let _ = self.metrics.set((reads, statements));
    }

    /// A statement answered `reads` reads.
    fn answered(&self, reads: u64) {
        self.statements.fetch_add(1, Ordering::Relaxed);
        self.reads.fetch_add(reads, Ordering::Relaxed);
        if let Some((counted, statements)) = self.metrics.get() {
            statements.inc();
            counted.inc_by(reads);
        }
    }

    /// Reads answered by a statement (not those read again through the pool).
    pub fn reads(&self) -> u64 {
        self.reads.load(Ordering::Relaxed)
    }

    /// Statements that answered them.
    pub fn statements(&self) -> u64 {
        self.statements.load(Ordering::Relaxed)
    }
}

/// The way in to the reader. Dropped (with its store), the reader ends and closes its
/// connection.
pub(crate) struct Gathered {
    asks: mpsc::UnboundedSender<Ask>,
    counts: Arc<Counts>,
    /// How long a read waits for its answer: the pool's acquire timeout.
    wait: Duration,
}

impl Gathered {
    /// Starts the reader, on a connection taken out of `pool` for its first statement.
    pub(crate) fn start(pool: &PgPool) -> Self {
        let wait = pool.options().get_acquire_timeout();
        let counts = Arc::new(Counts::default());
        let (asks, waiting) = mpsc::unbounded_channel();
        let reader = Reader {
            pool: pool.clone(),
            conn: None,
            waiting,
            counts: Arc::clone(&counts),
            wait,
        };
        tokio::spawn(reader.run());
        Self { asks, counts, wait }
    }

    /// What the reader has done.
    pub(crate) fn counts(&self) -> &Counts {
        &self.counts
    }

    /// Proposal `id` and its command, read with the other reads waiting; `None` when its
    /// statement failed (read it through the pool); unavailable when no answer came within
    /// the pool's acquire timeout.
    pub(crate) async fn read(&self, id: Uuid) -> Result<Option<Found>> {
        let (answer, answered) = oneshot::channel();
        if self.asks.send(Ask { id, answer }).is_err() {
            // The reader ended (the runtime is going down): the pool answers.
            return Ok(None);
        }
        let row = match tokio::time::timeout(self.wait, answered).await {
            Ok(Ok(Some(row))) => row,
            Ok(Ok(None) | Err(_)) => return Ok(None),
            Err(_) => return Err(sqlx::Error::PoolTimedOut.into()),
        };
        let Some(row) = row else {
            return Ok(Some(None));
        };
        match with_command::decode(&row) {
            Ok(found) => Ok(Some(Some(found))),
            Err(e) => {
                tracing::warn!(error = %e, "a gathered row did not decode; reading it again");
                Ok(None)
            }
        }
    }
}

/// The reader: its connection (opened for its first statement, and again after one failed)
/// and the reads waiting.
struct Reader {
    pool: PgPool,
    conn: Option<PgConnection>,
    waiting: mpsc::UnboundedReceiver<Ask>,
    counts: Arc<Counts>,
    wait: Duration,
}

impl Reader {
    /// Takes the reads waiting and answers them, until the store is dropped.
    async fn run(mut self) {
        let mut asks = Vec::with_capacity(MOST_IDS);
        loop {
            let taken = self.waiting.recv_many(&mut asks, MOST_IDS).await;
            if taken == 0 {
                return;
            }
            // A read whose request was dropped meanwhile is not read.
            asks.retain(|ask| !ask.answer.is_closed());
            if asks.is_empty() {
                continue;
            }
            let mut ids: Vec<Uuid> = asks.iter().map(|ask| ask.id).collect();
            ids.sort_unstable();
            ids.dedup();
            match self.statement(&ids).await {
                Ok(rows) => {
                    self.counts.answered(asks.len() as u64);
                    for ask in asks.drain(..) {
                        let _ = ask.answer.send(Some(rows.get(&ask.id).cloned()));
                    }
                }
                Err(e) => {
                    let reads = asks.len();
                    tracing::warn!(error = %e, reads, "gathered point reads failed; reading again");
                    for ask in asks.drain(..) {
                        let _ = ask.answer.send(None);
                    }
                }
            }
        }
    }

    /// The rows of `ids`' proposals and their commands, by proposal, on the reader's
    /// connection (opened first if need be). A statement that fails or outlasts a read's wait
    /// closes the connection.
    async fn statement(&mut self, ids: &[Uuid]) -> Result<HashMap<Uuid, Arc<PgRow>>> {
        let conn = match self.conn.take() {
            Some(conn) => conn,
            None => open(&self.pool).await?,
        };
        let conn = self.conn.insert(conn);
        let read = with_command::rows_by_ids(conn, ids);
        let rows = match tokio::time::timeout(self.wait, read).await {
            Ok(Ok(rows)) => rows,
            Ok(Err(e)) => {
                self.conn = None;
                return Err(e);
            }
            Err(_) => {
                self.conn = None;
                return Err(sqlx::Error::PoolTimedOut.into());
            }
        };
        rows.into_iter()
            .map(|row| Ok((with_command::row_id(&row)?, Arc::new(row))))
            .collect()
    }
}

/// A new connection for the reader, taken out of `pool` and named.
async fn open(pool: &PgPool) -> Result<PgConnection> {
    let mut conn = pool.acquire().await?.detach();
    sqlx::query("select set_config('application_name', $1, false)")
        .bind(APPLICATION_NAME)
        .execute(&mut conn)
        .await?;
    Ok(conn)
}
