//! The policy at work through HTTP: the pre-tool-check, and proposals routed accept / ask /
//! refuse with machine-readable blockers, executor allow-lists and fail-closed quorums.

use countersign::domain::principal::{Principal, Role};
use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::common;
use crate::helpers::{PASSWORD, TestApp, location};

const POLICY: &str = r#"
[policy]
name = "test"

[defaults]
required_approvals = 1
expiry = "24h"
unknown_agents = "refuse"

[agents.sales-agent]
domains = ["sales"]

[tools."docs.search"]
category = "A"
tool_category = "public_read"
risk = "low"

[tools."crm.*"]
category = "C"
tool_category = "write"
risk = "medium"
allowed_agents = ["sales-agent"]
allowed_executors = ["n8n-crm"]

[tools."crm.delete_*"]
category = "C"
tool_category = "write"
risk = "high"
required_approvals = 2
allowed_agents = ["sales-agent"]
"#;

fn proposal(tool: &str) -> Value {
    let mut body = common::proposal_body("sales-agent");
    body["tool"]["name"] = json!(tool);
    body
}

fn category_a_search() -> Value {
    let mut body = proposal("docs.search");
    body["risk_level"] = json!("low");
    body["approval_required"] = json!(false);
    body["compliance_context"] = json!({"gdpr": false, "hipaa": false});
    body["parameters"] = json!({"query": "refund policy"});
    body.as_object_mut().expect("object").remove("target_refs");
    body["blast_radius"] = json!("tiny");
    body
}

#[tokio::test]
async fn allow_listed_category_a_is_accepted_and_queued_at_once() {
    let app = TestApp::spawn_with_policy("sqlite", POLICY).await;
    let agent = app.agent_token("sales-agent").await;
    let executor = app.executor_token("worker").await;
    let r = app.propose(&agent, &category_a_search()).await;
    assert_eq!(r.status(), StatusCode::CREATED);
    let body: Value = r.json().await.expect("json");
    let p = &body["proposal"];
    assert_eq!(
        (p["status"].as_str(), p["route"].as_str()),
        (Some("accepted"), Some("accept"))
    );
    assert_eq!(p["blockers"], json!([]));
    assert!(
        p["routing"]["policy_version"]
            .as_str()
            .expect("version")
            .starts_with("sha256:")
    );
    assert_eq!(p["execution"]["status"], "queued");
    assert!(
        p["expires_at"].is_null(),
        "nothing waits, so nothing expires"
    );
    let (status, leased) = app.lease(&executor).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(leased["command"]["approved_by"], "policy");
    assert_eq!(leased["command"]["proposal_id"], p["id"]);
}

#[tokio::test]
async fn personal_data_always_waits_for_a_human_and_says_why() {
    let app = TestApp::spawn_with_policy("sqlite", POLICY).await;
    let agent = app.agent_token("sales-agent").await;
    let mut body = category_a_search();
    body["compliance_context"]["gdpr"] = json!(true);
    let r = app.propose(&agent, &body).await;
    let body: Value = r.json().await.expect("json");
    assert_eq!(body["proposal"]["status"], "pending");
    let codes: Vec<&str> = body["proposal"]["blockers"]
        .as_array()
        .expect("blockers")
        .iter()
        .filter_map(|b| b["code"].as_str())
        .collect();
    assert!(codes.contains(&"human_approval_required"), "{codes:?}");

    // The reviewer sees the route, its blockers and the rule that sent it to them.
    app.user("rev", Role::Reviewer).await;
    let browser = app.browser();
    browser.login("rev", PASSWORD).await;
    let id = body["proposal"]["id"].as_str().expect("id");
    let page = browser.page(&format!("/proposals/{id}")).await;
    assert!(
        page.contains("data-testid=\"proposal-route\">ask<"),
        "route shown"
    );
    assert!(page.contains("human_approval_required"), "blocker shown");
    let rule = body["proposal"]["routing"]["rule"].as_str().expect("rule");
    assert!(
        page.contains(&rule.replace('\'', "&#x27;").replace('"', "&quot;")) || page.contains(rule),
        "rule shown"
    );
    assert!(
        page.contains(
            body["proposal"]["routing"]["policy_version"]
                .as_str()
                .expect("version")
        )
    );
}

#[tokio::test]
async fn lanes_and_domains_refuse_with_blockers_the_agent_can_act_on() {
    let app = TestApp::spawn_with_policy("sqlite", POLICY).await;
    let agent = app.agent_token("sales-agent").await;
    let mut wrong_domain = proposal("crm.update_contact");
    wrong_domain["domain"] = json!("accounting");
    let body: Value = app
        .propose(&agent, &wrong_domain)
        .await
        .json()
        .await
        .expect("json");
    assert_eq!(body["proposal"]["status"], "refused");
    assert_eq!(body["proposal"]["route"], "refuse");
    assert_eq!(body["proposal"]["blockers"][0]["code"], "domain_not_owned");

    let stranger = app.agent_token("stranger").await;
    let body: Value = app
        .propose(&stranger, &{
            let mut b = proposal("crm.update_contact");
            b["proposed_by"] = json!("stranger");
            b
        })
        .await
        .json()
        .await
        .expect("json");
    assert_eq!(body["proposal"]["status"], "refused");
    assert_eq!(app.count("select count(*) from commands").await, 0);
}

