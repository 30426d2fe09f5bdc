//! The policy pages (`/policy`, `/policy/changes/:id`) through their forms, the way a person
//! without JavaScript uses them, on both backends: one admin proposes a candidate and sees its
//! diff and backtest but no approve button; a second admin approves it and `/policy` shows the
//! new version in force; an invalid candidate comes back with every error and its line; a
//! reviewer is refused (and the refusal recorded); the playground answers as `explain` does.

use countersign::domain::Policy;
use countersign::domain::policy_change::explain::explain;
use countersign::domain::principal::{Principal, Role};
use reqwest::StatusCode;
use serde_json::Value;

use crate::common::browser::text_of;
use crate::common::on_both_backends;
use crate::helpers::{Browser, PASSWORD, TestApp, location};
use crate::policy_texts::{AFTER, BEFORE, search, search_docs_check};

on_both_backends!(
    a_candidate_is_proposed_then_approved_by_a_second_admin_on_the_pages,
    an_invalid_candidate_shows_every_error_with_its_line,
    a_reviewer_is_refused_and_a_compliance_officer_only_reads,
    the_playground_answers_as_explain_does,
);

async fn signed_in(app: &TestApp, name: &str, role: Role) -> Browser {
    app.user(name, role).await;
    let browser = app.browser();
    assert_eq!(location(&browser.login(name, PASSWORD).await), "/");
    browser
}

/// Posts `form` (beside the CSRF token of `page`) to `endpoint`; where it redirected.
async fn post(b: &Browser, page: &str, endpoint: &str, form: &[(&str, &str)]) -> String {
    let csrf = b.csrf(page).await;
    let mut fields = vec![("csrf_token", csrf.as_str())];
    fields.extend_from_slice(form);
    let r = b.post_form(endpoint, page, &fields).await;
    assert!(
        r.status().is_redirection(),
        "POST {endpoint}: {}",
        r.status()
    );
    location(&r)
}

/// The text of the element carrying `data-testid="ID"` (its first occurrence), up to its
/// first closing tag.
fn testid(html: &str, id: &str) -> Option<String> {
    let marker = format!("data-testid=\"{id}\"");
    let at = html.find(&marker)?;
    let open_end = at + html[at..].find('>')? + 1;
    let close = open_end + html[open_end..].find("</")?;
    Some(text_of(&html[open_end..close]).trim().to_owned())
}

fn count(html: &str, id: &str) -> usize {
    html.matches(&format!("data-testid=\"{id}\"")).count()
}

/// A sales-agent search accepted and an intruder's refused under BEFORE, and a
/// `search_docs` check accepted: AFTER routes all three differently.
async fn record_decisions(app: &TestApp) {
    for agent in ["sales-agent", "intruder"] {
        let token = app.agent_token(agent).await;
        let r = app.propose(&token, &search(agent)).await;
        assert_eq!(r.status(), StatusCode::CREATED);
    }
    let bot = app.agent_token("support-bot").await;
    let (status, d) = app.pre_tool_check(&bot, &search_docs_check()).await;
    assert_eq!(
        (status, d["route"].as_str()),
        (StatusCode::OK, Some("accept"))
    );
}

