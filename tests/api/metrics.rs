//! `GET /metrics`: Prometheus text that a Prometheus parser reads, with what the gate did
//! (pending proposals by domain and risk, decisions, time to decision, the decision paths'
//! latency, PostgreSQL's gathered status reads); refused without its token, absent when the operator opened nothing, and served
//! without a token only on its own listener (`--metrics-bind`), which is served under the main
//! listener's bounds.

use countersign::config::MetricsToken;
use countersign::domain::principal::Role;
use prometheus_parse::{Sample, Scrape, Value};
use reqwest::StatusCode;
use serde_json::json;

use crate::common::on_both_backends;
use crate::helpers::{PASSWORD, TestApp};

on_both_backends!(
    metrics_need_their_token_and_count_what_the_gate_did,
    without_a_token_metrics_are_served_only_on_their_own_listener,
    the_metrics_listener_is_bounded_like_the_main_one,
);

pub(crate) const TOKEN: &str = "metrics-secret-token";

pub(crate) async fn scrape(app: &TestApp, base: &str, token: Option<&str>) -> (StatusCode, String) {
    let mut request = app.client.get(format!("{base}/metrics"));
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    let r = request.send().await.expect("request");
    (r.status(), r.text().await.expect("text"))
}

pub(crate) fn parse(text: &str) -> Vec<Sample> {
    let lines = text.lines().map(|l| Ok(l.to_owned()));
    Scrape::parse(lines).expect("Prometheus text").samples
}

/// The value of the sample `name` whose labels include `labels`.
pub(crate) fn value(samples: &[Sample], name: &str, labels: &[(&str, &str)]) -> Option<f64> {
    samples
        .iter()
        .find(|s| {
            s.metric == name
                && labels
                    .iter()
                    .all(|(k, v)| s.labels.get(k).is_some_and(|l| l == *v))
        })
        .map(|s| match &s.value {
            Value::Counter(v) | Value::Gauge(v) | Value::Untyped(v) => *v,
            Value::Histogram(buckets) => buckets.last().map_or(0.0, |b| b.count),
            Value::Summary(_) => f64::NAN,
        })
}

async fn metrics_need_their_token_and_count_what_the_gate_did(backend: &str) {
    let app = TestApp::spawn_configured(backend, |s| {
        s.metrics_token = Some(MetricsToken(TOKEN.into()));
    })
    .await;
    assert_eq!(
        scrape(&app, &app.base, None).await.0,
        StatusCode::UNAUTHORIZED
    );
    let (status, body) = scrape(&app, &app.base, Some("wrong")).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert!(!body.contains("countersign_"), "nothing leaks: {body}");

    let agent = app.agent_token("sales-agent").await;
    let event = json!({
        "tool_name": "search_docs", "tool_category": "public_read", "authorization_state": "none",
        "evidence_refs": [], "risk_domain": "customer_support", "proposed_arguments": {},
        "recommended_route": "accept"
    });
    assert_eq!(app.pre_tool_check(&agent, &event).await.0, StatusCode::OK);
    let first = app.propose_ok(&agent, "sales-agent").await;
    app.propose_ok(&agent, "sales-agent").await;
    app.user("rev", Role::Reviewer).await;
    let browser = app.browser();
    browser.login("rev", PASSWORD).await;
    browser.decide(&first, "approved", None).await;

    let (status, text) = scrape(&app, &app.base, Some(TOKEN)).await;
    assert_eq!(status, StatusCode::OK);
    let samples = parse(&text);
    let (domain, risk) = {
        let p = crate::common::proposal_body("sales-agent");
        (
            p["domain"].as_str().expect("domain").to_owned(),
            p["risk_level"].as_str().expect("risk").to_owned(),
        )
    };
    let pending = [("domain", domain.as_str()), ("risk", risk.as_str())];
    assert_eq!(
        value(&samples, "countersign_pending_proposals", &pending),
        Some(1.0),
        "{text}"
    );
    let approved = [("outcome", "approved")];
    assert_eq!(
        value(&samples, "countersign_decisions_total", &approved),
        Some(1.0)
    );
    assert_eq!(
        value(&samples, "countersign_time_to_decision_seconds", &[]),
        Some(1.0),
        "one decision timed"
    );
    let checks = [("path", "pre_tool_check")];
    assert_eq!(
        value(&samples, "countersign_request_seconds", &checks),
        Some(1.0)
    );
    let submissions = [("path", "submission")];
    assert_eq!(
        value(&samples, "countersign_request_seconds", &submissions),
        Some(2.0)
    );
    assert!(
        !text.contains(TOKEN) && !text.contains(&agent),
        "no secret in the metrics"
    );

    // An agent's status read: on PostgreSQL, answered by the point reader's statement.
    assert_eq!(app.poll(&agent, &first).await.0, StatusCode::OK);
    let (_, text) = scrape(&app, &app.base, Some(TOKEN)).await;
    let samples = parse(&text);
    let gathered = |counted| {
        value(
            &samples,
            "countersign_gathered_reads_total",
            &[("counted", counted)],
        )
    };
    let expected = match backend {
        "postgres" => (Some(1.0), Some(1.0)),
        _ => (None, None),
    };
    assert_eq!(
        (gathered("reads"), gathered("statements")),
        expected,
        "{text}"
    );
}

