//! Edit, then approve, through the proposal page's form (`POST /fn/edit_and_approve`), the
//! agent's answer and the executor's lease, on both backends: the edited request gets its own
//! hash, which the approval and the command bind to; the agent reads each change in
//! `review.edited`; the trail records the change as keyed hashes. Nothing is added, the tool
//! never changes, and a policy or a quorum that forbids edits refuses them.

use countersign::domain::principal::Role;
use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::common::on_both_backends;
use crate::helpers::{Browser, PASSWORD, TestApp, location};

on_both_backends!(
    an_edit_is_approved_as_a_new_request,
    what_may_not_be_edited_is_refused
);

const POLICY: &str = r#"
[defaults]
unknown_agents = "allow"

[tools."payments.refund"]
category = "C"
risk = "medium"

[tools."payments.transfer"]
category = "C"
risk = "medium"
editable = false

[tools."payments.wire"]
category = "C"
risk = "medium"
required_approvals = 2
"#;

/// A pending proposal of `agent-a` for `tool` (no personal data); (id, request hash).
async fn pending(app: &TestApp, tool: &str) -> (String, String) {
    let token = app.agent_token("agent-a").await;
    let mut body = crate::common::proposal_body("agent-a");
    body["tool"]["name"] = json!(tool);
    body["compliance_context"] = json!({"gdpr": false, "hipaa": false});
    body["parameters"] = json!({"account": "acct-7", "amount": 500, "memo": "invoice 17"});
    let r = app.propose(&token, &body).await;
    assert_eq!(r.status(), StatusCode::CREATED);
    let v: Value = r.json().await.expect("json");
    let p = &v["proposal"];
    assert_eq!(p["status"], "pending", "{v}");
    (
        p["id"].as_str().expect("id").to_owned(),
        p["request_hash_sha256"].as_str().expect("hash").to_owned(),
    )
}

/// Posts "edit, then approve" on proposal `id` with `(pointer, JSON text)` pairs; where it
/// redirected. The form names a parameter by the hex of its JSON pointer.
async fn edit(browser: &Browser, id: &str, values: &[(&str, &str)]) -> String {
    let page = format!("/proposals/{id}");
    let csrf = browser.csrf(&page).await;
    let names: Vec<(String, String, String, String)> = (values.iter().enumerate())
        .map(|(i, (pointer, json))| {
            (
                format!("field[{i}]"),
                hex::encode(pointer),
                format!("value[{i}]"),
                (*json).to_owned(),
            )
        })
        .collect();
    let mut form = vec![("csrf_token", csrf.as_str()), ("id", id)];
    for (f, p, v, j) in &names {
        form.push((f.as_str(), p.as_str()));
        form.push((v.as_str(), j.as_str()));
    }
    location(
        &browser
            .post_form("/fn/edit_and_approve", &page, &form)
            .await,
    )
}

async fn agent_view(app: &TestApp, id: &str) -> Value {
    let token = app.agent_token("agent-a").await;
    app.poll(&token, id).await.1["proposal"].clone()
}

