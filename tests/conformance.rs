//! Conformance with AANA Agent Action Contract v1: the published schema, cases and examples
//! (`shared/conformance/aana/`, copied into `tests/fixtures/aana/`), AANA's own observed
//! results, and the examples in seed 000's text (`tests/fixtures/seed000/`). Where AANA's
//! observed code and the seed's text disagree, the seed wins and the test says why.

use std::collections::BTreeMap;
use std::fs;

#[path = "common/aana.rs"]
mod aana;
use aana::{load, observed_event, sdk_allows_execution};

use countersign::domain::contract::aana::{
    EvidenceKind, FreshnessStatus, OPTIONAL_FIELDS, REQUIRED_FIELDS, RedactionStatus,
    SCHEMA_VERSION, SubjectType, TrustTier,
};
use countersign::domain::contract::vocab::{AuthorizationState, RiskDomain, ToolCategory};
use countersign::domain::routing::gate::GateDecision;
use countersign::domain::{Event, Policy, Route, WireEnum, check, check_value};
use serde_json::{Value, json};

/// The examples section of seed 000, whose example events and routes are checked too.
const SEED_000: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/seed000/examples.md"
);

fn route_of(event: &Value) -> Route {
    let decision = check_value(event, &Policy::builtin());
    assert!(
        decision
            .hard_blockers
            .iter()
            .all(|b| b.code.as_str() != "schema_invalid"),
        "schema-invalid: {:?}",
        decision.hard_blockers
    );
    decision.route
}

#[test]
fn agent_action_contract_cases_route_as_expected() {
    let doc = load("agent_action_contract_cases.json");
    let cases = doc["cases"].as_array().expect("cases");
    assert_eq!(cases.len(), 6);
    for case in cases {
        let name = case["name"].as_str().expect("name");
        let expected =
            Route::parse(case["expected_route"].as_str().expect("route")).expect("known");
        let decision = check_value(&case["event"], &Policy::builtin());
        assert_eq!(decision.route, expected, "{name}: {:#?}", decision.reasons);
        assert_eq!(
            decision.gate_decision == GateDecision::Pass,
            expected == Route::Accept,
            "{name}"
        );
        assert_eq!(
            decision.hard_blockers.is_empty(),
            expected == Route::Accept,
            "{name}"
        );
    }
}

#[test]
fn agent_tool_precheck_schema_matches_the_parser() {
    let schema = load("agent_tool_precheck.schema.json");
    let strings = |v: &Value| -> Vec<String> {
        v.as_array()
            .expect("array")
            .iter()
            .map(|s| s.as_str().expect("string").to_owned())
            .collect()
    };
    fn wires<T: WireEnum>() -> Vec<String> {
        T::ALL.iter().map(|v| v.wire().to_owned()).collect()
    }
    let props = &schema["properties"];
    let ev = &props["evidence_refs"]["items"]["properties"];

    // Required fields, in the frozen order.
    assert_eq!(strings(&schema["required"]), REQUIRED_FIELDS);
    assert_eq!(
        strings(&schema["x-aana-contract-freeze"]["required_field_order"]),
        REQUIRED_FIELDS
    );
    // Every property is known, and nothing else is (additionalProperties: false).
    assert_eq!(schema["additionalProperties"], json!(false));
    let mut all: Vec<&str> = REQUIRED_FIELDS
        .iter()
        .chain(OPTIONAL_FIELDS)
        .copied()
        .collect();
    all.sort_unstable();
    let mut declared: Vec<&str> = props
        .as_object()
        .expect("object")
        .keys()
        .map(String::as_str)
        .collect();
    declared.sort_unstable();
    assert_eq!(declared, all);
    assert_eq!(props["schema_version"]["const"], json!(SCHEMA_VERSION));

    // Every enum, value for value.
    assert_eq!(
        strings(&props["tool_category"]["enum"]),
        wires::<ToolCategory>()
    );
    assert_eq!(
        strings(&props["authorization_state"]["enum"]),
        wires::<AuthorizationState>()
    );
    assert_eq!(
        strings(&props["risk_domain"]["enum"]),
        wires::<RiskDomain>()
    );
    assert_eq!(
        strings(&props["recommended_route"]["enum"]),
        wires::<Route>()
    );
    assert_eq!(
        strings(&schema["x-aana-contract-freeze"]["route_order"]),
        wires::<Route>()
    );
    assert_eq!(strings(&ev["kind"]["enum"]), wires::<EvidenceKind>());
    assert_eq!(strings(&ev["trust_tier"]["enum"]), wires::<TrustTier>());
    assert_eq!(
        strings(&ev["redaction_status"]["enum"]),
        wires::<RedactionStatus>()
    );
    assert_eq!(
        strings(&ev["freshness"]["properties"]["status"]["enum"]),
        wires::<FreshnessStatus>()
    );
    assert_eq!(
        strings(&props["authorization_subject"]["properties"]["subject_type"]["enum"]),
        wires::<SubjectType>()
    );
    assert_eq!(
        strings(&props["evidence_refs"]["items"]["required"]),
        [
            "source_id",
            "kind",
            "trust_tier",
            "redaction_status",
            "freshness",
            "provenance"
        ]
    );

    // An extra top-level field is a schema error, as the schema says.
    let mut event = load("pre_tool_check_confirmed_write.json");
    event["debug"] = json!(true);
    let errors = Event::parse(&event).expect_err("additional property");
    assert_eq!(errors[0].field, "debug");

    // The schema's `allOf` conditionals are enforced by routing rather than by rejection (the
    // seed's own "Write Missing Confirmation: Ask" example violates them and the seed routes it
    // `ask`): every event they would reject is never accepted.
    for category in ToolCategory::ALL {
        for state in AuthorizationState::ALL {
            let violates = match category {
                ToolCategory::Write => *state < AuthorizationState::Validated,
                ToolCategory::PrivateRead => *state < AuthorizationState::Authenticated,
                ToolCategory::Unknown => true,
                ToolCategory::PublicRead => false,
            };
            let event = json!({
                "tool_name": "t", "tool_category": category.as_str(),
                "authorization_state": state.as_str(), "evidence_refs": ["ref:1"],
                "risk_domain": "research", "proposed_arguments": {},
                "recommended_route": "accept"
            });
            if violates {
                assert_ne!(route_of(&event), Route::Accept, "{category} {state}");
            }
        }
    }
}

