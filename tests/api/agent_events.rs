//! An agent's one event stream, `GET /api/v1/events`, on both backends: on open a `status`
//! event for each of its proposals not yet final, then one per move (new proposals included),
//! each carrying exactly what `GET /api/v1/proposals/{id}` answers; another agent's proposals
//! never appear; the stream holds a waiting place (one more is `429`), and ends when its token
//! is revoked. On PostgreSQL, moves committed by another instance reach it, and a revocation
//! there ends it.

use std::time::Duration;

use countersign::domain::principal::{Principal, Role, TokenKind};
use reqwest::StatusCode;
use serde_json::Value;

use crate::common::on_both_backends;
use crate::helpers::{Browser, PASSWORD, TestApp};

on_both_backends!(
    one_stream_tells_every_move_of_its_agents_proposals_and_no_others,
    the_stream_holds_a_waiting_place_and_ends_when_its_token_is_revoked,
);

/// One server-sent event: its name, its `id:` and its data.
#[derive(Debug)]
struct Sent {
    event: String,
    id: Option<String>,
    data: Value,
}

/// An open `GET /api/v1/events`, read event by event.
struct Events {
    body: reqwest::Response,
    text: String,
}

impl Events {
    async fn open(app: &TestApp, token: &str) -> Events {
        Self::opened(events(app, token).await)
    }

    /// Proposal `id`'s own stream (`GET /api/v1/proposals/{id}/events`).
    async fn of_proposal(app: &TestApp, token: &str, id: &str) -> Events {
        let r = app
            .client
            .get(app.url(&format!("/api/v1/proposals/{id}/events")))
            .bearer_auth(token)
            .send()
            .await
            .expect("request");
        Self::opened(r)
    }

    fn opened(r: reqwest::Response) -> Events {
        assert_eq!(r.status(), StatusCode::OK);
        let kind = r.headers()["content-type"]
            .to_str()
            .expect("type")
            .to_owned();
        assert!(kind.starts_with("text/event-stream"), "{kind}");
        Events {
            body: r,
            text: String::new(),
        }
    }

    /// The next event, `None` once the server ended the stream.
    async fn next(&mut self) -> Option<Sent> {
        loop {
            if let Some(end) = self.text.find("\n\n") {
                let frame: String = self.text.drain(..end + 2).collect();
                let field = |name: &str| {
                    frame
                        .lines()
                        .find_map(|l| l.strip_prefix(name).map(str::to_owned))
                };
                // Keep-alive comments carry no data.
                let Some(data) = field("data: ") else {
                    continue;
                };
                return Some(Sent {
                    event: field("event: ").expect("every event is named"),
                    id: field("id: "),
                    data: serde_json::from_str(&data).expect("json data"),
                });
            }
            let chunk = tokio::time::timeout(Duration::from_secs(30), self.body.chunk())
                .await
                .expect("an event in time")
                .expect("chunk")?;
            self.text
                .push_str(std::str::from_utf8(&chunk).expect("utf-8"));
        }
    }

    /// The next `status` event. A `gap` resync (this instance's PostgreSQL listener connected
    /// after the stream opened) is passed over; any other `resync` fails the test.
    async fn status(&mut self) -> Sent {
        loop {
            let sent = self.next().await.expect("the stream is open");
            if sent.event == "resync" && sent.data["reason"] == "gap" {
                continue;
            }
            assert_eq!(sent.event, "status", "{sent:?}");
            return sent;
        }
    }
}

async fn events(app: &TestApp, token: &str) -> reqwest::Response {
    app.client
        .get(app.url("/api/v1/events"))
        .bearer_auth(token)
        .send()
        .await
        .expect("request")
}

async fn reviewer(app: &TestApp) -> Browser {
    app.user("rev", Role::Reviewer).await;
    let browser = app.browser();
    browser.login("rev", PASSWORD).await;
    browser
}

/// `sent` is a `status` event for proposal `id` in `status`, and its data is exactly what
/// `GET /api/v1/proposals/{id}` answers now.
async fn assert_told(app: &TestApp, token: &str, sent: &Sent, id: &str, status: &str) {
    assert_eq!(sent.id.as_deref(), Some(id), "{sent:?}");
    assert_eq!(sent.data["proposal"]["id"], id);
    assert_eq!(sent.data["proposal"]["status"], status, "{sent:?}");
    let (code, read) = app.poll(token, id).await;
    assert_eq!(code, StatusCode::OK);
    assert_eq!(sent.data, read, "the event's data is the proposal's read");
}

async fn one_stream_tells_every_move_of_its_agents_proposals_and_no_others(backend: &str) {
    let app = TestApp::spawn(backend).await;
    let agent = app.agent_token("sales-agent").await;
    let other = app.agent_token("other-agent").await;
    let browser = reviewer(&app).await;
    // Before the stream opens: a settled proposal (not in the snapshot), a pending one (in
    // it), and another agent's (never on this stream).
    let settled = app.propose_ok(&agent, "sales-agent").await;
    browser.decide(&settled, "rejected", Some("no")).await;
    let first = app.propose_ok(&agent, "sales-agent").await;
    let theirs = app.propose_ok(&other, "other-agent").await;

    let mut stream = Events::open(&app, &agent).await;
    let sent = stream.status().await;
    assert_told(&app, &agent, &sent, &first, "pending").await;

    // Submitted after the stream opened.
    let second = app.propose_ok(&agent, "sales-agent").await;
    let sent = stream.status().await;
    assert_told(&app, &agent, &sent, &second, "pending").await;

    // The other agent's proposal moves, then this agent's do: only theirs are told, in order.
    browser.decide(&theirs, "approved", None).await;
    let _ = app.propose_ok(&other, "other-agent").await;
    browser.decide(&first, "approved", None).await;
    let sent = stream.status().await;
    assert_told(&app, &agent, &sent, &first, "approved").await;
    browser.decide(&second, "rejected", Some("not now")).await;
    let sent = stream.status().await;
    assert_told(&app, &agent, &sent, &second, "rejected").await;
}

