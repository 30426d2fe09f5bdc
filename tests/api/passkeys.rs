//! Passkey step-up through the pages' forms, on both backends, with a software authenticator
//! (`webauthn-authenticator-rs`) standing in for the browser's: a reviewer registers a passkey
//! on their account page, and approving a tool the policy marks `step_up = true` then needs
//! an assertion over a challenge that binds the proposal's request hash. Refused: no passkey,
//! no answer, another proposal's answer replayed, an answer without user verification, an
//! answer used twice; never in a batch, never granted or edited. The trail names the
//! credential, and its challenge checks against the request hash without the database.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use countersign::domain::principal::Role;
use countersign::domain::review::step_up;
use reqwest::StatusCode;
use serde_json::{Value, json};
use url::Url;
use uuid::Uuid;
use webauthn_authenticator_rs::WebauthnAuthenticator;
use webauthn_authenticator_rs::softpasskey::SoftPasskey;
use webauthn_rs::prelude::{CreationChallengeResponse, RequestChallengeResponse};
use webauthn_rs_proto::UserVerificationPolicy;

use crate::common::on_both_backends;
use crate::helpers::{Browser, PASSWORD, TestApp, location};

on_both_backends!(
    a_payment_is_approved_with_the_approvers_passkey,
    step_up_refuses_what_does_not_prove_this_request,
    passkeys_are_named_renamed_and_removed_on_the_account_page,
    an_admin_breaks_the_glass_with_a_passkey_after_approving
);

const POLICY: &str = r#"
[defaults]
unknown_agents = "allow"

[tools."payments.refund"]
category = "C"
risk = "medium"
step_up = true

[tools."payments.transfer"]
category = "C"
risk = "medium"
required_approvals = 2
step_up = true
"#;

/// The origin the software authenticator answers for: the relying party is `localhost` on
/// any port when no public URL is set.
fn origin() -> Url {
    Url::parse("http://localhost:3000").expect("origin")
}

/// A pending proposal of `agent-a` for `tool`; its id.
async fn pending(app: &TestApp, tool: &str, amount: i64) -> String {
    let token = app.agent_token("agent-a").await;
    let mut body = crate::common::proposal_body("agent-a");
    body["tool"]["name"] = json!(tool);
    body["parameters"] = json!({"amount": amount, "order": "o-1"});
    body["compliance_context"] = json!({"gdpr": false, "hipaa": false});
    let r = app.propose(&token, &body).await;
    assert_eq!(r.status(), StatusCode::CREATED);
    let v: Value = r.json().await.expect("json");
    assert_eq!(v["proposal"]["status"], "pending", "{v}");
    v["proposal"]["id"].as_str().expect("id").to_owned()
}

async fn signed_in(app: &TestApp, name: &str) -> Browser {
    app.user(name, Role::Reviewer).await;
    let browser = app.browser();
    browser.login(name, PASSWORD).await;
    browser
}

/// The options of the passkey prompt (`id`: a proposal's step-up), as the page's script
/// fetches them.
async fn options(app: &TestApp, browser: &Browser, page: &str, id: Option<&str>) -> Value {
    let csrf = browser.csrf(page).await;
    let mut form = vec![("csrf_token", csrf.as_str())];
    if let Some(id) = id {
        form.push(("id", id));
    }
    let r = (browser.client)
        .post(app.url("/fn/passkey_options"))
        .header("accept", "application/json")
        .form(&form)
        .send()
        .await
        .expect("request");
    assert_eq!(r.status(), StatusCode::OK);
    let text: String = r.json().await.expect("json text");
    serde_json::from_str(&text).expect("options")
}

/// Registers a passkey named `name` with `authenticator`; where the form redirected.
async fn register(
    app: &TestApp,
    browser: &Browser,
    authenticator: &mut WebauthnAuthenticator<SoftPasskey>,
    name: &str,
) -> String {
    let options = options(app, browser, "/account", None).await;
    let ccr: CreationChallengeResponse = serde_json::from_value(options).expect("creation");
    let credential = authenticator
        .do_registration(origin(), ccr)
        .expect("the authenticator registers");
    let credential = serde_json::to_string(&credential).expect("json");
    let csrf = browser.csrf("/account").await;
    let form = [
        ("csrf_token", csrf.as_str()),
        ("name", name),
        ("credential", credential.as_str()),
    ];
    location(
        &browser
            .post_form("/fn/add_passkey", "/account", &form)
            .await,
    )
}

