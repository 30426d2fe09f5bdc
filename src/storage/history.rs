//! An agent's earlier proposals for one tool, for the proposal page: counts by status and the
//! most recent few, among those the reader may see. Both walk `proposals_by_agent_tool (agent,
//! tool_name, seq, status, domain)` backwards, reading the index alone for the counts, and stop
//! after a bounded number of rows.

use time::OffsetDateTime;
use uuid::Uuid;

use super::conn::Conn;
use super::error::Result;
use super::statement::{Arg, Statement, fetch_all};

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

/// Which domains' proposals the reader may see: `None` every domain, `Some` only those listed.
pub type Domains<'a> = Option<&'a [String]>;

/// Of the `window` most recent proposals of `agent` for `tool` that arrived before position
/// `before`, those in the reader's `domains`: a bounded walk of the index whatever the domains,
/// so a reader limited to a domain the agent rarely uses sees fewer, never a longer scan. The
/// walk reads `read` of each row (with `seq` and `domain`); the statement answers `columns`.
fn window(
    (columns, read): (&str, &str),
    agent: &str,
    tool: &str,
    before: i64,
    window: i64,
    domains: Domains<'_>,
) -> Statement {
    let mut stmt = Statement::default();
    stmt.push("select ").push(columns);
    stmt.push(" from (select seq, domain, ").push(read);
    stmt.push(" from proposals where agent = ");
    stmt.bind(Arg::Text(agent.to_owned()));
    stmt.push(" and tool_name = ")
        .bind(Arg::Text(tool.to_owned()));
    stmt.push(" and seq < ").bind(Arg::Int(before));
    stmt.push(" order by seq desc limit ")
        .bind(Arg::Int(window));
    stmt.push(") recent where true");
    if let Some(ds) = domains {
        stmt.domain_in(ds);
    }
    stmt
}

/// `(status, count)` over the `window` most recent proposals of `agent` for `tool` that
/// arrived before position `before`, those in `domains` only.
pub async fn status_counts(
    conn: Conn<'_>,
    agent: &str,
    tool: &str,
    before: i64,
    (size, domains): (i64, Domains<'_>),
) -> Result<Vec<(String, i64)>> {
    let columns = ("status, count(*)", "status");
    let mut stmt = window(columns, agent, tool, before, size, domains);
    stmt.push(" group by status");
    Ok(fetch_all!(conn, (String, i64), stmt)?)
}

/// The `limit` most recent of the `window` most recent proposals of `agent` for `tool` that
/// arrived before position `before`, those in `domains` only, newest first.
pub async fn recent(
    conn: Conn<'_>,
    agent: &str,
    tool: &str,
    before: i64,
    (size, domains, limit): (i64, Domains<'_>, i64),
) -> Result<Vec<SimilarRow>> {
    let columns = conn.pick(
        "id, status, created_at, json_extract(contract, '$.intent.summary') as summary",
        "id, status, created_at, contract -> 'intent' ->> 'summary' as summary",
    );
    // Unlimited by domain, the newest `limit` of the window are the newest `limit`: no need to
    // walk the rest of it.
    let size = if domains.is_some() {
        size
    } else {
        size.min(limit)
    };
    let read = "id, status, created_at, contract";
    let mut stmt = window((columns, read), agent, tool, before, size, domains);
    stmt.push(" order by seq desc limit ").bind(Arg::Int(limit));
    Ok(fetch_all!(conn, SimilarRow, stmt)?)
}
