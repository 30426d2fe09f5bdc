//! Agents' webhook deliveries: queued at the commit of every status change of a proposal whose
//! token carries a callback URL ([`queue_status_changes`], called by [`super::Tx`]), claimed
//! by the dispatcher ([`claim_due`]), and their attempts recorded ([`record_attempt`]).
//!
//! A claim moves `next_attempt_at` past the attempt's time limit, so a dispatcher that dies
//! mid-attempt leaves the delivery to be taken again (at least once, never lost); on
//! PostgreSQL `for update skip locked` keeps instances off each other's claims.

use sqlx::types::Json;
use time::OffsetDateTime;
use uuid::Uuid;

use super::conn::{Conn, on};
use super::direct::raw;
use super::error::Result;
use super::status_change::StatusChange;
use crate::domain::webhook::{AuditRef, StatusChanged};

/// PostgreSQL: the callbacks (`proposal_id`, `token_id`, `webhook_url`) of the proposals in
/// the `uuid[]` parameter `$ids` whose tokens have one and are not revoked.
macro_rules! pg_targets {
    ($ids:literal) => {
        concat!(
            "select p.id as proposal_id, t.id as token_id, t.webhook_url \
             from proposals p join api_tokens t on t.id = p.token_id where p.id = any(",
            $ids,
            ") and t.webhook_url is not null and t.revoked_at is null"
        )
    };
}
pub(super) use pg_targets;

/// PostgreSQL: one row, the count of notifications sent (delivered at commit) to every
/// instance listening on [`super::changes::PROPOSAL_CHANNEL`], one per proposal in `$ids` (a
/// `uuid[]` parameter or expression; none if it is null). A statement must read the count, or
/// the notifications are not sent.
macro_rules! pg_notify_moved {
    ($ids:literal) => {
        concat!(
            "select count(pg_notify('countersign_proposal', id::text)) as sent from unnest(",
            $ids,
            "::uuid[]) id"
        )
    };
}
pub(super) use pg_notify_moved;

/// A proposal whose token has a callback: where its changes go.
#[derive(sqlx::FromRow)]
pub struct Target {
    proposal_id: Uuid,
    token_id: Uuid,
    webhook_url: String,
}

/// Queues one delivery per change of a proposal submitted with a token that has a callback
/// URL (and is not revoked); how many were queued. Runs inside the change's transaction.
/// `targets`, when given, are the callbacks already read with the group's events
/// ([`super::audit::append`] on PostgreSQL, which also notified other instances); otherwise
/// they are read here, and on PostgreSQL other instances' waiters of every proposal in
/// `changes` are notified.
pub async fn queue_status_changes(
    mut conn: Conn<'_>,
    changes: &[StatusChange],
    targets: Option<Vec<Target>>,
) -> Result<usize> {
    let targets = match targets {
        Some(targets) => targets,
        None => {
            let mut ids: Vec<Uuid> = changes.iter().map(|c| c.proposal).collect();
            ids.sort_unstable();
            ids.dedup();
            self::targets(conn.reborrow(), &ids).await?
        }
    };
    if targets.is_empty() {
        return Ok(0);
    }
    let mut queued = 0;
    for change in changes {
        let Some(target) = targets.iter().find(|t| t.proposal_id == change.proposal) else {
            continue;
        };
        let id = Uuid::now_v7();
        let body = StatusChanged::new(
            id,
            change.proposal,
            change.before.clone(),
            change.after.clone(),
            AuditRef {
                id: change.event_id,
                seq: change.seq,
                kind: change.kind.clone(),
            },
            change.at,
        );
        let body = serde_json::to_string(&body).map_err(|e| {
            super::error::StorageError::Corrupt(format!("a webhook body did not serialise: {e}"))
        })?;
        insert_delivery(conn.reborrow(), id, target, &body, change.at).await?;
        queued += 1;
    }
    Ok(queued)
}

/// SQLite: the callbacks of the proposals in `$1` (a JSON array of their ids), as
/// [`targets`] reads them through sqlx and [`targets_direct`] on the writer's own thread.
const SQLITE_TARGETS: &str = "select p.id as proposal_id, t.id as token_id, t.webhook_url \
     from proposals p join api_tokens t on t.id = p.token_id \
     where p.id in (select unhex(replace(value, '-', '')) from json_each($1)) \
     and t.webhook_url is not null and t.revoked_at is null";

