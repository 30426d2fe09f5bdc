//! What a recorded decision keeps so that the gate can route it again under another policy
//! ([`super::gate::replay`]): [`CheckInputs`], everything routing reads of an event, audit-safe;
//! [`ReplayEvidence`], the small part a `pre_tool_check.decided` record adds to its own fields;
//! and [`Replayed`], what a replay decides. The gate's module docs say why a replay routes as
//! the check did.

use serde::{Deserialize, Serialize};

use super::evidence::{
    self, EvidenceAssessment, EvidenceIntegrity, EvidenceIssue, EvidenceIssueCode,
};
use super::verdict::BlockerCode;
use crate::domain::contract::aana::Event;
use crate::domain::contract::vocab::{AuthorizationState, RiskDomain, Route, ToolCategory};

/// What [`replay`] decides: the parts of a [`Decision`] that a policy can change.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Replayed {
    /// The final route.
    pub route: Route,
    /// The rule that produced the route.
    pub rule: String,
    /// The hard blockers' codes, in order.
    pub blockers: Vec<BlockerCode>,
    /// The policy rule that matched the tool, e.g. `tools."crm.*"`.
    pub policy_rule: Option<String>,
}

/// Everything the gate's routing reads of an event, audit-safe (module docs): recorded with a
/// decision so that [`replay`] can route it again under another policy. It serialises with the
/// names the `pre_tool_check.decided` record uses (`tool`, `category`, `domain`, `agent`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CheckInputs {
    /// The tool name, as sent.
    #[serde(rename = "tool")]
    pub tool_name: String,
    /// The declared tool category.
    #[serde(rename = "category")]
    pub tool_category: ToolCategory,
    /// The declared authorization state.
    pub authorization_state: AuthorizationState,
    /// The risk domain.
    #[serde(rename = "domain")]
    pub risk_domain: RiskDomain,
    /// The runtime's recommended route.
    pub recommended_route: Route,
    /// The agent id the event names, if any (lanes read it).
    #[serde(rename = "agent", default, skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
    /// What the evidence showed.
    pub evidence: EvidenceSummary,
}

impl CheckInputs {
    /// The routing inputs of `event` (assesses its evidence once).
    pub fn of(event: &Event) -> CheckInputs {
        let assessment = evidence::assess(
            &event.evidence_refs,
            event.authorization_state,
            "evidence_refs",
        );
        CheckInputs {
            tool_name: event.tool_name.clone(),
            tool_category: event.tool_category,
            authorization_state: event.authorization_state,
            risk_domain: event.risk_domain,
            recommended_route: event.recommended_route,
            agent_id: event.agent_id.clone(),
            evidence: EvidenceSummary::of(&assessment),
        }
    }
}

/// An evidence assessment without its words: the effective state, the support, the counts, and
/// each issue's ref index, field path and code (no message, no lowering reason). Counts of zero
/// and empty lists are left out of its JSON.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EvidenceSummary {
    /// The declared state after evidence lowering.
    #[serde(rename = "effective")]
    pub effective_authorization: AuthorizationState,
    /// Every state some structured ref supports, weakest first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub support: Vec<AuthorizationState>,
    /// Number of refs.
    pub total: usize,
    /// Number of structured refs.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub structured: usize,
    /// Structured refs with `trust_tier: verified`.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub verified: usize,
    /// Stale refs.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub stale: usize,
    /// Refs whose content is not known to be redacted.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub unredacted: usize,
    /// Issues, in ref order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub issues: Vec<IssueSummary>,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// What a `pre_tool_check.decided` record adds to its own fields (tool, category, declared
/// authorization, domain, recommended route; the agent is its actor) so that [`replay`] can
/// route it again: the effective authorization after evidence lowering, how many refs there
/// were, and the codes of the issues routing acts on, in order. Kept small: a check is the
/// trail's most frequent event.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReplayEvidence {
    /// The declared state after evidence lowering.
    pub effective: AuthorizationState,
    /// Number of refs.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub refs: usize,
    /// The issues routing acts on (leaks, contradictions, staleness), in ref order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub issues: Vec<EvidenceIssueCode>,
}

