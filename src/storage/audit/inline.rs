//! SQLite: the end of a group's transaction, on the writer's own thread.
//!
//! sqlx runs each SQLite connection on a thread of its own and hands every statement to it
//! and every answer back: two thread wake-ups a statement, on the writer's serial path. The
//! end of every group is the same few statements: the head's move, the events' insert, the
//! webhook targets of the proposals the events moved, and `commit`. A proposal's submission
//! was nine hand-offs, five of them these (0.1–0.25 ms each, timed statement by statement in
//! the server), and a group that only records events (pre-tool-checks, above all) is these
//! and its `begin immediate`: the profile of pre-tool-checks at 64 connections put a third of
//! the server's CPU on sqlx's connection thread, much of it switching threads. Here the writer
//! takes the connection's handle once (sqlx's `lock_handle`: its thread waits until the handle
//! is given back) and steps them itself, through rusqlite on the same SQLite library (one
//! `libsqlite3-sys` in the build), encoding the values as sqlx does (UUIDs as 16-byte blobs,
//! times as RFC 3339 text): the same rows, one hand-off instead of four or five.
//!
//! When the group has more to write after its events (webhook deliveries to queue, reviewers'
//! notifications), the transaction is left open for sqlx to finish and commit.

use std::time::{Duration, Instant};

use rusqlite::{Connection, params};
use sqlx::SqliteConnection;
use time::format_description::well_known::Rfc3339;

// The head's statements are sqlx's (`$1`…): SQLite numbers `$n` parameters in the order they
// first appear, so rusqlite binds them by position as sqlx does.
use super::link::{PendingEvent, SET_HEAD, SQLITE_MOVE_HEAD, link_all, moved_once, unlinked};
use crate::audit::chain::{ChainedEvent, FACETS, Head, facet_of};
use crate::storage::direct::raw::sqlite;
use crate::storage::error::{Result, StorageError};
use crate::storage::status_change::StatusChange;
use crate::storage::webhooks;

/// Appends `events` (none of which moves a proposal: nothing else is written with them) after
/// the head this writer last committed (`known`; when it is elsewhere, or not known, after the
/// head read under the write lock) and commits, on this thread. Answers the head it leaves and
/// how long the `commit` took. On an error the transaction is rolled back, if one was open.
pub(crate) async fn append_and_commit(
    conn: &mut SqliteConnection,
    events: Vec<PendingEvent>,
    known: Option<Head>,
) -> Result<(Head, Duration)> {
    let inline = append_inline(conn, events, known, Begin::Here, true).await?;
    let commit = (inline.commit)
        .ok_or_else(|| StorageError::Batch("events appended inline not committed".into()))?;
    Ok((inline.head, commit))
}

/// Whether [`append_inline`] opens the transaction or finds it open.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Begin {
    /// It begins it (`begin immediate`).
    Here,
    /// The group's changes ran in it already.
    Open,
}

/// What [`append_inline`] did.
pub(crate) struct Inline {
    /// The head the events end at.
    pub head: Head,
    /// The status changes appended.
    pub changes: Vec<StatusChange>,
    /// The webhook targets of the proposals the events moved.
    pub targets: Vec<webhooks::Target>,
    /// How long the `commit` took, if it ran here.
    pub commit: Option<Duration>,
}

/// Appends `events` as [`super::append`] does, and reads the webhook targets of the proposals
/// they moved, on this thread, in the transaction (`begin`). Commits too when `may_commit`
/// (the caller has nothing else to write) and there are no deliveries to queue. On an error
/// the transaction is rolled back.
pub(crate) async fn append_inline(
    conn: &mut SqliteConnection,
    events: Vec<PendingEvent>,
    known: Option<Head>,
    begin: Begin,
    may_commit: bool,
) -> Result<Inline> {
    let (proposals, mut rows, texts) = unlinked(events)?;
    let moved = moved_once(&proposals);
    let mut locked = conn.lock_handle().await?;
    // SAFETY: the handle is sqlx's open connection, which its own thread does not touch while
    // `locked` is held; `db` does not close it, and is dropped (finalizing the statements it
    // prepared) before `locked` is. (rusqlite is built without its `hooks` feature: with it,
    // dropping `db` would also clear any hooks set on sqlx's handle.)
    let db = unsafe { Connection::from_handle(locked.as_raw_handle().as_ptr()) }.map_err(sqlite)?;
    let tail = finish(&db, (&mut rows, &texts, known), &moved, begin, may_commit);
    if tail.is_err() && !db.is_autocommit() {
        // The error stands (the writer closes its connection after any failed group); the
        // rollback releases the write lock at once all the same.
        let _ = db.execute_batch("rollback");
    }
    drop(db);
    drop(locked);
    let (head, targets, commit) = tail?;
    Ok(Inline {
        head,
        changes: StatusChange::of_rows(&rows, proposals),
        targets,
        commit,
    })
}

/// [`append_inline`]'s statements on `db`: the transaction begun (if `begin` says so), the
/// rows appended, the targets of `moved` read, and the commit (when `may_commit` and there are
/// no targets). Answers the head, the targets and how long the commit took, if it ran.
fn finish(
    db: &Connection,
    (rows, texts, known): (&mut [ChainedEvent], &[String], Option<Head>),
    moved: &[uuid::Uuid],
    begin: Begin,
    may_commit: bool,
) -> Result<(Head, Vec<webhooks::Target>, Option<Duration>)> {
    if begin == Begin::Here {
        db.execute_batch("begin immediate").map_err(sqlite)?;
    }
    let head = append(db, rows, texts, known)?;
    let targets = match moved.is_empty() {
        true => Vec::new(),
        false => webhooks::targets_direct(db, moved)?,
    };
    let commit = match may_commit && targets.is_empty() {
        true => {
            let started = Instant::now();
            db.execute_batch("commit").map_err(sqlite)?;
            Some(started.elapsed())
        }
        false => None,
    };
    Ok((head, targets, commit))
}

/// In the transaction open on `db`: the head moved from `known` (or from where it is), the
/// rows linked after it inserted. Answers the head.
fn append(
    db: &Connection,
    rows: &mut [ChainedEvent],
    texts: &[String],
    known: Option<Head>,
) -> Result<Head> {
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
    Ok(head)
}
