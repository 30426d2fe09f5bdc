//! Point reads on the caller's own thread (SQLite): what agents poll.
//!
//! sqlx runs each SQLite connection on a thread of its own and hands every statement to it
//! and every row back through channels: for a read by primary key, which SQLite answers from
//! its page cache in microseconds, those hand-offs (a futex wake each way, and a thread
//! switch on two busy cores) cost more than the read. The few reads agents make over and over
//! (their proposal and its command: `Services::agent_proposal`, behind
//! `GET /api/v1/proposals/{id}`, its waits and its event stream) go
//! instead through a handful of read-only connections of our own (rusqlite, on the same
//! SQLite library), stepped right where the request runs. Each read is one indexed lookup,
//! short enough to run on a runtime worker; anything longer stays on sqlx's pool.
//!
//! A connection is taken from the set for one read and put back after it, so a read never
//! waits for another: when every one is busy, the read goes to the pool instead, and so does a
//! read that fails (it never waits for a lock here). A page SQLite does not have cached is read
//! from the file right there: a local disk's wait, on a runtime worker. On PostgreSQL, reads
//! are network round trips anyway and always use the pool.

use std::path::Path;
use std::sync::{Mutex, PoisonError};

use rusqlite::types::ValueRef;
use rusqlite::{Connection, OpenFlags, Row};
use serde::de::DeserializeOwned;
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;
use uuid::Uuid;

use super::commands::{self, CommandRecord};
use super::db::{ReadConn, Store};
use super::proposals::{self, ProposalRecord};
use super::{Result, StorageError};

/// The read-only connections of one SQLite file, each lent for one read at a time.
pub(super) struct DirectReads {
    idle: Mutex<Vec<Connection>>,
}

impl DirectReads {
    /// Opens `count` read-only connections to the database file at `path`. They never wait
    /// for a lock (no busy timeout): a read that finds the file busy goes to the pool, whose
    /// threads may wait.
    pub(super) fn open(path: &Path, count: usize) -> Result<Self> {
        let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let idle = (0..count)
            .map(|_| {
                let db = Connection::open_with_flags(path, flags).map_err(sqlite)?;
                db.busy_timeout(std::time::Duration::ZERO).map_err(sqlite)?;
                Ok(db)
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Self {
            idle: Mutex::new(idle),
        })
    }

    /// An idle connection, if one is free.
    fn take(&self) -> Option<Lent<'_>> {
        let db = self.idle().pop()?;
        Some(Lent {
            db: Some(db),
            home: self,
        })
    }

    /// The idle set. A read that panicked cannot leave it half-changed (a push or a pop), so
    /// a poisoned lock is taken as it is.
    fn idle(&self) -> std::sync::MutexGuard<'_, Vec<Connection>> {
        self.idle.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// A connection lent for one read; it goes back to its set when dropped.
struct Lent<'a> {
    /// Always `Some` until dropped.
    db: Option<Connection>,
    home: &'a DirectReads,
}

impl Drop for Lent<'_> {
    fn drop(&mut self) {
        if let Some(db) = self.db.take() {
            self.home.idle().push(db);
        }
    }
}

/// A connection for an agent's point reads: on SQLite one of [`DirectReads`] when one is
/// free, else (and on PostgreSQL) one from the pool. A direct read that fails for any reason
/// (a busy file, a value stored in a form only sqlx decodes) is read again through the pool,
/// so it answers exactly what the pool would.
pub struct PointRead<'a> {
    direct: Option<Lent<'a>>,
    pooled: Option<ReadConn>,
    store: &'a Store,
}

impl PointRead<'_> {
    /// Whether reads run on this thread (a direct connection was free).
    pub fn is_direct(&self) -> bool {
        self.direct.is_some()
    }

    /// A proposal by id.
    pub async fn proposal(&mut self, id: Uuid) -> Result<Option<ProposalRecord>> {
        if let Some(found) = self.direct(|db| proposals::by_id_direct(db, id)) {
            return Ok(found);
        }
        proposals::by_id(self.pooled().await?.conn(), id).await
    }

    /// The command running a proposal.
    pub async fn command_for_proposal(&mut self, id: Uuid) -> Result<Option<CommandRecord>> {
        if let Some(found) = self.direct(|db| commands::for_proposal_direct(db, id)) {
            return Ok(found);
        }
        commands::for_proposal(self.pooled().await?.conn(), id).await
    }

    /// `read`'s answer on the direct connection; `None` without one, or if it failed (the
    /// connection is then given back, and the pool reads from here on).
    fn direct<T>(&mut self, read: impl FnOnce(&Connection) -> Result<T>) -> Option<T> {
        let db = self.direct.as_ref()?.db.as_ref()?;
        match read(db) {
            Ok(found) => Some(found),
            Err(e) => {
                tracing::warn!(error = %e, "direct SQLite read failed; reading through the pool");
                self.direct = None;
                None
            }
        }
    }

    /// The pooled connection, taken on first use.
    async fn pooled(&mut self) -> Result<&mut ReadConn> {
        let read = match self.pooled.take() {
            Some(read) => read,
            None => self.store.read().await?,
        };
        Ok(self.pooled.insert(read))
    }
}

