//! The route engine, cell by cell: every `tool_category` x `authorization_state` x risk cell
//! of the ladder, every evidence overlay, the runtime's recommendation, schema-invalid events,
//! and the audit-safe copy.

use countersign::domain::contract::vocab::{AuthorizationState, ToolCategory};
use countersign::domain::routing::gate::GateDecision;
use countersign::domain::routing::scan::WITHHELD;
use countersign::domain::routing::verdict::BlockerCode;
use countersign::domain::{Decision, Event, Policy, Route, WireEnum, check, check_value};
use serde_json::{Value, json};

fn structured(kind: &str, trust: &str) -> Value {
    json!({
        "source_id": format!("{kind}.ref"), "kind": kind, "trust_tier": trust,
        "redaction_status": "redacted", "summary": "Redacted summary.",
        "provenance": "connector", "freshness": {"status": "fresh"}
    })
}

/// Evidence that fully supports `state`, so the ladder alone decides.
fn supporting_evidence(state: AuthorizationState) -> Vec<Value> {
    let mut refs = vec![structured("policy", "verified")];
    if state >= AuthorizationState::Authenticated {
        refs.push(structured("auth_event", "verified"));
    }
    if state == AuthorizationState::Confirmed {
        refs.push(structured("approval", "verified"));
    }
    refs
}

fn event(category: &str, state: &str, domain: &str, evidence: Vec<Value>) -> Value {
    json!({
        "tool_name": "acme.tool",
        "tool_category": category,
        "authorization_state": state,
        "evidence_refs": evidence,
        "risk_domain": domain,
        "proposed_arguments": {"id": "redacted"},
        "recommended_route": "accept"
    })
}

fn decide(v: &Value) -> Decision {
    let d = check_value(v, &Policy::builtin());
    assert!(
        !d.hard_blockers
            .iter()
            .any(|b| b.code == BlockerCode::SchemaInvalid),
        "schema-invalid test event: {:?}",
        d.hard_blockers
    );
    d
}

fn codes(d: &Decision) -> Vec<BlockerCode> {
    d.hard_blockers.iter().map(|b| b.code).collect()
}

#[test]
fn every_ladder_cell() {
    use Route::{Accept as A, Ask as K, Defer as D};
    // Rows: public_read, private_read, write, unknown. Columns: none, user_claimed,
    // authenticated, validated, confirmed.
    let normal = [
        [A, A, A, A, A],
        [D, K, A, A, A],
        [K, K, K, K, A],
        [D, D, D, D, D],
    ];
    let high = [
        [A, A, A, A, A],
        [D, K, A, A, A],
        [D, D, D, K, A],
        [D, D, D, D, D],
    ];
    for (table, domain) in [(normal, "customer_support"), (high, "finance")] {
        for (row, category) in ToolCategory::ALL.iter().enumerate() {
            for (col, state) in AuthorizationState::ALL.iter().enumerate() {
                let v = event(
                    category.as_str(),
                    state.as_str(),
                    domain,
                    supporting_evidence(*state),
                );
                let d = decide(&v);
                let want = table[row][col];
                assert_eq!(
                    d.route, want,
                    "{category} at {state} in {domain}: {:#?}",
                    d.reasons
                );
                assert_eq!(d.gate_decision == GateDecision::Pass, want == A);
                assert_eq!(d.allows_execution(), want == A);
                assert_eq!(
                    d.hard_blockers.is_empty(),
                    want == A,
                    "{category} {state} {domain}"
                );
                let report = d.authorization_report.expect("report");
                assert_eq!(report.effective, *state, "supported states are not lowered");
                let classification = d.classification.expect("classification");
                assert_eq!(classification.high_risk, domain == "finance");
            }
        }
    }
}