/// The authenticator's answer to the step-up challenge of proposal `id`, JSON; `verify`:
/// whether the authenticator verifies the person.
async fn answer(
    app: &TestApp,
    browser: &Browser,
    authenticator: &mut WebauthnAuthenticator<SoftPasskey>,
    id: &str,
    verify: bool,
) -> String {
    let page = format!("/proposals/{id}");
    let options = options(app, browser, &page, Some(id)).await;
    let mut rcr: RequestChallengeResponse = serde_json::from_value(options).expect("request");
    if !verify {
        rcr.public_key.user_verification = UserVerificationPolicy::Discouraged_DO_NOT_USE;
    }
    let credential = authenticator
        .do_authentication(origin(), rcr)
        .expect("the authenticator signs");
    serde_json::to_string(&credential).expect("json")
}

/// Approves proposal `id` with `passkey` (the answer, JSON); where the form redirected.
async fn approve(browser: &Browser, id: &str, passkey: Option<&str>) -> String {
    let page = format!("/proposals/{id}");
    let csrf = browser.csrf(&page).await;
    let mut form = vec![
        ("csrf_token", csrf.as_str()),
        ("id", id),
        ("verdict", "approved"),
    ];
    if let Some(passkey) = passkey {
        form.push(("passkey", passkey));
    }
    location(&browser.post_form("/fn/decide_proposal", &page, &form).await)
}

