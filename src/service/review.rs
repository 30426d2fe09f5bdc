//! What the proposal page needs besides the proposal itself: the command the executor will
//! receive (or did), the agent's record with the tool, and the audited reveal of personal data
//! on GDPR and HIPAA proposals. Rules come from [`crate::domain::review`].

use uuid::Uuid;

use super::{ServiceError, Services};
use crate::audit::{Actor, AuditEvent, PersonalDataRevealed};
use crate::domain::command::CommandSpec;
use crate::domain::contract::vocab::AuthorizationState;
use crate::domain::review::disclosure::{self, personal_fields};
use crate::domain::review::history::{HISTORY_RECENT, HISTORY_WINDOW, Tally};
use crate::storage::audit;
use crate::storage::history::{self, SimilarRow};
use crate::storage::proposals::ProposalRecord;

/// The audit kind of a reveal.
const REVEALED: &str = "proposal.personal_data_revealed";

/// An agent's earlier proposals for the tool of one proposal.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentHistory {
    /// Counts by outcome over the most recent [`HISTORY_WINDOW`].
    pub tally: Tally,
    /// Whether there may be more than the window counted.
    pub capped: bool,
    /// The most recent few, newest first.
    pub recent: Vec<SimilarRow>,
}

/// Whether a proposal's compliance context makes its personal data withheld.
pub fn withholds_personal_data(p: &ProposalRecord) -> bool {
    let cc = p.contract.compliance_context;
    cc.gdpr || cc.hipaa
}

impl Services {
    /// The command approving `p` would queue now: exactly what [`Services::decide`] builds,
    /// with an empty approver (the page says "on approval" for the approval's own fields).
    pub fn command_preview(&self, p: &ProposalRecord) -> CommandSpec {
        self.approved_command(
            &p.contract,
            &p.request_hash,
            "",
            AuthorizationState::Confirmed,
            self.now(),
        )
        .spec
    }

    /// `p`'s agent's proposals for the same tool that arrived before it.
    pub async fn agent_history(&self, p: &ProposalRecord) -> Result<AgentHistory, ServiceError> {
        let tool = &p.contract.tool.name;
        let mut read = self.read().await?;
        let counts =
            history::status_counts(read.conn(), &p.agent, tool, p.seq, HISTORY_WINDOW).await?;
        let recent = history::recent(read.conn(), &p.agent, tool, p.seq, HISTORY_RECENT).await?;
        let tally = Tally::of(
            counts
                .iter()
                .map(|(s, n)| (s.as_str(), u64::try_from(*n).unwrap_or(0))),
        );
        Ok(AgentHistory {
            capped: i64::try_from(tally.total).unwrap_or(i64::MAX) >= HISTORY_WINDOW,
            tally,
            recent,
        })
    }

    /// `viewer` reveals proposal `id`'s withheld personal data: records which fields (never
    /// their values) as `proposal.personal_data_revealed`, and returns their pointers. Nothing
    /// is recorded when the proposal withholds nothing.
    pub async fn reveal_personal_data(
        &self,
        viewer: &Actor,
        id: Uuid,
    ) -> Result<Vec<String>, ServiceError> {
        let p = self.proposal(id).await?.ok_or(ServiceError::NotFound)?;
        let spec = match self.command_for_proposal(id).await? {
            Some(c) => c.spec,
            None => self.command_preview(&p),
        };
        let json = serde_json::to_value(&spec).unwrap_or_default();
        let fields = json
            .as_object()
            .map(|o| personal_fields(o, withholds_personal_data(&p)))
            .unwrap_or_default();
        if fields.is_empty() {
            return Ok(fields);
        }
        let event = PersonalDataRevealed::new(p.id, &p.agent, &p.contract, &fields);
        self.store()
            .record(vec![(
                self.now(),
                viewer.clone(),
                AuditEvent::PersonalDataRevealed(event),
            )])
            .await?;
        tracing::info!(proposal.id = %id, fields = fields.len(), "personal data revealed");
        Ok(fields)
    }

    /// Whether `viewer` revealed proposal `id`'s personal data recently enough to see it now.
    pub async fn revealed_recently(&self, viewer: &Actor, id: Uuid) -> Result<bool, ServiceError> {
        let mut read = self.read().await?;
        let at = audit::last_by_actor(
            read.conn(),
            "proposal",
            &id.to_string(),
            REVEALED,
            &viewer.name,
        )
        .await?;
        Ok(at.is_some_and(|at| disclosure::reveal_holds(at, self.now())))
    }
}
