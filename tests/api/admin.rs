//! The account and token admin pages through plain HTTP, on both backends: only admins see
//! `/admin/*` or use their forms; a token made on the page is shown once, works on the API and
//! is refused on its very next request once revoked; disabling a person ends their open
//! session; the last enabled admin stays, also against two admins stepping down at once on two
//! instances; a revocation holds at once on every instance (PostgreSQL's NOTIFY); an agent's
//! operator does not approve its proposals.

use countersign::domain::principal::Principal;
use countersign::domain::principal::Role;
use reqwest::StatusCode;

use crate::common::on_both_backends;
use crate::helpers::{Browser, PASSWORD, TestApp, location};

on_both_backends!(
    other_roles_get_403_on_the_admin_pages_and_forms,
    a_token_made_on_the_page_is_shown_once_and_revoked_at_once,
    disabling_a_person_ends_their_open_session,
    the_last_admin_stays,
    two_admins_stepping_down_on_two_instances_at_once_leave_one,
    an_admin_rotates_a_webhook_secret_on_the_page,
    neither_an_operator_nor_the_tokens_maker_approves_its_proposals,
    only_an_admin_erases_and_erasure_keeps_keys_hash_and_decision,
);

pub(crate) async fn signed_in(app: &TestApp, name: &str, role: Role) -> Browser {
    app.user(name, role).await;
    let browser = app.browser();
    assert_eq!(location(&browser.login(name, PASSWORD).await), "/");
    browser
}

/// The secret a page shows once, if it shows one.
fn secret(html: &str) -> Option<String> {
    shown(html, "secret")
}

/// The text of the element with test id `testid`, if the page has one.
fn shown(html: &str, testid: &str) -> Option<String> {
    let marker = format!("data-testid=\"{testid}\">");
    let start = html.find(&marker)? + marker.len();
    Some(html[start..].split('<').next()?.to_owned())
}

/// The id of the token row named `name` on the tokens page, and the row's HTML.
fn token_row<'a>(html: &'a str, name: &str) -> (String, &'a str) {
    let row = html
        .split("data-testid=\"token-row\"")
        .find(|r| r.contains(&format!("data-name=\"{name}\"")))
        .expect("the token's row");
    let id = row
        .split("data-token-id=\"")
        .nth(1)
        .and_then(|s| s.split('"').next())
        .expect("token id")
        .to_owned();
    (id, row)
}

/// Posts an admin form from `page` and follows the redirect back; the page's HTML.
async fn post(b: &Browser, page: &str, endpoint: &str, form: &[(&str, &str)]) -> (String, String) {
    let csrf = b.csrf(page).await;
    let mut fields = vec![("csrf_token", csrf.as_str())];
    fields.extend_from_slice(form);
    let r = b.post_form(endpoint, page, &fields).await;
    let to = location(&r);
    let html = if to.starts_with("/admin") {
        b.page(&to).await
    } else {
        String::new()
    };
    (to, html)
}

