//! Deciding from Slack at `POST /integrations/slack/actions`: a request signed with the Slack
//! app's secret by a mapped reviewer decides under every rule of the web page; a forged, stale
//! or replayed request is `401` and changes nothing (and is audited); a high-risk proposal is
//! decided on its page only; the Slack message carries the buttons only when they may be used.

use countersign::domain::principal::Principal;
use countersign::domain::principal::Role;
use countersign::domain::slack::{APPROVE, REASON, REJECT, sign};
use countersign::service::{ChannelUrl, NotifySettings, SigningSecret};
use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::common::{self, on_both_backends};
use crate::helpers::{PASSWORD, TestApp};
use crate::webhooks::{next, receiver};

on_both_backends!(
    a_signed_press_decides_under_the_page_rules_and_a_forged_one_changes_nothing,
    high_risk_is_decided_on_the_page_only,
);

const SIGNING: &str = "slack-signing-secret-0123";

async fn app_with_slack(backend: &str, slack_url: Option<&str>) -> TestApp {
    let slack = slack_url.map(|u| ChannelUrl(u.parse().expect("url")));
    TestApp::spawn_configured(backend, |s| {
        s.notify = NotifySettings {
            slack,
            slack_signing_secret: Some(SigningSecret(SIGNING.into())),
            ..NotifySettings::default()
        };
    })
    .await
}

fn form(user: &str, action: &str, id: &str, reason: Option<&str>) -> String {
    let mut payload = json!({
        "type": "block_actions", "user": {"id": user},
        "actions": [{"action_id": action, "value": id}],
    });
    if let Some(reason) = reason {
        payload["state"] = json!({"values": {REASON: {REASON: {"value": reason}}}});
    }
    url::form_urlencoded::Serializer::new(String::new())
        .append_pair("payload", &payload.to_string())
        .finish()
}

/// POSTs `body` as Slack would, signed with `secret` at `ts` (default: now).
async fn press(app: &TestApp, body: &str, secret: &str, ts: Option<i64>) -> (StatusCode, String) {
    let ts = ts.unwrap_or_else(|| app.clock_now().unix_timestamp());
    let r = app
        .client
        .post(app.url("/integrations/slack/actions"))
        .header("content-type", "application/x-www-form-urlencoded")
        .header("x-slack-request-timestamp", ts.to_string())
        .header("x-slack-signature", sign(secret, ts, body.as_bytes()))
        .body(body.to_owned())
        .send()
        .await
        .expect("request");
    (r.status(), r.text().await.expect("text"))
}

async fn status(app: &TestApp, token: &str, id: &str) -> Value {
    app.poll(token, id).await.1["proposal"]["status"].clone()
}

async fn a_signed_press_decides_under_the_page_rules_and_a_forged_one_changes_nothing(
    backend: &str,
) {
    let (slack_url, mut slack) = receiver(vec![]).await;
    let app = app_with_slack(backend, Some(&slack_url)).await;
    app.user("rev", Role::Reviewer).await;
    app.user("auditor", Role::Compliance).await;
    for (user, slack_id) in [("rev", "UREV"), ("auditor", "UAUD")] {
        app.services
            .set_slack_id(&Principal::Operator, user, slack_id)
            .await
            .expect("map");
    }
    let agent = app.agent_token("sales-agent").await;
    let id = app.propose_ok(&agent, "sales-agent").await;
    // The message carries the buttons, each naming the proposal.
    let message = next(&mut slack).await.body;
    for action in [APPROVE, REJECT] {
        assert!(message.contains(action), "{message}");
    }

    // Forged, stale and unsigned requests: 401, nothing changes.
    let approve = form("UREV", APPROVE, &id, None);
    assert_eq!(
        press(&app, &approve, "not-the-secret", None).await.0,
        StatusCode::UNAUTHORIZED
    );
    let old = app.clock_now().unix_timestamp() - 600;
    assert_eq!(
        press(&app, &approve, SIGNING, Some(old)).await.0,
        StatusCode::UNAUTHORIZED
    );
    let unsigned = app
        .client
        .post(app.url("/integrations/slack/actions"))
        .body(approve.clone())
        .send()
        .await
        .expect("request");
    assert_eq!(unsigned.status(), StatusCode::UNAUTHORIZED);
    assert_eq!(status(&app, &agent, &id).await, "pending");

    // A compliance officer's press is refused by the page's rules.
    let (code, reply) = press(&app, &form("UAUD", APPROVE, &id, None), SIGNING, None).await;
    assert_eq!(code, StatusCode::OK);
    assert!(reply.contains("Refused"), "{reply}");
    // An unmapped Slack user decides nothing.
    let (_, reply) = press(&app, &form("UNOBODY", APPROVE, &id, None), SIGNING, None).await;
    assert!(reply.contains("not mapped"), "{reply}");
    // Rejecting needs a reason, as on the page.
    let (_, reply) = press(&app, &form("UREV", REJECT, &id, None), SIGNING, None).await;
    assert!(reply.contains("Refused"), "{reply}");
    assert_eq!(status(&app, &agent, &id).await, "pending");

    // The reviewer's signed press approves it, as them.
    let ts = app.clock_now().unix_timestamp();
    let (code, reply) = press(&app, &approve, SIGNING, Some(ts)).await;
    assert_eq!(code, StatusCode::OK);
    assert!(reply.contains("approved"), "{reply}");
    assert_eq!(status(&app, &agent, &id).await, "approved");
    let by_rev = app
        .count("select count(*) from audit_events where action = 'proposal.approved' and actor = 'rev'")
        .await;
    assert_eq!(by_rev, 1);
    // The same request again is a replay.
    assert_eq!(
        press(&app, &approve, SIGNING, Some(ts)).await.0,
        StatusCode::UNAUTHORIZED
    );
    let denied = app
        .count(
            "select count(*) from audit_events where action = 'access.denied' \
             and subject_id = '/integrations/slack/actions'",
        )
        .await;
    assert!(
        denied >= 4,
        "forged, stale, unsigned, unmapped and replayed are audited: {denied}"
    );
}

async fn high_risk_is_decided_on_the_page_only(backend: &str) {
    let (slack_url, mut slack) = receiver(vec![]).await;
    let app = app_with_slack(backend, Some(&slack_url)).await;
    app.user("rev", Role::Reviewer).await;
    app.services
        .set_slack_id(&Principal::Operator, "rev", "UREV")
        .await
        .expect("map");
    let agent = app.agent_token("sales-agent").await;
    let mut body = common::proposal_body("sales-agent");
    body["risk_level"] = json!("high");
    let r = app.propose(&agent, &body).await;
    assert_eq!(r.status(), StatusCode::CREATED);
    let id = body["proposal_id"].as_str().expect("id").to_owned();
    let message = next(&mut slack).await.body;
    assert!(!message.contains(APPROVE), "only the link: {message}");
    let (code, reply) = press(&app, &form("UREV", APPROVE, &id, None), SIGNING, None).await;
    assert_eq!(code, StatusCode::OK);
    assert!(reply.contains("on its page only"), "{reply}");
    assert_eq!(status(&app, &agent, &id).await, "pending");
    // On the page it is decided (with the typed confirmation a high-risk action asks for).
    let browser = app.browser();
    browser.login("rev", PASSWORD).await;
    let page = browser.page(&format!("/proposals/{id}")).await;
    assert!(page.contains(&id));
}
