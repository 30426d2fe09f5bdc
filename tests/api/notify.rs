//! Reviewers' notifications against real receivers on loopback standing in for Slack, Teams
//! and a generic webhook: each channel gets one message when work starts waiting (the payload
//! shapes each product takes, a link to the proposal page, no parameter value), a flood within
//! the window folds into one digest with counts, a failing channel is retried and never holds
//! up a decision, and opening a message's link decides nothing.

use countersign::domain::principal::{Principal, Role};
use countersign::service::{ChannelUrl, NotifySettings, SigningSecret};
use reqwest::StatusCode;
use serde_json::Value;

use crate::common::on_both_backends;
use crate::helpers::{PASSWORD, TestApp};
use crate::webhooks::{next, receiver, recorded, verifies};

on_both_backends!(
    each_channel_hears_once_and_a_flood_folds_into_a_digest,
    a_failing_channel_is_retried_and_never_holds_up_a_decision,
);

const SECRET: &str = "notify-secret-0123456789";
const PUBLIC: &str = "https://countersign.example.com/";

fn channel(url: &str) -> Option<ChannelUrl> {
    Some(ChannelUrl(url.parse().expect("url")))
}

async fn each_channel_hears_once_and_a_flood_folds_into_a_digest(backend: &str) {
    let (slack_url, mut slack) = receiver(vec![]).await;
    let (teams_url, mut teams) = receiver(vec![]).await;
    let (hook_url, mut hook) = receiver(vec![]).await;
    let app = TestApp::spawn_configured(backend, |s| {
        s.notify = NotifySettings {
            public_url: Some(PUBLIC.parse().expect("url")),
            slack: channel(&slack_url),
            teams: channel(&teams_url),
            webhook: channel(&hook_url).map(|u| (u, SigningSecret(SECRET.to_owned()))),
            window: None,
            slack_signing_secret: None,
            ..NotifySettings::default()
        };
    })
    .await;
    let mut sends = app.services.store().changes().notification_sends();
    let agent = app.agent_token("sales-agent").await;
    let first = app.propose_ok(&agent, "sales-agent").await;
    recorded(&mut sends, 3).await;
    let link = format!("{PUBLIC}proposals/{first}");

    let message = next(&mut slack).await;
    let body: Value = serde_json::from_str(&message.body).expect("json");
    assert_eq!(body["blocks"][0]["type"], "header");
    let text = message.body.as_str();
    for fact in [
        "sales-agent",
        "crm.update_contact",
        "medium",
        "ask",
        "human_approval_required",
    ] {
        assert!(text.contains(fact), "Slack names {fact}: {text}");
    }
    let actions = body["blocks"]
        .as_array()
        .and_then(|b| b.last())
        .expect("actions");
    assert_eq!(actions["elements"][0]["url"], link.as_str());
    for value in ["c-123", "new@example.com"] {
        assert!(!text.contains(value), "no parameter value: {text}");
    }
    let card: Value = serde_json::from_str(&next(&mut teams).await.body).expect("json");
    let card = &card["attachments"][0]["content"];
    assert_eq!(card["type"], "AdaptiveCard");
    assert_eq!(card["actions"][0]["url"], link.as_str());
    let signed = next(&mut hook).await;
    assert!(verifies(SECRET, &signed.signature, &signed.body));
    let generic: Value = serde_json::from_str(&signed.body).expect("json");
    assert_eq!(generic["type"], "reviewers.notified");
    assert_eq!(generic["proposal"]["proposal_id"], first.as_str());

    // Opening the link decides nothing, signed in or not.
    app.user("rev", Role::Reviewer).await;
    let browser = app.browser();
    browser.login("rev", PASSWORD).await;
    let page = browser.get(&format!("/proposals/{first}")).await;
    assert_eq!(page.status(), StatusCode::OK);
    assert_eq!(
        app.poll(&agent, &first).await.1["proposal"]["status"],
        "pending"
    );

    // A flood inside the window waits, then goes out as one digest per channel.
    for _ in 0..5 {
        app.propose_ok(&agent, "sales-agent").await;
    }
    app.services.deliver_notifications().await.expect("deliver");
    assert!(slack.try_recv().is_err(), "one message per window");
    app.clock.advance(time::Duration::seconds(61));
    app.services.deliver_notifications().await.expect("deliver");
    recorded(&mut sends, 6).await;
    let digest = next(&mut slack).await.body;
    assert!(digest.contains("5 proposals need a person"), "{digest}");
    assert!(digest.contains("5 crm.update_contact"), "{digest}");
    let teams_digest = next(&mut teams).await.body;
    assert!(teams_digest.contains("5 proposals"), "{teams_digest}");
    let hook_digest: Value = serde_json::from_str(&next(&mut hook).await.body).expect("json");
    assert_eq!(hook_digest["type"], "reviewers.digest");
    assert_eq!(hook_digest["count"], 5);
    assert!(slack.try_recv().is_err() && teams.try_recv().is_err());
    let sent = app
        .count("select count(*) from notifications where state = 'sent'")
        .await;
    assert_eq!(sent, 18, "six proposals on three channels, all sent");
}

async fn a_failing_channel_is_retried_and_never_holds_up_a_decision(backend: &str) {
    let (slack_url, mut slack) = receiver(vec![500]).await;
    let app = TestApp::spawn_configured(backend, |s| {
        s.notify = NotifySettings {
            slack: channel(&slack_url),
            ..NotifySettings::default()
        };
    })
    .await;
    let mut sends = app.services.store().changes().notification_sends();
    let agent = app.agent_token("sales-agent").await;
    let id = app.propose_ok(&agent, "sales-agent").await;
    next(&mut slack).await;
    recorded(&mut sends, 1).await;
    // The channel is down; the reviewer decides all the same.
    app.user("rev", Role::Reviewer).await;
    let browser = app.browser();
    browser.login("rev", PASSWORD).await;
    browser.decide(&id, "approved", None).await;
    assert_eq!(
        app.poll(&agent, &id).await.1["proposal"]["status"],
        "approved"
    );
    let listed = app
        .services
        .recent_notifications(&Principal::Operator, 10)
        .await
        .expect("list");
    assert_eq!(listed[0].state, "pending");
    assert_eq!(listed[0].last_status, Some(500));
    // After its backoff it is sent again, and recorded.
    app.clock.advance(time::Duration::seconds(5));
    app.services.deliver_notifications().await.expect("deliver");
    recorded(&mut sends, 2).await;
    next(&mut slack).await;
    let listed = app
        .services
        .recent_notifications(&Principal::Operator, 10)
        .await
        .expect("list");
    assert_eq!(
        (
            listed[0].state.as_str(),
            listed[0].attempts,
            listed[0].last_status
        ),
        ("sent", 2, Some(200))
    );
    // Admins see it: channel, state and the last answer.
    app.user("root", Role::Admin).await;
    let admin = app.browser();
    admin.login("root", PASSWORD).await;
    let page = admin.page("/admin/webhooks").await;
    assert!(
        page.contains("data-testid=\"notification-row\" data-state=\"sent\""),
        "{page}"
    );
    assert!(page.contains(&id) && page.contains("HTTP 200"));
}
