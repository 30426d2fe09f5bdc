//! Standing grants' rows: made with an approval, looked up for an agent's tool at submission,
//! used (a conditional update, so a grant's last use is taken once on every instance),
//! revoked, and expired by the sweep.

use serde_json::{Map, Value};
use time::OffsetDateTime;
use uuid::Uuid;

use super::conn::{Conn, on};
use super::error::{Result, StorageError};
use super::statement::{Arg, Statement, fetch_all};
pub use crate::domain::record::GrantRecord;
use crate::domain::review::grant::{Bound, GrantState, Scope};

#[derive(sqlx::FromRow)]
struct GrantRow {
    id: Uuid,
    agent: String,
    tool_name: String,
    tool_version: String,
    domain: String,
    proposal_id: Uuid,
    granted_by: String,
    parameters: String,
    free_fields: String,
    bounds: String,
    max_uses: Option<i64>,
    uses: i64,
    state: String,
    created_at: OffsetDateTime,
    expires_at: OffsetDateTime,
    ended_at: Option<OffsetDateTime>,
    ended_by: Option<String>,
}

const COLUMNS: &str = "id, agent, tool_name, tool_version, domain, proposal_id, granted_by, \
                       parameters, free_fields, bounds, max_uses, uses, state, created_at, \
                       expires_at, ended_at, ended_by";

fn corrupt(what: &str) -> StorageError {
    StorageError::Corrupt(format!("standing_grants.{what}"))
}

impl TryFrom<GrantRow> for GrantRecord {
    type Error = StorageError;

    fn try_from(r: GrantRow) -> Result<Self> {
        let parameters: Map<String, Value> =
            serde_json::from_str(&r.parameters).map_err(|_| corrupt("parameters"))?;
        let free: Vec<String> =
            serde_json::from_str(&r.free_fields).map_err(|_| corrupt("free_fields"))?;
        let bounds: Vec<Bound> = serde_json::from_str(&r.bounds).map_err(|_| corrupt("bounds"))?;
        let count = |n: i64| u32::try_from(n).map_err(|_| corrupt("uses"));
        Ok(GrantRecord {
            id: r.id,
            agent: r.agent,
            tool: r.tool_name,
            tool_version: r.tool_version,
            domain: r.domain,
            proposal_id: r.proposal_id,
            granted_by: r.granted_by,
            parameters,
            scope: Scope { free, bounds },
            max_uses: r.max_uses.map(count).transpose()?,
            uses: count(r.uses)?,
            state: GrantState::parse(&r.state).ok_or_else(|| corrupt("state"))?,
            created_at: r.created_at,
            expires_at: r.expires_at,
            ended_at: r.ended_at,
            ended_by: r.ended_by,
        })
    }
}

fn records(rows: Vec<GrantRow>) -> Result<Vec<GrantRecord>> {
    rows.into_iter().map(GrantRecord::try_from).collect()
}

/// Stores a new grant.
pub async fn insert(conn: Conn<'_>, g: &GrantRecord) -> Result<()> {
    let sql = format!(
        "insert into standing_grants ({COLUMNS}) values \
         ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17)"
    );
    let (parameters, free, bounds) = (
        json(&g.parameters),
        json(&g.scope.free),
        json(&g.scope.bounds),
    );
    on!(conn, |c| sqlx::query(&sql)
        .bind(g.id)
        .bind(&g.agent)
        .bind(&g.tool)
        .bind(&g.tool_version)
        .bind(&g.domain)
        .bind(g.proposal_id)
        .bind(&g.granted_by)
        .bind(&parameters)
        .bind(&free)
        .bind(&bounds)
        .bind(g.max_uses.map(i64::from))
        .bind(i64::from(g.uses))
        .bind(g.state.as_str())
        .bind(g.created_at)
        .bind(g.expires_at)
        .bind(g.ended_at)
        .bind(&g.ended_by)
        .execute(c)
        .await
        .map(drop))?;
    Ok(())
}

/// JSON text of what a grant row keeps as JSON (plain maps, strings and numbers: always
/// serialisable).
fn json<T: serde::Serialize>(value: &T) -> String {
    serde_json::to_string(value).unwrap_or_else(|_| "null".to_owned())
}

