//! Every client mistake on the API gets the documented JSON error with the right status, and
//! nothing is written.

use countersign::api::MAX_BODY_BYTES;
use countersign::domain::lifecycle::ProposalStatus;
use countersign::domain::principal::{Principal, Role};
use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::common;
use crate::helpers::TestApp;

async fn error_of(r: reqwest::Response) -> (StatusCode, Value) {
    let status = r.status();
    let body: Value = r.json().await.expect("errors are JSON");
    let e = &body["error"];
    assert!(
        e["code"].is_string() && e["message"].is_string() && e["details"].is_array(),
        "error shape: {body}"
    );
    (status, body)
}

async fn nothing_stored(app: &TestApp) {
    let pending = app
        .services
        .proposals_in(
            &Principal::person("boss", Role::Admin),
            ProposalStatus::Pending,
            10,
        )
        .await
        .expect("list");
    assert!(pending.is_empty(), "a rejected request wrote a proposal");
    assert_eq!(app.count("select count(*) from proposals").await, 0);
    assert_eq!(app.count("select count(*) from commands").await, 0);
    let other = app
        .count("select count(*) from audit_events where action not in ('token.created', 'policy.loaded', 'policy.activated', 'proposal.rejected_input')")
        .await;
    assert_eq!(other, 0, "only the rejection may be audited");
}

fn fields(body: &Value) -> Vec<String> {
    body["error"]["details"]
        .as_array()
        .expect("details")
        .iter()
        .map(|d| d["field"].as_str().expect("field").to_owned())
        .collect()
}

#[tokio::test]
async fn missing_or_bad_tokens_are_401_and_wrong_kinds_403() {
    let app = TestApp::spawn("sqlite").await;
    let body = common::proposal_body("a1");
    let r = app
        .client
        .post(app.url("/api/v1/proposals"))
        .json(&body)
        .send()
        .await
        .expect("send");
    let (status, e) = error_of(r).await;
    assert_eq!(
        (status, e["error"]["code"].as_str()),
        (StatusCode::UNAUTHORIZED, Some("unauthenticated"))
    );
    let (status, _) = error_of(app.propose("csa_not-a-real-token", &body).await).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    let executor = app.executor_token("x1").await;
    let (status, _) = error_of(app.propose(&executor, &body).await).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let agent = app.agent_token("a1").await;
    let (status, _) = app.lease(&agent).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    nothing_stored(&app).await;
}

#[tokio::test]
async fn malformed_json_is_400_wrong_media_type_415_oversized_413() {
    let app = TestApp::spawn("sqlite").await;
    let agent = app.agent_token("a1").await;
    let send = |body: Vec<u8>, content_type: &'static str| {
        app.client
            .post(app.url("/api/v1/proposals"))
            .bearer_auth(&agent)
            .header("content-type", content_type)
            .body(body)
            .send()
    };
    let (status, e) = error_of(
        send(b"{\"proposal_id\": ".to_vec(), "application/json")
            .await
            .expect("send"),
    )
    .await;
    assert_eq!(
        (status, e["error"]["code"].as_str()),
        (StatusCode::BAD_REQUEST, Some("malformed_json"))
    );
    let (status, _) = error_of(
        send(
            b"proposal_id=1".to_vec(),
            "application/x-www-form-urlencoded",
        )
        .await
        .expect("send"),
    )
    .await;
    assert_eq!(status, StatusCode::UNSUPPORTED_MEDIA_TYPE);
    let mut big = common::proposal_body("a1");
    big["parameters"]["blob"] = json!("x".repeat(MAX_BODY_BYTES));
    let (status, e) = error_of(
        send(serde_json::to_vec(&big).expect("json"), "application/json")
            .await
            .expect("send"),
    )
    .await;
    assert_eq!(
        (status, e["error"]["code"].as_str()),
        (StatusCode::PAYLOAD_TOO_LARGE, Some("payload_too_large"))
    );
    nothing_stored(&app).await;
}

