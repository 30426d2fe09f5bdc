//! What the adapters read: proposals, commands, trails, principals. Reads never write.

use uuid::Uuid;

use super::{ServiceError, Services};
use crate::storage::accounts::{self, TokenRecord, UserRecord};
use crate::storage::commands::{self, CommandRecord};
use crate::storage::proposals::{self, ProposalRecord};
use crate::storage::{AuditRecord, audit};

/// Most pending proposals the queue shows.
pub const QUEUE_LIMIT: i64 = 200;

impl Services {
    /// A proposal by id.
    pub async fn proposal(&self, id: Uuid) -> Result<Option<ProposalRecord>, ServiceError> {
        let mut read = self.read().await?;
        Ok(proposals::by_id(read.conn(), id).await?)
    }

    /// The command queued for a proposal.
    pub async fn command_for_proposal(
        &self,
        proposal_id: Uuid,
    ) -> Result<Option<CommandRecord>, ServiceError> {
        let mut read = self.read().await?;
        Ok(commands::for_proposal(read.conn(), proposal_id).await?)
    }

    /// An agent's own proposal with its command; another agent's is not found.
    pub async fn agent_proposal(
        &self,
        agent: &str,
        id: Uuid,
    ) -> Result<(ProposalRecord, Option<CommandRecord>), ServiceError> {
        // One connection for both reads, on this thread when it can be: agents poll this.
        let mut read = self.store().point_read().await?;
        let p = read
            .proposal(id)
            .await?
            .filter(|p| p.agent == agent)
            .ok_or(ServiceError::NotFound)?;
        // A pending proposal (what agents poll) has no command to read.
        let command = if p.status.may_have_command() {
            read.command_for_proposal(id).await?
        } else {
            None
        };
        Ok((p, command))
    }

    /// Pending proposals still open for a decision, oldest first.
    pub async fn pending(&self, limit: i64) -> Result<Vec<ProposalRecord>, ServiceError> {
        let mut read = self.read().await?;
        Ok(proposals::pending_live(read.conn(), self.now(), limit).await?)
    }

    /// Proposals in one status, oldest first.
    pub async fn proposals_in(
        &self,
        status: crate::domain::lifecycle::ProposalStatus,
        limit: i64,
    ) -> Result<Vec<ProposalRecord>, ServiceError> {
        let mut read = self.read().await?;
        Ok(proposals::by_status(read.conn(), status, limit).await?)
    }

    /// Who approved a proposal so far, in order.
    pub async fn approvals(
        &self,
        id: Uuid,
    ) -> Result<Vec<(String, time::OffsetDateTime)>, ServiceError> {
        let mut read = self.read().await?;
        Ok(proposals::approvals(read.conn(), id).await?)
    }

    /// The audit trail of one subject, in order.
    pub async fn trail(
        &self,
        subject_type: &str,
        subject_id: &str,
    ) -> Result<Vec<AuditRecord>, ServiceError> {
        let mut read = self.read().await?;
        Ok(audit::for_subject(read.conn(), subject_type, subject_id).await?)
    }

    /// A user by name.
    pub async fn user(&self, username: &str) -> Result<Option<UserRecord>, ServiceError> {
        let mut read = self.read().await?;
        Ok(accounts::user_by_username(read.conn(), username).await?)
    }

    /// The principal behind an API token's hash (cached for a moment when active: see
    /// [`super::tokens`]).
    pub async fn token(&self, token_hash: &str) -> Result<Option<TokenRecord>, ServiceError> {
        let now = std::time::Instant::now();
        if let Some(cached) = self.tokens.get(token_hash, now) {
            return Ok(Some(cached));
        }
        let generation = self.tokens.generation();
        let mut read = self.read().await?;
        let found = accounts::token_by_hash(read.conn(), token_hash).await?;
        if let Some(record) = &found {
            self.tokens.put(token_hash, record, now, generation);
        }
        Ok(found)
    }
}