async fn a_candidate_is_proposed_then_approved_by_a_second_admin_on_the_pages(backend: &str) {
    let app = TestApp::spawn_with_policy(backend, BEFORE).await;
    record_decisions(&app).await;
    let before = app.services.policy().version().to_owned();
    let alice = signed_in(&app, "alice", Role::Admin).await;
    let html = alice.page("/policy").await;
    assert_eq!(
        testid(&html, "policy-active-version").as_deref(),
        Some(before.as_str())
    );
    assert!(html.contains("data-testid=\"nav-policy\""));
    assert_eq!(count(&html, "policy-propose-text"), 1);

    let to = post(
        &alice,
        "/policy",
        "/fn/propose_policy",
        &[
            ("text", AFTER),
            ("reason", "intruder lane <b>now</b>"),
            ("since", "30d"),
        ],
    )
    .await;
    let (page, notice) = to.split_once('?').expect("a notice");
    assert!(page.starts_with("/policy/changes/"), "{to}");
    assert_eq!(notice, "notice=policy_proposed");
    let id = page.trim_start_matches("/policy/changes/").to_owned();

    let html = alice.page(&to).await;
    assert_eq!(
        testid(&html, "policy-change-status").as_deref(),
        Some("pending")
    );
    assert_eq!(
        testid(&html, "policy-backtest-changed").as_deref(),
        Some("3")
    );
    assert_eq!(count(&html, "policy-transition"), 3, "{html}");
    assert!(
        count(&html, "policy-loosens") >= 1,
        "refuse → accept loosens"
    );
    // The reason is text, never markup.
    assert!(
        html.contains("intruder lane &lt;b&gt;now&lt;/b&gt;"),
        "{html}"
    );
    let diff = html.find("data-testid=\"policy-diff\"").expect("the diff");
    let diff_text = text_of(&html[diff..]);
    assert!(
        diff_text.contains("-allowed_agents = [\"sales-agent\"]"),
        "{diff_text}"
    );
    assert!(
        diff_text.contains("+allowed_agents = [\"intruder\"]"),
        "{diff_text}"
    );
    assert!(html.contains("diff-line diff-added"));
    assert!(html.contains("diff-line diff-removed"));
    // The proposer sees no approve button; posting it anyway is refused and recorded.
    assert_eq!(count(&html, "policy-approve"), 0);
    assert!(text_of(&html).contains("You proposed this change: another admin must approve it."));
    let to = post(
        &alice,
        page,
        "/fn/answer_policy_change",
        &[("id", &id), ("answer", "approve")],
    )
    .await;
    assert_eq!(to, format!("{page}?error=policy_own_change"));
    let refused = "select count(*) from audit_events where action = 'policy.approval_refused'";
    assert_eq!(app.count(refused).await, 1);

    // A second admin approves.
    let bob = signed_in(&app, "bob", Role::Admin).await;
    let html = bob.page(page).await;
    assert_eq!(count(&html, "policy-approve"), 1);
    let candidate = testid(&html, "policy-candidate-version").expect("candidate");
    let to = post(
        &bob,
        page,
        "/fn/answer_policy_change",
        &[
            ("id", &id),
            ("answer", "approve"),
            ("reason", "looks right"),
        ],
    )
    .await;
    assert_eq!(to, format!("{page}?notice=policy_approved"));
    assert_eq!(
        testid(&bob.page(page).await, "policy-change-status").as_deref(),
        Some("approved")
    );
    let html = bob.page("/policy").await;
    assert_eq!(
        testid(&html, "policy-active-version").as_deref(),
        Some(candidate.as_str())
    );
    assert_eq!(app.services.policy().version(), candidate);
    assert_eq!(
        count(&html, "policy-history-row"),
        2,
        "the file's activation, then this one"
    );
    assert!(text_of(&html).contains("approved by bob"), "{html}");

    // Returning to the version before is proposed from the history.
    let to = post(
        &bob,
        "/policy",
        "/fn/propose_policy_return",
        &[("version", &before), ("reason", "back to the old lane")],
    )
    .await;
    assert!(
        to.starts_with("/policy/changes/") && to.ends_with("?notice=policy_proposed"),
        "{to}"
    );
    let html = bob.page(&to).await;
    assert_eq!(
        testid(&html, "policy-candidate-version").as_deref(),
        Some(before.as_str())
    );
    // Break-glass at the shell is marked as such in the history.
    assert_eq!(count(&html, "policy-break-glass"), 0);
    app.services
        .activate_policy(&Principal::Operator, &before, "pages down")
        .await
        .expect("break-glass");
    let html = bob.page("/policy").await;
    assert_eq!(
        testid(&html, "policy-active-version").as_deref(),
        Some(before.as_str())
    );
    assert_eq!(count(&html, "policy-break-glass"), 1);
    assert_eq!(count(&html, "policy-history-row"), 3);
}

