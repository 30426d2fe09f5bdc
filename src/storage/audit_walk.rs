//! Reading the chain for verification: every row once, in seq order, a page at a time, on one
//! [`Snapshot`], each row handed to a visitor as a borrowed [`RowRef`] (`details` as its stored
//! JSON text, with the facet columns).
//!
//! On PostgreSQL a page is one ordinary sqlx query ([`chain_page`]). On SQLite, sqlx copies
//! every column of every row (a `sqlite3_value_dup` and an allocation each) and passes rows
//! between threads, which costs several times what verifying them does (1,000,000 events: about
//! 7 s of a 2.5 s budget). So a SQLite page is read on the snapshot's own connection, taken from
//! sqlx's worker with `lock_handle`, through rusqlite: rows are stepped in place and their text
//! borrowed, never copied. Same connection, same open transaction, hence the same snapshot.
//! A page runs to its end without yielding (10,000 rows: some 25 ms), then hands the connection
//! back to sqlx.

use futures_util::TryStreamExt;
use sqlx::postgres::PgRow;
use sqlx::{PgConnection, Row, SqliteConnection};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;
use uuid::Uuid;

use super::conn::{Conn, Snapshot, on};
use super::direct::raw::sqlite;
use super::error::{Result, StorageError};
use crate::audit::chain::{RowRef, StoredRow};

/// The columns a chain row is verified from, in [`StoredRow`]'s order.
const SQLITE_PAGE: &str = "select seq, id, at, actor_kind, actor, action, subject_type, \
     subject_id, before_status, after_status, details, hash, agent, tool, domain, risk, decision \
     from audit_events where seq > ?1 order by seq limit ?2";

/// The same on PostgreSQL, `details` as stored (`json`: the text as written; rows from before
/// it was `json` hold `jsonb`'s printing).
const POSTGRES_PAGE: &str = "select seq, id, at, actor_kind, actor, action, subject_type, \
     subject_id, before_status, after_status, details::text as details, hash, agent, tool, \
     domain, risk, decision from audit_events where seq > $1 order by seq limit $2";

