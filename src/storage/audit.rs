//! The audit trail's SQL: appending events as linked rows of the hash chain, and reading
//! them back. Appends happen only at commit ([`super::Tx`]), after every other statement of
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

use super::db::{Conn, on};
use super::writer::Tx;
use super::{Result, StorageError, parse, webhooks};
use crate::audit::chain::{self, ChainedEvent, FACETS, Head, facet_of};
use crate::audit::checkpoint::Checkpoint;
use crate::audit::{Actor, AuditEvent, EventRow};
use crate::domain::principal::ActorKind;

/// An event recorded on a transaction, waiting for its commit. Its details' canonical text is
/// made where the event is built (a request's own task, when the service builds it before the
/// write), so the one writer only links and inserts it.
#[derive(Debug, Clone)]
pub struct PendingEvent {
    at: OffsetDateTime,
    actor: Actor,
    row: EventRow,
    /// The canonical text of `row.details` (`None`: it has none, and appending it fails).
    text: Option<String>,
}

impl PendingEvent {
    /// This event's details if it is of `kind` and about `subject_type` `subject_id`.
    pub(super) fn details_of(
        &self,
        kind: &str,
        subject_type: &str,
        subject_id: &str,
    ) -> Option<&Value> {
        let row = &self.row;
        (row.kind == kind && row.subject_type == subject_type && row.subject_id == subject_id)
            .then_some(&row.details)
    }

    /// The proposal whose status this event records a change of, if it does.
    pub(super) fn moved_proposal(&self) -> Option<Uuid> {
        let row = &self.row;
        if row.subject_type != "proposal" || row.after_status.is_none() {
            return None;
        }
        if row.after_status == row.before_status {
            return None;
        }
        Uuid::parse_str(&row.subject_id).ok()
    }

    /// An event by `actor` at `at`.
    pub fn new(at: OffsetDateTime, actor: Actor, event: AuditEvent) -> Self {
        let row = event.into_row();
        Self {
            at: chain::trail_time(at),
            actor,
            text: chain::canonical_text(&row.details),
            row,
        }
    }
}

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

/// Rows per insert statement where several rows go in together on SQLite (a group's audit
/// events, and on both backends its staged proposals and notifications): fixed sizes, so the
/// connection's prepared-statement cache holds one statement per size instead of one per batch
/// length (17 binds a row; 64 rows stay well under SQLite's limit of 32,766). Powers of two,
/// so `n` rows take as many statements as `n` has bits set (seven took four with sizes 64, 16,
/// 4 and 1). PostgreSQL inserts any number of audit rows in one statement ([`insert_all`]).
const CHUNKS: [usize; 7] = [64, 32, 16, 8, 4, 2, 1];

/// The largest fixed chunk that fits in `remaining` rows.
pub(super) fn chunk_len(remaining: usize) -> usize {
    CHUNKS.into_iter().find(|&n| n <= remaining).unwrap_or(1)
}

/// The audit row's columns, in the order the inserts bind them.
macro_rules! insert_columns {
    () => {
        "seq, id, at, actor_kind, actor, action, subject_type, subject_id, before_status, \
         after_status, details, hash, agent, tool, domain, risk, decision"
    };
}

mod inline;
pub(super) use inline::append_and_commit;

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
    tx: &mut Tx,
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
    let mut moved: Vec<Uuid> = proposals.iter().flatten().copied().collect();
    moved.sort_unstable();
    moved.dedup();
    let mut targets = None;
    let head = match known {
        Some(known) => {
            let head = link_all(&mut rows, &texts, &known);
            let to = Move {
                from: &known,
                to: &head,
                moved: &moved,
            };
            match move_head_inserting(tx.conn(), &to, &rows, &texts).await? {
                Moved::Yes(read) => {
                    targets = read;
                    head
                }
                Moved::Elsewhere(current) => relink(tx, &mut rows, &texts, current).await?,
            }
        }
        None => relink(tx, &mut rows, &texts, None).await?,
    };
    let changes = rows
        .iter()
        .zip(proposals)
        .filter_map(|(row, proposal)| {
            Some(StatusChange {
                proposal: proposal?,
                before: row.before_status.clone(),
                after: row.after_status.clone()?,
                event_id: row.id,
                seq: row.seq,
                kind: row.kind.clone(),
                at: row.at,
            })
        })
        .collect();
    Ok(Appended {
        changes,
        head: Some(head),
        targets,
    })
}

