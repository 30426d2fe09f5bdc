//! Agents waiting for a decision: `GET /api/v1/proposals/{id}?wait=` answers on the change
//! (also when another instance on the same PostgreSQL decides), at once when the proposal is
//! past `pending`, unchanged when the wait ends; bad `wait` values are `422` naming the field;
//! `GET /api/v1/proposals/{id}/events` streams each status and ends after the final one.

use std::time::{Duration, Instant};

use countersign::domain::principal::Role;
use reqwest::StatusCode;
use serde_json::Value;

use crate::common;
use crate::common::on_both_backends;
use crate::helpers::{Browser, PASSWORD, TestApp};

on_both_backends!(
    a_waiting_agent_hears_the_decision_as_it_commits,
    a_decided_proposal_answers_at_once_and_a_quiet_wait_ends_unchanged,
    wait_values_outside_the_contract_name_the_field,
    the_event_stream_follows_the_proposal_to_its_final_status,
);

async fn setup(app: &TestApp) -> (String, String, Browser) {
    let agent = app.agent_token("sales-agent").await;
    let r = app
        .propose(&agent, &common::proposal_body("sales-agent"))
        .await;
    assert_eq!(r.status(), StatusCode::CREATED);
    let created: Value = r.json().await.expect("json");
    let id = created["proposal"]["id"].as_str().expect("id").to_owned();
    app.user("rev", Role::Reviewer).await;
    let browser = app.browser();
    browser.login("rev", PASSWORD).await;
    (agent, id, browser)
}

async fn wait(app: &TestApp, token: &str, id: &str, query: &str) -> (StatusCode, Value) {
    let r = app
        .client
        .get(app.url(&format!("/api/v1/proposals/{id}{query}")))
        .bearer_auth(token)
        .send()
        .await
        .expect("request");
    (r.status(), r.json().await.unwrap_or(Value::Null))
}

async fn a_waiting_agent_hears_the_decision_as_it_commits(backend: &str) {
    let app = TestApp::spawn(backend).await;
    let (agent, id, browser) = setup(&app).await;
    // On PostgreSQL the agent waits on a second instance: the decision's NOTIFY wakes it.
    let other = if backend == "postgres" {
        Some(app.another_instance().await)
    } else {
        None
    };
    let waiter_app = other.as_ref().unwrap_or(&app);
    let started = Instant::now();
    let waiting = {
        let (client, url, token) = (
            waiter_app.client.clone(),
            waiter_app.url(&format!("/api/v1/proposals/{id}?wait=60")),
            agent.clone(),
        );
        tokio::spawn(async move {
            let r = client
                .get(url)
                .bearer_auth(token)
                .send()
                .await
                .expect("request");
            (
                r.status(),
                r.json::<Value>().await.expect("json"),
                Instant::now(),
            )
        })
    };
    // Decide only once the waiter is registered, so the wake-up (not the first read) answers.
    while waiter_app.services.store().changes().watched() == 0 {
        tokio::task::yield_now().await;
    }
    browser.decide(&id, "approved", None).await;
    let decided = Instant::now();
    let (status, body, answered) = waiting.await.expect("waiter");
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body["proposal"]["status"], "approved");
    assert_eq!(body["proposal"]["authorization_state"], "confirmed");
    assert!(
        answered.duration_since(decided) < Duration::from_secs(5)
            && started.elapsed() < Duration::from_secs(30),
        "the waiter answered on the change, not at the end of its wait"
    );
    assert_eq!(
        waiter_app.services.store().changes().watched(),
        0,
        "the waiter left nothing behind"
    );
}

