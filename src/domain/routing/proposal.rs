//! Routing a Tool Proposal (seed 004, with the optional fields of seeds 003 and 000) against
//! the policy: [`route_proposal`] turns the facts of one proposal into a [`ProposalDecision`].
//!
//! Rules, in order (each can only make the route stricter):
//!
//! 1. **Refuse** when: the agent owns no such domain (`[agents.NAME] domains`); the agent is
//!    unregistered and `defaults.unknown_agents = "refuse"`; the agent is outside the tool's
//!    lane (`allowed_agents`); `authorization_mode = "blocked"`; PHI (`hipaa`) with a tool that
//!    is not `allow_phi`; the blast radius is above `blast_radius.refuse_above`; or above
//!    `blast_radius.rollback_plan_above` without a rollback plan.
//! 2. **Effective risk** is the highest of: the declared level; the rule's floor; `high` for
//!    PHI, a `large` blast radius, a high-risk `risk_domain` or a destructive-looking tool name;
//!    `medium` for personal data (GDPR), an irreversible action (`rollback_supported: false`) or a
//!    `medium` blast radius. It is never lowered.
//! 3. **Ask** (`human_approval_required`) unless *every* auto-execution condition of seed 004
//!    holds: Category A (allow-listed), `approval_required: false`, no GDPR or HIPAA data,
//!    reversible, effective risk `low`, `authorization_mode` not `hitl`, blast radius within
//!    `auto_execute_max`. Unlisted tools are Category C and always ask.
//! 4. **The AANA ladder and evidence overlays** ([`super::rules`]) when the tool category is
//!    known (declared, or the rule's floor). When the proposal declares an
//!    `authorization_state`, they apply as for an AANA event (a private read below
//!    `authenticated`, a write with stale evidence: defer). When it declares none, the
//!    reviewer's approval is its authorization (approval moves a proposal to `confirmed`), so
//!    the ladder can demand a human (`ask`) but not defer for missing authorization or
//!    evidence. Without a category, leaks still refuse and contradictory or stale evidence
//!    still defers.
//!
//! `required_approvals` (the rule's, or the default, plus the blast radius's extra approvals)
//! is reported for `ask` and `defer`; it is 0 for `accept` and `refuse`.

use serde::{Deserialize, Serialize};

use super::evidence::{self, EvidenceAssessment, EvidenceIntegrity};
use super::rules::{self, Ladder, Overlays, ToolName, WriteRisk};
use super::verdict::{AuthorizationReport, Blocker, BlockerCode, Verdict};
use crate::domain::contract::aana::EvidenceRef;
use crate::domain::contract::proposal::{RollbackType, ToolProposal};
use crate::domain::contract::vocab::{
    AuthorizationMode, AuthorizationState, BlastRadius, RiskDomain, RiskLevel, Route, ToolCategory,
};
use crate::domain::policy::model::{ActionCategory, Policy, ToolRule, UnknownAgents};
use crate::domain::policy::toml::push_key;

/// What the router needs to know about one proposal.
#[derive(Debug, Clone, PartialEq)]
pub struct ProposalFacts {
    /// The proposing agent (seed 004 `proposed_by`).
    pub agent: String,
    /// The proposal's domain.
    pub domain: String,
    /// The tool's fully qualified name.
    pub tool_name: String,
    /// Declared risk.
    pub risk_level: RiskLevel,
    /// The agent's view of whether a human must approve (honoured only for Category A).
    pub approval_required: bool,
    /// Personal data under GDPR is involved.
    pub gdpr: bool,
    /// Protected health information under HIPAA is involved.
    pub hipaa: bool,
    /// Whether the action can be rolled back.
    pub rollback_supported: bool,
    /// Seed 003 blast radius.
    pub blast_radius: Option<BlastRadius>,
    /// Whether a seed 003 rollback plan of a type other than `none` accompanies the proposal.
    pub has_rollback_plan: bool,
    /// Seed 003 authorization mode.
    pub authorization_mode: Option<AuthorizationMode>,
    /// Seed 000 tool category.
    pub tool_category: Option<ToolCategory>,
    /// Seed 000 authorization state (`none` when absent).
    pub authorization_state: Option<AuthorizationState>,
    /// Seed 000 evidence refs.
    pub evidence: Vec<EvidenceRef>,
    /// Seed 000 risk domain.
    pub risk_domain: Option<RiskDomain>,
}

