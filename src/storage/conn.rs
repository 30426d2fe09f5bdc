//! The connection types every statement takes: a borrowed [`Conn`] on either backend, a pooled
//! [`ReadConn`], a read [`Snapshot`], and [`on!`], which runs one sqlx expression on whichever
//! backend a connection is (see [`super::db`] for why). A leaf: it names no statement file and
//! no part of the writer, so every file of SQL can name it.

use std::future::Future;
use std::pin::Pin;

use sqlx::pool::PoolConnection;
use sqlx::{PgConnection, Postgres, Sqlite, SqliteConnection};

use super::error::Result;

/// A boxed future, as write closures return.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Runs `$body` with `$c` bound to the backend's own connection type. See [`super::db`]'s
/// module docs.
macro_rules! on {
    ($conn:expr, |$c:ident| $body:expr) => {
        match $conn {
            $crate::storage::conn::Conn::Sqlite($c) => $body,
            $crate::storage::conn::Conn::Postgres($c) => $body,
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
    pub(super) inner: SnapshotInner,
}

impl Snapshot {
    /// The connection, for a statement.
    pub fn conn(&mut self) -> Conn<'_> {
        match &mut self.inner {
            SnapshotInner::Sqlite(t) => Conn::Sqlite(t),
            SnapshotInner::Postgres(t) => Conn::Postgres(t),
        }
    }

    /// Ends the snapshot (it wrote nothing: rolled back).
    pub async fn end(self) -> Result<()> {
        match self.inner {
            SnapshotInner::Sqlite(t) => t.rollback().await?,
            SnapshotInner::Postgres(t) => t.rollback().await?,
        }
        Ok(())
    }
}

/// A snapshot's transaction, on its backend.
pub(super) enum SnapshotInner {
    Sqlite(sqlx::Transaction<'static, Sqlite>),
    Postgres(sqlx::Transaction<'static, Postgres>),
}
