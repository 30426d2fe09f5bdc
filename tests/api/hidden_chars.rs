//! Hidden characters are flagged wherever agent-written text appears, as the proposal page
//! flags them: the queue, `/runs`, the agent's record, a token's grant and the trail's subjects
//! show each invisible or direction-changing character escaped as `⟦U+…⟧` (never raw, where a
//! right-to-left override would turn `…\u{202E}gnp.exe` into `…exe.png`), and flag the row or
//! card with how many there are.

use countersign::domain::principal::Role;
use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::admin::signed_in;
use crate::common::{self, browser::text_of, on_both_backends};
use crate::erasure::outcome_unknown;
use crate::helpers::{Browser, TestApp, location};

on_both_backends!(
    the_queue_and_runs_flag_hidden_characters,
    the_record_a_grant_and_the_trail_flag_hidden_characters,
);

/// The intent from the issue: a right-to-left override turns its end into `exe.png`.
const INTENT: &str = "Fix typo in contact name \u{202E}gnp.exe";

/// What the override and a zero-width space look like once made visible.
const SHOWN_INTENT: &str = "Fix typo in contact name ⟦U+202E⟧gnp.exe";

/// A proposal by `a1` whose intent has U+202E and whose `name` parameter has U+200B: its id.
async fn propose_hidden(app: &TestApp, agent: &str) -> String {
    let mut body = common::proposal_body("a1");
    body["intent"]["summary"] = json!(INTENT);
    body["parameters"] = json!({"contact_id": "c-123", "name": "Ann\u{200B}a"});
    body["compliance_context"] = json!({"gdpr": false, "hipaa": false});
    let r = app.propose(agent, &body).await;
    assert_eq!(r.status(), StatusCode::CREATED);
    let created: Value = r.json().await.expect("json");
    created["proposal"]["id"].as_str().expect("id").to_owned()
}

/// No hidden character of the test's reaches the page raw.
fn nothing_raw(html: &str, page: &str) {
    for raw in ['\u{202E}', '\u{200B}'] {
        assert!(
            !html.contains(raw),
            "{page}: U+{:04X} reached the page raw",
            u32::from(raw)
        );
    }
}

/// The stretch of `html` from the element marked `marker` to the `end` that closes it.
fn part<'a>(html: &'a str, marker: &str, end: &str) -> &'a str {
    let start = html
        .find(marker)
        .unwrap_or_else(|| panic!("{marker} on the page"));
    let len = html[start..].find(end).expect("its end");
    &html[start..start + len]
}

/// How many hidden characters the flag in `part` names, if it has one.
fn flagged(part: &str) -> Option<usize> {
    let at = part.find("data-testid=\"hidden-flag\"")?;
    let count = part[at..]
        .split("data-hidden=\"")
        .nth(1)?
        .split('"')
        .next()?;
    count.parse().ok()
}

async fn the_queue_and_runs_flag_hidden_characters(backend: &str) {
    let app = TestApp::spawn(backend).await;
    let agent = app.agent_token("a1").await;
    let executor = app.executor_token("n8n").await;
    let rev = signed_in(&app, "rev", Role::Reviewer).await;
    let id = propose_hidden(&app, &agent).await;

    // The queue: the intent and the parameter preview escaped, the row flagged with both.
    let html = rev.page("/").await;
    nothing_raw(&html, "/");
    let row = part(&html, &format!("data-proposal-id=\"{id}\""), "</tr>");
    assert!(text_of(row).contains(SHOWN_INTENT), "{row}");
    assert!(text_of(row).contains("name=Ann⟦U+200B⟧a"), "{row}");
    assert!(row.contains("class=\"hidden-char\""), "{row}");
    assert_eq!(flagged(row), Some(2), "{row}");
    assert!(text_of(row).contains("⚠ 2 hidden characters"), "{row}");

    // `/runs`: the run whose outcome is unknown shows the intent escaped and flags the card
    // (the parameter's value is named there, and counted).
    let r = rev.decide(&id, "approved", None).await;
    assert_eq!(location(&r), format!("/proposals/{id}?notice=approved"));
    outcome_unknown(&app, &executor).await;
    let html = rev.page("/runs").await;
    nothing_raw(&html, "/runs");
    let card = part(&html, "data-testid=\"unknown-run\"", "</article>");
    let summary = part(card, "data-testid=\"run-summary\"", "</dd>");
    assert!(text_of(summary).ends_with(SHOWN_INTENT), "{summary}");
    assert!(text_of(card).contains("contact_id=…, name=…"), "{card}");
    assert_eq!(flagged(card), Some(2), "{card}");
}

async fn the_record_a_grant_and_the_trail_flag_hidden_characters(backend: &str) {
    let app = TestApp::spawn(backend).await;
    let agent = app.agent_token("a1").await;
    let rev = signed_in(&app, "rev", Role::Reviewer).await;
    let admin = signed_in(&app, "boss", Role::Admin).await;
    let auditor = signed_in(&app, "auditor", Role::Compliance).await;

    // The agent's record, on its next proposal's page: the earlier intent escaped and flagged.
    propose_hidden(&app, &agent).await;
    let next = app.propose_ok(&agent, "a1").await;
    let html = rev.page(&format!("/proposals/{next}")).await;
    nothing_raw(&html, "the next proposal");
    let item = part(&html, "data-testid=\"history-item\"", "</li>");
    assert!(text_of(item).contains(SHOWN_INTENT), "{item}");
    assert_eq!(flagged(item), Some(1), "{item}");

    // A grant: a token whose tool scope holds an override, on the tokens page.
    app.scoped_executor_token("n8n", Some("crm.\u{202E}*"))
        .await;
    let html = admin.page("/admin/tokens").await;
    nothing_raw(&html, "/admin/tokens");
    let row = part(&html, "data-name=\"n8n\"", "</tr>");
    assert!(text_of(row).contains("crm.⟦U+202E⟧*"), "{row}");
    assert_eq!(flagged(row), Some(1), "{row}");

    // The trail: the paused pattern is a subject; escaped and flagged on `/audit`.
    pause(&admin, "crm.\u{202E}*").await;
    let html = auditor.page("/audit?kind=tool.paused").await;
    nothing_raw(&html, "/audit");
    let row = part(&html, "data-testid=\"audit-row\"", "</tr>");
    let subject = part(row, "class=\"subject\"", "</td>");
    assert!(text_of(subject).contains("tool:crm.⟦U+202E⟧*"), "{subject}");
    assert_eq!(flagged(row), Some(1), "{row}");
}

/// An admin pauses `pattern` with the form on `/runs`.
async fn pause(admin: &Browser, pattern: &str) {
    let csrf = admin.csrf("/runs").await;
    let form = [
        ("csrf_token", csrf.as_str()),
        ("pattern", pattern),
        ("action", "pause"),
    ];
    let r = admin.post_form("/fn/switch_tool", "/runs", &form).await;
    assert!(location(&r).starts_with("/runs"), "{}", location(&r));
}