async fn the_stream_holds_a_waiting_place_and_ends_when_its_token_is_revoked(backend: &str) {
    let app = TestApp::spawn_configured(backend, |s| {
        s.rate.waiting = 1;
    })
    .await;
    let agent = app.agent_token("sales-agent").await;
    let id = app.propose_ok(&agent, "sales-agent").await;
    let mut stream = Events::open(&app, &agent).await;
    let sent = stream.status().await;
    assert_told(&app, &agent, &sent, &id, "pending").await;

    // The open stream holds the token's one waiting place: another stream, or a wait, is
    // refused; a plain read is not.
    let refused = events(&app, &agent).await;
    assert_eq!(refused.status(), StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(refused.headers()["retry-after"], "1");
    let body: Value = refused.json().await.expect("json");
    assert_eq!(body["error"]["code"], "too_many_waits");
    let waited = app
        .client
        .get(app.url(&format!("/api/v1/proposals/{id}?wait=5")))
        .bearer_auth(&agent)
        .send()
        .await
        .expect("request");
    assert_eq!(waited.status(), StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(app.poll(&agent, &id).await.0, StatusCode::OK);

    // Only agents, by their token.
    let executor = app.executor_token("n8n").await;
    assert_eq!(
        events(&app, &executor).await.status(),
        StatusCode::FORBIDDEN
    );
    let anonymous = app.client.get(app.url("/api/v1/events")).send().await;
    assert_eq!(
        anonymous.expect("request").status(),
        StatusCode::UNAUTHORIZED
    );

    // Revoking the token ends the stream, and a proposal's own stream, open on a pending
    // proposal (a second token: the first's one place is taken).
    let second = app.agent_token("sales-agent").await;
    let mut own = Events::of_proposal(&app, &second, &id).await;
    assert_eq!(own.next().await.expect("its status").event, "status");
    (app.services)
        .revoke_tokens(&Principal::Operator, TokenKind::Agent, "sales-agent")
        .await
        .expect("revoke");
    assert!(ended(&mut stream).await, "the stream ended with its token");
    assert!(
        ended(&mut own).await,
        "the proposal's stream ended with its token"
    );
}

/// Whether the stream ends (passing over a `gap` resync) rather than telling a status.
async fn ended(stream: &mut Events) -> bool {
    loop {
        match stream.next().await {
            None => return true,
            Some(sent) if sent.event == "resync" && sent.data["reason"] == "gap" => continue,
            Some(_) => return false,
        }
    }
}

/// Several instances on one PostgreSQL: a stream open on one hears the moves another commits
/// (its listener hears their NOTIFY), and ends when its token is revoked on the other.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn moves_committed_by_another_postgresql_instance_reach_the_stream() {
    let app = TestApp::spawn("postgres").await;
    let streaming = app.another_instance().await;
    let agent = app.agent_token("sales-agent").await;
    let browser = reviewer(&app).await;
    // The streaming instance hears the other's commits once its listener is up: a wait there
    // answered by a decision made here proves it is.
    let probe = app.propose_ok(&agent, "sales-agent").await;
    let waiter = {
        let (client, url, token) = (
            streaming.client.clone(),
            streaming.url(&format!("/api/v1/proposals/{probe}?wait=60")),
            agent.clone(),
        );
        tokio::spawn(async move {
            let r = client.get(url).bearer_auth(token).send().await;
            r.expect("request").json::<Value>().await.expect("json")
        })
    };
    while streaming.services.store().changes().watched() == 0 {
        tokio::task::yield_now().await;
    }
    browser.decide(&probe, "approved", None).await;
    let answered = waiter.await.expect("waiter");
    assert_eq!(answered["proposal"]["status"], "approved");

    let mut stream = Events::open(&streaming, &agent).await;
    let sent = stream.status().await;
    assert_told(&app, &agent, &sent, &probe, "approved").await;
    let first = app.propose_ok(&agent, "sales-agent").await;
    let sent = stream.status().await;
    assert_told(&app, &agent, &sent, &first, "pending").await;
    browser.decide(&first, "approved", None).await;
    let sent = stream.status().await;
    assert_told(&app, &agent, &sent, &first, "approved").await;
    assert_eq!(
        streaming.services.store().changes().watched(),
        0,
        "the stream watches no proposal on its own"
    );

    app.services
        .revoke_tokens(&Principal::Operator, TokenKind::Agent, "sales-agent")
        .await
        .expect("revoke");
    assert!(
        ended(&mut stream).await,
        "a revocation on another instance ends the stream"
    );
}
