//! The pieces every decision is built from: machine-readable [`Blocker`]s with a closed set of
//! [`BlockerCode`]s an agent can act on, and the accumulator that folds rules into one route
//! (a rule can only make the route stricter; the first rule to reach the final strictness is
//! the one reported as the decision's `rule`).

use serde::{Deserialize, Serialize};

use crate::domain::contract::vocab::{AuthorizationState, Route};
use crate::domain::contract::wire::wire_enum;

wire_enum! {
    /// Why a proposed action cannot execute now. Stable, machine-readable codes.
    pub enum BlockerCode {
        /// The event or proposal is not schema-valid; fix the listed fields and resubmit.
        SchemaInvalid => "schema_invalid",
        /// `tool_category: unknown`: classify the tool, or route to review.
        UnknownToolCategory => "unknown_tool_category",
        /// An unclassified tool whose name looks destructive (`delete_*`, `drop_*`, ...).
        UnknownDestructiveTool => "unknown_destructive_tool",
        /// The (effective) authorization state is below what the action needs.
        AuthorizationBelowRequired => "authorization_below_required",
        /// Validated, but the user has not explicitly confirmed this action.
        ConfirmationRequired => "confirmation_required",
        /// A human must approve before execution (policy category, GDPR/HIPAA, risk, ...).
        HumanApprovalRequired => "human_approval_required",
        /// The tool is restricted to certain agents (lanes) and no agent was identified.
        AgentUnidentified => "agent_unidentified",
        /// The agent is not in the tool's lane (`allowed_agents`).
        AgentNotInLane => "agent_not_in_lane",
        /// The agent is not registered in the policy and the policy refuses unknown agents.
        AgentUnknown => "agent_unknown",
        /// The agent proposed outside the domains it owns.
        DomainNotOwned => "domain_not_owned",
        /// The action's authorization mode is `blocked`.
        AuthorizationBlocked => "authorization_blocked",
        /// Protected health information with a tool that is not HIPAA allow-listed.
        PhiNotAllowed => "phi_not_allowed",
        /// The blast radius requires a rollback plan and none was given.
        RollbackPlanRequired => "rollback_plan_required",
        /// The blast radius is above the policy's ceiling.
        BlastRadiusExceeded => "blast_radius_exceeded",
        /// The rule needs evidence and none was given.
        EvidenceMissing => "evidence_missing",
        /// Evidence the rule depends on is stale.
        EvidenceStale => "evidence_stale",
        /// Evidence contradicts a claim or action.
        EvidenceContradictory => "evidence_contradictory",
        /// Evidence carries something that looks like a secret.
        EvidenceLeaksSecret => "evidence_leaks_secret",
        /// Evidence carries unredacted personal data.
        EvidenceLeaksPersonalData => "evidence_leaks_personal_data",
        /// Evidence marked `sensitive` carries content onto the audit path.
        EvidenceSensitiveContent => "evidence_sensitive_content",
        /// The runtime's `recommended_route` was stricter than the engine's, and wins.
        RuntimeRouteStricter => "runtime_route_stricter",
    }
}

/// One reason an action cannot execute now.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Blocker {
    /// Stable machine-readable code.
    pub code: BlockerCode,
    /// What it means and what would resolve it (never quotes private content).
    pub message: String,
    /// JSON path of the input field concerned, when there is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
}

/// Declared, effective and required authorization, and what the evidence supports. It
/// serialises with AANA's field names (`declared_state`, `evidence_supported_state`,
/// `effective_state`, `support`, `downgraded`) beside Countersign's (`declared`, `effective`,
/// `required`); it reads back from Countersign's.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct AuthorizationReport {
    /// As declared by the runtime.
    pub declared: AuthorizationState,
    /// After evidence lowering (never above `declared`).
    pub effective: AuthorizationState,
    /// What execution needs; `None` for `unknown` tools, which never execute.
    #[serde(default)]
    pub required: Option<AuthorizationState>,
    /// Every state some structured evidence ref supports, weakest first.
    #[serde(default)]
    pub support: Vec<AuthorizationState>,
}

impl AuthorizationReport {
    /// The strongest state the evidence supports (`none` without structured evidence).
    pub fn evidence_supported(&self) -> AuthorizationState {
        self.support
            .last()
            .copied()
            .unwrap_or(AuthorizationState::None)
    }
}

