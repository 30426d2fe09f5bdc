//! Pre-tool-check events: a decision, or an event that broke the contract. What the agent
//! wrote freely (intent, request id, subject reference) is kept only as length and keyed hash;
//! evidence ids and argument values only as keyed hashes. The agent is the event's actor, so
//! the payload does not name it again (the `agent` facet column holds the actor).

use std::collections::BTreeMap;

use serde::Serialize;

use super::Payload;
use crate::audit::safe::{self, ParameterDigest, Salt, TextDigest};
use crate::domain::contract::aana::{
    Event, EvidenceKind, EvidenceRef, FreshnessStatus, RedactionStatus, TrustTier,
};
use crate::domain::contract::vocab::{AuthorizationState, RiskDomain, Route, ToolCategory};
use crate::domain::routing::gate::Decision;

/// One evidence reference, as recorded.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EvidenceDigest {
    /// The source id's keyed hash (an identifier, so its length tells nothing worth keeping).
    pub source: String,
    /// Structured evidence's metadata (absent for a plain string reference).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kind: Option<EvidenceKind>,
    /// Trust tier.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trust_tier: Option<TrustTier>,
    /// Redaction status.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub redaction: Option<RedactionStatus>,
    /// Freshness.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub freshness: Option<FreshnessStatus>,
}

/// Payload of `pre_tool_check.decided`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PreToolCheckDecided {
    /// The check's id, as answered.
    #[serde(skip)]
    pub check_id: String,
    /// Tool name (audit-safe, bounded).
    pub tool: String,
    /// The route: accept, ask, defer or refuse. (AANA's `gate_decision` is `pass` exactly when
    /// this is `accept` and `blockers` is empty, so it is not recorded twice.)
    pub decision: Route,
    /// The deciding rule.
    pub rule: String,
    /// Policy version used.
    pub policy_version: String,
    /// Blocker codes.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub blockers: Vec<String>,
    /// Declared tool category.
    pub category: ToolCategory,
    /// Declared authorization state.
    pub authorization_state: AuthorizationState,
    /// Risk domain.
    pub risk_domain: RiskDomain,
    /// The agent's recommended route.
    pub recommended_route: Route,
    /// Argument keys and keyed hashes of their values.
    pub arguments: ParameterDigest,
    /// Free text, as lengths and hashes (`user_intent`, `request_id`, `subject_ref`).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub text: BTreeMap<&'static str, TextDigest>,
    /// Evidence references (bounded).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub evidence: Vec<EvidenceDigest>,
}

impl PreToolCheckDecided {
    /// The record of check `event` (the asking agent is the event's actor), answered with `decision`.
    pub fn new(salt: &Salt, check_id: &str, event: &Event, decision: &Decision) -> Self {
        let subject_ref = event
            .authorization_subject
            .as_ref()
            .and_then(|s| s.subject_ref.as_deref());
        let text = [
            ("user_intent", event.user_intent.as_deref()),
            ("request_id", event.request_id.as_deref()),
            ("subject_ref", subject_ref),
        ]
        .into_iter()
        .filter_map(|(k, v)| v.map(|v| (k, salt.text(v))))
        .collect();
        Self {
            check_id: check_id.to_owned(),
            tool: safe::safe_name(&event.tool_name),
            decision: decision.route,
            rule: safe::name(&decision.rule),
            policy_version: safe::name(&decision.policy_version),
            blockers: safe::bounded(
                decision
                    .hard_blockers
                    .iter()
                    .map(|b| b.code.as_str().to_owned()),
            ),
            category: event.tool_category,
            authorization_state: event.authorization_state,
            risk_domain: event.risk_domain,
            recommended_route: event.recommended_route,
            arguments: salt.parameters(&event.proposed_arguments),
            text,
            evidence: safe::bounded(event.evidence_refs.iter().map(|r| evidence(salt, r))),
        }
    }
}

fn evidence(salt: &Salt, r: &EvidenceRef) -> EvidenceDigest {
    match r {
        EvidenceRef::Plain(s) => EvidenceDigest {
            source: salt.hash(s.as_bytes()),
            kind: None,
            trust_tier: None,
            redaction: None,
            freshness: None,
        },
        EvidenceRef::Structured(e) => EvidenceDigest {
            source: salt.hash(e.source_id.as_bytes()),
            kind: Some(e.kind),
            trust_tier: Some(e.trust_tier),
            redaction: Some(e.redaction_status),
            freshness: Some(e.freshness.status),
        },
    }
}

impl Payload for PreToolCheckDecided {
    fn kind(&self) -> &'static str {
        "pre_tool_check.decided"
    }
    fn subject(&self) -> (&'static str, String) {
        ("pre_tool_check", self.check_id.clone())
    }
}

/// Payload of `pre_tool_check.rejected`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PreToolCheckRejected {
    /// The check's id.
    #[serde(skip)]
    pub check_id: String,
    /// Route (`refuse`).
    pub decision: Route,
    /// Policy version used.
    pub policy_version: String,
    /// Broken field paths (audit-safe, bounded), never the rejected values.
    pub fields: Vec<String>,
}

impl Payload for PreToolCheckRejected {
    fn kind(&self) -> &'static str {
        "pre_tool_check.rejected"
    }
    fn subject(&self) -> (&'static str, String) {
        ("pre_tool_check", self.check_id.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::policy::model::Policy;
    use crate::domain::routing::gate;

    #[test]
    fn free_text_and_argument_values_never_reach_the_row() {
        let body = serde_json::json!({
            "request_id": "req-Jane-Doe-0001",
            "agent_id": "support-agent",
            "user_intent": "Book Jane Doe at 12 Elm Street for her diabetes follow-up",
            "authorization_subject": {"subject_type": "user", "subject_ref": "patient Jane Doe"},
            "tool_name": "calendar.create_event",
            "tool_category": "write",
            "authorization_state": "validated",
            "evidence_refs": ["chart of Jane Doe"],
            "risk_domain": "healthcare",
            "proposed_arguments": {"patient": "Jane Doe", "diagnosis": "diabetes"},
            "recommended_route": "ask"
        });
        let event = Event::parse(&body).expect("valid event");
        let policy = Policy::default();
        let decision = gate::check(&event, &policy);
        let salt = Salt::from_bytes(b"salt").expect("salt");
        let row = super::super::AuditEvent::PreToolCheckDecided(PreToolCheckDecided::new(
            &salt, "c1", &event, &decision,
        ))
        .into_row();
        let text = row.details.to_string();
        for secret in ["Jane", "Elm", "diabetes", "req-"] {
            assert!(!text.contains(secret), "{secret} leaked: {text}");
        }
        let intent = body["user_intent"].as_str().unwrap_or_default();
        assert_eq!(
            row.details["text"]["user_intent"]["len"],
            intent.chars().count()
        );
        assert!(row.details["arguments"]["diagnosis"].is_string());
        assert_eq!(row.details["tool"], "calendar.create_event");
    }
}
