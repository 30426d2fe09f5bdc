//! The rusqlite plumbing under direct reads ([`super`]): the read-only connections of one
//! SQLite file, each lent for one read, a row stepped by id, and its columns decoded as sqlx
//! stores them. A leaf: statement files ([`super::super::proposals`],
//! [`super::super::commands`]) step their rows through it without naming what reads them.

use std::path::Path;
use std::sync::{Mutex, PoisonError};

use rusqlite::types::ValueRef;
use rusqlite::{Connection, OpenFlags, Row};
use serde::de::DeserializeOwned;
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;
use uuid::Uuid;

use super::super::error::{Result, StorageError};

/// How much of the database file each SQLite connection maps into memory: a read of a mapped
/// page is a memory access, not a `pread` copied out of the kernel's cache (after every commit
/// each connection's own page cache starts over, so reads go back to the file often). WAL
/// frames are read as before; writes still go through the WAL.
pub const MMAP_SIZE: i64 = 256 * 1024 * 1024;

/// The read-only connections of one SQLite file, each lent for one read at a time.
pub(crate) struct DirectReads {
    idle: Mutex<Vec<Connection>>,
}

impl DirectReads {
    /// Opens `count` read-only connections to the database file at `path`. They never wait
    /// for a lock (no busy timeout): a read that finds the file busy goes to the pool, whose
    /// threads may wait.
    pub(crate) fn open(path: &Path, count: usize) -> Result<Self> {
        let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let idle = (0..count)
            .map(|_| {
                let db = Connection::open_with_flags(path, flags).map_err(sqlite)?;
                db.busy_timeout(std::time::Duration::ZERO).map_err(sqlite)?;
                (db.pragma_update(None, "mmap_size", MMAP_SIZE)).map_err(sqlite)?;
                Ok(db)
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Self {
            idle: Mutex::new(idle),
        })
    }

    /// An idle connection, if one is free.
    pub(crate) fn take(&self) -> Option<Lent<'_>> {
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
pub(crate) struct Lent<'a> {
    /// Always `Some` until dropped.
    pub(crate) db: Option<Connection>,
    home: &'a DirectReads,
}

impl Drop for Lent<'_> {
    fn drop(&mut self) {
        if let Some(db) = self.db.take() {
            self.home.idle().push(db);
        }
    }
}

/// The one row `sql` (parameter `$1` = `id`) selects, read by `read`; the statement is
/// prepared once per connection.
pub(crate) fn one<T>(
    db: &Connection,
    sql: &str,
    id: Uuid,
    read: impl FnOnce(&Cols<'_, '_>) -> Result<T>,
) -> Result<Option<T>> {
    first(db, sql, [id.as_bytes().as_slice()], read)
}

/// The first row `sql` selects with `params` (bound to `$1`, `$2`, ... in order), read by
/// `read`; the statement is prepared once per connection.
pub(crate) fn first<T>(
    db: &Connection,
    sql: &str,
    params: impl rusqlite::Params,
    read: impl FnOnce(&Cols<'_, '_>) -> Result<T>,
) -> Result<Option<T>> {
    let mut statement = db.prepare_cached(sql).map_err(sqlite)?;
    let mut rows = statement.query(params).map_err(sqlite)?;
    match rows.next().map_err(sqlite)? {
        Some(row) => read(&Cols(row)).map(Some),
        None => Ok(None),
    }
}

/// Every row `sql` selects with `params`, each read by `read`; the statement is prepared once
/// per connection.
pub(crate) fn all<T>(
    db: &Connection,
    sql: &str,
    params: impl rusqlite::Params,
    read: impl Fn(&Cols<'_, '_>) -> Result<T>,
) -> Result<Vec<T>> {
    let mut statement = db.prepare_cached(sql).map_err(sqlite)?;
    let mut rows = statement.query(params).map_err(sqlite)?;
    let mut all = Vec::new();
    while let Some(row) = rows.next().map_err(sqlite)? {
        all.push(read(&Cols(row))?);
    }
    Ok(all)
}

/// A stepped row's columns by name, decoded as sqlx stores them on SQLite: UUIDs as 16-byte
/// blobs, times as RFC 3339 text, JSON as text. A value of another type is corrupt.
pub(crate) struct Cols<'r, 's>(&'r Row<'s>);

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
    pub(crate) fn int(&self, name: &str) -> Result<i64> {
        self.value(name)?
            .as_i64()
            .map_err(|_| Self::corrupt(name, "an integer"))
    }

    /// Text or null.
    pub(crate) fn opt_text(&self, name: &str) -> Result<Option<String>> {
        Ok(self.opt_str(name, "text")?.map(str::to_owned))
    }

    /// Text.
    pub(crate) fn text(&self, name: &str) -> Result<String> {
        Self::required(self.opt_text(name)?, name, "text")
    }

    /// A UUID or null.
    pub(crate) fn opt_uuid(&self, name: &str) -> Result<Option<Uuid>> {
        let value = self.value(name)?;
        let blob = value
            .as_blob_or_null()
            .map_err(|_| Self::corrupt(name, "a UUID"))?;
        blob.map(|b| Uuid::from_slice(b).map_err(|_| Self::corrupt(name, "a UUID")))
            .transpose()
    }

    /// A UUID.
    pub(crate) fn uuid(&self, name: &str) -> Result<Uuid> {
        Self::required(self.opt_uuid(name)?, name, "a UUID")
    }

    /// A time or null.
    pub(crate) fn opt_time(&self, name: &str) -> Result<Option<OffsetDateTime>> {
        let parse =
            |t| OffsetDateTime::parse(t, &Rfc3339).map_err(|_| Self::corrupt(name, "a time"));
        self.opt_str(name, "a time")?.map(parse).transpose()
    }

    /// A time.
    pub(crate) fn time(&self, name: &str) -> Result<OffsetDateTime> {
        Self::required(self.opt_time(name)?, name, "a time")
    }

    /// JSON text, parsed, or null.
    pub(crate) fn opt_json<T: DeserializeOwned>(&self, name: &str) -> Result<Option<T>> {
        let parse = |t| {
            serde_json::from_str(t).map_err(|e| Self::corrupt(name, &format!("valid JSON ({e})")))
        };
        self.opt_str(name, "JSON text")?.map(parse).transpose()
    }

    /// JSON text, parsed.
    pub(crate) fn json<T: DeserializeOwned>(&self, name: &str) -> Result<T> {
        Self::required(self.opt_json(name)?, name, "JSON text")
    }
}

/// rusqlite's errors as the storage layer's: the database not answering when SQLite says
/// its disk is full or failing ([`StorageError::is_unavailable`]), else a failure of its own.
pub(crate) fn sqlite(e: rusqlite::Error) -> StorageError {
    StorageError::Sqlite(e)
}