#[tokio::test]
async fn approved_commands_go_only_to_the_executors_the_policy_names() {
    let app = TestApp::spawn_with_policy("postgres", POLICY).await;
    let agent = app.agent_token("sales-agent").await;
    let other = app.executor_token("generic-worker").await;
    let crm = app.executor_token("n8n-crm").await;
    app.user("rev", Role::Reviewer).await;
    let r = app.propose(&agent, &proposal("crm.update_contact")).await;
    let id = r.json::<Value>().await.expect("json")["proposal"]["id"]
        .as_str()
        .expect("id")
        .to_owned();
    let browser = app.browser();
    browser.login("rev", PASSWORD).await;
    assert_eq!(
        location(&browser.decide(&id, "approved", None).await),
        format!("/proposals/{id}?notice=approved")
    );
    assert_eq!(app.lease(&other).await.0, StatusCode::NO_CONTENT);
    let (status, leased) = app.lease(&crm).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(leased["command"]["proposal_id"], id.as_str());
}

#[tokio::test]
async fn two_distinct_approvers_are_collected_before_anything_runs() {
    let app = TestApp::spawn_with_policy("sqlite", POLICY).await;
    let agent = app.agent_token("sales-agent").await;
    let executor = app.executor_token("worker").await;
    app.user("rev1", Role::Reviewer).await;
    app.user("rev2", Role::Reviewer).await;
    let r = app.propose(&agent, &proposal("crm.delete_contact")).await;
    let body: Value = r.json().await.expect("json");
    assert_eq!(body["proposal"]["routing"]["required_approvals"], 2);
    let id = body["proposal"]["id"].as_str().expect("id").to_owned();
    let page = format!("/proposals/{id}");

    let first = app.browser();
    first.login("rev1", PASSWORD).await;
    assert_eq!(
        location(&first.decide(&id, "approved", None).await),
        format!("{page}?notice=approval_recorded")
    );
    let (_, polled) = app.poll(&agent, &id).await;
    assert_eq!(polled["proposal"]["status"], "pending");
    assert_eq!(polled["proposal"]["authorization_state"], "none");
    assert_eq!(
        app.lease(&executor).await.0,
        StatusCode::NO_CONTENT,
        "one approval of two runs nothing"
    );
    let html = first.page(&page).await;
    assert!(
        html.contains("data-testid=\"approve-blocked\"")
            && !html.contains("data-testid=\"approve\"")
    );
    assert_eq!(
        location(&first.decide(&id, "approved", None).await),
        format!("{page}?error=already_approved")
    );

    let second = app.browser();
    second.login("rev2", PASSWORD).await;
    assert_eq!(
        location(&second.decide(&id, "approved", None).await),
        format!("{page}?notice=approved")
    );
    let (_, polled) = app.poll(&agent, &id).await;
    assert_eq!(polled["proposal"]["status"], "approved");
    assert_eq!(polled["proposal"]["authorization_state"], "confirmed");
    assert_eq!(polled["proposal"]["review"]["decided_by"], "rev2");
    assert_eq!(app.lease(&executor).await.0, StatusCode::OK);
    assert_eq!(app.count("select count(*) from approvals").await, 2);
}