#[test]
fn ladder_blocker_codes_and_rules() {
    let cases = [
        (
            "private_read",
            "none",
            "research",
            BlockerCode::AuthorizationBelowRequired,
            "builtin:private_read_requires_authenticated",
        ),
        (
            "private_read",
            "user_claimed",
            "research",
            BlockerCode::AuthorizationBelowRequired,
            "builtin:private_read_requires_authenticated",
        ),
        (
            "write",
            "authenticated",
            "research",
            BlockerCode::AuthorizationBelowRequired,
            "builtin:write_requires_confirmed",
        ),
        (
            "write",
            "validated",
            "research",
            BlockerCode::ConfirmationRequired,
            "builtin:write_requires_confirmed",
        ),
        (
            "write",
            "user_claimed",
            "legal",
            BlockerCode::AuthorizationBelowRequired,
            "builtin:high_risk_write_requires_validation",
        ),
        (
            "unknown",
            "confirmed",
            "research",
            BlockerCode::UnknownToolCategory,
            "builtin:unknown_not_executable",
        ),
    ];
    for (category, state, domain, code, rule) in cases {
        let s = AuthorizationState::parse(state).expect("state");
        let d = decide(&event(category, state, domain, supporting_evidence(s)));
        assert_eq!(codes(&d), [code], "{category} {state}");
        assert_eq!(d.rule, rule, "{category} {state}");
    }
}

#[test]
fn every_high_risk_domain_defers_unvalidated_writes() {
    for domain in [
        "finance",
        "healthcare",
        "pharma",
        "legal",
        "security",
        "hr",
        "devops",
        "unknown",
    ] {
        let d = decide(&event(
            "write",
            "authenticated",
            domain,
            supporting_evidence(AuthorizationState::Authenticated),
        ));
        assert_eq!(d.route, Route::Defer, "{domain}");
    }
    for domain in [
        "education",
        "commerce",
        "customer_support",
        "research",
        "personal_productivity",
        "public_information",
    ] {
        let d = decide(&event(
            "write",
            "authenticated",
            domain,
            supporting_evidence(AuthorizationState::Authenticated),
        ));
        assert_eq!(d.route, Route::Ask, "{domain}");
    }
}

#[test]
fn destructive_names_raise_write_risk_and_refuse_unknown_tools() {
    let mut v = event(
        "write",
        "user_claimed",
        "customer_support",
        supporting_evidence(AuthorizationState::UserClaimed),
    );
    v["tool_name"] = json!("crm.deleteContact");
    let d = decide(&v);
    assert_eq!(d.route, Route::Defer);
    assert!(d.classification.expect("classification").high_risk);

    let mut v = event(
        "unknown",
        "confirmed",
        "research",
        supporting_evidence(AuthorizationState::Confirmed),
    );
    v["tool_name"] = json!("purge_backups");
    let d = decide(&v);
    assert_eq!(d.route, Route::Refuse);
    assert_eq!(codes(&d), [BlockerCode::UnknownDestructiveTool]);
}

fn with_ref(category: &str, state: AuthorizationState, extra: Value) -> Value {
    let mut refs = supporting_evidence(state);
    refs.push(extra);
    event(category, state.as_str(), "research", refs)
}

#[test]
fn stale_evidence_defers_where_the_rule_needs_it() {
    let mut stale = structured("tool_result", "verified");
    stale["freshness"] = json!({"status": "stale"});
    for category in ["private_read", "write"] {
        let d = decide(&with_ref(
            category,
            AuthorizationState::Confirmed,
            stale.clone(),
        ));
        assert_eq!(d.route, Route::Defer, "{category}");
        assert_eq!(codes(&d), [BlockerCode::EvidenceStale]);
        assert_eq!(
            d.hard_blockers[0].field.as_deref(),
            Some("evidence_refs[3].freshness")
        );
        assert_eq!(d.evidence_integrity.expect("integrity").stale, 1);
    }
    // A public read does not depend on its evidence: noted, still accepted.
    let d = decide(&with_ref("public_read", AuthorizationState::None, stale));
    assert_eq!(d.route, Route::Accept);
    assert!(d.reasons.iter().any(|r| r.contains("stale evidence noted")));
    // "Fresh" but older than its own limit is stale.
    let mut old = structured("auth_event", "verified");
    old["freshness"] = json!({"status": "fresh", "age_hours": 30, "max_age_hours": 24});
    let d = decide(&with_ref(
        "private_read",
        AuthorizationState::Authenticated,
        old,
    ));
    assert_eq!(d.route, Route::Defer);
}

