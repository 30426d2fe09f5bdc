//! The executor queue's rows and statements. Who may lease what is decided by
//! [`crate::domain::command::scope`]; [`claim_next`] and a group's leases ([`claim_staged`])
//! state the same rule in SQL for speed (tool globs match with `GLOB` on SQLite and, translated,
//! `LIKE` on PostgreSQL; the policy's `allowed_executors` is a `,a,b,` filter column).
//! `tests/lease_rule.rs` holds both dialects to the domain's rule on generated tools, patterns,
//! executors and times; a change to either side must keep it passing.

use serde_json::Value;
use sqlx::types::Json;
use time::OffsetDateTime;
use uuid::Uuid;

use super::conn::{Conn, on};
use super::direct::raw;
use super::error::Result;
use super::statement::{Arg, Statement, fetch_all};
use crate::domain::command::retry::SideEffect;
use crate::domain::command::{CommandKind, CommandSpec, CommandStatus, Resolution};
use crate::domain::lifecycle::ProposalStatus;

mod ask;
mod row;
pub use ask::{Approval, Claimed, LeaseAsk, ProposalSeen, SettledSuccess, Success};
// The record is the domain's; re-exported for the service, which names it here.
pub use crate::domain::record::CommandRecord;
pub(super) use row::CommandRow;
use row::{WithProposal, record, records};

/// A command to queue.
pub struct NewCommand<'a> {
    /// Id.
    pub id: Uuid,
    /// Its proposal.
    pub proposal_id: Uuid,
    /// Action or rollback.
    pub kind: CommandKind,
    /// The command a rollback undoes.
    pub rollback_of: Option<Uuid>,
    /// `queued`, or `awaiting_approval` for a rollback task.
    pub status: CommandStatus,
    /// What to run.
    pub spec: &'a CommandSpec,
    /// End of the approval window.
    pub execute_by: Option<OffsetDateTime>,
    /// Now.
    pub now: OffsetDateTime,
}

/// How a run ends or goes back to the queue.
pub struct Settle<'a> {
    /// Command.
    pub id: Uuid,
    /// New status (`queued` for a retry).
    pub status: CommandStatus,
    /// Success body.
    pub result: Option<&'a Value>,
    /// Failure body.
    pub error: Option<&'a Value>,
    /// How the attempt ended, if not in success.
    pub interruption: Option<&'a str>,
    /// What the executor said of its side effect.
    pub side_effect: Option<SideEffect>,
    /// Not leased again before this.
    pub available_at: OffsetDateTime,
    /// Now.
    pub now: OffsetDateTime,
}

impl Settle<'_> {
    fn completed_at(&self) -> Option<OffsetDateTime> {
        (self.status != CommandStatus::Queued).then_some(self.now)
    }
}

/// A person's settlement.
pub struct Resolve<'a> {
    /// Command.
    pub id: Uuid,
    /// What they said.
    pub resolution: Resolution,
    /// Who.
    pub by: &'a str,
    /// Why.
    pub reason: &'a str,
    /// Now.
    pub now: OffsetDateTime,
}

macro_rules! cols {
    () => {
        "id, proposal_id, kind, rollback_of, status, spec, attempts, leased_by, \
         lease_token_hash, lease_expires_at, available_at, execute_by, run_deadline, \
         interruption, side_effect, result, error, resolution, resolved_by, resolved_at, \
         resolution_reason, created_at, completed_at"
    };
}
/// The columns in [`row::CommandRow`]'s order, for statements built elsewhere.
pub(super) use cols;

mod succeeded;
pub use succeeded::settle_succeeded;

/// PostgreSQL: a tool glob (`*`, `?`) in column or expression `$e` as a `LIKE` pattern.
macro_rules! like {
    ($e:literal) => {
        concat!(
            "replace(replace(replace(replace(",
            $e,
            ", '_', '\\_'), '%', '\\%'), '*', '%'), '?', '_')"
        )
    };
}

/// An executor's name in column or expression `$e` as the queue's filter holds it
/// ([`executor_filter`]): `%` and `,` percent-encoded.
macro_rules! filter_name {
    ($e:literal) => {
        concat!("replace(replace(", $e, ", '%', '%25'), ',', '%2C')")
    };
}