async fn other_roles_get_403_on_the_admin_pages_and_forms(backend: &str) {
    let app = TestApp::spawn(backend).await;
    let admin = signed_in(&app, "boss", Role::Admin).await;
    assert!(admin.page("/").await.contains("data-testid=\"nav-admin\""));
    for role in [Role::Reviewer, Role::Compliance] {
        let name = format!("p-{role}");
        let b = signed_in(&app, &name, role).await;
        assert!(!b.page("/").await.contains("data-testid=\"nav-admin\""));
        for path in [
            "/admin/users",
            "/admin/tokens",
            "/admin/webhooks",
            "/admin/gateway",
        ] {
            let r = b.get(path).await;
            assert_eq!(r.status(), StatusCode::FORBIDDEN, "{role} GET {path}");
        }
        let csrf = b.csrf("/").await;
        let form = [
            ("csrf_token", csrf.as_str()),
            ("action", "disable"),
            ("username", "boss"),
        ];
        let r = b.post_form("/fn/change_user", "/admin/users", &form).await;
        assert_eq!(location(&r), "/admin/users?error=admin_role");
        let form = [
            ("csrf_token", csrf.as_str()),
            ("action", "create"),
            ("kind", "agent"),
            ("name", "sneaky"),
        ];
        let r = b
            .post_form("/fn/change_token", "/admin/tokens", &form)
            .await;
        assert_eq!(location(&r), "/admin/tokens?error=admin_role");
        let form = [
            ("csrf_token", csrf.as_str()),
            ("action", "accept"),
            ("name", "files.write_file"),
            ("sha256", "0"),
        ];
        let r = b
            .post_form("/fn/change_gateway", "/admin/gateway", &form)
            .await;
        assert_eq!(location(&r), "/admin/gateway?error=admin_role");
    }
    assert_eq!(app.count("select count(*) from api_tokens").await, 0);
    let disabled = "select count(*) from users where disabled_at is not null";
    assert_eq!(app.count(disabled).await, 0);
    let denied = "select count(*) from audit_events where action = 'access.denied' \
                  and subject_id = '/admin'";
    assert_eq!(app.count(denied).await, 14, "every refusal is in the trail");
    // A form without this session's token changes nothing.
    let form = [
        ("csrf_token", "x"),
        ("action", "disable"),
        ("username", "p-reviewer"),
    ];
    let r = admin
        .post_form("/fn/change_user", "/admin/users", &form)
        .await;
    assert_eq!(location(&r), "/admin/users?error=csrf");
    assert_eq!(app.count(disabled).await, 0);
    // …and is itself in the trail: which form, by whom.
    let refused = "select count(*) from audit_events where action = 'auth.csrf_rejected' \
                   and subject_id = 'admin' and actor = 'boss'";
    assert_eq!(
        app.count(refused).await,
        1,
        "the refused form is in the trail"
    );
}

async fn a_token_made_on_the_page_is_shown_once_and_revoked_at_once(backend: &str) {
    let app = TestApp::spawn(backend).await;
    let admin = signed_in(&app, "boss", Role::Admin).await;
    let form = [
        ("action", "create"),
        ("kind", "agent"),
        ("name", "sales-bot"),
    ];
    let (to, html) = post(&admin, "/admin/tokens", "/fn/change_token", &form).await;
    assert!(
        to.starts_with("/admin/tokens?notice=token_created&shown="),
        "{to}"
    );
    let token = secret(&html).expect("the token is shown");
    assert!(secret(&admin.page(&to).await).is_none(), "shown once only");
    let listed = admin.page("/admin/tokens").await;
    assert!(listed.contains("data-name=\"sales-bot\""));
    assert!(!listed.contains(&token), "the list never shows a secret");

    let id = app.propose_ok(&token, "sales-bot").await;
    assert_eq!(app.poll(&token, &id).await.0, StatusCode::OK);
    let (token_id, _) = token_row(&listed, "sales-bot");
    let form = [("action", "revoke"), ("id", token_id.as_str())];
    let (to, _) = post(&admin, "/admin/tokens", "/fn/change_token", &form).await;
    assert_eq!(to, "/admin/tokens?notice=token_revoked");
    assert_eq!(app.poll(&token, &id).await.0, StatusCode::UNAUTHORIZED);
    let trail = "select count(*) from audit_events where action in ('token.created', \
                 'token.revoked') and actor = 'boss'";
    assert_eq!(app.count(trail).await, 2);
}

