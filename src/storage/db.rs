//! The connection plumbing under every statement: one [`Store`] handle over either backend,
//! read connections, write transactions ([`Tx`]) that collect the audit events of the change
//! they carry, and SQLite's single writer task with group commit.
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
//! events it recorded, or not at all. On SQLite every change goes to one writer task, which
//! takes everything waiting, runs each change under its own savepoint inside one `begin
//! immediate` transaction, appends all their events, commits once (one fsync) and only then
//! answers each caller. PostgreSQL works the same way, one writer task per instance on its own
//! connection: instances share the database and are serialised where the audit trail's head is
//! locked, so each instance's group pays for that lock and its commit once.

use std::future::Future;
use std::pin::Pin;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use sqlx::migrate::{MigrateDatabase, Migrator};
use sqlx::pool::PoolConnection;
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous};
use sqlx::{PgConnection, PgPool, Postgres, Sqlite, SqliteConnection, SqlitePool};
use tokio::sync::{mpsc, oneshot};
use uuid::Uuid;

use super::audit::{self, PendingEvent};
use super::changes::Changes;
use super::{Result, StorageError};
use super::{notifications, proposals, schema, webhooks};
use crate::audit::safe::Salt;
use crate::audit::{Actor, AuditEvent};
use crate::auth::session::AnySessionStore;

/// A boxed future, as write closures return.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Runs `$body` with `$c` bound to the backend's own connection type. See the module docs.
macro_rules! on {
    ($conn:expr, |$c:ident| $body:expr) => {
        match $conn {
            $crate::storage::db::Conn::Sqlite($c) => $body,
            $crate::storage::db::Conn::Postgres($c) => $body,
        }
    };
}
pub(crate) use on;

/// Which backend a store runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// SQLite file.
    Sqlite,
    /// PostgreSQL server.
    Postgres,
}

/// A borrowed connection on either backend; every statement function takes one.
pub enum Conn<'c> {
    /// SQLite.
    Sqlite(&'c mut SqliteConnection),
    /// PostgreSQL.
    Postgres(&'c mut PgConnection),
}

impl Conn<'_> {
    /// The same connection, borrowed again for one more statement.
    pub fn reborrow(&mut self) -> Conn<'_> {
        match self {
            Conn::Sqlite(c) => Conn::Sqlite(c),
            Conn::Postgres(c) => Conn::Postgres(c),
        }
    }

    /// The SQLite or the PostgreSQL text of a statement whose dialects differ.
    pub fn pick(&self, sqlite: &'static str, postgres: &'static str) -> &'static str {
        match self {
            Conn::Sqlite(_) => sqlite,
            Conn::Postgres(_) => postgres,
        }
    }
}

/// A pooled read connection.
pub enum ReadConn {
    /// SQLite (read-only pool).
    Sqlite(PoolConnection<Sqlite>),
    /// PostgreSQL.
    Postgres(PoolConnection<Postgres>),
}

impl ReadConn {
    /// The connection, for a statement.
    pub fn conn(&mut self) -> Conn<'_> {
        match self {
            ReadConn::Sqlite(c) => Conn::Sqlite(c),
            ReadConn::Postgres(c) => Conn::Postgres(c),
        }
    }
}

/// A read transaction: every statement on it reads one snapshot of the database, whatever is
/// committed meanwhile (for a walk over the whole audit trail that must agree with itself).
/// PostgreSQL: `repeatable read, read only`. SQLite: a deferred transaction on a read-only WAL
/// connection, whose first select fixes the snapshot until it ends.
pub struct Snapshot {
    inner: TxInner,
}

impl Snapshot {
    /// The connection, for a statement.
    pub fn conn(&mut self) -> Conn<'_> {
        match &mut self.inner {
            TxInner::Sqlite(t) => Conn::Sqlite(t),
            TxInner::Postgres(t) => Conn::Postgres(t),
        }
    }

    /// Ends the snapshot (it wrote nothing: rolled back).
    pub async fn end(self) -> Result<()> {
        match self.inner {
            TxInner::Sqlite(t) => t.rollback().await?,
            TxInner::Postgres(t) => t.rollback().await?,
        }
        Ok(())
    }
}

