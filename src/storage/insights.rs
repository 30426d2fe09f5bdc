//! Decision insights' reads: per reviewer and per domain over a window, each figure from one
//! grouped statement (the percentiles by window functions over the decisions of the window,
//! read through the decision-time index), never a row per decision handed to Rust.

use time::OffsetDateTime;

use super::audit_query::time_bound;
use super::conn::{Conn, on};
use super::error::Result;

pub use crate::domain::record::DecisionGroup;

#[derive(sqlx::FromRow)]
struct GroupRow {
    name: String,
    decisions: i64,
    approved: i64,
    p50: Option<f64>,
    p90: Option<f64>,
    fast: i64,
}

/// Reading speed the rubber-stamp floor assumes, over the proposal as submitted (JSON).
pub const READ_CHARS_PER_SEC: f64 = 50.0;
/// The floor is never below this many seconds.
pub const MIN_READ_SECS: f64 = 2.0;

/// Decisions grouped by `key` (`decided_by` or `domain`) decided in `[from, to)`.
async fn decisions_by(
    conn: Conn<'_>,
    key: &str,
    from: OffsetDateTime,
    to: OffsetDateTime,
) -> Result<Vec<DecisionGroup>> {
    let (source, secs, len, bounds) = match conn {
        Conn::Sqlite(_) => (
            "proposals indexed by proposals_by_decided_at",
            "(julianday(decided_at) - julianday(created_at)) * 86400.0",
            "length(contract)",
            "decided_at >= $1 and decided_at < $2",
        ),
        Conn::Postgres(_) => (
            "proposals",
            "extract(epoch from (decided_at - created_at))::float8",
            "length(contract::text)",
            "decided_at >= $1::timestamptz and decided_at < $2::timestamptz",
        ),
    };
    let sql = format!(
        "with d as (select {key} as k, decision, {secs} as secs, \
         {len} / {READ_CHARS_PER_SEC:.1} as read_secs from {source} \
         where {bounds} and decided_by is not null and decision is not null), \
         r as (select k, decision, secs, read_secs, \
         row_number() over (partition by k order by secs) as rn, \
         count(*) over (partition by k) as n from d) \
         select k as name, count(*) as decisions, \
         sum(case when decision = 'approved' then 1 else 0 end) as approved, \
         min(case when rn >= (n + 1) / 2 then secs end) as p50, \
         min(case when rn >= (9 * n + 9) / 10 then secs end) as p90, \
         sum(case when secs < read_secs or secs < {MIN_READ_SECS:.1} then 1 else 0 end) as fast \
         from r group by k order by decisions desc, k"
    );
    let rows: Vec<GroupRow> = on!(conn, |c| sqlx::query_as(&sql)
        .bind(time_bound(from, false))
        .bind(time_bound(to, true))
        .fetch_all(c)
        .await)?;
    Ok(rows
        .into_iter()
        .map(|r| DecisionGroup {
            name: r.name,
            decisions: r.decisions,
            approved: r.approved,
            p50: r.p50,
            p90: r.p90,
            fast: r.fast,
        })
        .collect())
}

/// Each reviewer's decisions in `[from, to)`.
pub async fn by_reviewer(
    conn: Conn<'_>,
    from: OffsetDateTime,
    to: OffsetDateTime,
) -> Result<Vec<DecisionGroup>> {
    decisions_by(conn, "decided_by", from, to).await
}

/// Each domain's decisions in `[from, to)`.
pub async fn by_domain(
    conn: Conn<'_>,
    from: OffsetDateTime,
    to: OffsetDateTime,
) -> Result<Vec<DecisionGroup>> {
    decisions_by(conn, "domain", from, to).await
}

/// Proposals that expired undecided in `[from, to)`, per domain.
pub async fn expired_by_domain(
    conn: Conn<'_>,
    from: OffsetDateTime,
    to: OffsetDateTime,
) -> Result<Vec<(String, i64)>> {
    let sql = conn.pick(
        "select domain, count(*) from proposals where status = 'expired' \
         and julianday(expires_at) >= julianday($1) and julianday(expires_at) < julianday($2) \
         group by domain",
        "select domain, count(*) from proposals where status = 'expired' \
         and expires_at >= $1::timestamptz and expires_at < $2::timestamptz group by domain",
    );
    let rows = on!(conn, |c| sqlx::query_as(sql)
        .bind(time_bound(from, false))
        .bind(time_bound(to, true))
        .fetch_all(c)
        .await)?;
    Ok(rows)
}

/// Standing grants made in `[from, to)` per reviewer: (reviewer, grants, uses of them).
pub async fn grants_by_reviewer(
    conn: Conn<'_>,
    from: OffsetDateTime,
    to: OffsetDateTime,
) -> Result<Vec<(String, i64, i64)>> {
    let sql = conn.pick(
        "select granted_by, count(*), coalesce(sum(uses), 0) from standing_grants \
         where julianday(created_at) >= julianday($1) and julianday(created_at) < julianday($2) \
         group by granted_by",
        "select granted_by, count(*), coalesce(sum(uses), 0)::bigint from standing_grants \
         where created_at >= $1::timestamptz and created_at < $2::timestamptz \
         group by granted_by",
    );
    let rows = on!(conn, |c| sqlx::query_as(sql)
        .bind(time_bound(from, false))
        .bind(time_bound(to, true))
        .fetch_all(c)
        .await)?;
    Ok(rows)
}

/// Break-glass approvals in `[from, to)` per admin.
pub async fn break_glass_by_admin(
    conn: Conn<'_>,
    from: OffsetDateTime,
    to: OffsetDateTime,
) -> Result<Vec<(String, i64)>> {
    let sql = conn.pick(
        "select actor, count(*) from audit_events where action = 'proposal.break_glass' \
         and julianday(at) >= julianday($1) and julianday(at) < julianday($2) group by actor",
        "select actor, count(*) from audit_events where action = 'proposal.break_glass' \
         and at >= $1::timestamptz and at < $2::timestamptz group by actor",
    );
    let rows = on!(conn, |c| sqlx::query_as(sql)
        .bind(time_bound(from, false))
        .bind(time_bound(to, true))
        .fetch_all(c)
        .await)?;
    Ok(rows)
}