// The facts are the router's view of a proposal, so they are drawn here, not in the contract
// wing (which imports nothing from routing).
impl ToolProposal {
    /// What the policy router needs to know about this proposal.
    pub fn facts(&self) -> ProposalFacts {
        ProposalFacts {
            agent: self.proposed_by.clone(),
            domain: self.domain.clone(),
            tool_name: self.tool.name.clone(),
            risk_level: self.risk_level,
            approval_required: self.approval_required,
            gdpr: self.compliance_context.gdpr,
            hipaa: self.compliance_context.hipaa,
            rollback_supported: self.rollback_supported,
            blast_radius: self.blast_radius,
            has_rollback_plan: self
                .rollback_plan
                .as_ref()
                .is_some_and(|p| p.kind != RollbackType::None),
            authorization_mode: self.authorization.as_ref().map(|a| a.mode),
            tool_category: self.tool_category,
            authorization_state: self.authorization_state,
            evidence: self.evidence_refs.clone(),
            risk_domain: self.risk_domain,
        }
    }
}

/// Where a proposal goes, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProposalDecision {
    /// The route.
    pub route: Route,
    /// The tool's seed 004 category under the policy.
    pub category: ActionCategory,
    /// Risk after the system's raises (never below the declared level).
    pub effective_risk: RiskLevel,
    /// Human approvals needed before execution (0 for `accept` and `refuse`).
    pub required_approvals: u8,
    /// Everything that prevents execution now.
    pub blockers: Vec<Blocker>,
    /// Human-readable reasoning, in evaluation order.
    pub reasons: Vec<String>,
    /// The rule that produced the route.
    pub rule: String,
    /// The policy version applied.
    pub policy_version: String,
    /// How long the approval request stays open, in seconds.
    pub expires_after_secs: u64,
    /// The policy rule that matched the tool, if any.
    pub policy_rule: Option<String>,
    /// Authorization report, when the tool category is known.
    pub authorization_report: Option<AuthorizationReport>,
    /// Evidence integrity.
    pub evidence_integrity: EvidenceIntegrity,
}

impl ProposalDecision {
    /// This `ask` decision accepted instead under standing grant `grant_id`, made by
    /// `granted_by`: the person's approval given in advance stands in for the one it asked.
    /// Anything but `ask` stays as it is (a refusal, or a wait for evidence, always stands).
    pub fn granted(mut self, grant_id: &str, granted_by: &str) -> Self {
        if self.route != Route::Ask {
            return self;
        }
        self.reasons.push(format!(
            "accepted under standing grant {grant_id}, made by {granted_by}, in place of: {}",
            self.blockers
                .iter()
                .map(|b| b.message.as_str())
                .collect::<Vec<_>>()
                .join("; ")
        ));
        self.route = Route::Accept;
        self.rule = format!("grant:{grant_id}");
        self.required_approvals = 0;
        self.blockers.clear();
        self
    }
}

/// Routes one proposal against `policy` (module docs give the rules).
pub fn route_proposal(facts: &ProposalFacts, policy: &Policy) -> ProposalDecision {
    let mut router = Router::new(facts, policy);
    router.refuse_out_of_bounds();
    router.raise_risk();
    router.require_human();
    let (assessment, authorization_report) = router.apply_aana();
    router.finish(assessment.integrity, authorization_report)
}

/// One proposal being routed: its facts, the rule that matched its tool, the effective risk
/// so far, and the verdict being built. Each phase of [`route_proposal`] is one method.
struct Router<'a> {
    facts: &'a ProposalFacts,
    policy: &'a Policy,
    rule: Option<&'a ToolRule>,
    category: ActionCategory,
    /// The rule a human-approval requirement from the category is attributed to.
    category_rule: String,
    name: ToolName,
    risk: RiskLevel,
    v: Verdict,
}

