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
//! from the file right there: a local disk's wait, on a runtime worker.
//!
//! On PostgreSQL, reads are network round trips anyway; the same reads are gathered
//! ([`gathered`]): the reads waiting at one moment are answered by one statement, on a
//! connection kept out of the pool (which sqlx would ping after each read).

pub mod gathered;
pub(super) mod raw;

use rusqlite::Connection;
use uuid::Uuid;

use super::commands::{self, CommandRecord};
use super::conn::ReadConn;
use super::db::Store;
use super::error::Result;
use super::proposals::{self, ProposalRecord};
use gathered::Gathered;
use raw::{DirectReads, Lent};

/// A connection for an agent's point reads: on SQLite one of [`DirectReads`] when one is
/// free, else one from the pool; on PostgreSQL the gathered reads ([`gathered`]). A direct or
/// gathered read that fails for any reason (a busy file, a value stored in a form only sqlx
/// decodes, a connection the database closed) is read again through the pool, so it answers
/// exactly what the pool would.
pub struct PointRead<'a> {
    direct: Option<Lent<'a>>,
    gathered: Option<&'a Gathered>,
    pooled: Option<ReadConn>,
    store: &'a Store,
}

impl PointRead<'_> {
    /// Whether reads run on this thread (a direct connection was free).
    pub fn is_direct(&self) -> bool {
        self.direct.is_some()
    }

    /// Whether reads are gathered (PostgreSQL, until one failed).
    pub fn is_gathered(&self) -> bool {
        self.gathered.is_some()
    }

    /// A proposal by id and the command running it, for a proposal whose status may have one
    /// (a pending proposal, what agents poll, has none): on the direct connection, two reads
    /// (each microseconds; the second only for such a proposal); gathered, part of one
    /// statement; through the pool, one statement (on PostgreSQL, one round trip).
    pub async fn proposal_and_command(
        &mut self,
        id: Uuid,
    ) -> Result<Option<(ProposalRecord, Option<CommandRecord>)>> {
        let both = |db: &Connection| -> Result<_> {
            let Some(proposal) = proposals::by_id_direct(db, id)? else {
                return Ok(None);
            };
            let command = match proposal.status.may_have_command() {
                true => commands::for_proposal_direct(db, id)?,
                false => None,
            };
            Ok(Some((proposal, command)))
        };
        let only_if_it_may = |found: Option<(ProposalRecord, Option<CommandRecord>)>| {
            found.map(|(p, command)| {
                let command = command.filter(|_| p.status.may_have_command());
                (p, command)
            })
        };
        if let Some(found) = self.direct(both) {
            return Ok(found);
        }
        if let Some(gathered) = self.gathered {
            match gathered.read(id).await? {
                Some(found) => return Ok(only_if_it_may(found)),
                // Its statement failed (and said so): the pool reads from here on.
                None => self.gathered = None,
            }
        }
        let found = proposals::with_command::by_id(self.pooled().await?.conn(), id).await?;
        Ok(only_if_it_may(found))
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

impl Store {
    /// A connection for an agent's point reads: on SQLite one read on this thread when a
    /// connection of [`raw::DirectReads`] is free, else a pooled one; on PostgreSQL the
    /// gathered reads ([`gathered`]).
    pub async fn point_read(&self) -> Result<PointRead<'_>> {
        let direct = self.direct_reads().and_then(DirectReads::take);
        let gathered = self.gathered_reads();
        let pooled = match (&direct, &gathered) {
            (None, None) => Some(self.read().await?),
            _ => None,
        };
        Ok(PointRead {
            direct,
            gathered,
            pooled,
            store: self,
        })
    }
}
