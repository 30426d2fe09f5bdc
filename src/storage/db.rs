//! The connection plumbing under every statement: one [`Store`] handle over either backend,
//! read connections and snapshots, and the hand-over of changes to the writer
//! ([`super::writer`]), whose write transactions ([`Tx`]) collect the audit events of the
//! change they carry.
//!
//! ## One source of SQL for two backends
//!
//! Statements are ordinary functions taking a [`Conn`]; their body runs through [`on!`], a
//! two-arm `match` that expands the same sqlx expression once per backend. The expression
//! stays plain Rust that rustfmt formats and rust-analyzer reads (a generic function over
//! `sqlx::Database` needs a dozen higher-ranked bounds per statement; `sqlx::Any` cannot bind
//! UUIDs, times or JSON). Where the dialects differ, a statement picks its text with
//! [`Conn::pick`].
//!
//! ## The write path
//!
//! [`Store::write`] runs a change (a closure over a [`Tx`]) and commits it with the audit
//! events it recorded, or not at all: every change goes to one writer per instance, which
//! commits everything waiting in one transaction and answers each caller once it is durable
//! ([`super::writer`]).

use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use sqlx::migrate::{MigrateDatabase, Migrator};
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous};
use sqlx::{PgPool, Postgres, SqlitePool};
use tokio::sync::{mpsc, oneshot};

use super::audit;
use super::audit::link::PendingEvent;
use super::changes::Changes;
use super::conn::{Backend, BoxFuture, Conn, ReadConn, Snapshot, SnapshotInner, on};
use super::direct::gathered::{self, Gathered};
use super::direct::raw::DirectReads;
use super::error::{Result, StorageError};
use super::writer::tx::{Job, Tx};
use super::writer::upfront::Upfront;
use super::writer::{self, EventsJob, TypedJob, WritePool, stopped};
use super::{schema, wal};
use crate::audit::safe::Salt;
use crate::audit::{Actor, AuditEvent};
use crate::auth::session::{AnySessionStore, Hashed};

enum Engine {
    Sqlite {
        read: SqlitePool,
        direct: DirectReads,
        writer: mpsc::Sender<Box<dyn Job>>,
        /// The checkpoint task's requests to the writer (kept here for tests).
        #[cfg_attr(not(test), expect(dead_code))]
        rewind: Arc<wal::Rewind>,
    },
    Postgres {
        pool: PgPool,
        /// Agents' point reads, gathered ([`super::direct::gathered`]).
        gathered: Gathered,
        writer: mpsc::Sender<Box<dyn Job>>,
    },
}

impl Engine {
    fn writer(&self) -> &mpsc::Sender<Box<dyn Job>> {
        match self {
            Engine::Sqlite { writer, .. } | Engine::Postgres { writer, .. } => writer,
        }
    }
}

/// Countersign's database, on either backend. Cheap to clone.
#[derive(Clone)]
pub struct Store {
    engine: Arc<Engine>,
    salt: Arc<Salt>,
    changes: Arc<Changes>,
    writer_stats: Arc<writer::WriterStats>,
}

impl Store {
    /// The writer's running totals (proposal rows inserted together).
    pub fn writer_stats(&self) -> &writer::WriterStats {
        &self.writer_stats
    }

    /// Waiters on proposals, woken by each commit that moves one.
    pub fn changes(&self) -> &Arc<Changes> {
        &self.changes
    }

    /// The installation's key for the value hashes in audit rows.
    pub fn salt(&self) -> &Salt {
        &self.salt
    }

    /// Which backend this is.
    pub fn backend(&self) -> Backend {
        match *self.engine {
            Engine::Sqlite { .. } => Backend::Sqlite,
            Engine::Postgres { .. } => Backend::Postgres,
        }
    }

    /// A read connection.
    pub async fn read(&self) -> Result<ReadConn> {
        Ok(match &*self.engine {
            Engine::Sqlite { read, .. } => ReadConn::Sqlite(read.acquire().await?),
            Engine::Postgres { pool, .. } => ReadConn::Postgres(pool.acquire().await?),
        })
    }

    /// The read-only connections of the SQLite file for point reads on the caller's thread
    /// ([`super::direct`]); `None` on PostgreSQL.
    pub(super) fn direct_reads(&self) -> Option<&DirectReads> {
        match &*self.engine {
            Engine::Sqlite { direct, .. } => Some(direct),
            Engine::Postgres { .. } => None,
        }
    }