async fn status(app: &TestApp, id: &str) -> String {
    let token = app.agent_token("agent-a").await;
    let seen = app.poll(&token, id).await.1;
    seen["proposal"]["status"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

fn authenticator() -> WebauthnAuthenticator<SoftPasskey> {
    // `true`: the software token reports user verification when it is asked for.
    WebauthnAuthenticator::new(SoftPasskey::new(true))
}

async fn a_payment_is_approved_with_the_approvers_passkey(backend: &str) {
    let app = TestApp::spawn_with_policy(backend, POLICY).await;
    let rob = signed_in(&app, "rob").await;
    let id = pending(&app, "payments.refund", 40).await;
    let page = rob.page(&format!("/proposals/{id}")).await;
    assert!(
        page.contains("data-testid=\"step-up-no-passkey\""),
        "without a passkey the page says how to add one"
    );
    assert_eq!(
        approve(&rob, &id, None).await,
        format!("/proposals/{id}?error=passkey_none")
    );

    let mut key = authenticator();
    assert_eq!(
        register(&app, &rob, &mut key, "Laptop").await,
        "/account?notice=passkey_added"
    );
    let account = rob.page("/account").await;
    assert!(account.contains("Laptop"), "listed by name");
    let page = rob.page(&format!("/proposals/{id}")).await;
    assert!(
        page.contains("data-step-up"),
        "Approve now asks for the passkey"
    );
    assert!(!page.contains("data-testid=\"grant\""), "never granted");
    assert!(!page.contains("data-testid=\"edit\""), "never edited");

    assert_eq!(
        approve(&rob, &id, None).await,
        format!("/proposals/{id}?error=step_up_required")
    );
    let passkey = answer(&app, &rob, &mut key, &id, true).await;
    assert_eq!(
        approve(&rob, &id, Some(&passkey)).await,
        format!("/proposals/{id}?notice=approved")
    );
    assert_eq!(status(&app, &id).await, "approved");

    // The trail names the credential, and its challenge is the request hash's, nonce-salted:
    // checked here from the trail's own values.
    let credential = crate::common::text(
        &app.db_url,
        "select credential_id from passkeys where username = 'rob'",
    )
    .await;
    let details = crate::common::audit_details(&app.db_url, "proposal.stepped_up").await;
    assert_eq!(details["credential_id"], credential.as_str());
    assert_eq!(details["user_verified"], true);
    let hash = details["request_hash_sha256"].as_str().expect("hash");
    let token = app.agent_token("agent-a").await;
    let sent = app.poll(&token, &id).await.1;
    assert_eq!(
        sent["proposal"]["request_hash_sha256"].as_str(),
        Some(hash),
        "the challenge binds the request the agent sent"
    );
    let nonce = hex::decode(details["nonce"].as_str().expect("nonce")).expect("hex");
    let bound = step_up::challenge(Uuid::parse_str(&id).expect("id"), hash, &nonce);
    assert_eq!(details["challenge"], URL_SAFE_NO_PAD.encode(bound));
    let signed: Value = serde_json::from_str(
        &crate::common::text(
            &app.db_url,
            "select assertion from passkey_assertions where username = 'rob'",
        )
        .await,
    )
    .expect("kept");
    let client_data = signed["credential"]["response"]["clientDataJSON"]
        .as_str()
        .expect("clientDataJSON");
    let client_data: Value =
        serde_json::from_slice(&URL_SAFE_NO_PAD.decode(client_data).expect("b64")).expect("json");
    assert_eq!(
        client_data["challenge"],
        URL_SAFE_NO_PAD.encode(bound),
        "the signed client data carries the bound challenge"
    );
    let page = rob.page(&format!("/proposals/{id}")).await;
    assert!(page.contains("data-testid=\"passkey-proof\""), "{page}");
}

async fn step_up_refuses_what_does_not_prove_this_request(backend: &str) {
    let app = TestApp::spawn_with_policy(backend, POLICY).await;
    let rob = signed_in(&app, "rob").await;
    let mut key = authenticator();
    register(&app, &rob, &mut key, "Laptop").await;
    let (a, b) = (
        pending(&app, "payments.refund", 40).await,
        pending(&app, "payments.refund", 9_000).await,
    );

    // B's answer replayed on A: A's challenge (asked for first) is not what it signed.
    answer(&app, &rob, &mut key, &a, true).await;
    let for_b = answer(&app, &rob, &mut key, &b, true).await;
    assert_eq!(
        approve(&rob, &a, Some(&for_b)).await,
        format!("/proposals/{a}?error=step_up_challenge")
    );
    // A wrong challenge: the answer to an earlier challenge of A, after a newer one was given.
    let stale = answer(&app, &rob, &mut key, &a, true).await;
    answer(&app, &rob, &mut key, &a, true).await;
    let live = "select count(*) from passkey_ceremonies where purpose = 'approve'";
    assert_eq!(
        app.count(live).await,
        2,
        "one challenge per person and proposal: A's, B's"
    );
    assert_eq!(
        approve(&rob, &a, Some(&stale)).await,
        format!("/proposals/{a}?error=step_up_challenge")
    );
    // No user verification.
    let unverified = answer(&app, &rob, &mut key, &a, false).await;
    assert_eq!(
        approve(&rob, &a, Some(&unverified)).await,
        format!("/proposals/{a}?error=step_up_invalid")
    );
    // Not a passkey's answer at all.
    assert_eq!(
        approve(&rob, &a, Some("{\"id\": 1}")).await,
        format!("/proposals/{a}?error=step_up_invalid")
    );
    assert_eq!(status(&app, &a).await, "pending");
    let refusals = "select count(*) from audit_events where action = \
                    'proposal.decision_refused' and actor = 'rob'";
    assert_eq!(app.count(refusals).await, 4, "each refusal is recorded");

    // Never in a batch (it may be rejected in one).
    let csrf = rob.csrf("/").await;
    let form = [
        ("csrf_token", csrf.as_str()),
        ("verdict", "approved"),
        ("ids[0]", b.as_str()),
    ];
    let to = location(&rob.post_form("/fn/decide_batch", "/", &form).await);
    assert!(to.contains("not_batchable"), "{to}");
    assert_eq!(status(&app, &b).await, "pending");

    // A challenge is taken by the approval it proves: A's is gone once A is approved (B's,
    // asked for meanwhile, waits), and A's answer approves nothing else.
    let good = answer(&app, &rob, &mut key, &a, true).await;
    answer(&app, &rob, &mut key, &b, true).await;
    let waiting = "select count(*) from passkey_ceremonies where purpose = 'approve'";
    assert_eq!(app.count(waiting).await, 2);
    assert_eq!(
        approve(&rob, &a, Some(&good)).await,
        format!("/proposals/{a}?notice=approved")
    );
    assert_eq!(app.count(waiting).await, 1, "A's challenge was used up");
    assert_eq!(
        approve(&rob, &b, Some(&good)).await,
        format!("/proposals/{b}?error=step_up_challenge")
    );
    assert_eq!(status(&app, &b).await, "pending");
}

async fn passkeys_are_named_renamed_and_removed_on_the_account_page(backend: &str) {
    let app = TestApp::spawn_with_policy(backend, POLICY).await;
    let rob = signed_in(&app, "rob").await;
    let eve = signed_in(&app, "eve").await;
    let mut key = authenticator();
    let csrf = rob.csrf("/account").await;
    // A name it cannot take.
    let options = options(&app, &rob, "/account", None).await;
    let ccr: CreationChallengeResponse = serde_json::from_value(options).expect("creation");
    let credential =
        serde_json::to_string(&key.do_registration(origin(), ccr).expect("reg")).expect("json");
    let form = [
        ("csrf_token", csrf.as_str()),
        ("name", "   "),
        ("credential", credential.as_str()),
    ];
    let to = location(&rob.post_form("/fn/add_passkey", "/account", &form).await);
    assert_eq!(to, "/account?error=passkey_invalid");
    assert_eq!(app.count("select count(*) from passkeys").await, 0);

    assert_eq!(
        register(&app, &rob, &mut key, "Laptop").await,
        "/account?notice=passkey_added"
    );
    let page = rob.page("/account").await;
    let marker = "name=\"id\" value=\"";
    let at = page.find(marker).expect("the forms post its id") + marker.len();
    let id = page[at..at + 36].to_owned();
    assert!(Uuid::parse_str(&id).is_ok(), "{id}");

    // Someone else's passkey is not theirs to rename or remove.
    let csrf_eve = eve.csrf("/account").await;
    let form = [
        ("csrf_token", csrf_eve.as_str()),
        ("id", id.as_str()),
        ("name", "Mine now"),
    ];
    let to = location(&eve.post_form("/fn/rename_passkey", "/account", &form).await);
    assert_eq!(to, "/account?error=not_found");
    let form = [("csrf_token", csrf_eve.as_str()), ("id", id.as_str())];
    let to = location(&eve.post_form("/fn/remove_passkey", "/account", &form).await);
    assert_eq!(to, "/account?error=not_found");

    let form = [
        ("csrf_token", csrf.as_str()),
        ("id", id.as_str()),
        ("name", "Work laptop"),
    ];
    let to = location(&rob.post_form("/fn/rename_passkey", "/account", &form).await);
    assert_eq!(to, "/account?notice=passkey_renamed");
    assert!(rob.page("/account").await.contains("Work laptop"));
    let form = [("csrf_token", csrf.as_str()), ("id", id.as_str())];
    let to = location(&rob.post_form("/fn/remove_passkey", "/account", &form).await);
    assert_eq!(to, "/account?notice=passkey_removed");
    assert!(
        rob.page("/account")
            .await
            .contains("data-testid=\"passkeys-empty\"")
    );
    for kind in ["passkey.registered", "passkey.renamed", "passkey.removed"] {
        let sql =
            format!("select count(*) from audit_events where action = '{kind}' and actor = 'rob'");
        assert_eq!(app.count(&sql).await, 1, "{kind}");
    }
    let leaked = "select count(*) from audit_events where cast(details as text) like '%laptop%'";
    assert_eq!(
        app.count(leaked).await,
        0,
        "the name is a keyed hash in the trail"
    );
}

async fn an_admin_breaks_the_glass_with_a_passkey_after_approving(backend: &str) {
    let app = TestApp::spawn_with_policy(backend, POLICY).await;
    app.user("boss", Role::Admin).await;
    let boss = app.browser();
    boss.login("boss", PASSWORD).await;
    let mut key = authenticator();
    register(&app, &boss, &mut key, "Laptop").await;
    let id = pending(&app, "payments.transfer", 9_000).await;

    // Her own approval, signed, waits for a second approver.
    let signed = answer(&app, &boss, &mut key, &id, true).await;
    assert_eq!(
        approve(&boss, &id, Some(&signed)).await,
        format!("/proposals/{id}?notice=approval_recorded")
    );
    // Again, with a fresh answer: already approved, not a server error.
    let again = answer(&app, &boss, &mut key, &id, true).await;
    assert_eq!(
        approve(&boss, &id, Some(&again)).await,
        format!("/proposals/{id}?error=already_approved")
    );
    // Break-glass needs its own fresh answer, and replaces her kept proof.
    let page = format!("/proposals/{id}");
    let glass = answer(&app, &boss, &mut key, &id, true).await;
    let csrf = boss.csrf(&page).await;
    let form = [
        ("csrf_token", csrf.as_str()),
        ("id", id.as_str()),
        (
            "justification",
            "the supplier stops shipping at noon without it",
        ),
        ("passkey", glass.as_str()),
    ];
    let to = location(&boss.post_form("/fn/break_glass", &page, &form).await);
    assert_eq!(to, format!("/proposals/{id}?notice=broke_glass"));
    assert_eq!(status(&app, &id).await, "approved");
    let kept = "select count(*) from passkey_assertions where username = 'boss'";
    assert_eq!(app.count(kept).await, 1);
    let stepped = "select count(*) from audit_events where action = 'proposal.stepped_up'";
    assert_eq!(app.count(stepped).await, 2);
}
