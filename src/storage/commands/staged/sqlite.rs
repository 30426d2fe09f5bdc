//! SQLite: a group's success reports, the moves of their proposals and its leases, each one
//! statement for the whole group.
//!
//! sqlx runs a SQLite connection on a thread of its own: every statement is handed to that
//! thread and its rows handed back (a wake-up each way, a task switch on two busy cores), and on
//! the writer's serial path those hand-offs cost more than SQLite's own work. So the writer's
//! commonest statements take their rows as one JSON array (`json_each`) rather than one
//! statement per row: [`settle`] settles every report of a group and then moves their actions'
//! proposals (two statements whatever their count), [`claim`] leases for a run of asks with one
//! filter (one statement). Their outcomes are those of [`super::super::claim_next`] and
//! [`super::super::settle_succeeded`] run one after another (which for one row are these same
//! statements), but that a run of leases takes its commands as of the earliest ask's time and
//! their approval windows as of the latest's, as on PostgreSQL.
//!
//! Values go into the array as sqlx would bind them: ids as hex (`unhex` makes the stored
//! blob), times as RFC 3339 text, a result as its JSON text.

use sqlx::SqliteConnection;
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;
use uuid::Uuid;

use super::super::ask::{Claimed, LeaseAsk, ProposalSeen, SettledSuccess, Success};
use super::super::row::{Settled, WithApproval, into_claim};
use crate::domain::command::{CommandKind, CommandStatus};
use crate::domain::lifecycle::ProposalStatus;
use crate::storage::error::{Result, StorageError};

/// The commands executor `$1` may lease, as `c`: queued, available by `$4` (backoff over),
/// inside its approval window at `$7` (or already run once), covered by the executor's scope
/// `$5` and the policy's `allowed_executors`, among the tools it asks for (`$6`), and not
/// paused ([`crate::domain::command::scope::may_run`]; globs match with `GLOB`).
macro_rules! sqlite_claimable {
    () => {
        concat!(
            "c.status = 'queued' and julianday(c.available_at) <= julianday($4) \
             and (c.attempts > 0 or c.execute_by is null \
                  or julianday(c.execute_by) > julianday($7)) \
             and (case when c.allowed_executors is null \
                  then exists (select 1 from json_each($5) s where c.tool_name glob s.value) \
                  else instr(c.allowed_executors, ',' || ",
            filter_name!("$1"),
            " || ',') > 0 and ($5 is null or \
                  exists (select 1 from json_each($5) s where c.tool_name glob s.value)) end) \
             and ($6 is null or \
                  exists (select 1 from json_each($6) w where c.tool_name glob w.value)) \
             and not exists (select 1 from paused_tools p where c.tool_name glob p.pattern)"
        )
    };
}

/// The hash of the spec of the updated `commands` row as approved, from its chained
/// `command.queued` event (`''` for an event without one; null for no event); the chain's
/// subject id is the command id as hyphenated text.
macro_rules! sqlite_approved {
    () => {
        ", (select coalesce(cast(json_extract(a.details, '$.spec_sha256') as text), '') \
         from audit_events a where a.subject_type = 'command' and a.action = 'command.queued' \
         and a.subject_id = lower(substr(hex(commands.id), 1, 8) || '-' || \
         substr(hex(commands.id), 9, 4) || '-' || substr(hex(commands.id), 13, 4) || '-' || \
         substr(hex(commands.id), 17, 4) || '-' || substr(hex(commands.id), 21)) \
         order by a.seq limit 1) as approved_spec_sha256"
    };
}

/// A time as sqlx binds it on SQLite (RFC 3339 text), so stored times compare alike.
fn text(t: OffsetDateTime) -> Result<String> {
    t.format(&Rfc3339)
        .map_err(|e| StorageError::Database(sqlx::Error::Encode(Box::new(e))))
}

/// Rows for `json_each`: one JSON array of arrays.
fn rows<T: serde::Serialize>(rows: &[T]) -> Result<String> {
    serde_json::to_string(rows).map_err(|e| StorageError::Database(sqlx::Error::Encode(e.into())))
}

/// Leases for `asks` (one filter: the first's) in one statement: the oldest commands they may
/// run, numbered in queue order and matched to the asks in their order (the first ask the
/// oldest). Answers each lease's token hash and what it claimed.
pub(super) async fn claim(
    c: &mut SqliteConnection,
    asks: &[&LeaseAsk],
) -> Result<Vec<(String, Claimed)>> {
    let Some(first) = asks.first() else {
        return Ok(Vec::new());
    };
    let sql = concat!(
        "with asks as (select key + 1 as a_n, value ->> 0 as a_hash, value ->> 1 as a_expires, \
         value ->> 2 as a_now from json_each($2)), \
         picked as materialized (select c.seq from commands c where ",
        sqlite_claimable!(),
        " order by c.seq limit $3), \
         numbered as (select seq as p_seq, row_number() over (order by seq) as p_n \
         from picked) ",
        claim_update!(),
        sqlite_approved!()
    );
    let mut each = Vec::with_capacity(asks.len());
    for ask in asks {
        each.push((&ask.lease_token_hash, text(ask.expires_at)?, text(ask.now)?));
    }
    // A command is claimable for the group if it is for each ask: available by the earliest
    // ask's time, its window still open at the latest's (as on PostgreSQL).
    let earliest = asks.iter().map(|a| a.now).min().unwrap_or(first.now);
    let latest = asks.iter().map(|a| a.now).max().unwrap_or(first.now);
    let leased: Vec<WithApproval> = sqlx::query_as(sql)
        .bind(&first.executor)
        .bind(rows(&each)?)
        .bind(i64::try_from(asks.len()).unwrap_or(i64::MAX))
        .bind(earliest)
        .bind(first.scope.as_ref().map(sqlx::types::Json))
        .bind(first.wanted.as_ref().map(sqlx::types::Json))
        .bind(latest)
        .fetch_all(c)
        .await?;
    leased.into_iter().map(into_claim).collect()
}

