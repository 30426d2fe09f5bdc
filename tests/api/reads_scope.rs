//! The pages that read a proposal's parts hold people to their domains, because the reads
//! themselves do: a reviewer limited to `billing` opens no `sales` proposal page (its command,
//! approvals, trail, history, alerts are never read for them) and finds no `sales` proposal in
//! a `billing` page's history of the agent's calls, a compliance officer limited to
//! `billing` opens no `sales` timeline; their own domain's they open, and a person limited to
//! nothing opens both. On both backends.

use countersign::domain::principal::{Principal, Role};
use reqwest::StatusCode;
use serde_json::json;
use uuid::Uuid;

use crate::common::on_both_backends;
use crate::helpers::{Browser, PASSWORD, TestApp};

/// An approved proposal in `domain`, with its queued command: (proposal id, command id).
async fn approved_in(app: &TestApp, token: &str, domain: &str) -> (String, String) {
    let mut body = crate::common::proposal_body("agent-a");
    body["domain"] = json!(domain);
    let r = app.propose(token, &body).await;
    assert_eq!(r.status(), StatusCode::CREATED);
    let id = Uuid::parse_str(body["proposal_id"].as_str().expect("id")).expect("uuid");
    let command = app.approve_queued(id).await;
    (id.to_string(), command.id.to_string())
}

/// `name`, with `role`, limited to `domains` when given, signed in.
async fn person(app: &TestApp, name: &str, role: Role, domains: Option<&[&str]>) -> Browser {
    app.user(name, role).await;
    if let Some(ds) = domains {
        let ds = ds.iter().map(|d| (*d).to_owned()).collect();
        (app.services)
            .set_domains(&Principal::Operator, name, Some(ds))
            .await
            .expect("domains");
    }
    let b = app.browser();
    b.login(name, PASSWORD).await;
    b
}

async fn a_domain_limited_person_opens_no_part_of_another_domains_proposal(backend: &str) {
    let app = TestApp::spawn(backend).await;
    app.user("boss", Role::Admin).await;
    let agent = app.agent_token("agent-a").await;
    let (sales, sales_cmd) = approved_in(&app, &agent, "sales").await;
    let (billing, billing_cmd) = approved_in(&app, &agent, "billing").await;

    let bill = person(&app, "bill", Role::Reviewer, Some(&["billing"])).await;
    let r = bill.get(&format!("/proposals/{sales}")).await;
    assert_eq!(r.status(), StatusCode::NOT_FOUND);
    let body = r.text().await.expect("body");
    assert!(!body.contains(&sales_cmd), "the command is not shown");
    let own = bill.page(&format!("/proposals/{billing}")).await;
    assert!(own.contains(&billing_cmd), "their own domain's command");
    // The agent's earlier call of the same tool was in `sales`: not in the page's history.
    assert!(!own.contains(&sales), "no link to the sales proposal");
    assert!(own.contains("data-testid=\"history-none\""), "no history");

    let cleo = person(&app, "cleo", Role::Compliance, Some(&["billing"])).await;
    let r = cleo.get(&format!("/audit/proposals/{sales}")).await;
    assert_eq!(r.status(), StatusCode::NOT_FOUND);
    let body = r.text().await.expect("body");
    assert!(
        !body.contains(&sales_cmd),
        "the timeline's command is not shown"
    );
    let r = cleo.get(&format!("/proposals/{sales}")).await;
    assert_eq!(r.status(), StatusCode::NOT_FOUND);
    let own = cleo.page(&format!("/audit/proposals/{billing}")).await;
    assert!(own.contains(&billing_cmd), "their own domain's timeline");

    let rev = person(&app, "rev", Role::Reviewer, None).await;
    let page = rev.page(&format!("/proposals/{sales}")).await;
    assert!(page.contains(&sales_cmd), "a reviewer limited to nothing");
    let page = rev.page(&format!("/proposals/{billing}")).await;
    assert!(
        page.contains(&format!("href=\"/proposals/{sales}\"")),
        "the history of a reviewer limited to nothing holds the sales proposal"
    );
    let cora = person(&app, "cora", Role::Compliance, None).await;
    let timeline = cora.page(&format!("/audit/proposals/{sales}")).await;
    assert!(
        timeline.contains(&sales_cmd),
        "an auditor limited to nothing"
    );
}

on_both_backends!(a_domain_limited_person_opens_no_part_of_another_domains_proposal);
