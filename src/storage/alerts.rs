//! What reaches people besides status changes: expiry warnings and escalation tiers raised
//! once each per proposal (`proposal_alerts`), the proposals due for either, and the people
//! who may be emailed.

use time::OffsetDateTime;
use uuid::Uuid;

use super::conn::{Conn, on};
use super::error::Result;

/// `expiring` or `escalated`.
pub type AlertKind = &'static str;

/// A raised alert, as the proposal page shows it.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct Alert {
    /// `expiring` or `escalated`.
    pub kind: String,
    /// The escalation tier (1-based); 0 for an expiry warning.
    pub tier: i32,
    /// Whom an escalation told: a username or a role.
    pub audience: Option<String>,
    /// When.
    pub at: OffsetDateTime,
}

/// Records an alert while the proposal still waits; `false` if it was raised before (by this
/// or another instance) or the proposal was decided meanwhile.
pub async fn raise(
    conn: Conn<'_>,
    proposal: Uuid,
    kind: AlertKind,
    tier: i32,
    audience: Option<&str>,
    at: OffsetDateTime,
) -> Result<bool> {
    let sql = "insert into proposal_alerts (proposal_id, kind, tier, audience, at) \
               select $1, $2, $3, $4, $5 where exists (select 1 from proposals \
               where id = $1 and status = 'pending') on conflict do nothing";
    let n = on!(conn, |c| sqlx::query(sql)
        .bind(proposal)
        .bind(kind)
        .bind(tier)
        .bind(audience)
        .bind(at)
        .execute(c)
        .await
        .map(|r| r.rows_affected()))?;
    Ok(n > 0)
}

/// The alerts raised for `proposal`, oldest first.
pub async fn raised(conn: Conn<'_>, proposal: Uuid) -> Result<Vec<Alert>> {
    let sql = "select kind, tier, audience, at from proposal_alerts where proposal_id = $1 \
               order by at, tier";
    let rows = on!(conn, |c| sqlx::query_as(sql)
        .bind(proposal)
        .fetch_all(c)
        .await)?;
    Ok(rows)
}

/// Waiting proposals that expire after `now` but by `until` and were not warned about yet,
/// soonest first (those already past their deadline are the expiry sweep's).
pub async fn expiring_unwarned(
    conn: Conn<'_>,
    now: OffsetDateTime,
    until: OffsetDateTime,
    limit: i64,
) -> Result<Vec<Uuid>> {
    let sql = conn.pick(
        "select p.id from proposals p indexed by proposals_expiring where p.status = 'pending' \
         and julianday(p.expires_at) <= julianday($1) and julianday(p.expires_at) > \
         julianday($3) and not exists (select 1 from proposal_alerts a \
         where a.proposal_id = p.id and a.kind = 'expiring') \
         order by julianday(p.expires_at) limit $2",
        "select p.id from proposals p where p.status = 'pending' and p.expires_at <= $1 \
         and p.expires_at > $3 and not exists (select 1 from proposal_alerts a \
         where a.proposal_id = p.id and a.kind = 'expiring') order by p.expires_at limit $2",
    );
    let rows: Vec<(Uuid,)> = on!(conn, |c| sqlx::query_as(sql)
        .bind(until)
        .bind(limit)
        .bind(now)
        .fetch_all(c)
        .await)?;
    Ok(rows.into_iter().map(|(id,)| id).collect())
}

/// A waiting proposal, with the escalation tiers raised for it so far.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct Waiting {
    /// Its place in submission order (the next page starts after it).
    pub seq: i64,
    /// The proposal.
    pub id: Uuid,
    /// Its tool.
    pub tool_name: String,
    /// Its domain.
    pub domain: String,
    /// Since when it waits.
    pub created_at: OffsetDateTime,
    /// Tiers raised.
    pub raised: i64,
}

/// Waiting proposals submitted by `before` (the shortest escalation window ago) with fewer
/// than `tiers` escalations raised, after `after_seq` in submission order, with how many
/// tiers each has had.
pub async fn waiting_since(
    conn: Conn<'_>,
    before: OffsetDateTime,
    tiers: i64,
    after_seq: i64,
    limit: i64,
) -> Result<Vec<Waiting>> {
    let sql = conn.pick(
        "select * from (select p.seq, p.id, p.tool_name, p.domain, p.created_at, \
         (select count(*) from proposal_alerts a where a.proposal_id = p.id \
         and a.kind = 'escalated') as raised from proposals p where p.status = 'pending' \
         and p.seq > $3 and julianday(p.created_at) <= julianday($1)) \
         where raised < $2 order by seq limit $4",
        "select * from (select p.seq, p.id, p.tool_name, p.domain, p.created_at, \
         (select count(*) from proposal_alerts a where a.proposal_id = p.id \
         and a.kind = 'escalated') as raised from proposals p where p.status = 'pending' \
         and p.seq > $3 and p.created_at <= $1 order by p.seq) w \
         where raised < $2 order by seq limit $4",
    );
    let rows = on!(conn, |c| sqlx::query_as(sql)
        .bind(before)
        .bind(tiers)
        .bind(after_seq)
        .bind(limit)
        .fetch_all(c)
        .await)?;
    Ok(rows)
}

/// A person who can be emailed.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct Reachable {
    /// Their username.
    pub username: String,
    /// Their role, as stored.
    pub role: String,
    /// The domains they are limited to (`None`: every domain).
    pub domains: Option<sqlx::types::Json<Vec<String>>>,
    /// Their address.
    pub email: String,
}

/// Every enabled person with a role and an email address.
pub async fn reachable(conn: Conn<'_>) -> Result<Vec<Reachable>> {
    let sql = "select username, role, domains, email from users where email is not null \
               and role is not null and disabled_at is null order by username";
    let rows = on!(conn, |c| sqlx::query_as(sql).fetch_all(c).await)?;
    Ok(rows)
}

/// A person's email address (`None`: none); `false` if there is no such user.
pub async fn set_email(conn: Conn<'_>, username: &str, email: Option<&str>) -> Result<bool> {
    let sql = "update users set email = $2 where username = $1";
    let n = on!(conn, |c| sqlx::query(sql)
        .bind(username)
        .bind(email)
        .execute(c)
        .await
        .map(|r| r.rows_affected()))?;
    Ok(n > 0)
}

/// The email address of `username`, if they have one and are enabled with a role.
pub async fn email_of(conn: Conn<'_>, username: &str) -> Result<Option<String>> {
    let sql = "select email from users where username = $1 and disabled_at is null \
               and role is not null";
    let row: Option<(Option<String>,)> = on!(conn, |c| sqlx::query_as(sql)
        .bind(username)
        .fetch_optional(c)
        .await)?;
    Ok(row.and_then(|(e,)| e))
}
