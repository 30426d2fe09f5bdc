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
//! - at most [`most`] are open; a read that finds them all lent waits for one, first come
//!   first served, as it would for the pool (and as long: then it is answered `503`).
//!   (Letting it read through the pool instead, with up to 24 statements in flight on two
//!   cores where the pool alone allowed 16, read 5% more a second than the pool alone but
//!   with a longer tail: p99 9.8–12.3 ms against 8.4–9.0 ms.)
//!
//! Each is named `countersign point reads` in `pg_stat_activity`.

use std::sync::{Mutex, PoisonError};

use sqlx::{PgConnection, PgPool};
use tokio::sync::{Semaphore, SemaphorePermit};

use super::super::error::Result;

/// The most connections kept for point reads, per instance (beside the pool's own): two for
/// each of the instance's cores, at least 4 and at most 16.
///
/// Each read's statement keeps a PostgreSQL backend busy for only part of its round trip, so a
/// core serves about two at once; more in flight only queue on the cores, where they lengthen
/// the tail. Measured on two cores shared by the server, PostgreSQL and wrk (status reads at 64
/// connections, 10 s each, alternating, `release`): 2 kept read 11,643–12,293/s, p99
/// 7.6–8.2 ms; **4 read 13,743–16,222/s, p99 5.7–6.7 ms**; 8 read 13,267–14,841/s, p99
/// 6.7–10.4 ms; the pool alone (16, pinged after each read) 10,756–13,157/s, p99 8.9–11.7 ms.
pub fn most() -> usize {
    let cores = std::thread::available_parallelism().map_or(2, usize::from);
    (2 * cores).clamp(4, 16)
}

/// The name kept connections carry in `pg_stat_activity`.
pub const APPLICATION_NAME: &str = "countersign point reads";

/// The connections kept for point reads, idle and lent.
pub(crate) struct KeptConns {
    idle: Mutex<Vec<PgConnection>>,
    /// A permit for each connection that may be lent at once, taken with it and given back
    /// with it (kept or closed): however many are idle, lent ones and idle ones together are
    /// at most [`most`].
    lendable: Semaphore,
}

impl Default for KeptConns {
    fn default() -> Self {
        Self {
            idle: Mutex::default(),
            lendable: Semaphore::new(most()),
        }
    }
}

impl KeptConns {
    /// An idle kept connection, or one taken out of `pool` when none is idle; once [`most`]
    /// are lent, when the first of them comes back, waiting no longer than a read waits for
    /// the pool (its acquire timeout): past that, unavailable (`503`), as the pool answers
    /// while the database does not.
    pub(crate) async fn take<'a>(&'a self, pool: &PgPool) -> Result<Kept<'a>> {
        let wait = pool.options().get_acquire_timeout();
        let permit = match tokio::time::timeout(wait, self.lendable.acquire()).await {
            Ok(Ok(permit)) => permit,
            Ok(Err(_)) => return Err(sqlx::Error::PoolClosed.into()),
            Err(_) => return Err(sqlx::Error::PoolTimedOut.into()),
        };
        // Popped before any wait: the set's lock is never held across one.
        let idle = self.idle().pop();
        let conn = match idle {
            Some(conn) => conn,
            None => open(pool).await?,
        };
        Ok(Kept {
            conn,
            permit,
            home: self,
        })
    }

    /// The idle set. Nothing can leave it half-changed (a push or a pop), so a poisoned lock
    /// is taken as it is.
    fn idle(&self) -> std::sync::MutexGuard<'_, Vec<PgConnection>> {
        self.idle.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// A new kept connection, taken out of `pool` and named.
async fn open(pool: &PgPool) -> Result<PgConnection> {
    let mut conn = pool.acquire().await?.detach();
    sqlx::query("select set_config('application_name', $1, false)")
        .bind(APPLICATION_NAME)
        .execute(&mut conn)
        .await?;
    Ok(conn)
}

/// A kept connection lent for one read: back to its set through [`Kept::keep`]; dropped
/// without (its read failed or never finished), it is closed (its socket shut) and its place
/// is free for a new one.
pub(crate) struct Kept<'a> {
    conn: PgConnection,
    permit: SemaphorePermit<'a>,
    home: &'a KeptConns,
}

impl Kept<'_> {
    /// The connection, for one statement.
    pub(crate) fn conn(&mut self) -> &mut PgConnection {
        &mut self.conn
    }

    /// Puts the connection back, its read answered, and then its permit, so the read that
    /// takes the permit finds it idle.
    pub(crate) fn keep(self) {
        let Kept { conn, permit, home } = self;
        home.idle().push(conn);
        drop(permit);
    }
}