/// SQLite: [`targets`] read through rusqlite, on a connection whose handle the caller holds
/// (the writer's, inside its group's transaction, as it appends the group's events).
pub(super) fn targets_direct(db: &rusqlite::Connection, proposals: &[Uuid]) -> Result<Vec<Target>> {
    let ids = serde_json::to_string(proposals).map_err(|e| {
        super::error::StorageError::Corrupt(format!("proposal ids did not serialise: {e}"))
    })?;
    raw::all(db, SQLITE_TARGETS, [ids], |cols| {
        Ok(Target {
            proposal_id: cols.uuid("proposal_id")?,
            token_id: cols.uuid("token_id")?,
            webhook_url: cols.text("webhook_url")?,
        })
    })
}

/// The callbacks of these proposals' tokens. On PostgreSQL the same statement tells every
/// instance listening that the proposals changed status ([`super::changes::PROPOSAL_CHANNEL`],
/// delivered at commit; SQLite has one process, told directly): one round trip on the writer's
/// serial path instead of two. Its outer row is the count of notifications, which is always
/// read; the targets join it from the side, so they never decide whether the notifications go.
async fn targets(conn: Conn<'_>, proposals: &[Uuid]) -> Result<Vec<Target>> {
    match conn {
        Conn::Sqlite(c) => Ok(sqlx::query_as(SQLITE_TARGETS)
            .bind(Json(proposals))
            .fetch_all(c)
            .await?),
        Conn::Postgres(c) => {
            let sql = concat!(
                "select x.proposal_id, x.token_id, x.webhook_url from (",
                pg_notify_moved!("$1"),
                ") n left join lateral (",
                pg_targets!("$1"),
                ") x on true"
            );
            let rows: Vec<TargetRow> = sqlx::query_as(sql).bind(proposals).fetch_all(c).await?;
            Ok(targets_of(rows))
        }
    }
}

/// A row of a statement that reads targets from the side of another row ([`pg_targets!`]
/// joined `left join lateral`): all `None` where there are none.
pub(super) type TargetRow = (Option<Uuid>, Option<Uuid>, Option<String>);

/// The targets among `rows` (a row of `None`s, where the join found none, is not one).
pub(super) fn targets_of(rows: impl IntoIterator<Item = TargetRow>) -> Vec<Target> {
    rows.into_iter()
        .filter_map(|row| match row {
            (Some(proposal_id), Some(token_id), Some(webhook_url)) => Some(Target {
                proposal_id,
                token_id,
                webhook_url,
            }),
            _ => None,
        })
        .collect()
}

async fn insert_delivery(
    conn: Conn<'_>,
    id: Uuid,
    target: &Target,
    body: &str,
    at: OffsetDateTime,
) -> Result<()> {
    let sql = "insert into webhook_deliveries (id, token_id, proposal_id, url, body, created_at, \
               state, attempts, next_attempt_at) values ($1, $2, $3, $4, $5, $6, 'pending', 0, $6)";
    on!(conn, |c| sqlx::query(sql)
        .bind(id)
        .bind(target.token_id)
        .bind(target.proposal_id)
        .bind(&target.webhook_url)
        .bind(body)
        .bind(at)
        .execute(c)
        .await
        .map(|_| ()))?;
    Ok(())
}

/// A delivery taken for one attempt.
#[derive(sqlx::FromRow)]
pub struct DueDelivery {
    /// Its id.
    pub id: Uuid,
    /// The token whose secret signs it.
    pub token_id: Uuid,
    /// Where it goes.
    pub url: String,
    /// What it says.
    pub body: String,
    /// This attempt's number (1 for the first).
    pub attempts: i32,
    /// When it was queued.
    pub created_at: OffsetDateTime,
}

/// Whether any delivery is due at `now` (a read: the dispatcher claims only when there is).
pub async fn any_due(conn: Conn<'_>, now: OffsetDateTime) -> Result<bool> {
    let sql = conn.pick(
        "select exists (select 1 from webhook_deliveries where state = 'pending' \
         and julianday(next_attempt_at) <= julianday($1))",
        "select exists (select 1 from webhook_deliveries where state = 'pending' \
         and next_attempt_at <= $1)",
    );
    let (due,): (bool,) = on!(conn, |c| sqlx::query_as(sql).bind(now).fetch_one(c).await)?;
    Ok(due)
}

