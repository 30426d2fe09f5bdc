//! Request changes and a linked revision: a reviewer asks the agent for changes, the agent
//! sees `changes_requested` with the message, submits a revised proposal naming the first in
//! `supersedes`, and the pages link both. Revisions of anything else fail closed with `422`
//! naming `supersedes`. On both backends.

use countersign::domain::principal::Role;
use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::common::on_both_backends;
use crate::helpers::{PASSWORD, TestApp, location};

async fn a_reviewer_asks_for_changes_and_the_agent_revises(backend: &str) {
    let app = TestApp::spawn(backend).await;
    app.user("rev", Role::Reviewer).await;
    let agent = app.agent_token("a1").await;
    let first = app.propose_ok(&agent, "a1").await;
    let browser = app.browser();
    browser.login("rev", PASSWORD).await;

    // Asking for changes says what must change.
    let r = browser.decide(&first, "changes_requested", None).await;
    assert!(
        location(&r).contains("error="),
        "{backend}: a message is required"
    );
    let message = "Use the customer's work address, not the personal one.";
    let r = browser
        .decide(&first, "changes_requested", Some(message))
        .await;
    assert!(
        location(&r).ends_with("notice=changes_requested"),
        "{}",
        location(&r)
    );
    let (_, polled) = app.poll(&agent, &first).await;
    assert_eq!(polled["proposal"]["status"], "changes_requested");
    assert_eq!(
        polled["proposal"]["review"]["decision"],
        "changes_requested"
    );
    assert_eq!(polled["proposal"]["review"]["reason"], message);
    // It never executes, and cannot be decided again.
    let r = browser.decide(&first, "approved", None).await;
    assert!(
        location(&r).contains("error=already_decided"),
        "{}",
        location(&r)
    );

    // The revision names the first.
    let mut body = crate::common::proposal_body("a1");
    body["supersedes"] = json!(first);
    body["parameters"] = json!({"contact_id": "c-123", "email": "work@example.com"});
    let r = app.propose(&agent, &body).await;
    assert_eq!(r.status(), StatusCode::CREATED);
    let revision = body["proposal_id"].as_str().expect("id").to_owned();
    let (_, polled) = app.poll(&agent, &revision).await;
    assert_eq!(polled["proposal"]["status"], "pending");

    // Its page links the first and shows what changed; the first links the revision.
    let page = browser.page(&format!("/proposals/{revision}")).await;
    assert!(
        page.contains(&format!("href=\"/proposals/{first}\"")),
        "{backend}: links the first"
    );
    assert!(
        page.contains("data-testid=\"revision-diff\""),
        "{backend}: shows a diff"
    );
    // The changed path is named; a GDPR proposal's values stay masked until revealed.
    assert!(
        page.contains("<code>/email</code>"),
        "{backend}: names the changed parameter"
    );
    assert!(
        !page.contains("new@example.com"),
        "{backend}: the old value stays masked"
    );
    let page = browser.page(&format!("/proposals/{first}")).await;
    assert!(
        page.contains(&format!("href=\"/proposals/{revision}\"")),
        "{backend}: links the revision"
    );
}

async fn only_a_proposal_with_changes_requested_can_be_revised(backend: &str) {
    let app = TestApp::spawn(backend).await;
    let agent = app.agent_token("a1").await;
    let other = app.agent_token("a2").await;
    let pending = app.propose_ok(&agent, "a1").await;
    let theirs = app.propose_ok(&other, "a2").await;
    for (supersedes, why) in [
        (json!(pending), "is `pending`"),
        (json!(theirs), "no proposal of this agent"),
        (json!(uuid::Uuid::new_v4()), "no proposal of this agent"),
        (json!("not-a-uuid"), "must be the UUID"),
    ] {
        let mut body = crate::common::proposal_body("a1");
        body["supersedes"] = supersedes.clone();
        let r = app.propose(&agent, &body).await;
        assert_eq!(
            r.status(),
            StatusCode::UNPROCESSABLE_ENTITY,
            "{backend}: {supersedes}"
        );
        let v: Value = r.json().await.expect("json");
        let text = v.to_string();
        assert!(
            text.contains("supersedes") && text.contains(why),
            "{backend}: {text}"
        );
    }
}

on_both_backends!(
    a_reviewer_asks_for_changes_and_the_agent_revises,
    only_a_proposal_with_changes_requested_can_be_revised,
);
