//! Events in a proposal's life: received, refused input, approvals, decisions, expiry, views
//! and erasure.

use std::collections::BTreeMap;

use serde::Serialize;
use uuid::Uuid;

use super::payload::Payload;
use crate::audit::safe::{self, ParameterDigest, Salt, TextDigest};
use crate::domain::contract::canonical::Uncanonical;
use crate::domain::contract::proposal::ToolProposal;
use crate::domain::contract::vocab::{AuthorizationState, RiskLevel, Route};
use crate::domain::lifecycle::{ProposalStatus, ReviewVerdict};
use crate::domain::routing::proposal::ProposalDecision;
use crate::domain::routing::scan::audit_safe_name;

fn status<S: ToString>(s: S) -> Option<String> {
    Some(s.to_string())
}

/// The facets of a proposal every event about it carries: whose, which tool, where, how risky.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ProposalFacets {
    /// The proposing agent.
    pub agent: String,
    /// Tool name.
    pub tool: String,
    /// Domain.
    pub domain: String,
    /// Declared risk.
    pub risk: RiskLevel,
}

impl ProposalFacets {
    /// The facets of `agent`'s proposal `contract`.
    pub fn of(agent: &str, contract: &ToolProposal) -> Self {
        Self {
            agent: safe::name(agent),
            tool: safe::name(&contract.tool.name),
            domain: safe::name(&contract.domain),
            risk: contract.risk_level,
        }
    }

    #[cfg(test)]
    pub(crate) fn test() -> Self {
        Self {
            agent: "sales-agent".into(),
            tool: "crm.update".into(),
            domain: "sales".into(),
            risk: RiskLevel::Medium,
        }
    }
}

/// Payload of `proposal.submitted`: seed 004's record of a proposal (id, prompt version and
/// hash, model and provider, risk classification) with the policy's routing.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ProposalSubmitted {
    /// The proposal.
    #[serde(skip)]
    pub proposal_id: Uuid,
    /// The status it starts in.
    #[serde(skip)]
    pub status: ProposalStatus,
    /// Whose, which tool, where, how risky.
    #[serde(flatten)]
    pub facets: ProposalFacets,
    /// The policy's routing decision.
    pub decision: Route,
    /// Risk after the policy's floor and rules.
    pub effective_risk: RiskLevel,
    /// Seed 004 category (A/B/C).
    pub category: String,
    /// The rule that decided the route.
    pub rule: String,
    /// Blocker codes.
    pub blockers: Vec<String>,
    /// Policy version used.
    pub policy_version: String,
    /// Hash the approval is bound to.
    pub request_hash_sha256: String,
    /// Parameter keys and keyed hashes of their values.
    pub parameters: ParameterDigest,
    /// The intent's summary and reasoning, as lengths and hashes.
    pub intent: BTreeMap<&'static str, TextDigest>,
    /// Seed 004 observability: prompt version and hash, model, provider (bounded).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub model: BTreeMap<&'static str, String>,
    /// Whether GDPR or HIPAA applies.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub compliance: Vec<&'static str>,
}

impl ProposalSubmitted {
    /// The event for `agent`'s proposal `id`, routed as `routing`; an error if a parameter
    /// value has no canonical form to hash.
    pub fn new(
        salt: &Salt,
        id: Uuid,
        status: ProposalStatus,
        agent: &str,
        contract: &ToolProposal,
        routing: &ProposalDecision,
        request_hash: &str,
    ) -> Result<Self, Uncanonical> {
        let c = contract;
        let model = [
            ("prompt_version", &c.observability.prompt_version),
            ("prompt_hash", &c.observability.prompt_hash),
            ("model", &c.observability.model),
            ("provider", &c.observability.provider),
        ]
        .into_iter()
        .filter_map(|(k, v)| v.as_deref().map(|v| (k, safe::name(v))))
        .collect();
        let mut compliance = Vec::new();
        if c.compliance_context.gdpr {
            compliance.push("gdpr");
        }
        if c.compliance_context.hipaa {
            compliance.push("hipaa");
        }
        Ok(Self {
            proposal_id: id,
            status,
            facets: ProposalFacets::of(agent, c),
            decision: routing.route,
            effective_risk: routing.effective_risk,
            category: routing.category.as_str().to_owned(),
            rule: safe::name(&routing.rule),
            blockers: safe::bounded(routing.blockers.iter().map(|b| b.code.as_str().to_owned())),
            policy_version: safe::name(&routing.policy_version),
            request_hash_sha256: request_hash.to_owned(),
            parameters: salt.parameters(&c.parameters)?,
            intent: BTreeMap::from([
                ("summary", salt.text(&c.intent.summary)),
                ("reasoning", salt.text(&c.intent.reasoning)),
            ]),
            model,
            compliance,
        })
    }
}

