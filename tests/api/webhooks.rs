//! Agents' webhooks, against a real receiver on loopback: every status change of a proposal
//! submitted with a token that has a callback is POSTed, signed (`Countersign-Signature`,
//! checked here with an HMAC of our own); a failing receiver is tried again with backoff,
//! every attempt recorded and shown to admins, and a delivery is given up after its time;
//! private-range callbacks are refused; a revoked token's deliveries stop.

use countersign::domain::principal::Principal;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::http::{HeaderMap, StatusCode as AxumStatus};
use countersign::domain::principal::{Role, TokenKind};
use countersign::service::{CreatedToken, TokenRequest};
use hmac::{Hmac, Mac};
use reqwest::StatusCode;
use serde_json::Value;
use sha2::Sha256;
use tokio::sync::{mpsc, watch};

use crate::common;
use crate::common::on_both_backends;
use crate::helpers::{PASSWORD, TestApp};

on_both_backends!(
    each_status_change_is_posted_signed_in_chain_order,
    changes_on_two_instances_each_queue_their_delivery,
    a_failing_receiver_is_retried_with_backoff_and_every_attempt_is_shown,
    a_delivery_is_given_up_after_its_time_and_a_revoked_token_hears_nothing_more,
    private_and_plain_http_callbacks_are_refused,
    a_rotated_secret_signs_beside_the_old_one_until_the_overlap_ends,
);

/// One request the receiver got.
pub(crate) struct Received {
    pub(crate) signature: String,
    pub(crate) delivery: String,
    pub(crate) body: String,
}

/// A webhook receiver on loopback: answers each request with the next status of `answers`
/// (then 200), and hands every request to the test.
pub(crate) async fn receiver(answers: Vec<u16>) -> (String, mpsc::UnboundedReceiver<Received>) {
    let (tx, rx) = mpsc::unbounded_channel();
    let answers = Arc::new(Mutex::new(answers.into_iter()));
    let handler = move |headers: HeaderMap, body: String| {
        let (tx, answers) = (tx.clone(), answers.clone());
        async move {
            let header = |name: &str| {
                headers
                    .get(name)
                    .and_then(|v| v.to_str().ok())
                    .unwrap_or_default()
                    .to_owned()
            };
            let _ = tx.send(Received {
                signature: header("countersign-signature"),
                delivery: header("countersign-delivery"),
                body,
            });
            let next = answers.lock().expect("answers").next().unwrap_or(200);
            AxumStatus::from_u16(next).expect("status")
        }
    };
    let app = axum::Router::new().route("/hook", axum::routing::post(handler));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let url = format!("http://{}/hook", listener.local_addr().expect("addr"));
    tokio::spawn(async move { axum::serve(listener, app).await });
    (url, rx)
}

pub(crate) async fn next(rx: &mut mpsc::UnboundedReceiver<Received>) -> Received {
    tokio::time::timeout(Duration::from_secs(20), rx.recv())
        .await
        .expect("a delivery arrived")
        .expect("receiver open")
}

/// An agent token with a webhook.
async fn hooked_token(app: &TestApp, agent: &str, url: &str) -> CreatedToken {
    let request = TokenRequest {
        webhook: Some(url),
        ..TokenRequest::new(TokenKind::Agent, agent)
    };
    app.services
        .create_operated_token(&Principal::Operator, request)
        .await
        .expect("token with a webhook")
}

/// Checks a signature the way a receiver would, with nothing of Countersign's code: a fresh
/// `t` and one of the `v1` MACs made with `secret`.
pub(crate) fn verifies(secret: &str, header: &str, body: &str) -> bool {
    let Some(t) = header
        .strip_prefix("t=")
        .and_then(|rest| rest.split(',').next())
    else {
        return false;
    };
    let age = time::OffsetDateTime::now_utc().unix_timestamp() - t.parse::<i64>().expect("t");
    signed_by(secret, header, body) && age.abs() < 300
}

