//! Batch decisions from the queue, through the page's form (`POST /fn/decide_batch`): each
//! chosen proposal is its own decision, checked again by the server (already decided, own
//! proposal, domain, typed confirmation, quorum), with its own event; the queue then says which
//! were decided and which were not, and why. On both backends.

use countersign::domain::lifecycle::ReviewVerdict;
use countersign::domain::principal::{Principal, Role};
use reqwest::StatusCode;
use serde_json::{Value, json};
use uuid::Uuid;

use crate::common::on_both_backends;
use crate::helpers::{Browser, PASSWORD, TestApp, location};

on_both_backends!(
    a_batch_approves_each_and_names_the_ones_it_could_not,
    a_batch_rejects_with_one_reason_and_refuses_what_it_cannot_take
);

/// A pending proposal by `agent-a` in `domain`; `edit` changes the body first. Its id.
async fn pending(app: &TestApp, domain: &str, edit: impl FnOnce(&mut Value)) -> String {
    let token = app.agent_token("agent-a").await;
    let mut body = crate::common::proposal_body("agent-a");
    body["domain"] = json!(domain);
    body["compliance_context"] = json!({"gdpr": false, "hipaa": false});
    edit(&mut body);
    let r = app.propose(&token, &body).await;
    assert_eq!(r.status(), StatusCode::CREATED);
    body["proposal_id"].as_str().expect("id").to_owned()
}

/// Proposal `id` as its agent reads it: (status, the reviewer's reason).
async fn seen(app: &TestApp, id: &str) -> (String, Option<String>) {
    let agent = Principal::Agent("agent-a".into());
    let id = Uuid::parse_str(id).expect("uuid");
    let (record, _) = app.services.agent_proposal(&agent, id).await.expect("view");
    let reason = record.review.and_then(|r| r.reason);
    (record.status.as_str().to_owned(), reason)
}

async fn status(app: &TestApp, id: &str) -> String {
    seen(app, id).await.0
}

/// Posts the queue's batch form as `browser`; the address it redirected to.
async fn batch(browser: &Browser, verdict: &str, reason: &str, ids: &[&str]) -> String {
    let csrf = browser.csrf("/").await;
    let names: Vec<String> = (0..ids.len()).map(|n| format!("ids[{n}]")).collect();
    let mut form = vec![
        ("csrf_token", csrf.as_str()),
        ("verdict", verdict),
        ("reason", reason),
    ];
    form.extend(names.iter().map(String::as_str).zip(ids.iter().copied()));
    let r = browser.post_form("/fn/decide_batch", "/", &form).await;
    location(&r)
}

async fn a_batch_approves_each_and_names_the_ones_it_could_not(backend: &str) {
    let app = TestApp::spawn(backend).await;
    app.user("rev", Role::Reviewer).await;
    app.user("other", Role::Reviewer).await;
    let a = pending(&app, "sales", |_| {}).await;
    let b = pending(&app, "sales", |_| {}).await;
    let stale = pending(&app, "sales", |_| {}).await;
    let risky = pending(&app, "sales", |b| b["risk_level"] = json!("high")).await;
    // Another reviewer decides one while it sits in this reviewer's selection.
    let other = Principal::person("other", Role::Reviewer);
    let id = Uuid::parse_str(&stale).expect("uuid");
    (app.services)
        .decide(&other, id, ReviewVerdict::Rejected, Some("not now"))
        .await
        .expect("rejected");

    let browser = app.browser();
    browser.login("rev", PASSWORD).await;
    let queue = browser.page("/").await;
    assert!(
        queue.contains("data-testid=\"batch-form\""),
        "the queue offers a batch"
    );
    let row = &queue[queue
        .find(&format!("data-proposal-id=\"{risky}\""))
        .expect("row")..];
    assert!(
        row.contains("data-batch-approve=\"false\""),
        "a high-risk row is marked for its own page"
    );

    let to = batch(&browser, "approved", "", &[&a, &b, &stale, &risky, &a]).await;
    assert!(to.starts_with("/?batch=approved&done=2&refused="), "{to}");
    assert!(to.contains(&format!("{stale}:already_decided")), "{to}");
    assert!(to.contains(&format!("{risky}:not_batchable")), "{to}");
    for id in [&a, &b] {
        assert_eq!(status(&app, id).await, "approved");
    }
    assert_eq!(status(&app, &risky).await, "pending");
    // Each approval is its own event bound to its own request, with its own command.
    let approved = "select count(*) from audit_events where action = 'proposal.approved'";
    assert_eq!(app.count(approved).await, 2);
    assert_eq!(app.count("select count(*) from commands").await, 2);

    // The queue says so, in words, with a link to each one not decided.
    let page = browser.page(&to).await;
    assert!(page.contains("data-testid=\"batch-report\""), "{page}");
    assert!(page.contains("Approved 2 proposals."));
    let refused = &page[page.find("data-testid=\"batch-refused\"").expect("list")..];
    assert!(refused.contains(&format!("href=\"/proposals/{risky}\"")));
    assert!(refused.contains("Approve it on its own page"));
}

async fn a_batch_rejects_with_one_reason_and_refuses_what_it_cannot_take(backend: &str) {
    let app = TestApp::spawn(backend).await;
    app.user("bill", Role::Reviewer).await;
    app.services
        .set_domains(&Principal::Operator, "bill", Some(vec!["billing".into()]))
        .await
        .expect("domains");
    let mine = pending(&app, "billing", |b| b["risk_level"] = json!("high")).await;
    let theirs = pending(&app, "sales", |_| {}).await;
    let browser = app.browser();
    browser.login("bill", PASSWORD).await;

    // A rejection needs its reason; a high-risk proposal may be rejected in a batch; another
    // domain's proposal is not found, whatever id is posted.
    let to = batch(&browser, "rejected", "", &[&mine]).await;
    assert!(to.contains(&format!("{mine}:reason_required")), "{to}");
    let to = batch(&browser, "rejected", "duplicate of #12", &[&mine, &theirs]).await;
    assert_eq!(
        to,
        format!("/?batch=rejected&done=1&refused={theirs}:not_found")
    );
    assert_eq!(status(&app, &mine).await, "rejected");
    assert_eq!(status(&app, &theirs).await, "pending");
    let (_, reason) = seen(&app, &mine).await;
    assert_eq!(reason.as_deref(), Some("duplicate of #12"));

    // Nothing chosen, too many, another verdict, a stale form: refused whole, nothing changed.
    assert_eq!(
        batch(&browser, "rejected", "x", &[]).await,
        "/?error=batch_size"
    );
    let many: Vec<String> = (0..101).map(|_| Uuid::new_v4().to_string()).collect();
    let many: Vec<&str> = many.iter().map(String::as_str).collect();
    assert_eq!(
        batch(&browser, "rejected", "x", &many).await,
        "/?error=batch_size"
    );
    let to = batch(&browser, "changes_requested", "x", &[&theirs]).await;
    assert_eq!(to, "/?error=bad_verdict");
    let form = [
        ("csrf_token", "stale"),
        ("verdict", "rejected"),
        ("reason", "x"),
        ("ids[0]", theirs.as_str()),
    ];
    let r = browser.post_form("/fn/decide_batch", "/", &form).await;
    assert_eq!(location(&r), "/?error=csrf");
    assert_eq!(status(&app, &theirs).await, "pending");
}
