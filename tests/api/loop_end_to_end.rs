//! The whole loop through HTTP — propose, review, confirm, lease, report, poll — on both
//! backends.

use countersign::domain::principal::Role;
use reqwest::StatusCode;
use serde_json::json;
use time::format_description::well_known::Rfc3339;

use crate::common;
use crate::helpers::{PASSWORD, TestApp, location};

async fn the_whole_loop(backend: &str) {
    let app = TestApp::spawn(backend).await;
    let agent = app.agent_token("sales-agent").await;
    let executor = app.executor_token("n8n").await;
    app.user("rev", Role::Reviewer).await;

    let body = common::proposal_body("sales-agent");
    let r = app.propose(&agent, &body).await;
    assert_eq!(r.status(), StatusCode::CREATED);
    let created: serde_json::Value = r.json().await.expect("json");
    let p = &created["proposal"];
    let id = p["id"].as_str().expect("id").to_owned();
    assert_eq!(id, body["proposal_id"].as_str().expect("id"));
    assert_eq!(p["status"], "pending");
    assert_eq!(p["authorization_state"], "none");
    assert_eq!(p["route"], "ask");
    assert_eq!(p["blockers"][0]["code"], "human_approval_required");
    assert!(p["created_at"].as_str().expect("created_at").ends_with('Z'));
    assert_eq!(p["request_hash_sha256"].as_str().expect("hash").len(), 64);
    // The built-in policy gives a reviewer 24 hours before an undecided proposal expires.
    let created_at =
        time::OffsetDateTime::parse(p["created_at"].as_str().expect("created"), &Rfc3339)
            .expect("time");
    let expires_at =
        time::OffsetDateTime::parse(p["expires_at"].as_str().expect("expires"), &Rfc3339)
            .expect("time");
    assert_eq!(expires_at - created_at, time::Duration::hours(24));

    // Nothing runs before a human says so.
    assert_eq!(app.lease(&executor).await.0, StatusCode::NO_CONTENT);

    let browser = app.browser();
    let r = browser.login("rev", PASSWORD).await;
    assert_eq!(
        (r.status(), location(&r)),
        (StatusCode::FOUND, "/".to_owned())
    );
    let queue = browser.page("/").await;
    assert!(queue.contains(&format!("data-proposal-id=\"{id}\"")));
    assert!(
        queue.contains("Update the contact&#x27;s email")
            || queue.contains("Update the contact's email")
    );
    let r = browser.decide(&id, "approved", None).await;
    assert_eq!(location(&r), format!("/proposals/{id}?notice=approved"));
    assert!(
        !browser.page("/").await.contains(&id),
        "decided proposals leave the queue"
    );

    let (status, polled) = app.poll(&agent, &id).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(polled["proposal"]["status"], "approved");
    assert_eq!(polled["proposal"]["authorization_state"], "confirmed");
    assert_eq!(polled["proposal"]["review"]["decided_by"], "rev");
    assert_eq!(polled["proposal"]["execution"]["status"], "queued");

    let (status, leased) = app.lease(&executor).await;
    assert_eq!(status, StatusCode::OK);
    let command = &leased["command"];
    assert_eq!(command["proposal_id"], id.as_str());
    assert_eq!(command["tool"]["name"], "crm.update_contact");
    assert_eq!(command["parameters"], body["parameters"]);
    assert_eq!(command["idempotency_key"], body["idempotency_key"]);
    assert_eq!(command["authorization_state"], "confirmed");
    let text = leased.to_string();
    assert!(
        !text.contains("ticket 42") && !text.contains("Update the contact"),
        "executors never see intent"
    );
    let lease_token = leased["lease_token"]
        .as_str()
        .expect("lease token")
        .to_owned();
    assert!(leased["lease_expires_at"].as_str().is_some());

    let (status, _) = app
        .report(
            &executor,
            command["id"].as_str().expect("id"),
            "complete",
            &json!({"lease_token": lease_token, "result": {"updated": true}}),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    let (_, polled) = app.poll(&agent, &id).await;
    assert_eq!(polled["proposal"]["status"], "succeeded");
    assert_eq!(
        polled["proposal"]["execution"]["result"],
        json!({"updated": true})
    );

    // The reviewer's page shows the whole story.
    let detail = browser.page(&format!("/proposals/{id}")).await;
    for action in [
        "proposal.submitted",
        "proposal.approved",
        "command.queued",
        "command.leased",
        "command.succeeded",
        "proposal.succeeded",
    ] {
        assert!(detail.contains(action), "audit trail shows {action}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_whole_loop_on_sqlite() {
    the_whole_loop("sqlite").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_whole_loop_on_postgres() {
    the_whole_loop("postgres").await;
}

#[tokio::test]
async fn rejection_reaches_the_agent_with_its_reason() {
    let app = TestApp::spawn("sqlite").await;
    let agent = app.agent_token("a1").await;
    let executor = app.executor_token("x1").await;
    app.user("rev", Role::Reviewer).await;
    let id = app.propose_ok(&agent, "a1").await;
    let browser = app.browser();
    browser.login("rev", PASSWORD).await;
    let r = browser.decide(&id, "rejected", Some("")).await;
    assert_eq!(
        location(&r),
        format!("/proposals/{id}?error=reason_required")
    );
    let r = browser
        .decide(&id, "rejected", Some("Wrong customer"))
        .await;
    assert_eq!(location(&r), format!("/proposals/{id}?notice=rejected"));
    let (_, polled) = app.poll(&agent, &id).await;
    assert_eq!(polled["proposal"]["status"], "rejected");
    assert_eq!(polled["proposal"]["authorization_state"], "none");
    assert_eq!(polled["proposal"]["review"]["reason"], "Wrong customer");
    assert_eq!(app.lease(&executor).await.0, StatusCode::NO_CONTENT);
}

#[tokio::test]
async fn executor_failures_reach_the_agent_and_stale_reports_are_refused() {
    let app = TestApp::spawn("sqlite").await;
    let agent = app.agent_token("a1").await;
    let executor = app.executor_token("x1").await;
    app.user("rev", Role::Reviewer).await;
    let id = app.propose_ok(&agent, "a1").await;
    let browser = app.browser();
    browser.login("rev", PASSWORD).await;
    browser.decide(&id, "approved", None).await;
    let (_, leased) = app.lease(&executor).await;
    let command_id = leased["command"]["id"].as_str().expect("id").to_owned();
    let token = leased["lease_token"].as_str().expect("token").to_owned();

    let (status, body) = app
        .report(
            &executor,
            &command_id,
            "fail",
            &json!({"lease_token": "csl_wrong", "error": "x"}),
        )
        .await;
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (StatusCode::CONFLICT, Some("lease_token_mismatch"))
    );
    let (status, body) = app
        .report(
            &executor,
            &command_id,
            "fail",
            &json!({"lease_token": token}),
        )
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(body["error"]["details"][0]["field"], "error");
    let (status, _) = app
        .report(
            &executor,
            &command_id,
            "fail",
            &json!({"lease_token": token, "error": {"message": "CRM timed out"}, "side_effect": "done"}),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    let (status, body) = app
        .report(
            &executor,
            &command_id,
            "complete",
            &json!({"lease_token": token, "result": {}}),
        )
        .await;
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (StatusCode::CONFLICT, Some("command_not_leased"))
    );
    let (_, polled) = app.poll(&agent, &id).await;
    assert_eq!(polled["proposal"]["status"], "failed");
    assert_eq!(
        polled["proposal"]["execution"]["error"]["message"],
        "CRM timed out"
    );
}
