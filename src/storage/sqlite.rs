//! SQLite, the embedded default: one file, created and migrated on first start. Writes go
//! through a single connection (SQLite has one writer anyway, and this avoids lock-upgrade
//! failures between concurrent transactions); reads use a small pool of their own. WAL with
//! `synchronous = full`: an acknowledged write survives `kill -9` and power loss.

use std::str::FromStr;
use std::time::Duration;

use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous};
use sqlx::{Sqlite, SqlitePool};

use crate::auth::session::AnySessionStore;

/// The SQLite store.
#[derive(Clone)]
pub struct SqliteStore {
    write: SqlitePool,
    read: SqlitePool,
}

impl SqliteStore {
    /// Opens (creating if missing) and migrates the database at `url`.
    pub async fn connect(url: &str) -> Result<(Self, AnySessionStore)> {
        if url.contains(":memory:") || url.contains("mode=memory") {
            return Err(StorageError::Database(sqlx::Error::Configuration(
                "in-memory SQLite is not supported: give a file, e.g. sqlite://countersign.db"
                    .into(),
            )));
        }
        let options = SqliteConnectOptions::from_str(url)?
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .synchronous(SqliteSynchronous::Full)
            .foreign_keys(true)
            .busy_timeout(Duration::from_secs(10));
        let write = SqlitePoolOptions::new()
            .max_connections(1)
            .connect_with(options.clone())
            .await?;
        sqlx::migrate!("./migrations/sqlite").run(&write).await?;
        let sessions = tower_sessions_sqlx_store::SqliteStore::new(write.clone());
        sessions.migrate().await?;
        let read = SqlitePoolOptions::new()
            .max_connections(4)
            .connect_with(options.read_only(true))
            .await?;
        Ok((Self { write, read }, AnySessionStore::Sqlite(sessions)))
    }
}

crate::storage::sql::impl_store!(
    SqliteStore,
    Sqlite,
    backend = Backend::Sqlite,
    expired = "julianday(lease_expires_at) < julianday($4)",
    due = "julianday(expires_at) <= julianday($1)",
    live = "(expires_at is null or julianday(expires_at) > julianday($1))",
    contains = "instr",
    lock = ""
);
