//! Decision insights' rows: each final decision counted at decision time in `decision_stats`
//! (per UTC day, reviewer and domain, its time to decision in buckets), and the reads, one
//! grouped statement per figure over those counts, never over the decisions themselves.

use time::OffsetDateTime;

use super::audit_query::time_bound;
use super::conn::{Conn, on};
use super::error::Result;

pub use crate::domain::record::DecisionGroup;
use crate::domain::review::insight::{BUCKET_COUNT, percentile};

/// One grouped row of `decision_stats`: name, decisions, approved, fast, then the buckets.
type StatRow = (String, i64, i64, i64, Vec<i64>);

/// The bucket columns, `b0` to `b14`.
fn bucket_columns() -> impl Iterator<Item = String> {
    (0..BUCKET_COUNT).map(|i| format!("b{i}"))
}

/// Counts one final decision: by `reviewer` in `domain` on `day` (`YYYY-MM-DD`, UTC), approved
/// or not, too fast to have been read or not, its time to decision in `bucket`.
pub async fn count_decision(
    conn: Conn<'_>,
    day: &str,
    reviewer: &str,
    domain: &str,
    approved: bool,
    fast: bool,
    bucket: usize,
) -> Result<()> {
    let b = format!("b{}", bucket.min(BUCKET_COUNT - 1));
    let sql = format!(
        "insert into decision_stats (day, reviewer, domain, decisions, approved, fast, {b}) \
         values ($1, $2, $3, 1, $4, $5, 1) on conflict (day, reviewer, domain) do update set \
         decisions = decision_stats.decisions + 1, \
         approved = decision_stats.approved + excluded.approved, \
         fast = decision_stats.fast + excluded.fast, {b} = decision_stats.{b} + 1"
    );
    on!(conn, |c| sqlx::query(&sql)
        .bind(day)
        .bind(reviewer)
        .bind(domain)
        .bind(i64::from(approved))
        .bind(i64::from(fast))
        .execute(c)
        .await
        .map(drop))?;
    Ok(())
}

/// Decisions grouped by `key` (`reviewer` or `domain`) on days from `from` on: one grouped read
/// of at most days × reviewers × domains rows.
async fn decisions_by(
    conn: Conn<'_>,
    key: &str,
    from: OffsetDateTime,
) -> Result<Vec<DecisionGroup>> {
    // `sum` of a bigint is numeric on PostgreSQL: cast back, on both.
    let sum = |c: &str| format!("cast(sum({c}) as bigint)");
    let sums: Vec<String> = bucket_columns().map(|b| sum(&b)).collect();
    let sql = format!(
        "select {key}, {}, {}, {}, {} from decision_stats where day >= $1 group by {key}",
        sum("decisions"),
        sum("approved"),
        sum("fast"),
        sums.join(", ")
    );
    let day = day_of(from);
    let rows: Vec<StatRow> = on!(conn, |c| sqlx::query(&sql)
        .bind(&day)
        .fetch_all(c)
        .await
        .and_then(|rows| rows.iter().map(stat_row).collect()))?;
    Ok(rows
        .into_iter()
        .map(|(name, decisions, approved, fast, counts)| DecisionGroup {
            name,
            decisions,
            approved,
            p50: percentile(&counts, 50),
            p90: percentile(&counts, 90),
            fast,
        })
        .collect())
}

/// A grouped row as its columns' values.
fn stat_row<R: sqlx::Row>(r: &R) -> std::result::Result<StatRow, sqlx::Error>
where
    usize: sqlx::ColumnIndex<R>,
    String: for<'a> sqlx::Decode<'a, R::Database> + sqlx::Type<R::Database>,
    i64: for<'a> sqlx::Decode<'a, R::Database> + sqlx::Type<R::Database>,
{
    let n = |i: usize| r.try_get::<i64, _>(i);
    Ok((
        r.try_get::<String, _>(0)?,
        n(1)?,
        n(2)?,
        n(3)?,
        (4..4 + BUCKET_COUNT)
            .map(n)
            .collect::<std::result::Result<_, _>>()?,
    ))
}

/// `t`'s UTC day, as `decision_stats` names days.
pub fn day_of(t: OffsetDateTime) -> String {
    let d = t.to_offset(time::UtcOffset::UTC).date();
    format!("{:04}-{:02}-{:02}", d.year(), u8::from(d.month()), d.day())
}

/// Each reviewer's decisions on days from `from` on.
pub async fn by_reviewer(conn: Conn<'_>, from: OffsetDateTime) -> Result<Vec<DecisionGroup>> {
    decisions_by(conn, "reviewer", from).await
}

/// Each domain's decisions on days from `from` on.
pub async fn by_domain(conn: Conn<'_>, from: OffsetDateTime) -> Result<Vec<DecisionGroup>> {
    decisions_by(conn, "domain", from).await
}

/// Proposals that expired undecided in `[from, to)`, per domain: a range of the index over the
/// expired rows alone (`proposals_expired_by_time`; SQLite is told to use it, or it reads every
/// expired proposal through the index on status).
pub async fn expired_by_domain(
    conn: Conn<'_>,
    from: OffsetDateTime,
    to: OffsetDateTime,
) -> Result<Vec<(String, i64)>> {
    let sql = conn.pick(
        "select domain, count(*) from proposals indexed by proposals_expired_by_time \
         where status = 'expired' \
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