/// The executors an approval named as the queue's filter column: `,a,b,`, each name with `%`
/// and `,` percent-encoded (as `filter_name!` encodes the leasing executor's), so a name
/// holding a comma stays one name; `None` when it named none (any executor whose scope covers
/// the tool).
fn executor_filter(names: &[String]) -> Option<String> {
    let encoded = names
        .iter()
        .map(|n| n.replace('%', "%25").replace(',', "%2C"));
    (!names.is_empty()).then(|| format!(",{},", encoded.collect::<Vec<_>>().join(",")))
}

/// Queues a command (or opens a rollback task).
pub async fn insert(conn: Conn<'_>, c: &NewCommand<'_>) -> Result<()> {
    let sql = "insert into commands (id, proposal_id, kind, rollback_of, tool_name, status, spec, \
               allowed_executors, available_at, execute_by, created_at, updated_at) \
               values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $9, $9)";
    on!(conn, |x| sqlx::query(sql)
        .bind(c.id)
        .bind(c.proposal_id)
        .bind(c.kind.as_str())
        .bind(c.rollback_of)
        .bind(&c.spec.tool.name)
        .bind(c.status.as_str())
        .bind(Json(c.spec))
        .bind(executor_filter(&c.spec.allowed_executors))
        .bind(c.now)
        .bind(c.execute_by)
        .execute(x)
        .await
        .map(|_| ()))?;
    Ok(())
}

/// PostgreSQL: the commands executor `$1` may lease now, as `c`: queued, available by `$4`
/// (backoff over), inside its approval window at `$7` (or already run once), covered by the
/// executor's scope `$5` and the policy's `allowed_executors`, among the tools it asks for
/// (`$6`), and not paused.
macro_rules! pg_claimable {
    () => {
        concat!(
            "c.status = 'queued' and c.available_at <= $4 \
             and (c.attempts > 0 or c.execute_by is null or c.execute_by > $7) \
             and (case when c.allowed_executors is null \
                  then exists (select 1 from jsonb_array_elements_text($5) s(p) \
                               where c.tool_name like ",
            like!("s.p"),
            ") \
                  else strpos(c.allowed_executors, ',' || ",
            filter_name!("$1"),
            " || ',') > 0 and ($5 is null or \
                  exists (select 1 from jsonb_array_elements_text($5) s(p) \
                          where c.tool_name like ",
            like!("s.p"),
            ")) end) \
             and ($6 is null or exists (select 1 from jsonb_array_elements_text($6) w(p) \
                                        where c.tool_name like ",
            like!("w.p"),
            ")) \
             and not exists (select 1 from paused_tools p \
                             where c.tool_name like ",
            like!("p.pattern"),
            ")"
        )
    };
}

/// PostgreSQL: the hash of the spec of the updated `commands` row as approved, from its
/// chained `command.queued` event (`''` for an event without one; null for no event).
macro_rules! pg_approved {
    () => {
        ", (select coalesce(a.details->>'spec_sha256', '') from audit_events a \
         where a.subject_type = 'command' and a.subject_id = commands.id::text \
         and a.action = 'command.queued' order by a.seq limit 1) as approved_spec_sha256"
    };
}

mod staged;
pub use staged::{
    Staged, StagedClaims, StagedSettles, claim_queued, claim_staged, settle_and_claim_staged,
    settle_staged, settle_then_claim_staged,
};

/// Leases the oldest queued command this executor may run: available (backoff over), inside
/// its approval window (or already run once), covered by the executor's scope and the
/// policy's `allowed_executors` (see [`crate::domain::command::scope::may_run`]), among the
/// tools it asks for, and not paused. The same statement reads the hash of the command's spec
/// as approved, from its chained `command.queued` event (one round trip, not two, on the
/// writer's serial path); the chain's subject id is the command id as hyphenated text. The
/// statement is a group's leases' ([`claim_staged`]) for one ask.
pub async fn claim_next(conn: Conn<'_>, lease: &LeaseAsk) -> Result<Option<Claimed>> {
    Ok(staged::claim(conn, &[lease]).await?.pop().map(|(_, c)| c))
}

/// Sets the running attempt's deadline and (shortened) lease end.
pub async fn set_run_deadline(
    conn: Conn<'_>,
    id: Uuid,
    deadline: OffsetDateTime,
    lease_expires_at: OffsetDateTime,
) -> Result<()> {
    let sql = "update commands set run_deadline = $1, lease_expires_at = $2 where id = $3";
    on!(conn, |c| sqlx::query(sql)
        .bind(deadline)
        .bind(lease_expires_at)
        .bind(id)
        .execute(c)
        .await
        .map(|_| ()))?;
    Ok(())
}

