//! The edges bounded, over HTTP: per-token rate limits (past its burst a token is answered
//! `429` with `Retry-After` and the JSON error, nothing is recorded for the refused request,
//! and another token goes on; the budget refilling over time is `src/api/limits.rs`'s unit
//! test), a token's waiting requests (agents' waits, executors' long polls), the body limit on
//! every route (`413`, nothing read past it, nothing written), the cap on a session's event
//! streams, and unknown bearer tokens throttled per client address.

use std::time::Duration;

use reqwest::StatusCode;
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::common::on_both_backends;
use crate::helpers::TestApp;

on_both_backends!(
    a_token_past_its_rate_waits_and_others_go_on,
    a_token_holds_at_most_its_waiting_requests,
    an_executors_long_poll_holds_one_of_its_waiting_places,
    a_body_over_the_limit_is_refused_on_every_route_before_it_is_read,
    a_chunked_body_is_cut_off_at_the_limit_and_changes_nothing,
    a_session_holds_at_most_sixteen_event_streams,
    unknown_tokens_from_one_address_are_refused_from_memory_and_valid_ones_go_on,
);

/// Ten mebibytes: far over the limit.
const HUGE: usize = 10 * 1024 * 1024;

/// Every family of routes, with the content type its clients send and whether it answers
/// JSON: the API, AANA's bridge, MCP, the health check, a page's server function (its forms
/// post there), a page, Slack's actions, single sign-on's callback, and a path nothing serves.
const FAMILIES: &[(&str, &str, bool)] = &[
    ("/api/v1/proposals", "application/json", true),
    ("/api/v1/pre-tool-check", "application/json", true),
    ("/aana/tool-precheck", "application/json", true),
    ("/mcp", "application/json", true),
    ("/healthz", "application/json", true),
    ("/fn/login", "application/x-www-form-urlencoded", false),
    (
        "/fn/decide_proposal",
        "application/x-www-form-urlencoded",
        false,
    ),
    ("/login", "application/x-www-form-urlencoded", false),
    (
        "/integrations/slack/actions",
        "application/x-www-form-urlencoded",
        false,
    ),
    (
        "/auth/oidc/callback",
        "application/x-www-form-urlencoded",
        false,
    ),
    ("/no/such/page", "application/octet-stream", false),
];

/// An app with Slack's route served, so it is among the routes tried.
async fn app_with_every_route(backend: &str) -> TestApp {
    TestApp::spawn_configured(backend, |s| {
        s.notify.slack_signing_secret = Some(countersign::service::SigningSecret(
            "slack-signing-secret-0123".into(),
        ));
    })
    .await
}

/// Sends `head` (a request line and headers, then a blank line), then `body` if any, and
/// reads the answer until the server closes the connection.
async fn raw(addr: &str, head: &str, body: &[u8]) -> String {
    let mut stream = TcpStream::connect(addr).await.expect("connect");
    stream.write_all(head.as_bytes()).await.expect("write head");
    if !body.is_empty() {
        stream.write_all(body).await.expect("write body");
    }
    let mut answer = Vec::new();
    tokio::time::timeout(Duration::from_secs(10), stream.read_to_end(&mut answer))
        .await
        .expect("the server answers and closes")
        .expect("read");
    String::from_utf8_lossy(&answer).into_owned()
}

fn host_port(base: &str) -> String {
    base.trim_start_matches("http://").to_owned()
}

/// The audit rows and proposals written so far.
async fn written(app: &TestApp) -> (i64, i64) {
    (
        app.count("select count(*) from audit_events").await,
        app.count("select count(*) from proposals").await,
    )
}

/// A request declaring a 10 MiB body is answered `413` at once, on every route: the answer
/// comes before a byte of the body was sent, so none was read. JSON routes answer the API's
/// error; nothing is written.
async fn a_body_over_the_limit_is_refused_on_every_route_before_it_is_read(backend: &str) {
    let app = app_with_every_route(backend).await;
    let token = app.agent_token("a1").await;
    let before = written(&app).await;
    for (path, content_type, json) in FAMILIES {
        let head = format!(
            "POST {path} HTTP/1.1\r\nHost: countersign\r\nAuthorization: Bearer {token}\r\n\
             Content-Type: {content_type}\r\nAccept: application/json, text/event-stream\r\n\
             Content-Length: {HUGE}\r\nConnection: close\r\n\r\n"
        );
        let answer = raw(&host_port(&app.base), &head, &[]).await;
        assert!(
            answer.starts_with("HTTP/1.1 413"),
            "{path}: {}",
            answer.lines().next().unwrap_or_default()
        );
        let body = answer.split("\r\n\r\n").nth(1).unwrap_or_default();
        if *json {
            let error: serde_json::Value = serde_json::from_str(body).expect("a JSON error");
            assert_eq!(error["error"]["code"], "payload_too_large", "{path}");
            assert!(
                answer
                    .to_ascii_lowercase()
                    .contains("content-type: application/json")
            );
        } else {
            assert!(
                body.contains("larger than the 256 KiB limit"),
                "{path}: {body}"
            );
        }
    }
    assert_eq!(written(&app).await, before, "nothing was written");
}

