//! SQLite: a group that only records events (pre-tool-checks, above all) appended and
//! committed on the writer's own thread.
//!
//! sqlx runs each SQLite connection on a thread of its own and hands every statement to it
//! and every answer back: two thread wake-ups a statement, on the writer's serial path. Such a
//! group is four statements (`begin immediate`, the head's move, the rows' insert, `commit`),
//! and the profile of pre-tool-checks at 64 connections put a third of the server's CPU on
//! sqlx's connection thread, much of it switching threads. Here the writer takes the
//! connection's handle once (sqlx's `lock_handle`: its thread waits until the handle is given
//! back) and steps the group's statements itself, through rusqlite on the same SQLite library
//! (one `libsqlite3-sys` in the build), encoding the values as sqlx does (UUIDs as 16-byte
//! blobs, times as RFC 3339 text): the same rows, one hand-off instead of eight.

use std::time::{Duration, Instant};

use rusqlite::{Connection, params};
use sqlx::SqliteConnection;
use time::format_description::well_known::Rfc3339;

// The head's statements are sqlx's (`$1`…): SQLite numbers `$n` parameters in the order they
// first appear, so rusqlite binds them by position as sqlx does.
use super::link::{PendingEvent, SET_HEAD, SQLITE_MOVE_HEAD, link_all, unlinked};
use crate::audit::chain::{FACETS, Head, facet_of};
use crate::storage::direct::raw::sqlite;
use crate::storage::error::{Result, StorageError};

/// Appends `events` (none of which moves a proposal: nothing else is written with them) after
/// the head this writer last committed (`known`; when it is elsewhere, or not known, after the
/// head read under the write lock) and commits, on this thread. Answers the head it leaves and
/// how long the `commit` took. On an error the transaction is rolled back, if one was open.
pub(crate) async fn append_and_commit(
    conn: &mut SqliteConnection,
    events: Vec<PendingEvent>,
    known: Option<Head>,
) -> Result<(Head, Duration)> {
    let (_, mut rows, texts) = unlinked(events)?;
    let mut locked = conn.lock_handle().await?;
    // SAFETY: the handle is sqlx's open connection, which its own thread does not touch while
    // `locked` is held; `db` does not close it, and is dropped (finalizing the statements it
    // prepared) before `locked` is. (rusqlite is built without its `hooks` feature: with it,
    // dropping `db` would also clear any hooks set on sqlx's handle.)
    let db = unsafe { Connection::from_handle(locked.as_raw_handle().as_ptr()) }.map_err(sqlite)?;
    let appended = append(&db, &mut rows, &texts, known);
    if appended.is_err() && !db.is_autocommit() {
        // The error stands (the writer closes its connection after any failed group); the
        // rollback releases the write lock at once all the same.
        let _ = db.execute_batch("rollback");
    }
    drop(db);
    drop(locked);
    appended
}

/// The group's transaction on `db`: the head moved from `known` (or from where it is), the
/// rows linked after it inserted, committed.
fn append(
    db: &Connection,
    rows: &mut [crate::audit::chain::ChainedEvent],
    texts: &[String],
    known: Option<Head>,
) -> Result<(Head, Duration)> {
    db.execute_batch("begin immediate").map_err(sqlite)?;
    let moved = match &known {
        Some(from) => {
            let to = link_all(rows, texts, from);
            let n = (db.prepare_cached(SQLITE_MOVE_HEAD).map_err(sqlite)?)
                .execute(params![to.seq, to.hash, from.seq, from.hash])
                .map_err(sqlite)?;
            (n == 1).then_some(to)
        }
        None => None,
    };
    let head = match moved {
        Some(head) => head,
        // Another writer (the CLI on the same file) moved it: link after it as it is now.
        None => {
            let current = db
                .query_row("select seq, hash from audit_chain where id = 1", [], |r| {
                    Ok(Head {
                        seq: r.get(0)?,
                        hash: r.get(1)?,
                    })
                })
                .map_err(sqlite)?;
            let head = link_all(rows, texts, &current);
            (db.prepare_cached(SET_HEAD).map_err(sqlite)?)
                .execute(params![head.seq, head.hash])
                .map_err(sqlite)?;
            head
        }
    };
    let sql = concat!(
        "insert into audit_events (",
        insert_columns!(),
        ") values (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17)"
    );
    let mut insert = db.prepare_cached(sql).map_err(sqlite)?;
    for (r, text) in rows.iter().zip(texts) {
        let at = (r.at.format(&Rfc3339))
            .map_err(|e| StorageError::Corrupt(format!("an event's time: {e}")))?;
        let [agent, tool, domain, risk, decision] =
            FACETS.map(|facet| facet_of(&r.details, facet, &r.actor_kind, &r.actor));
        insert
            .execute(params![
                r.seq,
                r.id.as_bytes().as_slice(),
                at,
                r.actor_kind,
                r.actor,
                r.kind,
                r.subject_type,
                r.subject_id,
                r.before_status,
                r.after_status,
                text,
                r.hash,
                agent,
                tool,
                domain,
                risk,
                decision,
            ])
            .map_err(sqlite)?;
    }
    drop(insert);
    let started = Instant::now();
    db.execute_batch("commit").map_err(sqlite)?;
    Ok((head, started.elapsed()))
}