/// The live grants of `agent` for `tool` in `domain` at `now`, oldest first.
pub async fn live_for(
    conn: Conn<'_>,
    agent: &str,
    tool: &str,
    domain: &str,
    now: OffsetDateTime,
) -> Result<Vec<GrantRecord>> {
    let sql = conn.pick(
        "where agent = $1 and tool_name = $2 and domain = $3 and state = 'live' \
         and julianday(expires_at) > julianday($4) order by created_at",
        "where agent = $1 and tool_name = $2 and domain = $3 and state = 'live' \
         and expires_at > $4 order by created_at",
    );
    let sql = format!("select {COLUMNS} from standing_grants {sql}");
    let rows: Vec<GrantRow> = on!(conn, |c| sqlx::query_as(&sql)
        .bind(agent)
        .bind(tool)
        .bind(domain)
        .bind(now)
        .fetch_all(c)
        .await)?;
    records(rows)
}

/// Takes one use of grant `id` if it is still live at `now` (its last use leaves it
/// `used_up`): the grant as it is after the use, or `None` if it could not be used.
pub async fn take_use(
    conn: Conn<'_>,
    id: Uuid,
    now: OffsetDateTime,
) -> Result<Option<GrantRecord>> {
    let set = "update standing_grants set uses = uses + 1, \
               state = case when max_uses is not null and uses + 1 >= max_uses \
               then 'used_up' else state end, \
               ended_at = case when max_uses is not null and uses + 1 >= max_uses \
               then $2 else ended_at end \
               where id = $1 and state = 'live' and ";
    let until = conn.pick("julianday(expires_at) > julianday($2)", "expires_at > $2");
    let sql = format!("{set}{until} returning {COLUMNS}");
    let row: Option<GrantRow> = on!(conn, |c| sqlx::query_as(&sql)
        .bind(id)
        .bind(now)
        .fetch_optional(c)
        .await)?;
    row.map(GrantRecord::try_from).transpose()
}

/// Revokes grant `id` if it is live: the grant as revoked, or `None`.
pub async fn revoke(
    conn: Conn<'_>,
    id: Uuid,
    by: &str,
    now: OffsetDateTime,
) -> Result<Option<GrantRecord>> {
    let sql = format!(
        "update standing_grants set state = 'revoked', ended_at = $2, ended_by = $3 \
         where id = $1 and state = 'live' returning {COLUMNS}"
    );
    let row: Option<GrantRow> = on!(conn, |c| sqlx::query_as(&sql)
        .bind(id)
        .bind(now)
        .bind(by)
        .fetch_optional(c)
        .await)?;
    row.map(GrantRecord::try_from).transpose()
}

/// Marks up to `limit` live grants whose time ran out by `now` as expired, and answers them.
pub async fn expire_due(
    conn: Conn<'_>,
    now: OffsetDateTime,
    limit: i64,
) -> Result<Vec<GrantRecord>> {
    let due = conn.pick("julianday(expires_at) <= julianday($1)", "expires_at <= $1");
    let sql = format!(
        "update standing_grants set state = 'expired', ended_at = expires_at \
         where id in (select id from standing_grants where state = 'live' and {due} \
         order by expires_at limit $2) and state = 'live' returning {COLUMNS}"
    );
    let rows: Vec<GrantRow> = on!(conn, |c| sqlx::query_as(&sql)
        .bind(now)
        .bind(limit)
        .fetch_all(c)
        .await)?;
    records(rows)
}

/// Grant `id`.
pub async fn by_id(conn: Conn<'_>, id: Uuid) -> Result<Option<GrantRecord>> {
    let sql = format!("select {COLUMNS} from standing_grants where id = $1");
    let row: Option<GrantRow> = on!(conn, |c| sqlx::query_as(&sql)
        .bind(id)
        .fetch_optional(c)
        .await)?;
    row.map(GrantRecord::try_from).transpose()
}

/// The newest `limit` grants (only the live ones when `live_only`), in `domains` when given.
pub async fn list(
    conn: Conn<'_>,
    live_only: bool,
    domains: Option<&[String]>,
    limit: i64,
) -> Result<Vec<GrantRecord>> {
    let mut stmt = Statement::default();
    stmt.push(&format!("select {COLUMNS} from standing_grants where true"));
    if live_only {
        stmt.push(" and state = 'live'");
    }
    if let Some(ds) = domains {
        stmt.domain_in(ds);
    }
    stmt.push(" order by created_at desc, id limit ")
        .bind(Arg::Int(limit));
    let rows: Vec<GrantRow> = fetch_all!(conn, GrantRow, stmt)?;
    records(rows)
}