/// The declared facts of a recorded check, as its record keeps them.
#[derive(Debug, Clone)]
pub struct RecordedCheck<'a> {
    /// The tool name.
    pub tool_name: &'a str,
    /// The declared category.
    pub tool_category: ToolCategory,
    /// The declared authorization state.
    pub authorization_state: AuthorizationState,
    /// The risk domain.
    pub risk_domain: RiskDomain,
    /// The runtime's recommendation.
    pub recommended_route: Route,
    /// The asking agent (the record's actor).
    pub agent: &'a str,
}

impl CheckInputs {
    /// The routing inputs of a recorded check: its declared facts and its [`ReplayEvidence`].
    pub fn from_record(r: &RecordedCheck<'_>, evidence: &ReplayEvidence) -> CheckInputs {
        CheckInputs {
            tool_name: r.tool_name.to_owned(),
            tool_category: r.tool_category,
            authorization_state: r.authorization_state,
            risk_domain: r.risk_domain,
            recommended_route: r.recommended_route,
            agent_id: Some(r.agent.to_owned()),
            evidence: evidence.summary(),
        }
    }
}

/// One evidence issue without its message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IssueSummary {
    /// Index of the ref in `evidence_refs`.
    pub index: usize,
    /// JSON path of the field, e.g. `evidence_refs[1].summary` (a path, never its content).
    pub field: String,
    /// What is wrong.
    pub code: EvidenceIssueCode,
}

impl EvidenceSummary {
    /// The summary of `assessment`.
    pub fn of(assessment: &EvidenceAssessment) -> EvidenceSummary {
        let integrity = &assessment.integrity;
        EvidenceSummary {
            effective_authorization: assessment.effective_authorization,
            support: assessment.support.clone(),
            total: integrity.total,
            structured: integrity.structured,
            verified: integrity.verified,
            stale: integrity.stale,
            unredacted: integrity.unredacted,
            issues: (integrity.issues.iter())
                .map(|i| IssueSummary {
                    index: i.index,
                    field: i.field.clone(),
                    code: i.code,
                })
                .collect(),
        }
    }

    /// The assessment rebuilt, with empty messages and no lowering reasons (routing reads
    /// neither).
    pub fn assessment(&self) -> EvidenceAssessment {
        let issues = (self.issues.iter())
            .map(|i| EvidenceIssue {
                index: i.index,
                field: i.field.clone(),
                code: i.code,
                message: String::new(),
            })
            .collect();
        EvidenceAssessment {
            integrity: EvidenceIntegrity {
                total: self.total,
                structured: self.structured,
                verified: self.verified,
                stale: self.stale,
                unredacted: self.unredacted,
                issues,
            },
            effective_authorization: self.effective_authorization,
            lowering_reasons: Vec::new(),
            support: self.support.clone(),
        }
    }
}

impl ReplayEvidence {
    /// Whether routing acts on issues with `code`.
    pub(super) fn routes(code: EvidenceIssueCode) -> bool {
        code.level() == "error"
    }

