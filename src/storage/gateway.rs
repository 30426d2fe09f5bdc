//! The MCP gateway's rows: each tool's pinned definition and a changed one waiting for an
//! admin, and every definition seen, by hash (what a call was made against). (An agent's
//! earlier identical call still open is a proposal:
//! [`super::proposals::open_call::open_gateway_call`].)

use time::OffsetDateTime;

use super::conn::{Conn, on};
use super::error::Result;

/// A gateway tool's pinned definition (and a changed one, if its upstream now serves another).
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct PinnedTool {
    /// Internal name (`files.write_file`).
    pub name: String,
    /// Its upstream.
    pub upstream: String,
    /// `sha256:…` of the pinned definition.
    pub pinned_sha256: String,
    /// The pinned definition, JSON.
    pub pinned_definition: String,
    /// `sha256:…` of a different definition the upstream now serves, not yet accepted.
    pub offered_sha256: Option<String>,
    /// That definition, JSON.
    pub offered_definition: Option<String>,
    /// When the tool was first seen.
    pub first_seen_at: OffsetDateTime,
    /// When either definition last changed.
    pub updated_at: OffsetDateTime,
}

const COLUMNS: &str = "name, upstream, pinned_sha256, pinned_definition, offered_sha256, \
                       offered_definition, first_seen_at, updated_at";

/// The tool `name`'s row.
pub async fn by_name(conn: Conn<'_>, name: &str) -> Result<Option<PinnedTool>> {
    let sql = format!("select {COLUMNS} from gateway_tools where name = $1");
    let row = on!(conn, |c| sqlx::query_as(&sql)
        .bind(name)
        .fetch_optional(c)
        .await)?;
    Ok(row)
}

/// Keeps `definition` (JSON) under its hash `sha256`, once: the page of a call made against it
/// shows it whatever the tool's pin is later.
pub async fn remember(
    conn: Conn<'_>,
    sha256: &str,
    definition: &str,
    now: OffsetDateTime,
) -> Result<()> {
    let sql = "insert into gateway_definitions (sha256, definition, first_seen_at) \
               values ($1, $2, $3) on conflict (sha256) do nothing";
    on!(conn, |c| sqlx::query(sql)
        .bind(sha256)
        .bind(definition)
        .bind(now)
        .execute(c)
        .await
        .map(|_| ()))?;
    Ok(())
}

/// The definition (JSON) whose hash is `sha256`, if the gateway has seen it.
pub async fn definition(conn: Conn<'_>, sha256: &str) -> Result<Option<String>> {
    let sql = "select definition from gateway_definitions where sha256 = $1";
    let row: Option<(String,)> = on!(conn, |c| sqlx::query_as(sql)
        .bind(sha256)
        .fetch_optional(c)
        .await)?;
    Ok(row.map(|(d,)| d))
}

/// Every gateway tool's row, by name.
pub async fn all(conn: Conn<'_>) -> Result<Vec<PinnedTool>> {
    let sql = format!("select {COLUMNS} from gateway_tools order by name");
    let rows = on!(conn, |c| sqlx::query_as(&sql).fetch_all(c).await)?;
    Ok(rows)
}

/// Pins a tool seen for the first time; `false` if it already has a row.
pub async fn pin(
    conn: Conn<'_>,
    name: &str,
    upstream: &str,
    sha256: &str,
    definition: &str,
    now: OffsetDateTime,
) -> Result<bool> {
    let sql = "insert into gateway_tools (name, upstream, pinned_sha256, pinned_definition, \
               first_seen_at, updated_at) values ($1, $2, $3, $4, $5, $5) \
               on conflict (name) do nothing";
    let done = on!(conn, |c| sqlx::query(sql)
        .bind(name)
        .bind(upstream)
        .bind(sha256)
        .bind(definition)
        .bind(now)
        .execute(c)
        .await
        .map(|r| r.rows_affected() > 0))?;
    Ok(done)
}

/// Records the different definition tool `name` is now served with; `false` if that one was
/// already recorded (or the tool has no row).
pub async fn offer(
    conn: Conn<'_>,
    name: &str,
    sha256: &str,
    definition: &str,
    now: OffsetDateTime,
) -> Result<bool> {
    let sql = "update gateway_tools set offered_sha256 = $2, offered_definition = $3, \
               updated_at = $4 where name = $1 and coalesce(offered_sha256, '') <> $2";
    let done = on!(conn, |c| sqlx::query(sql)
        .bind(name)
        .bind(sha256)
        .bind(definition)
        .bind(now)
        .execute(c)
        .await
        .map(|r| r.rows_affected() > 0))?;
    Ok(done)
}

/// Forgets a changed definition the upstream no longer serves (it went back to the pinned
/// one); `false` if there was none.
pub async fn withdraw_offer(conn: Conn<'_>, name: &str, now: OffsetDateTime) -> Result<bool> {
    let sql = "update gateway_tools set offered_sha256 = null, offered_definition = null, \
               updated_at = $2 where name = $1 and offered_sha256 is not null";
    let done = on!(conn, |c| sqlx::query(sql)
        .bind(name)
        .bind(now)
        .execute(c)
        .await
        .map(|r| r.rows_affected() > 0))?;
    Ok(done)
}

/// Pins the changed definition `sha256` of tool `name` in place of the old one; `false` if
/// that is not the definition on offer.
pub async fn accept(conn: Conn<'_>, name: &str, sha256: &str, now: OffsetDateTime) -> Result<bool> {
    let sql = "update gateway_tools set pinned_sha256 = offered_sha256, \
               pinned_definition = offered_definition, offered_sha256 = null, \
               offered_definition = null, updated_at = $3 \
               where name = $1 and offered_sha256 = $2";
    let done = on!(conn, |c| sqlx::query(sql)
        .bind(name)
        .bind(sha256)
        .bind(now)
        .execute(c)
        .await
        .map(|r| r.rows_affected() > 0))?;
    Ok(done)
}
