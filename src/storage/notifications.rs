//! Reviewers' notifications: queued at the commit of every status change that needs a person
//! ([`queue`], called by [`super::db::Tx`] for the channels the operator configured), taken by
//! the dispatcher per channel ([`claim_due`]), and settled after each send ([`settle`]).

use time::OffsetDateTime;
use uuid::Uuid;

use super::Result;
use super::audit::StatusChange;
use super::db::{Conn, on};
use crate::domain::notify::Reason;

/// Queues one row per channel for every change in `changes` that needs a person; how many.
/// A group commit's rows go in a few multi-row statements of fixed sizes (as the trail's do).
pub async fn queue(
    mut conn: Conn<'_>,
    channels: &[&'static str],
    changes: &[StatusChange],
) -> Result<usize> {
    let rows: Vec<(Uuid, &str, Reason, Uuid, OffsetDateTime)> = changes
        .iter()
        .filter_map(|c| Reason::of_status(&c.after).map(|r| (r, c)))
        .flat_map(|(reason, c)| {
            channels
                .iter()
                .map(move |ch| (Uuid::now_v7(), *ch, reason, c.proposal, c.at))
        })
        .collect();
    let mut rest = rows.as_slice();
    while !rest.is_empty() {
        let n = super::audit::chunk_len(rest.len());
        insert(conn.reborrow(), &rest[..n]).await?;
        rest = &rest[n..];
    }
    Ok(rows.len())
}

async fn insert(conn: Conn<'_>, rows: &[(Uuid, &str, Reason, Uuid, OffsetDateTime)]) -> Result<()> {
    on!(conn, |c| {
        let mut q = sqlx::QueryBuilder::new(
            "insert into notifications (id, channel, reason, proposal_id, created_at, \
             next_attempt_at, state, attempts) ",
        );
        q.push_values(rows, |mut b, (id, channel, reason, proposal, at)| {
            b.push_bind(*id)
                .push_bind(*channel)
                .push_bind(reason.as_str())
                .push_bind(*proposal)
                .push_bind(*at)
                .push_bind(*at)
                .push("'pending'")
                .push("0");
        });
        q.build().execute(c).await.map(|_| ())
    })?;
    Ok(())
}

/// When `channel` last sent a message, if it ever did.
pub async fn last_sent(conn: Conn<'_>, channel: &str) -> Result<Option<OffsetDateTime>> {
    let sql = "select max(last_attempt_at) from notifications \
               where channel = $1 and state = 'sent'";
    let (at,): (Option<OffsetDateTime>,) = on!(conn, |c| sqlx::query_as(sql)
        .bind(channel)
        .fetch_one(c)
        .await)?;
    Ok(at)
}

/// A notification taken for one send.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct DueNotification {
    /// Its id.
    pub id: Uuid,
    /// Why.
    pub reason: String,
    /// The proposal.
    pub proposal_id: Uuid,
    /// This attempt's number.
    pub attempts: i32,
    /// When it was queued.
    pub created_at: OffsetDateTime,
}

/// Takes up to `limit` of `channel`'s rows due at `now` for message `message`: counts the
/// attempt and hides them until `hold_until` (if the send never reports, they are due again).
pub async fn claim_due(
    conn: Conn<'_>,
    channel: &str,
    message: Uuid,
    now: OffsetDateTime,
    hold_until: OffsetDateTime,
    limit: i64,
) -> Result<Vec<DueNotification>> {
    let sql = conn.pick(
        "update notifications set attempts = attempts + 1, next_attempt_at = $3, \
         message_id = $4 where id in (select id from notifications where channel = $1 \
         and state = 'pending' and julianday(next_attempt_at) <= julianday($2) \
         order by created_at limit $5) \
         returning id, reason, proposal_id, attempts, created_at",
        "update notifications set attempts = attempts + 1, next_attempt_at = $3, \
         message_id = $4 where id in (select id from notifications where channel = $1 \
         and state = 'pending' and next_attempt_at <= $2 \
         order by created_at limit $5 for update skip locked) \
         returning id, reason, proposal_id, attempts, created_at",
    );
    let mut rows: Vec<DueNotification> = on!(conn, |c| sqlx::query_as(sql)
        .bind(channel)
        .bind(now)
        .bind(hold_until)
        .bind(message)
        .bind(limit)
        .fetch_all(c)
        .await)?;
    rows.sort_by_key(|r| (r.created_at, r.id));
    Ok(rows)
}

/// What became of one send.
pub struct Settled<'a> {
    /// The send.
    pub message: Uuid,
    /// When it was made.
    pub at: OffsetDateTime,
    /// `sent`, `pending` (tried again at `next_attempt_at`) or `failed`.
    pub state: &'static str,
    /// The next try, when pending.
    pub next_attempt_at: Option<OffsetDateTime>,
    /// The channel's status code, if it answered.
    pub status: Option<i32>,
    /// Why it failed (never the channel's URL).
    pub error: Option<&'a str>,
}

/// Settles every row message `s.message` carried.
pub async fn settle(conn: Conn<'_>, s: &Settled<'_>) -> Result<()> {
    let sql = "update notifications set state = $2, next_attempt_at = $3, last_attempt_at = $4, \
               last_status = $5, last_error = $6 where message_id = $1 and state = 'pending'";
    on!(conn, |c| sqlx::query(sql)
        .bind(s.message)
        .bind(s.state)
        .bind(s.next_attempt_at)
        .bind(s.at)
        .bind(s.status)
        .bind(s.error)
        .execute(c)
        .await
        .map(|_| ()))?;
    Ok(())
}

/// A notification as admins see it.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct NotificationListing {
    /// Its id.
    pub id: Uuid,
    /// `slack`, `teams` or `webhook`.
    pub channel: String,
    /// Why.
    pub reason: String,
    /// The proposal.
    pub proposal_id: Uuid,
    /// `pending`, `sent` or `failed`.
    pub state: String,
    /// The send that carried it (several rows share one in a digest).
    pub message_id: Option<Uuid>,
    /// Attempts made.
    pub attempts: i32,
    /// When it was queued.
    pub created_at: OffsetDateTime,
    /// The last attempt.
    pub last_attempt_at: Option<OffsetDateTime>,
    /// The channel's last status code.
    pub last_status: Option<i32>,
    /// Why the last attempt failed.
    pub last_error: Option<String>,
}

/// The newest notifications, newest first.
pub async fn recent(conn: Conn<'_>, limit: i64) -> Result<Vec<NotificationListing>> {
    let sql = "select id, channel, reason, proposal_id, state, message_id, attempts, created_at, \
               last_attempt_at, last_status, last_error from notifications \
               order by created_at desc, id desc limit $1";
    let rows = on!(conn, |c| sqlx::query_as(sql).bind(limit).fetch_all(c).await)?;
    Ok(rows)
}