    /// The summary routing reads (no support, no other counts, no field paths).
    pub(super) fn summary(&self) -> EvidenceSummary {
        EvidenceSummary {
            effective_authorization: self.effective,
            support: Vec::new(),
            total: self.refs,
            structured: 0,
            verified: 0,
            stale: 0,
            unredacted: 0,
            issues: (self.issues.iter())
                .enumerate()
                .map(|(index, &code)| IssueSummary {
                    index,
                    field: String::new(),
                    code,
                })
                .collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;
    use crate::domain::contract::aana::Event;
    use crate::domain::policy::model::Policy;
    use crate::domain::routing::gate::{check, replay};

    /// The events of AANA's published fixtures (`tests/fixtures/aana/`), which the conformance
    /// suite routes.
    fn fixture_events() -> Vec<Value> {
        let doc = |text: &str| -> Value { serde_json::from_str(text).expect("fixture JSON") };
        let examples = doc(include_str!(
            "../../../tests/fixtures/aana/agent_tool_precheck_examples.json"
        ));
        let cases = doc(include_str!(
            "../../../tests/fixtures/aana/agent_action_contract_cases.json"
        ));
        let mut events: Vec<Value> = (examples["examples"].as_array().into_iter().flatten())
            .chain(cases["cases"].as_array().into_iter().flatten())
            .map(|e| e["event"].clone())
            .collect();
        for single in [
            include_str!("../../../tests/fixtures/aana/agent_tool_precheck_private_read.json"),
            include_str!("../../../tests/fixtures/aana/pre_tool_check_confirmed_write.json"),
            include_str!("../../../tests/fixtures/aana/pre_tool_check_write_ask.json"),
        ] {
            events.push(doc(single));
        }
        assert!(events.len() >= 12, "fixtures lost: {}", events.len());
        events
    }

    fn structured(kind: &str, trust: &str) -> Value {
        json!({
            "source_id": format!("{kind}.ref"), "kind": kind, "trust_tier": trust,
            "redaction_status": "redacted", "summary": "Redacted summary.",
            "provenance": "connector", "freshness": {"status": "fresh"}
        })
    }

    /// Evidence lists that exercise every lowering rule and overlay.
    fn evidence_sets() -> Vec<Vec<Value>> {
        let mut stale = structured("auth_event", "verified");
        stale["freshness"] = json!({"status": "stale"});
        let mut contradicts = structured("tool_result", "verified");
        contradicts["contradicts"] = json!(["claim-1"]);
        let mut leak = structured("tool_result", "runtime");
        leak["summary"] = json!("password=hunter2");
        let mut sensitive = structured("user_message", "user_claimed");
        sensitive["redaction_status"] = json!("sensitive");
        vec![
            vec![],
            vec![json!("ticket-7")],
            vec![
                structured("auth_event", "verified"),
                structured("policy", "verified"),
                structured("approval", "verified"),
            ],
            vec![structured("auth_event", "user_claimed")],
            vec![structured("policy", "verified"), stale],
            vec![contradicts, json!("ticket-8")],
            vec![leak],
            vec![sensitive, structured("approval", "runtime")],
        ]
    }

    /// A grid of events over categories, states, tools, agents, evidence and recommendations.
    fn grid_events() -> Vec<Value> {
        let mut out = Vec::new();
        for category in ["public_read", "private_read", "write", "unknown"] {
            for state in [
                "none",
                "user_claimed",
                "authenticated",
                "validated",
                "confirmed",
            ] {
                for (i, evidence) in evidence_sets().into_iter().enumerate() {
                    let tool = ["crm.get_contact", "crm.delete_contact", "docs.search"][i % 3];
                    let domain = ["customer_support", "finance"][i % 2];
                    for agent in [None, Some("support-agent"), Some("other-agent")] {
                        for recommended in ["accept", "defer"] {
                            let mut e = json!({
                                "tool_name": tool, "tool_category": category,
                                "authorization_state": state, "evidence_refs": evidence,
                                "risk_domain": domain, "proposed_arguments": {"id": "x"},
                                "recommended_route": recommended
                            });
                            if let Some(agent) = agent {
                                e["agent_id"] = json!(agent);
                            }
                            out.push(e);
                        }
                    }
                }
            }
        }
        out
    }

    fn policies() -> Vec<Policy> {
        let lanes = r#"
[policy]
name = "lanes"
[tools."crm.*"]
category = "c"
allowed_agents = ["support-agent"]
[tools."send_email"]
category = "c"
allowed_agents = ["demo-agent"]
[tools."docs.search"]
category = "b"
"#;
        let floors = r#"
[policy]
name = "floors"
[tools."crm.get_contact"]
category = "b"
tool_category = "write"
risk = "high"
[tools."crm.*"]
category = "a"
tool_category = "private_read"
[tools."docs.*"]
category = "b"
tool_category = "private_read"
risk = "high"
[tools."get_*"]
category = "b"
tool_category = "write"
risk = "high"
[tools."search_public_docs"]
category = "c"
tool_category = "unknown"
"#;
        let parse = |src: &str| Policy::from_toml_str(src).expect("test policy parses");
        vec![Policy::builtin(), parse(lanes), parse(floors)]
    }

    #[test]
    fn replay_routes_as_check_does() {
        let events: Vec<Event> = (fixture_events().into_iter().chain(grid_events()))
            .map(|v| Event::parse(&v).expect("test event is schema-valid"))
            .collect();
        let mut routes = std::collections::BTreeSet::new();
        for policy in policies() {
            for event in &events {
                let d = check(event, &policy);
                let r = replay(&CheckInputs::of(event), &policy);
                let expected = Replayed {
                    route: d.route,
                    rule: d.rule.clone(),
                    blockers: d.hard_blockers.iter().map(|b| b.code).collect(),
                    policy_rule: d.classification.and_then(|c| c.policy_rule),
                };
                assert_eq!(r, expected, "{event:?} under {}", policy.version());
                routes.insert((r.route, r.rule));
                // From the record a decision under the built-in policy keeps (the service
                // always names the asking agent in the event).
                let Some(agent) = event.agent_id.as_deref() else {
                    continue;
                };
                let recorded = check(event, &Policy::builtin());
                let evidence = ReplayEvidence::of(&recorded).expect("a valid event's");
                let facts = RecordedCheck {
                    tool_name: &event.tool_name,
                    tool_category: event.tool_category,
                    authorization_state: event.authorization_state,
                    risk_domain: event.risk_domain,
                    recommended_route: event.recommended_route,
                    agent,
                };
                let from_record = replay(&CheckInputs::from_record(&facts, &evidence), &policy);
                assert_eq!(from_record, expected, "{event:?} from its record");
            }
        }
        // The grid is varied enough to matter: many distinct route/rule outcomes.
        assert!(routes.len() >= 15, "{routes:?}");
    }

    #[test]
    fn check_inputs_round_trip_through_json() {
        for v in fixture_events().into_iter().chain(grid_events()) {
            let event = Event::parse(&v).expect("valid");
            let inputs = CheckInputs::of(&event);
            let text = serde_json::to_string(&inputs).expect("serializes");
            let back: CheckInputs = serde_json::from_str(&text).expect("reads back");
            assert_eq!(back, inputs, "{text}");
        }
    }

    #[test]
    fn check_inputs_carry_no_free_text() {
        let secret = "sk_live_4eC39HqLyjWDarjtT1zdp7dc";
        let v = json!({
            "agent_id": "support-agent",
            "user_intent": "refund Jane Doe",
            "tool_name": "send_refund",
            "tool_category": "write",
            "authorization_state": "confirmed",
            "evidence_refs": [
                format!("note {secret}"),
                {"source_id": "approval-1", "kind": "approval", "trust_tier": "verified",
                 "redaction_status": "redacted", "summary": format!("stripe {secret}"),
                 "provenance": "jane.doe@example.com", "freshness": {"status": "fresh"}}
            ],
            "risk_domain": "finance",
            "proposed_arguments": {"amount": "4242 hunter2"},
            "recommended_route": "accept"
        });
        let event = Event::parse(&v).expect("valid");
        let inputs = CheckInputs::of(&event);
        let text = serde_json::to_string(&inputs).expect("serializes");
        for leak in [
            secret,
            "stripe",
            "note",
            "Jane",
            "jane.doe",
            "hunter2",
            "approval-1",
        ] {
            assert!(!text.contains(leak), "{leak} leaked: {text}");
        }
        let codes: Vec<_> = inputs.evidence.issues.iter().map(|i| i.code).collect();
        assert!(codes.contains(&EvidenceIssueCode::LeaksSecret), "{codes:?}");
        assert!(text.contains("evidence_refs[1].summary"), "{text}");
        assert_eq!(replay(&inputs, &Policy::builtin()).route, Route::Refuse);
    }
}