#[test]
fn contradictory_evidence_defers() {
    let mut contra = structured("system_state", "verified");
    contra["contradicts"] = json!(["claim.account_owner"]);
    for category in ["public_read", "private_read", "write"] {
        let d = decide(&with_ref(
            category,
            AuthorizationState::Confirmed,
            contra.clone(),
        ));
        assert_eq!(d.route, Route::Defer, "{category}");
        assert_eq!(codes(&d), [BlockerCode::EvidenceContradictory]);
        assert_eq!(d.rule, "builtin:evidence_contradictory");
    }
}

#[test]
fn missing_evidence_defers_where_the_rule_needs_it() {
    for (category, state) in [("private_read", "authenticated"), ("write", "confirmed")] {
        let d = decide(&event(category, state, "research", vec![]));
        assert_eq!(d.route, Route::Defer, "{category}");
        assert_eq!(codes(&d), [BlockerCode::EvidenceMissing]);
    }
    // Below the required state both apply: the write asks and the missing evidence defers.
    let d = decide(&event("write", "user_claimed", "research", vec![]));
    assert_eq!(d.route, Route::Defer);
    assert_eq!(
        codes(&d),
        [
            BlockerCode::AuthorizationBelowRequired,
            BlockerCode::EvidenceMissing
        ]
    );
    // Seed: a public read with no evidence is accepted.
    assert_eq!(
        decide(&event("public_read", "none", "research", vec![])).route,
        Route::Accept
    );
}

#[test]
fn secret_leaks_refuse_wherever_they_appear() {
    let leaks = [
        (
            "summary",
            json!("Session established with password=hunter2"),
        ),
        (
            "summary",
            json!("-----BEGIN OPENSSH PRIVATE KEY----- b3BlbnNzaC1rZXk"),
        ),
        (
            "source_id",
            json!("https://hooks.example.com/cb?token=8f14e45fceea167a"),
        ),
        (
            "summary",
            json!("Authorization: Bearer abcdef0123456789abcdef"),
        ),
        ("provenance", json!("sk_live_4eC39HqLyjWDarjtT1zdp7dc")),
    ];
    for (field, text) in leaks {
        let mut r = structured("tool_result", "verified");
        r[field] = text.clone();
        let d = decide(&with_ref("public_read", AuthorizationState::None, r));
        assert_eq!(d.route, Route::Refuse, "{text}");
        assert_eq!(codes(&d), [BlockerCode::EvidenceLeaksSecret], "{text}");
        assert_eq!(
            d.hard_blockers[0].field.as_deref(),
            Some(format!("evidence_refs[1].{field}").as_str())
        );
        // Neither the blocker nor the audit record repeats the secret.
        let out = serde_json::to_string(&d).expect("serializes");
        assert!(!out.contains(text.as_str().expect("str")), "{out}");
    }
    // In a plain string ref too.
    let d = decide(&event(
        "public_read",
        "none",
        "research",
        vec![json!("api_key: a8f5f167f44f4964e6c9")],
    ));
    assert_eq!(codes(&d), [BlockerCode::EvidenceLeaksSecret]);
    assert_eq!(
        d.audit_event.expect("audit").evidence_refs[0].source_id,
        WITHHELD
    );
}

#[test]
fn personal_data_in_evidence_refuses() {
    for (status, text) in [
        ("public", "Customer jane.doe@example.com asked for a refund"),
        ("unknown", "Callback number +1 415 555 0100"),
        ("redacted", "SSN 123-45-6789 verified"),
        ("public", "Card 4111 1111 1111 1111 charged"),
    ] {
        let mut r = structured("user_message", "user_claimed");
        r["redaction_status"] = json!(status);
        r["summary"] = json!(text);
        let d = decide(&with_ref("write", AuthorizationState::Confirmed, r));
        assert_eq!(d.route, Route::Refuse, "{text}");
        assert_eq!(
            codes(&d),
            [BlockerCode::EvidenceLeaksPersonalData],
            "{text}"
        );
    }
    // Masked data is fine.
    let mut r = structured("user_message", "user_claimed");
    r["summary"] = json!("Customer j***@example.com asked for a refund");
    assert_eq!(
        decide(&with_ref("public_read", AuthorizationState::None, r)).route,
        Route::Accept
    );
}

