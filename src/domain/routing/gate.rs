//! The AANA pre-tool-check gate: [`check`] routes a schema-valid [`Event`] against a
//! [`Policy`] and returns the seed 000 decision envelope. Deterministic and free of IO.
//!
//! Order of evaluation (every step can only make the route stricter):
//!
//! 1. **Classification.** A matching policy rule's `tool_category` is a floor for the declared
//!    category (`public_read < private_read < write < unknown`). The action is *high risk*
//!    when its `risk_domain` is one of [`super::rules::HIGH_RISK_DOMAINS`], the rule's risk
//!    floor is `high`, or it is a write whose name looks destructive.
//! 2. **Lanes.** A rule with `allowed_agents` refuses events from other agents, and events with
//!    no `agent_id` (`agent_not_in_lane`, `agent_unidentified`).
//! 3. **Evidence** lowers the declared authorization state where it shows less
//!    ([`super::evidence`]); it never raises it.
//! 4. **The authorization ladder** ([`super::rules`]).
//! 5. **Policy category.** A tool the policy lists as Category B or C needs a human:
//!    below `confirmed` it asks (`human_approval_required`), even for a read. (For tools the
//!    policy does not list, the ladder already is the Category C rule for consequential
//!    actions: writes execute only at `confirmed`, unknown tools never; reads follow seed 000.)
//! 6. **Evidence overlays**: leaks refuse; contradictions defer; stale or missing evidence
//!    defers where the ladder depends on it.
//! 7. **The runtime's `recommended_route`** wins only when stricter
//!    (`runtime_route_stricter`); a looser one is ignored with a reason.
//!
//! `gate_decision` is `pass` only when the route is `accept` and there is no hard blocker.
//!
//! Of the policy, the gate applies `[tools]` (category, `tool_category` floor, `risk` floor,
//! `allowed_agents`). Domain ownership (`[agents]`), `[blast_radius]`, GDPR/HIPAA and
//! approvals concern tool proposals ([`super::proposal`]): an AANA event carries no
//! domain, blast radius or compliance flags. A schema-invalid event gets
//! [`Decision::schema_invalid`]: `refuse`, one `schema_invalid` blocker per error, and no
//! audit copy (there is no valid event to copy; the caller records the request hash).
//!
//! **Replay.** [`CheckInputs`] is everything routing reads of an event, and nothing else: the
//! tool name, the declared category, authorization state, risk domain and recommended route,
//! the agent id (for lanes), and an audit-safe summary of the evidence assessment (the
//! effective state, what the evidence supports, counts, and each issue's code and field path:
//! never a message, summary, intent or argument value). The audit trail keeps it so that
//! [`replay`] can route a recorded decision again under another policy (a policy backtest).
//! Evidence assessment does not depend on the policy, so [`check`] and [`replay`] run the same
//! routing core on the same facts, and `replay(&CheckInputs::of(e), p)` has the route, rule,
//! blocker codes and policy rule of `check(e, p)`, for every event and policy.

use serde::Serialize;
use serde_json::Value;

use super::evidence::{self, EvidenceAssessment, EvidenceIntegrity};
pub use super::replay::{
    CheckInputs, EvidenceSummary, IssueSummary, RecordedCheck, ReplayEvidence, Replayed,
};
use super::rules::{self, Ladder, Overlays, ToolName, WriteRisk};
use super::scan::{self, WITHHELD};
use super::verdict::{AuthorizationReport, Blocker, BlockerCode, Verdict};
use crate::domain::contract::aana::{
    Event, EvidenceKind, EvidenceRef, FreshnessStatus, RedactionStatus, SubjectType, TrustTier,
};
use crate::domain::contract::vocab::{
    AuthorizationState, RiskDomain, RiskLevel, Route, ToolCategory,
};
use crate::domain::contract::wire::{FieldError, wire_enum};
use crate::domain::policy::model::{ActionCategory, Policy, ToolRule};

wire_enum! {
    /// Whether the gate lets the call through.
    pub enum GateDecision {
        /// Execute: the route is `accept` and nothing blocks it.
        Pass => "pass",
        /// Do not execute (AANA's word; the route says what to do instead).
        Fail => "fail",
    }
}

/// How the action was classified.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Classification {
    /// As declared by the runtime.
    pub declared_category: ToolCategory,
    /// After the policy's floor.
    pub effective_category: ToolCategory,
    /// Whether the action counts as high risk (it changes the ladder for writes only).
    pub high_risk: bool,
    /// Seed 004 category (`c` for unlisted tools).
    pub action_category: ActionCategory,
    /// The policy rule that matched the tool, e.g. `tools."crm.*"`.
    pub policy_rule: Option<String>,
}

