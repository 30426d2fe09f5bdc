//! Agents waiting for a decision without polling: a proposal read that waits, up to a bound,
//! for its status to move ([`Services::await_proposal`]). The waiter watches the proposal
//! before reading it ([`crate::storage::changes`]), so a change committed between the read
//! and the wait still wakes it; a pending proposal whose time runs out during the wait is
//! answered `expired` at its expiry, without waiting for the sweep.

use crate::domain::access::UseCase;
use crate::domain::principal::Principal;
use std::time::Duration;

use uuid::Uuid;

use super::error::ServiceError;
use super::services::Services;
use crate::domain::lifecycle::{ProposalStatus, status_at};
use crate::storage::commands::CommandRecord;
use crate::storage::proposals::ProposalRecord;

/// The longest wait an agent may ask for.
pub const MAX_WAIT: Duration = Duration::from_secs(60);

/// A proposal as its agent sees it, with its command.
pub type AgentView = (ProposalRecord, Option<CommandRecord>);

impl Services {
    /// agent `who`'s proposal `id`, at once if it is past `pending`, else as soon as its status
    /// changes or `wait` ends (then unchanged). Another agent's proposal is not found.
    pub async fn await_proposal(
        &self,
        who: &Principal,
        id: Uuid,
        wait: Duration,
    ) -> Result<AgentView, ServiceError> {
        let agent = self.agent_of(who, UseCase::ReadOwnProposal)?;
        let mut watching = self.store().changes().watch(id);
        // Each read is boxed: a future holds room for its largest await point, and a read's
        // (database) future is many times the size of the wait's, which is what thousands of
        // waiting agents hold for up to a minute.
        let first = Box::pin(self.own_proposal(agent, id)).await?;
        let now = self.now();
        if wait.is_zero()
            || status_at(first.0.status, first.0.expires_at, now) != ProposalStatus::Pending
        {
            return Ok(first);
        }
        let mut wait = wait.min(MAX_WAIT);
        if let Some(expires) = first.0.expires_at {
            let left = Duration::try_from(expires - now).unwrap_or(Duration::ZERO);
            wait = wait.min(left);
        }
        // Thousands of agents may wait at once: hold nothing of the proposal while waiting,
        // and read it again when the wait ends, whichever way it ends.
        drop(first);
        let deadline = tokio::time::Instant::now() + wait;
        while tokio::time::timeout_at(deadline, watching.changed())
            .await
            .is_ok()
        {
            // Woken by a move, or by a wake-up that moved nothing (after this instance's
            // PostgreSQL listener reconnected, every waiter looks again): answer only a move.
            let current = Box::pin(self.own_proposal(agent, id)).await?;
            let status = status_at(current.0.status, current.0.expires_at, self.now());
            if status != ProposalStatus::Pending {
                return Ok(current);
            }
        }
        drop(watching);
        Box::pin(self.own_proposal(agent, id)).await
    }

    /// The next change of agent `who`'s proposal `id` after `seen` (its status when last sent),
    /// waiting at most `wait`; `None` when nothing moved in that time.
    pub async fn next_change(
        &self,
        who: &Principal,
        id: Uuid,
        seen: ProposalStatus,
        wait: Duration,
    ) -> Result<Option<AgentView>, ServiceError> {
        let agent = self.agent_of(who, UseCase::ReadOwnProposal)?;
        let deadline = tokio::time::Instant::now() + wait;
        let mut watching = self.store().changes().watch(id);
        loop {
            let view = Box::pin(self.own_proposal(agent, id)).await?;
            let now = self.now();
            if status_at(view.0.status, view.0.expires_at, now) != seen {
                return Ok(Some(view));
            }
            let mut until = deadline;
            if let Some(expires) = view
                .0
                .expires_at
                .filter(|_| seen == ProposalStatus::Pending)
            {
                let left = Duration::try_from(expires - now).unwrap_or(Duration::ZERO);
                until = until.min(tokio::time::Instant::now() + left);
            }
            // Hold nothing of the proposal while waiting (see `await_proposal`).
            drop(view);
            if tokio::time::timeout_at(until, watching.changed())
                .await
                .is_err()
                && until == deadline
            {
                return Ok(None);
            }
        }
    }
}
