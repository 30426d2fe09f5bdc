//! The audit trail's SQL: appending events as linked rows of the hash chain, and reading
//! them back. Appends happen only at commit ([`super::writer::tx::Tx`]), after every other statement of
//! the change, so the chain head is held for as short a time as possible.
//!
//! The head lives in `audit_chain` (one row). Locking it (a row lock on PostgreSQL; SQLite's
//! `begin immediate` already holds the only write lock) serialises appends across instances,
//! so two servers on one database still write one chain. A writer moves the head from the one
//! it last committed in one conditional statement, and reads it under lock only when another
//! writer moved it meanwhile ([`append`]).

use serde_json::Value;
use sqlx::types::Json;
use time::OffsetDateTime;
use uuid::Uuid;

use super::chunk::chunk_len;
use super::conn::{Conn, on};
use super::error::{Result, StorageError, parse};
use super::status_change::StatusChange;
use super::webhooks;
use crate::audit::chain::{self, ChainedEvent, FACETS, Head, facet_of};
use crate::audit::checkpoint::Checkpoint;
use crate::domain::principal::ActorKind;

pub(super) mod link;
pub use link::PendingEvent;
use link::{SET_HEAD, SQLITE_MOVE_HEAD, link_all, moved_once, unlinked};

/// An audit row as read back.
#[derive(Debug, Clone, PartialEq)]
pub struct AuditRecord {
    /// Position in the trail.
    pub seq: i64,
    /// When.
    pub at: OffsetDateTime,
    /// Who.
    pub actor_kind: ActorKind,
    /// Their name.
    pub actor: String,
    /// What, e.g. `proposal.approved`.
    pub action: String,
    /// What kind of thing it happened to.
    pub subject_type: String,
    /// Its id.
    pub subject_id: String,
    /// Status before.
    pub before_status: Option<String>,
    /// Status after.
    pub after_status: Option<String>,
    /// Audit-safe details.
    pub details: Value,
}

#[derive(sqlx::FromRow)]
struct AuditRow {
    seq: i64,
    at: OffsetDateTime,
    actor_kind: String,
    actor: String,
    action: String,
    subject_type: String,
    subject_id: String,
    before_status: Option<String>,
    after_status: Option<String>,
    details: Json<Value>,
}

impl AuditRow {
    fn into_record(self) -> Result<AuditRecord> {
        Ok(AuditRecord {
            seq: self.seq,
            at: self.at,
            actor_kind: parse("actor kind", &self.actor_kind, ActorKind::parse)?,
            actor: self.actor,
            action: self.action,
            subject_type: self.subject_type,
            subject_id: self.subject_id,
            before_status: self.before_status,
            after_status: self.after_status,
            details: self.details.0,
        })
    }
}

const COLUMNS: &str = "seq, at, actor_kind, actor, action, subject_type, subject_id, \
                       before_status, after_status, details";

/// The audit row's columns, in the order the inserts bind them.
macro_rules! insert_columns {
    () => {
        "seq, id, at, actor_kind, actor, action, subject_type, subject_id, before_status, \
         after_status, details, hash, agent, tool, domain, risk, decision"
    };
}

// After `insert_columns!`, which it uses too.
mod inline;
pub(super) use inline::{Begin, append_and_commit, append_inline};

/// PostgreSQL: the rows as one array a column (parameters `$1` to `$17`), zipped back into rows
/// (`r`); `details` is kept as the canonical text given (`json`, which `jsonb` would re-print).
macro_rules! unnest_rows {
    () => {
        "(select s, id, at, ak, a, k, st, sid, b, af, d::json, hh, ag, t, dm, rk, dc \
         from unnest($1::int8[], $2::uuid[], $3::timestamptz[], $4::text[], $5::text[], \
         $6::text[], $7::text[], $8::text[], $9::text[], $10::text[], $11::text[], \
         $12::text[], $13::text[], $14::text[], $15::text[], $16::text[], $17::text[]) \
         as u(s, id, at, ak, a, k, st, sid, b, af, d, hh, ag, t, dm, rk, dc)) r"
    };
}