/// Audit-safe metadata of one evidence ref: never its summary.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AuditEvidence {
    /// `plain` or `structured`.
    pub form: &'static str,
    /// The source id, or [`WITHHELD`] when it looks like it contains private data.
    pub source_id: String,
    /// Kind (structured refs only).
    pub kind: Option<EvidenceKind>,
    /// Trust tier (structured refs only).
    pub trust_tier: Option<TrustTier>,
    /// Redaction status (structured refs only).
    pub redaction_status: Option<RedactionStatus>,
    /// Freshness status (structured refs only).
    pub freshness: Option<FreshnessStatus>,
    /// Provenance label, or [`WITHHELD`].
    pub provenance: Option<String>,
    /// Whether a summary was present (its text is never recorded).
    pub has_summary: bool,
    /// Number of supported claim ids.
    pub supports: usize,
    /// Number of contradicted claim ids.
    pub contradicts: usize,
}

/// An audit-safe copy of an event: argument *keys* only, evidence metadata only, free text
/// withheld when it looks like personal data or a secret.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AuditSafeEvent {
    /// Schema version marker, if sent.
    pub schema_version: Option<String>,
    /// Request id (or [`WITHHELD`]).
    pub request_id: Option<String>,
    /// Agent id (or [`WITHHELD`]).
    pub agent_id: Option<String>,
    /// User intent (or [`WITHHELD`]).
    pub user_intent: Option<String>,
    /// Subject type of the authorization subject.
    pub subject_type: Option<SubjectType>,
    /// Subject reference (or [`WITHHELD`]).
    pub subject_ref: Option<String>,
    /// Tool name.
    pub tool_name: String,
    /// Declared tool category.
    pub tool_category: ToolCategory,
    /// Declared authorization state.
    pub authorization_state: AuthorizationState,
    /// Risk domain.
    pub risk_domain: RiskDomain,
    /// Sorted keys of `proposed_arguments`; their values are never recorded.
    pub proposed_argument_keys: Vec<String>,
    /// Evidence metadata.
    pub evidence_refs: Vec<AuditEvidence>,
    /// The runtime's recommended route.
    pub recommended_route: Route,
}

/// The seed 000 decision envelope. It serialises in AANA's shape ([`super::envelope`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    /// The final route.
    pub route: Route,
    /// `pass` only when `route` is `accept` with no hard blocker.
    pub gate_decision: GateDecision,
    /// Same as `route`.
    pub recommended_action: Route,
    /// Everything that prevents execution now, with machine-readable codes.
    pub hard_blockers: Vec<Blocker>,
    /// Human-readable reasoning, in evaluation order.
    pub reasons: Vec<String>,
    /// Authorization report (absent for a schema-invalid event).
    pub authorization_report: Option<AuthorizationReport>,
    /// Evidence integrity (absent for a schema-invalid event).
    pub evidence_integrity: Option<EvidenceIntegrity>,
    /// Classification (absent for a schema-invalid event).
    pub classification: Option<Classification>,
    /// The version of the policy applied.
    pub policy_version: String,
    /// The rule that produced the route.
    pub rule: String,
    /// Audit-safe copy of the event (absent for a schema-invalid event).
    pub audit_event: Option<AuditSafeEvent>,
}

impl Decision {
    /// The seed's execution rule: `gate_decision == pass`, `recommended_action == accept`,
    /// no hard blockers.
    pub fn allows_execution(&self) -> bool {
        self.gate_decision == GateDecision::Pass
            && self.recommended_action == Route::Accept
            && self.route == Route::Accept
            && self.hard_blockers.is_empty()
    }

    /// The decision for an event that failed schema validation: `refuse`, one
    /// `schema_invalid` blocker per error.
    pub fn schema_invalid(errors: &[FieldError], policy: &Policy) -> Decision {
        let hard_blockers: Vec<Blocker> = errors
            .iter()
            .map(|e| Blocker {
                code: BlockerCode::SchemaInvalid,
                message: e.message.clone(),
                field: Some(e.field.clone()),
            })
            .collect();
        Decision {
            route: Route::Refuse,
            gate_decision: GateDecision::Fail,
            recommended_action: Route::Refuse,
            reasons: vec![format!(
                "refuse: the event does not conform to AANA Agent Action Contract v1 ({} error{})",
                errors.len(),
                if errors.len() == 1 { "" } else { "s" }
            )],
            hard_blockers,
            authorization_report: None,
            evidence_integrity: None,
            classification: None,
            policy_version: policy.version().to_owned(),
            rule: "builtin:schema_invalid".into(),
            audit_event: None,
        }
    }
}