/// Whether one of the header's `v1` MACs over `t.body` was made with `secret` (the time
/// aside: tests that move the app's clock check it themselves).
fn signed_by(secret: &str, header: &str, body: &str) -> bool {
    let mut parts = header.split(',');
    let Some(t) = parts.next().and_then(|p| p.strip_prefix("t=")) else {
        return false;
    };
    parts.filter_map(|p| p.strip_prefix("v1=")).any(|v1| {
        let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).expect("key");
        mac.update(format!("{t}.{body}").as_bytes());
        hex::decode(v1).is_ok_and(|v1| mac.verify_slice(&v1).is_ok())
    })
}

/// Waits until this instance has recorded `n` attempts in all.
pub(crate) async fn recorded(attempts: &mut watch::Receiver<u64>, n: u64) {
    tokio::time::timeout(Duration::from_secs(20), attempts.wait_for(|a| *a >= n))
        .await
        .expect("the attempts were recorded")
        .expect("changes open");
}

async fn submit(app: &TestApp, token: &str, agent: &str) -> String {
    let r = app.propose(token, &common::proposal_body(agent)).await;
    assert_eq!(r.status(), StatusCode::CREATED);
    let created: Value = r.json().await.expect("json");
    created["proposal"]["id"].as_str().expect("id").to_owned()
}

async fn each_status_change_is_posted_signed_in_chain_order(backend: &str) {
    let app = TestApp::spawn(backend).await;
    let (url, mut rx) = receiver(vec![]).await;
    let created = hooked_token(&app, "sales-agent", &url).await;
    let secret = created
        .webhook_secret
        .expect("a webhook secret, shown once");
    assert!(secret.expose().starts_with("csw_"));
    let id = submit(&app, created.token.expose(), "sales-agent").await;

    let first = next(&mut rx).await;
    assert!(
        verifies(secret.expose(), &first.signature, &first.body),
        "{}",
        first.signature
    );
    assert!(!verifies("csw_wrong", &first.signature, &first.body));
    let body: Value = serde_json::from_str(&first.body).expect("json body");
    assert_eq!(body["type"], "proposal.status_changed");
    assert_eq!(body["id"], first.delivery.as_str());
    assert_eq!(body["proposal"]["id"], id.as_str());
    assert_eq!(body["proposal"]["status"], "pending");
    assert_eq!(body["proposal"]["previous_status"], Value::Null);
    assert_eq!(body["proposal"]["url"], format!("/api/v1/proposals/{id}"));
    assert_eq!(body["audit_event"]["kind"], "proposal.submitted");
    assert!(
        !first.body.contains("parameters") && !first.body.contains("customer"),
        "a delivery never carries the proposal's contents: {}",
        first.body
    );

    app.user("rev", Role::Reviewer).await;
    let browser = app.browser();
    browser.login("rev", PASSWORD).await;
    browser.decide(&id, "approved", None).await;
    let second = next(&mut rx).await;
    assert!(verifies(secret.expose(), &second.signature, &second.body));
    let body2: Value = serde_json::from_str(&second.body).expect("json body");
    assert_eq!(body2["proposal"]["previous_status"], "pending");
    assert_eq!(body2["proposal"]["status"], "approved");
    assert_ne!(body2["id"], body["id"]);
    assert!(
        body2["audit_event"]["seq"].as_i64() > body["audit_event"]["seq"].as_i64(),
        "deliveries carry their place in the chain"
    );

    // A proposal submitted with a token without a webhook queues nothing.
    let plain = app.agent_token("other-agent").await;
    submit(&app, &plain, "other-agent").await;
    app.services.deliver_webhooks().await.expect("deliver");
    assert_eq!(
        app.count("select count(*) from webhook_deliveries").await,
        2
    );
}