/// A [`PointRead`] on `direct`'s connections if one is free, else on `store`'s pool.
pub(super) async fn point_read<'a>(
    store: &'a Store,
    direct: Option<&'a DirectReads>,
) -> Result<PointRead<'a>> {
    let direct = direct.and_then(DirectReads::take);
    let pooled = match direct {
        Some(_) => None,
        None => Some(store.read().await?),
    };
    Ok(PointRead {
        direct,
        pooled,
        store,
    })
}

/// The one row `sql` (parameter `$1` = `id`) selects, read by `read`; the statement is
/// prepared once per connection.
pub(super) fn one<T>(
    db: &Connection,
    sql: &str,
    id: Uuid,
    read: impl FnOnce(&Cols<'_, '_>) -> Result<T>,
) -> Result<Option<T>> {
    let mut statement = db.prepare_cached(sql).map_err(sqlite)?;
    let mut rows = statement
        .query([id.as_bytes().as_slice()])
        .map_err(sqlite)?;
    match rows.next().map_err(sqlite)? {
        Some(row) => read(&Cols(row)).map(Some),
        None => Ok(None),
    }
}

/// A stepped row's columns by name, decoded as sqlx stores them on SQLite: UUIDs as 16-byte
/// blobs, times as RFC 3339 text, JSON as text. A value of another type is corrupt.
pub(super) struct Cols<'r, 's>(&'r Row<'s>);

impl Cols<'_, '_> {
    fn value(&self, name: &str) -> Result<ValueRef<'_>> {
        self.0.get_ref(name).map_err(sqlite)
    }

    fn corrupt(name: &str, what: &str) -> StorageError {
        StorageError::Corrupt(format!("`{name}` is not {what}"))
    }

    /// Column `name`'s text, or null; anything else is not `what`.
    fn opt_str(&self, name: &str, what: &str) -> Result<Option<&str>> {
        self.value(name)?
            .as_str_or_null()
            .map_err(|_| Self::corrupt(name, what))
    }

    /// `value` of column `name`, which may not be null (it is then not `what`).
    fn required<T>(value: Option<T>, name: &str, what: &str) -> Result<T> {
        value.ok_or_else(|| Self::corrupt(name, what))
    }

    /// An integer.
    pub(super) fn int(&self, name: &str) -> Result<i64> {
        self.value(name)?
            .as_i64()
            .map_err(|_| Self::corrupt(name, "an integer"))
    }

    /// Text or null.
    pub(super) fn opt_text(&self, name: &str) -> Result<Option<String>> {
        Ok(self.opt_str(name, "text")?.map(str::to_owned))
    }

    /// Text.
    pub(super) fn text(&self, name: &str) -> Result<String> {
        Self::required(self.opt_text(name)?, name, "text")
    }

    /// A UUID or null.
    pub(super) fn opt_uuid(&self, name: &str) -> Result<Option<Uuid>> {
        let value = self.value(name)?;
        let blob = value
            .as_blob_or_null()
            .map_err(|_| Self::corrupt(name, "a UUID"))?;
        blob.map(|b| Uuid::from_slice(b).map_err(|_| Self::corrupt(name, "a UUID")))
            .transpose()
    }

    /// A UUID.
    pub(super) fn uuid(&self, name: &str) -> Result<Uuid> {
        Self::required(self.opt_uuid(name)?, name, "a UUID")
    }

    /// A time or null.
    pub(super) fn opt_time(&self, name: &str) -> Result<Option<OffsetDateTime>> {
        let parse =
            |t| OffsetDateTime::parse(t, &Rfc3339).map_err(|_| Self::corrupt(name, "a time"));
        self.opt_str(name, "a time")?.map(parse).transpose()
    }

    /// A time.
    pub(super) fn time(&self, name: &str) -> Result<OffsetDateTime> {
        Self::required(self.opt_time(name)?, name, "a time")
    }

    /// JSON text, parsed, or null.
    pub(super) fn opt_json<T: DeserializeOwned>(&self, name: &str) -> Result<Option<T>> {
        let parse = |t| {
            serde_json::from_str(t).map_err(|e| Self::corrupt(name, &format!("valid JSON ({e})")))
        };
        self.opt_str(name, "JSON text")?.map(parse).transpose()
    }

    /// JSON text, parsed.
    pub(super) fn json<T: DeserializeOwned>(&self, name: &str) -> Result<T> {
        Self::required(self.opt_json(name)?, name, "JSON text")
    }
}

/// rusqlite's errors as sqlx's I/O kind: an internal failure like any other.
pub(super) fn sqlite(e: rusqlite::Error) -> StorageError {
    StorageError::Database(sqlx::Error::Io(std::io::Error::other(e)))
}