impl Serialize for AuthorizationReport {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut m = s.serialize_map(Some(8))?;
        m.serialize_entry("declared_state", &self.declared)?;
        m.serialize_entry("evidence_supported_state", &self.evidence_supported())?;
        m.serialize_entry("effective_state", &self.effective)?;
        m.serialize_entry("support", &self.support)?;
        m.serialize_entry("downgraded", &(self.effective < self.declared))?;
        m.serialize_entry("declared", &self.declared)?;
        m.serialize_entry("effective", &self.effective)?;
        m.serialize_entry("required", &self.required)?;
        m.end()
    }
}

/// Folds rules into one route.
#[derive(Debug, Clone)]
pub(crate) struct Verdict {
    pub(crate) route: Route,
    pub(crate) rule: String,
    pub(crate) blockers: Vec<Blocker>,
    pub(crate) reasons: Vec<String>,
}

impl Verdict {
    /// Starts at `accept`, attributed to `rule` if nothing raises it.
    pub(crate) fn accept(rule: impl Into<String>) -> Self {
        Self {
            route: Route::Accept,
            rule: rule.into(),
            blockers: Vec::new(),
            reasons: Vec::new(),
        }
    }

    /// Raises the route to at least `route`; the rule is recorded only if it raised it.
    pub(crate) fn raise(&mut self, route: Route, rule: impl Into<String>) {
        if route > self.route {
            self.route = route;
            self.rule = rule.into();
        }
    }

    /// Raises the route and records a blocker and a reason.
    pub(crate) fn block(
        &mut self,
        route: Route,
        rule: impl Into<String>,
        code: BlockerCode,
        message: impl Into<String>,
        field: Option<&str>,
    ) {
        self.raise(route, rule);
        let message = message.into();
        self.reasons.push(format!("{route}: {message}"));
        self.blockers.push(Blocker {
            code,
            message,
            field: field.map(str::to_owned),
        });
    }

    /// Records a reason that does not change the route.
    pub(crate) fn note(&mut self, reason: impl Into<String>) {
        self.reasons.push(reason.into());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes_only_get_stricter_and_keep_the_first_rule_at_a_level() {
        let mut v = Verdict::accept("a");
        v.raise(Route::Ask, "b");
        v.raise(Route::Accept, "c");
        assert_eq!((v.route, v.rule.as_str()), (Route::Ask, "b"));
        v.block(
            Route::Defer,
            "d",
            BlockerCode::EvidenceStale,
            "stale",
            Some("x"),
        );
        v.block(
            Route::Defer,
            "e",
            BlockerCode::EvidenceMissing,
            "missing",
            None,
        );
        assert_eq!((v.route, v.rule.as_str()), (Route::Defer, "d"));
        assert_eq!(v.blockers.len(), 2);
        assert_eq!(v.blockers[1].code, BlockerCode::EvidenceMissing);
        assert_eq!(v.reasons, ["defer: stale", "defer: missing"]);
    }

    #[test]
    fn the_authorization_report_speaks_aana_and_reads_back_as_written() {
        let report = AuthorizationReport {
            declared: AuthorizationState::Confirmed,
            effective: AuthorizationState::UserClaimed,
            required: Some(AuthorizationState::Confirmed),
            support: vec![AuthorizationState::UserClaimed],
        };
        let v = serde_json::to_value(&report).expect("serialises");
        assert_eq!(v["declared_state"], "confirmed");
        assert_eq!(v["evidence_supported_state"], "user_claimed");
        assert_eq!(v["effective_state"], "user_claimed");
        assert_eq!(v["support"], serde_json::json!(["user_claimed"]));
        assert_eq!(v["downgraded"], true);
        let back: AuthorizationReport = serde_json::from_value(v).expect("reads back");
        assert_eq!(back, report);
    }

    #[test]
    fn blockers_serialize_with_wire_codes() {
        let b = Blocker {
            code: BlockerCode::AgentNotInLane,
            message: "m".into(),
            field: None,
        };
        assert_eq!(
            serde_json::to_string(&b).expect("serializes"),
            r#"{"code":"agent_not_in_lane","message":"m"}"#
        );
    }
}
