//! A successful report ([`settle_succeeded`]): the executor queue's commonest write after the
//! lease, made by the statements that settle a writer group's reports together
//! ([`super::staged`]; one report is a group of one), kept apart from the rest of the queue's
//! statements.

use super::ask::{ProposalSeen, Success};
use super::staged;
use crate::domain::record::CommandRecord;
use crate::storage::conn::Conn;
use crate::storage::error::Result;

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
    Ok(staged::settle(conn, &[report]).await?.0.pop())
}
