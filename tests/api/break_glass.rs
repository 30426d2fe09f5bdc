//! Break-glass, through the proposal page's form (`POST /fn/break_glass`), on both backends:
//! an admin approves alone what the policy wants two approvers for, with a written
//! justification; it is loud (the trail, the page in red, every admin and compliance officer
//! emailed, the channel told, `/metrics`), and refused where it does not belong (a reviewer, a
//! short justification, a tool whose policy forbids it, a proposal one approval decides).

use countersign::domain::principal::Role;
use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::common::on_both_backends;
use crate::helpers::{Browser, PASSWORD, TestApp, location};
use crate::reach::{email_settings, next_mail, person, smtp_server};

on_both_backends!(
    an_admin_breaks_the_glass_loudly,
    break_glass_is_refused_where_it_does_not_belong
);

const POLICY: &str = r#"
[defaults]
unknown_agents = "allow"

[tools."payments.refund"]
category = "C"
risk = "medium"
required_approvals = 2

[tools."payments.transfer"]
category = "C"
risk = "medium"
required_approvals = 2
break_glass = false
"#;

const WHY: &str = "the customer is double-charged and the bank closes at five";

/// A pending proposal of `agent-a` for `tool`; its id.
async fn pending(app: &TestApp, tool: &str) -> String {
    let token = app.agent_token("agent-a").await;
    let mut body = crate::common::proposal_body("agent-a");
    body["tool"]["name"] = json!(tool);
    body["compliance_context"] = json!({"gdpr": false, "hipaa": false});
    let r = app.propose(&token, &body).await;
    assert_eq!(r.status(), StatusCode::CREATED);
    let v: Value = r.json().await.expect("json");
    assert_eq!(v["proposal"]["status"], "pending", "{v}");
    v["proposal"]["id"].as_str().expect("id").to_owned()
}

/// Posts the break-glass form on proposal `id` as `browser`; where it redirected.
async fn break_glass(browser: &Browser, id: &str, justification: &str) -> String {
    let page = format!("/proposals/{id}");
    let csrf = browser.csrf(&page).await;
    let form = [
        ("csrf_token", csrf.as_str()),
        ("id", id),
        ("justification", justification),
    ];
    location(&browser.post_form("/fn/break_glass", &page, &form).await)
}

async fn status(app: &TestApp, id: &str) -> Value {
    let token = app.agent_token("agent-a").await;
    app.poll(&token, id).await.1["proposal"].clone()
}

async fn signed_in(app: &TestApp, name: &str) -> Browser {
    let browser = app.browser();
    browser.login(name, PASSWORD).await;
    browser
}