#[tokio::test]
async fn the_pre_tool_check_routes_the_seed_examples_and_records_keys_not_values() {
    let app = TestApp::spawn("sqlite").await;
    let agent = app.agent_token("support-bot").await;
    let cases = [
        (
            json!({"tool_name": "search_docs", "tool_category": "public_read", "authorization_state": "none",
                "evidence_refs": [], "risk_domain": "research", "proposed_arguments": {"query": "Agent Action Contract v1"},
                "recommended_route": "accept"}),
            "accept",
            "pass",
        ),
        (
            json!({"tool_name": "send_email", "tool_category": "write", "authorization_state": "user_claimed",
                "evidence_refs": ["draft_id:123"], "risk_domain": "customer_support",
                "proposed_arguments": {"to": "customer@example.com"}, "recommended_route": "accept"}),
            "ask",
            "fail",
        ),
        (
            json!({"tool_name": "get_recent_transactions", "tool_category": "private_read", "authorization_state": "none",
                "evidence_refs": [], "risk_domain": "finance", "proposed_arguments": {"account_id": "acct_redacted", "limit": 5},
                "recommended_route": "accept"}),
            "defer",
            "fail",
        ),
        (
            json!({"tool_name": "delete_database", "tool_category": "unknown", "authorization_state": "none",
                "evidence_refs": [], "risk_domain": "unknown", "proposed_arguments": {"database": "prod"},
                "recommended_route": "refuse"}),
            "refuse",
            "fail",
        ),
    ];
    for (event, route, gate) in cases {
        let (status, d) = app.pre_tool_check(&agent, &event).await;
        assert_eq!(status, StatusCode::OK, "{d}");
        assert_eq!(
            (d["route"].as_str(), d["gate_decision"].as_str()),
            (Some(route), Some(gate)),
            "{event}"
        );
        assert_eq!(d["recommended_action"], route);
        assert!(d["policy_version"].is_string() && d["hard_blockers"].is_array());
        let check_id = d["check_id"].as_str().expect("check id");
        let audit = app
            .services
            .trail(&Principal::Operator, "pre_tool_check", check_id)
            .await
            .expect("audit");
        assert_eq!(audit.len(), 1);
        let recorded = audit[0].details.to_string();
        // Argument keys are recorded; their values never are.
        for (key, value) in event["proposed_arguments"].as_object().expect("object") {
            assert!(recorded.contains(key.as_str()));
            if let Some(v) = value.as_str() {
                assert!(
                    !recorded.contains(v),
                    "value {v} leaked into the audit trail"
                );
            }
        }
    }
}

#[tokio::test]
async fn bad_events_are_422_with_every_error_and_only_the_rejection_is_stored() {
    let app = TestApp::spawn("sqlite").await;
    let agent = app.agent_token("support-bot").await;
    let (status, e) = app
        .pre_tool_check(
            &agent,
            &json!({"tool_name": "send_email", "tool_category": "delete", "authorization_state": 3,
                    "evidence_refs": "draft", "proposed_arguments": "to=me", "recommended_route": "yolo"}),
        )
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    let mut fields: Vec<&str> = e["error"]["details"]
        .as_array()
        .expect("details")
        .iter()
        .filter_map(|d| d["field"].as_str())
        .collect();
    fields.sort();
    assert_eq!(
        fields,
        [
            "authorization_state",
            "evidence_refs",
            "proposed_arguments",
            "recommended_route",
            "risk_domain",
            "tool_category"
        ]
    );
    assert_eq!(
        app.count("select count(*) from audit_events where action = 'pre_tool_check.rejected'")
            .await,
        1
    );
    assert_eq!(
        app.count("select count(*) from audit_events where action = 'pre_tool_check.decided'")
            .await,
        0
    );
    assert_eq!(app.count("select count(*) from proposals").await, 0);

    let (status, e) = app
        .pre_tool_check(
            &agent,
            &json!({"tool_name": "x", "tool_category": "public_read", "authorization_state": "none", "evidence_refs": [],
                    "risk_domain": "research", "proposed_arguments": {}, "recommended_route": "accept", "agent_id": "someone-else"}),
        )
        .await;
    assert_eq!(
        (status, e["error"]["code"].as_str()),
        (StatusCode::FORBIDDEN, Some("agent_mismatch"))
    );
}

#[tokio::test]
async fn the_contracts_are_published_as_json_schema() {
    let app = TestApp::spawn("sqlite").await;
    let get = |path: &'static str| app.client.get(app.url(path)).send();
    let r = get("/api/v1/schemas/tool-proposal.json")
        .await
        .expect("send");
    assert_eq!(r.status(), StatusCode::OK);
    let schema: Value = r.json().await.expect("json");
    let mut required: Vec<&str> = schema["required"]
        .as_array()
        .expect("required")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    required.sort();
    assert_eq!(
        required,
        [
            "approval_required",
            "compliance_context",
            "domain",
            "idempotency_key",
            "intent",
            "parameters",
            "proposal_id",
            "proposed_by",
            "risk_level",
            "rollback_supported",
            "timestamp",
            "tool",
        ]
    );
    assert_eq!(schema["additionalProperties"], false);
    for field in [
        "blast_radius",
        "target_refs",
        "rollback_plan",
        "authorization",
        "execution",
        "case_id",
        "model",
    ] {
        assert!(
            schema["properties"].get(field).is_some(),
            "schema lists {field}"
        );
    }
    let text = schema.to_string();
    assert!(
        text.contains("\"hitl\"") && text.contains("\"large\""),
        "enums are closed lists"
    );

    let r = get("/api/v1/schemas/agent-action-contract-v1.json")
        .await
        .expect("send");
    let schema: Value = r.json().await.expect("json");
    let mut required: Vec<&str> = schema["required"]
        .as_array()
        .expect("required")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    required.sort();
    assert_eq!(
        required,
        [
            "authorization_state",
            "evidence_refs",
            "proposed_arguments",
            "recommended_route",
            "risk_domain",
            "tool_category",
            "tool_name",
        ]
    );
}