#[tokio::test]
async fn contract_violations_are_422_with_every_field_listed() {
    let app = TestApp::spawn("sqlite").await;
    let agent = app.agent_token("a1").await;

    let mut body = common::proposal_body("a1");
    body.as_object_mut()
        .expect("object")
        .remove("idempotency_key");
    let (status, e) = error_of(app.propose(&agent, &body).await).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(fields(&e), ["idempotency_key"]);
    assert_eq!(e["error"]["details"][0]["message"], "is required");

    let mut body = common::proposal_body("a1");
    body["risk_level"] = json!("extreme");
    body["approval_required"] = json!("yes");
    body["tool"] = json!("crm.update_contact");
    body["target_refs"] = json!([{"type": "crm_contact"}]);
    body["authorization_state"] = json!("superuser");
    body["made_up"] = json!(true);
    let (status, e) = error_of(app.propose(&agent, &body).await).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(e["error"]["code"], "validation_failed");
    let mut got = fields(&e);
    got.sort();
    assert_eq!(
        got,
        [
            "approval_required",
            "authorization_state",
            "made_up",
            "risk_level",
            "target_refs[0].id",
            "tool"
        ]
    );

    let (status, e) = error_of(app.propose(&agent, &json!([1, 2])).await).await;
    assert_eq!(
        (status, fields(&e)),
        (StatusCode::UNPROCESSABLE_ENTITY, vec![String::new()])
    );
    assert_eq!(
        app.count("select count(*) from audit_events where action = 'proposal.rejected_input'")
            .await,
        3
    );
    // The audit trail names the broken fields, never the rejected values.
    assert_eq!(
        app.count("select count(*) from audit_events where details like '%extreme%'")
            .await,
        0
    );
    assert_eq!(
        app.count("select count(*) from audit_events where details like '%risk_level%'")
            .await,
        1
    );
    nothing_stored(&app).await;
}

#[tokio::test]
async fn the_proposer_must_be_the_token_holder() {
    let app = TestApp::spawn("sqlite").await;
    let agent = app.agent_token("a1").await;
    let (status, e) = error_of(
        app.propose(&agent, &common::proposal_body("someone-else"))
            .await,
    )
    .await;
    assert_eq!(
        (status, e["error"]["code"].as_str()),
        (StatusCode::FORBIDDEN, Some("proposer_mismatch"))
    );
    nothing_stored(&app).await;
}

#[tokio::test]
async fn same_key_same_body_replays_and_different_body_is_refused() {
    let app = TestApp::spawn("sqlite").await;
    let agent = app.agent_token("a1").await;
    let body = common::proposal_body("a1");
    let first = app.propose(&agent, &body).await;
    assert_eq!(first.status(), StatusCode::CREATED);
    let first: Value = first.json().await.expect("json");
    let again = app.propose(&agent, &body).await;
    assert_eq!(again.status(), StatusCode::OK);
    let again: Value = again.json().await.expect("json");
    assert_eq!(first["proposal"]["id"], again["proposal"]["id"]);
    assert_eq!(
        first["proposal"]["created_at"],
        again["proposal"]["created_at"]
    );

    let mut changed = body.clone();
    changed["intent"]["summary"] = json!("Something else entirely");
    let (status, e) = error_of(app.propose(&agent, &changed).await).await;
    assert_eq!(
        (status, e["error"]["code"].as_str()),
        (
            StatusCode::UNPROCESSABLE_ENTITY,
            Some("idempotency_key_reused")
        )
    );

    let mut same_id = common::proposal_body("a1");
    same_id["proposal_id"] = body["proposal_id"].clone();
    let (status, e) = error_of(app.propose(&agent, &same_id).await).await;
    assert_eq!(
        (status, e["error"]["code"].as_str()),
        (StatusCode::CONFLICT, Some("proposal_id_conflict"))
    );
    let pending = app
        .services
        .proposals_in(
            &Principal::person("boss", Role::Admin),
            ProposalStatus::Pending,
            10,
        )
        .await
        .expect("list");
    assert_eq!(pending.len(), 1);
}

#[tokio::test]
async fn agents_see_only_their_own_proposals() {
    let app = TestApp::spawn("sqlite").await;
    let mine = app.agent_token("a1").await;
    let theirs = app.agent_token("a2").await;
    let id = app.propose_ok(&mine, "a1").await;
    assert_eq!(app.poll(&mine, &id).await.0, StatusCode::OK);
    let (status, e) = app.poll(&theirs, &id).await;
    assert_eq!(
        (status, e["error"]["code"].as_str()),
        (StatusCode::NOT_FOUND, Some("not_found"))
    );
    assert_eq!(app.poll(&mine, "not-a-uuid").await.0, StatusCode::NOT_FOUND);
    assert_eq!(
        app.poll(&mine, &uuid::Uuid::new_v4().to_string()).await.0,
        StatusCode::NOT_FOUND
    );
}