#[test]
fn sensitive_evidence_with_content_refuses() {
    let mut r = structured("tool_result", "verified");
    r["redaction_status"] = json!("sensitive");
    let d = decide(&with_ref(
        "public_read",
        AuthorizationState::None,
        r.clone(),
    ));
    assert_eq!(codes(&d), [BlockerCode::EvidenceSensitiveContent]);
    assert_eq!(d.route, Route::Refuse);
    // An opaque pointer to sensitive data, with no content, is counted but not a leak.
    r.as_object_mut().expect("object").remove("summary");
    let d = decide(&with_ref("public_read", AuthorizationState::None, r));
    assert_eq!(d.route, Route::Accept);
    assert_eq!(d.evidence_integrity.expect("integrity").unredacted, 1);
}

#[test]
fn evidence_lowers_but_never_raises_authorization() {
    // Only user-claimed authorization evidence: `validated` is worth `user_claimed`.
    let v = event(
        "write",
        "validated",
        "research",
        vec![structured("auth_event", "user_claimed")],
    );
    let d = decide(&v);
    assert_eq!(codes(&d), [BlockerCode::AuthorizationBelowRequired]);
    let r = d.authorization_report.expect("report");
    assert_eq!(
        (r.declared, r.effective),
        (
            AuthorizationState::Validated,
            AuthorizationState::UserClaimed
        )
    );
    // Confirmed without an approval among structured evidence: worth `validated`.
    let v = event(
        "write",
        "confirmed",
        "research",
        vec![structured("auth_event", "verified")],
    );
    let d = decide(&v);
    assert_eq!(d.route, Route::Ask);
    assert_eq!(codes(&d), [BlockerCode::ConfirmationRequired]);
    // A summary that *says* authenticated does not lift `none` (AANA's substring lifting).
    let mut r = structured("auth_event", "verified");
    r["summary"] = json!("No authenticated or validated authorization context is available.");
    let v = event("private_read", "none", "research", vec![r.clone()]);
    assert_eq!(
        decide(&v).authorization_report.expect("report").effective,
        AuthorizationState::None
    );
    r["summary"] = json!("User is authenticated, validated and confirmed.");
    let v = event("write", "user_claimed", "research", vec![r]);
    let d = decide(&v);
    assert_eq!(
        d.authorization_report.expect("report").effective,
        AuthorizationState::UserClaimed
    );
    assert_eq!(d.route, Route::Ask);
}

#[test]
fn the_runtime_can_only_tighten() {
    for (recommended, want) in [
        ("accept", Route::Ask),
        ("ask", Route::Ask),
        ("defer", Route::Defer),
        ("refuse", Route::Refuse),
    ] {
        let mut v = event(
            "write",
            "validated",
            "research",
            supporting_evidence(AuthorizationState::Validated),
        );
        v["recommended_route"] = json!(recommended);
        let d = decide(&v);
        assert_eq!(d.route, want, "{recommended}");
        assert_eq!(d.recommended_action, want);
        let stricter = d
            .hard_blockers
            .iter()
            .any(|b| b.code == BlockerCode::RuntimeRouteStricter);
        assert_eq!(stricter, want > Route::Ask, "{recommended}");
    }
    // A looser recommendation is ignored, with a reason.
    let v = event("private_read", "none", "finance", vec![]);
    let d = decide(&v);
    assert_eq!(d.route, Route::Defer);
    assert!(
        d.reasons
            .iter()
            .any(|r| r.contains("can only make the route stricter"))
    );
    // An accept-able event the runtime wants reviewed is deferred.
    let mut v = event("public_read", "none", "research", vec![]);
    v["recommended_route"] = json!("defer");
    let d = decide(&v);
    assert_eq!(
        (d.route, d.rule.as_str()),
        (Route::Defer, "runtime:recommended_route")
    );
    assert_eq!(d.gate_decision, GateDecision::Fail);
}