enum TxInner {
    Sqlite(sqlx::Transaction<'static, Sqlite>),
    Postgres(sqlx::Transaction<'static, Postgres>),
}

/// A write transaction: the statements of one change, and the audit events it records.
/// The events are appended to the trail when the transaction commits, in the same commit.
pub struct Tx {
    inner: TxInner,
    events: Vec<PendingEvent>,
    notices: Vec<notifications::Notice>,
}

impl Tx {
    /// The connection, for a statement.
    pub fn conn(&mut self) -> Conn<'_> {
        match &mut self.inner {
            TxInner::Sqlite(t) => Conn::Sqlite(t),
            TxInner::Postgres(t) => Conn::Postgres(t),
        }
    }

    /// Records an audit event; it is written with this transaction's commit, or never.
    pub fn record(&mut self, at: time::OffsetDateTime, actor: &Actor, event: AuditEvent) {
        self.events
            .push(PendingEvent::new(at, actor.clone(), event));
    }

    /// Tells people something with this transaction's commit (on the channels configured), or
    /// never.
    pub fn notify(&mut self, notice: notifications::Notice) {
        self.notices.push(notice);
    }

    /// Runs statements without parameters (several, separated by `;`), unprepared: PostgreSQL
    /// takes several statements only in its simple protocol.
    async fn execute(&mut self, sql: &'static str) -> Result<()> {
        on!(self.conn(), |c| sqlx::Executor::execute(c, sql)
            .await
            .map(|_| ()))?;
        Ok(())
    }

    /// Commits the change with its events, queueing the webhook deliveries and reviewers'
    /// notifications its status changes call for; answers what it changed (for waking, after).
    async fn commit(mut self, changed: &Changes) -> Result<Committed> {
        let events = std::mem::take(&mut self.events);
        let notices = std::mem::take(&mut self.notices);
        let changes = audit::append(&mut self, events).await?;
        let mut committed = Committed::default();
        if !changes.is_empty() {
            committed.moved = changes.iter().map(|c| c.proposal).collect();
            proposals::notify_changed(self.conn(), &committed.moved).await?;
            committed.deliveries = webhooks::queue_status_changes(self.conn(), &changes).await?;
        }
        let channels = changed.notify_channels();
        if !channels.is_empty() && (!changes.is_empty() || !notices.is_empty()) {
            committed.notifications =
                notifications::queue(self.conn(), channels, &changes, &notices).await?;
        }
        match self.inner {
            TxInner::Sqlite(t) => t.commit().await?,
            TxInner::Postgres(t) => t.commit().await?,
        }
        Ok(committed)
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
}

/// A change's closure: runs against a [`Tx`]; an `Err` leaves nothing of it behind.
type Change<R, E> = Box<dyn for<'t> FnOnce(&'t mut Tx) -> BoxFuture<'t, Result<R, E>> + Send>;

/// A change waiting for the writer, its result type erased.
trait Job: Send {
    /// Runs the change; `true` if it succeeded (and its writes should stay).
    fn run<'t>(&'t mut self, tx: &'t mut Tx) -> BoxFuture<'t, bool>;
    /// Answers the caller once the batch is durable (`None`) or failed.
    fn finish(self: Box<Self>, failure: Option<&str>);
}

struct TypedJob<R, E> {
    change: Option<Change<R, E>>,
    outcome: Option<Result<R, E>>,
    reply: oneshot::Sender<Result<R, E>>,
}

impl<R: Send + 'static, E: From<StorageError> + Send + 'static> Job for TypedJob<R, E> {
    fn run<'t>(&'t mut self, tx: &'t mut Tx) -> BoxFuture<'t, bool> {
        Box::pin(async move {
            let Some(change) = self.change.take() else {
                return false;
            };
            let outcome = change(tx).await;
            let ok = outcome.is_ok();
            self.outcome = Some(outcome);
            ok
        })
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

/// Most changes one group transaction takes.
const MAX_BATCH: usize = 512;
/// How many changes may wait for the writer before callers wait to hand theirs over.
const WRITER_QUEUE: usize = 4_096;

/// Where the writer takes its connection from.
#[derive(Clone)]
enum WritePool {
    Sqlite(SqlitePool),
    Postgres(PgPool),
}

impl WritePool {
    /// Opens the group's transaction. On SQLite `begin immediate` takes the write lock up
    /// front, so a CLI writing the same file waits (busy timeout) instead of failing to upgrade
    /// a read transaction.
    async fn begin(&self) -> Result<Tx> {
        let inner = match self {
            WritePool::Sqlite(p) => TxInner::Sqlite(p.begin_with("begin immediate").await?),
            WritePool::Postgres(p) => TxInner::Postgres(p.begin().await?),
        };
        Ok(Tx {
            inner,
            events: Vec::new(),
            notices: Vec::new(),
        })
    }
}

/// The writer: commits changes in groups, one transaction (one fsync) per group, and wakes
/// the waiters of every proposal a group moved once it is durable.
async fn run_writer(
    pool: WritePool,
    mut jobs: mpsc::Receiver<Box<dyn Job>>,
    changes: Arc<Changes>,
) {
    let mut batch: Vec<Box<dyn Job>> = Vec::with_capacity(MAX_BATCH);
    while jobs.recv_many(&mut batch, MAX_BATCH).await > 0 {
        let failure = match commit_batch(&pool, &mut batch, &changes).await {
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
        for job in batch.drain(..) {
            job.finish(failure.as_deref());
        }
    }
}

async fn commit_batch(
    pool: &WritePool,
    batch: &mut [Box<dyn Job>],
    changed: &Changes,
) -> Result<Committed> {
    let mut tx = pool.begin().await?;
    if let [only] = batch {
        // A batch of one needs no savepoint: its failure rolls the transaction back.
        if !only.run(&mut tx).await {
            return Ok(Committed::default());
        }
        return tx.commit(changed).await;
    }
    // Each change runs under its own savepoint, so a failed one (on PostgreSQL also a failed
    // statement, which would abort the whole transaction) rolls back alone. Releasing one and
    // opening the next is one round trip, not two: the writer is the one serial path every
    // change passes, so its statement count is its latency.
    tx.execute("savepoint change").await?;
    let last = batch.len() - 1;
    for (i, job) in batch.iter_mut().enumerate() {
        let (events_before, notices_before) = (tx.events.len(), tx.notices.len());
        let ok = job.run(&mut tx).await;
        if !ok {
            tx.events.truncate(events_before);
            tx.notices.truncate(notices_before);
            tx.execute("rollback to change").await?;
        }
        let next = if i == last {
            "release change"
        } else {
            "release change; savepoint change"
        };
        tx.execute(next).await?;
    }
    tx.commit(changed).await
}

enum Engine {
    Sqlite {
        read: SqlitePool,
        writer: mpsc::Sender<Box<dyn Job>>,
    },
    Postgres {
        pool: PgPool,
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
}

impl Store {
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

    /// A read-only snapshot: every statement on it sees the database as of its first read.
    pub async fn snapshot(&self) -> Result<Snapshot> {
        let inner = match &*self.engine {
            Engine::Sqlite { read, .. } => TxInner::Sqlite(read.begin_with("begin").await?),
            Engine::Postgres { pool, .. } => TxInner::Postgres(
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
        let (reply, answer) = oneshot::channel();
        let job = TypedJob {
            change: Some(Box::new(change) as Change<R, E>),
            outcome: None,
            reply,
        };
        self.engine
            .writer()
            .send(Box::new(job))
            .await
            .map_err(|_| StorageError::Batch("the writer has stopped".into()))?;
        answer
            .await
            .map_err(|_| StorageError::Batch("the writer has stopped".into()))?
    }

    /// Writes audit events that change nothing else (a pre-tool-check, a rejected request).
    pub async fn record(
        &self,
        events: Vec<(time::OffsetDateTime, Actor, AuditEvent)>,
    ) -> Result<()> {
        self.write(move |tx| {
            Box::pin(async move {
                for (at, actor, event) in events {
                    tx.record(at, &actor, event);
                }
                Ok::<_, StorageError>(())
            })
        })
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
        connect_sqlite(url).await
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
async fn connect_sqlite(url: &str) -> Result<(Store, AnySessionStore)> {
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
        .busy_timeout(Duration::from_secs(10));
    // The writer never checkpoints the WAL itself (a checkpoint in its commit would stall
    // every change waiting behind it); a task on its own connection does, every
    // [`WAL_CHECKPOINT`].
    let write = sqlite_pool()
        .max_connections(1)
        .connect_with(options.clone().pragma("wal_autocheckpoint", "0"))
        .await?;
    sqlx::migrate!("./migrations/sqlite").run(&write).await?;
    let checkpointer = sqlite_pool()
        .max_connections(1)
        .connect_with(options.clone())
        .await?;
    tokio::spawn(checkpoint_wal(checkpointer));
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
    let (writer, jobs) = mpsc::channel(WRITER_QUEUE);
    let changes = Arc::new(Changes::default());
    tokio::spawn(run_writer(
        WritePool::Sqlite(write),
        jobs,
        Arc::clone(&changes),
    ));
    let engine = Engine::Sqlite { read, writer };
    Ok((
        Store {
            engine: Arc::new(engine),
            salt: Arc::new(salt),
            changes,
        },
        AnySessionStore::Sqlite(sessions),
    ))
}

/// A pool of connections to the SQLite file. No ping before each acquire (sqlx's default): a
/// connection to a local file does not go stale, and the ping is one more hand-off to the
/// connection's thread on every read and every write batch.
fn sqlite_pool() -> SqlitePoolOptions {
    SqlitePoolOptions::new().test_before_acquire(false)
}

/// How often the SQLite WAL is copied back into the database file.
pub const WAL_CHECKPOINT: Duration = Duration::from_millis(500);

/// Copies committed WAL frames into the database file, without blocking the writer or
/// readers (`PASSIVE`), so the WAL stays short while the writer never pauses for it.
async fn checkpoint_wal(pool: SqlitePool) {
    let mut tick = tokio::time::interval(WAL_CHECKPOINT);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        if let Err(e) = sqlx::query("pragma wal_checkpoint(passive)")
            .execute(&pool)
            .await
        {
            tracing::warn!(error = %e, "WAL checkpoint failed");
        }
    }
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
        .connect_with(options)
        .await?;
    let sessions = tower_sessions_sqlx_store::PostgresStore::new(pool.clone());
    migrate_postgres_if_pending(&pool, &sessions).await?;
    let salt = {
        let mut c = pool.acquire().await?;
        load_salt(Conn::Postgres(&mut c)).await?
    };
    let (writer, jobs) = mpsc::channel(WRITER_QUEUE);
    let changes = Arc::new(Changes::default());
    tokio::spawn(run_writer(
        WritePool::Postgres(pool.clone()),
        jobs,
        Arc::clone(&changes),
    ));
    Ok((
        Store {
            engine: Arc::new(Engine::Postgres { pool, writer }),
            salt: Arc::new(salt),
            changes,
        },
        AnySessionStore::Postgres(sessions),
    ))
}