impl Payload for ProposalSubmitted {
    fn kind(&self) -> &'static str {
        "proposal.submitted"
    }
    fn subject(&self) -> (&'static str, String) {
        ("proposal", self.proposal_id.to_string())
    }
    fn change(&self) -> (Option<String>, Option<String>) {
        (None, status(self.status))
    }
}

/// Payload of `proposal.rejected_input`. Recorded against the sending agent, never against
/// whatever proposal id the body names.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ProposalInputRejected {
    /// The agent that sent it (the subject, and the `agent` facet).
    pub agent: String,
    /// Broken field paths (audit-safe, bounded), never the rejected values.
    pub fields: Vec<String>,
}

impl Payload for ProposalInputRejected {
    fn kind(&self) -> &'static str {
        "proposal.rejected_input"
    }
    fn subject(&self) -> (&'static str, String) {
        ("agent", self.agent.clone())
    }
}

/// Payload of `proposal.approval_recorded`: one approval of several required.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ApprovalRecorded {
    /// The proposal.
    #[serde(skip)]
    pub proposal_id: Uuid,
    /// Whose, which tool, where, how risky.
    #[serde(flatten)]
    pub facets: ProposalFacets,
    /// Approvals so far.
    pub approvals: i64,
    /// Approvals needed.
    pub required_approvals: u8,
    /// The reviewer's reason, as length and hash (the text stays on the proposal).
    pub reason: Option<TextDigest>,
    /// Hash the approval is bound to.
    pub request_hash_sha256: String,
}

impl Payload for ApprovalRecorded {
    fn kind(&self) -> &'static str {
        "proposal.approval_recorded"
    }
    fn subject(&self) -> (&'static str, String) {
        ("proposal", self.proposal_id.to_string())
    }
    fn change(&self) -> (Option<String>, Option<String>) {
        (
            status(ProposalStatus::Pending),
            status(ProposalStatus::Pending),
        )
    }
}

/// Payload of `proposal.approved` / `proposal.rejected`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ProposalDecided {
    /// The proposal.
    #[serde(skip)]
    pub proposal_id: Uuid,
    /// Whose, which tool, where, how risky.
    #[serde(flatten)]
    pub facets: ProposalFacets,
    /// Approved or rejected.
    pub decision: ReviewVerdict,
    /// Authorization after the decision (`confirmed` on approval).
    pub authorization_state: AuthorizationState,
    /// The reviewer's reason, as length and hash (the text stays on the proposal).
    pub reason: Option<TextDigest>,
    /// Approvals the policy required.
    pub required_approvals: u8,
    /// Hash the decision is bound to.
    pub request_hash_sha256: String,
}

impl Payload for ProposalDecided {
    fn kind(&self) -> &'static str {
        match self.decision {
            ReviewVerdict::Approved => "proposal.approved",
            ReviewVerdict::Rejected => "proposal.rejected",
            ReviewVerdict::ChangesRequested => "proposal.changes_requested",
        }
    }
    fn subject(&self) -> (&'static str, String) {
        ("proposal", self.proposal_id.to_string())
    }
    fn change(&self) -> (Option<String>, Option<String>) {
        (
            status(ProposalStatus::Pending),
            status(self.decision.status()),
        )
    }
}

/// Payload of `proposal.break_glass`: an admin approved alone, in an emergency, what the
/// policy wanted more approvers for (recorded beside the `proposal.approved` it came with).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ProposalBrokeGlass {
    /// The proposal.
    #[serde(skip)]
    pub proposal_id: Uuid,
    /// Whose, which tool, where, how risky.
    #[serde(flatten)]
    pub facets: ProposalFacets,
    /// Approvals it had before, this admin's own included if they had approved.
    pub approvals: i64,
    /// Approvals the policy required.
    pub required_approvals: u8,
    /// The written justification, as length and hash (the text stays on the proposal).
    pub justification: TextDigest,
    /// Hash the approval is bound to.
    pub request_hash_sha256: String,
}

impl Payload for ProposalBrokeGlass {
    fn kind(&self) -> &'static str {
        "proposal.break_glass"
    }
    fn subject(&self) -> (&'static str, String) {
        ("proposal", self.proposal_id.to_string())
    }
}

/// Payload of `proposal.withdrawn`: the agent withdrew its proposal while it waited (an MCP
/// client's `tasks/cancel` on the gateway); it never executes.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ProposalWithdrawn {
    /// The proposal.
    #[serde(skip)]
    pub proposal_id: Uuid,
    /// Whose, which tool, where, how risky.
    #[serde(flatten)]
    pub facets: ProposalFacets,
    /// Always `withdrawn` (the decision facet).
    pub decision: &'static str,
    /// How: `mcp_tasks_cancel`.
    pub via: &'static str,
}

