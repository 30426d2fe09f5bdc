//! The runs page and its server functions hold people to their domains: a reviewer limited to
//! `billing` neither sees nor settles a `sales` command whose outcome is unknown, nor its
//! rollback task, whatever id they post; an unlimited reviewer sees both. On both backends.

use countersign::domain::lifecycle::ReviewVerdict;
use countersign::domain::principal::{Principal, Role};
use reqwest::StatusCode;
use serde_json::{Value, json};
use uuid::Uuid;

use crate::common::on_both_backends;
use crate::helpers::{PASSWORD, TestApp};

/// A command of `domain` whose outcome is unknown (the executor reported a failure that may
/// have acted), with a rollback task opened for it; (command id, rollback task id).
async fn unknown_in(app: &TestApp, domain: &str) -> (String, String) {
    let agent = app.agent_token("agent-a").await;
    let mut body = crate::common::proposal_body("agent-a");
    body["domain"] = json!(domain);
    body["rollback_plan"] = json!({"type": "compensate", "instructions": {"undo": domain}});
    let r = app.propose(&agent, &body).await;
    assert_eq!(r.status(), StatusCode::CREATED);
    let id = Uuid::parse_str(body["proposal_id"].as_str().expect("id")).expect("uuid");
    let boss = Principal::person("boss", Role::Admin);
    (app.services)
        .decide(&boss, id, ReviewVerdict::Approved, None)
        .await
        .expect("approve");
    let executor = app.executor_token(&format!("exec-{domain}")).await;
    let (status, leased) = app.lease(&executor).await;
    assert_eq!(status, StatusCode::OK, "{leased}");
    let command = leased["command"]["id"]
        .as_str()
        .expect("command")
        .to_owned();
    let fail = json!({
        "lease_token": leased["lease_token"],
        "error": {"why": "the CRM timed out"},
        "side_effect": "possible",
    });
    let (status, done) = app.report(&executor, &command, "fail", &fail).await;
    assert_eq!(status, StatusCode::OK, "{done}");
    assert_eq!(done["command"]["status"], "outcome_unknown");
    let task = app
        .services
        .rollback_tasks(&Principal::Operator)
        .await
        .expect("tasks")
        .into_iter()
        .find(|t| t.rollback_of.map(|r| r.to_string()) == Some(command.clone()))
        .expect("a rollback task");
    (command, task.id.to_string())
}

/// The `?notice=` or `?error=` a form post redirected to.
fn outcome(r: &reqwest::Response) -> String {
    let to = r
        .headers()
        .get("location")
        .and_then(|l| l.to_str().ok())
        .unwrap_or_default();
    to.split_once('?')
        .map(|(_, q)| q.to_owned())
        .unwrap_or_default()
}

async fn status_of(app: &TestApp, command: &str) -> Value {
    let id = Uuid::parse_str(command).expect("uuid");
    let c = app
        .services
        .command(&Principal::Operator, id)
        .await
        .expect("read")
        .expect("exists");
    json!(c.status.as_str())
}

async fn a_domain_limited_reviewer_neither_sees_nor_settles_other_domains_runs(backend: &str) {
    let app = TestApp::spawn(backend).await;
    app.user("boss", Role::Admin).await;
    app.user("bill", Role::Reviewer).await;
    app.user("rev", Role::Reviewer).await;
    (app.services)
        .set_domains(&Principal::Operator, "bill", Some(vec!["billing".into()]))
        .await
        .expect("domains");
    let (billing, billing_task) = unknown_in(&app, "billing").await;
    let (sales, sales_task) = unknown_in(&app, "sales").await;

    let bill = app.browser();
    bill.login("bill", PASSWORD).await;
    let page = bill.page("/runs").await;
    assert!(
        page.contains(&billing) && page.contains(&billing_task),
        "{page}"
    );
    assert!(
        !page.contains(&sales),
        "a billing reviewer sees a sales command"
    );
    assert!(
        !page.contains(&sales_task),
        "a billing reviewer sees a sales rollback"
    );

    // Posting another domain's ids settles nothing: not found, and nothing moved.
    let csrf = bill.csrf("/runs").await;
    let resolve = [
        ("csrf_token", csrf.as_str()),
        ("id", sales.as_str()),
        ("resolution", "succeeded"),
        ("reason", "I looked"),
    ];
    let r = bill
        .post_form("/fn/resolve_command", "/runs", &resolve)
        .await;
    assert_eq!(outcome(&r), "error=not_found");
    assert_eq!(status_of(&app, &sales).await, "outcome_unknown");
    let dismiss = [
        ("csrf_token", csrf.as_str()),
        ("id", sales_task.as_str()),
        ("verdict", "approve"),
    ];
    let r = bill
        .post_form("/fn/decide_rollback", "/runs", &dismiss)
        .await;
    assert_eq!(outcome(&r), "error=not_found");
    assert_eq!(status_of(&app, &sales_task).await, "awaiting_approval");
    let settled = "select count(*) from audit_events where action in \
                   ('command.resolved', 'command.rollback_approved', 'command.rollback_dismissed')";
    assert_eq!(app.count(settled).await, 0);

    // Their own domain they settle.
    let resolve = [
        ("csrf_token", csrf.as_str()),
        ("id", billing.as_str()),
        ("resolution", "failed"),
        ("reason", "the CRM shows no change"),
    ];
    let r = bill
        .post_form("/fn/resolve_command", "/runs", &resolve)
        .await;
    assert_eq!(outcome(&r), "notice=resolved");
    assert_eq!(status_of(&app, &billing).await, "failed");

    // A reviewer limited to nothing sees the other domain's run.
    let rev = app.browser();
    rev.login("rev", PASSWORD).await;
    let page = rev.page("/runs").await;
    assert!(
        page.contains(&sales) && page.contains(&sales_task),
        "{page}"
    );
}

on_both_backends!(a_domain_limited_reviewer_neither_sees_nor_settles_other_domains_runs);
