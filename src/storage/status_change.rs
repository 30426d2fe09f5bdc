//! A proposal's status change as the chain recorded it: what the audit append answers at commit
//! and what the webhook and notification queues are filled from.

use time::OffsetDateTime;
use uuid::Uuid;

use crate::audit::chain::ChainedEvent;

/// A proposal's status change, as its event was appended to the chain: what wakes waiters and
/// queues webhook deliveries at commit.
#[derive(Debug, Clone)]
pub struct StatusChange {
    /// The proposal.
    pub proposal: Uuid,
    /// Its status before (`None` when it was just submitted).
    pub before: Option<String>,
    /// Its status after.
    pub after: String,
    /// The audit event's id.
    pub event_id: Uuid,
    /// The audit event's position in the chain.
    pub seq: i64,
    /// The audit event's kind.
    pub kind: String,
    /// When it happened.
    pub at: OffsetDateTime,
}

impl StatusChange {
    /// The status changes among `rows` (linked into the chain): those of the rows that moved a
    /// proposal (`proposals`, one entry a row).
    pub(super) fn of_rows(rows: &[ChainedEvent], proposals: Vec<Option<Uuid>>) -> Vec<Self> {
        rows.iter()
            .zip(proposals)
            .filter_map(|(row, proposal)| {
                Some(StatusChange {
                    proposal: proposal?,
                    before: row.before_status.clone(),
                    after: row.after_status.clone()?,
                    event_id: row.id,
                    seq: row.seq,
                    kind: row.kind.clone(),
                    at: row.at,
                })
            })
            .collect()
    }
}
