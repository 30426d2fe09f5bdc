//! The reviewer pages through plain HTTP, as a browser without JavaScript uses them: sign-in,
//! CSRF, roles, separation of duties, and decisions that happen once.

use countersign::domain::principal::Principal;
use countersign::domain::principal::Role;
use countersign::domain::sso::SsoIdentity;
use countersign::service::SsoSignIn;
use reqwest::StatusCode;

use crate::helpers::{PASSWORD, TestApp, location};

#[tokio::test]
async fn pages_need_a_session_and_sign_in_needs_the_right_password() {
    let app = TestApp::spawn("sqlite").await;
    app.user("rev", Role::Reviewer).await;
    let browser = app.browser();
    let r = browser.get("/").await;
    assert_eq!(
        (r.status(), location(&r)),
        (StatusCode::FOUND, "/login".to_owned())
    );
    let r = browser.login("rev", "not the password at all").await;
    assert_eq!(location(&r), "/login?error=invalid_credentials");
    let r = browser.login("nobody", PASSWORD).await;
    assert_eq!(location(&r), "/login?error=invalid_credentials");
    assert_eq!(browser.get("/").await.status(), StatusCode::FOUND);
    let r = browser.login("rev", PASSWORD).await;
    assert_eq!(location(&r), "/");
    let queue = browser.page("/").await;
    assert!(queue.contains("data-testid=\"queue-empty\""));
    assert!(queue.contains("data-testid=\"logout\""));
}

#[tokio::test]
async fn forms_without_the_session_csrf_token_change_nothing() {
    let app = TestApp::spawn("sqlite").await;
    app.user("rev", Role::Reviewer).await;
    let agent = app.agent_token("a1").await;
    let id = app.propose_ok(&agent, "a1").await;
    let browser = app.browser();
    browser.csrf("/login").await;
    let r = browser
        .post_form(
            "/fn/login",
            "/login",
            &[
                ("csrf_token", "forged"),
                ("username", "rev"),
                ("password", PASSWORD),
            ],
        )
        .await;
    assert_eq!(location(&r), "/login?error=csrf");
    browser.login("rev", PASSWORD).await;
    let page = format!("/proposals/{id}");
    let r = browser
        .post_form(
            "/fn/decide_proposal",
            &page,
            &[("csrf_token", ""), ("id", &id), ("verdict", "approved")],
        )
        .await;
    assert_eq!(location(&r), format!("{page}?error=csrf"));
    let (_, polled) = app.poll(&agent, &id).await;
    assert_eq!(polled["proposal"]["status"], "pending");
}

#[tokio::test]
async fn compliance_officers_read_but_cannot_decide() {
    let app = TestApp::spawn("sqlite").await;
    app.user("auditor", Role::Compliance).await;
    let agent = app.agent_token("a1").await;
    let id = app.propose_ok(&agent, "a1").await;
    let browser = app.browser();
    browser.login("auditor", PASSWORD).await;
    let detail = browser.page(&format!("/proposals/{id}")).await;
    assert!(detail.contains("The customer asked for it in ticket 42."));
    assert!(!detail.contains("data-testid=\"approve\""));
    let r = browser.decide(&id, "approved", None).await;
    assert_eq!(location(&r), format!("/proposals/{id}?error=role"));
    assert_eq!(
        app.poll(&agent, &id).await.1["proposal"]["status"],
        "pending"
    );
    // The refusal is a security event on the proposal's trail, naming who and why.
    let refused = refusals(&app, &id).await;
    assert_eq!(refused.len(), 1, "{refused:?}");
    assert_eq!(refused[0].actor, "auditor");
    assert_eq!(refused[0].details["refused"], "role_may_not_decide");
    assert_eq!(refused[0].details["verdict"], "approved");
}

/// The `proposal.decision_refused` rows on proposal `id`'s trail.
async fn refusals(app: &TestApp, id: &str) -> Vec<countersign::storage::audit::AuditRecord> {
    app.services
        .trail(&Principal::Operator, "proposal", id)
        .await
        .expect("trail")
        .into_iter()
        .filter(|e| e.action == "proposal.decision_refused")
        .collect()
}

#[tokio::test]
async fn nobody_approves_their_own_proposal() {
    let app = TestApp::spawn("sqlite").await;
    // A person whose account shares the agent's name is the proposer.
    app.user("ops-bot", Role::Admin).await;
    let agent = app.agent_token("ops-bot").await;
    let id = app.propose_ok(&agent, "ops-bot").await;
    let browser = app.browser();
    browser.login("ops-bot", PASSWORD).await;
    let detail = browser.page(&format!("/proposals/{id}")).await;
    assert!(detail.contains("data-testid=\"cannot-decide\""));
    assert!(!detail.contains("data-testid=\"approve\""));
    let r = browser.decide(&id, "approved", None).await;
    assert_eq!(location(&r), format!("/proposals/{id}?error=own_proposal"));
    assert_eq!(
        app.poll(&agent, &id).await.1["proposal"]["status"],
        "pending"
    );
    let refused = refusals(&app, &id).await;
    assert_eq!(refused.len(), 1, "{refused:?}");
    assert_eq!(refused[0].actor, "ops-bot");
    assert_eq!(refused[0].details["refused"], "own_proposal");
    assert_eq!(refused[0].details["verdict"], "approved");
}