/// Parses and checks untrusted JSON: a schema-invalid event is refused with every error.
pub fn check_value(value: &Value, policy: &Policy) -> Decision {
    match Event::parse(value) {
        Ok(event) => check(&event, policy),
        Err(errors) => Decision::schema_invalid(&errors, policy),
    }
}

/// Parses and checks a JSON document (malformed JSON is a schema error).
pub fn check_json_str(json: &str, policy: &Policy) -> Decision {
    match Event::from_json_str(json) {
        Ok(event) => check(&event, policy),
        Err(errors) => Decision::schema_invalid(&errors, policy),
    }
}

/// Routes a schema-valid event against `policy` (module docs give the order of rules).
pub fn check(event: &Event, policy: &Policy) -> Decision {
    let assessment = evidence::assess(
        &event.evidence_refs,
        event.authorization_state,
        "evidence_refs",
    );
    route(Facts::of_event(event), &assessment, policy).finish(event, assessment)
}

/// Routes recorded [`CheckInputs`] against `policy`: the route, rule, blocker codes and policy
/// rule that [`check`] gives the event they were recorded from (module docs).
pub fn replay(inputs: &CheckInputs, policy: &Policy) -> Replayed {
    let assessment = inputs.evidence.assessment();
    let gate = route(Facts::of_inputs(inputs), &assessment, policy);
    Replayed {
        route: gate.v.route,
        rule: gate.v.rule,
        blockers: gate.v.blockers.iter().map(|b| b.code).collect(),
        policy_rule: gate.tool_rule.map(|r| r.id.clone()),
    }
}

impl ReplayEvidence {
    /// What `decision` recorded of its evidence; `None` for a schema-invalid event's.
    pub fn of(decision: &Decision) -> Option<ReplayEvidence> {
        let integrity = decision.evidence_integrity.as_ref()?;
        let report = decision.authorization_report.as_ref()?;
        Some(ReplayEvidence {
            effective: report.effective,
            refs: integrity.total,
            issues: (integrity.issues.iter())
                .map(|i| i.code)
                .filter(|&c| Self::routes(c))
                .collect(),
        })
    }
}

/// The facts routing reads, borrowed from an [`Event`] ([`check`]) or from [`CheckInputs`]
/// ([`replay`]), so both run the same phases on the same data.
#[derive(Debug, Clone, Copy)]
struct Facts<'a> {
    tool_name: &'a str,
    tool_category: ToolCategory,
    risk_domain: RiskDomain,
    recommended_route: Route,
    agent_id: Option<&'a str>,
}

impl<'a> Facts<'a> {
    fn of_event(event: &'a Event) -> Facts<'a> {
        Facts {
            tool_name: &event.tool_name,
            tool_category: event.tool_category,
            risk_domain: event.risk_domain,
            recommended_route: event.recommended_route,
            agent_id: event.agent_id.as_deref(),
        }
    }

    fn of_inputs(inputs: &'a CheckInputs) -> Facts<'a> {
        Facts {
            tool_name: &inputs.tool_name,
            tool_category: inputs.tool_category,
            risk_domain: inputs.risk_domain,
            recommended_route: inputs.recommended_route,
            agent_id: inputs.agent_id.as_deref(),
        }
    }
}

/// The routing core [`check`] and [`replay`] share: every phase, in the module docs' order.
fn route<'a>(facts: Facts<'a>, assessment: &EvidenceAssessment, policy: &'a Policy) -> Gate<'a> {
    let mut gate = Gate::classify(facts, policy);
    gate.check_lanes();
    gate.lower_authorization(assessment);
    let authorization = assessment.effective_authorization;
    gate.apply_ladder(authorization);
    gate.apply_policy_category(authorization);
    gate.apply_evidence_overlays(assessment);
    gate.apply_recommendation();
    gate
}

/// One check in progress: the facts, the rule that matched the tool, its classification, and
/// the verdict being built. Each phase of [`route`] is one method.
struct Gate<'a> {
    facts: Facts<'a>,
    policy: &'a Policy,
    tool_rule: Option<&'a ToolRule>,
    /// The category after the policy's floor.
    category: ToolCategory,
    name: ToolName,
    high_risk: bool,
    /// The authorization execution needs (set by the policy-category phase).
    required: Option<AuthorizationState>,
    v: Verdict,
}

impl<'a> Gate<'a> {
    /// 1. Classification: the policy's `tool_category` floor, and whether the action is high
    ///    risk.
    fn classify(facts: Facts<'a>, policy: &'a Policy) -> Gate<'a> {
        let tool_rule = policy.tool_rule(facts.tool_name);
        let declared_category = facts.tool_category;
        let floor = tool_rule.and_then(|r| r.tool_category.filter(|&c| c > declared_category));
        let category = floor.unwrap_or(declared_category);
        let mut v = Verdict::accept(rules::accept_rule(category));
        if let (Some(rule), Some(floor)) = (tool_rule, floor) {
            v.note(format!(
                "policy rule {} classifies the tool as {floor}; the declared {declared_category} \
                 was raised",
                rule.id
            ));
        }
        let name = ToolName::of(facts.tool_name);
        let domain_high = rules::is_high_risk_domain(facts.risk_domain);
        let policy_high = tool_rule.is_some_and(|r| r.risk == RiskLevel::High);
        let destructive_write = category == ToolCategory::Write && name.is_destructive();
        let high_risk = domain_high || policy_high || destructive_write;
        if category == ToolCategory::Write && high_risk {
            let why: Vec<String> = [
                domain_high.then(|| format!("risk domain {}", facts.risk_domain)),
                policy_high.then(|| "policy risk floor high".to_owned()),
                destructive_write.then(|| "destructive tool name".to_owned()),
            ]
            .into_iter()
            .flatten()
            .collect();
            v.note(format!("high-risk write ({})", why.join(", ")));
        }
        let required = rules::required_authorization(category);
        Gate {
            facts,
            policy,
            tool_rule,
            category,
            name,
            high_risk,
            required,
            v,
        }
    }