/// A body sent without a declared length (chunked) is read up to the limit and no further:
/// the request is answered `413` and changes nothing, on a JSON route and on a page's form.
async fn a_chunked_body_is_cut_off_at_the_limit_and_changes_nothing(backend: &str) {
    let app = app_with_every_route(backend).await;
    let token = app.agent_token("a1").await;
    app.user("rev", countersign::domain::principal::Role::Reviewer)
        .await;
    let before = written(&app).await;
    // Chunks of 64 KiB up to just past the limit: a valid start, then padding.
    let chunk = 64 * 1024;
    let mut body = Vec::new();
    let mut sent = 0;
    while sent <= 256 * 1024 {
        body.extend_from_slice(format!("{chunk:x}\r\n").as_bytes());
        body.extend(std::iter::repeat_n(b' ', chunk));
        body.extend_from_slice(b"\r\n");
        sent += chunk;
    }
    for (path, content_type) in [
        ("/api/v1/proposals", "application/json"),
        ("/fn/login", "application/x-www-form-urlencoded"),
        ("/mcp", "application/json"),
    ] {
        let head = format!(
            "POST {path} HTTP/1.1\r\nHost: countersign\r\nAuthorization: Bearer {token}\r\n\
             Content-Type: {content_type}\r\nAccept: application/json, text/event-stream\r\n\
             Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
        );
        let answer = raw(&host_port(&app.base), &head, &body).await;
        assert!(
            answer.starts_with("HTTP/1.1 413"),
            "{path}: {}",
            answer.lines().next().unwrap_or_default()
        );
    }
    assert_eq!(written(&app).await, before, "nothing was written");
}

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

/// A session holds at most 16 event streams (the queue's and proposals' together); the 17th is
/// `429` with `Retry-After`, another session has its own, and a stream that ends gives its
/// place back.
/// An executor's lease with `wait` holds one of its token's waiting places while it waits, as
/// an agent's wait does: one more long poll is `429 too_many_waits`, a lease that does not wait
/// still answers, and a long poll that ends gives its place back.
async fn an_executors_long_poll_holds_one_of_its_waiting_places(backend: &str) {
    let app = TestApp::spawn_configured(backend, |s| {
        s.rate.waiting = 1;
    })
    .await;
    let runner = app.executor_token("runner").await;
    let lease = |wait: u64| {
        let (client, url, token) = (
            app.client.clone(),
            app.url("/api/v1/executor/lease"),
            runner.clone(),
        );
        async move {
            let r = client
                .post(url)
                .bearer_auth(token)
                .json(&json!({"wait": wait}));
            r.send().await.expect("request")
        }
    };
    // Two long polls at once: whichever comes second finds the token's one place held and is
    // refused at once; the other holds it while it waits.
    let (mut a, mut b) = (tokio::spawn(lease(30)), tokio::spawn(lease(30)));
    let (refused, polling) = tokio::select! {
        r = &mut a => (r.expect("long poll"), b),
        r = &mut b => (r.expect("long poll"), a),
    };
    assert_eq!(refused.status(), StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(refused.headers()["retry-after"], "1");
    let body: serde_json::Value = refused.json().await.expect("json");
    assert_eq!(body["error"]["code"], "too_many_waits");
    assert_eq!(lease(0).await.status(), StatusCode::NO_CONTENT, "no wait");

    // A command for the long poll: it answers with it, and its place is free again.
    let agent = app.agent_token("sales-agent").await;
    let id = app.propose_ok(&agent, "sales-agent").await;
    app.user("rev", countersign::domain::principal::Role::Reviewer)
        .await;
    let browser = app.browser();
    browser.login("rev", crate::helpers::PASSWORD).await;
    browser.decide(&id, "approved", None).await;
    let leased = polling.await.expect("long poll");
    assert_eq!(leased.status(), StatusCode::OK);
    assert_eq!(lease(1).await.status(), StatusCode::NO_CONTENT);
}

async fn a_session_holds_at_most_sixteen_event_streams(backend: &str) {
    let app = TestApp::spawn(backend).await;
    app.user("rev", countersign::domain::principal::Role::Reviewer)
        .await;
    let agent = app.agent_token("sales-agent").await;
    let id = app.propose_ok(&agent, "sales-agent").await;
    let proposal = format!("/events/proposals/{id}");
    let browser = app.browser();
    browser.login("rev", crate::helpers::PASSWORD).await;
    let mut open = Vec::new();
    for i in 0..16 {
        let path = if i % 2 == 0 {
            "/events/desk"
        } else {
            &proposal
        };
        let stream = browser.get(path).await;
        assert_eq!(stream.status(), StatusCode::OK, "stream {}", i + 1);
        open.push(stream);
    }
    for path in ["/events/desk", proposal.as_str()] {
        let refused = browser.get(path).await;
        assert_eq!(refused.status(), StatusCode::TOO_MANY_REQUESTS, "{path}");
        assert_eq!(refused.headers()["retry-after"], "1");
    }
    let other = app.browser();
    other.login("rev", crate::helpers::PASSWORD).await;
    assert_eq!(
        other.get("/events/desk").await.status(),
        StatusCode::OK,
        "another session has its own places"
    );
    // The server hears the client go when its connection closes.
    drop(open.pop());
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let again = browser.get("/events/desk").await;
        if again.status() == StatusCode::OK {
            break;
        }
        assert_eq!(again.status(), StatusCode::TOO_MANY_REQUESTS);
        assert!(
            std::time::Instant::now() < deadline,
            "the ended stream's place came back"
        );
    }
}