#[tokio::test]
async fn executor_inputs_are_checked() {
    let app = TestApp::spawn("sqlite").await;
    let executor = app.executor_token("x1").await;
    let lease = |body: Value| {
        app.client
            .post(app.url("/api/v1/executor/lease"))
            .bearer_auth(&executor)
            .json(&body)
            .send()
    };
    let (status, e) = error_of(lease(json!({"lease_seconds": 1})).await.expect("send")).await;
    assert_eq!(
        (status, fields(&e)),
        (
            StatusCode::UNPROCESSABLE_ENTITY,
            vec!["lease_seconds".to_owned()]
        )
    );
    let (status, e) = error_of(lease(json!({"lease_seconds": "ten"})).await.expect("send")).await;
    assert_eq!(
        (status, fields(&e)),
        (
            StatusCode::UNPROCESSABLE_ENTITY,
            vec!["lease_seconds".to_owned()]
        )
    );
    let (status, e) = error_of(lease(json!({"surprise": 1})).await.expect("send")).await;
    assert_eq!(
        (status, fields(&e)),
        (
            StatusCode::UNPROCESSABLE_ENTITY,
            vec!["surprise".to_owned()]
        )
    );
    let r = app
        .client
        .post(app.url("/api/v1/executor/lease"))
        .bearer_auth(&executor)
        .send()
        .await
        .expect("send");
    assert_eq!(
        r.status(),
        StatusCode::NO_CONTENT,
        "an empty body is an empty lease request"
    );
    let missing = uuid::Uuid::new_v4();
    let (status, _) = app
        .report(
            &executor,
            &missing.to_string(),
            "complete",
            &json!({"lease_token": "t", "result": 1}),
        )
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn unknown_paths_and_methods_answer_in_the_error_shape() {
    let app = TestApp::spawn("sqlite").await;
    let r = app
        .client
        .get(app.url("/api/v1/nope"))
        .send()
        .await
        .expect("send");
    let (status, _) = error_of(r).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let r = app
        .client
        .delete(app.url("/api/v1/proposals"))
        .send()
        .await
        .expect("send");
    let (status, e) = error_of(r).await;
    assert_eq!(
        (status, e["error"]["code"].as_str()),
        (StatusCode::METHOD_NOT_ALLOWED, Some("method_not_allowed"))
    );
    let r = app
        .client
        .get(app.url("/healthz"))
        .send()
        .await
        .expect("send");
    assert_eq!(r.status(), StatusCode::OK);
    assert_eq!(r.json::<Value>().await.expect("json")["database"], "sqlite");
}

#[tokio::test]
async fn unknown_keys_that_carry_personal_data_never_reach_the_audit_trail() {
    let app = TestApp::spawn("sqlite").await;
    let agent = app.agent_token("a1").await;
    let mut body = common::proposal_body("a1");
    body["jane.doe@example.com"] = json!(true);
    let (status, e) = error_of(app.propose(&agent, &body).await).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(
        fields(&e),
        ["jane.doe@example.com"],
        "the agent is told which key"
    );
    assert_eq!(
        app.count("select count(*) from audit_events where details like '%jane.doe%'")
            .await,
        0
    );
    assert_eq!(
        app.count("select count(*) from audit_events where details like '%[withheld]%'")
            .await,
        1
    );
}

/// A page's server function called by a client other than a page's form (no `Accept:
/// text/html`, so no redirect back to the page): its error is answered with the status of its
/// kind, never `500` for the client's mistake.
#[tokio::test]
async fn a_server_functions_errors_answer_with_their_status() {
    let app = TestApp::spawn("sqlite").await;
    let r = (app.client.post(app.url("/fn/list_admin_users")))
        .form(&[("shown", "")])
        .send()
        .await
        .expect("send");
    assert_eq!(r.status(), StatusCode::UNAUTHORIZED, "not signed in");
    assert_eq!(r.text().await.expect("body"), "\"Unauthenticated\"");

    let rev = crate::admin::signed_in(&app, "rev", Role::Reviewer).await;
    let r = (rev.client.post(app.url("/fn/list_admin_users")))
        .form(&[("shown", "")])
        .send()
        .await
        .expect("send");
    assert_eq!(r.status(), StatusCode::FORBIDDEN, "a reviewer is no admin");

    let boss = crate::admin::signed_in(&app, "boss", Role::Admin).await;
    let csrf = boss.csrf("/admin/tokens").await;
    let r = (boss.client.post(app.url("/fn/change_token")))
        .header("referer", app.url("/admin/tokens"))
        .form(&[("csrf_token", csrf.as_str()), ("action", "explode")])
        .send()
        .await
        .expect("send");
    assert_eq!(r.status(), StatusCode::UNPROCESSABLE_ENTITY);
    assert!(r.text().await.expect("body").contains("`action`"));
    let r = (boss.client.post(app.url("/fn/change_token")))
        .form(&[("nonsense", "1")])
        .send()
        .await
        .expect("send");
    assert_eq!(r.status(), StatusCode::BAD_REQUEST, "arguments missing");
}