    /// 2. Lanes: a rule with `allowed_agents` refuses other agents and unnamed ones.
    fn check_lanes(&mut self) {
        let Some(rule) = self.tool_rule.filter(|r| !r.allowed_agents.is_empty()) else {
            return;
        };
        match self.facts.agent_id {
            None => self.v.block(
                Route::Refuse,
                format!("policy:{}.allowed_agents", rule.id),
                BlockerCode::AgentUnidentified,
                "the tool is restricted to certain agents and the event names none: send agent_id",
                Some("agent_id"),
            ),
            Some(agent) if !rule.allows_agent(agent) => self.v.block(
                Route::Refuse,
                format!("policy:{}.allowed_agents", rule.id),
                BlockerCode::AgentNotInLane,
                format!("agent `{agent}` is not in the lane of {}", rule.id),
                Some("agent_id"),
            ),
            Some(_) => {}
        }
    }

    /// 3. Evidence lowering: the declared authorization state, lowered where evidence shows
    ///    less (the assessment's reasons join the verdict's).
    fn lower_authorization(&mut self, assessment: &EvidenceAssessment) {
        self.v
            .reasons
            .extend(assessment.lowering_reasons.iter().cloned());
    }

    /// 4. The authorization ladder.
    fn apply_ladder(&mut self, authorization: AuthorizationState) {
        let risk = if self.high_risk {
            WriteRisk::High
        } else {
            WriteRisk::Ordinary
        };
        Ladder {
            category: self.category,
            authorization,
            risk,
            name: self.name,
            authorization_cap: Route::Refuse,
        }
        .apply(&mut self.v);
    }

    /// 5. Policy category B/C on listed tools: a read needs a human too (a write already needs
    ///    `confirmed` by the ladder; an unknown tool never executes). Raises the authorization
    ///    execution needs.
    fn apply_policy_category(&mut self, authorization: AuthorizationState) {
        let category = self.category;
        let Some(rule) = self.tool_rule.filter(|r| !r.category.may_auto_execute()) else {
            return;
        };
        if category != ToolCategory::Unknown {
            self.required = Some(AuthorizationState::Confirmed);
        }
        let read = matches!(
            category,
            ToolCategory::PublicRead | ToolCategory::PrivateRead
        );
        if read && authorization < AuthorizationState::Confirmed {
            self.v.block(
                Route::Ask,
                format!("policy:{}.category", rule.id),
                BlockerCode::HumanApprovalRequired,
                format!(
                    "{} lists this tool as Category {}: a human must approve it (authorization \
                     `confirmed`) before it runs",
                    rule.id,
                    rule.category.as_str().to_ascii_uppercase()
                ),
                None,
            );
        }
    }