/// `GET /api/v1/proposals/{id}` with `token`, from `client` (the test's proxy forwards it).
async fn poll_from(app: &TestApp, client: &str, token: &str, id: &str) -> reqwest::Response {
    app.client
        .get(app.url(&format!("/api/v1/proposals/{id}")))
        .bearer_auth(token)
        .header("x-forwarded-for", client)
        .send()
        .await
        .expect("request")
}

/// Twenty unknown tokens from one address are looked up and refused (`401`); then that
/// address's unknown tokens are answered `429 too_many_unknown_tokens` with `Retry-After`,
/// without a lookup: a token created after the active tokens were last read is refused too,
/// until they are read again. A valid token from the address goes on, cached or not; another
/// address is not throttled; once the wait is over, unknown tokens are looked up again, and
/// the next wait is longer.
async fn unknown_tokens_from_one_address_are_refused_from_memory_and_valid_ones_go_on(
    backend: &str,
) {
    let app = TestApp::spawn_configured(backend, |s| {
        s.trusted_proxies = vec!["127.0.0.1".parse().expect("ip")];
    })
    .await;
    let agent = app.agent_token("a1").await;
    let id = app.propose_ok(&agent, "a1").await;
    let (guesser, neighbour) = ("203.0.113.9", "198.51.100.7");
    for i in 0..20 {
        let r = poll_from(&app, guesser, &format!("guess-{i}"), &id).await;
        assert_eq!(r.status(), StatusCode::UNAUTHORIZED, "guess {i}");
    }
    let refused = poll_from(&app, guesser, "guess-20", &id).await;
    assert_eq!(refused.status(), StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(refused.headers()["retry-after"], "30");
    let body: serde_json::Value = refused.json().await.expect("json");
    assert_eq!(body["error"]["code"], "too_many_unknown_tokens");

    // A valid token from the same address: cached, then (the cache emptied) looked up.
    assert_eq!(
        poll_from(&app, guesser, &agent, &id).await.status(),
        StatusCode::OK
    );
    app.services.credentials_revoked();
    assert_eq!(
        poll_from(&app, guesser, &agent, &id).await.status(),
        StatusCode::OK
    );
    // A token the table holds but the throttle has not read yet is not looked up…
    let fresh = app.agent_token("a2").await;
    let check = |token: String| {
        let app = &app;
        async move {
            let r = app
                .client
                .post(app.url("/api/v1/pre-tool-check"))
                .bearer_auth(token)
                .header("x-forwarded-for", guesser)
                .json(&crate::common::check_body())
                .send()
                .await
                .expect("request");
            r.status()
        }
    };
    assert_eq!(check(fresh.clone()).await, StatusCode::TOO_MANY_REQUESTS);
    // …until the active tokens are read again.
    app.clock.advance(time::Duration::seconds(5));
    assert_eq!(check(fresh).await, StatusCode::OK);
    // Another address has its own count.
    let other = poll_from(&app, neighbour, "guess-x", &id).await;
    assert_eq!(other.status(), StatusCode::UNAUTHORIZED);

    // The wait over, an unknown token is looked up again; its failure makes the next wait 60 s.
    app.clock.advance(time::Duration::seconds(30));
    let again = poll_from(&app, guesser, "guess-21", &id).await;
    assert_eq!(again.status(), StatusCode::UNAUTHORIZED);
    let longer = poll_from(&app, guesser, "guess-22", &id).await;
    assert_eq!(longer.status(), StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(longer.headers()["retry-after"], "60");
}
