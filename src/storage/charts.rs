//! Aggregates for the compliance officer's charts: per-day counts of decisions and of
//! proposals entering the queue (from the trail's kind index), the pending count, and per
//! decision the domain, tool, reviewer and times (from proposals, by the `decided_at` index).
//! Only names and counts: never a parameter value.

use time::OffsetDateTime;

use super::audit_query::time_bound;
use super::conn::{Conn, on};
use super::error::Result;

/// Events that move the queue or decide, per UTC day: `(day, kind, after_status, count)`.
pub type DayCount = (String, String, Option<String>, i64);

/// Per UTC day (`YYYY-MM-DD`), how many decisions (`proposal.approved`, `proposal.rejected`,
/// `proposal.expired`) and submissions were recorded after seq `after_seq`, by kind and the
/// status the event left its proposal in.
pub async fn queue_events_per_day(conn: Conn<'_>, after_seq: i64) -> Result<Vec<DayCount>> {
    let sql = conn.pick(
        "select substr(at, 1, 10) as day, action, after_status, count(*) \
         from audit_events indexed by audit_events_by_kind \
         where action in ('proposal.approved', 'proposal.rejected', 'proposal.expired', \
                          'proposal.submitted') and seq > $1 \
         group by day, action, after_status",
        "select to_char(at at time zone 'UTC', 'YYYY-MM-DD') as day, action, after_status, count(*) \
         from audit_events \
         where action in ('proposal.approved', 'proposal.rejected', 'proposal.expired', \
                          'proposal.submitted') and seq > $1 \
         group by day, action, after_status",
    );
    let rows: Vec<DayCount> = on!(conn, |c| sqlx::query_as(sql)
        .bind(after_seq)
        .fetch_all(c)
        .await)?;
    Ok(rows)
}

/// Proposals waiting for a decision now.
pub async fn pending_count(conn: Conn<'_>) -> Result<i64> {
    let sql = "select count(*) from proposals where status = 'pending'";
    let (n,): (i64,) = on!(conn, |c| sqlx::query_as(sql).fetch_one(c).await)?;
    Ok(n)
}

/// One reviewer decision: domain, tool, reviewer, verdict, arrival and decision times.
pub type DecisionRow = (
    String,
    String,
    String,
    String,
    OffsetDateTime,
    OffsetDateTime,
);

/// Up to `limit` reviewer decisions taken at or after `since`.
pub async fn decisions_since(
    conn: Conn<'_>,
    since: OffsetDateTime,
    limit: i64,
) -> Result<Vec<DecisionRow>> {
    let sql = conn.pick(
        "select domain, tool_name, decided_by, decision, created_at, decided_at from proposals \
         indexed by proposals_by_decided_at where decided_at >= $1 limit $2",
        "select domain, tool_name, decided_by, decision, created_at, decided_at from proposals \
         where decided_at >= $1::timestamptz limit $2",
    );
    let rows: Vec<DecisionRow> = on!(conn, |c| sqlx::query_as(sql)
        .bind(time_bound(since, false))
        .bind(limit)
        .fetch_all(c)
        .await)?;
    Ok(rows)
}
