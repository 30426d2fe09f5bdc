//! The executor API through HTTP: the lease body (tools, long-poll wait), heartbeats and
//! reports that need the current lease token, `side_effect` on failures, the signed grant and
//! its public key, and the example executor (`examples/executor`) against a real server.

use countersign::domain::principal::Principal;
use std::time::Duration;

use countersign::domain::lifecycle::ReviewVerdict;
use countersign::domain::principal::Role;
use countersign::service::Decided;
use ed25519_dalek::{Signature, Verifier, VerifyingKey};
use reqwest::StatusCode;
use serde_json::{Value, json};
use uuid::Uuid;

use crate::common;
use crate::helpers::TestApp;

/// An agent proposes; a reviewer approves in-process; the proposal's id.
async fn approved(app: &TestApp) -> String {
    let agent = app.agent_token("agent-a").await;
    let id = app.propose_ok(&agent, "agent-a").await;
    let rev = Principal::person("rev", Role::Reviewer);
    let decided = app
        .services
        .decide(
            &rev,
            Uuid::parse_str(&id).expect("id"),
            ReviewVerdict::Approved,
            None,
        )
        .await
        .expect("approve");
    assert!(matches!(decided, Decided::Final(_)));
    id
}

async fn post(app: &TestApp, token: &str, path: &str, body: Value) -> (StatusCode, Value) {
    let r = app
        .client
        .post(app.url(path))
        .bearer_auth(token)
        .json(&body)
        .send()
        .await
        .expect("request");
    let status = r.status();
    (status, r.json().await.unwrap_or(Value::Null))
}

async fn a_waiting_lease_answers_as_soon_as_a_command_is_queued(backend: &str) {
    let app = TestApp::spawn(backend).await;
    // A second instance on the same database: on PostgreSQL the wake-up crosses instances.
    let other = app.another_instance().await;
    let executor = app.executor_token("exec").await;
    let base = other.base.clone();
    let token = executor.clone();
    let waiting = tokio::spawn(async move {
        let started = std::time::Instant::now();
        let r = reqwest::Client::new()
            .post(format!("{base}/api/v1/executor/lease"))
            .bearer_auth(token)
            .json(&json!({"wait": 30}))
            .send()
            .await
            .expect("lease");
        (
            r.status(),
            started.elapsed(),
            r.json::<Value>().await.unwrap_or(Value::Null),
        )
    });
    let id = approved(&app).await;
    let (status, waited, body) = waiting.await.expect("task");
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body["command"]["proposal_id"], json!(id));
    assert!(
        waited < Duration::from_secs(25),
        "answered on the wake-up, not at the end: {waited:?}"
    );
}