/// Takes up to `limit` deliveries due at `now` for one attempt each: counts the attempt and
/// hides them until `hold_until` (if this attempt never reports, they are due again then).
pub async fn claim_due(
    conn: Conn<'_>,
    now: OffsetDateTime,
    hold_until: OffsetDateTime,
    limit: i64,
) -> Result<Vec<DueDelivery>> {
    let sql = conn.pick(
        "update webhook_deliveries set attempts = attempts + 1, next_attempt_at = $2 \
         where id in (select id from webhook_deliveries where state = 'pending' \
                      and julianday(next_attempt_at) <= julianday($1) \
                      order by next_attempt_at limit $3) \
         returning id, token_id, url, body, attempts, created_at",
        "update webhook_deliveries set attempts = attempts + 1, next_attempt_at = $2 \
         where id in (select id from webhook_deliveries where state = 'pending' \
                      and next_attempt_at <= $1 \
                      order by next_attempt_at limit $3 for update skip locked) \
         returning id, token_id, url, body, attempts, created_at",
    );
    let rows = on!(conn, |c| sqlx::query_as(sql)
        .bind(now)
        .bind(hold_until)
        .bind(limit)
        .fetch_all(c)
        .await)?;
    Ok(rows)
}

/// What signs a token's deliveries: its secret, and the one a rotation replaced with the end
/// of its overlap.
#[derive(Clone)]
pub struct Signers {
    /// The current secret.
    pub current: String,
    /// The secret before the last rotation.
    pub previous: Option<String>,
    /// Until when the previous one signs too.
    pub previous_until: Option<OffsetDateTime>,
}

impl std::fmt::Debug for Signers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Signers")
            .field("previous_until", &self.previous_until)
            .finish_non_exhaustive()
    }
}

/// The signing secrets of a token's callback (`None`: the token was revoked, or has none).
pub async fn secret_of(conn: Conn<'_>, token_id: Uuid) -> Result<Option<Signers>> {
    let sql = "select webhook_secret, webhook_previous_secret, webhook_previous_until \
               from api_tokens where id = $1 and revoked_at is null";
    type Row = (Option<String>, Option<String>, Option<OffsetDateTime>);
    let row: Option<Row> = on!(conn, |c| sqlx::query_as(sql)
        .bind(token_id)
        .fetch_optional(c)
        .await)?;
    Ok(row.and_then(|(current, previous, previous_until)| {
        current.map(|current| Signers {
            current,
            previous,
            previous_until,
        })
    }))
}

/// The active tokens of `agent` that carry a callback, oldest first.
pub async fn webhook_tokens_of(conn: Conn<'_>, agent: &str) -> Result<Vec<Uuid>> {
    let sql = "select id from api_tokens where kind = 'agent' and name = $1 \
               and revoked_at is null and webhook_secret is not null order by created_at, id";
    let rows: Vec<(Uuid,)> = on!(conn, |c| sqlx::query_as(sql).bind(agent).fetch_all(c).await)?;
    Ok(rows.into_iter().map(|(id,)| id).collect())
}

/// A new signing secret for a token, and what becomes of the one it replaces.
pub struct Rotation<'a> {
    /// The token.
    pub id: Uuid,
    /// Its new secret.
    pub secret: &'a str,
    /// The replaced secret and until when it signs too (`None`: forgotten at once).
    pub previous: Option<(&'a str, OffsetDateTime)>,
}

/// Gives an active agent token with a callback its new signing secret. The token's agent
/// name, or `None` if it is revoked or has no callback.
pub async fn rotate_secret(conn: Conn<'_>, r: &Rotation<'_>) -> Result<Option<String>> {
    let sql = "update api_tokens set webhook_secret = $2, webhook_previous_secret = $3, \
               webhook_previous_until = $4 \
               where id = $1 and kind = 'agent' and revoked_at is null \
               and webhook_secret is not null returning name";
    let row: Option<(String,)> = on!(conn, |c| sqlx::query_as(sql)
        .bind(r.id)
        .bind(r.secret)
        .bind(r.previous.map(|(s, _)| s))
        .bind(r.previous.map(|(_, t)| t))
        .fetch_optional(c)
        .await)?;
    Ok(row.map(|(name,)| name))
}