impl<'a> Router<'a> {
    fn new(facts: &'a ProposalFacts, policy: &'a Policy) -> Router<'a> {
        let rule = policy.tool_rule(&facts.tool_name);
        let category_rule = rule.map_or_else(
            || "default:unlisted_tools_are_category_c".to_owned(),
            |r| format!("policy:{}.category", r.id),
        );
        Router {
            facts,
            policy,
            rule,
            category: rule.map_or(ActionCategory::C, |r| r.category),
            v: Verdict::accept(category_rule.clone()),
            category_rule,
            name: ToolName::of(&facts.tool_name),
            risk: facts.risk_level,
        }
    }

    /// 1. Refusals.
    fn refuse_out_of_bounds(&mut self) {
        self.check_agent();
        self.check_lane();
        if self.facts.authorization_mode == Some(AuthorizationMode::Blocked) {
            self.v.block(
                Route::Refuse,
                "builtin:authorization_mode_blocked",
                BlockerCode::AuthorizationBlocked,
                "authorization mode is `blocked`: the action is not permitted",
                Some("authorization_mode"),
            );
        }
        self.check_phi();
        self.check_blast_radius();
    }

    /// Domain ownership, and unregistered agents.
    fn check_agent(&mut self) {
        let facts = self.facts;
        match self.policy.agent(&facts.agent) {
            Some(agent) if !agent.owns(&facts.domain) => self.v.block(
                Route::Refuse,
                {
                    let mut path = String::from("policy:agents");
                    push_key(&mut path, &facts.agent);
                    path.push_str(".domains");
                    path
                },
                BlockerCode::DomainNotOwned,
                format!(
                    "agent `{}` may propose only in {}; `{}` is not one of its domains",
                    facts.agent,
                    agent.domains.join(", "),
                    facts.domain
                ),
                Some("domain"),
            ),
            Some(_) => {}
            None if self.policy.defaults().unknown_agents == UnknownAgents::Refuse => {
                self.v.block(
                    Route::Refuse,
                    "policy:defaults.unknown_agents",
                    BlockerCode::AgentUnknown,
                    format!(
                        "agent `{}` is not registered under [agents] and the policy refuses \
                         unknown agents",
                        facts.agent
                    ),
                    Some("proposed_by"),
                );
            }
            None => self.v.note(format!(
                "agent `{}` is not registered; the policy lets unregistered agents propose",
                facts.agent
            )),
        }
    }

    /// The tool's lane (`allowed_agents`).
    fn check_lane(&mut self) {
        let agent = &self.facts.agent;
        if let Some(r) = self.rule.filter(|r| !r.allows_agent(agent)) {
            self.v.block(
                Route::Refuse,
                format!("policy:{}.allowed_agents", r.id),
                BlockerCode::AgentNotInLane,
                format!("agent `{agent}` is not in the lane of {}", r.id),
                Some("proposed_by"),
            );
        }
    }

    /// PHI only with a HIPAA allow-listed tool.
    fn check_phi(&mut self) {
        if !self.facts.hipaa || self.rule.is_some_and(|r| r.allow_phi) {
            return;
        }
        let (rule_id, message) = match self.rule {
            Some(r) => (
                format!("policy:{}.allow_phi", r.id),
                format!(
                    "{} is not HIPAA allow-listed (`allow_phi`): PHI cannot be sent to it",
                    r.id
                ),
            ),
            None => (
                "default:unlisted_tools_do_not_allow_phi".to_owned(),
                "the tool is not listed in the policy, so it is not HIPAA allow-listed".to_owned(),
            ),
        };
        self.v.block(
            Route::Refuse,
            rule_id,
            BlockerCode::PhiNotAllowed,
            message,
            Some("compliance_context.hipaa"),
        );
    }

    /// The blast radius ceiling, and the rollback plan it may require.
    fn check_blast_radius(&mut self) {
        let Some(tier) = self.facts.blast_radius else {
            return;
        };
        let blast = self.policy.blast_radius();
        if blast.exceeds_ceiling(tier) {
            self.v.block(
                Route::Refuse,
                "policy:blast_radius.refuse_above",
                BlockerCode::BlastRadiusExceeded,
                format!("blast radius `{tier}` is above the policy's ceiling"),
                Some("blast_radius"),
            );
        }
        if blast.requires_rollback_plan(tier) && !self.facts.has_rollback_plan {
            self.v.block(
                Route::Refuse,
                "policy:blast_radius.rollback_plan_above",
                BlockerCode::RollbackPlanRequired,
                format!("blast radius `{tier}` requires a rollback plan; resubmit with one"),
                Some("rollback_plan"),
            );
        }
    }

    /// Raises the effective risk to at least `to`, noting why when it rises.
    fn raise(&mut self, to: RiskLevel, why: &str) {
        if to > self.risk {
            self.v
                .note(format!("risk raised from {} to {to}: {why}", self.risk));
            self.risk = to;
        }
    }

    /// 2. Effective risk.
    fn raise_risk(&mut self) {
        let facts = self.facts;
        if let Some(r) = self.rule {
            self.raise(r.risk, &format!("risk floor of {}", r.id));
        }
        if facts.hipaa {
            self.raise(RiskLevel::High, "protected health information (HIPAA)");
        }
        if facts.risk_domain.is_some_and(rules::is_high_risk_domain) {
            self.raise(RiskLevel::High, "high-risk domain");
        }
        if self.name.is_destructive() {
            self.raise(RiskLevel::High, "the tool name looks destructive");
        }
        match facts.blast_radius {
            Some(BlastRadius::Large) => self.raise(RiskLevel::High, "blast radius `large`"),
            Some(BlastRadius::Medium) => self.raise(RiskLevel::Medium, "blast radius `medium`"),
            _ => {}
        }
        if facts.gdpr {
            self.raise(RiskLevel::Medium, "personal data (GDPR)");
        }
        if !facts.rollback_supported {
            self.raise(RiskLevel::Medium, "the action cannot be rolled back");
        }
    }

    /// 3. Human approval unless every auto-execution condition holds.
    fn require_human(&mut self) {
        let mut needs = self.category_needs();
        self.condition_needs(&mut needs);
        if let Some((first_rule, _)) = needs.first() {
            let why: Vec<&str> = needs.iter().map(|(_, w)| w.as_str()).collect();
            self.v.block(
                Route::Ask,
                first_rule.clone(),
                BlockerCode::HumanApprovalRequired,
                format!("a human must approve: {}", why.join("; ")),
                None,
            );
        }
    }

    /// `(rule, why)` when the tool's category alone needs a human.
    fn category_needs(&self) -> Vec<(String, String)> {
        let why = match (self.rule, self.category) {
            (None, _) => "the tool is not allow-listed, so it is Category C",
            (Some(_), ActionCategory::B) => {
                "Category B is not implemented and is handled as Category C"
            }
            (Some(_), ActionCategory::C) => "the tool is Category C",
            (Some(_), ActionCategory::A) => return Vec::new(),
        };
        vec![(self.category_rule.clone(), why.into())]
    }

    /// Appends `(rule, why)` for every other auto-execution condition that fails.
    fn condition_needs(&mut self, needs: &mut Vec<(String, String)>) {
        let facts = self.facts;
        let mut need = |rule: &str, why: String| needs.push((rule.into(), why));
        if facts.gdpr {
            need(
                "builtin:gdpr_requires_approval",
                "personal data (GDPR) always needs approval".into(),
            );
        }
        if facts.hipaa {
            need(
                "builtin:hipaa_requires_approval",
                "PHI (HIPAA) always needs explicit approval".into(),
            );
        }
        if facts.approval_required {
            need(
                "builtin:approval_required",
                "the proposal asks for approval".into(),
            );
        } else if !self.category.may_auto_execute() {
            self.v
                .note("`approval_required: false` is honoured only for Category A tools");
        }
        if !facts.rollback_supported {
            need(
                "builtin:irreversible_requires_approval",
                "the action cannot be rolled back".into(),
            );
        }
        if self.risk > RiskLevel::Low {
            need(
                "builtin:risk_requires_approval",
                format!("effective risk is {}", self.risk),
            );
        }
        if facts.authorization_mode == Some(AuthorizationMode::Hitl) {
            need(
                "builtin:authorization_mode_hitl",
                "authorization mode is `hitl`".into(),
            );
        }
        let blast = self.policy.blast_radius();
        if let Some(tier) = facts
            .blast_radius
            .filter(|t| !blast.allows_auto_execution(*t))
        {
            need(
                "policy:blast_radius.auto_execute_max",
                format!("blast radius `{tier}` is above `auto_execute_max`"),
            );
        }
    }

    /// 4. The AANA ladder and evidence overlays; the authorization report when the tool
    ///    category is known.
    fn apply_aana(&mut self) -> (EvidenceAssessment, Option<AuthorizationReport>) {
        let facts = self.facts;
        let tool_category = match (facts.tool_category, self.rule.and_then(|r| r.tool_category)) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        };
        let declared = facts
            .authorization_state
            .unwrap_or(AuthorizationState::None);
        let assessment = evidence::assess(&facts.evidence, declared, "evidence_refs");
        self.v
            .reasons
            .extend(assessment.lowering_reasons.iter().cloned());
        let Some(category) = tool_category else {
            let overlays = Overlays {
                stale_blocks: true,
                requires_evidence: false,
            };
            rules::apply_evidence_overlays(&mut self.v, &assessment, overlays);
            return (assessment, None);
        };
        // Without a declared state, the reviewer's approval is the authorization: the ladder
        // can then demand a human (`ask`), not more evidence.
        let declared_state = facts.authorization_state.is_some();
        Ladder {
            category,
            authorization: assessment.effective_authorization,
            risk: if self.risk == RiskLevel::High {
                WriteRisk::High
            } else {
                WriteRisk::Ordinary
            },
            name: self.name,
            authorization_cap: if declared_state {
                Route::Refuse
            } else {
                Route::Ask
            },
        }
        .apply(&mut self.v);
        let depends = matches!(category, ToolCategory::PrivateRead | ToolCategory::Write);
        let overlays = Overlays {
            stale_blocks: depends,
            requires_evidence: depends && declared_state,
        };
        rules::apply_evidence_overlays(&mut self.v, &assessment, overlays);
        let report = AuthorizationReport {
            declared,
            effective: assessment.effective_authorization,
            required: rules::required_authorization(category),
            support: assessment.support.clone(),
        };
        (assessment, Some(report))
    }

    /// The decision: approvals needed for `ask` and `defer`, and the reasons.
    fn finish(
        mut self,
        evidence_integrity: EvidenceIntegrity,
        authorization_report: Option<AuthorizationReport>,
    ) -> ProposalDecision {
        let (facts, policy, rule) = (self.facts, self.policy, self.rule);
        let required_approvals = match self.v.route {
            Route::Ask | Route::Defer => {
                let base = rule.map_or(policy.defaults().required_approvals, |r| {
                    r.required_approvals
                });
                let extra = facts
                    .blast_radius
                    .map_or(0, |t| policy.blast_radius().extra_approvals_for(t));
                base.saturating_add(extra)
            }
            Route::Accept | Route::Refuse => 0,
        };
        if self.v.route == Route::Accept {
            self.v.note(format!(
                "accept: Category A, allow-listed by {}, and every auto-execution condition holds",
                rule.map_or("the policy", |r| r.id.as_str())
            ));
        }
        let v = self.v;
        ProposalDecision {
            route: v.route,
            category: self.category,
            effective_risk: self.risk,
            required_approvals,
            blockers: v.blockers,
            reasons: v.reasons,
            rule: v.rule,
            policy_version: policy.version().to_owned(),
            expires_after_secs: policy.expiry_secs(&facts.tool_name),
            policy_rule: rule.map(|r| r.id.clone()),
            authorization_report,
            evidence_integrity,
        }
    }
}
