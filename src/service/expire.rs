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
    /// its audit event: [`EXPIRE_BATCH`] proposals per write, and another write while a batch
    /// came back full, so a mass expiry never holds the writer in one long transaction.
    pub async fn expire_due(&self) -> Result<Vec<ProposalRecord>, ServiceError> {
        let now = self.now();
        let mut expired = Vec::new();
        loop {
            let batch = self
                .store()
                .write(move |tx| {
                    Box::pin(async move {
                        grants::expire_in(tx, now).await?;
                        expire_due_in(tx, now).await
                    })
                })
                .await?;
            let full = batch.len() >= EXPIRE_BATCH as usize;
            expired.extend(batch);
            if !full {
                break;
            }
        }
        if !expired.is_empty() {
            self.queue_changed();
            self.metrics().expired(expired.len());
        }
        Ok(expired)
    }
}

/// Most proposals one write expires.
const EXPIRE_BATCH: i64 = 500;

/// Expires what is due at `now` inside `tx`, at most [`EXPIRE_BATCH`], longest overdue first.
pub(super) async fn expire_due_in(
    tx: &mut Tx,
    now: time::OffsetDateTime,
) -> Result<Vec<ProposalRecord>, ServiceError> {
    let expired = proposals::expire_due(tx.conn(), now, EXPIRE_BATCH).await?;
    record_expired(tx, now, &expired);
    Ok(expired)
}

/// Expires proposal `id` inside `tx` if its time ran out at `now` (a decision that came too
/// late); whether it did.
pub(super) async fn expire_overdue_in(
    tx: &mut Tx,
    id: uuid::Uuid,
    now: time::OffsetDateTime,
) -> Result<bool, ServiceError> {
    let expired = proposals::expire_one_due(tx.conn(), id, now).await?;
    record_expired(tx, now, &expired);
    Ok(!expired.is_empty())
}

fn record_expired(tx: &mut Tx, now: time::OffsetDateTime, expired: &[ProposalRecord]) {
    let system = Actor::system("expiry");
    for p in expired {
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
}