async fn an_admin_breaks_the_glass_loudly(backend: &str) {
    let (smtp, mut inbox) = smtp_server().await;
    let app = TestApp::spawn_full(backend, Some(POLICY), |s| {
        s.notify = email_settings(&smtp);
        s.notify.window = Some(time::Duration::milliseconds(50));
    })
    .await;
    person(&app, "rob", Role::Reviewer, None).await;
    person(&app, "boss", Role::Admin, None).await;
    person(&app, "ada", Role::Admin, Some(&["crm"])).await;
    person(&app, "cora", Role::Compliance, None).await;
    let id = pending(&app, "payments.refund").await;
    // The waiting proposal's email goes to those who may decide it: rob and boss.
    let mut waiting: Vec<String> = Vec::new();
    for _ in 0..2 {
        waiting.extend(next_mail(&mut inbox).await.to);
    }
    waiting.sort();
    assert_eq!(waiting, ["boss@example.com", "rob@example.com"]);

    let rob = signed_in(&app, "rob").await;
    let page = rob.page(&format!("/proposals/{id}")).await;
    assert!(
        !page.contains("data-testid=\"break-glass\""),
        "not offered to a reviewer"
    );
    let boss = signed_in(&app, "boss").await;
    let page = boss.page(&format!("/proposals/{id}")).await;
    assert!(
        page.contains("data-testid=\"break-glass\""),
        "offered to an admin"
    );

    let to = break_glass(&boss, &id, WHY).await;
    assert_eq!(to, format!("/proposals/{id}?notice=broke_glass"));
    let seen = status(&app, &id).await;
    assert_eq!(seen["status"], "approved");
    assert_eq!(seen["authorization_state"], "confirmed");
    assert_eq!(app.count("select count(*) from commands").await, 1);
    let broke = "select count(*) from audit_events where action = 'proposal.break_glass' \
                 and actor = 'boss'";
    assert_eq!(app.count(broke).await, 1);
    let text =
        "select count(*) from audit_events where cast(details as text) like '%double-charged%'";
    assert_eq!(
        app.count(text).await,
        0,
        "the justification is a keyed hash in the trail"
    );

    // Every admin (whatever their domains) and the compliance officer are emailed; the
    // reviewer is not.
    let mut told: Vec<String> = Vec::new();
    for _ in 0..3 {
        let mail = next_mail(&mut inbox).await;
        assert!(mail.subject.contains("Break-glass"), "{}", mail.subject);
        told.extend(mail.to);
    }
    told.sort();
    assert_eq!(
        told,
        ["ada@example.com", "boss@example.com", "cora@example.com"]
    );
    assert!(
        tokio::time::timeout(std::time::Duration::from_millis(500), inbox.recv())
            .await
            .is_err(),
        "nobody else"
    );

    // The page and the trail mark it in red; `/metrics` counts it.
    let page = boss.page(&format!("/proposals/{id}")).await;
    assert!(page.contains("data-testid=\"broke-glass\""), "marked");
    let trail = boss.page("/audit?kind=proposal.break_glass").await;
    assert!(
        trail.contains("data-kind=\"proposal.break_glass\""),
        "{trail}"
    );
    let metrics = app.services.metrics().render(&[]);
    assert!(
        metrics.contains("countersign_break_glass_total 1"),
        "{metrics}"
    );

    // An admin whose own approval waited for a second one may break the glass after it.
    let second = pending(&app, "payments.refund").await;
    let page = format!("/proposals/{second}");
    let csrf = boss.csrf(&page).await;
    let form = [
        ("csrf_token", csrf.as_str()),
        ("id", second.as_str()),
        ("verdict", "approved"),
    ];
    let r = boss.post_form("/fn/decide_proposal", &page, &form).await;
    assert_eq!(location(&r), format!("{page}?notice=approval_recorded"));
    assert_eq!(status(&app, &second).await["status"], "pending");
    let to = break_glass(&boss, &second, WHY).await;
    assert_eq!(to, format!("{page}?notice=broke_glass"));
    assert_eq!(status(&app, &second).await["status"], "approved");
}

async fn break_glass_is_refused_where_it_does_not_belong(backend: &str) {
    let app = TestApp::spawn_with_policy(backend, POLICY).await;
    app.user("rob", Role::Reviewer).await;
    app.user("boss", Role::Admin).await;
    let refund = pending(&app, "payments.refund").await;
    let boss = signed_in(&app, "boss").await;
    let rob = signed_in(&app, "rob").await;

    let to = break_glass(&boss, &refund, "it is urgent").await;
    assert_eq!(
        to,
        format!("/proposals/{refund}?error=break_glass_justification")
    );
    let to = break_glass(&rob, &refund, WHY).await;
    assert_eq!(to, format!("/proposals/{refund}?error=role"));
    assert_eq!(status(&app, &refund).await["status"], "pending");

    let transfer = pending(&app, "payments.transfer").await;
    let page = boss.page(&format!("/proposals/{transfer}")).await;
    assert!(
        !page.contains("data-testid=\"break-glass\""),
        "the policy forbids it"
    );
    let to = break_glass(&boss, &transfer, WHY).await;
    assert_eq!(
        to,
        format!("/proposals/{transfer}?error=break_glass_refused")
    );

    let single = pending(&app, "crm.update_contact").await;
    let to = break_glass(&boss, &single, WHY).await;
    assert_eq!(to, format!("/proposals/{single}?error=break_glass_refused"));
    for id in [&transfer, &single] {
        assert_eq!(status(&app, id).await["status"], "pending");
    }
    let broke = "select count(*) from audit_events where action = 'proposal.break_glass'";
    assert_eq!(app.count(broke).await, 0);
}