/// Appends `events` to the chain, linked after the current head, and moves the head.
///
/// The writer remembers the head it last committed (`known`). When given, the events are
/// linked after it and the head is moved only if it is still there, and the rows inserted
/// with it: on PostgreSQL one statement for the head and every row, which also takes the
/// head's row lock (four round trips for a group of seven events before, on the writer's
/// serial path); on SQLite the head's update and an insert per chunk. When another writer
/// moved the head meanwhile (a second instance, or the CLI on the same SQLite file), nothing
/// was changed, and the events are linked again after the head read under lock, and
/// inserted, as without a known head.
///
/// On PostgreSQL the statement that moves a known head also notifies other instances of the
/// proposals whose status the events moved, and reads those proposals' webhook targets
/// ([`webhooks::queue_status_changes`]): one round trip fewer on the writer's serial path.
pub(super) async fn append(
    mut conn: Conn<'_>,
    events: Vec<PendingEvent>,
    known: Option<Head>,
) -> Result<Appended> {
    if events.is_empty() {
        return Ok(Appended {
            changes: Vec::new(),
            head: known,
            targets: None,
        });
    }
    let (proposals, mut rows, texts) = unlinked(events)?;
    let moved = moved_once(&proposals);
    let mut targets = None;
    let head = match known {
        Some(known) => {
            let head = link_all(&mut rows, &texts, &known);
            let to = Move {
                from: &known,
                to: &head,
                moved: &moved,
            };
            match move_head_inserting(conn.reborrow(), &to, &rows, &texts).await? {
                Moved::Yes(read) => {
                    targets = read;
                    head
                }
                Moved::Elsewhere(current) => relink(conn, &mut rows, &texts, current).await?,
            }
        }
        None => relink(conn, &mut rows, &texts, None).await?,
    };
    Ok(Appended {
        changes: StatusChange::of_rows(&rows, proposals),
        head: Some(head),
        targets,
    })
}

/// PostgreSQL: appends `events`, none of which moves a proposal, after `known` (the head this
/// writer last committed) in one statement outside any transaction, which commits by itself:
/// one round trip for a group of pre-tool-checks, where a transaction takes three (`begin`,
/// the statement, `commit`). If another instance moved the head meanwhile, that statement
/// wrote nothing, and the events are linked after the head read under lock, in a transaction.
/// Answers the head the events end at.
pub(super) async fn append_alone(
    c: &mut sqlx::PgConnection,
    events: Vec<PendingEvent>,
    known: Head,
) -> Result<Head> {
    let (_, mut rows, texts) = unlinked(events)?;
    let head = link_all(&mut rows, &texts, &known);
    let to = Move {
        from: &known,
        to: &head,
        moved: &[],
    };
    match move_head_inserting(Conn::Postgres(c), &to, &rows, &texts).await? {
        Moved::Yes(_) => Ok(head),
        Moved::Elsewhere(_) => {
            // The head's lock ended with that statement: read it again under a new one. (On
            // an error the writer closes this connection, which rolls the transaction back.)
            sqlx::Executor::execute(&mut *c, "begin").await?;
            let head = relink(Conn::Postgres(c), &mut rows, &texts, None).await?;
            sqlx::Executor::execute(&mut *c, "commit").await?;
            Ok(head)
        }
    }
}

/// What [`append`] did.
pub(super) struct Appended {
    /// The status changes appended.
    pub changes: Vec<StatusChange>,
    /// The head the events end at.
    pub head: Option<Head>,
    /// The webhook targets of the proposals moved, if they were read with the events (and the
    /// other instances notified).
    pub targets: Option<Vec<webhooks::Target>>,
}

/// A conditional move of the head: from `from` to `to`, for events that moved `moved`.
struct Move<'a> {
    from: &'a Head,
    to: &'a Head,
    /// The proposals whose status the events moved, each once.
    moved: &'a [Uuid],
}

/// Links `rows` after the head as it is in the database (`current`, if it was read under lock
/// already; else read under lock now), moves it, and inserts the rows.
async fn relink(
    mut conn: Conn<'_>,
    rows: &mut [ChainedEvent],
    texts: &[String],
    current: Option<Head>,
) -> Result<Head> {
    let current = match current {
        Some(current) => current,
        None => lock_head(conn.reborrow()).await?,
    };
    let head = link_all(rows, texts, &current);
    set_head(conn.reborrow(), &head).await?;
    insert_all(conn, rows, texts).await?;
    Ok(head)
}

/// The chain head, locked until the transaction ends.
async fn lock_head(conn: Conn<'_>) -> Result<Head> {
    let sql = conn.pick(
        "select seq, hash from audit_chain where id = 1",
        "select seq, hash from audit_chain where id = 1 for update",
    );
    let (seq, hash): (i64, String) = on!(conn, |c| sqlx::query_as(sql).fetch_one(c).await)?;
    Ok(Head { seq, hash })
}