    /// Agents' point reads on PostgreSQL, gathered ([`super::direct::gathered`]); `None` on
    /// SQLite.
    pub(super) fn gathered_reads(&self) -> Option<&Gathered> {
        match &*self.engine {
            Engine::Postgres { gathered, .. } => Some(gathered),
            Engine::Sqlite { .. } => None,
        }
    }

    /// What the gathered point reads have done (PostgreSQL): reads answered and the
    /// statements that answered them; `None` on SQLite.
    pub fn gathered_counts(&self) -> Option<&gathered::Counts> {
        self.gathered_reads().map(Gathered::counts)
    }

    /// A read-only snapshot: every statement on it sees the database as of its first read.
    pub async fn snapshot(&self) -> Result<Snapshot> {
        let inner = match &*self.engine {
            Engine::Sqlite { read, .. } => SnapshotInner::Sqlite(read.begin_with("begin").await?),
            Engine::Postgres { pool, .. } => SnapshotInner::Postgres(
                pool.begin_with("begin isolation level repeatable read, read only")
                    .await?,
            ),
        };
        Ok(Snapshot { inner })
    }

    /// Runs `change` in a write transaction and commits it with the audit events it recorded;
    /// answers once the commit is durable. If `change` fails, nothing of it is written.
    pub async fn write<R, E, F>(&self, change: F) -> Result<R, E>
    where
        R: Send + 'static,
        E: From<StorageError> + Send + 'static,
        F: for<'t> FnOnce(&'t mut Tx) -> BoxFuture<'t, Result<R, E>> + Send + 'static,
    {
        self.hand_over(|reply| Box::new(TypedJob::new(Box::new(change), reply)))
            .await
    }

    /// As [`Store::write`], for a change that may run more than once: its only effects are
    /// its statements and what it records on the [`Tx`], and each run starts from what the
    /// closure holds (so it takes its inputs by reference or clones them). A group of such
    /// changes commits without a savepoint for each; should one fail, the writer runs the
    /// others again. (A log line written inside the change is written again on such a rerun;
    /// log outside it, after the write.)
    pub async fn write_repeatable<R, E, F>(&self, change: F) -> Result<R, E>
    where
        R: Send + 'static,
        E: From<StorageError> + Send + 'static,
        F: for<'t> Fn(&'t mut Tx) -> BoxFuture<'t, Result<R, E>> + Send + 'static,
    {
        self.hand_over(|reply| Box::new(TypedJob::repeatable(Box::new(change), reply)))
            .await
    }

    /// As [`Store::write_repeatable`], for a change that starts with `upfront` (inserting a
    /// proposal row, leasing a command, settling a success report): the writer may run it
    /// together with the same statement of the other changes in its group, and the change then
    /// finds what became of it ([`Tx::staged_proposal`], [`Tx::staged_claim`],
    /// [`Tx::staged_success`]) instead of running it (a few statements for a group's
    /// submissions, leases and reports, not one each).
    pub async fn write_staged<R, E, F>(&self, upfront: Upfront, change: F) -> Result<R, E>
    where
        R: Send + 'static,
        E: From<StorageError> + Send + 'static,
        F: for<'t> Fn(&'t mut Tx) -> BoxFuture<'t, Result<R, E>> + Send + 'static,
    {
        self.hand_over(|reply| Box::new(TypedJob::staged(upfront, Box::new(change), reply)))
            .await
    }

    /// Hands the writer the job `job` makes around where its answer goes, and waits for that
    /// answer.
    async fn hand_over<R, E>(
        &self,
        job: impl FnOnce(oneshot::Sender<Result<R, E>>) -> Box<dyn Job>,
    ) -> Result<R, E>
    where
        E: From<StorageError>,
    {
        let (reply, answer) = oneshot::channel();
        (self.engine.writer().send(job(reply)).await).map_err(|_| stopped())?;
        answer.await.map_err(|_| stopped())?
    }

    /// Writes audit events that change nothing else (a pre-tool-check, a rejected request);
    /// answers once they are durable.
    pub async fn record(
        &self,
        events: Vec<(time::OffsetDateTime, Actor, AuditEvent)>,
    ) -> Result<()> {
        let events = events
            .into_iter()
            .map(|(at, actor, event)| PendingEvent::new(at, actor, event))
            .collect();
        self.hand_over(|reply| Box::new(EventsJob::new(events, reply)))
            .await
    }

    /// Checks the database answers.
    pub async fn ping(&self) -> Result<()> {
        let mut c = self.read().await?;
        on!(c.conn(), |c| sqlx::query("select 1")
            .execute(c)
            .await
            .map(|_| ()))?;
        Ok(())
    }
}