/// Leases queued command `id` alone for `ask`, if the ask may lease it now
/// ([`super::claim_queued`]): `$1` executor, `$2` token hash, `$3` lease end, `$4` and `$7`
/// now, `$5` scope, `$6` tools asked for, `$8` the command.
pub(super) async fn claim_queued(
    c: &mut SqliteConnection,
    id: Uuid,
    ask: &LeaseAsk,
) -> Result<Option<WithApproval>> {
    let sql = concat!(
        "with asks as (select 1 as a_n, $2 as a_hash, $3 as a_expires, $4 as a_now), \
         numbered as (select c.seq as p_seq, 1 as p_n from commands c where c.id = $8 and ",
        sqlite_claimable!(),
        ") ",
        claim_update!(),
        sqlite_approved!()
    );
    Ok(sqlx::query_as(sql)
        .bind(&ask.executor)
        .bind(&ask.lease_token_hash)
        .bind(ask.expires_at)
        .bind(ask.now)
        .bind(ask.scope.as_ref().map(sqlx::types::Json))
        .bind(ask.wanted.as_ref().map(sqlx::types::Json))
        .bind(ask.now)
        .bind(id)
        .fetch_optional(c)
        .await?)
}

/// Settles `reports` (no two for one command) in success, each only if its executor holds the
/// command under the token it presented and the command may run (a rollback, or an action whose
/// proposal is still executable); then moves each settled action's proposal to `succeeded` from
/// the status the first statement read (one moved meanwhile is left to the change:
/// [`crate::storage::proposals::move_status`]). Two statements for any number of reports (one
/// if none settled an action); answers them and how many statements it ran.
pub(super) async fn settle(
    c: &mut SqliteConnection,
    reports: &[&Success],
) -> Result<(Vec<SettledSuccess>, usize)> {
    if reports.is_empty() {
        return Ok((Vec::new(), 0));
    }
    let sql = concat!(
        "with r as (select unhex(value ->> 0) as r_id, value ->> 1 as r_result, \
         value ->> 2 as r_hash, value ->> 3 as r_executor, value ->> 4 as r_now \
         from json_each($1)) ",
        settle_update!("$2", "$3", "$4"),
        ", 0 as proposal_moved"
    );
    let mut each = Vec::with_capacity(reports.len());
    for report in reports {
        let id = report.id.simple().to_string();
        let result = serde_json::to_string(&report.result)
            .map_err(|e| StorageError::Database(sqlx::Error::Encode(e.into())))?;
        each.push((
            id,
            result,
            &report.lease_token_hash,
            &report.executor,
            text(report.now)?,
        ));
    }
    let [first, second] = ProposalStatus::EXECUTABLE;
    let settled: Vec<Settled> = sqlx::query_as(sql)
        .bind(rows(&each)?)
        .bind(CommandStatus::Succeeded.as_str())
        .bind(first.as_str())
        .bind(second.as_str())
        .fetch_all(&mut *c)
        .await?;
    let mut settled = (settled.into_iter())
        .map(Settled::into_parts)
        .collect::<Result<Vec<_>>>()?;
    let moved = move_proposals(c, &mut settled, reports).await?;
    Ok((settled, 1 + usize::from(moved)))
}

/// Moves the proposals of the settled actions in `settled` to `succeeded` from the status read
/// with them, in one statement, and marks those it moved ([`ProposalSeen::Moved`]). Answers
/// whether there was any to move (a statement ran).
async fn move_proposals(
    c: &mut SqliteConnection,
    settled: &mut [SettledSuccess],
    reports: &[&Success],
) -> Result<bool> {
    let to = ProposalStatus::Succeeded;
    let mut each: Vec<(String, &str, String)> = Vec::new();
    for (command, seen) in settled.iter() {
        let Some(ProposalSeen::Read(before)) = seen else {
            continue;
        };
        // The proposal moves at its report's time, as the change would have moved it.
        let report = reports.iter().find(|r| r.id == command.id);
        if let Some(report) = report
            && command.kind == CommandKind::Action
            && *before != to
        {
            let id = command.proposal_id.simple().to_string();
            each.push((id, before.as_str(), text(report.now)?));
        }
    }
    if each.is_empty() {
        return Ok(false);
    }
    let sql = "with m as (select unhex(value ->> 0) as m_id, value ->> 1 as m_before, \
               value ->> 2 as m_now from json_each($2)) \
               update proposals set status = $1, updated_at = m.m_now from m \
               where proposals.id = m.m_id and proposals.status = m.m_before \
               and proposals.status <> $1 returning proposals.id";
    let moved: Vec<(Uuid,)> = sqlx::query_as(sql)
        .bind(to.as_str())
        .bind(rows(&each)?)
        .fetch_all(c)
        .await?;
    for (command, seen) in settled.iter_mut() {
        if let Some(ProposalSeen::Read(before)) = *seen
            && moved.iter().any(|(id,)| *id == command.proposal_id)
            && command.kind == CommandKind::Action
        {
            *seen = Some(ProposalSeen::Moved(before));
        }
    }
    Ok(true)
}
