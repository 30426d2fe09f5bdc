//! AANA's bridge paths as AANA's SDK calls them: every published case and example POSTed to
//! `/aana/tool-precheck` (and `/aana/pre-tool-check`) with the agent's bearer token, the
//! answer put through AANA's SDK post-processing ([`common::aana::sdk_allows_execution`]), and
//! the execute / no-execute decision compared with AANA's own observed one; schema-invalid
//! events answered `200` with `validation_errors`; `/aana/validate-tool-precheck`; and evidence
//! counted by its trust tier.

use countersign::domain::principal::Principal;
use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::common::aana::{load, observed_event, sdk_allows_execution};
use crate::common::on_both_backends;
use crate::helpers::TestApp;

on_both_backends!(
    the_sdk_reaches_aanas_decision_on_every_published_case,
    a_schema_invalid_event_is_a_refusal_the_sdk_can_read,
    validate_tool_precheck_answers_as_aana_does,
    claimed_evidence_does_not_support_an_authenticated_state,
);

async fn post(app: &TestApp, token: Option<&str>, path: &str, body: &Value) -> (StatusCode, Value) {
    let mut request = app.client.post(app.url(path)).json(body);
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    let r = request.send().await.expect("request");
    (r.status(), r.json().await.unwrap_or(Value::Null))
}

async fn the_sdk_reaches_aanas_decision_on_every_published_case(backend: &str) {
    let app = TestApp::spawn(backend).await;
    let token = app.agent_token("support-agent").await;
    let observed = load("observed_gate_results.json");
    let observed = observed.as_array().expect("array");
    assert_eq!(observed.len(), 11, "AANA publishes 11 cases and examples");
    for (i, o) in observed.iter().enumerate() {
        let name = o["name"].as_str().expect("name");
        let mut event = observed_event(name);
        // The token names the agent; an event naming another agent is refused, as it should.
        event.as_object_mut().expect("object").remove("agent_id");
        // AANA's client calls `{base_url}/tool-precheck`; its FastAPI server `/pre-tool-check`.
        let path = if i % 2 == 0 {
            "/aana/tool-precheck"
        } else {
            "/aana/pre-tool-check"
        };
        let (status, answer) = post(&app, Some(&token), path, &event).await;
        assert_eq!(status, StatusCode::OK, "{name}: {answer}");
        assert_eq!(
            answer["gate_decision"], o["sdk_gate_decision"],
            "{name}: {answer:#}"
        );
        assert_eq!(
            sdk_allows_execution(&answer),
            Ok(o["sdk_allows_execution"].as_bool().expect("bool")),
            "{name}: {answer:#}"
        );
        // The fields AANA defines, with AANA's names and types.
        assert_eq!(answer["contract_version"], "aana.agent_tool_precheck.v1");
        assert_eq!(
            answer["aix"]["decision"], answer["recommended_action"],
            "{name}"
        );
        assert_eq!(
            answer["aix"]["hard_blockers"], answer["hard_blockers"],
            "{name}"
        );
        assert_eq!(
            answer["architecture_decision"]["route"], answer["route"],
            "{name}"
        );
        let report = &answer["authorization_report"];
        for field in [
            "declared_state",
            "evidence_supported_state",
            "effective_state",
        ] {
            assert!(report[field].is_string(), "{name}: {field} in {report}");
        }
        assert!(report["support"].is_array() && report["downgraded"].is_boolean());
        let integrity = &answer["evidence_integrity"];
        assert!(
            integrity["checked_ref_count"].is_u64(),
            "{name}: {integrity}"
        );
        for field in ["has_errors", "has_warnings"] {
            assert!(integrity[field].is_boolean(), "{name}: {field}");
        }
        for issue in integrity["issues"].as_array().expect("issues") {
            assert!(matches!(issue["level"].as_str(), Some("error" | "warning")));
            assert!(
                issue["path"]
                    .as_str()
                    .expect("path")
                    .starts_with("$.evidence_refs")
            );
        }
        // Countersign's messages are beside the codes, one per code.
        let details = answer["blocker_details"].as_array().expect("details");
        assert_eq!(
            details.len(),
            answer["hard_blockers"].as_array().expect("codes").len()
        );
        assert!(answer.get("shadow_mode").is_none() && answer.get("execution_mode").is_none());
        // The check is in the trail, like any other.
        let check = answer["check_id"].as_str().expect("check id");
        let trail = app
            .services
            .trail(&Principal::Operator, "pre_tool_check", check)
            .await
            .expect("trail");
        assert_eq!(trail.len(), 1, "{name}");
    }
    // Without a token nothing is decided.
    let (status, _) = post(
        &app,
        None,
        "/aana/tool-precheck",
        &observed_event("sdk:public read accepted"),
    )
    .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
}