async fn disabling_a_person_ends_their_open_session(backend: &str) {
    let app = TestApp::spawn(backend).await;
    let admin = signed_in(&app, "boss", Role::Admin).await;
    let rev = signed_in(&app, "rita", Role::Reviewer).await;
    assert_eq!(rev.get("/").await.status(), StatusCode::OK);
    let form = [("action", "disable"), ("username", "rita")];
    let (to, html) = post(&admin, "/admin/users", "/fn/change_user", &form).await;
    assert_eq!(to, "/admin/users?notice=user_disabled");
    assert!(html.contains("data-testid=\"disable-boss\""));
    assert!(html.contains("data-testid=\"enable-rita\""));
    assert_eq!(location(&rev.get("/").await), "/login");
    assert_ne!(location(&rev.login("rita", PASSWORD).await), "/");

    let form = [("action", "enable"), ("username", "rita")];
    let (to, _) = post(&admin, "/admin/users", "/fn/change_user", &form).await;
    assert_eq!(to, "/admin/users?notice=user_enabled");
    let form = [("action", "reset_password"), ("username", "rita")];
    let (to, html) = post(&admin, "/admin/users", "/fn/change_user", &form).await;
    assert!(
        to.starts_with("/admin/users?notice=password_reset&shown="),
        "{to}"
    );
    let password = secret(&html).expect("a one-time password");
    let again = app.browser();
    assert_eq!(location(&again.login("rita", &password).await), "/");

    let form = [
        ("action", "email"),
        ("username", "rita"),
        ("email", "rita@example.com"),
    ];
    let (to, html) = post(&admin, "/admin/users", "/fn/change_user", &form).await;
    assert_eq!(to, "/admin/users?notice=email_changed");
    assert!(html.contains("rita@example.com"), "{html}");
    let audited = "select count(*) from audit_events where action = 'user.email_changed' \
                   and actor = 'boss'";
    assert_eq!(app.count(audited).await, 1);
    let form = [
        ("action", "email"),
        ("username", "rita"),
        ("email", "not-an-address"),
    ];
    let (to, _) = post(&admin, "/admin/users", "/fn/change_user", &form).await;
    assert_eq!(to, "/admin/users?error=account_invalid");

    let form = [
        ("action", "add"),
        ("username", "newbie"),
        ("role", "compliance"),
        ("domains", "billing"),
        ("email", "newbie@example.com"),
    ];
    let (to, html) = post(&admin, "/admin/users", "/fn/change_user", &form).await;
    assert!(
        to.starts_with("/admin/users?notice=user_added&shown="),
        "{to}"
    );
    let password = secret(&html).expect("a one-time password");
    assert_eq!(
        location(&app.browser().login("newbie", &password).await),
        "/"
    );
    let trail = "select count(*) from audit_events where actor = 'boss' and action in \
                 ('user.disabled', 'user.enabled', 'user.password_reset', 'user.created', \
                 'user.domains_changed')";
    assert_eq!(app.count(trail).await, 5);
}

async fn the_last_admin_stays(backend: &str) {
    let app = TestApp::spawn(backend).await;
    let admin = signed_in(&app, "boss", Role::Admin).await;
    for form in [
        [("action", "disable"), ("username", "boss"), ("role", "")],
        [
            ("action", "role"),
            ("username", "boss"),
            ("role", "reviewer"),
        ],
    ] {
        let (to, _) = post(&admin, "/admin/users", "/fn/change_user", &form).await;
        assert_eq!(to, "/admin/users?error=last_admin");
    }
    let admins = "select count(*) from users where role = 'admin' and disabled_at is null";
    assert_eq!(app.count(admins).await, 1);
    // With a second admin, the first may step down (and signs in again under the new role).
    app.user("deputy", Role::Admin).await;
    let csrf = admin.csrf("/admin/users").await;
    let form = [
        ("csrf_token", csrf.as_str()),
        ("action", "role"),
        ("username", "boss"),
        ("role", "reviewer"),
    ];
    let r = admin
        .post_form("/fn/change_user", "/admin/users", &form)
        .await;
    assert_eq!(location(&r), "/admin/users?notice=role_changed");
    assert_eq!(location(&admin.get("/admin/users").await), "/login");
    let disabled = app
        .services
        .disable_user(&Principal::Operator, "deputy")
        .await;
    assert!(disabled.is_err(), "the shell keeps the last admin too");
}