/// Visits up to `limit` rows of the chain after `after_seq`, in order, as stored; returns the
/// last seq visited (`None`: there are no more rows). Stops at the first error `visit` returns.
pub async fn walk_page<E, F>(
    snapshot: &mut Snapshot,
    after_seq: i64,
    limit: i64,
    visit: &mut F,
) -> Result<Option<i64>, E>
where
    E: From<StorageError>,
    F: FnMut(RowRef<'_>) -> Result<(), E>,
{
    match snapshot.conn() {
        Conn::Sqlite(c) => walk_sqlite_page(c, after_seq, limit, visit).await,
        Conn::Postgres(c) => walk_postgres_page(c, after_seq, limit, visit).await,
    }
}

/// Streams one page, decoding each row's text in place (no copy per column).
async fn walk_postgres_page<E, F>(
    conn: &mut PgConnection,
    after_seq: i64,
    limit: i64,
    visit: &mut F,
) -> Result<Option<i64>, E>
where
    E: From<StorageError>,
    F: FnMut(RowRef<'_>) -> Result<(), E>,
{
    let mut rows = sqlx::query(POSTGRES_PAGE)
        .bind(after_seq)
        .bind(limit)
        .fetch(conn);
    let mut last = None;
    while let Some(row) = rows.try_next().await.map_err(StorageError::from)? {
        let row = pg_row_ref(&row)?;
        last = Some(row.seq);
        visit(row)?;
    }
    Ok(last)
}

fn pg_row_ref(row: &PgRow) -> Result<RowRef<'_>> {
    Ok(RowRef {
        seq: row.try_get(0)?,
        id: row.try_get(1)?,
        at: row.try_get(2)?,
        actor_kind: row.try_get(3)?,
        actor: row.try_get(4)?,
        kind: row.try_get(5)?,
        subject_type: row.try_get(6)?,
        subject_id: row.try_get(7)?,
        before_status: row.try_get(8)?,
        after_status: row.try_get(9)?,
        details: row.try_get(10)?,
        hash: row.try_get::<Option<&str>, _>(11)?.unwrap_or_default(),
        facets: [
            row.try_get(12)?,
            row.try_get(13)?,
            row.try_get(14)?,
            row.try_get(15)?,
            row.try_get(16)?,
        ],
    })
}

async fn walk_sqlite_page<E, F>(
    conn: &mut SqliteConnection,
    after_seq: i64,
    limit: i64,
    visit: &mut F,
) -> Result<Option<i64>, E>
where
    E: From<StorageError>,
    F: FnMut(RowRef<'_>) -> Result<(), E>,
{
    let mut handle = conn.lock_handle().await.map_err(StorageError::from)?;
    let raw = handle.as_raw_handle();
    // SAFETY: `raw` is the open connection of `handle`, which sqlx's worker does not touch
    // while the lock is held; the non-owning rusqlite connection, its statement and its rows
    // all end inside this call, before `handle` is dropped, and never cross an await.
    let db = unsafe { rusqlite::Connection::from_handle(raw.as_ptr()) }.map_err(sqlite)?;
    let walked = step_rows(&db, after_seq, limit, visit);
    drop(db);
    drop(handle);
    walked
}

/// Steps through one page on `db`, visiting each row in place.
fn step_rows<E, F>(
    db: &rusqlite::Connection,
    after_seq: i64,
    limit: i64,
    visit: &mut F,
) -> Result<Option<i64>, E>
where
    E: From<StorageError>,
    F: FnMut(RowRef<'_>) -> Result<(), E>,
{
    let mut statement = db.prepare(SQLITE_PAGE).map_err(sqlite)?;
    let mut rows = statement.query((after_seq, limit)).map_err(sqlite)?;
    let mut last = None;
    while let Some(row) = rows.next().map_err(sqlite)? {
        let row = row_ref(row)?;
        last = Some(row.seq);
        visit(row)?;
    }
    Ok(last)
}

/// One stepped row, borrowed; a value of the wrong type or text that is not UTF-8 is corrupt.
fn row_ref<'r>(row: &'r rusqlite::Row<'_>) -> Result<RowRef<'r>> {
    let seq = row.get_ref(0).map_err(sqlite)?.as_i64().ok();
    let corrupt = |what: &str| {
        let at = seq.map_or_else(|| "a row".to_owned(), |s| format!("seq {s}"));
        StorageError::Corrupt(format!("{at}: {what}"))
    };
    let text = |i: usize, name: &str| -> Result<&'r str> {
        let value = row.get_ref(i).map_err(sqlite)?;
        value
            .as_str()
            .map_err(|_| corrupt(&format!("`{name}` is not text")))
    };
    let optional = |i: usize, name: &str| -> Result<Option<&'r str>> {
        let value = row.get_ref(i).map_err(sqlite)?;
        value
            .as_str_or_null()
            .map_err(|_| corrupt(&format!("`{name}` is not text")))
    };
    let seq = seq.ok_or_else(|| corrupt("`seq` is not an integer"))?;
    let id = row
        .get_ref(1)
        .map_err(sqlite)?
        .as_blob()
        .ok()
        .and_then(|b| Uuid::from_slice(b).ok())
        .ok_or_else(|| corrupt("`id` is not a UUID"))?;
    let at = OffsetDateTime::parse(text(2, "at")?, &Rfc3339)
        .map_err(|_| corrupt("`at` is not an RFC 3339 time"))?;
    Ok(RowRef {
        seq,
        id,
        at,
        actor_kind: text(3, "actor_kind")?,
        actor: text(4, "actor")?,
        kind: text(5, "action")?,
        subject_type: text(6, "subject_type")?,
        subject_id: text(7, "subject_id")?,
        before_status: optional(8, "before_status")?,
        after_status: optional(9, "after_status")?,
        details: text(10, "details")?,
        hash: optional(11, "hash")?.unwrap_or_default(),
        facets: [
            optional(12, "agent")?,
            optional(13, "tool")?,
            optional(14, "domain")?,
            optional(15, "risk")?,
            optional(16, "decision")?,
        ],
    })
}

/// A chain row as sqlx reads it.
#[derive(sqlx::FromRow)]
struct StoredRowSql {
    seq: i64,
    id: Uuid,
    at: OffsetDateTime,
    actor_kind: String,
    actor: String,
    action: String,
    subject_type: String,
    subject_id: String,
    before_status: Option<String>,
    after_status: Option<String>,
    details: String,
    hash: Option<String>,
    agent: Option<String>,
    tool: Option<String>,
    domain: Option<String>,
    risk: Option<String>,
    decision: Option<String>,
}

impl From<StoredRowSql> for StoredRow {
    fn from(r: StoredRowSql) -> Self {
        StoredRow {
            seq: r.seq,
            id: r.id,
            at: r.at,
            actor_kind: r.actor_kind,
            actor: r.actor,
            kind: r.action,
            subject_type: r.subject_type,
            subject_id: r.subject_id,
            before_status: r.before_status,
            after_status: r.after_status,
            details: r.details,
            hash: r.hash.unwrap_or_default(),
            facets: [r.agent, r.tool, r.domain, r.risk, r.decision],
        }
    }
}

/// Up to `limit` rows of the chain after `after_seq`, in order, as stored: `details` as its
/// JSON text as stored, with the facet columns.
pub async fn chain_page(conn: Conn<'_>, after_seq: i64, limit: i64) -> Result<Vec<StoredRow>> {
    let sql = conn.pick(SQLITE_PAGE, POSTGRES_PAGE);
    let rows: Vec<StoredRowSql> = on!(conn, |c| sqlx::query_as(sql)
        .bind(after_seq)
        .bind(limit)
        .fetch_all(c)
        .await)?;
    Ok(rows.into_iter().map(StoredRow::from).collect())
}
