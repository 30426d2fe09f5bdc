//! Standing grants ("approve and allow similar"), through the proposal page's form
//! (`POST /fn/approve_and_grant`), the API an agent submits to, the grants page and its revoke
//! form, on both backends: a grant routes a matching proposal `accept` under `grant:<id>` and
//! not one with other arguments, another agent's, or one past its time or uses; what the
//! policy does not let be granted is neither offered nor made; a revocation on one instance
//! stops the grant on another at once (PostgreSQL).

use countersign::domain::principal::{Principal, Role};
use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::common::on_both_backends;
use crate::helpers::{Browser, PASSWORD, TestApp, location};

on_both_backends!(
    a_grant_accepts_what_it_covers_and_nothing_else,
    a_grant_ends_with_its_time_its_uses_or_a_revocation,
    what_may_not_be_granted_is_neither_offered_nor_made,
    a_grant_accepts_only_while_its_granter_could_approve
);

/// A proposal body of `agent` for a payment-like tool, without personal data; `edit` changes
/// it first.
fn body(agent: &str, edit: impl FnOnce(&mut Value)) -> Value {
    let mut body = crate::common::proposal_body(agent);
    body["compliance_context"] = json!({"gdpr": false, "hipaa": false});
    body["parameters"] = json!({"account": "acct-7", "amount": 120, "memo": "invoice 17"});
    edit(&mut body);
    body
}

/// Submits `body` as `agent`: (status, routing rule, proposal id).
async fn submit(app: &TestApp, agent: &str, body: &Value) -> (String, String, String) {
    let token = app.agent_token(agent).await;
    let r = app.propose(&token, body).await;
    assert_eq!(r.status(), StatusCode::CREATED);
    let v: Value = r.json().await.expect("json");
    let p = &v["proposal"];
    (
        p["status"].as_str().expect("status").to_owned(),
        p["routing"]["rule"].as_str().expect("rule").to_owned(),
        p["id"].as_str().expect("id").to_owned(),
    )
}

/// Posts "approve and allow similar" on proposal `id` as `browser`, with `fields` beside the
/// CSRF token and id (a parameter is named by the hex of its JSON pointer, as the page's form
/// names it: `2f6d656d6f` is `/memo`); where it redirected.
async fn grant(browser: &Browser, id: &str, fields: &[(&str, &str)]) -> String {
    let page = format!("/proposals/{id}");
    let csrf = browser.csrf(&page).await;
    let mut form = vec![("csrf_token", csrf.as_str()), ("id", id)];
    form.extend_from_slice(fields);
    let r = browser
        .post_form("/fn/approve_and_grant", &page, &form)
        .await;
    location(&r)
}

/// The newest live grant's id, as the operator lists them.
async fn live_grant(app: &TestApp) -> Option<String> {
    let live = app.services.grants(&Principal::Operator, true).await;
    live.expect("grants").first().map(|g| g.id.to_string())
}

/// A reviewer signed in, and a pending proposal of `agent-a` for them to grant on.
async fn desk(app: &TestApp) -> (Browser, String) {
    app.user("rev", Role::Reviewer).await;
    let browser = app.browser();
    browser.login("rev", PASSWORD).await;
    let (status, _, id) = submit(app, "agent-a", &body("agent-a", |_| {})).await;
    assert_eq!(status, "pending");
    (browser, id)
}