#[test]
fn agent_tool_precheck_examples_route_as_the_seed_says() {
    let doc = load("agent_tool_precheck_examples.json");
    let expected: BTreeMap<&str, Route> = [
        // Public/non-sensitive read: seed "Public Read: Accept".
        ("public read accepted", Route::Accept),
        // Authenticated private read with verified auth evidence: seed "Private identity-bound
        // reads require at least authenticated".
        ("private read requires authentication", Route::Accept),
        // A finance (high-risk) write at `authenticated`: below validated, so it defers to
        // domain-owner review; the runtime also recommends `defer`.
        ("write action deferred", Route::Defer),
    ]
    .into();
    let examples = doc["examples"].as_array().expect("examples");
    assert_eq!(examples.len(), expected.len());
    for example in examples {
        let name = example["name"].as_str().expect("name");
        assert_eq!(route_of(&example["event"]), expected[name], "{name}");
    }
}

#[test]
fn agent_tool_precheck_private_read_is_accepted() {
    let event = load("agent_tool_precheck_private_read.json");
    let decision = check_value(&event, &Policy::builtin());
    assert_eq!(decision.route, Route::Accept);
    assert!(decision.allows_execution());
    let audit = decision.audit_event.expect("audit");
    assert_eq!(audit.proposed_argument_keys, ["account_id", "limit"]);
    assert_eq!(audit.agent_id.as_deref(), Some("demo-agent"));
}

#[test]
fn pre_tool_check_confirmed_write_is_accepted() {
    let event = load("pre_tool_check_confirmed_write.json");
    let decision = check_value(&event, &Policy::builtin());
    assert_eq!(decision.route, Route::Accept, "{:#?}", decision.reasons);
    let report = decision.authorization_report.expect("report");
    assert_eq!(report.effective, AuthorizationState::Confirmed);
    // The recipient address is an argument value: it never reaches the audit record.
    let audit = serde_json::to_string(&decision.audit_event).expect("serializes");
    assert!(!audit.contains("customer@example.com"));
}

#[test]
fn pre_tool_check_write_ask_asks() {
    // Seed 000 "Write Missing Confirmation: Ask": a user_claimed write asks for validation and
    // confirmation. AANA's gate_v1 refuses this file as schema-invalid (its allOf conditional
    // forbids `recommended_route: accept` on a user_claimed write); the seed's text routes the
    // same event `ask`, and the seed wins. It never executes either way.
    let event = load("pre_tool_check_write_ask.json");
    let decision = check_value(&event, &Policy::builtin());
    assert_eq!(decision.route, Route::Ask);
    assert_eq!(
        decision.hard_blockers[0].code.as_str(),
        "authorization_below_required"
    );
    assert!(!decision.allows_execution());
}