/// Whether [`move_head_inserting`] moved the head.
enum Moved {
    /// It did; on PostgreSQL with the webhook targets of the proposals the events moved (and
    /// other instances notified of them).
    Yes(Option<Vec<webhooks::Target>>),
    /// It was elsewhere, and did not move: here it is, already locked (PostgreSQL), or `None`
    /// (SQLite, where the caller reads it under the write lock it holds).
    Elsewhere(Option<Head>),
}

/// Moves the head as `to` says if it is still at `to.from`, and then inserts `rows` (linked
/// from there to `to.to`, with their canonical details `texts`); if the head was elsewhere,
/// changes nothing. On PostgreSQL that is one statement, which locks the head either way and
/// answers it as it was, so a head another instance moved costs one more statement (relinked,
/// set) and the rows' insert, not two; when it moved the head, the same statement notified
/// other instances of `to.moved` and read their webhook targets. On SQLite, the head's update
/// and then the rows'.
async fn move_head_inserting(
    conn: Conn<'_>,
    to: &Move<'_>,
    rows: &[ChainedEvent],
    texts: &[String],
) -> Result<Moved> {
    match conn {
        Conn::Sqlite(c) => {
            let moved = sqlx::query(SQLITE_MOVE_HEAD)
                .bind(to.to.seq)
                .bind(&to.to.hash)
                .bind(to.from.seq)
                .bind(&to.from.hash)
                .execute(&mut *c)
                .await?
                .rows_affected();
            if moved != 1 {
                return Ok(Moved::Elsewhere(None));
            }
            insert_all(Conn::Sqlite(c), rows, texts).await?;
            Ok(Moved::Yes(None))
        }
        Conn::Postgres(c) => {
            // `o` reads the head under its row lock (waiting for another instance's group to
            // commit, then reading the head it left); `h` and `i` run only if it is at `from`.
            // Data-modifying parts of a `with` always run, whether the query reads them or not;
            // `n` (the notifications, sent only if the head moved) is read as the one row the
            // targets join from the side, so there is always a row to read the head from.
            let sql = concat!(
                "with o as (select seq, hash, seq = $18 and hash = $19 as here \
                 from audit_chain where id = 1 for update), \
                 h as (update audit_chain n set seq = $20, hash = $21 from o \
                 where n.id = 1 and o.here), \
                 i as (insert into audit_events (",
                insert_columns!(),
                ") select r.* from o, ",
                unnest_rows!(),
                " where o.here), \
                 n as (",
                webhooks::pg_notify_moved!("(select case when here then $22::uuid[] end from o)"),
                ") select o.seq, o.hash, x.proposal_id, x.token_id, x.webhook_url \
                 from o cross join n left join lateral (",
                webhooks::pg_targets!("$22"),
                " and o.here) x on true"
            );
            let read: Vec<HeadAndTarget> = bind_rows(sqlx::query_as(sql), rows, texts)
                .bind(to.from.seq)
                .bind(&to.from.hash)
                .bind(to.to.seq)
                .bind(&to.to.hash)
                .bind(to.moved)
                .fetch_all(c)
                .await?;
            let Some((seq, hash, ..)) = read.first() else {
                return Err(StorageError::Corrupt("the audit chain has no head".into()));
            };
            let was = Head {
                seq: *seq,
                hash: hash.clone(),
            };
            if was != *to.from {
                return Ok(Moved::Elsewhere(Some(was)));
            }
            let targets = read.into_iter().map(|(_, _, p, t, u)| (p, t, u));
            Ok(Moved::Yes(Some(webhooks::targets_of(targets))))
        }
    }
}

/// A row of [`move_head_inserting`]'s statement: the head as it was, and a webhook target
/// (`None`s where there is none).
type HeadAndTarget = (i64, String, Option<Uuid>, Option<Uuid>, Option<String>);

async fn set_head(conn: Conn<'_>, head: &Head) -> Result<()> {
    on!(conn, |c| sqlx::query(SET_HEAD)
        .bind(head.seq)
        .bind(&head.hash)
        .execute(c)
        .await
        .map(|_| ()))?;
    Ok(())
}

