//! An agent's earlier proposals for one tool, for the proposal page: counts by status and the
//! most recent few. Both walk `proposals_by_agent_tool (agent, tool_name, seq)` backwards and
//! stop after a bounded number of rows.

use time::OffsetDateTime;
use uuid::Uuid;

use super::conn::{Conn, on};
use super::error::Result;

/// One earlier proposal, as the page lists it.
#[derive(Debug, Clone, PartialEq, sqlx::FromRow)]
pub struct SimilarRow {
    /// Its id.
    pub id: Uuid,
    /// Its status, as stored.
    pub status: String,
    /// When it arrived.
    pub created_at: OffsetDateTime,
    /// Its intent's summary (`[erased]` once erased).
    pub summary: Option<String>,
}

/// `(status, count)` over the `window` most recent proposals of `agent` for `tool` that
/// arrived before position `before`.
pub async fn status_counts(
    conn: Conn<'_>,
    agent: &str,
    tool: &str,
    before: i64,
    window: i64,
) -> Result<Vec<(String, i64)>> {
    let sql = "select status, count(*) from (select status from proposals \
               where agent = $1 and tool_name = $2 and seq < $3 order by seq desc limit $4) recent \
               group by status";
    Ok(on!(conn, |c| sqlx::query_as(sql)
        .bind(agent)
        .bind(tool)
        .bind(before)
        .bind(window)
        .fetch_all(c)
        .await)?)
}

/// The `limit` most recent proposals of `agent` for `tool` that arrived before position
/// `before`, newest first.
pub async fn recent(
    conn: Conn<'_>,
    agent: &str,
    tool: &str,
    before: i64,
    limit: i64,
) -> Result<Vec<SimilarRow>> {
    let sql = conn.pick(
        "select id, status, created_at, json_extract(contract, '$.intent.summary') as summary \
         from proposals where agent = $1 and tool_name = $2 and seq < $3 \
         order by seq desc limit $4",
        "select id, status, created_at, contract -> 'intent' ->> 'summary' as summary \
         from proposals where agent = $1 and tool_name = $2 and seq < $3 \
         order by seq desc limit $4",
    );
    Ok(on!(conn, |c| sqlx::query_as(sql)
        .bind(agent)
        .bind(tool)
        .bind(before)
        .bind(limit)
        .fetch_all(c)
        .await)?)
}