/// Two instances on one database, each writing after the other moved the chain's head: every
/// status change queues its delivery, and on PostgreSQL tells every instance once, whether the
/// writer read the targets with its events (the head where it left it) or after linking them
/// from the head in the database (another instance moved it).
async fn changes_on_two_instances_each_queue_their_delivery(backend: &str) {
    let first = TestApp::spawn(backend).await;
    let second = first.another_instance().await;
    let (url, _rx) = receiver(vec![]).await;
    // Written by the first instance after the second started: its head is where it left it.
    let created = hooked_token(&first, "sales-agent", &url).await;
    let token = created.token.expose();
    let mut listener = match backend {
        "postgres" => {
            let mut listener = sqlx::postgres::PgListener::connect(&first.db_url)
                .await
                .expect("listen");
            listener
                .listen("countersign_proposal")
                .await
                .expect("listen");
            Some(listener)
        }
        _ => None,
    };
    // The first instance's head in place; the second's moved by the first; the first's moved
    // by the second; the first's in place again.
    let mut ids = Vec::new();
    for app in [&first, &second, &first, &first] {
        ids.push(submit(app, token, "sales-agent").await);
    }
    for id in &ids {
        let sql = format!(
            "select count(*) from webhook_deliveries \
             where body like '%{id}%' and body like '%\"status\":\"pending\"%'"
        );
        assert_eq!(first.count(&sql).await, 1, "one delivery for {id}");
    }
    assert_eq!(
        first.count("select count(*) from webhook_deliveries").await,
        4
    );
    if let Some(listener) = listener.as_mut() {
        // Told in commit order, each once: a fifth, last, comes right after the four.
        ids.push(submit(&first, token, "sales-agent").await);
        for id in &ids {
            let heard = tokio::time::timeout(Duration::from_secs(10), listener.recv())
                .await
                .expect("a notification in time")
                .expect("a notification");
            assert_eq!(heard.payload(), id.as_str());
        }
    }
}

async fn a_failing_receiver_is_retried_with_backoff_and_every_attempt_is_shown(backend: &str) {
    let app = TestApp::spawn(backend).await;
    let mut attempts = app.services.store().changes().webhook_attempts();
    let (url, mut rx) = receiver(vec![500, 503]).await;
    let created = hooked_token(&app, "sales-agent", &url).await;
    // The submission answers while its receiver fails: a webhook never holds a change up.
    let id = submit(&app, created.token.expose(), "sales-agent").await;
    let first = next(&mut rx).await;
    recorded(&mut attempts, 1).await;
    let (state, next_try) = delivery_state(&app).await;
    assert_eq!(state, "pending");
    assert!(next_try.is_some(), "a failed attempt is tried again");

    // Not before its backoff (5 s after the first failure)…
    app.services.deliver_webhooks().await.expect("deliver");
    assert!(rx.try_recv().is_err(), "no retry before the backoff ends");
    // …then again, and after 10 s more a third time.
    app.clock.advance(time::Duration::seconds(5));
    app.services.deliver_webhooks().await.expect("deliver");
    let second = next(&mut rx).await;
    recorded(&mut attempts, 2).await;
    app.clock.advance(time::Duration::seconds(10));
    app.services.deliver_webhooks().await.expect("deliver");
    let third = next(&mut rx).await;
    recorded(&mut attempts, 3).await;
    assert_eq!(
        first.delivery, second.delivery,
        "a retry is the same delivery"
    );
    assert_eq!(first.body, third.body, "and carries the same body");
    assert_eq!(delivery_state(&app).await, ("delivered".to_owned(), None));

    // Admins see every attempt: its status code and time.
    app.user("root", Role::Admin).await;
    let browser = app.browser();
    browser.login("root", PASSWORD).await;
    let page = browser.page("/admin/webhooks").await;
    assert!(page.contains(&id), "the page names the proposal");
    for code in [
        "HTTP 500",
        "HTTP 503",
        "HTTP 200",
        "data-state=\"delivered\"",
    ] {
        assert!(page.contains(code), "the page shows {code}");
    }
    // Nobody but an admin.
    app.user("rev", Role::Reviewer).await;
    let reviewer = app.browser();
    reviewer.login("rev", PASSWORD).await;
    let r = reviewer.get("/admin/webhooks").await;
    assert_eq!(r.status(), StatusCode::FORBIDDEN);
    let page = r.text().await.expect("page");
    assert!(!page.contains(&id), "a reviewer sees no deliveries");
}