/// Binds `rows` (with their canonical details, `texts`) as [`unnest_rows!`] reads them: one
/// array a column, each as long as `rows`.
fn bind_rows<'q, O>(
    query: sqlx::query::QueryAs<'q, sqlx::Postgres, O, sqlx::postgres::PgArguments>,
    rows: &'q [ChainedEvent],
    texts: &'q [String],
) -> sqlx::query::QueryAs<'q, sqlx::Postgres, O, sqlx::postgres::PgArguments> {
    let column = |f: fn(&'q ChainedEvent) -> Option<&'q str>| -> Vec<Option<&'q str>> {
        rows.iter().map(f).collect()
    };
    let mut query = query
        .bind(rows.iter().map(|r| r.seq).collect::<Vec<_>>())
        .bind(rows.iter().map(|r| r.id).collect::<Vec<_>>())
        .bind(rows.iter().map(|r| r.at).collect::<Vec<_>>())
        .bind(column(|r| Some(r.actor_kind.as_str())))
        .bind(column(|r| Some(r.actor.as_str())))
        .bind(column(|r| Some(r.kind.as_str())))
        .bind(column(|r| Some(r.subject_type.as_str())))
        .bind(column(|r| Some(r.subject_id.as_str())))
        .bind(column(|r| r.before_status.as_deref()))
        .bind(column(|r| r.after_status.as_deref()))
        .bind(texts.iter().map(String::as_str).collect::<Vec<_>>())
        .bind(column(|r| Some(r.hash.as_str())));
    for facet in FACETS {
        query = query.bind(
            rows.iter()
                .map(|r| facet_of(&r.details, facet, &r.actor_kind, &r.actor))
                .collect::<Vec<_>>(),
        );
    }
    query
}

/// Inserts `rows`, each with its details' canonical text (`texts`, in the same order): on
/// SQLite in fixed-size chunks ([`chunk_len`]), on PostgreSQL in one statement.
async fn insert_all(conn: Conn<'_>, rows: &[ChainedEvent], texts: &[String]) -> Result<()> {
    match conn {
        Conn::Sqlite(c) => {
            let mut start = 0;
            while start < rows.len() {
                let end = start + chunk_len(rows.len() - start);
                insert_chunk(c, &rows[start..end], &texts[start..end]).await?;
                start = end;
            }
        }
        Conn::Postgres(c) => {
            let sql = concat!(
                "insert into audit_events (",
                insert_columns!(),
                ") select r.* from ",
                unnest_rows!()
            );
            bind_rows(sqlx::query_as::<_, ()>(sql), rows, texts)
                .fetch_optional(c)
                .await?;
        }
    }
    Ok(())
}

/// SQLite: inserts `rows` in one statement, a row of binds each.
async fn insert_chunk(
    c: &mut sqlx::SqliteConnection,
    rows: &[ChainedEvent],
    texts: &[String],
) -> Result<()> {
    let mut q = sqlx::QueryBuilder::new(concat!(
        "insert into audit_events (",
        insert_columns!(),
        ") "
    ));
    q.push_values(rows.iter().zip(texts), |mut b, (r, text)| {
        b.push_bind(r.seq)
            .push_bind(r.id)
            .push_bind(r.at)
            .push_bind(&r.actor_kind)
            .push_bind(&r.actor)
            .push_bind(&r.kind)
            .push_bind(&r.subject_type)
            .push_bind(&r.subject_id)
            .push_bind(&r.before_status)
            .push_bind(&r.after_status)
            .push_bind(text.as_str())
            .push_bind(&r.hash);
        for facet in FACETS {
            b.push_bind(facet_of(&r.details, facet, &r.actor_kind, &r.actor));
        }
    });
    q.build().execute(c).await?;
    Ok(())
}

/// The installation's salt for value hashes, created on first use.
pub async fn salt(conn: Conn<'_>) -> Result<Option<Vec<u8>>> {
    let sql = "select salt from audit_salt where id = 1";
    let row: Option<(Vec<u8>,)> = on!(conn, |c| sqlx::query_as(sql).fetch_optional(c).await)?;
    Ok(row.map(|(s,)| s))
}

/// Stores a salt unless one exists.
pub async fn insert_salt(conn: Conn<'_>, salt: &[u8]) -> Result<()> {
    let sql = "insert into audit_salt (id, salt) values (1, $1) on conflict do nothing";
    on!(conn, |c| sqlx::query(sql)
        .bind(salt)
        .execute(c)
        .await
        .map(|_| ()))?;
    Ok(())
}

/// The trail of one subject, in order.
pub async fn for_subject(
    conn: Conn<'_>,
    subject_type: &str,
    subject_id: &str,
) -> Result<Vec<AuditRecord>> {
    let sql = format!(
        "select {COLUMNS} from audit_events where subject_type = $1 and subject_id = $2 order by seq"
    );
    let rows: Vec<AuditRow> = on!(conn, |c| sqlx::query_as(&sql)
        .bind(subject_type)
        .bind(subject_id)
        .fetch_all(c)
        .await)?;
    rows.into_iter().map(AuditRow::into_record).collect()
}