async fn an_invalid_candidate_shows_every_error_with_its_line(backend: &str) {
    let app = TestApp::spawn_with_policy(backend, BEFORE).await;
    let alice = signed_in(&app, "alice", Role::Admin).await;
    let invalid =
        "[policy]\nname = \"broken\"\n\n[tools.\"crm.*\"]\nrisk = \"extreme\"\ncategory = \"Z\"\n";
    let expected = Policy::from_toml_str(invalid).expect_err("invalid");
    let to = post(
        &alice,
        "/policy",
        "/fn/propose_policy",
        &[("text", invalid), ("reason", "try"), ("since", "7d")],
    )
    .await;
    assert_eq!(to, "/policy?error=policy_invalid#propose");
    let html = alice.page(&to).await;
    let list = html
        .find("data-testid=\"policy-errors\"")
        .expect("the errors");
    let end = list + html[list..].find("</ul>").expect("the list's end");
    let shown = text_of(&html[list..end]);
    assert_eq!(expected.len(), 2, "{expected:?}");
    for e in &expected {
        assert!(e.line.is_some(), "{e}");
        assert!(shown.contains(&e.to_string()), "{e} in {shown}");
    }
    assert!(shown.contains("line "), "{shown}");
    assert!(testid(&html, "flash-error").is_some());
    assert_eq!(app.count("select count(*) from policy_changes").await, 0);
    // The errors were for that one page: shown again, the page has none; and no address can
    // put words of its own there.
    let again = alice.page(&to).await;
    assert!(!again.contains("data-testid=\"policy-errors\""));
    let forged = alice
        .page("/policy?error=policy_invalid&lines=Call%20this%20number")
        .await;
    assert!(!forged.contains("Call this number"));
    // A refusal by rule is a notice.
    let to = post(
        &alice,
        "/policy",
        "/fn/propose_policy",
        &[("text", AFTER), ("reason", " "), ("since", "7d")],
    )
    .await;
    assert_eq!(to, "/policy?error=policy_reason_required#propose");
    let to = post(
        &alice,
        "/policy",
        "/fn/propose_policy",
        &[("text", BEFORE), ("reason", "same"), ("since", "7d")],
    )
    .await;
    assert_eq!(to, "/policy?error=policy_already_active#propose");
    assert_eq!(app.count("select count(*) from policy_changes").await, 0);
}

async fn a_reviewer_is_refused_and_a_compliance_officer_only_reads(backend: &str) {
    let app = TestApp::spawn_with_policy(backend, BEFORE).await;
    let change = app
        .services
        .propose_policy(
            &Principal::person("alice", Role::Admin),
            AFTER,
            "intruder lane",
            time::OffsetDateTime::UNIX_EPOCH,
        )
        .await
        .expect("proposed");
    let page = format!("/policy/changes/{}", change.id);
    let rev = signed_in(&app, "rev", Role::Reviewer).await;
    assert!(!rev.page("/").await.contains("data-testid=\"nav-policy\""));
    for path in ["/policy", page.as_str()] {
        let r = rev.get(path).await;
        assert_eq!(r.status(), StatusCode::FORBIDDEN, "reviewer GET {path}");
        assert!(
            r.text()
                .await
                .expect("html")
                .contains("data-testid=\"forbidden\"")
        );
    }
    let to = post(
        &rev,
        "/",
        "/fn/propose_policy",
        &[("text", AFTER), ("reason", "sneaky"), ("since", "7d")],
    )
    .await;
    assert_eq!(to, "/policy?error=policy_role#propose");
    let id = change.id.to_string();
    let to = post(
        &rev,
        "/",
        "/fn/answer_policy_change",
        &[("id", &id), ("answer", "approve")],
    )
    .await;
    assert_eq!(to, format!("{page}?error=policy_role"));
    let denied = "select count(*) from audit_events where action = 'access.denied' \
                  and subject_id = '/policy'";
    assert_eq!(app.count(denied).await, 4, "every refusal is in the trail");

    let officer = signed_in(&app, "officer", Role::Compliance).await;
    let html = officer.page("/policy").await;
    assert!(html.contains("data-testid=\"nav-policy\""));
    assert_eq!(
        count(&html, "policy-propose-text"),
        0,
        "compliance only reads"
    );
    assert_eq!(count(&html, "policy-change-link"), 1);
    let html = officer.page(&page).await;
    assert_eq!(count(&html, "policy-approve"), 0);
    assert_eq!(count(&html, "policy-shadow-start"), 0);
    assert_eq!(
        testid(&html, "policy-change-status").as_deref(),
        Some("pending")
    );
    let to = post(
        &officer,
        "/policy",
        "/fn/answer_policy_change",
        &[("id", &id), ("answer", "approve")],
    )
    .await;
    assert_eq!(to, format!("{page}?error=policy_role"));
    assert_eq!(
        app.services.policy().version(),
        Policy::from_toml_str(BEFORE).expect("before").version()
    );
    // A shadow run is an admin's, and shows its count.
    let bob = signed_in(&app, "bob", Role::Admin).await;
    let to = post(
        &bob,
        &page,
        "/fn/shadow_policy_change",
        &[("id", &id), ("duration", "24h")],
    )
    .await;
    assert_eq!(to, format!("{page}?notice=policy_shadow_started"));
    let html = bob.page(&page).await;
    assert_eq!(testid(&html, "policy-shadow-count").as_deref(), Some("0"));
    assert_eq!(count(&html, "policy-shadow-stop"), 1);
    // A decision made meanwhile is routed under the candidate too, and its difference listed.
    let intruder = app.agent_token("intruder").await;
    let r = app.propose(&intruder, &search("intruder")).await;
    assert_eq!(r.status(), StatusCode::CREATED);
    let proposal: Value = r.json().await.expect("json");
    let proposal_id = proposal["proposal"]["id"].as_str().expect("id").to_owned();
    app.services.shadow_settled().await;
    let html = bob.page(&page).await;
    assert_eq!(testid(&html, "policy-shadow-count").as_deref(), Some("1"));
    assert_eq!(
        testid(&html, "policy-shadow-differences").as_deref(),
        Some("1")
    );
    assert_eq!(count(&html, "policy-shadow-difference"), 1);
    assert!(
        html.contains(&format!("href=\"/proposals/{proposal_id}\"")),
        "{html}"
    );
    let to = post(
        &bob,
        &page,
        "/fn/shadow_policy_change",
        &[("id", &id), ("duration", "stop")],
    )
    .await;
    assert_eq!(to, format!("{page}?notice=policy_shadow_stopped"));
    assert_eq!(count(&bob.page(&page).await, "policy-shadow-stop"), 0);
}