async fn without_a_token_metrics_are_served_only_on_their_own_listener(backend: &str) {
    let closed = TestApp::spawn(backend).await;
    assert_eq!(
        scrape(&closed, &closed.base, Some(TOKEN)).await.0,
        StatusCode::NOT_FOUND,
        "nothing opened, nothing served"
    );
    let app = TestApp::spawn_configured(backend, |s| {
        s.metrics_bind = Some("127.0.0.1:0".parse().expect("addr"));
    })
    .await;
    let own = app.metrics_base.clone().expect("a metrics listener");
    let (status, text) = scrape(&app, &own, None).await;
    assert_eq!(status, StatusCode::OK);
    assert!(
        parse(&text)
            .iter()
            .any(|s| s.metric == "countersign_expiries_total")
    );
    assert_eq!(
        scrape(&app, &app.base, None).await.0,
        StatusCode::NOT_FOUND,
        "not on the main listener"
    );
}

/// The separate listener runs under the main one's bounds: a client that never finishes its
/// headers is cut off after the header timeout, and a 10 MiB body is `413` before it is read.
async fn the_metrics_listener_is_bounded_like_the_main_one(backend: &str) {
    use std::time::{Duration, Instant};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    let app = TestApp::spawn_configured(backend, |s| {
        s.metrics_bind = Some("127.0.0.1:0".parse().expect("addr"));
        s.limits.header_timeout = Duration::from_millis(500);
    })
    .await;
    let own = app.metrics_base.clone().expect("a metrics listener");
    let addr = own.trim_start_matches("http://");
    let answer = |head: &'static [u8]| async move {
        let mut stream = tokio::net::TcpStream::connect(addr).await.expect("connect");
        stream.write_all(head).await.expect("write");
        let mut answer = Vec::new();
        let read = tokio::time::timeout(Duration::from_secs(10), stream.read_to_end(&mut answer));
        read.await
            .expect("the listener closes the connection")
            .expect("read");
        String::from_utf8_lossy(&answer).into_owned()
    };
    let started = Instant::now();
    let slow = answer(b"GET /metrics HTTP/1.1\r\nHost: countersign\r\n").await;
    assert!(!slow.contains(" 200 "), "{slow}");
    assert!(started.elapsed() >= Duration::from_millis(400));
    let huge = answer(
        b"POST /metrics HTTP/1.1\r\nHost: countersign\r\nContent-Length: 10485760\r\n\
          Connection: close\r\n\r\n",
    )
    .await;
    assert!(huge.starts_with("HTTP/1.1 413"), "{huge}");
}