impl Payload for ProposalWithdrawn {
    fn kind(&self) -> &'static str {
        "proposal.withdrawn"
    }
    fn subject(&self) -> (&'static str, String) {
        ("proposal", self.proposal_id.to_string())
    }
    fn change(&self) -> (Option<String>, Option<String>) {
        (
            status(ProposalStatus::Pending),
            status(ProposalStatus::Withdrawn),
        )
    }
}

/// Payload of `proposal.edited`: a reviewer changed parameter values before approving (the
/// `proposal.approved` that follows binds to the edited request's hash).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ProposalEdited {
    /// The proposal.
    #[serde(skip)]
    pub proposal_id: Uuid,
    /// Whose, which tool, where, how risky.
    #[serde(flatten)]
    pub facets: ProposalFacets,
    /// Hash of the request as the agent sent it.
    pub request_hash_sha256: String,
    /// Hash of the edited request.
    pub edited_request_hash_sha256: String,
    /// Each changed field (audit-safe pointer) with keyed hashes of its old and new value.
    pub changes: BTreeMap<String, BTreeMap<&'static str, String>>,
}

impl ProposalEdited {
    /// The event of `edited` on proposal `proposal_id`; an error if a value has no canonical
    /// form to hash.
    pub fn new(
        salt: &Salt,
        proposal_id: Uuid,
        facets: ProposalFacets,
        request_hash: &str,
        edited: &crate::domain::review::edit::Edited,
    ) -> Result<Self, Uncanonical> {
        let mut changes = BTreeMap::new();
        for c in &edited.changes {
            let hashes =
                BTreeMap::from([("old", salt.value(&c.old)?), ("new", salt.value(&c.new)?)]);
            changes.insert(audit_safe_name(&c.field).to_owned(), hashes);
        }
        Ok(Self {
            proposal_id,
            facets,
            request_hash_sha256: request_hash.to_owned(),
            edited_request_hash_sha256: edited.request_hash.clone(),
            changes,
        })
    }
}

impl Payload for ProposalEdited {
    fn kind(&self) -> &'static str {
        "proposal.edited"
    }
    fn subject(&self) -> (&'static str, String) {
        ("proposal", self.proposal_id.to_string())
    }
}

/// Payload of `proposal.decision_refused`: someone tried to decide and the rules said no.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DecisionRefused {
    /// The proposal.
    #[serde(skip)]
    pub proposal_id: Uuid,
    /// Whose, which tool, where, how risky.
    #[serde(flatten)]
    pub facets: ProposalFacets,
    /// What they tried.
    pub verdict: ReviewVerdict,
    /// Why not: `role_may_not_decide`, `own_proposal`, …
    pub refused: &'static str,
}

impl Payload for DecisionRefused {
    fn kind(&self) -> &'static str {
        "proposal.decision_refused"
    }
    fn subject(&self) -> (&'static str, String) {
        ("proposal", self.proposal_id.to_string())
    }
}

/// Payload of `proposal.expired`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ProposalExpired {
    /// The proposal.
    #[serde(skip)]
    pub proposal_id: Uuid,
    /// Whose, which tool, where, how risky.
    #[serde(flatten)]
    pub facets: ProposalFacets,
    /// Always `expired` (the decision facet).
    pub decision: &'static str,
    /// When its time ran out (RFC 3339).
    pub expires_at: Option<String>,
}

impl Payload for ProposalExpired {
    fn kind(&self) -> &'static str {
        "proposal.expired"
    }
    fn subject(&self) -> (&'static str, String) {
        ("proposal", self.proposal_id.to_string())
    }
    fn change(&self) -> (Option<String>, Option<String>) {
        (
            status(ProposalStatus::Pending),
            status(ProposalStatus::Expired),
        )
    }
}

/// Payload of `proposal.escalated`: nobody decided in time, so the policy's next tier was
/// told (and may decide).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ProposalEscalated {
    /// The proposal.
    #[serde(skip)]
    pub proposal_id: Uuid,
    /// Whose, which tool, where, how risky.
    #[serde(flatten)]
    pub facets: ProposalFacets,
    /// The tier raised (1 for the first).
    pub tier: u32,
    /// Whom: a username or a role, as the policy names it.
    pub escalated_to: String,
    /// The policy's window between tiers, in seconds.
    pub escalate_after_secs: u64,
}

impl Payload for ProposalEscalated {
    fn kind(&self) -> &'static str {
        "proposal.escalated"
    }
    fn subject(&self) -> (&'static str, String) {
        ("proposal", self.proposal_id.to_string())
    }
}

