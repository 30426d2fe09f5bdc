//! Decision insights (`/insights`), on both backends: every figure equals a count made from the
//! audit trail (decisions and approvals per reviewer, grants made, break-glass approvals,
//! expiries per domain), times to decision are the median and p90 of what happened (as their
//! buckets' bounds), a decision
//! made faster than the proposal could be read counts as fast, and only admins and compliance
//! officers see the page.

use countersign::domain::lifecycle::ReviewVerdict;
use countersign::domain::principal::{Principal, Role};
use countersign::domain::review::grant::Ask;
use reqwest::StatusCode;
use serde_json::{Value, json};
use uuid::Uuid;

use crate::common::on_both_backends;
use crate::helpers::{PASSWORD, TestApp};

on_both_backends!(insights_equal_the_trail);

const POLICY: &str = r#"
[defaults]
unknown_agents = "allow"
expiry = "1h"

[tools."payments.refund"]
category = "C"
risk = "medium"
required_approvals = 2
"#;

async fn pending(app: &TestApp, domain: &str, tool: &str) -> Uuid {
    let token = app.agent_token("agent-a").await;
    let mut body = crate::common::proposal_body("agent-a");
    body["domain"] = json!(domain);
    body["tool"]["name"] = json!(tool);
    body["compliance_context"] = json!({"gdpr": false, "hipaa": false});
    let r = app.propose(&token, &body).await;
    assert_eq!(r.status(), StatusCode::CREATED);
    let v: Value = r.json().await.expect("json");
    assert_eq!(v["proposal"]["status"], "pending", "{v}");
    Uuid::parse_str(v["proposal"]["id"].as_str().expect("id")).expect("uuid")
}

/// Events of `action` by `actor`, counted from the trail.
async fn in_trail(app: &TestApp, action: &str, actor: &str) -> i64 {
    let sql = format!(
        "select count(*) from audit_events where action = '{action}' and actor = '{actor}'"
    );
    app.count(&sql).await
}

async fn insights_equal_the_trail(backend: &str) {
    let app = TestApp::spawn_with_policy(backend, POLICY).await;
    for (name, role) in [
        ("rev", Role::Reviewer),
        ("rob", Role::Reviewer),
        ("boss", Role::Admin),
        ("cora", Role::Compliance),
    ] {
        app.user(name, role).await;
    }
    let (rev, rob, boss) = (
        Principal::person("rev", Role::Reviewer),
        Principal::person("rob", Role::Reviewer),
        Principal::person("boss", Role::Admin),
    );
    let s = &app.services;
    let minutes = |m: i64| time::Duration::minutes(m);

    // rev: one approval at once (faster than it can be read), one rejection after 2 minutes,
    // one approval with a standing grant after 10 minutes.
    let quick = pending(&app, "sales", "crm.update_contact").await;
    s.decide(&rev, quick, ReviewVerdict::Approved, None)
        .await
        .expect("approved");
    let slow = pending(&app, "sales", "crm.update_contact").await;
    app.clock.advance(minutes(2));
    s.decide(&rev, slow, ReviewVerdict::Rejected, Some("not now"))
        .await
        .expect("rejected");
    let granted = pending(&app, "billing", "crm.add_note").await;
    app.clock.advance(minutes(10));
    s.approve_and_grant(&rev, granted, None, None, &Ask::narrowest())
        .await
        .expect("granted");
    // rob: one approval after 4 minutes; boss: one break-glass.
    let robs = pending(&app, "billing", "crm.update_contact").await;
    app.clock.advance(minutes(4));
    s.decide(&rob, robs, ReviewVerdict::Approved, None)
        .await
        .expect("approved");
    let urgent = pending(&app, "billing", "payments.refund").await;
    let why = "the customer was charged twice this morning";
    s.break_glass(&boss, urgent, why, None)
        .await
        .expect("broke glass");
    // One nobody decides: it expires.
    pending(&app, "sales", "crm.update_contact").await;
    app.clock.advance(minutes(61));
    s.expire_due().await.expect("swept");

    let cora = Principal::person("cora", Role::Compliance);
    let i = s.insights(&cora, 30).await.expect("insights");
    let reviewer = |name: &str| {
        (i.reviewers.iter())
            .find(|r| r.decisions.name == name)
            .unwrap_or_else(|| panic!("{name} in {:?}", i.reviewers))
    };
    for name in ["rev", "rob", "boss"] {
        let r = reviewer(name);
        let approved = in_trail(&app, "proposal.approved", name).await;
        let rejected = in_trail(&app, "proposal.rejected", name).await;
        assert_eq!(r.decisions.decisions, approved + rejected, "{name}");
        assert_eq!(r.decisions.approved, approved, "{name}");
        assert_eq!(r.grants, in_trail(&app, "grant.made", name).await, "{name}");
        assert_eq!(
            r.break_glass,
            in_trail(&app, "proposal.break_glass", name).await,
            "{name}"
        );
    }
    let r = reviewer("rev");
    assert_eq!((r.decisions.decisions, r.decisions.approved), (3, 2));
    assert_eq!(r.decisions.fast, 1, "the one decided at once");
    // Times are kept in buckets: 2 min and 10 min are two buckets' upper bounds.
    assert_eq!(r.decisions.p50, Some(120), "median");
    assert_eq!(r.decisions.p90, Some(600), "p90");
    assert_eq!((r.grants, reviewer("boss").break_glass), (1, 1));
    let domain = |name: &str| {
        (i.domains.iter())
            .find(|d| d.decisions.name == name)
            .unwrap_or_else(|| panic!("{name} in {:?}", i.domains))
    };
    assert_eq!(domain("sales").decisions.decisions, 2);
    assert_eq!(domain("billing").decisions.decisions, 3);
    let expired = "select count(*) from audit_events where action = 'proposal.expired' \
                   and domain = 'sales'";
    assert_eq!(domain("sales").expired, app.count(expired).await);
    assert_eq!(domain("sales").expired, 1);

    // The page, for compliance and admins only.
    let officer = app.browser();
    officer.login("cora", PASSWORD).await;
    let page = officer.page("/insights?days=30").await;
    for id in [
        "insights-reviewer-chart",
        "insights-reviewers",
        "insights-domains",
    ] {
        assert!(page.contains(&format!("data-testid=\"{id}\"")), "{id}");
    }
    assert!(page.contains("data-name=\"rev\""));
    let reviewer_page = app.browser();
    reviewer_page.login("rev", PASSWORD).await;
    let denied = reviewer_page.get("/insights").await;
    assert_eq!(denied.status(), StatusCode::FORBIDDEN);
    let denied = denied.text().await.expect("body");
    assert!(!denied.contains("data-testid=\"insights-reviewers\""));
    assert_eq!(in_trail(&app, "access.denied", "rev").await, 1);
}
