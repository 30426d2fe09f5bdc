//! Unit tests of the tool proposal parser.

use super::*;
use serde_json::json;

pub(crate) fn valid() -> Value {
    json!({
        "proposal_id": "7b0e7a52-8f5e-4c36-9a57-1f1d2f9b6c11",
        "proposed_by": "sales-agent",
        "timestamp": "2026-11-22T10:00:00Z",
        "domain": "sales",
        "tool": {"name": "crm.update_contact", "version": "2024-01"},
        "intent": {"summary": "Update the contact's email", "reasoning": "The customer asked."},
        "parameters": {"contact_id": "c-1", "email": "a@example.com"},
        "risk_level": "medium",
        "approval_required": true,
        "compliance_context": {"gdpr": true, "hipaa": false},
        "idempotency_key": "k-1",
        "rollback_supported": true
    })
}

fn fields(v: &Value) -> Vec<String> {
    ToolProposal::parse(v)
        .expect_err("must be rejected")
        .into_iter()
        .map(|e| e.field)
        .collect()
}

#[test]
fn parses_the_seed_004_shape() {
    let p = ToolProposal::parse(&valid()).expect("valid");
    assert_eq!(p.tool.name, "crm.update_contact");
    assert_eq!(p.risk_level, RiskLevel::Medium);
    assert!(p.compliance_context.gdpr);
    assert_eq!(p.effective_authorization(), AuthorizationState::None);
}

#[test]
fn parses_the_optional_seed_003_and_000_fields() {
    let mut v = valid();
    let o = v.as_object_mut().expect("object");
    o.insert("blast_radius".into(), json!("medium"));
    o.insert(
        "target_refs".into(),
        json!([{"type": "crm_contact", "id": "c-1"}]),
    );
    o.insert(
        "rollback_plan".into(),
        json!({"type": "revert", "instructions": "set it back", "timeout_ms": 5000}),
    );
    o.insert("tool_category".into(), json!("write"));
    o.insert("authorization_state".into(), json!("confirmed"));
    o.insert("risk_domain".into(), json!("commerce"));
    o.insert(
        "authorization".into(),
        json!({"mode": "hitl", "approver": "sales-lead"}),
    );
    o.insert(
        "execution".into(),
        json!({"timeout_ms": 30000, "retry_policy": {"max_retries": 2, "backoff_ms": 500}}),
    );
    o.insert(
        "preconditions".into(),
        json!([{"type": "resource_state", "expect": "active"}]),
    );
    o.insert("constraints".into(), json!({"change_window": "weekdays"}));
    o.insert("case_id".into(), json!("case-7"));
    o.insert("model".into(), json!("gpt-x"));
    o.insert(
        "evidence_refs".into(),
        json!(["draft:1", {"source_id": "auth.session", "kind": "auth_event", "trust_tier": "verified",
                           "redaction_status": "redacted", "freshness": {"status": "fresh"}, "provenance": "connector"}]),
    );
    let p = ToolProposal::parse(&v).expect("valid");
    assert_eq!(p.blast_radius, Some(BlastRadius::Medium));
    assert_eq!(p.target_refs[0].kind, "crm_contact");
    assert_eq!(p.evidence_refs.len(), 2);
    assert_eq!(
        p.authorization.as_ref().map(|a| a.mode),
        Some(AuthorizationMode::Hitl)
    );
    assert_eq!(
        p.execution
            .and_then(|e| e.retry_policy)
            .map(|r| r.max_retries),
        Some(2)
    );
    assert_eq!(p.run.case_id.as_deref(), Some("case-7"));
    assert_eq!(p.observability.model.as_deref(), Some("gpt-x"));
    assert!(p.facts().has_rollback_plan);
    let stored = serde_json::to_value(&p).expect("serialize");
    assert_eq!(
        serde_json::from_value::<ToolProposal>(stored).expect("deserialize"),
        p
    );
    // An agent cannot declare itself confirmed; only a reviewer's approval can.
    assert_eq!(p.effective_authorization(), AuthorizationState::Validated);
}

#[test]
fn lists_every_missing_field() {
    let errs = fields(&json!({}));
    for f in [
        "proposal_id",
        "proposed_by",
        "timestamp",
        "domain",
        "tool",
        "intent",
        "parameters",
        "risk_level",
        "approval_required",
        "compliance_context",
        "idempotency_key",
        "rollback_supported",
    ] {
        assert!(errs.contains(&f.to_owned()), "missing {f} in {errs:?}");
    }
}

#[test]
fn unknown_enum_values_and_fields_fail_closed() {
    let mut v = valid();
    v["risk_level"] = json!("catastrophic");
    v["blast_radius"] = json!("galactic");
    v["authorization_state"] = json!("root");
    v["surprise"] = json!(1);
    let errs = ToolProposal::parse(&v).expect_err("rejected");
    let got: Vec<(&str, &str)> = errs
        .iter()
        .map(|e| (e.field.as_str(), e.message.as_str()))
        .collect();
    assert!(got.contains(&(
        "risk_level",
        "unknown value `catastrophic`; must be one of `low`, `medium`, `high`"
    )));
    assert!(got.iter().any(|(f, _)| *f == "blast_radius"));
    assert!(got.iter().any(|(f, _)| *f == "authorization_state"));
    assert!(got.contains(&("surprise", "is not a known field")));
}

#[test]
fn wrong_types_name_the_field_and_the_type() {
    let mut v = valid();
    v["tool"] = json!("crm.update_contact");
    v["approval_required"] = json!("yes");
    v["parameters"] = json!([1]);
    v["target_refs"] = json!([{"type": "x"}, 3]);
    let errs = ToolProposal::parse(&v).expect_err("rejected");
    let got: Vec<String> = errs.iter().map(ToString::to_string).collect();
    assert!(
        got.contains(&"tool: must be an object, got string".to_owned()),
        "{got:?}"
    );
    assert!(got.contains(&"approval_required: must be a boolean, got string".to_owned()));
    assert!(got.contains(&"parameters: must be an object, got array".to_owned()));
    assert!(got.contains(&"target_refs[0].id: is required".to_owned()));
    assert!(got.contains(&"target_refs[1]: must be an object, got number".to_owned()));
}

#[test]
fn rejects_bad_ids_times_and_names() {
    let mut v = valid();
    v["proposal_id"] = json!("not-a-uuid");
    v["timestamp"] = json!("yesterday");
    v["proposed_by"] = json!("Sales Agent");
    v["idempotency_key"] = json!("");
    assert_eq!(
        fields(&v),
        ["proposal_id", "proposed_by", "timestamp", "idempotency_key"]
    );
}

#[test]
fn round_trips_through_storage_json() {
    let p = ToolProposal::parse(&valid()).expect("valid");
    let stored = serde_json::to_value(&p).expect("serialize");
    let back: ToolProposal = serde_json::from_value(stored).expect("deserialize");
    assert_eq!(p, back);
}
