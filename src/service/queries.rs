//! What the adapters read: proposals, commands, trails, principals. Reads never write.

use uuid::Uuid;

use super::error::ServiceError;
use super::services::Services;
use crate::domain::access::{Reach, UseCase};
use crate::domain::principal::Principal;
use crate::storage::accounts::{self, TokenRecord, UserRecord};
use crate::storage::commands::{self, CommandRecord};
use crate::storage::proposals::{self, ProposalRecord};
use crate::storage::{AuditRecord, audit};

/// Most pending proposals the queue shows.
pub const QUEUE_LIMIT: i64 = 200;

impl Services {
    /// A proposal by id.
    pub async fn proposal(
        &self,
        who: &Principal,
        id: Uuid,
    ) -> Result<Option<ProposalRecord>, ServiceError> {
        self.reachable(who, UseCase::ViewProposal, id).await
    }

    /// Proposal `id`, when `who` may call `use_case` on it ([`Services::may_see`]); `None`
    /// when there is none or it is out of `who`'s reach, alike. The one path every read of a
    /// proposal's parts takes before it reads them.
    pub(super) async fn reachable(
        &self,
        who: &Principal,
        use_case: UseCase,
        id: Uuid,
    ) -> Result<Option<ProposalRecord>, ServiceError> {
        self.authorize(who, use_case)?;
        let Some(p) = self.proposal_row(id).await? else {
            return Ok(None);
        };
        Ok(self.may_see(who, use_case, &p).await?.then_some(p))
    }

    /// A proposal by id, for a use case that has decided who may act on it.
    pub(super) async fn proposal_row(
        &self,
        id: Uuid,
    ) -> Result<Option<ProposalRecord>, ServiceError> {
        let mut read = self.read().await?;
        Ok(proposals::by_id(read.conn(), id).await?)
    }

    /// Whether `who` may call `use_case` on `p`: the table lets them, and a person limited to
    /// domains has `p`'s domain among them or an escalation of `p` reached them. An agent
    /// reaches only its own proposals.
    pub(super) async fn may_see(
        &self,
        who: &Principal,
        use_case: UseCase,
        p: &ProposalRecord,
    ) -> Result<bool, ServiceError> {
        let reach = self.authorize(who, use_case)?;
        Ok(match who {
            Principal::Agent(agent) => *agent == p.agent,
            Principal::Person(person) if !reach.covers(&p.contract.domain) => {
                self.escalated_to(&person.username, p.id).await?
            }
            _ => true,
        })
    }

    /// The proposals among `ids` that exist, in no particular order, for a use case that has
    /// decided who may see them.
    pub(super) async fn proposals(
        &self,
        ids: &[Uuid],
    ) -> Result<Vec<ProposalRecord>, ServiceError> {
        let mut read = self.read().await?;
        Ok(proposals::by_ids(read.conn(), ids).await?)
    }

    /// The command queued for proposal `id`, when `who` may view the proposal (another
    /// domain's has none to show).
    pub async fn command_for_proposal(
        &self,
        who: &Principal,
        id: Uuid,
    ) -> Result<Option<CommandRecord>, ServiceError> {
        if self
            .reachable(who, UseCase::ViewProposal, id)
            .await?
            .is_none()
        {
            return Ok(None);
        }
        self.command_row(id).await
    }

    /// The command queued for a proposal, for a use case that has decided who may see it.
    pub(super) async fn command_row(
        &self,
        proposal_id: Uuid,
    ) -> Result<Option<CommandRecord>, ServiceError> {
        let mut read = self.read().await?;
        Ok(commands::for_proposal(read.conn(), proposal_id).await?)
    }

    /// Agent `who`'s own proposal with its command; another agent's is not found.
    pub async fn agent_proposal(
        &self,
        who: &Principal,
        id: Uuid,
    ) -> Result<(ProposalRecord, Option<CommandRecord>), ServiceError> {
        let agent = self.agent_of(who, UseCase::ReadOwnProposal)?;
        self.own_proposal(agent, id).await
    }

    /// `agent`'s own proposal with its command, for a use case that checked who `agent` is.
    pub(super) async fn own_proposal(
        &self,
        agent: &str,
        id: Uuid,
    ) -> Result<(ProposalRecord, Option<CommandRecord>), ServiceError> {
        // On this thread when it can be, else in one statement: agents poll this.
        let mut read = self.store().point_read().await?;
        let found = read.proposal_and_command(id).await?;
        found
            .filter(|(p, _)| p.agent == agent)
            .ok_or(ServiceError::NotFound)
    }

    /// Pending proposals still open for a decision, oldest first: of the first `limit`, those
    /// in `who`'s domains (as the queue holds them).
    pub async fn pending(
        &self,
        who: &Principal,
        limit: i64,
    ) -> Result<Vec<ProposalRecord>, ServiceError> {
        let reach = self.authorize(who, UseCase::ViewQueue)?;
        let mut read = self.read().await?;
        let found = proposals::pending_live(read.conn(), self.now(), limit).await?;
        Ok(within(reach, found))
    }

    /// Proposals in one status, oldest first: of the first `limit`, those in `who`'s domains
    /// (as the queue holds them).
    pub async fn proposals_in(
        &self,
        who: &Principal,
        status: crate::domain::lifecycle::ProposalStatus,
        limit: i64,
    ) -> Result<Vec<ProposalRecord>, ServiceError> {
        let reach = self.authorize(who, UseCase::ViewQueue)?;
        let mut read = self.read().await?;
        let found = proposals::by_status(read.conn(), status, limit).await?;
        Ok(within(reach, found))
    }

    /// Who approved a proposal so far, in order, for a use case that has decided who may see
    /// it.
    pub(super) async fn approvals(
        &self,
        id: Uuid,
    ) -> Result<Vec<(String, time::OffsetDateTime)>, ServiceError> {
        let mut read = self.read().await?;
        Ok(proposals::approvals(read.conn(), id).await?)
    }

    /// The audit trail of one subject, in order (the whole trail's reader's).
    pub async fn trail(
        &self,
        who: &Principal,
        subject_type: &str,
        subject_id: &str,
    ) -> Result<Vec<AuditRecord>, ServiceError> {
        self.authorize(who, UseCase::ReadTrail)?;
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

/// The proposals among `found` in `reach`'s domains.
fn within(reach: Reach<'_>, found: Vec<ProposalRecord>) -> Vec<ProposalRecord> {
    found
        .into_iter()
        .filter(|p| reach.covers(&p.contract.domain))
        .collect()
}