/// When `actor` last recorded an event of kind `action` on a subject, if ever (the subject's
/// index, walked backwards).
pub async fn last_by_actor(
    conn: Conn<'_>,
    subject_type: &str,
    subject_id: &str,
    action: &str,
    actor: &str,
) -> Result<Option<OffsetDateTime>> {
    let sql = "select at from audit_events where subject_type = $1 and subject_id = $2 \
               and action = $3 and actor = $4 order by seq desc limit 1";
    let row: Option<(OffsetDateTime,)> = on!(conn, |c| sqlx::query_as(sql)
        .bind(subject_type)
        .bind(subject_id)
        .bind(action)
        .bind(actor)
        .fetch_optional(c)
        .await)?;
    Ok(row.map(|(at,)| at))
}

/// Who recorded the last `action` on subject `subject_type`/`subject_id`, and when.
pub async fn last_of(
    conn: Conn<'_>,
    subject_type: &str,
    subject_id: &str,
    action: &str,
) -> Result<Option<(String, OffsetDateTime)>> {
    let sql = "select actor, at from audit_events where subject_type = $1 and subject_id = $2 \
               and action = $3 order by seq desc limit 1";
    let row: Option<(String, OffsetDateTime)> = on!(conn, |c| sqlx::query_as(sql)
        .bind(subject_type)
        .bind(subject_id)
        .bind(action)
        .fetch_optional(c)
        .await)?;
    Ok(row)
}

/// The chain head as the database records it, and the first chained seq (rows before it
/// were written before the chain existed).
pub async fn head(conn: Conn<'_>) -> Result<(Head, i64)> {
    let sql = "select seq, hash, chained_from from audit_chain where id = 1";
    let (seq, hash, from): (i64, String, i64) =
        on!(conn, |c| sqlx::query_as(sql).fetch_one(c).await)?;
    Ok((Head { seq, hash }, from))
}

/// The hash of the row at `seq`, if there is one.
pub async fn hash_at(conn: Conn<'_>, seq: i64) -> Result<Option<String>> {
    let sql = "select hash from audit_events where seq = $1";
    let row: Option<(Option<String>,)> = on!(conn, |c| sqlx::query_as(sql)
        .bind(seq)
        .fetch_optional(c)
        .await)?;
    Ok(row.and_then(|(h,)| h))
}

/// Stores a signed checkpoint (a second one for the same seq is ignored).
pub async fn insert_checkpoint(conn: Conn<'_>, cp: &Checkpoint) -> Result<()> {
    let sql = "insert into audit_checkpoints (seq, hash, at, public_key, signature) \
               values ($1, $2, $3, $4, $5) on conflict do nothing";
    on!(conn, |c| sqlx::query(sql)
        .bind(cp.seq)
        .bind(&cp.hash)
        .bind(&cp.at)
        .bind(&cp.public_key)
        .bind(&cp.signature)
        .execute(c)
        .await
        .map(|_| ()))?;
    Ok(())
}

type CheckpointRow = (i64, String, String, String, String);

fn checkpoint((seq, hash, at, public_key, signature): CheckpointRow) -> Checkpoint {
    Checkpoint {
        seq,
        hash,
        at,
        public_key,
        signature,
    }
}

/// Every stored checkpoint, oldest first.
pub async fn checkpoints(conn: Conn<'_>) -> Result<Vec<Checkpoint>> {
    let sql = "select seq, hash, at, public_key, signature from audit_checkpoints order by seq";
    let rows: Vec<CheckpointRow> = on!(conn, |c| sqlx::query_as(sql).fetch_all(c).await)?;
    Ok(rows.into_iter().map(checkpoint).collect())
}

/// The latest stored checkpoint.
pub async fn latest_checkpoint(conn: Conn<'_>) -> Result<Option<Checkpoint>> {
    let sql = "select seq, hash, at, public_key, signature from audit_checkpoints \
               order by seq desc limit 1";
    let row: Option<CheckpointRow> = on!(conn, |c| sqlx::query_as(sql).fetch_optional(c).await)?;
    Ok(
        row.map(|(seq, hash, at, public_key, signature)| Checkpoint {
            seq,
            hash,
            at,
            public_key,
            signature,
        }),
    )
}

impl From<chain::ChainError> for StorageError {
    fn from(e: chain::ChainError) -> Self {
        StorageError::Corrupt(e.to_string())
    }
}