async fn a_grant_accepts_what_it_covers_and_nothing_else(backend: &str) {
    let app = TestApp::spawn(backend).await;
    let (browser, first) = desk(&app).await;
    let page = browser.page(&format!("/proposals/{first}")).await;
    assert!(page.contains("data-testid=\"approve-grant\""), "offered");
    assert!(
        page.contains("data-testid=\"grant-free-memo\""),
        "each field"
    );
    assert!(
        page.contains("data-testid=\"grant-bound-amount\""),
        "numbers bounded"
    );
    assert!(
        !page.contains("data-testid=\"grant-bound-memo\""),
        "text is not"
    );
    assert!(
        page.contains("<option value=\"3600\" selected"),
        "one hour by default"
    );

    let to = grant(
        &browser,
        &first,
        &[
            ("duration", "3600"),
            ("free[0]", "2f6d656d6f"),
            ("bound_at[0]", "2f616d6f756e74"),
            ("bound_max[0]", "500"),
        ],
    )
    .await;
    assert_eq!(to, format!("/proposals/{first}?notice=granted"));
    let (status, _, _) = submit(&app, "agent-a", &body("agent-a", |_| {})).await;
    assert_eq!(status, "accepted", "the same call");
    let grant_id = live_grant(&app).await.expect("a grant");

    // Inside: another memo, an amount up to the bound.
    let similar = body("agent-a", |b| {
        b["parameters"]["memo"] = json!("invoice 18");
        b["parameters"]["amount"] = json!(499.5);
    });
    let (status, rule, accepted) = submit(&app, "agent-a", &similar).await;
    assert_eq!(
        (status.as_str(), rule),
        ("accepted", format!("grant:{grant_id}"))
    );
    // Outside: another account, an amount over the bound or below zero, a new parameter,
    // another agent, another tool version.
    let outside = [
        (
            "agent-a",
            body("agent-a", |b| b["parameters"]["account"] = json!("acct-8")),
        ),
        (
            "agent-a",
            body("agent-a", |b| b["parameters"]["amount"] = json!(501)),
        ),
        (
            "agent-a",
            body("agent-a", |b| b["parameters"]["amount"] = json!(-5)),
        ),
        (
            "agent-a",
            body("agent-a", |b| b["parameters"]["cc"] = json!("x")),
        ),
        ("agent-b", body("agent-b", |_| {})),
        (
            "agent-a",
            body("agent-a", |b| b["tool"]["version"] = json!("2025-01")),
        ),
        (
            "agent-a",
            body("agent-a", |b| b["risk_level"] = json!("high")),
        ),
    ];
    for (agent, b) in &outside {
        let (status, rule, _) = submit(&app, agent, b).await;
        assert_eq!(status, "pending", "{agent}: {}", b["parameters"]);
        assert!(!rule.starts_with("grant:"), "{rule}");
    }

    // The agent's view names the grant; the command runs with the reviewer's approval.
    let token = app.agent_token("agent-a").await;
    let (_, seen) = app.poll(&token, &accepted).await;
    let seen = &seen["proposal"];
    assert_eq!(seen["routing"]["rule"], format!("grant:{grant_id}"));
    assert_eq!(seen["authorization_state"], "confirmed");
    let commands = "select count(*) from commands";
    assert_eq!(
        app.count(commands).await,
        3,
        "the approval's and two granted"
    );
    // The trail: made once by the reviewer, used twice, naming who made it.
    let made = "select count(*) from audit_events where action = 'grant.made' and actor = 'rev'";
    assert_eq!(app.count(made).await, 1);
    let used = format!(
        "select count(*) from audit_events where action = 'grant.used' and subject_id = \
         '{grant_id}' and cast(details as text) like '%\"granted_by\":\"rev\"%'"
    );
    assert_eq!(app.count(&used).await, 2);
    let leaked = "select count(*) from audit_events where cast(details as text) like '%acct-7%' \
                  or cast(details as text) like '%invoice%'";
    assert_eq!(
        app.count(leaked).await,
        0,
        "values are keyed hashes in the trail"
    );

    // The grants page lists it with its uses; the proposal page links to it.
    let grants = browser.page("/grants").await;
    assert!(
        grants.contains(&format!("data-grant-id=\"{grant_id}\"")),
        "{grants}"
    );
    assert!(grants.contains("2 (no limit)"), "uses");
    assert!(grants.contains("memo (any value)") && grants.contains("amount (from 0 to 500)"));
    let granted = browser.page(&format!("/proposals/{accepted}")).await;
    assert!(granted.contains(&format!("href=\"/grants#grant-{grant_id}\"")));

    // A person limited to domains lists only their domains' grants.
    app.user("far", Role::Reviewer).await;
    for (domains, listed) in [
        (vec!["support".to_owned()], 0),
        (vec!["sales".to_owned()], 1),
    ] {
        (app.services)
            .set_domains(&Principal::Operator, "far", Some(domains))
            .await
            .expect("domains");
        let far = (app.services.person("far", Role::Reviewer))
            .await
            .expect("person");
        let seen = app.services.grants(&far, false).await.expect("grants");
        assert_eq!(seen.len(), listed);
    }
}