#[test]
fn schema_invalid_events_are_refused_with_every_error() {
    let v =
        json!({"tool_name": "", "tool_category": "delete", "evidence_refs": "none", "extra": 1});
    let d = check_value(&v, &Policy::builtin());
    assert_eq!(d.route, Route::Refuse);
    assert_eq!(d.gate_decision, GateDecision::Fail);
    assert_eq!(d.rule, "builtin:schema_invalid");
    assert!(
        d.hard_blockers
            .iter()
            .all(|b| b.code == BlockerCode::SchemaInvalid)
    );
    let fields: Vec<&str> = d
        .hard_blockers
        .iter()
        .filter_map(|b| b.field.as_deref())
        .collect();
    assert_eq!(
        fields,
        [
            "tool_name",
            "tool_category",
            "authorization_state",
            "evidence_refs",
            "risk_domain",
            "proposed_arguments",
            "recommended_route",
            "extra"
        ]
    );
    assert!(d.audit_event.is_none() && d.authorization_report.is_none());
    assert_eq!(d.policy_version, Policy::builtin().version());
    let d = countersign::domain::routing::gate::check_json_str("{not json", &Policy::builtin());
    assert_eq!((d.route, d.hard_blockers.len()), (Route::Refuse, 1));
}

#[test]
fn the_audit_event_is_safe() {
    let v = json!({
        "request_id": "req-1",
        "agent_id": "support-agent",
        "user_intent": "Email bob@example.com the invoice",
        "authorization_subject": {"subject_type": "account", "subject_ref": "acct_redacted"},
        "tool_name": "email.send",
        "tool_category": "write",
        "authorization_state": "confirmed",
        "evidence_refs": [
            "draft:42",
            {"source_id": "approval.1", "kind": "approval", "trust_tier": "verified",
             "redaction_status": "redacted", "summary": "User confirmed the send.",
             "provenance": "connector", "freshness": {"status": "fresh"}, "supports": ["send"]}
        ],
        "risk_domain": "customer_support",
        "proposed_arguments": {"to": "bob@example.com", "body": "password=hunter2", "attachments": ["inv.pdf"]},
        "recommended_route": "accept"
    });
    let d = decide(&v);
    assert_eq!(d.route, Route::Accept, "{:#?}", d.reasons);
    let audit = d.audit_event.expect("audit");
    assert_eq!(audit.proposed_argument_keys, ["attachments", "body", "to"]);
    assert_eq!(audit.user_intent.as_deref(), Some(WITHHELD));
    assert_eq!(audit.subject_ref.as_deref(), Some("acct_redacted"));
    assert_eq!(audit.evidence_refs[0].source_id, "draft:42");
    assert_eq!(audit.evidence_refs[1].supports, 1);
    assert!(audit.evidence_refs[1].has_summary);
    let text = serde_json::to_string(&audit).expect("serializes");
    for secret in ["bob@example.com", "hunter2", "inv.pdf", "User confirmed"] {
        assert!(!text.contains(secret), "{secret} leaked into {text}");
    }
}

#[test]
fn decisions_are_deterministic_and_serialize_the_envelope() {
    let v = event(
        "write",
        "validated",
        "finance",
        supporting_evidence(AuthorizationState::Validated),
    );
    let e = Event::parse(&v).expect("valid");
    let a = serde_json::to_value(check(&e, &Policy::builtin())).expect("serializes");
    let b = serde_json::to_value(check(&e, &Policy::builtin())).expect("serializes");
    assert_eq!(a, b);
    for key in [
        "route",
        "gate_decision",
        "recommended_action",
        "hard_blockers",
        "reasons",
        "authorization_report",
        "evidence_integrity",
        "classification",
        "policy_version",
        "rule",
        "audit_event",
    ] {
        assert!(a.get(key).is_some(), "{key}");
    }
    // AANA's words and types: `fail`, blocker codes as strings, messages beside them.
    assert_eq!(a["gate_decision"], "fail");
    assert_eq!(a["hard_blockers"][0], "confirmation_required");
    assert_eq!(a["aix"]["hard_blockers"], a["hard_blockers"]);
    assert_eq!(a["blocker_details"][0]["code"], "confirmation_required");
    assert!(a["blocker_details"][0]["message"].is_string());
    assert_eq!(a["authorization_report"]["required"], "confirmed");
    assert_eq!(a["authorization_report"]["declared_state"], "validated");
    assert_eq!(a["authorization_report"]["downgraded"], false);
}