/// The one delivery's state and next try.
async fn delivery_state(app: &TestApp) -> (String, Option<String>) {
    let listed = app
        .services
        .webhook_deliveries(&Principal::Operator, 10)
        .await
        .expect("list");
    let (d, _) = listed.first().expect("a delivery");
    (d.state.clone(), d.next_attempt_at.map(|t| t.to_string()))
}

async fn a_delivery_is_given_up_after_its_time_and_a_revoked_token_hears_nothing_more(
    backend: &str,
) {
    let app = TestApp::spawn(backend).await;
    let mut attempts = app.services.store().changes().webhook_attempts();
    let (url, mut rx) = receiver(vec![500; 10]).await;
    let created = hooked_token(&app, "sales-agent", &url).await;
    submit(&app, created.token.expose(), "sales-agent").await;
    next(&mut rx).await;
    recorded(&mut attempts, 1).await;
    // A day later the next attempt is the last: it fails and the delivery is given up.
    app.clock.advance(time::Duration::hours(24));
    app.services.deliver_webhooks().await.expect("deliver");
    next(&mut rx).await;
    recorded(&mut attempts, 2).await;
    assert_eq!(delivery_state(&app).await, ("failed".to_owned(), None));

    // A revoked token's webhook hears nothing more, not even a retry already queued.
    let (url, mut rx) = receiver(vec![500]).await;
    let other = hooked_token(&app, "ops-agent", &url).await;
    submit(&app, other.token.expose(), "ops-agent").await;
    next(&mut rx).await;
    recorded(&mut attempts, 3).await;
    let listed = app
        .services
        .list_tokens(&Principal::Operator)
        .await
        .expect("tokens");
    let token_id = listed
        .iter()
        .find(|t| t.name == "ops-agent")
        .expect("token")
        .id;
    app.services
        .revoke_token(&Principal::Operator, token_id)
        .await
        .expect("revoke");
    app.clock.advance(time::Duration::seconds(5));
    app.services.deliver_webhooks().await.expect("deliver");
    recorded(&mut attempts, 4).await;
    assert!(
        rx.try_recv().is_err(),
        "nothing was sent for a revoked token"
    );
    assert_eq!(delivery_state(&app).await, ("failed".to_owned(), None));
}

async fn private_and_plain_http_callbacks_are_refused(backend: &str) {
    let app = TestApp::spawn(backend).await;
    for (url, rule) in [
        ("https://10.0.0.5/hook", "private"),
        ("https://169.254.169.254/latest/meta-data", "private"),
        ("https://[fd00::1]/hook", "private"),
        ("http://hooks.example.com/hook", "https"),
        ("ftp://hooks.example.com/hook", "https"),
    ] {
        let request = TokenRequest {
            webhook: Some(url),
            ..TokenRequest::new(TokenKind::Agent, "sales-agent")
        };
        let refused = app
            .services
            .create_operated_token(&Principal::Operator, request)
            .await;
        match refused {
            Err(e) => assert!(e.to_string().contains(rule), "{url}: {e}"),
            Ok(_) => panic!("{url} was accepted"),
        }
    }
    let request = TokenRequest {
        webhook: Some("https://hooks.example.com/hook"),
        ..TokenRequest::new(TokenKind::Executor, "n8n")
    };
    assert!(
        app.services
            .create_operated_token(&Principal::Operator, request)
            .await
            .is_err(),
        "only agent tokens carry a webhook"
    );
    assert_eq!(
        app.count("select count(*) from api_tokens").await,
        0,
        "a refused token leaves nothing behind"
    );
    // The trail names the webhook's origin only, never its path (it may carry a secret).
    let created = hooked_token(
        &app,
        "sales-agent",
        "https://hooks.example.com/h/s3cr3t?k=v",
    )
    .await;
    assert!(created.webhook_secret.is_some());
    let trail = app
        .count("select count(*) from audit_events where cast(details as text) like '%s3cr3t%'")
        .await;
    assert_eq!(trail, 0);
    let origin = app
        .count(
            "select count(*) from audit_events \
             where cast(details as text) like '%webhook_origin%https://hooks.example.com%'",
        )
        .await;
    assert_eq!(origin, 1);
}