async fn reports_need_the_current_lease_token(backend: &str) {
    let app = TestApp::spawn(backend).await;
    let executor = app.executor_token("exec").await;
    approved(&app).await;
    let (status, leased) = post(
        &app,
        &executor,
        "/api/v1/executor/lease",
        json!({"tools": ["crm.*"]}),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let id = leased["command"]["id"].as_str().expect("id").to_owned();
    let token = leased["lease_token"].as_str().expect("token").to_owned();
    let beat = format!("/api/v1/executor/commands/{id}/heartbeat");
    let (status, e) = post(
        &app,
        &executor,
        &beat,
        json!({"lease_token": "lease_stale"}),
    )
    .await;
    assert_eq!(
        (status, e["error"]["code"].as_str()),
        (StatusCode::CONFLICT, Some("lease_token_mismatch"))
    );
    let (status, ok) = post(
        &app,
        &executor,
        &beat,
        json!({"lease_token": token, "lease_seconds": 120}),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert!(ok["lease_expires_at"].is_string());
    let fail = format!("/api/v1/executor/commands/{id}/fail");
    let (status, e) = post(
        &app,
        &executor,
        &fail,
        json!({"lease_token": token, "error": {}, "side_effect": "maybe"}),
    )
    .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(e["error"]["details"][0]["field"], "side_effect");
    let (status, done) = post(
        &app,
        &executor,
        &fail,
        json!({"lease_token": token, "error": {"e": 1}, "side_effect": "possible"}),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(done["command"]["status"], "outcome_unknown");
    // The agent sees it too.
    let agent = app.agent_token("agent-a").await;
    let proposal = done["command"]["proposal_id"].as_str().expect("id");
    assert_eq!(
        app.poll(&agent, proposal).await.1["proposal"]["status"],
        "outcome_unknown"
    );
    let (status, e) = post(
        &app,
        &executor,
        &fail,
        json!({"lease_token": token, "error": {}}),
    )
    .await;
    assert_eq!(
        (status, e["error"]["code"].as_str()),
        (StatusCode::CONFLICT, Some("command_not_leased"))
    );
}

async fn the_lease_carries_a_grant_the_public_key_verifies(backend: &str) {
    let app = TestApp::spawn(backend).await;
    let executor = app.executor_token("exec").await;
    approved(&app).await;
    let (_, leased) = post(&app, &executor, "/api/v1/executor/lease", json!({})).await;
    let key: Value = app
        .client
        .get(app.url("/api/v1/executor/public-key"))
        .bearer_auth(&executor)
        .send()
        .await
        .expect("key")
        .json()
        .await
        .expect("json");
    let bytes: [u8; 32] = hex::decode(key["public_key"].as_str().expect("hex"))
        .expect("hex")
        .try_into()
        .expect("32");
    let key = VerifyingKey::from_bytes(&bytes).expect("key");
    let mut claims = leased["grant"].clone();
    let sig = claims
        .as_object_mut()
        .expect("grant")
        .remove("signature")
        .expect("signature");
    let sig: [u8; 64] = hex::decode(sig.as_str().expect("hex"))
        .expect("hex")
        .try_into()
        .expect("64");
    let message = serde_json_canonicalizer::to_vec(&claims).expect("jcs");
    assert!(key.verify(&message, &Signature::from_bytes(&sig)).is_ok());
    assert_eq!(claims["command_id"], leased["command"]["id"]);
    assert_eq!(claims["tool"], leased["command"]["tool"]["name"]);
    claims["attempt"] = json!(2);
    let message = serde_json_canonicalizer::to_vec(&claims).expect("jcs");
    assert!(key.verify(&message, &Signature::from_bytes(&sig)).is_err());
}

/// A success report that asks for `next` is answered with the executor's next command, leased
/// in the report's transaction (its grant signed for it), and `next: null` when none is ready;
/// a report without `next` answers as before. A refused report (a stale token) leases nothing.
async fn a_completion_leases_the_next_command(backend: &str) {
    let app = TestApp::spawn(backend).await;
    let executor = app.executor_token("exec").await;
    let first = approved(&app).await;
    let second = approved(&app).await;
    let (status, leased) = post(&app, &executor, "/api/v1/executor/lease", json!({})).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(leased["command"]["proposal_id"], json!(first));
    let id = leased["command"]["id"].as_str().expect("id").to_owned();
    let token = leased["lease_token"].as_str().expect("token").to_owned();
    let complete = |id: &str| format!("/api/v1/executor/commands/{id}/complete");
    let (status, done) = post(
        &app,
        &executor,
        &complete(&id),
        json!({"lease_token": token, "result": {"ok": 1}, "next": {"lease_seconds": 120}}),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{done}");
    assert_eq!(done["command"]["status"], "succeeded");
    let next = &done["next"];
    assert_eq!(next["command"]["proposal_id"], json!(second), "{done}");
    assert_eq!(next["command"]["status"], "leased");
    let next_id = next["command"]["id"].as_str().expect("id").to_owned();
    assert_eq!(next["grant"]["command_id"], json!(next_id));
    let next_token = next["lease_token"].as_str().expect("token").to_owned();
    assert_ne!(next_token, token);
    // The same report again, now stale: refused, and the command approved meanwhile stays
    // queued for the next lease.
    let third = approved(&app).await;
    let (status, e) = post(
        &app,
        &executor,
        &complete(&id),
        json!({"lease_token": token, "result": {}, "next": {}}),
    )
    .await;
    assert_eq!(
        (status, e["error"]["code"].as_str()),
        (StatusCode::CONFLICT, Some("command_not_leased")),
        "{e}"
    );
    assert!(e.get("next").is_none());
    // The next command's report, taken: it leases the third (the refusal left it queued).
    let (status, done) = post(
        &app,
        &executor,
        &complete(&next_id),
        json!({"lease_token": next_token, "result": {}, "next": {"tools": ["crm.*"]}}),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{done}");
    assert_eq!(done["next"]["command"]["proposal_id"], json!(third));
    let last_id = done["next"]["command"]["id"]
        .as_str()
        .expect("id")
        .to_owned();
    let last_token = done["next"]["lease_token"]
        .as_str()
        .expect("token")
        .to_owned();
    // Nothing queued: `next` is null; without `next`, the answer has none.
    let (status, done) = post(
        &app,
        &executor,
        &complete(&last_id),
        json!({"lease_token": last_token, "result": {}, "next": {}}),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{done}");
    assert_eq!(done["command"]["status"], "succeeded");
    assert!(
        done["next"].is_null() && done.get("next").is_some(),
        "{done}"
    );
    let fourth = approved(&app).await;
    let (_, leased) = post(&app, &executor, "/api/v1/executor/lease", json!({})).await;
    assert_eq!(leased["command"]["proposal_id"], json!(fourth));
    let (status, done) = post(
        &app,
        &executor,
        &complete(leased["command"]["id"].as_str().expect("id")),
        json!({"lease_token": leased["lease_token"], "result": {}}),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert!(done.get("next").is_none(), "{done}");
}

common::on_both_backends!(
    a_completion_leases_the_next_command,
    a_waiting_lease_answers_as_soon_as_a_command_is_queued,
    reports_need_the_current_lease_token,
    the_lease_carries_a_grant_the_public_key_verifies,
    a_gateway_call_approved_where_no_gateway_runs_is_no_external_executors,
);

/// A call made through the MCP gateway (its idempotency key of the gateway's shape), approved
/// on an instance that serves no gateway (one for the pages only), is still the gateway
/// executor's alone: an executor whose scope matches every tool leases nothing.
async fn a_gateway_call_approved_where_no_gateway_runs_is_no_external_executors(backend: &str) {
    let app = TestApp::spawn(backend).await;
    let agent = app.agent_token("coder").await;
    let mut body = common::proposal_body("coder");
    let id = Uuid::new_v4();
    body["proposal_id"] = json!(id);
    body["tool"] = json!({"name": "files.write_file", "version": "sha256:0"});
    body["idempotency_key"] = json!(format!("gateway-{}-{id}", "0".repeat(32)));
    // Only the gateway proposes such a call: through the API, the key is refused.
    let r = app.propose(&agent, &body).await;
    assert_eq!(r.status(), StatusCode::UNPROCESSABLE_ENTITY);
    let refused: serde_json::Value = r.json().await.expect("json");
    assert_eq!(
        refused["error"]["details"][0]["field"], "idempotency_key",
        "{refused}"
    );
    // As the gateway of another instance made it (this one serves none, so nothing is leased).
    let run = countersign::service::LeaseRequest {
        executor: "countersign-gateway".into(),
        scope: None,
        wanted: None,
        lease_seconds: 30,
        wait: std::time::Duration::ZERO,
    };
    let coder = countersign::domain::principal::Principal::Agent("coder".into());
    let (_, leased) = (app
        .services
        .submit_gateway_call(&coder, None, &body, Some(&run)))
    .await
    .expect("stored");
    assert!(leased.is_none());
    let command = app.approve_queued(id).await;
    assert_eq!(command.spec.allowed_executors, ["countersign-gateway"]);
    let everything = app.executor_token("everything").await;
    let (status, leased) = post(&app, &everything, "/api/v1/executor/lease", json!({})).await;
    assert_eq!(status, StatusCode::NO_CONTENT, "{leased}");
}

#[tokio::test]
async fn the_lease_body_is_checked_and_an_empty_wait_ends_in_204() {
    let app = TestApp::spawn("sqlite").await;
    let executor = app.executor_token("exec").await;
    let lease = "/api/v1/executor/lease";
    for (body, field) in [
        (json!({"wait": 61}), "wait"),
        (json!({"wait": "soon"}), "wait"),
        (json!({"tools": "crm.*"}), "tools"),
        (json!({"tools": ["crm.[a]"]}), "tools"),
        (json!({"tools": []}), "tools"),
    ] {
        let (status, e) = post(&app, &executor, lease, body.clone()).await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
        assert_eq!(e["error"]["details"][0]["field"], field, "{body}");
    }
    let (status, _) = post(&app, &executor, lease, json!({"wait": 1})).await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    // A report's `next` is a lease body without `wait`, its errors named under `next`; only a
    // success report takes one. Checked before the report is made: nothing is written.
    let id = Uuid::new_v4();
    let complete = format!("/api/v1/executor/commands/{id}/complete");
    for (body, field) in [
        (
            json!({"lease_token": "t", "result": {}, "next": {"wait": 5}}),
            "next.wait",
        ),
        (
            json!({"lease_token": "t", "result": {}, "next": {"tools": "crm.*"}}),
            "next.tools",
        ),
        (
            json!({"lease_token": "t", "result": {}, "next": {"lease_seconds": 0}}),
            "next.lease_seconds",
        ),
        (json!({"lease_token": "t", "result": {}, "next": 3}), "next"),
    ] {
        let (status, e) = post(&app, &executor, &complete, body.clone()).await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
        assert_eq!(e["error"]["details"][0]["field"], field, "{body}");
    }
    // The report's own broken rules are named with those of `next`.
    let body = json!({"result": {}, "next": {"wait": 5}});
    let (status, e) = post(&app, &executor, &complete, body).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    let fields: Vec<&str> = (e["error"]["details"].as_array().expect("details").iter())
        .filter_map(|d| d["field"].as_str())
        .collect();
    assert_eq!(fields, ["next.wait", "lease_token"], "{e}");
    let fail = format!("/api/v1/executor/commands/{id}/fail");
    let body = json!({"lease_token": "t", "error": {}, "next": {}});
    let (status, e) = post(&app, &executor, &fail, body).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(e["error"]["details"][0]["field"], "next");
}

/// The example executor (`examples/executor`), built by `cargo test`, leases with long-poll,
/// verifies the grant, heartbeats, runs its harmless action and reports, against a real server;
/// its first report takes the second command with it (`next`), the last asks for nothing.
#[tokio::test]
async fn the_example_executor_runs_approved_commands() {
    let app = TestApp::spawn("sqlite").await;
    let executor = app.scoped_executor_token("example", Some("crm.*")).await;
    let ids = [approved(&app).await, approved(&app).await];
    let third = approved(&app).await;
    let out = tempfile::tempdir().expect("dir");
    let binary = std::env::current_exe()
        .expect("test binary")
        .parent()
        .and_then(|deps| deps.parent())
        .expect("target dir")
        .join("examples/executor");
    let output = tokio::process::Command::new(&binary)
        .args([
            "--url",
            &app.base,
            "--commands",
            "2",
            "--wait",
            "10",
            "--tools",
            "crm.*",
            "--out",
        ])
        .arg(out.path())
        .env("COUNTERSIGN_EXECUTOR_TOKEN", &executor)
        .output()
        .await
        .unwrap_or_else(|e| panic!("{}: {e}", binary.display()));
    assert!(output.status.success(), "{output:?}");
    let agent = app.agent_token("agent-a").await;
    for id in &ids {
        let (_, polled) = app.poll(&agent, id).await;
        assert_eq!(polled["proposal"]["status"], "succeeded", "{id}");
    }
    // The second command came with the first's report; the third was not taken by an executor
    // about to stop.
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("came with the last report"), "{stderr}");
    let (_, polled) = app.poll(&agent, &third).await;
    assert_eq!(polled["proposal"]["status"], "approved", "{polled}");
    let written = std::fs::read_dir(out.path()).expect("out").count();
    assert_eq!(written, 2);
}