async fn two_admins_stepping_down_on_two_instances_at_once_leave_one(backend: &str) {
    let app = TestApp::spawn(backend).await;
    let other = app.another_instance().await;
    let admins = "select count(*) from users where role = 'admin' and disabled_at is null";
    let system = Principal::Operator;
    app.user("ada", Role::Admin).await;
    app.user("bo", Role::Admin).await;
    // Each round, one admin is demoted on one instance while the other is disabled on the
    // other, at the same moment: exactly one change may go through.
    for round in 0..8 {
        let (a, b) = tokio::join!(
            app.services.set_role(&system, "ada", Role::Reviewer),
            other.services.disable_user(&system, "bo"),
        );
        assert_eq!(
            usize::from(a.is_ok()) + usize::from(b.is_ok()),
            1,
            "round {round}: exactly one steps down ({a:?}, {b:?})"
        );
        assert_eq!(app.count(admins).await, 1, "round {round}");
        // Both admins again for the next round.
        if a.is_ok() {
            app.services
                .set_role(&system, "ada", Role::Admin)
                .await
                .expect("re-grant");
        } else {
            app.services
                .enable_user(&system, "bo")
                .await
                .expect("re-enable");
        }
        assert_eq!(app.count(admins).await, 2, "round {round}");
    }
}

/// On PostgreSQL a token revoked on one instance is refused on the very next request to any
/// other, though that instance had just read (and cached) it. (SQLite has one serving
/// process, whose own revocations clear its cache: the test above.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_revocation_holds_on_every_postgresql_instance_at_once() {
    let app = TestApp::spawn("postgres").await;
    let other = app.another_instance().await;
    let token = app.agent_token("sales-bot").await;
    let id = app.propose_ok(&token, "sales-bot").await;
    assert_eq!(
        other.poll(&token, &id).await.0,
        StatusCode::OK,
        "cached now"
    );
    let system = Principal::Operator;
    let revoked_at = std::time::Instant::now();
    app.services
        .revoke_tokens(
            &system,
            countersign::domain::principal::TokenKind::Agent,
            "sales-bot",
        )
        .await
        .expect("revoke");
    // The NOTIFY travels after the commit, so the other instance may answer a request or two
    // first; well inside the cache's 2 s lifetime it refuses.
    loop {
        let status = other.poll(&token, &id).await.0;
        if status == StatusCode::UNAUTHORIZED {
            break;
        }
        assert_eq!(status, StatusCode::OK);
        assert!(
            revoked_at.elapsed() < std::time::Duration::from_millis(500),
            "still accepted {:?} after the revocation",
            revoked_at.elapsed()
        );
    }
}

async fn an_admin_rotates_a_webhook_secret_on_the_page(backend: &str) {
    let app = TestApp::spawn(backend).await;
    let admin = signed_in(&app, "boss", Role::Admin).await;
    let form = [
        ("action", "create"),
        ("kind", "agent"),
        ("name", "hooked-bot"),
        ("webhook", "http://127.0.0.1:9/hook"),
    ];
    let (_, html) = post(&admin, "/admin/tokens", "/fn/change_token", &form).await;
    let first = shown(&html, "webhook-secret").expect("the webhook secret is shown once");
    let listed = admin.page("/admin/tokens").await;
    let (id, row) = token_row(&listed, "hooked-bot");
    assert!(row.contains("data-testid=\"rotate-webhook-secret\""));
    let form = [("action", "rotate_webhook_secret"), ("id", id.as_str())];
    let (to, html) = post(&admin, "/admin/tokens", "/fn/change_token", &form).await;
    assert!(
        to.starts_with("/admin/tokens?notice=webhook_secret_rotated&shown="),
        "{to}"
    );
    let rotated = secret(&html).expect("the new secret is shown once");
    assert!(rotated.starts_with("csw_") && rotated != first, "{rotated}");
    assert!(secret(&admin.page(&to).await).is_none(), "shown once only");
    let trail = "select count(*) from audit_events where action = \
                 'token.webhook_secret_rotated' and actor = 'boss'";
    assert_eq!(app.count(trail).await, 1);
    // A token without a webhook has no such button, and the form refuses it.
    let plain = app.agent_token("plain-bot").await;
    drop(plain);
    let listed = admin.page("/admin/tokens").await;
    let (plain_id, plain_row) = token_row(&listed, "plain-bot");
    assert!(!plain_row.contains("rotate-webhook-secret"));
    let form = [
        ("action", "rotate_webhook_secret"),
        ("id", plain_id.as_str()),
    ];
    let (to, _) = post(&admin, "/admin/tokens", "/fn/change_token", &form).await;
    assert!(to.starts_with("/admin/tokens?error="), "{to}");
    assert_eq!(app.count(trail).await, 1);
}