    /// 6. Evidence overlays: stale or missing evidence blocks where the ladder depends on it.
    fn apply_evidence_overlays(&mut self, assessment: &EvidenceAssessment) {
        let depends = matches!(
            self.category,
            ToolCategory::PrivateRead | ToolCategory::Write
        );
        let overlays = Overlays {
            stale_blocks: depends,
            requires_evidence: depends,
        };
        rules::apply_evidence_overlays(&mut self.v, assessment, overlays);
    }

    /// 7. The runtime's recommendation can only tighten.
    fn apply_recommendation(&mut self) {
        let recommended = self.facts.recommended_route;
        let v = &mut self.v;
        if recommended > v.route {
            let inferred = v.route;
            v.block(
                recommended,
                "runtime:recommended_route",
                BlockerCode::RuntimeRouteStricter,
                format!(
                    "the runtime recommended `{recommended}`, stricter than the gate's \
                     `{inferred}`; the stricter route wins"
                ),
                Some("recommended_route"),
            );
        } else if recommended < v.route {
            v.note(format!(
                "the runtime recommended `{recommended}`; a recommendation can only make the \
                 route stricter, so `{}` stands",
                v.route
            ));
        }
    }

    /// The decision envelope for `event`, whose evidence `assessment` routed.
    fn finish(mut self, event: &Event, assessment: EvidenceAssessment) -> Decision {
        let v = &mut self.v;
        let gate_decision = if v.route == Route::Accept && v.blockers.is_empty() {
            GateDecision::Pass
        } else {
            GateDecision::Fail
        };
        if v.route == Route::Accept {
            v.note(format!("accept: {}", v.rule));
        }
        let tool_rule = self.tool_rule;
        let v = self.v;
        Decision {
            route: v.route,
            gate_decision,
            recommended_action: v.route,
            hard_blockers: v.blockers,
            reasons: v.reasons,
            authorization_report: Some(AuthorizationReport {
                declared: event.authorization_state,
                effective: assessment.effective_authorization,
                required: self.required,
                support: assessment.support,
            }),
            evidence_integrity: Some(assessment.integrity),
            classification: Some(Classification {
                declared_category: event.tool_category,
                effective_category: self.category,
                high_risk: self.high_risk,
                action_category: tool_rule.map_or(ActionCategory::C, |r| r.category),
                policy_rule: tool_rule.map(|r| r.id.clone()),
            }),
            policy_version: self.policy.version().to_owned(),
            rule: v.rule,
            audit_event: Some(audit_event(event)),
        }
    }
}

fn safe_text(text: &str) -> String {
    if scan::is_clean(text) {
        text.to_owned()
    } else {
        WITHHELD.to_owned()
    }
}

/// The audit-safe copy of `event`.
pub fn audit_event(event: &Event) -> AuditSafeEvent {
    let mut keys: Vec<String> = event
        .proposed_arguments
        .keys()
        .map(|k| scan::audit_safe_name(k).to_owned())
        .collect();
    keys.sort_unstable();
    let evidence_refs = event
        .evidence_refs
        .iter()
        .map(|r| match r {
            EvidenceRef::Plain(s) => AuditEvidence {
                form: "plain",
                source_id: safe_text(s),
                kind: None,
                trust_tier: None,
                redaction_status: None,
                freshness: None,
                provenance: None,
                has_summary: false,
                supports: 0,
                contradicts: 0,
            },
            EvidenceRef::Structured(e) => AuditEvidence {
                form: "structured",
                source_id: safe_text(&e.source_id),
                kind: Some(e.kind),
                trust_tier: Some(e.trust_tier),
                redaction_status: Some(e.redaction_status),
                freshness: Some(e.freshness.status),
                provenance: Some(safe_text(&e.provenance)),
                has_summary: e.summary.is_some(),
                supports: e.supports.len(),
                contradicts: e.contradicts.len(),
            },
        })
        .collect();
    let subject = event.authorization_subject.as_ref();
    AuditSafeEvent {
        schema_version: event.schema_version.clone(),
        request_id: event.request_id.as_deref().map(safe_text),
        agent_id: event.agent_id.as_deref().map(safe_text),
        user_intent: event.user_intent.as_deref().map(safe_text),
        subject_type: subject.and_then(|s| s.subject_type),
        subject_ref: subject
            .and_then(|s| s.subject_ref.as_deref())
            .map(safe_text),
        tool_name: scan::audit_safe_name(&event.tool_name).to_owned(),
        tool_category: event.tool_category,
        authorization_state: event.authorization_state,
        risk_domain: event.risk_domain,
        proposed_argument_keys: keys,
        evidence_refs,
        recommended_route: event.recommended_route,
    }
}