/// `events` as rows to link (each with a fresh id, not yet linked), with the proposal each
/// moves (if any) and its details' canonical text, in order.
fn unlinked(events: Vec<PendingEvent>) -> Result<Unlinked> {
    let mut proposals = Vec::with_capacity(events.len());
    let mut rows = Vec::with_capacity(events.len());
    let mut texts = Vec::with_capacity(events.len());
    for e in events {
        proposals.push(e.moved_proposal());
        // Kept as the canonical text the hash covers, so verifying reads it as it is.
        let text = e.text.ok_or_else(|| {
            StorageError::Corrupt(format!("{} details without a canonical form", e.row.kind))
        })?;
        rows.push(ChainedEvent {
            seq: 0,
            id: Uuid::now_v7(),
            at: e.at,
            actor_kind: e.actor.kind.as_str().to_owned(),
            actor: e.actor.name,
            kind: e.row.kind.to_owned(),
            subject_type: e.row.subject_type.to_owned(),
            subject_id: e.row.subject_id,
            before_status: e.row.before_status,
            after_status: e.row.after_status,
            details: e.row.details,
            hash: String::new(),
        });
        texts.push(text);
    }
    Ok((proposals, rows, texts))
}

/// What [`unlinked`] makes of events: the proposals they move, the rows, their texts.
type Unlinked = (Vec<Option<Uuid>>, Vec<ChainedEvent>, Vec<String>);

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

/// Links `rows` (with their canonical details, `texts`) one after another from `from`;
/// answers the head after the last.
fn link_all(rows: &mut [ChainedEvent], texts: &[String], from: &Head) -> Head {
    let mut head = from.clone();
    for (row, text) in rows.iter_mut().zip(texts) {
        row.seq = head.seq + 1;
        row.hash = link(row, &head.hash, text);
        head = Head {
            seq: row.seq,
            hash: row.hash.clone(),
        };
    }
    head
}

/// Links `rows` after the head as it is in the database (`current`, if it was read under lock
/// already; else read under lock now), moves it, and inserts the rows.
async fn relink(
    tx: &mut Tx,
    rows: &mut [ChainedEvent],
    texts: &[String],
    current: Option<Head>,
) -> Result<Head> {
    let current = match current {
        Some(current) => current,
        None => lock_head(tx.conn()).await?,
    };
    let head = link_all(rows, texts, &current);
    set_head(tx.conn(), &head).await?;
    insert_all(tx.conn(), rows, texts).await?;
    Ok(head)
}

/// A proposal's status change, as its event was appended to the chain: what wakes waiters and
/// queues webhook deliveries at commit.
#[derive(Debug, Clone)]
pub struct StatusChange {
    /// The proposal.
    pub proposal: Uuid,
    /// Its status before (`None` when it was just submitted).
    pub before: Option<String>,
    /// Its status after.
    pub after: String,
    /// The audit event's id.
    pub event_id: Uuid,
    /// The audit event's position in the chain.
    pub seq: i64,
    /// The audit event's kind.
    pub kind: String,
    /// When it happened.
    pub at: OffsetDateTime,
}

/// The row's link in the chain. A build with the `bench-unchained` feature skips it (the rows
/// carry a constant instead), only to measure what the chain costs; such a build says so loudly
/// at start and its trail never verifies.
#[cfg(not(feature = "bench-unchained"))]
fn link(row: &ChainedEvent, previous: &str, canonical_details: &str) -> String {
    row.link_hash_over(previous, canonical_details)
}

#[cfg(feature = "bench-unchained")]
fn link(_row: &ChainedEvent, _previous: &str, _canonical_details: &str) -> String {
    "unchained".to_owned()
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

/// SQLite: moves the head to `$1`, `$2` if it is at `$3`, `$4` (with sqlx, and with rusqlite
/// on the writer's thread: [`inline`]).
const SQLITE_MOVE_HEAD: &str =
    "update audit_chain set seq = $1, hash = $2 where id = 1 and seq = $3 and hash = $4";

/// Sets the head to `$1`, `$2` (both backends; on SQLite also on the writer's thread).
const SET_HEAD: &str = "update audit_chain set seq = $1, hash = $2 where id = 1";

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

#[cfg(test)]
mod tests {
    use super::chunk_len;

    #[test]
    fn batches_split_into_fixed_sizes() {
        let split = |mut n: usize| {
            let mut sizes = Vec::new();
            while n > 0 {
                let c = chunk_len(n);
                sizes.push(c);
                n -= c;
            }
            sizes
        };
        assert_eq!(split(1), vec![1]);
        assert_eq!(split(70), vec![64, 4, 2]);
        assert_eq!(split(128), vec![64, 64]);
        assert_eq!(split(21), vec![16, 4, 1]);
        // As many statements as the count has bits set, up to 127.
        assert_eq!(split(7), vec![4, 2, 1]);
        assert_eq!(split(127).len(), 7);
    }
}
