//! The proposal page: its parts read together for a viewer `proposal.view` let in
//! ([`Services::proposal_page`]) — the command the executor will receive (or did), the
//! approvals, the trail, the agent's record with the tool — where the viewer stands, and the
//! audited reveal of personal data on GDPR and HIPAA proposals. Rules come from
//! [`crate::domain::review`].

use crate::domain::access::UseCase;
use crate::domain::lifecycle::{self, Standing};
use crate::domain::principal::Principal;
use time::OffsetDateTime;
use uuid::Uuid;

use super::error::ServiceError;
use super::ledger::{Cursor, TrailPage};
use super::services::Services;
use crate::audit::{Actor, AuditEvent, PersonalDataRevealed};
use crate::domain::command::CommandSpec;
use crate::domain::contract::vocab::AuthorizationState;
use crate::domain::review::disclosure::{self, personal_fields};
use crate::domain::review::history::{HISTORY_RECENT, HISTORY_WINDOW, Tally};
use crate::storage::alerts::Alert;
use crate::storage::audit;
use crate::storage::commands::CommandRecord;
use crate::storage::history::{self, SimilarRow};
use crate::storage::passkeys;
use crate::storage::proposals::ProposalRecord;

/// The audit kind of a reveal.
const REVEALED: &str = "proposal.personal_data_revealed";
/// The event of a break-glass approval.
const BROKE_GLASS: &str = "proposal.break_glass";

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

/// Everything a proposal's page shows besides where its viewer stands
/// ([`Services::standing`]): read together, for a viewer let in once.
#[derive(Debug, Clone)]
pub struct ProposalPage {
    /// The proposal.
    pub proposal: ProposalRecord,
    /// Its command, once queued.
    pub command: Option<CommandRecord>,
    /// Who approved it so far, in order.
    pub approvals: Vec<(String, OffsetDateTime)>,
    /// A page of its trail and its command's.
    pub trail: TrailPage,
    /// Its agent's earlier proposals for the tool.
    pub history: AgentHistory,
    /// Whether the viewer revealed its withheld personal data recently enough to see it now
    /// (`false` when it withholds nothing).
    pub revealed: bool,
    /// The expiry warnings and escalations raised for it, oldest first.
    pub alerts: Vec<Alert>,
    /// The proposals that revise it, oldest first.
    pub revised_by: Vec<Uuid>,
    /// For a call through the MCP gateway: the tool's pinned definition (and a changed one
    /// waiting for an admin), so the reviewer reads what the model read.
    pub tool_definition: Option<crate::domain::gateway::ToolPin>,
    /// The admin who approved it alone past the quorum (break-glass), and when.
    pub broke_glass: Option<(String, OffsetDateTime)>,
    /// The approvals a passkey proved: approver and credential id, in order.
    pub passkey_proofs: Vec<(String, String)>,
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

    /// Proposal `id`'s page as `who` sees it, from `trail` on in its trail; `None` when there
    /// is none or it is out of `who`'s reach (another domain's, not escalated to them). Every
    /// part is read only after `who` was let in (`proposal.view`).
    pub async fn proposal_page(
        &self,
        who: &Principal,
        id: Uuid,
        trail: Cursor,
    ) -> Result<Option<ProposalPage>, ServiceError> {
        let Some(proposal) = self.reachable(who, UseCase::ViewProposal, id).await? else {
            return Ok(None);
        };
        let command = self.command_row(id).await?;
        let approvals = self.approvals(id).await?;
        let trail = (self.proposal_trail(id, command.as_ref().map(|c| c.id), trail)).await?;
        let reach = self.authorize(who, UseCase::ViewProposal)?;
        let history = self.agent_history(&proposal, reach.domains()).await?;
        let revealed = withholds_personal_data(&proposal)
            && self.revealed_recently(&Actor::of(who), id).await?;
        let alerts = self.alerts(id).await?;
        let revised_by = self.revisions_of(id).await?;
        let tool = &proposal.contract.tool;
        let tool_definition = self.gateway_pin(&tool.name, &tool.version).await?;
        let (broke_glass, passkey_proofs) = {
            let mut read = self.read().await?;
            let subject = id.to_string();
            let glass = audit::last_of(read.conn(), "proposal", &subject, BROKE_GLASS).await?;
            (glass, passkeys::proofs_of(read.conn(), id).await?)
        };
        Ok(Some(ProposalPage {
            proposal,
            command,
            approvals,
            trail,
            history,
            revealed,
            alerts,
            revised_by,
            tool_definition,
            broke_glass,
            passkey_proofs,
        }))
    }

    /// `p`'s agent's proposals for the same tool that arrived before it, those in `domains`
    /// only (`None`: every domain): the page lists their intents.
    async fn agent_history(
        &self,
        p: &ProposalRecord,
        domains: Option<&[String]>,
    ) -> Result<AgentHistory, ServiceError> {
        let tool = &p.contract.tool.name;
        let mut read = self.read().await?;
        let window = (HISTORY_WINDOW, domains);
        let counts = history::status_counts(read.conn(), &p.agent, tool, p.seq, window).await?;
        let last = (HISTORY_WINDOW, domains, HISTORY_RECENT);
        let recent = history::recent(read.conn(), &p.agent, tool, p.seq, last).await?;
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

    /// Where `who` stands towards deciding `p` now (the page's buttons and their reasons): the
    /// domain's [`lifecycle::standing`] over the approvals so far and the agent's operators.
    pub async fn standing(
        &self,
        who: &Principal,
        p: &ProposalRecord,
    ) -> Result<Standing, ServiceError> {
        let status = lifecycle::status_at(p.status, p.expires_at, self.now());
        let Some(person) = who.as_person() else {
            self.authorize(who, UseCase::Decide)?;
            return Err(ServiceError::NotFound);
        };
        let approvals: Vec<String> = self
            .approvals(p.id)
            .await?
            .into_iter()
            .map(|(who, _)| who)
            .collect();
        let operators = self.agent_operators(&p.agent).await?;
        Ok(lifecycle::standing(
            status,
            &p.agent,
            &operators,
            (&person.username, person.role),
            &approvals,
            p.routing.required_approvals,
        ))
    }

    /// `who` reveals proposal `id`'s withheld personal data: records which fields (never
    /// their values) as `proposal.personal_data_revealed`, and returns their pointers. Nothing
    /// is recorded when the proposal withholds nothing.
    pub async fn reveal_personal_data(
        &self,
        who: &Principal,
        id: Uuid,
    ) -> Result<Vec<String>, ServiceError> {
        let p = self.proposal_row(id).await?.ok_or(ServiceError::NotFound)?;
        if !self.may_see(who, UseCase::RevealPersonalData, &p).await? {
            return Err(ServiceError::NotFound);
        }
        let viewer = &Actor::of(who);
        let spec = match self.command_row(id).await? {
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
    async fn revealed_recently(&self, viewer: &Actor, id: Uuid) -> Result<bool, ServiceError> {
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