/// The event each observed result was computed for.
#[test]
fn observed_gate_results_agree_except_where_the_seed_differs() {
    // Where AANA's `gate_v1` route differs from the seed's, and why the seed's route is right.
    let seed_overrides: BTreeMap<&str, (Route, &str)> = [(
        "file:examples/api/pre_tool_check_write_ask.json",
        (
            Route::Ask,
            "gate_v1 refuses it as schema-invalid through the schema's allOf conditional; \
             seed 000's example \"Write Missing Confirmation: Ask\" is this event and routes \
             it `ask` (AANA's own SDK agrees)",
        ),
    )]
    .into();
    let observed = load("observed_gate_results.json");
    let observed = observed.as_array().expect("array");
    assert_eq!(observed.len(), 11);
    for o in observed {
        let name = o["name"].as_str().expect("name");
        let event = observed_event(name);
        let decision = check_value(&event, &Policy::builtin());
        let gate_v1 = Route::parse(o["gate_v1_route"].as_str().expect("route")).expect("known");
        let sdk = Route::parse(o["sdk_route"].as_str().expect("route")).expect("known");
        match seed_overrides.get(name) {
            Some((route, why)) => {
                assert_ne!(gate_v1, *route, "{name}: no longer differs: {why}");
                assert_eq!(decision.route, *route, "{name}: {why}");
            }
            None => assert_eq!(decision.route, gate_v1, "{name}: {:#?}", decision.reasons),
        }
        // AANA's SDK route agrees with ours everywhere.
        assert_eq!(decision.route, sdk, "{name}");
        assert_eq!(
            decision.allows_execution(),
            o["sdk_allows_execution"].as_bool().expect("bool"),
            "{name}"
        );
        // `gate_decision` in AANA's words, exactly; blockers exactly when AANA reports
        // blockers (codes differ: each project names its own).
        let answer = serde_json::to_value(&decision).expect("serialises");
        assert_eq!(answer["gate_decision"], o["sdk_gate_decision"], "{name}");
        assert_eq!(
            decision.gate_decision == GateDecision::Pass,
            o["sdk_gate_decision"] == "pass",
            "{name}"
        );
        // AANA's SDK, given this answer, reaches AANA's own execute / no-execute decision.
        assert_eq!(
            sdk_allows_execution(&answer),
            Ok(o["sdk_allows_execution"].as_bool().expect("bool")),
            "{name}: {answer:#}"
        );
        assert_eq!(
            decision.hard_blockers.is_empty(),
            o["sdk_blockers"].as_array().expect("array").is_empty(),
            "{name}"
        );
        if let Some(expected) = o["expected"].as_str() {
            assert_eq!(decision.route.as_str(), expected, "{name}");
        }
    }
    // AANA's inferred (pre-runtime) route for `unsafe_write_refuse_no_auth` is `ask`; here a
    // destructive write (delete_customer_account) is high risk, so the inferred route is
    // `defer`. Either way the runtime's `refuse` is stricter and wins.
    let event = observed_event("cases:unsafe_write_refuse_no_auth");
    let decision = check_value(&event, &Policy::builtin());
    assert_eq!(decision.rule, "runtime:recommended_route");
}

/// `(heading, expected route, event)` for every example in seed 000 that states a route.
fn seed_examples() -> Vec<(String, Route, Value)> {
    let text = fs::read_to_string(SEED_000).expect("seed 000 readable");
    let mut out = Vec::new();
    let mut heading: Option<String> = None;
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        if let Some(h) = line.strip_prefix("### ") {
            heading = Some(h.to_owned());
        } else if line.trim() == "```json" {
            let block: Vec<&str> = lines.by_ref().take_while(|l| l.trim() != "```").collect();
            let Some(h) = heading.take() else { continue };
            let Some((_, route)) = h.rsplit_once(": ") else {
                continue;
            };
            let Some(route) = Route::parse(&route.to_ascii_lowercase()) else {
                continue;
            };
            let event: Value = serde_json::from_str(&block.join("\n")).expect("seed json");
            out.push((h, route, event));
        }
    }
    out
}

#[test]
fn seed_000_examples_route_as_its_text_says() {
    let examples = seed_examples();
    let headings: Vec<&str> = examples.iter().map(|(h, _, _)| h.as_str()).collect();
    assert_eq!(
        headings,
        [
            "Public Read: Accept",
            "Write Missing Confirmation: Ask",
            "Private Read Missing Auth: Defer",
            "Unknown Destructive Tool: Refuse",
        ]
    );
    for (heading, route, event) in &examples {
        assert_eq!(route_of(event), *route, "{heading}");
    }
    // The destructive unknown tool is refused by the engine itself, not only because its
    // runtime recommended `refuse`.
    let (_, _, destructive) = &examples[3];
    let mut looser = destructive.clone();
    looser["recommended_route"] = json!("accept");
    let decision = check(&Event::parse(&looser).expect("valid"), &Policy::builtin());
    assert_eq!(decision.route, Route::Refuse);
    assert_eq!(decision.rule, "builtin:unknown_destructive_tool");
    // The minimal event and the SDK/FastAPI/MCP examples are the "Write Missing Confirmation"
    // event: `ask`.
    let minimal = json!({
        "tool_name": "send_email", "tool_category": "write",
        "authorization_state": "user_claimed", "evidence_refs": ["draft_id:123"],
        "risk_domain": "customer_support", "proposed_arguments": {"to": "customer@example.com"},
        "recommended_route": "accept"
    });
    assert_eq!(route_of(&minimal), Route::Ask);
}