#[tokio::test]
async fn a_second_decision_gets_a_clear_message_not_a_second_decision() {
    let app = TestApp::spawn("sqlite").await;
    app.user("rev1", Role::Reviewer).await;
    app.user("rev2", Role::Reviewer).await;
    let agent = app.agent_token("a1").await;
    let id = app.propose_ok(&agent, "a1").await;
    let first = app.browser();
    let second = app.browser();
    first.login("rev1", PASSWORD).await;
    second.login("rev2", PASSWORD).await;
    // Both have the page open with its forms.
    let page = format!("/proposals/{id}");
    let csrf2 = second.csrf(&page).await;
    assert_eq!(
        location(&first.decide(&id, "approved", None).await),
        format!("{page}?notice=approved")
    );
    let r = second
        .post_form(
            "/fn/decide_proposal",
            &page,
            &[
                ("csrf_token", &csrf2),
                ("id", &id),
                ("verdict", "rejected"),
                ("reason", "too late"),
            ],
        )
        .await;
    assert_eq!(location(&r), format!("{page}?error=already_decided"));
    let html = second.page(&format!("{page}?error=already_decided")).await;
    assert!(html.contains("data-testid=\"flash-error\""));
    let polled = app.poll(&agent, &id).await.1;
    assert_eq!(polled["proposal"]["status"], "approved");
    assert_eq!(polled["proposal"]["review"]["decided_by"], "rev1");
}

#[tokio::test]
async fn sign_out_ends_the_session() {
    let app = TestApp::spawn("sqlite").await;
    app.user("rev", Role::Reviewer).await;
    let browser = app.browser();
    browser.login("rev", PASSWORD).await;
    let signed_out = || async {
        let trail = app
            .services
            .trail(&Principal::Operator, "user", "rev")
            .await
            .expect("trail");
        trail
            .into_iter()
            .filter(|e| e.action == "auth.signed_out")
            .map(|e| (e.actor_kind.to_string(), e.actor))
            .collect::<Vec<_>>()
    };
    assert!(signed_out().await.is_empty());
    let csrf = browser.csrf("/").await;
    let r = browser
        .post_form("/fn/logout", "/", &[("csrf_token", &csrf)])
        .await;
    assert_eq!(location(&r), "/login?notice=signed_out");
    assert_eq!(location(&browser.get("/").await), "/login");
    assert_eq!(signed_out().await, [("user".to_owned(), "rev".to_owned())]);
}

#[tokio::test]
async fn unknown_pages_are_404() {
    let app = TestApp::spawn("sqlite").await;
    assert_eq!(
        app.browser().get("/no/such/page").await.status(),
        StatusCode::NOT_FOUND
    );
}

#[tokio::test]
async fn a_disabled_or_demoted_account_must_sign_in_again() {
    let app = TestApp::spawn("sqlite").await;
    app.user("rev", Role::Reviewer).await;
    let browser = app.browser();
    browser.login("rev", PASSWORD).await;
    assert_eq!(browser.get("/").await.status(), StatusCode::OK);
    app.exec("update users set role = 'compliance' where username = 'rev'")
        .await;
    assert_eq!(
        location(&browser.get("/").await),
        "/login",
        "the session's role is stale"
    );
    app.exec("update users set role = 'reviewer', disabled_at = '2026-01-01T00:00:00Z' where username = 'rev'").await;
    assert_eq!(location(&browser.get("/").await), "/login");
    assert_eq!(
        location(&browser.login("rev", PASSWORD).await),
        "/login?error=invalid_credentials"
    );
}

#[tokio::test]
async fn an_account_without_a_role_signs_in_to_be_told_so_and_may_do_nothing() {
    let app = TestApp::spawn("sqlite").await;
    let agent = app.agent_token("a1").await;
    let id = app.propose_ok(&agent, "a1").await;
    // Made at its first single sign-on with no role; an admin then gave it a password.
    let identity = SsoIdentity {
        issuer: "https://idp.example.com".into(),
        subject: "s-1".into(),
        preferred_username: Some("nemo".into()),
        email: None,
        role_claim: None,
    };
    let made = app.services.sso_sign_in(identity).await.expect("signs in");
    assert!(matches!(made, SsoSignIn::SignedIn(u) if u.role.is_none()));
    app.services
        .reset_password(&Principal::Operator, "nemo", PASSWORD.into())
        .await
        .expect("password");
    let browser = app.browser();
    assert_eq!(location(&browser.login("nemo", PASSWORD).await), "/no-role");
    assert!(
        browser
            .page("/no-role")
            .await
            .contains("data-testid=\"no-role\"")
    );
    for page in ["/", &format!("/proposals/{id}"), "/audit", "/admin/users"] {
        let r = browser.get(page).await;
        assert_eq!(
            (r.status(), location(&r)),
            (StatusCode::FOUND, "/login".into()),
            "{page}"
        );
    }
    assert_eq!(location(&browser.get("/login").await), "/no-role");
    // Nor does a decision posted with the session's own token.
    let csrf = browser.csrf("/no-role").await;
    let form = [
        ("csrf_token", csrf.as_str()),
        ("id", &id),
        ("verdict", "approved"),
    ];
    let r = browser
        .post_form("/fn/decide_proposal", &format!("/proposals/{id}"), &form)
        .await;
    assert_eq!(location(&r), "/login");
    assert_eq!(
        app.poll(&agent, &id).await.1["proposal"]["status"],
        "pending"
    );
}