async fn a_grant_ends_with_its_time_its_uses_or_a_revocation(backend: &str) {
    let app = TestApp::spawn(backend).await;
    let (browser, first) = desk(&app).await;
    let to = grant(&browser, &first, &[("duration", "900"), ("max_uses", "2")]).await;
    assert_eq!(to, format!("/proposals/{first}?notice=granted"));
    let same = || body("agent-a", |_| {});
    for _ in 0..2 {
        assert_eq!(submit(&app, "agent-a", &same()).await.0, "accepted");
    }
    assert_eq!(
        submit(&app, "agent-a", &same()).await.0,
        "pending",
        "used up"
    );
    let up = "select count(*) from standing_grants where state = 'used_up'";
    assert_eq!(app.count(up).await, 1);

    // A second grant, past its time: asks again; the sweep records its end.
    let (_, _, second) = submit(
        &app,
        "agent-a",
        &body("agent-a", |b| {
            b["parameters"]["memo"] = json!("second");
        }),
    )
    .await;
    let to = grant(&browser, &second, &[("duration", "900")]).await;
    assert_eq!(to, format!("/proposals/{second}?notice=granted"));
    app.clock.advance(time::Duration::seconds(901));
    let late = body("agent-a", |b| b["parameters"]["memo"] = json!("second"));
    assert_eq!(
        submit(&app, "agent-a", &late).await.0,
        "pending",
        "past its time"
    );
    app.services.expire_due().await.expect("sweep");
    let expired = "select count(*) from audit_events where action = 'grant.expired'";
    assert_eq!(app.count(expired).await, 1);

    // A third, revoked on the page: it stops at once.
    let (_, _, third) = submit(
        &app,
        "agent-a",
        &body("agent-a", |b| {
            b["parameters"]["memo"] = json!("third");
        }),
    )
    .await;
    grant(&browser, &third, &[("duration", "3600")]).await;
    let again = || body("agent-a", |b| b["parameters"]["memo"] = json!("third"));
    assert_eq!(submit(&app, "agent-a", &again()).await.0, "accepted");
    let live = live_grant(&app).await.expect("live");
    let csrf = browser.csrf("/grants").await;
    let form = [("csrf_token", csrf.as_str()), ("id", live.as_str())];
    let r = browser
        .post_form("/fn/revoke_grant", "/grants", &form)
        .await;
    assert_eq!(location(&r), "/grants?notice=grant_revoked");
    assert_eq!(
        submit(&app, "agent-a", &again()).await.0,
        "pending",
        "revoked"
    );
    let r = browser
        .post_form("/fn/revoke_grant", "/grants", &form)
        .await;
    assert_eq!(location(&r), "/grants?error=grant_ended", "once");
    let revoked =
        "select count(*) from audit_events where action = 'grant.revoked' and actor = 'rev'";
    assert_eq!(app.count(revoked).await, 1);

    if backend == "postgres" {
        // Two instances on one database: revoked on one, refused on the other at once.
        let other = app.another_instance().await;
        let (_, _, fourth) = submit(
            &app,
            "agent-a",
            &body("agent-a", |b| {
                b["parameters"]["memo"] = json!("fourth");
            }),
        )
        .await;
        grant(&browser, &fourth, &[("duration", "3600")]).await;
        let fourth_call = || body("agent-a", |b| b["parameters"]["memo"] = json!("fourth"));
        assert_eq!(
            submit(&other, "agent-a", &fourth_call()).await.0,
            "accepted"
        );
        let id = live_grant(&app).await.expect("live");
        let id = uuid::Uuid::parse_str(&id).expect("uuid");
        (app.services.revoke_grant(&Principal::Operator, id))
            .await
            .expect("revoked");
        assert_eq!(submit(&other, "agent-a", &fourth_call()).await.0, "pending");
    }
}

