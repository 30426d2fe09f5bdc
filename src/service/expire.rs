//! Expiry: a pending proposal nobody decided before its policy's deadline is expired, never
//! approved. The server sweeps periodically; a decision that comes too late expires it too.
//! The same sweep ends the standing grants whose time ran out.

use super::error::ServiceError;
use super::grants;
use super::services::Services;
use crate::audit::{Actor, AuditEvent, ProposalExpired, ProposalFacets};
use crate::storage::Tx;
use crate::storage::proposals::{self, ProposalRecord};

impl Services {
    /// Expires every pending proposal whose time ran out, and every standing grant, each with
    /// its audit event.
    pub async fn expire_due(&self) -> Result<Vec<ProposalRecord>, ServiceError> {
        let now = self.now();
        let expired = self
            .store()
            .write(move |tx| {
                Box::pin(async move {
                    grants::expire_in(tx, now).await?;
                    expire_due_in(tx, now).await
                })
            })
            .await?;
        if !expired.is_empty() {
            self.queue_changed();
            self.metrics().expired(expired.len());
        }
        Ok(expired)
    }
}

/// Expires what is due at `now` inside `tx`.
pub(super) async fn expire_due_in(
    tx: &mut Tx,
    now: time::OffsetDateTime,
) -> Result<Vec<ProposalRecord>, ServiceError> {
    let expired = proposals::expire_due(tx.conn(), now).await?;
    let system = Actor::system("expiry");
    for p in &expired {
        let event = ProposalExpired {
            proposal_id: p.id,
            facets: ProposalFacets::of(&p.agent, &p.contract),
            decision: "expired",
            expires_at: p.expires_at.and_then(|t| {
                t.format(&time::format_description::well_known::Rfc3339)
                    .ok()
            }),
        };
        tx.record(now, &system, AuditEvent::ProposalExpired(event));
    }
    Ok(expired)
}
