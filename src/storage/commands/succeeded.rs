//! A successful report's one statement ([`settle_succeeded`]): the executor queue's commonest
//! write after the lease, kept apart from the rest of the queue's statements.

use serde_json::Value;
use sqlx::types::Json;
use time::OffsetDateTime;
use uuid::Uuid;

use super::super::Result;
use super::super::db::{Conn, on};
use super::{CommandRecord, WithProposal};
use crate::domain::command::CommandStatus;
use crate::domain::lifecycle::ProposalStatus;

/// A settled command, its proposal's status, and whether the statement moved the proposal.
#[derive(sqlx::FromRow)]
struct Settled {
    #[sqlx(flatten)]
    with: WithProposal,
    proposal_moved: bool,
}

/// What a report's statement saw of the command's proposal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProposalSeen {
    /// Its status, read with the command.
    Read(ProposalStatus),
    /// The statement also moved it to the command's outcome, from this status.
    Moved(ProposalStatus),
}

/// The update [`settle_succeeded`] runs, optionally opened by `with s as (` so PostgreSQL can
/// follow it with a second update in the same statement that moves the proposal, from the
/// status the first read (a proposal another instance moved meanwhile is left to
/// [`super::proposals::move_status`]). SQLite, which has no updates inside `with`, moves it in
/// a statement of its own.
macro_rules! settle_succeeded {
    ($($with:literal)?) => {
        concat!(
            $($with,)?
            "update commands set status = $1, result = $2, error = null, interruption = null, \
             side_effect = null, available_at = $3, completed_at = $3, updated_at = $3, \
             lease_token_hash = null where id = $4 and status = 'leased' \
             and lease_token_hash = $5 and leased_by = $6 and (kind <> 'action' or \
             (select p.status from proposals p where p.id = commands.proposal_id) in ($7, $8)) \
             returning ",
            cols!(),
            ", (select p.status from proposals p where p.id = commands.proposal_id) \
             as proposal_status"
        )
    };
}

/// Ends in success the run `executor` holds under this lease token, in one statement, if its
/// command may run: a rollback, or an action whose proposal is still executable. Answers the
/// command and what the statement saw of its proposal (on PostgreSQL it also moves an action's
/// proposal to `succeeded`); `None` if it did not hold (no such lease, or a proposal that was
/// never approved): [`with_proposal_status`] and [`settle_reported`] then tell why. The
/// report's common case, so it is one round trip on the writer's serial path, where reading
/// first and moving the proposal after took two more.
pub async fn settle_succeeded(
    conn: Conn<'_>,
    id: Uuid,
    result: &Value,
    executor: &str,
    lease_token_hash: &str,
    now: OffsetDateTime,
) -> Result<Option<(CommandRecord, Option<ProposalSeen>)>> {
    let conn_is_postgres = matches!(conn, Conn::Postgres(_));
    let sql = conn.pick(
        concat!(settle_succeeded!(), ", 0 as proposal_moved"),
        concat!(
            settle_succeeded!("with s as ("),
            "), m as (update proposals p set status = $9, updated_at = $3 from s \
             where p.id = s.proposal_id and s.kind = 'action' and p.status = s.proposal_status \
             and p.status <> $9 returning p.id) \
             select s.*, exists (select 1 from m) as proposal_moved from s"
        ),
    );
    let [first, second] = ProposalStatus::EXECUTABLE;
    let row: Option<Settled> = on!(conn, |c| {
        let query = sqlx::query_as(sql)
            .bind(CommandStatus::Succeeded.as_str())
            .bind(Json(result))
            .bind(now)
            .bind(id)
            .bind(lease_token_hash)
            .bind(executor)
            .bind(first.as_str())
            .bind(second.as_str());
        if conn_is_postgres {
            query.bind(ProposalStatus::Succeeded.as_str())
        } else {
            query
        }
        .fetch_optional(c)
        .await
    })?;
    row.map(|r| {
        let (command, status) = r.with.into_parts()?;
        let seen = status.map(if r.proposal_moved {
            ProposalSeen::Moved
        } else {
            ProposalSeen::Read
        });
        Ok((command, seen))
    })
    .transpose()
}