async fn neither_an_operator_nor_the_tokens_maker_approves_its_proposals(backend: &str) {
    let app = TestApp::spawn(backend).await;
    let admin = signed_in(&app, "boss", Role::Admin).await;
    let olga = signed_in(&app, "olga", Role::Reviewer).await;
    let form = [
        ("action", "create"),
        ("kind", "agent"),
        ("name", "ops-agent"),
        ("operator", "olga"),
    ];
    let (_, html) = post(&admin, "/admin/tokens", "/fn/change_token", &form).await;
    let token = secret(&html).expect("token");
    let id = app.propose_ok(&token, "ops-agent").await;
    let r = olga.decide(&id, "approved", None).await;
    assert_eq!(
        location(&r),
        format!("/proposals/{id}?error=operates_agent")
    );
    assert_eq!(
        app.poll(&token, &id).await.1["proposal"]["status"],
        "pending"
    );
    let refused = "select count(*) from audit_events where action = 'proposal.decision_refused' \
                   and actor = 'olga'";
    assert_eq!(app.count(refused).await, 1);
    // The admin who made the token saw its secret, so they operate the agent too.
    let r = admin.decide(&id, "approved", None).await;
    assert_eq!(
        location(&r),
        format!("/proposals/{id}?error=operates_agent")
    );
    let rita = signed_in(&app, "rita", Role::Reviewer).await;
    let r = rita.decide(&id, "approved", None).await;
    assert_eq!(location(&r), format!("/proposals/{id}?notice=approved"));
    // Rejecting stays open to the creator: saying no is never a conflict of interest.
    let other = app.propose_ok(&token, "ops-agent").await;
    let r = admin.decide(&other, "rejected", Some("not now")).await;
    assert_eq!(location(&r), format!("/proposals/{other}?notice=rejected"));
    // A token made at the shell has no creator: the admin may approve its agent's proposals.
    let shell = app.agent_token("shell-agent").await;
    let id = app.propose_ok(&shell, "shell-agent").await;
    let r = admin.decide(&id, "approved", None).await;
    assert_eq!(location(&r), format!("/proposals/{id}?notice=approved"));
    // An operator who is not a user is refused.
    let form = [
        ("action", "create"),
        ("kind", "agent"),
        ("name", "x"),
        ("operator", "ghost"),
    ];
    let (to, _) = post(&admin, "/admin/tokens", "/fn/change_token", &form).await;
    assert_eq!(to, "/admin/tokens?error=account_invalid");
}