async fn what_may_not_be_granted_is_neither_offered_nor_made(backend: &str) {
    let app = TestApp::spawn(backend).await;
    let (browser, first) = desk(&app).await;
    // A bound below the approved value, a field the proposal lacks, too long: refused.
    for fields in [
        vec![
            ("duration", "3600"),
            ("bound_at[0]", "2f616d6f756e74"),
            ("bound_max[0]", "100"),
        ],
        vec![("duration", "3600"), ("free[0]", "2f6e6f7065")],
        vec![("duration", "86401")],
        vec![("duration", "3600"), ("max_uses", "0")],
        vec![("duration", "soon")],
    ] {
        let to = grant(&browser, &first, &fields).await;
        assert_eq!(
            to,
            format!("/proposals/{first}?error=grant_invalid"),
            "{fields:?}"
        );
    }
    assert_eq!(app.count("select count(*) from standing_grants").await, 0);

    // High risk, personal data: the page says why, and the form is refused all the same.
    for edit in [
        (|b: &mut Value| b["risk_level"] = json!("high")) as fn(&mut Value),
        |b: &mut Value| b["compliance_context"]["gdpr"] = json!(true),
    ] {
        let (_, _, id) = submit(&app, "agent-a", &body("agent-a", edit)).await;
        let page = browser.page(&format!("/proposals/{id}")).await;
        assert!(page.contains("data-testid=\"grant-refused\""), "explained");
        assert!(
            !page.contains("data-testid=\"approve-grant\""),
            "not offered"
        );
        let to = grant(&browser, &id, &[("duration", "3600"), ("confirm", "x")]).await;
        assert!(to.contains("?error="), "{to}");
        assert_eq!(app.count("select count(*) from standing_grants").await, 0);
    }

    // A compliance officer sees grants but may not make one (nor revoke one).
    app.user("audit", Role::Compliance).await;
    let officer = app.browser();
    officer.login("audit", PASSWORD).await;
    assert!(
        officer
            .page("/grants")
            .await
            .contains("data-testid=\"grants-live\"")
    );
    let to = grant(&officer, &first, &[("duration", "3600")]).await;
    assert!(to.contains("?error="), "{to}");
    // An agent has no way to make or widen one.
    let token = app.agent_token("agent-a").await;
    let r = app
        .client
        .post(app.url("/api/v1/grants"))
        .bearer_auth(&token)
        .json(&json!({"proposal_id": first}))
        .send()
        .await
        .expect("request");
    assert_eq!(r.status(), StatusCode::NOT_FOUND);
    assert_eq!(app.count("select count(*) from standing_grants").await, 0);
}

/// A grant accepts in its granter's name, so only while they could approve the call
/// themselves: disabled, or limited to another domain, their grants accept nothing (the call
/// asks a person); enabled again, they do.
async fn a_grant_accepts_only_while_its_granter_could_approve(backend: &str) {
    let app = TestApp::spawn(backend).await;
    let (browser, first) = desk(&app).await;
    let to = grant(&browser, &first, &[("duration", "3600")]).await;
    assert_eq!(to, format!("/proposals/{first}?notice=granted"));
    let same = || body("agent-a", |_| {});
    assert_eq!(submit(&app, "agent-a", &same()).await.0, "accepted");

    (app.services)
        .disable_user(&Principal::Operator, "rev")
        .await
        .expect("disable");
    assert_eq!(
        submit(&app, "agent-a", &same()).await.0,
        "pending",
        "a disabled granter's grant accepts nothing"
    );
    (app.services)
        .enable_user(&Principal::Operator, "rev")
        .await
        .expect("enable");
    assert_eq!(submit(&app, "agent-a", &same()).await.0, "accepted");

    (app.services)
        .set_domains(&Principal::Operator, "rev", Some(vec!["billing".into()]))
        .await
        .expect("domains");
    assert_eq!(
        submit(&app, "agent-a", &same()).await.0,
        "pending",
        "nor one whose granter no longer reaches the call's domain"
    );
}
