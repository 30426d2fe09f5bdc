//! Per-token rate limits over HTTP: past its burst a token is answered `429` with
//! `Retry-After` and the JSON error, nothing is recorded for the refused request, and another
//! token goes on. (The budget refilling over time is `src/api/limits.rs`'s unit test.)

use reqwest::StatusCode;
use serde_json::json;

use crate::common::on_both_backends;
use crate::helpers::TestApp;

on_both_backends!(
    a_token_past_its_rate_waits_and_others_go_on,
    a_token_holds_at_most_its_waiting_requests,
);

async fn a_token_past_its_rate_waits_and_others_go_on(backend: &str) {
    let app = TestApp::spawn_configured(backend, |s| {
        s.rate = countersign::config::RateLimit {
            per_second: 1,
            burst: 3,
            waiting: 1_000,
        };
    })
    .await;
    let busy = app.agent_token("busy-agent").await;
    let calm = app.agent_token("calm-agent").await;
    let event = json!({
        "tool_name": "search_docs", "tool_category": "public_read", "authorization_state": "none",
        "evidence_refs": [], "risk_domain": "customer_support", "proposed_arguments": {},
        "recommended_route": "accept"
    });
    for _ in 0..3 {
        assert_eq!(app.pre_tool_check(&busy, &event).await.0, StatusCode::OK);
    }
    let r = app
        .client
        .post(app.url("/api/v1/pre-tool-check"))
        .bearer_auth(&busy)
        .json(&event)
        .send()
        .await
        .expect("request");
    assert_eq!(r.status(), StatusCode::TOO_MANY_REQUESTS);
    let retry: u64 = r.headers()["retry-after"]
        .to_str()
        .expect("ascii")
        .parse()
        .expect("seconds");
    assert!((1..=1).contains(&retry), "retry after {retry} s");
    let body: serde_json::Value = r.json().await.expect("json");
    assert_eq!(body["error"]["code"], "rate_limited");
    // Only the three answered checks were recorded.
    let recorded = app
        .count("select count(*) from audit_events where action = 'pre_tool_check.decided'")
        .await;
    assert_eq!(recorded, 3);
    // Another token has its own budget.
    assert_eq!(app.pre_tool_check(&calm, &event).await.0, StatusCode::OK);
}

/// A token holds at most its number of waiting requests (`?wait=`, event streams); one more is
/// `429 too_many_waits` with `Retry-After`, a plain read still answers, and a wait that ends
/// gives its place back.
async fn a_token_holds_at_most_its_waiting_requests(backend: &str) {
    let app = TestApp::spawn_configured(backend, |s| {
        s.rate.waiting = 2;
    })
    .await;
    let agent = app.agent_token("sales-agent").await;
    let mut ids = Vec::new();
    for _ in 0..3 {
        ids.push(app.propose_ok(&agent, "sales-agent").await);
    }
    let waiting: Vec<_> = ids[..2]
        .iter()
        .map(|id| {
            let (client, url, token) = (
                app.client.clone(),
                app.url(&format!("/api/v1/proposals/{id}?wait=60")),
                agent.clone(),
            );
            tokio::spawn(async move {
                let r = client.get(url).bearer_auth(token).send().await;
                r.expect("request").status()
            })
        })
        .collect();
    while app.services.store().changes().watched() < 2 {
        tokio::task::yield_now().await;
    }
    let refused = app
        .client
        .get(app.url(&format!("/api/v1/proposals/{}?wait=5", ids[2])))
        .bearer_auth(&agent)
        .send()
        .await
        .expect("request");
    assert_eq!(refused.status(), StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(refused.headers()["retry-after"], "1");
    let body: serde_json::Value = refused.json().await.expect("json");
    assert_eq!(body["error"]["code"], "too_many_waits");
    let stream = app
        .client
        .get(app.url(&format!("/api/v1/proposals/{}/events", ids[2])))
        .bearer_auth(&agent)
        .send()
        .await
        .expect("request");
    assert_eq!(
        stream.status(),
        StatusCode::TOO_MANY_REQUESTS,
        "a stream waits too"
    );
    assert_eq!(
        app.poll(&agent, &ids[2]).await.0,
        StatusCode::OK,
        "a read without wait"
    );
    let other = app.agent_token("ops-agent").await;
    let id = app.propose_ok(&other, "ops-agent").await;
    let r = app
        .client
        .get(app.url(&format!("/api/v1/proposals/{id}?wait=1")))
        .bearer_auth(&other)
        .send()
        .await
        .expect("request");
    assert_eq!(
        r.status(),
        StatusCode::OK,
        "another token waits on its own places"
    );

    // A decision ends a wait; its place is free again.
    app.user("rev", countersign::domain::principal::Role::Reviewer)
        .await;
    let browser = app.browser();
    browser.login("rev", crate::helpers::PASSWORD).await;
    browser.decide(&ids[0], "approved", None).await;
    let mut waiting = waiting.into_iter();
    let first = waiting.next().expect("first waiter");
    assert_eq!(first.await.expect("waiter"), StatusCode::OK);
    let r = app
        .client
        .get(app.url(&format!("/api/v1/proposals/{}?wait=1", ids[0])))
        .bearer_auth(&agent)
        .send()
        .await
        .expect("request");
    assert_eq!(r.status(), StatusCode::OK);
}
