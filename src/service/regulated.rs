//! Regulated data. HIPAA's enhanced logging (and GDPR's): opening a proposal that carries
//! health or personal data records who viewed it, when.
//!
//! GDPR erasure: an admin (or an operator with `countersign proposal erase`) removes a settled
//! proposal's personal data values from the proposal and its command, keeping its keys,
//! request hash and decision; the erasure is itself audited, and the chain keeps verifying
//! (the trail only ever held keyed hashes of the values).

use uuid::Uuid;

use super::error::ServiceError;
use super::services::Services;
use crate::audit::{Actor, AuditEvent, ProposalErased, ProposalFacets, ProposalViewed};
use crate::domain::access::UseCase;
use crate::domain::erasure;
use crate::domain::principal::Principal;
use crate::storage::StorageError;
use crate::storage::Tx;
use crate::storage::commands::{self, ErasedCommand};
use crate::storage::proposals::{self, ErasureRow, ProposalRecord};

impl Services {
    /// Records that `viewer` opened proposal `p`, when it carries GDPR or HIPAA data.
    pub async fn record_view(
        &self,
        viewer: &Actor,
        p: &ProposalRecord,
    ) -> Result<(), ServiceError> {
        let cc = &p.contract.compliance_context;
        let compliance: Vec<&'static str> = [("gdpr", cc.gdpr), ("hipaa", cc.hipaa)]
            .into_iter()
            .filter_map(|(name, on)| on.then_some(name))
            .collect();
        if compliance.is_empty() {
            return Ok(());
        }
        let event = AuditEvent::ProposalViewed(ProposalViewed {
            proposal_id: p.id,
            facets: ProposalFacets::of(&p.agent, &p.contract),
            compliance,
        });
        self.store()
            .record(vec![(self.now(), viewer.clone(), event)])
            .await?;
        Ok(())
    }

    /// `who` erases proposal `id`'s personal data values for `reason`.
    pub async fn erase_proposal(
        &self,
        who: &Principal,
        id: Uuid,
        reason: &str,
    ) -> Result<ProposalRecord, ServiceError> {
        self.authorize(who, UseCase::Erase)?;
        let actor = &Actor::of(who);
        let reason = reason.trim().to_owned();
        let digest = self.store().salt().text(&reason);
        let actor = actor.clone();
        let now = self.now();
        let erased = self
            .store()
            .write(move |tx| {
                Box::pin(async move {
                    let (p, event) = erase_in(tx, &actor, id, &reason, now).await?;
                    let event = ProposalErased {
                        reason: digest,
                        ..event
                    };
                    tx.record(now, &actor, AuditEvent::ProposalErased(event));
                    Ok::<_, ServiceError>(p)
                })
            })
            .await?;
        tracing::info!(proposal.id = %id, "personal data erased");
        Ok(erased)
    }
}

/// Checks and writes the erasure of proposal `id` and its commands (its action and any
/// rollbacks) inside `tx`; returns the erased proposal and the event to record (its reason still
/// to fill in). The domain decides ([`erasure::check`]); each update only checks that the row
/// is still in the status the domain saw, and if one moved meanwhile (another instance) the
/// whole erasure rolls back rather than leave values behind.
async fn erase_in(
    tx: &mut Tx,
    actor: &Actor,
    id: Uuid,
    reason: &str,
    now: time::OffsetDateTime,
) -> Result<(ProposalRecord, ProposalErased), ServiceError> {
    let p = proposals::by_id(tx.conn(), id)
        .await?
        .ok_or(ServiceError::NotFound)?;
    let commands = commands::of_proposal(tx.conn(), id).await?;
    let statuses: Vec<_> = commands.iter().map(|c| c.status).collect();
    erasure::check(p.status, &statuses, p.erasure.is_some(), reason)?;
    let (contract, parts) = erasure::erase_proposal(&p.contract);
    let edit = (p.review.as_ref().and_then(|r| r.edited.as_ref()))
        .map(|e| serde_json::to_string(&e.erased()))
        .transpose()
        .map_err(|e| ServiceError::Storage(StorageError::Corrupt(e.to_string())))?;
    let row = ErasureRow {
        id,
        status: p.status,
        contract: &contract,
        edit: edit.as_deref(),
        by: &actor.name,
        reason,
        now,
    };
    let erased = proposals::erase(tx.conn(), &row)
        .await?
        .ok_or(ServiceError::Erasure(erasure::ErasureError::AlreadyErased))?;
    for c in &commands {
        let spec = erasure::erase_command(&c.spec);
        let result = erasure::erase_report(c.result.as_ref());
        let error = erasure::erase_report(c.error.as_ref());
        let row = ErasedCommand {
            id: c.id,
            status: c.status,
            spec: &spec,
            result: result.as_ref(),
            error: error.as_ref(),
        };
        if !commands::erase(tx.conn(), &row).await? {
            return Err(erasure::ErasureError::CommandOpen(c.status).into());
        }
    }
    let event = ProposalErased {
        proposal_id: id,
        facets: ProposalFacets::of(&p.agent, &p.contract),
        reason: Default::default(),
        erased: parts,
        request_hash_sha256: p.request_hash,
    };
    Ok((erased, event))
}
