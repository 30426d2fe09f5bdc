//! A successful report's one statement ([`settle_succeeded`]): the executor queue's commonest
//! write after the lease, kept apart from the rest of the queue's statements (and, several
//! reports at once, in [`super::staged`]).

use serde_json::Value;
use sqlx::types::Json;
use time::OffsetDateTime;
use uuid::Uuid;

use super::super::Result;
use super::super::db::Conn;
use super::{CommandRecord, CommandRow, WithProposal};
use crate::domain::command::CommandStatus;
use crate::domain::lifecycle::ProposalStatus;

/// A success report to settle: owned, so a write closure and the writer's group
/// ([`super::settle_staged`]) can share it.
#[derive(Debug, Clone)]
pub struct Success {
    /// The command.
    pub id: Uuid,
    /// The executor's `result`.
    pub result: Value,
    /// The executor reporting.
    pub executor: String,
    /// sha256 hex of the lease token it presented.
    pub lease_token_hash: String,
    /// Now.
    pub now: OffsetDateTime,
}

/// A settled command, its proposal's status, and whether the statement moved the proposal.
#[derive(sqlx::FromRow)]
pub(super) struct Settled {
    #[sqlx(flatten)]
    with: WithProposal,
    proposal_moved: bool,
}

impl Settled {
    /// The command and what the statement saw of its proposal.
    pub(super) fn into_parts(self) -> Result<(CommandRecord, Option<ProposalSeen>)> {
        let (command, status) = self.with.into_parts()?;
        let seen = status.map(if self.proposal_moved {
            ProposalSeen::Moved
        } else {
            ProposalSeen::Read
        });
        Ok((command, seen))
    }

    /// The command row alone (a lease's, in a statement that also settles).
    pub(super) fn into_row(self) -> CommandRow {
        self.with.row
    }
}

/// What a report's statement saw of the command's proposal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProposalSeen {
    /// Its status, read with the command.
    Read(ProposalStatus),
    /// The statement also moved it to the command's outcome, from this status.
    Moved(ProposalStatus),
}

/// Ends in success the run `executor` holds under this lease token, in one statement, if its
/// command may run: a rollback, or an action whose proposal is still executable. Answers the
/// command and what the statement saw of its proposal (on PostgreSQL it also moves an action's
/// proposal to `succeeded`: [`super::staged::pg_settle`] for one report); `None` if it did not
/// hold (no such lease, or a proposal that was never approved): [`super::with_proposal_status`]
/// and [`super::settle_reported`] then tell why. The report's common case, so it is one round
/// trip on the writer's serial path, where reading first and moving the proposal after took
/// two more. SQLite, which has no updates inside `with`, leaves moving the proposal to a
/// statement of its own.
pub async fn settle_succeeded(
    conn: Conn<'_>,
    report: &Success,
) -> Result<Option<(CommandRecord, Option<ProposalSeen>)>> {
    let c = match conn {
        Conn::Sqlite(c) => c,
        Conn::Postgres(c) => return Ok(super::staged::pg_settle(c, &[report]).await?.pop()),
    };
    let sql = concat!(
        "update commands set status = $1, result = $2, error = null, interruption = null, \
         side_effect = null, available_at = $3, completed_at = $3, updated_at = $3, \
         lease_token_hash = null where id = $4 and status = 'leased' \
         and lease_token_hash = $5 and leased_by = $6 and (kind <> 'action' or \
         (select p.status from proposals p where p.id = commands.proposal_id) in ($7, $8)) \
         returning ",
        cols!(),
        ", (select p.status from proposals p where p.id = commands.proposal_id) \
         as proposal_status, 0 as proposal_moved"
    );
    let [first, second] = ProposalStatus::EXECUTABLE;
    let row: Option<Settled> = sqlx::query_as(sql)
        .bind(CommandStatus::Succeeded.as_str())
        .bind(Json(&report.result))
        .bind(report.now)
        .bind(report.id)
        .bind(&report.lease_token_hash)
        .bind(&report.executor)
        .bind(first.as_str())
        .bind(second.as_str())
        .fetch_optional(c)
        .await?;
    row.map(Settled::into_parts).transpose()
}
