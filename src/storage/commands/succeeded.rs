//! A successful report ([`settle_succeeded`]): the executor queue's commonest write after the
//! lease, made by the statements that settle a writer group's reports together
//! ([`super::staged`]; one report is a group of one), kept apart from the rest of the queue's
//! statements.

use serde_json::Value;
use time::OffsetDateTime;
use uuid::Uuid;

use super::super::Result;
use super::super::db::Conn;
use super::{CommandRecord, CommandRow, WithProposal};
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

/// Ends in success the run `executor` holds under this lease token, if its command may run: a
/// rollback, or an action whose proposal is still executable. Answers the command and what was
/// seen of its proposal (an action's proposal is moved to `succeeded` with it: in the same
/// statement on PostgreSQL, in a second one on SQLite, which has no updates inside `with`);
/// `None` if it did not hold (no such lease, or a proposal that was never approved):
/// [`super::with_proposal_status`] and [`super::settle_reported`] then tell why. The report's
/// common case, so it takes no read first on the writer's serial path. The statements are a
/// group's reports' ([`super::settle_staged`]) for one report.
pub async fn settle_succeeded(
    conn: Conn<'_>,
    report: &Success,
) -> Result<Option<(CommandRecord, Option<ProposalSeen>)>> {
    Ok(super::staged::settle(conn, &[report]).await?.0.pop())
}