/// `/policy?input=…&candidate=…` as the playground's GET form sends it.
fn playground(input: &str, candidate: Option<&str>) -> String {
    let mut params = vec![("input", input)];
    if let Some(c) = candidate {
        params.push(("candidate", c));
    }
    let url = reqwest::Url::parse_with_params("http://x/policy", &params).expect("url");
    format!("/policy?{}", url.query().expect("query"))
}

async fn the_playground_answers_as_explain_does(backend: &str) {
    let app = TestApp::spawn_with_policy(backend, BEFORE).await;
    let change = app
        .services
        .propose_policy(
            &Principal::person("alice", Role::Admin),
            AFTER,
            "intruder lane",
            time::OffsetDateTime::UNIX_EPOCH,
        )
        .await
        .expect("proposed");
    let officer = signed_in(&app, "officer", Role::Compliance).await;
    let (before, after) = (
        Policy::from_toml_str(BEFORE).expect("before"),
        Policy::from_toml_str(AFTER).expect("after"),
    );
    for input in [search("intruder"), search_docs_check()] {
        let was = explain(&input, &before).expect("explained");
        let now = explain(&input, &after).expect("explained");
        assert_ne!(
            was.route, now.route,
            "an input the candidate routes differently"
        );
        let html = officer
            .page(&playground(&input.to_string(), Some(&change.version)))
            .await;
        assert_eq!(
            testid(&html, "policy-playground-active-route"),
            Some(was.route.clone())
        );
        assert_eq!(
            testid(&html, "policy-playground-candidate-route"),
            Some(now.route.clone())
        );
        let text = text_of(&html);
        for e in [&was, &now] {
            assert!(text.contains(&e.rule), "{} in {text}", e.rule);
            assert!(text.contains(&e.policy_version));
            for b in &e.blockers {
                assert!(text.contains(b), "{b}");
            }
        }
        assert!(html.contains("data-testid=\"policy-playground-input\""));
    }
    // Without a candidate, the active version alone.
    let html = officer
        .page(&playground(&search("sales-agent").to_string(), None))
        .await;
    assert_eq!(
        testid(&html, "policy-playground-active-route").as_deref(),
        Some("accept")
    );
    assert_eq!(count(&html, "policy-playground-candidate-route"), 0);
    // What is not JSON, or not a proposal or event, decides nothing and says why.
    let html = officer.page(&playground("{not json", None)).await;
    assert!(
        testid(&html, "policy-playground-error")
            .expect("error")
            .contains("not valid JSON")
    );
    let html = officer.page(&playground("{\"tool\": 7}", None)).await;
    assert_eq!(count(&html, "policy-playground-contract"), 1);
    assert_eq!(count(&html, "policy-playground-active-route"), 0);
    let html = officer.page(&playground("{}", Some("sha256:nope"))).await;
    assert!(
        testid(&html, "policy-playground-error")
            .expect("error")
            .contains("No stored version")
    );
}
