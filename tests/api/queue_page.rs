//! The reviewer's queue at scale, through plain HTTP as a browser without JavaScript uses it:
//! filters from the query string, counts, keyset pages that never repeat or skip a row, fail-
//! closed parameters, and reviewers limited to domains. On both backends.

use countersign::domain::principal::Principal;
use countersign::domain::principal::Role;
use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::common::on_both_backends;
use crate::helpers::{PASSWORD, TestApp};

/// Proposal ids on a queue page, in order.
fn rows(html: &str) -> Vec<String> {
    html.split("data-proposal-id=\"")
        .skip(1)
        .map(|s| s[..36].to_owned())
        .collect()
}

/// The `href` of the element with `testid`, unescaped.
fn link(html: &str, testid: &str) -> Option<String> {
    let at = html.find(&format!("data-testid=\"{testid}\""))?;
    let tag_start = html[..at].rfind('<')?;
    let tag = &html[tag_start..at + html[at..].find('>')?];
    let href = tag.split("href=\"").nth(1)?.split('"').next()?;
    Some(href.replace("&amp;", "&"))
}

/// The text of the element with `testid`.
fn text(html: &str, testid: &str) -> String {
    let at = html
        .find(&format!("data-testid=\"{testid}\""))
        .expect(testid);
    let start = at + html[at..].find('>').expect("tag") + 1;
    let end = start + html[start..].find('<').expect("end");
    html[start..end].to_owned()
}

/// Submits a proposal with these fields changed; its id.
async fn propose(app: &TestApp, token: &str, agent: &str, fields: Value) -> String {
    let mut body = crate::common::proposal_body(agent);
    if let (Value::Object(b), Value::Object(f)) = (&mut body, fields) {
        b.extend(f);
    }
    let r = app.propose(token, &body).await;
    assert_eq!(
        r.status(),
        StatusCode::CREATED,
        "{}",
        r.text().await.unwrap_or_default()
    );
    body["proposal_id"].as_str().expect("id").to_owned()
}

/// Three agents' proposals in two domains with mixed risk: 60 from `bulk` (low, sales), 6
/// from `billing-bot` (high, billing, GDPR off), 4 from `crm-bot` (medium, crm).
async fn seeded(app: &TestApp) -> (Vec<String>, Vec<String>, Vec<String>) {
    let mut ids = (Vec::new(), Vec::new(), Vec::new());
    let bulk = app.agent_token("bulk").await;
    for _ in 0..60 {
        ids.0
            .push(propose(app, &bulk, "bulk", json!({"risk_level": "low"})).await);
    }
    let billing = app.agent_token("billing-bot").await;
    for _ in 0..6 {
        let fields = json!({
            "risk_level": "high", "domain": "billing",
            "tool": {"name": "billing.refund", "version": "1"},
            "compliance_context": {"gdpr": false, "hipaa": false},
        });
        ids.1
            .push(propose(app, &billing, "billing-bot", fields).await);
    }
    let crm = app.agent_token("crm-bot").await;
    for _ in 0..4 {
        ids.2
            .push(propose(app, &crm, "crm-bot", json!({"domain": "crm"})).await);
    }
    ids
}

/// Follows `queue-next` from `path` to the end; every row seen, in order.
async fn walk(browser: &crate::common::browser::Browser, path: &str) -> Vec<String> {
    let mut seen = Vec::new();
    let mut next = Some(path.to_owned());
    while let Some(path) = next {
        let html = browser.page(&path).await;
        seen.extend(rows(&html));
        next = link(&html, "queue-next");
    }
    seen
}