/// The installation's salt: read it, or create it on the first start (two instances starting
/// at once store one; both read it back).
async fn load_salt(mut conn: Conn<'_>) -> Result<Salt> {
    if let Some(bytes) = audit::salt(conn.reborrow()).await? {
        return Salt::from_bytes(&bytes)
            .ok_or_else(|| StorageError::Corrupt("the audit salt is empty".into()));
    }
    audit::insert_salt(conn.reborrow(), &Salt::generate()).await?;
    let bytes = audit::salt(conn)
        .await?
        .ok_or_else(|| StorageError::Corrupt("the audit salt was not stored".into()))?;
    Salt::from_bytes(&bytes).ok_or_else(|| StorageError::Corrupt("the audit salt is empty".into()))
}

/// Connects to `url` (`sqlite://…` or `postgres://…`), creating the database if it is missing
/// and applying migrations. Returns the store and the session store for the same database.
pub async fn connect(url: &str) -> Result<(Store, AnySessionStore)> {
    if url.starts_with("sqlite:") {
        connect_sqlite(url, wal::Checkpointing::SERVING).await
    } else if url.starts_with("postgres:") || url.starts_with("postgresql:") {
        connect_postgres(url).await
    } else {
        Err(StorageError::Database(sqlx::Error::Configuration(
            "database URL must start with sqlite:// or postgres://".into(),
        )))
    }
}

/// SQLite, the embedded default: one file, created and migrated on first start. Writes go
/// through the one writer connection; reads use a small read-only pool. WAL with
/// `synchronous = full`: an acknowledged write survives `kill -9` and power loss.
async fn connect_sqlite(
    url: &str,
    checkpointing: wal::Checkpointing,
) -> Result<(Store, AnySessionStore)> {
    if url.contains(":memory:") || url.contains("mode=memory") {
        return Err(StorageError::Database(sqlx::Error::Configuration(
            "in-memory SQLite is not supported: give a file, e.g. sqlite://countersign.db".into(),
        )));
    }
    let options = SqliteConnectOptions::from_str(url)?
        .create_if_missing(true)
        .journal_mode(SqliteJournalMode::Wal)
        .synchronous(SqliteSynchronous::Full)
        .foreign_keys(true)
        .busy_timeout(Duration::from_secs(10))
        .pragma("mmap_size", super::direct::raw::MMAP_SIZE.to_string());
    let path = options.get_filename().to_owned();
    let (write, rewind) = sqlite_writer(&options, checkpointing).await?;
    // Sessions get their own connection: a sign-in must not wait behind a write batch.
    let session_pool = sqlite_pool()
        .max_connections(2)
        .connect_with(options.clone())
        .await?;
    let sessions = tower_sessions_sqlx_store::SqliteStore::new(session_pool);
    sessions.migrate().await?;
    let read = sqlite_pool()
        .max_connections(4)
        .connect_with(options.read_only(true))
        .await?;
    let salt = {
        let mut c = write.acquire().await?;
        load_salt(Conn::Sqlite(&mut c)).await?
    };
    // Each runtime worker runs one read at a time; a few more for the threads outside it.
    let workers = std::thread::available_parallelism().map_or(4, std::num::NonZero::get);
    let direct = DirectReads::open(&path, workers + 2)?;
    let changes = Arc::new(Changes::default());
    let writer_stats = Arc::default();
    let writer = writer::spawn(
        WritePool::Sqlite(write, Arc::clone(&rewind)),
        Arc::clone(&changes),
        Arc::clone(&writer_stats),
    )?;
    let engine = Engine::Sqlite {
        read,
        direct,
        writer,
        rewind,
    };
    Ok((
        Store {
            engine: Arc::new(engine),
            salt: Arc::new(salt),
            changes,
            writer_stats,
        },
        AnySessionStore::Sqlite(Hashed::new(sessions)),
    ))
}

