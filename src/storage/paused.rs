//! The kill switch's rows: tool names or globs no executor may lease while they are listed.

use time::OffsetDateTime;

use super::conn::{Conn, on};
use super::error::Result;

/// A paused tool pattern.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct PausedTool {
    /// Exact name or glob (`*` pauses every tool).
    pub pattern: String,
    /// Who paused it.
    pub paused_by: String,
    /// When.
    pub paused_at: OffsetDateTime,
}

/// Pauses `pattern`; `false` if it was already paused.
pub async fn pause(conn: Conn<'_>, pattern: &str, by: &str, now: OffsetDateTime) -> Result<bool> {
    let sql = "insert into paused_tools (pattern, paused_by, paused_at) values ($1, $2, $3) \
               on conflict (pattern) do nothing";
    let done = on!(conn, |c| sqlx::query(sql)
        .bind(pattern)
        .bind(by)
        .bind(now)
        .execute(c)
        .await
        .map(|r| r.rows_affected() > 0))?;
    Ok(done)
}

/// Resumes `pattern`; `false` if it was not paused.
pub async fn resume(conn: Conn<'_>, pattern: &str) -> Result<bool> {
    let sql = "delete from paused_tools where pattern = $1";
    let done = on!(conn, |c| sqlx::query(sql)
        .bind(pattern)
        .execute(c)
        .await
        .map(|r| r.rows_affected() > 0))?;
    Ok(done)
}

/// Every paused pattern, by name.
pub async fn all(conn: Conn<'_>) -> Result<Vec<PausedTool>> {
    let sql = "select pattern, paused_by, paused_at from paused_tools order by pattern";
    let rows = on!(conn, |c| sqlx::query_as(sql).fetch_all(c).await)?;
    Ok(rows)
}
