//! Per-token rate limits over HTTP: past its burst a token is answered `429` with
//! `Retry-After` and the JSON error, nothing is recorded for the refused request, and another
//! token goes on. (The budget refilling over time is `src/api/limits.rs`'s unit test.)

use reqwest::StatusCode;
use serde_json::json;

use crate::common::on_both_backends;
use crate::helpers::TestApp;

on_both_backends!(a_token_past_its_rate_waits_and_others_go_on);

async fn a_token_past_its_rate_waits_and_others_go_on(backend: &str) {
    let app = TestApp::spawn_configured(backend, |s| {
        s.rate = countersign::config::RateLimit {
            per_second: 1,
            burst: 3,
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