/// The SQLite writer's connection, migrated, and the task that checkpoints the WAL beside it.
/// The writer never checkpoints the WAL in its commits; the task on its own connection does,
/// and asks the writer to rewind a long log between two groups (see [`super::wal`]). The
/// writer's statement journals (each change's savepoint in a group) stay in memory: spilled
/// to a temporary file, they cost a file and hundreds of writes per group.
async fn sqlite_writer(
    options: &SqliteConnectOptions,
    checkpointing: wal::Checkpointing,
) -> Result<(SqlitePool, Arc<wal::Rewind>)> {
    let limit = wal::WAL_SIZE_LIMIT.to_string();
    let write = sqlite_pool()
        .max_connections(1)
        .connect_with(
            options
                .clone()
                .pragma("wal_autocheckpoint", "0")
                .pragma("journal_size_limit", limit.clone())
                .pragma("temp_store", "memory"),
        )
        .await?;
    sqlx::migrate!("./migrations/sqlite").run(&write).await?;
    let checkpointer = sqlite_pool()
        .max_connections(1)
        .connect_with(options.clone().pragma("journal_size_limit", limit))
        .await?;
    let rewind = Arc::new(wal::Rewind::default());
    tokio::spawn(wal::checkpoint_task(
        checkpointer,
        Arc::clone(&rewind),
        checkpointing,
    ));
    Ok((write, rewind))
}

/// A pool of connections to the SQLite file. No ping before each acquire (sqlx's default): a
/// connection to a local file does not go stale, and the ping is one more hand-off to the
/// connection's thread on every read and every write batch.
fn sqlite_pool() -> SqlitePoolOptions {
    SqlitePoolOptions::new().test_before_acquire(false)
}

/// Countersign's PostgreSQL migrations.
static POSTGRES_MIGRATIONS: Migrator = sqlx::migrate!("./migrations/postgres");

/// Migrates the PostgreSQL schema and the session table, unless both are current: a serving
/// role without DDL rights ([`schema`]) starts on a current schema without touching it, and is
/// told to ask the owner when it is not.
async fn migrate_postgres_if_pending(
    pool: &PgPool,
    sessions: &tower_sessions_sqlx_store::PostgresStore,
) -> Result<()> {
    let mut conn = pool.acquire().await?;
    let applied = schema::applied_migrations(&mut conn).await?;
    let (pending, unknown) = schema::pending(&POSTGRES_MIGRATIONS, &applied);
    if pending == 0 && !unknown && schema::sessions_table_exists(&mut conn).await? {
        return Ok(());
    }
    drop(conn);
    let migrated = async {
        POSTGRES_MIGRATIONS.run(pool).await?;
        sessions.migrate().await?;
        Ok(())
    }
    .await;
    match migrated {
        Err(e) if schema::is_permission_denied(&e) => Err(StorageError::Privileges(format!(
            "the database schema is not current ({pending} migrations pending) and this role \
             may not migrate it ({e}): run `countersign migrate --database-url \
             postgres://OWNER@HOST/DB --grant-to ROLE` as the database's owner, then serve as \
             ROLE"
        ))),
        other => other,
    }
}

/// How long a PostgreSQL request waits for a connection before it fails: while the database
/// is down or unreachable, requests answer `503` within this (not sqlx's default 30 s), and the
/// balancer's health checks take the instance out.
const PG_ACQUIRE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(3);

/// A pooled PostgreSQL connection idle longer than this is pinged before it is lent.
const PG_PING_IDLE: Duration = Duration::from_secs(1);

