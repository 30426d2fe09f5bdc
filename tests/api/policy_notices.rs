//! Break-glass at the shell is loud, on both backends: a policy version activated alone by an
//! operator (from a process that knows no channel, as the shell does) is told at once, never
//! held for a window, to every admin and compliance officer by email and on every shared
//! channel, once, whichever instance gets there first; and the admins' list of notifications
//! names it.

use std::time::Duration;

use countersign::domain::principal::{Principal, Role};
use countersign::service::{ChannelUrl, SigningSecret};
use serde_json::Value;

use crate::common::on_both_backends;
use crate::helpers::{PASSWORD, TestApp};
use crate::policy_texts::{AFTER, BEFORE};
use crate::reach::{email_settings, next_mail, person, smtp_server};
use crate::webhooks::{next, receiver, verifies};

on_both_backends!(a_break_glass_activation_tells_every_admin_at_once);

const SECRET: &str = "notify-secret-0123456789";
const WHY: &str = "the pages are down and the refund rule is wrong";

async fn a_break_glass_activation_tells_every_admin_at_once(backend: &str) {
    let (smtp, mut inbox) = smtp_server().await;
    let (hook_url, mut hook) = receiver(vec![]).await;
    let app = TestApp::spawn_full(backend, Some(BEFORE), |s| {
        s.notify = email_settings(&smtp);
        let secret = SigningSecret(SECRET.into());
        s.notify.webhook = Some((ChannelUrl(hook_url.parse().expect("url")), secret));
    })
    .await;
    person(&app, "rob", Role::Reviewer, None).await;
    person(&app, "boss", Role::Admin, None).await;
    person(&app, "ada", Role::Admin, Some(&["crm"])).await;
    person(&app, "cora", Role::Compliance, None).await;
    let before = app.services.policy().version().to_owned();
    // A proposal waits: the webhook channel's window is now closed for a minute.
    let agent = app.agent_token("sales-agent").await;
    app.propose_ok(&agent, "sales-agent").await;
    let waiting: Value = serde_json::from_str(&next(&mut hook).await.body).expect("json");
    assert_eq!(waiting["type"], "reviewers.notified");
    for _ in 0..2 {
        next_mail(&mut inbox).await;
    }

    // The shell: another process on the same database, with no channel configured.
    let shell = app.another_instance().await;
    let change = shell
        .services
        .propose_policy(
            &Principal::person("boss", Role::Admin),
            AFTER,
            "stored",
            time::OffsetDateTime::UNIX_EPOCH,
        )
        .await
        .expect("propose");
    let activated = shell
        .services
        .activate_policy(&Principal::Operator, &change.version, WHY)
        .await
        .expect("activate");
    assert_eq!(activated.how.as_str(), "break_glass");

    // The channel hears it at once, though its window is closed, signed, with the versions.
    let signed = next(&mut hook).await;
    assert!(verifies(SECRET, &signed.signature, &signed.body));
    let told: Value = serde_json::from_str(&signed.body).expect("json");
    assert_eq!(told["type"], "policy.break_glass", "{told}");
    assert_eq!(told["activation"]["version"], change.version.as_str());
    assert_eq!(told["activation"]["previous"], before.as_str());
    assert_eq!(told["activation"]["by"], "cli", "the shell");
    assert_eq!(told["activation"]["reason"], WHY);
    assert_eq!(
        told["activation"]["url"],
        "https://countersign.example.com/policy"
    );

    // Every admin (whatever their domains) and the compliance officer are emailed; the
    // reviewer is not.
    let mut emailed = Vec::new();
    for _ in 0..3 {
        let mail = next_mail(&mut inbox).await;
        assert!(mail.subject.contains("Break-glass"), "{}", mail.subject);
        assert!(mail.body.contains(WHY), "{}", mail.body);
        emailed.extend(mail.to);
    }
    emailed.sort();
    assert_eq!(
        emailed,
        ["ada@example.com", "boss@example.com", "cora@example.com"]
    );

    // Once: delivering again (on either instance) tells nobody more.
    app.services.deliver_notifications().await.expect("deliver");
    shell
        .services
        .deliver_notifications()
        .await
        .expect("deliver");
    for quiet in [
        tokio::time::timeout(Duration::from_millis(300), inbox.recv())
            .await
            .is_err(),
        tokio::time::timeout(Duration::from_millis(300), hook.recv())
            .await
            .is_err(),
    ] {
        assert!(quiet, "told once");
    }
    let untold = "select count(*) from policy_activations where told_at is null";
    assert_eq!(app.count(untold).await, 0);
    let rows = "select count(*) from notifications where reason = 'policy_break_glass' \
                and state = 'sent'";
    assert_eq!(app.count(rows).await, 4, "the webhook and three emails");

    // Admins see it in the list of notifications, linked to the policy's history.
    app.user("root", Role::Admin).await;
    let browser = app.browser();
    browser.login("root", PASSWORD).await;
    let page = browser.page("/admin/webhooks").await;
    assert!(page.contains("policy_break_glass"), "{page}");
    assert!(page.contains("href=\"/policy\""), "{page}");
}
