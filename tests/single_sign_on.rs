//! Single sign-on's accounts, on both backends: what [`Services::sso_sign_in`] makes of an
//! identity the provider vouched for (the protocol itself is driven end to end by
//! `end2end/tests/login_single_sign_on.spec.ts` against a real provider).

mod common;

use countersign::domain::principal::Principal;
use std::sync::Arc;

use countersign::domain::Policy;
use countersign::domain::principal::Role;
use countersign::domain::sso::SsoIdentity;
use countersign::service::NewUser;
use countersign::service::{Services, SignIn, SsoSignIn};
use countersign::storage;
use serde_json::{Value, json};

const ISSUER: &str = "https://idp.example.com";

async fn services(backend: &str) -> (Services, Option<tempfile::TempDir>) {
    let (url, dir) = common::fresh_database(backend);
    let (store, _) = storage::connect(&url)
        .await
        .unwrap_or_else(|e| panic!("cannot open {backend} test database {url}: {e}"));
    (Services::new(store, Arc::new(Policy::builtin())), dir)
}

fn identity(subject: &str, username: &str, roles: Option<Value>) -> SsoIdentity {
    SsoIdentity {
        issuer: ISSUER.into(),
        subject: subject.into(),
        preferred_username: Some(username.into()),
        email: None,
        role_claim: roles,
    }
}

async fn signed_in(s: &Services, who: SsoIdentity) -> (String, Option<Role>) {
    match s.sso_sign_in(who).await.expect("signs in") {
        SsoSignIn::SignedIn(u) => (u.username, u.role),
        SsoSignIn::Disabled => panic!("refused as disabled"),
        SsoSignIn::NoUsername => panic!("refused for want of a username"),
    }
}

/// The kinds of the events about `username`: under their name (sign-ins) and their id
/// (account changes), oldest first in each.
async fn kinds(s: &Services, username: &str) -> (Vec<String>, Vec<String>) {
    let user = s.user(username).await.expect("read").expect("made");
    let mut of = Vec::new();
    for subject in [username.to_owned(), user.id.to_string()] {
        let trail = s
            .trail(&Principal::Operator, "user", &subject)
            .await
            .expect("trail");
        of.push(trail.into_iter().map(|e| e.action).collect::<Vec<_>>());
    }
    let changes = of.pop().unwrap_or_default();
    (of.pop().unwrap_or_default(), changes)
}

async fn a_first_sign_in_makes_an_account_with_the_claimed_role(backend: &str) {
    let (s, _dir) = services(backend).await;
    let rita = identity(
        "sub-rita",
        "Rita",
        Some(json!(["reviewer", "domain:payments"])),
    );
    assert_eq!(
        signed_in(&s, rita.clone()).await,
        ("rita".into(), Some(Role::Reviewer))
    );
    assert_eq!(
        s.reviewer_domains("rita").await.expect("domains"),
        Some(vec!["payments".to_owned()])
    );
    // The same person again: the same account, nothing new made.
    assert_eq!(
        signed_in(&s, rita).await,
        ("rita".into(), Some(Role::Reviewer))
    );
    let (sign_ins, changes) = kinds(&s, "rita").await;
    assert_eq!(sign_ins, ["auth.signed_in", "auth.signed_in"]);
    assert_eq!(changes, ["user.created"]);
    s.verify_trail(&Principal::Operator, None)
        .await
        .expect("the chain verifies");
}

async fn no_role_claimed_means_no_role_until_granted(backend: &str) {
    let (s, _dir) = services(backend).await;
    let nora = identity("sub-nora", "nora", None);
    assert_eq!(signed_in(&s, nora.clone()).await, ("nora".into(), None));
    let stored = s.user("nora").await.expect("read").expect("made");
    assert_eq!(stored.role, None);
    // No password matches an account made by single sign-on.
    let local = "127.0.0.1".parse().expect("an address");
    assert!(matches!(
        s.sign_in("nora", "!single-sign-on", local)
            .await
            .expect("answers"),
        SignIn::Refused
    ));
    // An admin grants a role; a later sign-in without a claim keeps it.
    s.set_role(&Principal::Operator, "nora", Role::Compliance)
        .await
        .expect("granted");
    assert_eq!(
        signed_in(&s, nora).await,
        ("nora".into(), Some(Role::Compliance))
    );
}