/// Extends the lease `executor` holds under this token; `None` if it holds no such lease.
pub async fn extend_lease(
    conn: Conn<'_>,
    id: Uuid,
    executor: &str,
    lease_token_hash: &str,
    expires_at: OffsetDateTime,
    now: OffsetDateTime,
) -> Result<Option<CommandRecord>> {
    let sql = concat!(
        "update commands set lease_expires_at = $1, updated_at = $2 where id = $3 \
         and status = 'leased' and lease_token_hash = $4 and leased_by = $5 returning ",
        cols!()
    );
    let row: Option<CommandRow> = on!(conn, |c| sqlx::query_as(sql)
        .bind(expires_at)
        .bind(now)
        .bind(id)
        .bind(lease_token_hash)
        .bind(executor)
        .fetch_optional(c)
        .await)?;
    record(row)
}

/// Ends (or requeues) the run `executor` holds under this lease token; `None` if it holds no
/// such lease.
pub async fn settle_reported(
    conn: Conn<'_>,
    st: &Settle<'_>,
    executor: &str,
    lease_token_hash: &str,
) -> Result<Option<CommandRecord>> {
    let sql = concat!(
        "update commands set status = $1, result = $2, error = $3, interruption = $4, \
         side_effect = $5, available_at = $6, completed_at = $7, updated_at = $8, \
         lease_token_hash = null where id = $9 and status = 'leased' \
         and lease_token_hash = $10 and leased_by = $11 returning ",
        cols!()
    );
    let row: Option<CommandRow> = on!(conn, |c| sqlx::query_as(sql)
        .bind(st.status.as_str())
        .bind(st.result.map(Json))
        .bind(st.error.map(Json))
        .bind(st.interruption)
        .bind(st.side_effect.map(SideEffect::as_str))
        .bind(st.available_at)
        .bind(st.completed_at())
        .bind(st.now)
        .bind(st.id)
        .bind(lease_token_hash)
        .bind(executor)
        .fetch_optional(c)
        .await)?;
    record(row)
}

/// Leased commands whose lease ran out by `now`, oldest first.
pub async fn lapsed(conn: Conn<'_>, now: OffsetDateTime, limit: i64) -> Result<Vec<CommandRecord>> {
    let sql = conn.pick(
        concat!(
            "select ",
            cols!(),
            " from commands where status = 'leased' \
             and julianday(lease_expires_at) <= julianday($1) order by seq limit $2"
        ),
        concat!(
            "select ",
            cols!(),
            " from commands where status = 'leased' and lease_expires_at <= $1 \
             order by seq limit $2"
        ),
    );
    let rows: Vec<CommandRow> = on!(conn, |c| sqlx::query_as(sql)
        .bind(now)
        .bind(limit)
        .fetch_all(c)
        .await)?;
    records(rows)
}

/// Ends (or requeues) attempt `attempt` of a command whose lease lapsed; `None` if that
/// attempt is no longer running (its executor reported first).
pub async fn settle_lapsed(
    conn: Conn<'_>,
    st: &Settle<'_>,
    attempt: i32,
) -> Result<Option<CommandRecord>> {
    let sql = concat!(
        "update commands set status = $1, interruption = $2, available_at = $3, \
         completed_at = $4, updated_at = $5, lease_token_hash = null \
         where id = $6 and status = 'leased' and attempts = $7 returning ",
        cols!()
    );
    let row: Option<CommandRow> = on!(conn, |c| sqlx::query_as(sql)
        .bind(st.status.as_str())
        .bind(st.interruption)
        .bind(st.available_at)
        .bind(st.completed_at())
        .bind(st.now)
        .bind(st.id)
        .bind(attempt)
        .fetch_optional(c)
        .await)?;
    record(row)
}