async fn filters_counts_and_pages_show_all_of_it(backend: &str) {
    let app = TestApp::spawn(backend).await;
    app.user("rev", Role::Reviewer).await;
    let (bulk, billing, crm) = seeded(&app).await;
    let browser = app.browser();
    browser.login("rev", PASSWORD).await;

    // One agent's 30 proposals no longer hide the others: every page, oldest first.
    let all = walk(&browser, "/").await;
    let mut expected: Vec<String> = [bulk.clone(), billing.clone(), crm.clone()].concat();
    assert_eq!(
        all, expected,
        "{backend}: oldest first, nothing repeated or skipped"
    );
    let first = browser.page("/").await;
    assert_eq!(text(&first, "queue-count"), "70 pending");
    assert!(
        first.contains(">billing-bot (6)</option>"),
        "{backend}: per-value counts"
    );
    for risk in [
        ">low (60)</option>",
        ">medium (4)</option>",
        ">high (6)</option>",
    ] {
        assert!(first.contains(risk), "{backend}: counted by risk: {risk}");
    }

    // Filters by their public names; counts say how many match.
    let html = browser.page("/?agent=billing-bot").await;
    assert_eq!(rows(&html), billing);
    assert_eq!(
        text(&html, "queue-count"),
        "6 of 70 pending match these filters"
    );
    assert_eq!(rows(&browser.page("/?domain=crm").await), crm);
    assert_eq!(
        rows(&browser.page("/?tool=billing.refund&risk=high").await),
        billing
    );
    assert!(rows(&browser.page("/?risk=high&agent=crm-bot").await).is_empty());

    // Other orders page without repeats or gaps too.
    expected.reverse();
    assert_eq!(walk(&browser, "/?sort=newest").await, expected);
    let by_risk = walk(&browser, "/?sort=risk").await;
    assert_eq!(by_risk[..6], billing[..], "{backend}: high risk first");
    assert_eq!(by_risk[6..10], crm[..], "{backend}: then medium");
    assert_eq!(by_risk.len(), 70);
    let by_expiry = walk(&browser, "/?sort=expiry").await;
    assert_eq!(by_expiry.len(), 70);

    // A decided proposal leaves the queue and its counts.
    browser.decide(&billing[0], "approved", None).await;
    let html = browser.page("/?agent=billing-bot").await;
    assert_eq!(rows(&html), billing[1..]);
}

async fn unknown_filter_values_fail_closed(backend: &str) {
    let app = TestApp::spawn(backend).await;
    app.user("rev", Role::Reviewer).await;
    let browser = app.browser();
    browser.login("rev", PASSWORD).await;
    for (query, field) in [
        ("/?sort=random", "`sort`"),
        ("/?risk=extreme", "`risk`"),
        ("/?compliance=sox", "`compliance`"),
        ("/?after=not-a-cursor", "`after`"),
    ] {
        let r = browser.get(query).await;
        assert_eq!(
            r.status(),
            StatusCode::UNPROCESSABLE_ENTITY,
            "{backend}: {query}"
        );
        let html = r.text().await.expect("html");
        assert!(html.contains(field), "{backend}: {query} must name {field}");
        assert!(rows(&html).is_empty());
    }
}

async fn a_domain_limited_reviewer_sees_and_decides_only_their_domains(backend: &str) {
    let app = TestApp::spawn(backend).await;
    app.user("bill", Role::Reviewer).await;
    app.services
        .set_domains(&Principal::Operator, "bill", Some(vec!["billing".into()]))
        .await
        .expect("domains");
    let (_, billing, crm) = seeded(&app).await;
    let browser = app.browser();
    browser.login("bill", PASSWORD).await;
    let html = browser.page("/").await;
    assert_eq!(walk(&browser, "/").await, billing);
    assert_eq!(text(&html, "queue-count"), "6 pending");
    assert!(
        !html.contains("crm-bot"),
        "{backend}: no counts from other domains"
    );
    assert_eq!(
        browser
            .get(&format!("/proposals/{}", crm[0]))
            .await
            .status(),
        StatusCode::NOT_FOUND
    );
    // A forged form for another domain's proposal changes nothing.
    let csrf = browser.csrf(&format!("/proposals/{}", billing[0])).await;
    let form = [
        ("csrf_token", csrf.as_str()),
        ("id", &crm[0]),
        ("verdict", "approved"),
    ];
    browser.post_form("/fn/decide_proposal", "/", &form).await;
    let agent = app.agent_token("crm-bot").await;
    assert_eq!(
        app.poll(&agent, &crm[0]).await.1["proposal"]["status"],
        "pending"
    );
    browser.decide(&billing[0], "approved", None).await;
    let agent = app.agent_token("billing-bot").await;
    assert_eq!(
        app.poll(&agent, &billing[0]).await.1["proposal"]["status"],
        "approved"
    );
    let changed = app
        .count("select count(*) from audit_events where action = 'user.domains_changed'")
        .await;
    assert_eq!(changed, 1);
}

on_both_backends!(
    filters_counts_and_pages_show_all_of_it,
    unknown_filter_values_fail_closed,
    a_domain_limited_reviewer_sees_and_decides_only_their_domains,
);