/// GDPR erasure on the proposal page: a reviewer's erase form is refused (and audited) and
/// erases nothing; an admin's erases the values and keeps the parameter keys, the request
/// hash, the tool, the idempotency key and the decision; the chain still verifies.
async fn only_an_admin_erases_and_erasure_keeps_keys_hash_and_decision(backend: &str) {
    let app = TestApp::spawn(backend).await;
    let admin = signed_in(&app, "boss", Role::Admin).await;
    let rev = signed_in(&app, "rev", Role::Reviewer).await;
    let agent = app.agent_token("a1").await;
    let id = app.propose_ok(&agent, "a1").await;
    let uuid = uuid::Uuid::parse_str(&id).expect("uuid");
    let r = rev.decide(&id, "rejected", Some("not today")).await;
    assert_eq!(location(&r), format!("/proposals/{id}?notice=rejected"));
    let before = app
        .services
        .proposal(&Principal::Operator, uuid)
        .await
        .expect("read")
        .expect("it");
    let polled_before = app.poll(&agent, &id).await.1;
    let erased_rows = "select count(*) from audit_events where action = 'proposal.erased'";

    // A reviewer may not erase: refused, audited, and nothing changes.
    assert_eq!(
        erase(&rev, &id).await,
        format!("/proposals/{id}?error=erase_role")
    );
    let unchanged = app
        .services
        .proposal(&Principal::Operator, uuid)
        .await
        .expect("read")
        .expect("it");
    assert_eq!(unchanged.contract, before.contract);
    assert!(unchanged.erasure.is_none());
    assert_eq!(app.count(erased_rows).await, 0);
    let denied = app
        .services
        .trail(&Principal::Operator, "page", "erase")
        .await
        .expect("trail");
    assert_eq!(denied.len(), 1, "{denied:?}");
    assert_eq!(
        (denied[0].action.as_str(), denied[0].actor.as_str()),
        ("access.denied", "rev")
    );
    assert_eq!(denied[0].details["role"], "reviewer");

    // An admin may.
    assert_eq!(
        erase(&admin, &id).await,
        format!("/proposals/{id}?notice=erased")
    );
    let after = app
        .services
        .proposal(&Principal::Operator, uuid)
        .await
        .expect("read")
        .expect("it");
    assert!(!before.contract.parameters.is_empty());
    assert_eq!(
        after.contract.parameters.keys().collect::<Vec<_>>(),
        before.contract.parameters.keys().collect::<Vec<_>>(),
        "the parameter keys stay"
    );
    assert!(
        after.contract.parameters.values().all(|v| v == "[erased]"),
        "{:?}",
        after.contract.parameters
    );
    assert_eq!(after.contract.intent.summary, "[erased]");
    assert_eq!(after.request_hash, before.request_hash);
    assert_eq!(after.contract.tool, before.contract.tool);
    assert_eq!(
        after.contract.idempotency_key,
        before.contract.idempotency_key
    );
    assert_eq!(after.status, before.status);
    let (was, is) = (
        before.review.as_ref().expect("decided"),
        after.review.as_ref().expect("still decided"),
    );
    assert_eq!((is.verdict, &is.decided_by), (was.verdict, &was.decided_by));
    assert_eq!(after.erasure.as_ref().expect("erasure").by, "boss");
    // The agent sees the same hash, tool, key and decision.
    let polled = app.poll(&agent, &id).await.1;
    for field in ["request_hash_sha256", "tool", "idempotency_key", "status"] {
        assert_eq!(
            polled["proposal"][field], polled_before["proposal"][field],
            "{field}"
        );
    }
    assert_eq!(polled["proposal"]["review"]["decision"], "rejected");
    assert_eq!(polled["proposal"]["intent"]["summary"], "[erased]");

    // The erasure is audited by the admin, bound to the request hash, without the reason's text.
    let trail = app
        .services
        .trail(&Principal::Operator, "proposal", &id)
        .await
        .expect("trail");
    let erased: Vec<_> = trail
        .iter()
        .filter(|e| e.action == "proposal.erased")
        .collect();
    assert_eq!(erased.len(), 1);
    assert_eq!(erased[0].actor, "boss");
    assert_eq!(
        erased[0].details["request_hash_sha256"].as_str(),
        Some(before.request_hash.as_str())
    );
    assert!(
        erased[0].details["erased"]
            .as_array()
            .expect("parts")
            .iter()
            .any(|p| p == "parameters")
    );
    // The reason's text, not "4711" alone: that can turn up in the hex of a hash or an id
    // (about one run in four hundred).
    let details = erased[0].details.to_string();
    assert!(!details.contains("request 4711"), "{details}");
    // A second press erases nothing more.
    assert_eq!(
        erase(&admin, &id).await,
        format!("/proposals/{id}?error=already_erased")
    );
    assert_eq!(app.count(erased_rows).await, 1);
    let verified = crate::common::run_ok(&app.db_url, &["audit", "verify"], None);
    assert!(verified.starts_with("ok:"), "{verified}");
}

/// Presses "Erase personal data" on proposal `id`'s page; where it redirects.
pub(crate) async fn erase(b: &Browser, id: &str) -> String {
    let page = format!("/proposals/{id}");
    let csrf = b.csrf(&page).await;
    let form = [
        ("csrf_token", csrf.as_str()),
        ("id", id),
        ("reason", "request 4711"),
    ];
    location(&b.post_form("/fn/erase_proposal", &page, &form).await)
}