/// Expires up to `limit` queued commands never leased within their approval window, the
/// longest overdue first (`commands_expiring` finds them without reading the rest of the
/// queue).
pub async fn expire_unleased(
    conn: Conn<'_>,
    now: OffsetDateTime,
    limit: i64,
) -> Result<Vec<CommandRecord>> {
    let sql = conn.pick(
        concat!(
            "update commands set status = 'expired', completed_at = $1, updated_at = $1 \
             where seq in (select seq from commands indexed by commands_expiring \
             where status = 'queued' and attempts = 0 \
             and execute_by is not null and julianday(execute_by) <= julianday($1) \
             order by julianday(execute_by) limit $2) returning ",
            cols!()
        ),
        concat!(
            "update commands set status = 'expired', completed_at = $1, updated_at = $1 \
             where seq in (select seq from commands where status = 'queued' and attempts = 0 \
             and execute_by is not null and execute_by <= $1 order by execute_by limit $2) \
             and status = 'queued' and attempts = 0 returning ",
            cols!()
        ),
    );
    let rows: Vec<CommandRow> = on!(conn, |c| sqlx::query_as(sql)
        .bind(now)
        .bind(limit)
        .fetch_all(c)
        .await)?;
    records(rows)
}

/// Commands a person must settle (outcome unknown or timed out), oldest first, among those
/// whose proposal is in `domains` (`None`: every domain).
pub async fn needing_resolution(
    conn: Conn<'_>,
    domains: Option<&[String]>,
    limit: i64,
) -> Result<Vec<CommandRecord>> {
    attention(
        conn,
        "status in ('outcome_unknown', 'timed_out')",
        domains,
        limit,
    )
    .await
}

/// Rollback tasks waiting for a reviewer, oldest first, among those whose proposal is in
/// `domains` (`None`: every domain).
pub async fn rollback_tasks(
    conn: Conn<'_>,
    domains: Option<&[String]>,
    limit: i64,
) -> Result<Vec<CommandRecord>> {
    attention(conn, "status = 'awaiting_approval'", domains, limit).await
}

/// Commands in `status` (a fixed condition) whose proposal's domain is one of `domains`.
async fn attention(
    conn: Conn<'_>,
    status: &'static str,
    domains: Option<&[String]>,
    limit: i64,
) -> Result<Vec<CommandRecord>> {
    let mut stmt = Statement::default();
    stmt.push(concat!("select ", cols!(), " from commands where "))
        .push(status);
    if let Some(ds) = domains {
        stmt.push(" and proposal_id in (select id from proposals where domain in (");
        if ds.is_empty() {
            stmt.push("null");
        }
        for (i, d) in ds.iter().enumerate() {
            if i > 0 {
                stmt.push(", ");
            }
            stmt.bind(Arg::Text(d.clone()));
        }
        stmt.push("))");
    }
    stmt.push(" order by seq limit ").bind(Arg::Int(limit));
    let rows: Vec<CommandRow> = fetch_all!(conn, CommandRow, stmt)?;
    records(rows)
}

/// A person settles an unknown outcome; `None` if the command no longer needs it.
pub async fn resolve(conn: Conn<'_>, r: &Resolve<'_>) -> Result<Option<CommandRecord>> {
    let sql = concat!(
        "update commands set status = $1, resolution = $2, resolved_by = $3, resolved_at = $4, \
         resolution_reason = $5, updated_at = $4, available_at = $4, \
         completed_at = case when $1 = 'queued' then null else $4 end \
         where id = $6 and status in ('outcome_unknown', 'timed_out') returning ",
        cols!()
    );
    let row: Option<CommandRow> = on!(conn, |c| sqlx::query_as(sql)
        .bind(r.resolution.command_status().as_str())
        .bind(r.resolution.as_str())
        .bind(r.by)
        .bind(r.now)
        .bind(r.reason)
        .bind(r.id)
        .fetch_optional(c)
        .await)?;
    record(row)
}

/// A reviewer approves (`queued`) or dismisses (`dismissed`) a rollback task; `None` if it is
/// no longer waiting.
pub async fn decide_rollback(
    conn: Conn<'_>,
    id: Uuid,
    status: CommandStatus,
    by: &str,
    reason: Option<&str>,
    now: OffsetDateTime,
) -> Result<Option<CommandRecord>> {
    let sql = concat!(
        "update commands set status = $1, resolved_by = $2, resolved_at = $3, \
         resolution_reason = $4, updated_at = $3, available_at = $3, \
         completed_at = case when $1 = 'dismissed' then $3 else null end \
         where id = $5 and status = 'awaiting_approval' returning ",
        cols!()
    );
    let row: Option<CommandRow> = on!(conn, |c| sqlx::query_as(sql)
        .bind(status.as_str())
        .bind(by)
        .bind(now)
        .bind(reason)
        .bind(id)
        .fetch_optional(c)
        .await)?;
    record(row)
}

