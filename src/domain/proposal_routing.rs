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

use super::aana::{AuthorizationState, EvidenceRef, RiskDomain, Route, ToolCategory};
use super::evidence::{self, EvidenceIntegrity};
use super::gate::AuthorizationReport;
use super::policy::{
    ActionCategory, AuthorizationMode, BlastRadius, Policy, RiskLevel, UnknownAgents,
};
use super::policy_toml::push_key;
use super::rules;
use super::verdict::{Blocker, BlockerCode, Verdict};

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

/// Routes one proposal against `policy` (module docs give the rules).
pub fn route_proposal(facts: &ProposalFacts, policy: &Policy) -> ProposalDecision {
    let rule = policy.tool_rule(&facts.tool_name);
    let category = rule.map_or(ActionCategory::C, |r| r.category);
    let category_rule = rule.map_or_else(
        || "default:unlisted_tools_are_category_c".to_owned(),
        |r| format!("policy:{}.category", r.id),
    );
    let mut v = Verdict::accept(category_rule.clone());

    // 1. Refusals.
    match policy.agent(&facts.agent) {
        Some(agent) if !agent.owns(&facts.domain) => v.block(
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
        None if policy.defaults().unknown_agents == UnknownAgents::Refuse => v.block(
            Route::Refuse,
            "policy:defaults.unknown_agents",
            BlockerCode::AgentUnknown,
            format!(
                "agent `{}` is not registered under [agents] and the policy refuses unknown agents",
                facts.agent
            ),
            Some("proposed_by"),
        ),
        None => v.note(format!(
            "agent `{}` is not registered; the policy lets unregistered agents propose",
            facts.agent
        )),
    }
    if let Some(r) = rule.filter(|r| !r.allows_agent(&facts.agent)) {
        v.block(
            Route::Refuse,
            format!("policy:{}.allowed_agents", r.id),
            BlockerCode::AgentNotInLane,
            format!("agent `{}` is not in the lane of {}", facts.agent, r.id),
            Some("proposed_by"),
        );
    }
    if facts.authorization_mode == Some(AuthorizationMode::Blocked) {
        v.block(
            Route::Refuse,
            "builtin:authorization_mode_blocked",
            BlockerCode::AuthorizationBlocked,
            "authorization mode is `blocked`: the action is not permitted",
            Some("authorization_mode"),
        );
    }
    if facts.hipaa && !rule.is_some_and(|r| r.allow_phi) {
        let (rule_id, message) = match rule {
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
        v.block(
            Route::Refuse,
            rule_id,
            BlockerCode::PhiNotAllowed,
            message,
            Some("compliance_context.hipaa"),
        );
    }
    let blast = policy.blast_radius();
    if let Some(tier) = facts.blast_radius {
        if blast.exceeds_ceiling(tier) {
            v.block(
                Route::Refuse,
                "policy:blast_radius.refuse_above",
                BlockerCode::BlastRadiusExceeded,
                format!("blast radius `{tier}` is above the policy's ceiling"),
                Some("blast_radius"),
            );
        }
        if blast.requires_rollback_plan(tier) && !facts.has_rollback_plan {
            v.block(
                Route::Refuse,
                "policy:blast_radius.rollback_plan_above",
                BlockerCode::RollbackPlanRequired,
                format!("blast radius `{tier}` requires a rollback plan; resubmit with one"),
                Some("rollback_plan"),
            );
        }
    }

    // 2. Effective risk.
    let destructive = rules::looks_destructive(&facts.tool_name);
    let mut risk = facts.risk_level;
    let mut raise = |to: RiskLevel, why: &str, v: &mut Verdict| {
        if to > risk {
            v.note(format!("risk raised from {risk} to {to}: {why}"));
            risk = to;
        }
    };
    if let Some(r) = rule {
        raise(r.risk, &format!("risk floor of {}", r.id), &mut v);
    }
    if facts.hipaa {
        raise(
            RiskLevel::High,
            "protected health information (HIPAA)",
            &mut v,
        );
    }
    if facts.risk_domain.is_some_and(rules::is_high_risk_domain) {
        raise(RiskLevel::High, "high-risk domain", &mut v);
    }
    if destructive {
        raise(RiskLevel::High, "the tool name looks destructive", &mut v);
    }
    match facts.blast_radius {
        Some(BlastRadius::Large) => raise(RiskLevel::High, "blast radius `large`", &mut v),
        Some(BlastRadius::Medium) => raise(RiskLevel::Medium, "blast radius `medium`", &mut v),
        _ => {}
    }
    if facts.gdpr {
        raise(RiskLevel::Medium, "personal data (GDPR)", &mut v);
    }
    if !facts.rollback_supported {
        raise(
            RiskLevel::Medium,
            "the action cannot be rolled back",
            &mut v,
        );
    }

    // 3. Human approval unless every auto-execution condition holds.
    let mut needs: Vec<(String, String)> = Vec::new();
    match (rule, category) {
        (None, _) => needs.push((
            category_rule.clone(),
            "the tool is not allow-listed, so it is Category C".into(),
        )),
        (Some(_), ActionCategory::B) => needs.push((
            category_rule.clone(),
            "Category B is not implemented and is handled as Category C".into(),
        )),
        (Some(_), ActionCategory::C) => {
            needs.push((category_rule.clone(), "the tool is Category C".into()));
        }
        (Some(_), ActionCategory::A) => {}
    }
    if facts.gdpr {
        needs.push((
            "builtin:gdpr_requires_approval".into(),
            "personal data (GDPR) always needs approval".into(),
        ));
    }
    if facts.hipaa {
        needs.push((
            "builtin:hipaa_requires_approval".into(),
            "PHI (HIPAA) always needs explicit approval".into(),
        ));
    }
    if facts.approval_required {
        needs.push((
            "builtin:approval_required".into(),
            "the proposal asks for approval".into(),
        ));
    } else if !category.may_auto_execute() {
        v.note("`approval_required: false` is honoured only for Category A tools");
    }
    if !facts.rollback_supported {
        needs.push((
            "builtin:irreversible_requires_approval".into(),
            "the action cannot be rolled back".into(),
        ));
    }
    if risk > RiskLevel::Low {
        needs.push((
            "builtin:risk_requires_approval".into(),
            format!("effective risk is {risk}"),
        ));
    }
    if facts.authorization_mode == Some(AuthorizationMode::Hitl) {
        needs.push((
            "builtin:authorization_mode_hitl".into(),
            "authorization mode is `hitl`".into(),
        ));
    }
    if let Some(tier) = facts
        .blast_radius
        .filter(|t| !blast.allows_auto_execution(*t))
    {
        needs.push((
            "policy:blast_radius.auto_execute_max".into(),
            format!("blast radius `{tier}` is above `auto_execute_max`"),
        ));
    }
    if let Some((first_rule, _)) = needs.first() {
        let why: Vec<&str> = needs.iter().map(|(_, w)| w.as_str()).collect();
        v.block(
            Route::Ask,
            first_rule.clone(),
            BlockerCode::HumanApprovalRequired,
            format!("a human must approve: {}", why.join("; ")),
            None,
        );
    }

    // 4. The AANA ladder and evidence overlays.
    let tool_category = match (facts.tool_category, rule.and_then(|r| r.tool_category)) {
        (Some(a), Some(b)) => Some(a.max(b)),
        (a, b) => a.or(b),
    };
    let declared = facts
        .authorization_state
        .unwrap_or(AuthorizationState::None);
    let assessment = evidence::assess(&facts.evidence, declared, "evidence_refs");
    v.reasons
        .extend(assessment.lowering_reasons.iter().cloned());
    let authorization_report = match tool_category {
        Some(cat) => {
            // Without a declared state, the reviewer's approval is the authorization: the
            // ladder can then demand a human (`ask`), not more evidence.
            let declared_state = facts.authorization_state.is_some();
            let cap = if declared_state {
                Route::Refuse
            } else {
                Route::Ask
            };
            rules::apply_ladder(
                &mut v,
                cat,
                assessment.effective_authorization,
                risk == RiskLevel::High,
                destructive,
                cap,
            );
            let depends = matches!(cat, ToolCategory::PrivateRead | ToolCategory::Write);
            rules::apply_evidence_overlays(&mut v, &assessment, depends, depends && declared_state);
            Some(AuthorizationReport {
                declared,
                effective: assessment.effective_authorization,
                required: rules::required_authorization(cat),
            })
        }
        None => {
            rules::apply_evidence_overlays(&mut v, &assessment, true, false);
            None
        }
    };

    let required_approvals = match v.route {
        Route::Ask | Route::Defer => {
            let base = rule.map_or(policy.defaults().required_approvals, |r| {
                r.required_approvals
            });
            let extra = facts
                .blast_radius
                .map_or(0, |t| blast.extra_approvals_for(t));
            base.saturating_add(extra)
        }
        Route::Accept | Route::Refuse => 0,
    };
    if v.route == Route::Accept {
        v.note(format!(
            "accept: Category A, allow-listed by {}, and every auto-execution condition holds",
            rule.map_or("the policy", |r| r.id.as_str())
        ));
    }
    ProposalDecision {
        route: v.route,
        category,
        effective_risk: risk,
        required_approvals,
        blockers: v.blockers,
        reasons: v.reasons,
        rule: v.rule,
        policy_version: policy.version().to_owned(),
        expires_after_secs: policy.expiry_secs(&facts.tool_name),
        policy_rule: rule.map(|r| r.id.clone()),
        authorization_report,
        evidence_integrity: assessment.integrity,
    }
}
