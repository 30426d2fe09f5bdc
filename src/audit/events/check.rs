//! Pre-tool-check events: a decision, or an event that broke the contract. What the agent
//! wrote freely (intent, request id, subject reference) is kept only as length and keyed hash;
//! evidence ids and argument values only as keyed hashes. The agent is the event's actor, so
//! the payload does not name it again (the `agent` facet column holds the actor).
//!
//! A check is the trail's most frequent event, so its payload is kept small (under 500 bytes
//! for AANA's published events; `scripts/bench-http` measures it): the policy is named by a
//! short reference to the `policy.loaded` event that names it in full ([`policy_ref`]), and
//! each evidence reference is a tuple rather than an object repeating its keys.
//!
//! A decision also records what routing read of its evidence ([`ReplayEvidence`]: the effective
//! authorization, how many refs, the codes of the issues routing acts on) so that a policy
//! backtest can route it again under another policy, from that and the record's own declared
//! facts ([`CheckInputs::from_record`]). It is recorded only when the tool name is kept as it
//! is (an audit-safe identifier); a decision without it is not replayable, and never guessed
//! at.

use std::collections::BTreeMap;

use serde::Serialize;

use super::payload::Payload;
use crate::audit::safe::{self, ParameterDigest, Salt, TextDigest};
use crate::domain::contract::aana::{
    Event, EvidenceKind, EvidenceRef, FreshnessStatus, RedactionStatus, TrustTier,
};
use crate::domain::contract::canonical::Uncanonical;
use crate::domain::contract::vocab::{AuthorizationState, RiskDomain, Route, ToolCategory};
use crate::domain::routing::gate::{Decision, ReplayEvidence};

/// One evidence reference, as recorded: `[source]` for a plain string reference,
/// `[source, kind, trust_tier, redaction_status, freshness]` for structured evidence. The
/// source is its id's keyed hash (an identifier, so its length tells nothing worth keeping).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum EvidenceDigest {
    /// A plain string reference.
    Plain((String,)),
    /// Structured evidence and its metadata.
    Structured(
        (
            String,
            EvidenceKind,
            TrustTier,
            RedactionStatus,
            FreshnessStatus,
        ),
    ),
}

/// How a check's event names the policy that decided it: `sha256:` and the first 16 hex digits
/// of the policy's version (64 bits), which the `policy.loaded` event of every start records in
/// full. A version of another form is kept as it is, cut like any name.
pub fn policy_ref(version: &str) -> String {
    match version.strip_prefix("sha256:") {
        Some(hex) if hex.len() > 16 && hex.is_ascii() => format!("sha256:{}", &hex[..16]),
        _ => safe::name(version),
    }
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
    /// The policy that decided ([`policy_ref`]).
    pub policy: String,
    /// Blocker codes.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub blockers: Vec<String>,
    /// Declared tool category.
    pub category: ToolCategory,
    /// Declared authorization state.
    pub authorization_state: AuthorizationState,
    /// Risk domain, under the trail's `domain` facet (so the compliance pages' domain filter
    /// finds checks as it finds proposals).
    #[serde(rename = "domain")]
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
    /// What routing read of the evidence, for replay under another policy; `None` when the
    /// decision is not replayable (its tool name is not an audit-safe identifier, or its
    /// evidence has more issues than a record holds).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replay: Option<ReplayEvidence>,
}

/// What `decision` recorded for replay: `None` unless [`safe::safe_name`] keeps the tool name
/// as it is and the evidence has at most [`safe::MAX_ITEMS`] issues routing acts on (a record
/// stays bounded, and a cut list would replay wrongly).
fn replay(event: &Event, decision: &Decision) -> Option<ReplayEvidence> {
    if safe::safe_name(&event.tool_name) != event.tool_name {
        return None;
    }
    ReplayEvidence::of(decision).filter(|e| e.issues.len() <= safe::MAX_ITEMS)
}

impl PreToolCheckDecided {
    /// The record of check `event` (the asking agent is the event's actor), answered with
    /// `decision`; an error if an argument's value has no canonical form to hash.
    pub fn new(
        salt: &Salt,
        check_id: &str,
        event: &Event,
        decision: &Decision,
    ) -> Result<Self, Uncanonical> {
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
        Ok(Self {
            check_id: check_id.to_owned(),
            tool: safe::safe_name(&event.tool_name),
            decision: decision.route,
            rule: safe::name(&decision.rule),
            policy: policy_ref(&decision.policy_version),
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
            arguments: salt.parameters(&event.proposed_arguments)?,
            text,
            evidence: safe::bounded(event.evidence_refs.iter().map(|r| evidence(salt, r))),
            replay: replay(event, decision),
        })
    }
}