/// Tells every instance listening on PostgreSQL that the queue changed (at commit); SQLite
/// has one process, told directly.
pub async fn notify_queue(conn: Conn<'_>) -> Result<()> {
    if let Conn::Postgres(c) = conn {
        sqlx::query("select pg_notify('countersign_queue', '')")
            .execute(c)
            .await?;
    }
    Ok(())
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

/// A command by id, with its proposal's status (`None` if the proposal is gone), read in one
/// statement for a report.
pub async fn with_proposal_status(
    conn: Conn<'_>,
    id: Uuid,
) -> Result<Option<(CommandRecord, Option<ProposalStatus>)>> {
    let sql = concat!(
        "select ",
        cols!(),
        ", (select p.status from proposals p where p.id = commands.proposal_id) \
         as proposal_status from commands where id = $1"
    );
    let row: Option<WithProposal> = on!(conn, |c| sqlx::query_as(sql)
        .bind(id)
        .fetch_optional(c)
        .await)?;
    row.map(WithProposal::into_parts).transpose()
}

/// The command running a proposal (not its rollbacks), read on this thread (SQLite; see
/// [`super::direct`]).
pub(super) fn for_proposal_direct(
    db: &rusqlite::Connection,
    proposal_id: Uuid,
) -> Result<Option<CommandRecord>> {
    raw::one(db, FOR_PROPOSAL, proposal_id, |c| {
        CommandRow::from_direct(c)?.into_record()
    })
}

const FOR_PROPOSAL: &str = concat!(
    "select ",
    cols!(),
    " from commands where proposal_id = $1 and kind = 'action'"
);

/// The command running a proposal (not its rollbacks).
pub async fn for_proposal(conn: Conn<'_>, proposal_id: Uuid) -> Result<Option<CommandRecord>> {
    let row: Option<CommandRow> = on!(conn, |c| sqlx::query_as(FOR_PROPOSAL)
        .bind(proposal_id)
        .fetch_optional(c)
        .await)?;
    record(row)
}

/// The rollback of a command, if one was opened.
pub async fn rollback_for(conn: Conn<'_>, command_id: Uuid) -> Result<Option<CommandRecord>> {
    let sql = concat!("select ", cols!(), " from commands where rollback_of = $1");
    let row: Option<CommandRow> = on!(conn, |c| sqlx::query_as(sql)
        .bind(command_id)
        .fetch_optional(c)
        .await)?;
    record(row)
}

/// Every command of a proposal (its action and any rollbacks), in queue order.
pub async fn of_proposal(conn: Conn<'_>, proposal_id: Uuid) -> Result<Vec<CommandRecord>> {
    let sql = concat!(
        "select ",
        cols!(),
        " from commands where proposal_id = $1 order by seq"
    );
    let rows: Vec<CommandRow> = on!(conn, |c| sqlx::query_as(sql)
        .bind(proposal_id)
        .fetch_all(c)
        .await)?;
    rows.into_iter().map(CommandRow::into_record).collect()
}

/// What a GDPR erasure writes onto a command: its spec and report in their erased forms.
pub struct ErasedCommand<'a> {
    /// The command.
    pub id: Uuid,
    /// The status the erasure was decided on ([`crate::domain::erasure::check`]).
    pub status: CommandStatus,
    /// The erased spec.
    pub spec: &'a CommandSpec,
    /// The erased result.
    pub result: Option<&'a Value>,
    /// The erased error.
    pub error: Option<&'a Value>,
}

/// Writes an erasure onto a command still in the status it was decided on; `false` if it moved
/// since (another instance), so the caller rolls the erasure back.
pub async fn erase(conn: Conn<'_>, e: &ErasedCommand<'_>) -> Result<bool> {
    let sql = "update commands set spec = $1, result = $2, error = $3 \
               where id = $4 and status = $5";
    let done = on!(conn, |c| sqlx::query(sql)
        .bind(Json(e.spec))
        .bind(e.result.map(Json))
        .bind(e.error.map(Json))
        .bind(e.id)
        .bind(e.status.as_str())
        .execute(c)
        .await
        .map(|r| r.rows_affected() > 0))?;
    Ok(done)
}