/// Payload of `proposal.viewed`: HIPAA's enhanced logging (and GDPR's) — who opened a
/// proposal holding regulated data, and when (the row's actor and time).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ProposalViewed {
    /// The proposal.
    #[serde(skip)]
    pub proposal_id: Uuid,
    /// Whose, which tool, where, how risky.
    #[serde(flatten)]
    pub facets: ProposalFacets,
    /// `gdpr`, `hipaa`.
    pub compliance: Vec<&'static str>,
}

impl Payload for ProposalViewed {
    fn kind(&self) -> &'static str {
        "proposal.viewed"
    }
    fn subject(&self) -> (&'static str, String) {
        ("proposal", self.proposal_id.to_string())
    }
}

/// Payload of `proposal.personal_data_revealed`: a reviewer asked to see the personal data a
/// GDPR or HIPAA proposal's page withholds. Which fields (JSON pointers into the command,
/// audit-safe names), never their values.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PersonalDataRevealed {
    /// The proposal.
    #[serde(skip)]
    pub proposal_id: Uuid,
    /// Whose, which tool, where, how risky.
    #[serde(flatten)]
    pub facets: ProposalFacets,
    /// `gdpr`, `hipaa`.
    pub compliance: Vec<&'static str>,
    /// The fields shown, as JSON pointers (at most [`safe::MAX_ITEMS`]).
    pub fields: Vec<String>,
    /// How many fields were shown in all.
    pub field_count: usize,
}

impl PersonalDataRevealed {
    /// The event for revealing `fields` of `agent`'s proposal `id`.
    pub fn new(id: Uuid, agent: &str, contract: &ToolProposal, fields: &[String]) -> Self {
        let cc = contract.compliance_context;
        Self {
            proposal_id: id,
            facets: ProposalFacets::of(agent, contract),
            compliance: [("gdpr", cc.gdpr), ("hipaa", cc.hipaa)]
                .into_iter()
                .filter_map(|(name, on)| on.then_some(name))
                .collect(),
            fields: safe::bounded(fields.iter().map(|f| safe::safe_name(f))),
            field_count: fields.len(),
        }
    }
}

impl Payload for PersonalDataRevealed {
    fn kind(&self) -> &'static str {
        "proposal.personal_data_revealed"
    }
    fn subject(&self) -> (&'static str, String) {
        ("proposal", self.proposal_id.to_string())
    }
}

/// Payload of `proposal.erased`: personal data values were removed from the proposal (and its
/// command); keys, request hash and decision stay.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ProposalErased {
    /// The proposal.
    #[serde(skip)]
    pub proposal_id: Uuid,
    /// Whose, which tool, where, how risky.
    #[serde(flatten)]
    pub facets: ProposalFacets,
    /// The erasure's reason, as length and hash (the text stays on the proposal).
    pub reason: TextDigest,
    /// Which parts were erased (`parameters`, `intent`, `target_refs`, …).
    pub erased: Vec<&'static str>,
    /// Hash of the request as it was approved (unchanged by erasure).
    pub request_hash_sha256: String,
}

impl Payload for ProposalErased {
    fn kind(&self) -> &'static str {
        "proposal.erased"
    }
    fn subject(&self) -> (&'static str, String) {
        ("proposal", self.proposal_id.to_string())
    }
}

/// Payload of `proposal.succeeded` / `proposal.failed`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ProposalFinished {
    /// The proposal.
    #[serde(skip)]
    pub proposal_id: Uuid,
    /// Status before.
    #[serde(skip)]
    pub before: ProposalStatus,
    /// Status after: the command's outcome (`succeeded`, `failed`, `outcome_unknown`,
    /// `timed_out`, `expired`), or `approved` / `accepted` again when a person releases it.
    #[serde(skip)]
    pub after: ProposalStatus,
    /// Which tool, where.
    #[serde(flatten)]
    pub facets: super::command::CommandFacets,
    /// The command that ran.
    pub command_id: Uuid,
}

impl Payload for ProposalFinished {
    fn kind(&self) -> &'static str {
        match self.after {
            ProposalStatus::Succeeded => "proposal.succeeded",
            ProposalStatus::Failed => "proposal.failed",
            ProposalStatus::OutcomeUnknown => "proposal.outcome_unknown",
            ProposalStatus::TimedOut => "proposal.timed_out",
            ProposalStatus::Expired => "proposal.expired",
            _ => "proposal.released",
        }
    }
    fn subject(&self) -> (&'static str, String) {
        ("proposal", self.proposal_id.to_string())
    }
    fn change(&self) -> (Option<String>, Option<String>) {
        (status(self.before), status(self.after))
    }
}