async fn a_rotated_secret_signs_beside_the_old_one_until_the_overlap_ends(backend: &str) {
    use countersign::service::RotateWhich;
    let app = TestApp::spawn(backend).await;
    let (url, mut rx) = receiver(vec![]).await;
    let created = hooked_token(&app, "sales-agent", &url).await;
    let old = created.webhook_secret.expect("secret");
    let token = created.token.expose().to_owned();
    submit(&app, &token, "sales-agent").await;
    let first = next(&mut rx).await;
    assert!(verifies(old.expose(), &first.signature, &first.body));
    assert_eq!(first.signature.matches("v1=").count(), 1);

    let system = Principal::Operator;
    let hour = time::Duration::hours(1);
    let rotated = app
        .services
        .rotate_webhook_secrets(&system, RotateWhich::Agent("sales-agent".into()), hour)
        .await
        .expect("rotated");
    assert_eq!(rotated.len(), 1);
    let new = rotated[0].secret.expose().to_owned();
    assert!(new.starts_with("csw_") && new != old.expose());

    // Another rotation with an overlap while this one's runs would drop the secret receivers
    // may still use: refused, nothing written.
    let again = app
        .services
        .rotate_webhook_secrets(&system, RotateWhich::Agent("sales-agent".into()), hour)
        .await;
    assert!(
        matches!(&again, Err(countersign::service::AccountError::Invalid(why)) if why.contains("no overlap")),
        "{:?}",
        again.as_ref().err()
    );

    // During the overlap both sign: a receiver that knows either accepts.
    submit(&app, &token, "sales-agent").await;
    let during = next(&mut rx).await;
    assert_eq!(during.signature.matches("v1=").count(), 2);
    assert!(verifies(&new, &during.signature, &during.body));
    assert!(verifies(old.expose(), &during.signature, &during.body));

    // After it, only the new one.
    app.clock.advance(hour + time::Duration::seconds(1));
    submit(&app, &token, "sales-agent").await;
    let after = next(&mut rx).await;
    assert_eq!(after.signature.matches("v1=").count(), 1);
    assert!(signed_by(&new, &after.signature, &after.body));
    assert!(!signed_by(old.expose(), &after.signature, &after.body));

    // A rotation with no overlap stops every older secret at once (after a leak), and the
    // replaced one is forgotten.
    let leaked = app
        .services
        .rotate_webhook_secrets(
            &system,
            RotateWhich::Agent("sales-agent".into()),
            time::Duration::ZERO,
        )
        .await
        .expect("rotated without overlap");
    let newest = leaked[0].secret.expose().to_owned();
    assert_eq!(leaked[0].previous_until, None);
    submit(&app, &token, "sales-agent").await;
    let cut = next(&mut rx).await;
    assert_eq!(cut.signature.matches("v1=").count(), 1);
    assert!(signed_by(&newest, &cut.signature, &cut.body));
    assert!(!signed_by(&new, &cut.signature, &cut.body));
    let kept = "select count(*) from api_tokens where webhook_previous_secret is not null";
    assert_eq!(app.count(kept).await, 0);

    // Audited, without either secret.
    let rows = "select count(*) from audit_events where action = 'token.webhook_secret_rotated' \
                and actor = 'cli'";
    assert_eq!(app.count(rows).await, 2);
    let leaked = format!(
        "select count(*) from audit_events where cast(details as text) like '%{}%' \
         or cast(details as text) like '%{}%'",
        &new[4..20],
        &old.expose()[4..20]
    );
    assert_eq!(app.count(&leaked).await, 0);

    // Nothing to rotate, or too long an overlap: refused, nothing written.
    let none = app
        .services
        .rotate_webhook_secrets(&system, RotateWhich::Agent("nobody".into()), hour)
        .await;
    assert!(matches!(
        none,
        Err(countersign::service::AccountError::Missing(_))
    ));
    let long = app
        .services
        .rotate_webhook_secrets(
            &system,
            RotateWhich::Agent("sales-agent".into()),
            time::Duration::days(8),
        )
        .await;
    assert!(matches!(
        long,
        Err(countersign::service::AccountError::Invalid(_))
    ));
    assert_eq!(app.count(rows).await, 2);
}
