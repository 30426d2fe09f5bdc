//! An agent withdraws its own proposal while it waits for a person (an MCP client's
//! `tasks/cancel` on the gateway): status `withdrawn`, audited `proposal.withdrawn`, and it
//! never executes. Only a pending proposal that has not expired; one a reviewer decided first
//! stays decided.

use uuid::Uuid;

use super::error::{Conflict, ServiceError};
use super::services::Services;
use crate::audit::{Actor, AuditEvent, ProposalFacets, ProposalWithdrawn};
use crate::domain::access::UseCase;
use crate::domain::lifecycle::ProposalStatus;
use crate::domain::principal::Principal;
use crate::storage::proposals::{self, ProposalRecord};

impl Services {
    /// Agent `who` withdraws its proposal `id`. Another agent's is not found; one no longer
    /// pending (decided, run, or past its expiry) is a conflict naming its status.
    pub async fn withdraw(
        &self,
        who: &Principal,
        id: Uuid,
    ) -> Result<ProposalRecord, ServiceError> {
        let agent = self.agent_of(who, UseCase::Withdraw)?.to_owned();
        let now = self.now();
        let withdrawn = self
            .store()
            .write(move |tx| {
                Box::pin(async move {
                    if let Some(p) = proposals::withdraw(tx.conn(), id, &agent, now).await? {
                        let event = ProposalWithdrawn {
                            proposal_id: p.id,
                            facets: ProposalFacets::of(&p.agent, &p.contract),
                            decision: "withdrawn",
                            via: "mcp_tasks_cancel",
                        };
                        tx.record(
                            now,
                            &Actor::agent(&agent),
                            AuditEvent::ProposalWithdrawn(event),
                        );
                        return Ok(p);
                    }
                    match proposals::by_id(tx.conn(), id).await? {
                        Some(p) if p.agent == agent => {
                            // Pending past its expiry is expired, as agents see it.
                            let status = match p.status {
                                ProposalStatus::Pending => ProposalStatus::Expired,
                                other => other,
                            };
                            Err(ServiceError::Conflict(Conflict::AlreadyDecided(status)))
                        }
                        _ => Err(ServiceError::NotFound),
                    }
                })
            })
            .await?;
        self.queue_changed();
        tracing::info!(proposal.id = %id, agent = %withdrawn.agent, "proposal withdrawn by its agent");
        Ok(withdrawn)
    }
}
