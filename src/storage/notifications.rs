//! Reviewers' notifications: queued at the commit of every status change that needs a person
//! ([`queue`], called by [`super::Tx`] for the channels the operator configured), and of
//! every notice a change raised (an expiry warning, an escalation, a rollback task); taken by
//! the dispatcher per channel and recipient ([`claim_due`]), and settled after each send
//! ([`settle`]). Email is per person: its rows are queued for nobody (`recipient` `''`) and
//! expanded by the dispatcher into one row per reviewer ([`unexpanded`], [`expand`]).
//!
//! A row is about a proposal or, for a policy version activated alone at the shell, about that
//! activation (`policy_activation`): the activation is its own outbox, queued once by a
//! serving instance ([`queue_policy`]), since the shell does not know the channels.

use time::OffsetDateTime;
use uuid::Uuid;

use super::conn::{Conn, on};
use super::error::Result;
use super::status_change::StatusChange;
use crate::domain::notify::{BREAK_GLASS_AUDIENCE, Reason};

/// Something a person must hear about, raised inside a change: an expiry warning, an
/// escalation (to `audience`: a username or a role), a rollback task.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Notice {
    /// Why.
    pub reason: Reason,
    /// The proposal.
    pub proposal: Uuid,
    /// When.
    pub at: OffsetDateTime,
    /// Whom (an escalation tier); `None`: the reviewers who may decide.
    pub audience: Option<String>,
}

/// One row to insert.
struct Row<'a> {
    id: Uuid,
    channel: &'a str,
    recipient: &'a str,
    reason: Reason,
    proposal: Option<Uuid>,
    policy_activation: Option<i64>,
    created_at: OffsetDateTime,
    audience: Option<&'a str>,
}

/// Queues one row per channel for every change in `changes` that needs a person and every
/// notice in `notices`; how many. A group commit's rows go in a few multi-row statements of
/// fixed sizes (as the trail's do).
pub async fn queue(
    mut conn: Conn<'_>,
    channels: &[&'static str],
    changes: &[StatusChange],
    notices: &[Notice],
) -> Result<usize> {
    let from_changes = changes
        .iter()
        .filter_map(|c| Reason::of_status(&c.after).map(|reason| (reason, c.proposal, c.at, None)));
    let from_notices = notices
        .iter()
        .map(|n| (n.reason, n.proposal, n.at, n.audience.as_deref()));
    let rows: Vec<Row<'_>> = from_changes
        .chain(from_notices)
        .flat_map(|(reason, proposal, at, audience)| {
            channels.iter().map(move |ch| Row {
                id: Uuid::now_v7(),
                channel: ch,
                recipient: "",
                reason,
                proposal: Some(proposal),
                policy_activation: None,
                created_at: at,
                audience,
            })
        })
        .collect();
    insert_all(conn.reborrow(), &rows).await?;
    Ok(rows.len())
}

/// Queues one row per channel, for every admin and compliance officer, for each break-glass
/// policy activation not told yet, and marks it told (once, whichever instance gets there
/// first); how many rows.
pub async fn queue_policy(
    mut conn: Conn<'_>,
    channels: &[&'static str],
    now: OffsetDateTime,
) -> Result<usize> {
    let sql = "update policy_activations set told_at = $1 \
               where told_at is null and how = 'break_glass' returning seq, activated_at";
    let told: Vec<(i64, OffsetDateTime)> = on!(conn.reborrow(), |c| sqlx::query_as(sql)
        .bind(now)
        .fetch_all(c)
        .await)?;
    let rows: Vec<Row<'_>> = (told.iter())
        .flat_map(|&(seq, at)| {
            channels.iter().map(move |ch| Row {
                id: Uuid::now_v7(),
                channel: ch,
                recipient: "",
                reason: Reason::PolicyBreakGlass,
                proposal: None,
                policy_activation: Some(seq),
                created_at: at,
                audience: Some(BREAK_GLASS_AUDIENCE),
            })
        })
        .collect();
    insert_all(conn, &rows).await?;
    Ok(rows.len())
}

async fn insert_all(mut conn: Conn<'_>, rows: &[Row<'_>]) -> Result<()> {
    let mut rest = rows;
    while !rest.is_empty() {
        let n = super::chunk::chunk_len(rest.len());
        insert(conn.reborrow(), &rest[..n]).await?;
        rest = &rest[n..];
    }
    Ok(())
}

async fn insert(conn: Conn<'_>, rows: &[Row<'_>]) -> Result<()> {
    on!(conn, |c| {
        let mut q = sqlx::QueryBuilder::new(
            "insert into notifications (id, channel, recipient, reason, proposal_id, \
             policy_activation, created_at, next_attempt_at, audience, state, attempts) ",
        );
        q.push_values(rows, |mut b, r| {
            b.push_bind(r.id)
                .push_bind(r.channel)
                .push_bind(r.recipient)
                .push_bind(r.reason.as_str())
                .push_bind(r.proposal)
                .push_bind(r.policy_activation)
                .push_bind(r.created_at)
                .push_bind(r.created_at)
                .push_bind(r.audience)
                .push("'pending'")
                .push("0");
        });
        q.build().execute(c).await.map(|_| ())
    })?;
    Ok(())
}