async fn a_decided_proposal_answers_at_once_and_a_quiet_wait_ends_unchanged(backend: &str) {
    let app = TestApp::spawn(backend).await;
    let (agent, id, browser) = setup(&app).await;
    // Nothing happens for the one second the agent waits: it gets the pending proposal back.
    let started = Instant::now();
    let (status, body) = wait(&app, &agent, &id, "?wait=1").await;
    assert_eq!(
        (status, body["proposal"]["status"].as_str()),
        (StatusCode::OK, Some("pending"))
    );
    assert!(started.elapsed() >= Duration::from_secs(1));
    browser
        .decide(&id, "rejected", Some("not this quarter"))
        .await;
    // Past pending: a 60-second wait answers at once.
    let started = Instant::now();
    let (status, body) = wait(&app, &agent, &id, "?wait=60").await;
    assert_eq!(
        (status, body["proposal"]["status"].as_str()),
        (StatusCode::OK, Some("rejected"))
    );
    assert!(started.elapsed() < Duration::from_secs(10));
    // Another agent's proposal is not found, waiting or not.
    let stranger = app.agent_token("other-agent").await;
    assert_eq!(
        wait(&app, &stranger, &id, "?wait=5").await.0,
        StatusCode::NOT_FOUND
    );
}

async fn wait_values_outside_the_contract_name_the_field(backend: &str) {
    let app = TestApp::spawn(backend).await;
    let (agent, id, _) = setup(&app).await;
    for bad in ["61", "-1", "1.5", "soon", "", "99999999999999999999"] {
        let (status, body) = wait(&app, &agent, &id, &format!("?wait={bad}")).await;
        assert_eq!(
            status,
            StatusCode::UNPROCESSABLE_ENTITY,
            "wait={bad}: {body}"
        );
        assert_eq!(body["error"]["details"][0]["field"], "wait", "{body}");
    }
    let (status, body) = wait(&app, &agent, &id, "?wait=0").await;
    assert_eq!(
        (status, body["proposal"]["status"].as_str()),
        (StatusCode::OK, Some("pending"))
    );
}

async fn the_event_stream_follows_the_proposal_to_its_final_status(backend: &str) {
    let app = TestApp::spawn(backend).await;
    let (agent, id, browser) = setup(&app).await;
    let executor = app.executor_token("n8n").await;
    let r = app
        .client
        .get(app.url(&format!("/api/v1/proposals/{id}/events")))
        .bearer_auth(&agent)
        .send()
        .await
        .expect("request");
    assert_eq!(r.status(), StatusCode::OK);
    assert!(
        r.headers()["content-type"]
            .to_str()
            .expect("type")
            .starts_with("text/event-stream")
    );
    let mut body = r;
    let mut text = String::new();
    let mut statuses: Vec<String> = Vec::new();
    let mut next_status = async |text: &mut String, statuses: &mut Vec<String>| -> Option<String> {
        loop {
            if let Some(end) = text.find("\n\n") {
                let frame: String = text.drain(..end + 2).collect();
                if let Some(data) = frame.lines().find_map(|l| l.strip_prefix("data: ")) {
                    let v: Value = serde_json::from_str(data).expect("json event");
                    let s = v["proposal"]["status"].as_str().expect("status").to_owned();
                    statuses.push(s.clone());
                    return Some(s);
                }
                continue;
            }
            let chunk = tokio::time::timeout(Duration::from_secs(30), body.chunk())
                .await
                .expect("an event in time")
                .expect("chunk")?;
            text.push_str(std::str::from_utf8(&chunk).expect("utf-8"));
        }
    };
    assert_eq!(
        next_status(&mut text, &mut statuses).await.as_deref(),
        Some("pending")
    );
    browser.decide(&id, "approved", None).await;
    assert_eq!(
        next_status(&mut text, &mut statuses).await.as_deref(),
        Some("approved")
    );
    let (status, leased) = app.lease(&executor).await;
    assert_eq!(status, StatusCode::OK, "{leased}");
    let command = leased["command"]["id"]
        .as_str()
        .expect("command id")
        .to_owned();
    let token = leased["lease_token"]
        .as_str()
        .expect("lease token")
        .to_owned();
    let report = serde_json::json!({"lease_token": token, "result": {"ok": true}});
    let (status, body) = app.report(&executor, &command, "complete", &report).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(
        next_status(&mut text, &mut statuses).await.as_deref(),
        Some("succeeded")
    );
    // After the final status the server ends the stream.
    assert_eq!(
        next_status(&mut text, &mut statuses).await,
        None,
        "{statuses:?}"
    );
}
