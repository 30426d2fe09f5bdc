//! The reads behind an agent's event stream (`GET /api/v1/events`): which agent each moved
//! proposal belongs to (one statement for a batch of ids), the ids of an agent's proposals that
//! may still move (the stream's opening snapshot), and whether the stream's token still stands.

use uuid::Uuid;

use super::conn::{Conn, on};
use super::error::Result;
use crate::domain::contract::wire::WireEnum;
use crate::domain::lifecycle::ProposalStatus;

/// The agent of each proposal among `ids` that exists, in no particular order (one statement).
pub async fn owners(conn: Conn<'_>, ids: &[Uuid]) -> Result<Vec<(Uuid, String)>> {
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    Ok(on!(conn, |c| {
        let mut q = sqlx::QueryBuilder::new("select id, agent from proposals where id in (");
        let mut list = q.separated(", ");
        for id in ids {
            list.push_bind(*id);
        }
        list.push_unseparated(")");
        q.build_query_as().fetch_all(c).await
    })?)
}

/// The ids of `agent`'s proposals whose stored status is not final, oldest first, at most
/// `limit`.
pub async fn open_of_agent(conn: Conn<'_>, agent: &str, limit: i64) -> Result<Vec<Uuid>> {
    let open: Vec<&str> = ProposalStatus::ALL
        .iter()
        .filter(|s| !s.is_final())
        .map(|s| s.as_str())
        .collect();
    let rows: Vec<(Uuid,)> = on!(conn, |c| {
        let mut q = sqlx::QueryBuilder::new("select id from proposals where agent = ");
        q.push_bind(agent);
        q.push(" and status in (");
        let mut list = q.separated(", ");
        for status in &open {
            list.push_bind(*status);
        }
        list.push_unseparated(") order by seq limit ");
        q.push_bind(limit);
        q.build_query_as().fetch_all(c).await
    })?;
    Ok(rows.into_iter().map(|(id,)| id).collect())
}

/// Whether the API token `id` exists and is not revoked.
pub async fn token_active(conn: Conn<'_>, id: Uuid) -> Result<bool> {
    let sql = "select id from api_tokens where id = $1 and revoked_at is null";
    let row: Option<(Uuid,)> = on!(conn, |c| sqlx::query_as(sql)
        .bind(id)
        .fetch_optional(c)
        .await)?;
    Ok(row.is_some())
}