/// A notification on a per-person channel queued for nobody yet, to be expanded.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct Unexpanded {
    /// Its id.
    pub id: Uuid,
    /// Why.
    pub reason: String,
    /// The proposal, when it is about one.
    pub proposal_id: Option<Uuid>,
    /// The policy activation, when it is about one.
    pub policy_activation: Option<i64>,
    /// When it was queued.
    pub created_at: OffsetDateTime,
    /// The escalation tier it is for, if any.
    pub audience: Option<String>,
}

/// Up to `limit` of `channel`'s rows queued for nobody, oldest first.
pub async fn unexpanded(conn: Conn<'_>, channel: &str, limit: i64) -> Result<Vec<Unexpanded>> {
    let sql = "select id, reason, proposal_id, policy_activation, created_at, audience \
               from notifications \
               where channel = $1 and recipient = '' and state = 'pending' \
               order by created_at limit $2";
    let rows = on!(conn, |c| sqlx::query_as(sql)
        .bind(channel)
        .bind(limit)
        .fetch_all(c)
        .await)?;
    Ok(rows)
}

/// Queues each row of `expanded` again on `channel` for each of its recipients (usernames),
/// and marks it `expanded`: rows another instance expanded meanwhile are left alone. How many
/// rows were queued.
pub async fn expand(
    mut conn: Conn<'_>,
    channel: &str,
    expanded: &[(Unexpanded, Vec<String>)],
) -> Result<usize> {
    if expanded.is_empty() {
        return Ok(0);
    }
    let taken: Vec<(Uuid,)> = on!(conn.reborrow(), |c| {
        let mut q = sqlx::QueryBuilder::new(
            "update notifications set state = 'expanded' where state = 'pending' and id in (",
        );
        let mut ids = q.separated(", ");
        for (u, _) in expanded {
            ids.push_bind(u.id);
        }
        q.push(") returning id");
        q.build_query_as().fetch_all(c).await
    })?;
    let taken: std::collections::HashSet<Uuid> = taken.into_iter().map(|(id,)| id).collect();
    let mut rows = Vec::new();
    for (u, recipients) in expanded.iter().filter(|(u, _)| taken.contains(&u.id)) {
        let Some(reason) = Reason::parse(&u.reason) else {
            continue;
        };
        for r in recipients {
            rows.push(Row {
                id: Uuid::now_v7(),
                channel,
                recipient: r,
                reason,
                proposal: u.proposal_id,
                policy_activation: u.policy_activation,
                created_at: u.created_at,
                audience: u.audience.as_deref(),
            });
        }
    }
    insert_all(conn, &rows).await?;
    Ok(rows.len())
}

/// The people with rows on per-person `channel` due at `now`.
pub async fn recipients_due(
    conn: Conn<'_>,
    channel: &str,
    now: OffsetDateTime,
) -> Result<Vec<String>> {
    let sql = conn.pick(
        "select distinct recipient from notifications where channel = $1 and recipient <> '' \
         and state = 'pending' and julianday(next_attempt_at) <= julianday($2)",
        "select distinct recipient from notifications where channel = $1 and recipient <> '' \
         and state = 'pending' and next_attempt_at <= $2",
    );
    let rows: Vec<(String,)> = on!(conn, |c| sqlx::query_as(sql)
        .bind(channel)
        .bind(now)
        .fetch_all(c)
        .await)?;
    Ok(rows.into_iter().map(|(r,)| r).collect())
}