async fn a_taken_name_is_never_taken_over(backend: &str) {
    let (s, _dir) = services(backend).await;
    s.add_user(
        &Principal::Operator,
        NewUser::new("alice", Role::Admin, "a long enough password"),
    )
    .await
    .expect("added");
    let other = identity("sub-alice", "alice", Some(json!("reviewer")));
    let (name, role) = signed_in(&s, other).await;
    assert_ne!(name, "alice");
    assert!(name.starts_with("alice-"), "{name}");
    assert_eq!(role, Some(Role::Reviewer));
    let admin = s.user("alice").await.expect("read").expect("still there");
    assert_eq!(admin.role, Some(Role::Admin));
}

async fn the_claim_moves_the_role_and_a_disabled_account_is_refused(backend: &str) {
    let (s, _dir) = services(backend).await;
    let bob = |roles: Value| identity("sub-bob", "bob", Some(roles));
    assert_eq!(
        signed_in(&s, bob(json!(["reviewer"]))).await.1,
        Some(Role::Reviewer)
    );
    assert_eq!(
        signed_in(&s, bob(json!(["compliance"]))).await.1,
        Some(Role::Compliance)
    );
    assert_eq!(
        kinds(&s, "bob").await.1,
        ["user.created", "user.role_changed"]
    );
    s.disable_user(&Principal::Operator, "bob")
        .await
        .expect("disabled");
    assert!(matches!(
        s.sso_sign_in(bob(json!(["reviewer"])))
            .await
            .expect("answers"),
        SsoSignIn::Disabled
    ));
    let (sign_ins, _) = kinds(&s, "bob").await;
    assert_eq!(
        sign_ins.last().map(String::as_str),
        Some("auth.sign_in_failed")
    );
}

/// A role the claim granted goes when the claim stops granting it; a role an admin granted
/// stays; a claim that grants a role again brings it back.
async fn a_role_the_claim_stops_granting_is_taken_away(backend: &str) {
    let (s, _dir) = services(backend).await;
    let rory = |roles: Option<Value>| identity("sub-rory", "rory", roles);
    assert_eq!(
        signed_in(&s, rory(Some(json!(["reviewer"])))).await.1,
        Some(Role::Reviewer)
    );
    assert_eq!(signed_in(&s, rory(None)).await.1, None);
    assert_eq!(
        s.user("rory").await.expect("read").expect("kept").role,
        None
    );
    assert_eq!(
        kinds(&s, "rory").await.1,
        ["user.created", "user.role_changed"]
    );
    let trail = s
        .trail(
            &Principal::Operator,
            "user",
            &s.user("rory")
                .await
                .expect("read")
                .expect("kept")
                .id
                .to_string(),
        )
        .await
        .expect("trail");
    let last = trail.last().expect("the revocation");
    assert_eq!(last.details["to"], Value::Null);
    assert_eq!(last.details["from"], "reviewer");
    assert_eq!(
        signed_in(&s, rory(Some(json!("compliance")))).await.1,
        Some(Role::Compliance)
    );

    // An admin's grant outlives a claim that grants nothing, even after a claim granted one.
    s.set_role(&Principal::Operator, "rory", Role::Reviewer)
        .await
        .expect("granted");
    assert_eq!(signed_in(&s, rory(None)).await.1, Some(Role::Reviewer));
    assert_eq!(
        signed_in(&s, rory(Some(json!([])))).await.1,
        Some(Role::Reviewer)
    );

    // The last enabled admin keeps the role a claim gave.
    let ada = |roles: Option<Value>| identity("sub-ada", "ada", roles);
    assert_eq!(
        signed_in(&s, ada(Some(json!(["admin"])))).await.1,
        Some(Role::Admin)
    );
    assert_eq!(signed_in(&s, ada(None)).await.1, Some(Role::Admin));
}

common::on_both_backends!(
    a_role_the_claim_stops_granting_is_taken_away,
    a_first_sign_in_makes_an_account_with_the_claimed_role,
    no_role_claimed_means_no_role_until_granted,
    a_taken_name_is_never_taken_over,
    the_claim_moves_the_role_and_a_disabled_account_is_refused,
);