async fn a_schema_invalid_event_is_a_refusal_the_sdk_can_read(backend: &str) {
    let app = TestApp::spawn(backend).await;
    let token = app.agent_token("support-agent").await;
    let event = json!({
        "tool_name": "send_email", "tool_category": "write", "authorization_state": "sudo",
        "evidence_refs": [{"source_id": "x", "kind": "nonsense"}],
        "risk_domain": "customer_support", "proposed_arguments": {}, "recommended_route": "accept"
    });
    let (status, answer) = post(&app, Some(&token), "/aana/tool-precheck", &event).await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    assert_eq!(answer["gate_decision"], "fail");
    assert_eq!(answer["recommended_action"], "refuse");
    assert_eq!(sdk_allows_execution(&answer), Ok(false));
    let errors = answer["validation_errors"]
        .as_array()
        .expect("validation errors");
    let paths: Vec<&str> = errors.iter().filter_map(|e| e["path"].as_str()).collect();
    assert!(paths.contains(&"authorization_state"), "{paths:?}");
    assert!(
        paths.iter().any(|p| p.starts_with("evidence_refs.0")),
        "{paths:?}"
    );
    assert!(errors.iter().all(|e| e["message"].is_string()));
    // The rejected check is recorded against the agent, as on /api/v1 (which answers 422).
    let recorded = app
        .count("select count(*) from audit_events where action = 'pre_tool_check.rejected'")
        .await;
    assert_eq!(recorded, 1);
    let (status, _) = app.pre_tool_check(&token, &event).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
}

async fn validate_tool_precheck_answers_as_aana_does(backend: &str) {
    let app = TestApp::spawn(backend).await;
    let token = app.agent_token("support-agent").await;
    let valid = observed_event("sdk:public read accepted");
    let (status, answer) = post(&app, Some(&token), "/aana/validate-tool-precheck", &valid).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        answer,
        json!({"valid": true, "errors": [], "schema_version": "aana.agent_tool_precheck.v1"})
    );
    let mut invalid = valid.clone();
    invalid["authorization_state"] = json!("user_claimd");
    invalid.as_object_mut().expect("object").remove("tool_name");
    let (status, answer) = post(&app, Some(&token), "/aana/validate-tool-precheck", &invalid).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(answer["valid"], false);
    let paths: Vec<&str> = answer["errors"]
        .as_array()
        .expect("errors")
        .iter()
        .filter_map(|e| e["path"].as_str())
        .collect();
    assert!(paths.contains(&"authorization_state"), "{paths:?}");
    assert!(paths.contains(&"tool_name"), "{paths:?}");
    // Validation decides nothing, so nothing is recorded.
    assert_eq!(
        app.count("select count(*) from audit_events where action like 'pre_tool_check.%'")
            .await,
        0
    );
    let (status, _) = post(&app, None, "/aana/validate-tool-precheck", &valid).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
}

async fn claimed_evidence_does_not_support_an_authenticated_state(backend: &str) {
    let app = TestApp::spawn(backend).await;
    let token = app.agent_token("support-agent").await;
    let event = |trust: &str| {
        json!({
            "tool_name": "get_account_balance", "tool_category": "private_read",
            "authorization_state": "authenticated", "risk_domain": "customer_support",
            "proposed_arguments": {"account_id": "acct_redacted"}, "recommended_route": "accept",
            "evidence_refs": [{
                "source_id": "chat-7", "kind": "user_message", "trust_tier": trust,
                "redaction_status": "redacted", "provenance": "chat",
                "freshness": {"status": "fresh"}, "summary": "The user says they are signed in."
            }]
        })
    };
    for trust in ["user_claimed", "unverified", "unknown"] {
        let (status, answer) = post(&app, Some(&token), "/aana/tool-precheck", &event(trust)).await;
        assert_eq!(status, StatusCode::OK);
        assert_ne!(answer["route"], "accept", "{trust}: {answer:#}");
        assert_eq!(sdk_allows_execution(&answer), Ok(false), "{trust}");
        let report = &answer["authorization_report"];
        assert_eq!(report["declared_state"], "authenticated", "{trust}");
        assert_eq!(report["effective_state"], "user_claimed", "{trust}");
        assert_eq!(
            report["evidence_supported_state"], "user_claimed",
            "{trust}"
        );
        assert_eq!(report["downgraded"], true, "{trust}");
    }
    // The same event with runtime-verified evidence of the sign-in is accepted.
    let mut verified = event("verified");
    verified["evidence_refs"][0]["kind"] = json!("auth_event");
    let (_, answer) = post(&app, Some(&token), "/aana/tool-precheck", &verified).await;
    assert_eq!(answer["route"], "accept", "{answer:#}");
    assert_eq!(
        answer["authorization_report"]["evidence_supported_state"],
        "authenticated"
    );
    assert_eq!(answer["authorization_report"]["downgraded"], false);
    assert_eq!(sdk_allows_execution(&answer), Ok(true));
}