fn evidence(salt: &Salt, r: &EvidenceRef) -> EvidenceDigest {
    match r {
        EvidenceRef::Plain(s) => EvidenceDigest::Plain((salt.hash(s.as_bytes()),)),
        EvidenceRef::Structured(e) => EvidenceDigest::Structured((
            salt.hash(e.source_id.as_bytes()),
            e.kind,
            e.trust_tier,
            e.redaction_status,
            e.freshness.status,
        )),
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
    /// The policy that decided ([`policy_ref`]).
    pub policy: String,
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
    use serde_json::Value;

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
        let decided = PreToolCheckDecided::new(&salt, "c1", &event, &decision).expect("canonical");
        let row = super::super::AuditEvent::PreToolCheckDecided(decided)
            .into_row()
            .expect("row");
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
        assert_eq!(row.details["domain"], "healthcare");
    }

    #[test]
    fn the_policy_is_named_by_a_short_reference() {
        let version = Policy::builtin().version().to_owned();
        let short = policy_ref(&version);
        assert_eq!(short.len(), "sha256:".len() + 16);
        assert!(
            version.starts_with(&short),
            "{short} is not a prefix of {version}"
        );
        assert_eq!(policy_ref("v2-handwritten"), "v2-handwritten");
    }

    #[test]
    fn evidence_is_a_tuple_in_order() {
        let body = serde_json::json!({
            "tool_name": "crm.get_contact",
            "tool_category": "private_read",
            "authorization_state": "authenticated",
            "evidence_refs": [
                "ticket-7",
                {"source_id": "ticket-42", "kind": "user_message", "trust_tier": "verified",
                 "redaction_status": "redacted", "summary": "asked", "provenance": "bench",
                 "freshness": {"status": "fresh"}}
            ],
            "risk_domain": "customer_support",
            "proposed_arguments": {},
            "recommended_route": "accept"
        });
        let event = Event::parse(&body).expect("valid event");
        let salt = Salt::from_bytes(b"salt").expect("salt");
        let decided = PreToolCheckDecided::new(
            &salt,
            "c1",
            &event,
            &gate::check(&event, &Policy::default()),
        )
        .expect("canonical");
        let evidence = serde_json::to_value(&decided.evidence).expect("serializes");
        assert_eq!(
            evidence,
            serde_json::json!([
                [salt.hash(b"ticket-7")],
                [
                    salt.hash(b"ticket-42"),
                    "user_message",
                    "verified",
                    "redacted",
                    "fresh"
                ]
            ])
        );
    }

    #[test]
    fn routing_inputs_are_recorded_only_when_replayable() {
        let mut body = serde_json::json!({
            "agent_id": "support-agent",
            "tool_name": "crm.update_contact",
            "tool_category": "write",
            "authorization_state": "validated",
            "evidence_refs": ["ticket-7"],
            "risk_domain": "customer_support",
            "proposed_arguments": {"email": "jane@example.com"},
            "recommended_route": "accept"
        });
        let salt = Salt::from_bytes(b"salt").expect("salt");
        let policy = Policy::builtin();
        let record = |body: &Value| {
            let event = Event::parse(body).expect("valid event");
            let decision = gate::check(&event, &policy);
            let decided = PreToolCheckDecided::new(&salt, "c1", &event, &decision).expect("ok");
            (decision, decided)
        };
        let (decision, decided) = record(&body);
        let row = super::super::AuditEvent::PreToolCheckDecided(decided)
            .into_row()
            .expect("row");
        let evidence: ReplayEvidence =
            serde_json::from_value(row.details["replay"].clone()).expect("read back");
        let d = &row.details;
        let read = |k: &str| d[k].as_str().expect("field");
        let recorded = gate::RecordedCheck {
            tool_name: read("tool"),
            tool_category: ToolCategory::parse(read("category")).expect("category"),
            authorization_state: AuthorizationState::parse(read("authorization_state"))
                .expect("state"),
            risk_domain: RiskDomain::parse(read("domain")).expect("domain"),
            recommended_route: Route::parse(read("recommended_route")).expect("route"),
            agent: "support-agent",
        };
        let inputs = gate::CheckInputs::from_record(&recorded, &evidence);
        let replayed = gate::replay(&inputs, &policy);
        assert_eq!(
            (replayed.route, replayed.rule),
            (decision.route, decision.rule)
        );
        body["tool_name"] = serde_json::json!("send to jane.doe@example.com");
        assert_eq!(record(&body).1.replay, None);
    }

    /// The issue's figure: a check's event under 500 bytes on average, over AANA's published
    /// events (what agents really send), as the payload the chain stores.
    #[test]
    fn aanas_published_events_average_under_500_bytes() {
        let examples: Value = serde_json::from_str(include_str!(
            "../../../tests/fixtures/aana/agent_tool_precheck_examples.json"
        ))
        .expect("examples");
        let cases: Value = serde_json::from_str(include_str!(
            "../../../tests/fixtures/aana/agent_action_contract_cases.json"
        ))
        .expect("cases");
        let events: Vec<&Value> = (examples["examples"].as_array().into_iter().flatten())
            .chain(cases["cases"].as_array().into_iter().flatten())
            .map(|e| &e["event"])
            .collect();
        assert!(events.len() >= 9, "fixtures lost: {}", events.len());
        let salt = Salt::from_bytes(&Salt::generate()).expect("salt");
        let policy = Policy::default();
        let sizes: Vec<usize> = events
            .iter()
            .map(|body| {
                let event = Event::parse(body).expect("AANA's event parses");
                let decision = gate::check(&event, &policy);
                let decided =
                    PreToolCheckDecided::new(&salt, "c1", &event, &decision).expect("canonical");
                let row = super::super::AuditEvent::PreToolCheckDecided(decided)
                    .into_row()
                    .expect("row");
                crate::audit::chain::canonical_text(&row.details)
                    .expect("canonical")
                    .len()
            })
            .collect();
        let average = sizes.iter().sum::<usize>() / sizes.len();
        assert!(average < 500, "average {average} B over {sizes:?}");
    }
}