/// When `channel` last sent `recipient` a message, if it ever did.
pub async fn last_sent(
    conn: Conn<'_>,
    channel: &str,
    recipient: &str,
) -> Result<Option<OffsetDateTime>> {
    let sql = "select max(last_attempt_at) from notifications \
               where channel = $1 and recipient = $2 and state = 'sent'";
    let (at,): (Option<OffsetDateTime>,) = on!(conn, |c| sqlx::query_as(sql)
        .bind(channel)
        .bind(recipient)
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
    /// The proposal, when it is about one.
    pub proposal_id: Option<Uuid>,
    /// The policy activation, when it is about one.
    pub policy_activation: Option<i64>,
    /// This attempt's number.
    pub attempts: i32,
    /// When it was queued.
    pub created_at: OffsetDateTime,
    /// The escalation tier it is for, if any.
    pub audience: Option<String>,
}

/// What a send takes: the rows on `channel` for `recipient` (`""` on a shared channel) due at
/// `now`, about policy activations or about proposals, up to `limit`.
pub struct Claim<'a> {
    /// The channel.
    pub channel: &'a str,
    /// The person, on email.
    pub recipient: &'a str,
    /// The send they are taken for.
    pub message: Uuid,
    /// Now.
    pub now: OffsetDateTime,
    /// Until when they are hidden (if the send never reports, they are due again then).
    pub hold_until: OffsetDateTime,
    /// At most this many.
    pub limit: i64,
    /// Rows about policy activations (else about proposals).
    pub policy: bool,
}

/// Takes the rows `claim` names for its send: counts the attempt and hides them until
/// `hold_until`.
pub async fn claim_due(conn: Conn<'_>, claim: &Claim<'_>) -> Result<Vec<DueNotification>> {
    let sql = conn.pick(
        "update notifications set attempts = attempts + 1, next_attempt_at = $3, \
         message_id = $4 where id in (select id from notifications where channel = $1 \
         and recipient = $6 and state = 'pending' \
         and (policy_activation is not null) = $7 \
         and julianday(next_attempt_at) <= julianday($2) order by created_at limit $5) \
         returning id, reason, proposal_id, policy_activation, attempts, created_at, audience",
        "update notifications set attempts = attempts + 1, next_attempt_at = $3, \
         message_id = $4 where id in (select id from notifications where channel = $1 \
         and recipient = $6 and state = 'pending' and next_attempt_at <= $2 \
         and (policy_activation is not null) = $7 \
         order by created_at limit $5 for update skip locked) \
         returning id, reason, proposal_id, policy_activation, attempts, created_at, audience",
    );
    let mut rows: Vec<DueNotification> = on!(conn, |c| sqlx::query_as(sql)
        .bind(claim.channel)
        .bind(claim.now)
        .bind(claim.hold_until)
        .bind(claim.message)
        .bind(claim.limit)
        .bind(claim.recipient)
        .bind(claim.policy)
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
    /// `slack`, `teams`, `webhook` or `email`.
    pub channel: String,
    /// The person, on email.
    pub recipient: String,
    /// Why.
    pub reason: String,
    /// The proposal, when it is about one.
    pub proposal_id: Option<Uuid>,
    /// The policy activation, when it is about one.
    pub policy_activation: Option<i64>,
    /// `pending`, `sent`, `failed`, or `expanded` (an email row, queued again per person).
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

/// The newest notifications, newest first (ids are UUIDv7: time-ordered).
pub async fn recent(conn: Conn<'_>, limit: i64) -> Result<Vec<NotificationListing>> {
    let sql = "select id, channel, recipient, reason, proposal_id, policy_activation, state, \
               message_id, attempts, created_at, last_attempt_at, last_status, last_error \
               from notifications \
               order by id desc limit $1";
    let rows = on!(conn, |c| sqlx::query_as(sql).bind(limit).fetch_all(c).await)?;
    Ok(rows)
}