/// PostgreSQL, for deployments that outgrow one machine: several Countersign instances can
/// share one database. The queue head is claimed with `for update skip locked`, so instances
/// never lease the same command.
async fn connect_postgres(url: &str) -> Result<(Store, AnySessionStore)> {
    if !Postgres::database_exists(url).await? {
        // Two instances starting at once may race here; the loser finds it created.
        if let Err(e) = Postgres::create_database(url).await
            && !Postgres::database_exists(url).await?
        {
            return Err(e.into());
        }
    }
    let options = PgConnectOptions::from_str(url)?;
    let pool = PgPoolOptions::new()
        .max_connections(16)
        .acquire_timeout(PG_ACQUIRE_TIMEOUT)
        // sqlx pings a connection before lending it (a round trip per read, on the request's
        // path) and again when it comes back (off it). Only one that sat idle is pinged here:
        // one in use within the last second is as alive as the answer it just read, and one
        // that broke meanwhile fails its read, is found broken when it comes back, and is
        // closed.
        .test_before_acquire(false)
        .before_acquire(|conn, meta| {
            Box::pin(async move {
                if meta.idle_for > PG_PING_IDLE {
                    sqlx::Connection::ping(conn).await?;
                }
                Ok(true)
            })
        })
        .connect_with(options.clone())
        .await?;
    let sessions = tower_sessions_sqlx_store::PostgresStore::new(pool.clone());
    migrate_postgres_if_pending(&pool, &sessions).await?;
    let salt = {
        let mut c = pool.acquire().await?;
        load_salt(Conn::Postgres(&mut c)).await?
    };
    let changes = Arc::new(Changes::default());
    // The writer's own connection, opened when the writer takes its first group. It plans
    // generically (`plan_cache_mode = force_generic_plan`), as the groups of changes that read
    // and write by key and the statement appending pre-tool-checks' events outside a
    // transaction want; every other group plans as PostgreSQL chooses, set for its
    // transaction (`writer::Writer::begin`): generic plans for every statement turned the
    // expiry sweep into a scan of every pending proposal (benches/README.md, 2026-11-25). Both
    // settings are the writer's own: they override any the server is configured with.
    //
    // Without bitmap scans: the lease ([`super::commands::claim_next`]) wants the oldest
    // queued commands, which the index on (status, seq) gives in order, stopping at the first
    // few. Where the statistics do not yet know how many commands are queued (a table never
    // analysed, or a burst since the last analysis) the planner expects a handful and reads
    // every queued row through a bitmap instead, then sorts them all: 8-10 ms a lease with
    // 3,300 queued, growing with the queue. The writer's other statements read by key or
    // through an index that holds just their rows (the sweeps' partial indexes, the queued
    // commands by status), which a plain index scan serves as well.
    let write = PgPoolOptions::new()
        .max_connections(1)
        .acquire_timeout(PG_ACQUIRE_TIMEOUT)
        .connect_lazy_with(options.options([
            ("enable_bitmapscan", "off"),
            ("plan_cache_mode", "force_generic_plan"),
        ]));
    let writer_stats = Arc::default();
    let writer = writer::spawn(
        WritePool::Postgres(write),
        Arc::clone(&changes),
        Arc::clone(&writer_stats),
    )?;
    let gathered = Gathered::start(&pool);
    Ok((
        Store {
            engine: Arc::new(Engine::Postgres {
                pool,
                gathered,
                writer,
            }),
            salt: Arc::new(salt),
            changes,
            writer_stats,
        },
        AnySessionStore::Postgres(Hashed::new(sessions)),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Frames in the log after `writes` changes through the store's writer, each of which lets
    /// a checkpoint on another connection copy what was committed before it while its own
    /// transaction is open (a writer that never stops, in slow motion); with `rewinding`, the
    /// writer is asked to rewind before each, as the checkpoint task asks it once the log is
    /// long. The store's own checkpoint task is held off for the test's length: a turn of it
    /// between two slow writes (a loaded machine) would copy everything and let the log start
    /// over by itself.
    async fn frames_after(writes: usize, rewinding: bool) -> i64 {
        let dir = tempfile::tempdir().expect("dir");
        let url = format!("sqlite://{}", dir.path().join("wal.db").display());
        let held_off = wal::Checkpointing {
            every: Duration::from_secs(3600),
            ..wal::Checkpointing::SERVING
        };
        let (store, _) = connect_sqlite(&url, held_off).await.expect("store");
        let side = SqlitePool::connect(&url).await.expect("side");
        let Engine::Sqlite { rewind, .. } = &*store.engine else {
            panic!("a SQLite store");
        };
        for _ in 0..writes {
            if rewinding {
                rewind.ask();
            }
            let side = side.clone();
            store
                .write(move |tx| -> BoxFuture<'_, Result<()>> {
                    Box::pin(async move {
                        let Conn::Sqlite(c) = tx.conn() else {
                            panic!("a SQLite connection");
                        };
                        sqlx::query("create table if not exists wal_test (x blob)")
                            .execute(&mut *c)
                            .await?;
                        sqlx::query("insert into wal_test values (zeroblob(3000))")
                            .execute(&mut *c)
                            .await?;
                        sqlx::query("pragma wal_checkpoint(passive)")
                            .execute(&side)
                            .await?;
                        Ok(())
                    })
                })
                .await
                .expect("write");
        }
        let (_, log, _): (i64, i64, i64) = sqlx::query_as("pragma wal_checkpoint(passive)")
            .fetch_one(&side)
            .await
            .expect("log");
        log
    }

    #[tokio::test]
    async fn the_writer_rewinds_the_log_when_asked() {
        let long = frames_after(40, false).await;
        let short = frames_after(40, true).await;
        assert!(
            long >= 80,
            "without rewinding the log only grows: {long} frames"
        );
        assert!(short < 40, "rewound before each group: {short} frames");
    }
}
