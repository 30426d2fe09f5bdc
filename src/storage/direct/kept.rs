//! PostgreSQL connections kept out of the pool for agents' point reads ([`super`]).
//!
//! sqlx pings every connection that comes back to its pool: a `Sync` and its answer, one more
//! round trip for each read, on the server's cores and the database's (a `strace` of 100
//! status reads counted 134 pings beside 238 statements), and no setting turns it off. A point
//! read is one statement, and the connection it ran on is as sound as the answer it just read.
//! So the reads agents poll run on a handful of connections taken out of the pool once
//! (`detach`, after which the pool may open others in their place) and kept here:
//! - each is lent for one read and put back only once that read answered ([`Kept::keep`]);
//! - one whose read failed, or was abandoned half-way (the request was dropped while the
//!   database was answering), is closed, never lent again with a statement half-answered;
//! - when every kept connection is lent and [`MOST`] are open, the read uses the pool.
//!
//! Each is named `countersign point reads` in `pg_stat_activity`.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, PoisonError};

use sqlx::{PgConnection, PgPool};

use super::super::error::Result;

/// The most connections kept for point reads, per instance (beside the pool's own).
pub const MOST: usize = 8;

/// The name kept connections carry in `pg_stat_activity`.
pub const APPLICATION_NAME: &str = "countersign point reads";

/// The connections kept for point reads, idle and lent.
#[derive(Default)]
pub(crate) struct KeptConns {
    idle: Mutex<Vec<PgConnection>>,
    /// Open connections, idle or lent.
    open: AtomicUsize,
}

impl KeptConns {
    /// An idle kept connection; else, while fewer than [`MOST`] are open, one taken out of
    /// `pool`; else `None` (the caller reads through the pool).
    pub(crate) async fn take<'a>(&'a self, pool: &PgPool) -> Result<Option<Kept<'a>>> {
        if let Some(conn) = self.idle().pop() {
            let slot = Slot(self);
            return Ok(Some(Kept { conn, slot }));
        }
        let opened = self
            .open
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < MOST).then_some(n + 1)
            });
        if opened.is_err() {
            return Ok(None);
        }
        // Counted from here; on an error below, the slot's drop uncounts it.
        let slot = Slot(self);
        let mut conn = pool.acquire().await?.detach();
        sqlx::query("select set_config('application_name', $1, false)")
            .bind(APPLICATION_NAME)
            .execute(&mut conn)
            .await?;
        Ok(Some(Kept { conn, slot }))
    }

    /// The idle set. Nothing can leave it half-changed (a push or a pop), so a poisoned lock
    /// is taken as it is.
    fn idle(&self) -> std::sync::MutexGuard<'_, Vec<PgConnection>> {
        self.idle.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// One open kept connection, counted while it lives.
struct Slot<'a>(&'a KeptConns);

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        self.0.open.fetch_sub(1, Ordering::AcqRel);
    }
}

/// A kept connection lent for one read: back to its set through [`Kept::keep`]; dropped
/// without (its read failed or never finished), it is closed (its socket shut) and no longer
/// counted.
pub(crate) struct Kept<'a> {
    conn: PgConnection,
    slot: Slot<'a>,
}

impl Kept<'_> {
    /// The connection, for one statement.
    pub(crate) fn conn(&mut self) -> &mut PgConnection {
        &mut self.conn
    }

    /// Puts the connection back, its read answered; it stays counted.
    pub(crate) fn keep(self) {
        let Kept { conn, slot } = self;
        slot.0.idle().push(conn);
        std::mem::forget(slot);
    }
}