async fn an_edit_is_approved_as_a_new_request(backend: &str) {
    let app = TestApp::spawn_with_policy(backend, POLICY).await;
    app.user("rev", Role::Reviewer).await;
    let browser = app.browser();
    browser.login("rev", PASSWORD).await;
    let (id, sent_hash) = pending(&app, "payments.refund").await;
    let page = browser.page(&format!("/proposals/{id}")).await;
    assert!(page.contains("data-testid=\"edit\""), "offered");
    assert!(
        page.contains("data-testid=\"edit-amount\""),
        "each parameter"
    );

    let to = edit(
        &browser,
        &id,
        &[
            ("/amount", "200"),
            ("/memo", "\"invoice 17\""),
            ("/account", "\"acct-7\""),
        ],
    )
    .await;
    assert_eq!(to, format!("/proposals/{id}?notice=edited"));

    // The agent reads what changed, and only that.
    let seen = agent_view(&app, &id).await;
    assert_eq!(seen["status"], "approved");
    assert_eq!(seen["authorization_state"], "confirmed");
    assert_eq!(
        seen["review"]["edited"],
        json!([{"field": "/amount", "old": 500, "new": 200}])
    );
    assert_eq!(
        seen["request_hash_sha256"], sent_hash,
        "the agent's request is as it sent it"
    );

    // The executor receives the edited request, bound to its own hash.
    let exec = app.executor_token("exec").await;
    let (status, lease) = app.lease(&exec).await;
    assert_eq!(status, StatusCode::OK, "{lease}");
    let command = &lease["command"];
    assert_eq!(command["parameters"]["amount"], 200);
    assert_eq!(command["parameters"]["memo"], "invoice 17");
    let edited_hash = command["request_hash_sha256"]
        .as_str()
        .expect("hash")
        .to_owned();
    assert_ne!(edited_hash, sent_hash);

    // The trail: the edit (keyed hashes, never a value), then the approval bound to the edit.
    let edited = "select count(*) from audit_events where action = 'proposal.edited' \
                  and actor = 'rev'";
    assert_eq!(app.count(edited).await, 1);
    let bound = format!(
        "select count(*) from audit_events where action = 'proposal.approved' \
         and cast(details as text) like '%{edited_hash}%'"
    );
    assert_eq!(app.count(&bound).await, 1);
    // No value of the edit anywhere in the event: only keyed hashes (hex, where "200" may
    // well appear as digits, so the values are looked for as JSON values).
    let details = crate::common::audit_details(&app.db_url, "proposal.edited").await;
    fn values(v: &Value, out: &mut Vec<Value>) {
        match v {
            Value::Object(m) => m.values().for_each(|v| values(v, out)),
            Value::Array(a) => a.iter().for_each(|v| values(v, out)),
            other => out.push(other.clone()),
        }
    }
    let mut leaves = Vec::new();
    values(&details, &mut leaves);
    for value in [json!(200), json!(500), json!("200"), json!("500")] {
        assert!(
            !leaves.contains(&value),
            "values are keyed hashes: {details}"
        );
    }

    // The page shows the change and the command as it runs.
    let page = browser.page(&format!("/proposals/{id}")).await;
    let table = &page[page.find("data-testid=\"proposal-edited\"").expect("shown")..];
    assert!(table.contains("/amount") && table.contains("500") && table.contains("200"));
}

async fn what_may_not_be_edited_is_refused(backend: &str) {
    let app = TestApp::spawn_with_policy(backend, POLICY).await;
    app.user("rev", Role::Reviewer).await;
    let browser = app.browser();
    browser.login("rev", PASSWORD).await;
    let (id, _) = pending(&app, "payments.refund").await;
    for values in [
        vec![("/cc", "\"x\"")],
        vec![("/amount", "two hundred")],
        vec![("/amount", "500")],
        vec![],
    ] {
        let to = edit(&browser, &id, &values).await;
        assert_eq!(
            to,
            format!("/proposals/{id}?error=edit_invalid"),
            "{values:?}"
        );
    }
    let (locked, _) = pending(&app, "payments.transfer").await;
    let page = browser.page(&format!("/proposals/{locked}")).await;
    assert!(
        !page.contains("data-testid=\"edit\""),
        "the policy forbids it"
    );
    let to = edit(&browser, &locked, &[("/amount", "200")]).await;
    assert_eq!(to, format!("/proposals/{locked}?error=not_editable"));
    let (quorum, _) = pending(&app, "payments.wire").await;
    let to = edit(&browser, &quorum, &[("/amount", "200")]).await;
    assert_eq!(to, format!("/proposals/{quorum}?error=not_editable"));
    for id in [&id, &locked, &quorum] {
        assert_eq!(agent_view(&app, id).await["status"], "pending");
    }
    let edited = "select count(*) from audit_events where action = 'proposal.edited'";
    assert_eq!(app.count(edited).await, 0);
    assert_eq!(app.count("select count(*) from commands").await, 0);
}