/// What one attempt came to.
pub struct Attempt<'a> {
    /// The delivery.
    pub delivery: Uuid,
    /// Its number.
    pub attempt: i32,
    /// When it was made.
    pub at: OffsetDateTime,
    /// The receiver's status code, if it answered.
    pub status: Option<i32>,
    /// Why it failed, if it did (never the body or the secret).
    pub error: Option<&'a str>,
    /// How long it took.
    pub took_ms: i64,
    /// `delivered`, `pending` (tried again at `next_attempt_at`) or `failed` (given up).
    pub state: &'static str,
    /// The next try, when `pending`.
    pub next_attempt_at: Option<OffsetDateTime>,
}

/// Records an attempt and moves its delivery on, unless a later attempt was taken meanwhile
/// (this one outlived its hold); `false` then.
pub async fn record_attempt(mut conn: Conn<'_>, a: &Attempt<'_>) -> Result<bool> {
    let sql = "update webhook_deliveries set state = $3, next_attempt_at = $4, \
               last_attempt_at = $5, last_status = $6, last_error = $7 \
               where id = $1 and attempts = $2 and state = 'pending'";
    let moved = on!(conn.reborrow(), |c| sqlx::query(sql)
        .bind(a.delivery)
        .bind(a.attempt)
        .bind(a.state)
        .bind(a.next_attempt_at)
        .bind(a.at)
        .bind(a.status)
        .bind(a.error)
        .execute(c)
        .await
        .map(|r| r.rows_affected()))?;
    if moved == 0 {
        return Ok(false);
    }
    let sql = "insert into webhook_attempts (delivery_id, attempt, at, status, error, took_ms) \
               values ($1, $2, $3, $4, $5, $6)";
    on!(conn, |c| sqlx::query(sql)
        .bind(a.delivery)
        .bind(a.attempt)
        .bind(a.at)
        .bind(a.status)
        .bind(a.error)
        .bind(a.took_ms)
        .execute(c)
        .await
        .map(|_| ()))?;
    Ok(true)
}

/// A delivery as admins see it.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct DeliveryListing {
    /// Its id.
    pub id: Uuid,
    /// The agent whose token it belongs to.
    pub agent: String,
    /// The proposal it is about.
    pub proposal_id: Uuid,
    /// Where it goes.
    pub url: String,
    /// `pending`, `delivered` or `failed`.
    pub state: String,
    /// Attempts made.
    pub attempts: i32,
    /// When it was queued.
    pub created_at: OffsetDateTime,
    /// The next try (pending only).
    pub next_attempt_at: Option<OffsetDateTime>,
    /// The last attempt.
    pub last_attempt_at: Option<OffsetDateTime>,
    /// The receiver's last status code.
    pub last_status: Option<i32>,
    /// Why the last attempt failed.
    pub last_error: Option<String>,
}

/// The newest deliveries, newest first.
pub async fn recent(conn: Conn<'_>, limit: i64) -> Result<Vec<DeliveryListing>> {
    let sql = "select d.id, t.name as agent, d.proposal_id, d.url, d.state, d.attempts, \
               d.created_at, case when d.state = 'pending' then d.next_attempt_at end \
               as next_attempt_at, d.last_attempt_at, d.last_status, d.last_error \
               from webhook_deliveries d join api_tokens t on t.id = d.token_id \
               order by d.created_at desc, d.id desc limit $1";
    let rows = on!(conn, |c| sqlx::query_as(sql).bind(limit).fetch_all(c).await)?;
    Ok(rows)
}

/// One recorded attempt.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct AttemptListing {
    /// Its delivery.
    pub delivery_id: Uuid,
    /// Its number.
    pub attempt: i32,
    /// When.
    pub at: OffsetDateTime,
    /// The receiver's status code.
    pub status: Option<i32>,
    /// Why it failed.
    pub error: Option<String>,
    /// How long it took.
    pub took_ms: i64,
}

/// The attempts of these deliveries, in order.
pub async fn attempts_of(conn: Conn<'_>, deliveries: &[Uuid]) -> Result<Vec<AttemptListing>> {
    let sql = conn.pick(
        "select delivery_id, attempt, at, status, error, took_ms from webhook_attempts \
         where delivery_id in (select unhex(replace(value, '-', '')) from json_each($1)) \
         order by delivery_id, attempt",
        "select delivery_id, attempt, at, status, error, took_ms from webhook_attempts \
         where delivery_id in (select value::uuid from jsonb_array_elements_text($1)) \
         order by delivery_id, attempt",
    );
    let rows = on!(conn, |c| sqlx::query_as(sql)
        .bind(Json(deliveries))
        .fetch_all(c)
        .await)?;
    Ok(rows)
}
