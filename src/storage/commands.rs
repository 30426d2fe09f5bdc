//! The executor queue's rows and statements.

use serde_json::Value;
use sqlx::types::Json;
use time::OffsetDateTime;
use uuid::Uuid;

use super::db::{Conn, on};
use super::{Result, parse};
use crate::domain::command::{CommandSpec, CommandStatus};

/// A command in the executor queue.
#[derive(Debug, Clone, PartialEq)]
pub struct CommandRecord {
    /// Id.
    pub id: Uuid,
    /// The proposal it executes.
    pub proposal_id: Uuid,
    /// Status.
    pub status: CommandStatus,
    /// What to run.
    pub spec: CommandSpec,
    /// How many times it was leased.
    pub attempts: i32,
    /// Executor holding or last holding it.
    pub leased_by: Option<String>,
    /// Lease end.
    pub lease_expires_at: Option<OffsetDateTime>,
    /// Success report.
    pub result: Option<Value>,
    /// Failure report.
    pub error: Option<Value>,
    /// Queued at.
    pub created_at: OffsetDateTime,
    /// Reported at.
    pub completed_at: Option<OffsetDateTime>,
    /// Whether a lease token is outstanding (the command is held).
    pub held: bool,
}

/// A lease to take.
pub struct NewLease<'a> {
    /// Executor name.
    pub executor: &'a str,
    /// sha256 hex of the lease token handed to the executor.
    pub lease_token_hash: &'a str,
    /// Now.
    pub now: OffsetDateTime,
    /// Lease end.
    pub expires_at: OffsetDateTime,
}

/// A report to write against the current lease.
pub struct ReportRow<'a> {
    /// Command.
    pub command_id: Uuid,
    /// Reporting executor.
    pub executor: &'a str,
    /// sha256 hex of the presented lease token.
    pub lease_token_hash: &'a str,
    /// The status the report sets.
    pub status: CommandStatus,
    /// Success body, if it succeeded.
    pub result: Option<&'a Value>,
    /// Failure body, if it failed.
    pub error: Option<&'a Value>,
    /// Now.
    pub now: OffsetDateTime,
}

#[derive(sqlx::FromRow)]
struct CommandRow {
    id: Uuid,
    proposal_id: Uuid,
    status: String,
    spec: Json<CommandSpec>,
    attempts: i32,
    leased_by: Option<String>,
    lease_token_hash: Option<String>,
    lease_expires_at: Option<OffsetDateTime>,
    result: Option<Json<Value>>,
    error: Option<Json<Value>>,
    created_at: OffsetDateTime,
    completed_at: Option<OffsetDateTime>,
}

impl CommandRow {
    fn into_record(self) -> Result<CommandRecord> {
        Ok(CommandRecord {
            id: self.id,
            proposal_id: self.proposal_id,
            status: parse("command status", &self.status, CommandStatus::parse)?,
            spec: self.spec.0,
            attempts: self.attempts,
            leased_by: self.leased_by,
            lease_expires_at: self.lease_expires_at,
            result: self.result.map(|j| j.0),
            error: self.error.map(|j| j.0),
            created_at: self.created_at,
            completed_at: self.completed_at,
            held: self.lease_token_hash.is_some(),
        })
    }
}

fn record(row: Option<CommandRow>) -> Result<Option<CommandRecord>> {
    row.map(CommandRow::into_record).transpose()
}

macro_rules! cols {
    () => {
        "id, proposal_id, status, spec, attempts, leased_by, lease_token_hash, lease_expires_at, \
         result, error, created_at, completed_at"
    };
}

/// Queues a command for a proposal.
pub async fn insert(
    conn: Conn<'_>,
    id: Uuid,
    proposal_id: Uuid,
    spec: &CommandSpec,
    now: OffsetDateTime,
) -> Result<()> {
    let sql = "insert into commands (id, proposal_id, status, spec, allowed_executors, \
               created_at, updated_at) values ($1, $2, 'queued', $3, $4, $5, $5)";
    on!(conn, |c| sqlx::query(sql)
        .bind(id)
        .bind(proposal_id)
        .bind(Json(spec))
        .bind(spec.executor_filter())
        .bind(now)
        .execute(c)
        .await
        .map(|_| ()))?;
    Ok(())
}

/// Leases the oldest command this executor may run that is queued or whose lease lapsed.
pub async fn claim_next(conn: Conn<'_>, lease: &NewLease<'_>) -> Result<Option<CommandRecord>> {
    let sql = conn.pick(
        concat!(
            "update commands set status = 'leased', attempts = attempts + 1, leased_by = $1, \
             lease_token_hash = $2, lease_expires_at = $3, updated_at = $4 \
             where seq = (select seq from commands where (status = 'queued' or \
             (status = 'leased' and julianday(lease_expires_at) < julianday($4))) \
             and (allowed_executors is null or instr(allowed_executors, ',' || $1 || ',') > 0) \
             order by seq limit 1) returning ",
            cols!()
        ),
        concat!(
            "update commands set status = 'leased', attempts = attempts + 1, leased_by = $1, \
             lease_token_hash = $2, lease_expires_at = $3, updated_at = $4 \
             where seq = (select seq from commands where (status = 'queued' or \
             (status = 'leased' and lease_expires_at < $4)) \
             and (allowed_executors is null or strpos(allowed_executors, ',' || $1 || ',') > 0) \
             order by seq limit 1 for update skip locked) returning ",
            cols!()
        ),
    );
    let row: Option<CommandRow> = on!(conn, |c| sqlx::query_as(sql)
        .bind(lease.executor)
        .bind(lease.lease_token_hash)
        .bind(lease.expires_at)
        .bind(lease.now)
        .fetch_optional(c)
        .await)?;
    record(row)
}

/// Writes a report if `executor` holds the command under this lease token; `None` otherwise.
pub async fn finish_leased(conn: Conn<'_>, r: &ReportRow<'_>) -> Result<Option<CommandRecord>> {
    let sql = concat!(
        "update commands set status = $1, result = $2, error = $3, completed_at = $4, \
         updated_at = $4, lease_token_hash = null where id = $5 and status = 'leased' \
         and lease_token_hash = $6 and leased_by = $7 returning ",
        cols!()
    );
    let row: Option<CommandRow> = on!(conn, |c| sqlx::query_as(sql)
        .bind(r.status.as_str())
        .bind(r.result.map(Json))
        .bind(r.error.map(Json))
        .bind(r.now)
        .bind(r.command_id)
        .bind(r.lease_token_hash)
        .bind(r.executor)
        .fetch_optional(c)
        .await)?;
    record(row)
}

/// A command by id.
pub async fn by_id(conn: Conn<'_>, id: Uuid) -> Result<Option<CommandRecord>> {
    let sql = concat!("select ", cols!(), " from commands where id = $1");
    let row: Option<CommandRow> = on!(conn, |c| sqlx::query_as(sql)
        .bind(id)
        .fetch_optional(c)
        .await)?;
    record(row)
}

/// The command of a proposal.
pub async fn for_proposal(conn: Conn<'_>, proposal_id: Uuid) -> Result<Option<CommandRecord>> {
    let sql = concat!("select ", cols!(), " from commands where proposal_id = $1");
    let row: Option<CommandRow> = on!(conn, |c| sqlx::query_as(sql)
        .bind(proposal_id)
        .fetch_optional(c)
        .await)?;
    record(row)
}
