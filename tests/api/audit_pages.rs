//! The compliance officer's pages through plain HTTP: only compliance officers and admins see
//! `/audit`, its charts, timelines and exports (a reviewer gets 403 and the refusal is in the
//! trail); filters narrow the trail and live in the query string; keyset pages visit every
//! event once; the export (a form posted with the CSRF token; a GET exports and records
//! nothing) downloads as one zip that verifies offline, fails after a one-byte edit and is
//! itself recorded; a proposal's timeline tells its story; the proposal page shows
//! its trail a page at a time; "Verify now" shows the chain's state. Every time on these pages
//! and on the admin's webhook page reads as people read it, in a `<time datetime>`, never a raw
//! RFC 3339 string with fractional seconds.

use std::collections::BTreeSet;
use std::io::Read;

use countersign::audit::bundle;
use countersign::audit::{Actor, AuditEvent, ProposalInputRejected};
use countersign::domain::principal::{Principal, Role, TokenKind};
use countersign::service::TokenRequest;
use reqwest::StatusCode;
use serde_json::Value;
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

use crate::common::{self, on_both_backends};
use crate::helpers::{Browser, PASSWORD, TestApp, location};
use crate::webhooks::{receiver, recorded};

on_both_backends!(times_read_as_people_read_them);

/// Every `data-seq` on a page, in order.
fn seqs(html: &str) -> Vec<i64> {
    html.split("data-seq=\"")
        .skip(1)
        .filter_map(|rest| rest.split('"').next()?.parse().ok())
        .collect()
}

/// The `href` of the link marked `data-testid="{testid}"`.
fn link(html: &str, testid: &str) -> Option<String> {
    let at = html.find(&format!("data-testid=\"{testid}\""))?;
    let tag = &html[html[..at].rfind("<a")?..at];
    let href = tag.split("href=\"").nth(1)?.split('"').next()?;
    Some(href.replace("&amp;", "&"))
}

/// The export form's action and the fields it posts besides its CSRF token, in order.
fn export_form(html: &str) -> Option<(String, Vec<(String, String)>)> {
    let at = html.find("data-testid=\"audit-export\"")?;
    let start = html[..at].rfind("<form")?;
    let form = &html[start..start + html[start..].find("</form>")?];
    let attr = |tag: &str, name: &str| {
        let value = tag.split(&format!("{name}=\"")).nth(1)?.split('"').next()?;
        Some(value.replace("&amp;", "&"))
    };
    if attr(form, "method")? != "post" {
        return None;
    }
    let fields = (form.split("<input").skip(1))
        .filter_map(|tag| Some((attr(tag, "name")?, attr(tag, "value")?)))
        .filter(|(name, _)| name != "csrf_token")
        .collect();
    Some((attr(form, "action")?, fields))
}

/// Posts the export form as the page at `page` would, with `fields` besides its CSRF token.
async fn export(b: &Browser, page: &str, fields: &[(&str, &str)]) -> reqwest::Response {
    let csrf = b.csrf(page).await;
    let mut form = vec![("csrf_token", csrf.as_str())];
    form.extend_from_slice(fields);
    b.post_form("/audit/export.zip", page, &form).await
}

/// Seqs of the rows `condition` selects, newest first, straight from the database.
async fn seqs_where(app: &TestApp, condition: &str) -> Vec<i64> {
    let sql = format!("select seq from audit_events where {condition} order by seq desc");
    if app.db_url.starts_with("sqlite:") {
        let mut c = <sqlx::SqliteConnection as sqlx::Connection>::connect(&app.db_url)
            .await
            .expect("connect");
        sqlx::query_scalar(&sql)
            .fetch_all(&mut c)
            .await
            .expect("seqs")
    } else {
        let mut c = <sqlx::PgConnection as sqlx::Connection>::connect(&app.db_url)
            .await
            .expect("connect");
        sqlx::query_scalar(&sql)
            .fetch_all(&mut c)
            .await
            .expect("seqs")
    }
}

async fn signed_in(app: &TestApp, name: &str, role: Role) -> Browser {
    app.user(name, role).await;
    let browser = app.browser();
    assert_eq!(location(&browser.login(name, PASSWORD).await), "/");
    browser
}

/// A proposal from `agent` for `tool` in `domain`; returns its id.
async fn propose(app: &TestApp, token: &str, agent: &str, tool: &str, domain: &str) -> String {
    let mut body = common::proposal_body(agent);
    body["tool"]["name"] = Value::from(tool);
    body["domain"] = Value::from(domain);
    let r = app.propose(token, &body).await;
    assert_eq!(r.status(), StatusCode::CREATED);
    let created: Value = r.json().await.expect("json");
    created["proposal"]["id"].as_str().expect("id").to_owned()
}

#[tokio::test]
async fn only_compliance_officers_and_admins_see_the_audit_pages() {
    let app = TestApp::spawn("sqlite").await;
    let agent = app.agent_token("a1").await;
    let id = app.propose_ok(&agent, "a1").await;
    assert_eq!(
        location(&app.browser().get("/audit").await),
        "/login",
        "signed out"
    );
    let signed_out = app.browser();
    let r = (signed_out.post_form("/audit/export.zip", "/audit", &[("csrf_token", "x")])).await;
    assert_eq!(location(&r), "/login");

    let reviewer = signed_in(&app, "rev", Role::Reviewer).await;
    assert!(
        !reviewer
            .page("/")
            .await
            .contains("data-testid=\"nav-audit\"")
    );
    let timeline = format!("/audit/proposals/{id}");
    for path in ["/audit", "/audit/charts", timeline.as_str()] {
        let r = reviewer.get(path).await;
        assert_eq!(r.status(), StatusCode::FORBIDDEN, "GET {path}");
        let body = r.text().await.expect("body");
        assert!(body.contains("Forbidden"), "{path}: {body}");
        assert!(!body.contains("data-testid=\"audit-row\""));
    }
    // The export form, posted with a good token, is refused too.
    let r = export(&reviewer, "/", &[]).await;
    assert_eq!(r.status(), StatusCode::FORBIDDEN, "POST /audit/export.zip");
    let body = r.text().await.expect("body");
    assert!(body.contains("Forbidden"), "{body}");
    // Verifying is refused too (the form posts to a server function).
    let csrf = reviewer.csrf("/").await;
    let r = reviewer
        .post_form("/fn/verify_audit_trail", "/audit", &[("csrf_token", &csrf)])
        .await;
    assert_eq!(location(&r), "/audit");
    let denied = seqs_where(&app, "action = 'access.denied' and actor = 'rev'").await;
    assert_eq!(denied.len(), 5, "every refusal is in the trail");
    for page in [
        "/audit",
        "/audit/charts",
        "/audit/proposals",
        "/audit/export",
        "/audit/verify",
    ] {
        let n = app
            .count(&format!(
                "select count(*) from audit_events where action = 'access.denied' and subject_id = '{page}'"
            ))
            .await;
        assert_eq!(n, 1, "access.denied for {page}");
    }

    for (name, role) in [("auditor", Role::Compliance), ("boss", Role::Admin)] {
        let b = signed_in(&app, name, role).await;
        let html = b.page("/audit").await;
        assert!(html.contains("data-testid=\"nav-audit\""));
        assert!(html.contains("data-testid=\"audit-row\""));
        assert_eq!(b.get("/audit/charts").await.status(), StatusCode::OK);
        assert_eq!(b.get(&timeline).await.status(), StatusCode::OK);
    }
}

#[tokio::test]
async fn filters_narrow_the_trail_and_live_in_the_query_string() {
    let app = TestApp::spawn("sqlite").await;
    let a1 = app.agent_token("a1").await;
    let a2 = app.agent_token("a2").await;
    let rev = signed_in(&app, "rev", Role::Reviewer).await;
    let auditor = signed_in(&app, "auditor", Role::Compliance).await;
    let mut ids = Vec::new();
    for i in 0..3 {
        ids.push(propose(&app, &a1, "a1", "crm.update_contact", "sales").await);
        ids.push(propose(&app, &a2, "a2", &format!("billing.refund{i}"), "billing").await);
    }
    rev.decide(&ids[0], "approved", None).await;
    rev.decide(&ids[1], "rejected", Some("no")).await;
    // A pre-tool-check is filtered by its risk domain like a proposal by its domain.
    let check = serde_json::json!({
        "tool_name": "ledger.read", "tool_category": "private_read",
        "authorization_state": "authenticated", "evidence_refs": ["ticket-1"],
        "risk_domain": "finance", "proposed_arguments": {}, "recommended_route": "accept"
    });
    let (status, _) = app.pre_tool_check(&a1, &check).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        seqs_where(
            &app,
            "domain = 'finance' and action = 'pre_tool_check.decided'"
        )
        .await
        .len(),
        1
    );

    let cases = [
        ("agent=a2", "agent = 'a2'"),
        ("tool=billing.refund1", "tool = 'billing.refund1'"),
        ("domain=sales", "domain = 'sales'"),
        ("domain=finance", "domain = 'finance'"),
        ("kind=proposal.submitted", "action = 'proposal.submitted'"),
        ("actor=rev", "actor = 'rev'"),
        ("decision=rejected", "decision = 'rejected'"),
        ("risk=medium", "risk = 'medium'"),
        (
            "agent=a1&kind=proposal.approved",
            "agent = 'a1' and action = 'proposal.approved'",
        ),
        ("from=2000-01-01&to=2999-12-31", "1 = 1"),
        ("from=2999-01-01", "1 = 0"),
        ("to=2000-01-01T10:00", "1 = 0"),
    ];
    for (query, condition) in cases {
        let html = auditor.page(&format!("/audit?{query}")).await;
        let want = seqs_where(&app, condition).await;
        assert_eq!(seqs(&html), want, "/audit?{query}");
        // The form shows the filters it was given, and the export form posts them.
        let (action, fields) = export_form(&html).expect("an export form that posts");
        assert_eq!(action, "/audit/export.zip");
        if query.starts_with("agent=a2") {
            assert_eq!(fields, [("agent".to_owned(), "a2".to_owned())]);
            assert!(html.contains("value=\"a2\""));
        }
    }
    // Narrowing: each filter shows fewer events than none.
    let all = seqs(&auditor.page("/audit").await).len();
    assert!(seqs(&auditor.page("/audit?agent=a2").await).len() < all);
    let bad = auditor.get("/audit?from=yesterday").await;
    assert_eq!(bad.status(), StatusCode::UNPROCESSABLE_ENTITY);
    let bad = bad.text().await.expect("html");
    assert!(bad.contains("data-testid=\"flash-error\""), "{bad}");
    assert!(bad.contains("YYYY-MM-DD"));
}

#[tokio::test]
async fn keyset_pages_visit_every_event_exactly_once() {
    let app = TestApp::spawn("sqlite").await;
    let auditor = signed_in(&app, "auditor", Role::Compliance).await;
    let now = app.services.now();
    let events = (0..130)
        .map(|i| {
            let e = AuditEvent::ProposalInputRejected(ProposalInputRejected {
                agent: if i % 2 == 0 { "even" } else { "odd" }.into(),
                fields: vec!["tool".into()],
            });
            (now, Actor::agent("bulk"), e)
        })
        .collect();
    app.services.store().record(events).await.expect("record");

    for (query, condition) in [("", "1 = 1"), ("agent=even", "agent = 'even'")] {
        let want = seqs_where(&app, condition).await;
        let mut seen = Vec::new();
        let mut path = format!("/audit?{query}");
        let mut pages = Vec::new();
        loop {
            let html = auditor.page(&path).await;
            let page = seqs(&html);
            assert!(page.len() <= 50);
            seen.extend(page);
            pages.push(path.clone());
            match link(&html, "audit-older") {
                Some(next) => path = next,
                None => break,
            }
            assert!(pages.len() < 100);
        }
        let distinct: BTreeSet<_> = seen.iter().collect();
        assert_eq!(
            distinct.len(),
            seen.len(),
            "{query}: an event was shown twice"
        );
        assert_eq!(seen, want, "{query}: every event, newest first");
        assert!(pages.len() >= 2, "{query}: more than one page");
        // And back up: the newer link of the last page leads to the events just above it.
        let last = auditor.page(&pages[pages.len() - 1]).await;
        let newer = link(&last, "audit-newer").expect("newer link");
        let above = seqs(&auditor.page(&newer).await);
        let last_seqs = seqs(&last);
        assert!(above.iter().all(|s| s > &last_seqs[0]));
        assert_eq!(above.last(), want.get(want.len() - last_seqs.len() - 1));
        if !query.is_empty() {
            assert!(newer.contains(query), "{newer} keeps the filter");
        }
    }
}

/// Unzips the body of an export download into `dir`.
fn unzip(bytes: &[u8], dir: &std::path::Path) -> Vec<String> {
    let mut archive = zip::ZipArchive::new(std::io::Cursor::new(bytes)).expect("a zip archive");
    let mut names = Vec::new();
    for i in 0..archive.len() {
        let mut file = archive.by_index(i).expect("entry");
        let name = file.name().to_owned();
        let mut content = Vec::new();
        file.read_to_end(&mut content).expect("read entry");
        std::fs::write(dir.join(&name), content).expect("write");
        names.push(name);
    }
    names
}

#[tokio::test]
async fn an_export_downloads_verifies_offline_and_is_recorded() {
    let app = TestApp::spawn("sqlite").await;
    let a1 = app.agent_token("a1").await;
    let a2 = app.agent_token("a2").await;
    let rev = signed_in(&app, "rev", Role::Reviewer).await;
    let auditor = signed_in(&app, "auditor", Role::Compliance).await;
    for _ in 0..3 {
        let id = propose(&app, &a1, "a1", "crm.update_contact", "sales").await;
        rev.decide(&id, "approved", None).await;
        propose(&app, &a2, "a2", "crm.update_contact", "sales").await;
    }
    let want = seqs_where(&app, "agent = 'a1'").await;
    let exported = "action = 'audit.exported' and actor = 'auditor'";

    // A GET (an old link) exports and records nothing: it shows the trail of the same filters.
    let r = auditor.get("/audit/export.zip?agent=a1").await;
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    assert_eq!(location(&r), "/audit?agent=a1");
    assert!(r.bytes().await.expect("body").is_empty());
    // A form without this session's token exports nothing; the refusal is recorded.
    let forged = [("csrf_token", "0".repeat(64)), ("agent", "a1".into())];
    let forged: Vec<(&str, &str)> = forged.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let r = auditor
        .post_form("/audit/export.zip", "/audit", &forged)
        .await;
    assert_eq!(location(&r), "/audit?agent=a1&error=csrf");
    assert!(seqs_where(&app, exported).await.is_empty());
    let rejected = "action = 'auth.csrf_rejected' and actor = 'auditor'";
    assert_eq!(seqs_where(&app, rejected).await.len(), 1);

    let r = export(&auditor, "/audit?agent=a1", &[("agent", "a1")]).await;
    assert_eq!(r.status(), StatusCode::OK);
    assert_eq!(r.headers()["content-type"], "application/zip");
    let disposition = r.headers()["content-disposition"].to_str().expect("ascii");
    assert!(disposition.starts_with("attachment; filename=\"countersign-audit-"));
    let bytes = r.bytes().await.expect("body");
    let dir = tempfile::tempdir().expect("dir");
    let mut names = unzip(&bytes, dir.path());
    names.sort();
    assert_eq!(names, ["events.csv", "events.jsonl", "manifest.json"]);
    let (manifest, head) = bundle::verify(dir.path(), None).expect("the export verifies");
    assert_eq!(manifest.count, want.len() as i64);
    assert_eq!(
        (manifest.first_seq, manifest.last_seq),
        (want[want.len() - 1], want[0])
    );
    assert_eq!(head.seq, want[0]);
    assert!(!manifest.contiguous, "a facet selection has gaps");
    assert_eq!(manifest.selection["agent"], "a1");
    let csv = std::fs::read_to_string(dir.path().join("events.csv")).expect("csv");
    assert_eq!(csv.lines().count(), want.len() + 1);
    assert!(!csv.contains("new@example.com"), "no parameter values");

    // The export is itself an audited event.
    let recorded = seqs_where(&app, exported).await;
    assert_eq!(recorded.len(), 1);
    let mut read = app.services.store().read().await.expect("read");
    let page = countersign::storage::audit_query::first_of_kind(
        read.conn(),
        "audit",
        "export",
        "audit.exported",
    )
    .await
    .expect("query")
    .expect("recorded");
    let d = &page.event.details;
    assert_eq!(d["count"], manifest.count);
    assert_eq!(d["first_seq"], manifest.first_seq);
    assert_eq!(d["last_seq"], manifest.last_seq);
    assert_eq!(d["selection"]["agent"], "a1");
    assert_eq!(d["format"], "zip");

    // One changed byte is caught.
    let events = dir.path().join("events.jsonl");
    let mut edited = std::fs::read(&events).expect("read");
    let at = edited.len() / 3;
    edited[at] = if edited[at] == b'0' { b'1' } else { b'0' };
    std::fs::write(&events, edited).expect("write");
    assert!(bundle::verify(dir.path(), None).is_err());

    // The whole trail is one stretch.
    let whole = export(&auditor, "/audit", &[])
        .await
        .bytes()
        .await
        .expect("body");
    let dir = tempfile::tempdir().expect("dir");
    unzip(&whole, dir.path());
    let (manifest, _) = bundle::verify(dir.path(), None).expect("verifies");
    assert!(manifest.contiguous);
    assert_eq!(manifest.first_seq, 1);
}

#[tokio::test]
async fn a_proposal_timeline_tells_its_story() {
    let app = TestApp::spawn("sqlite").await;
    let agent = app.agent_token("a1").await;
    let executor = app.executor_token("n8n").await;
    let rev = signed_in(&app, "rev", Role::Reviewer).await;
    let auditor = signed_in(&app, "auditor", Role::Compliance).await;
    let id = app.propose_ok(&agent, "a1").await;
    rev.decide(&id, "approved", Some("fine")).await;
    let (_, leased) = app.lease(&executor).await;
    let command = leased["command"]["id"]
        .as_str()
        .expect("command")
        .to_owned();
    let token = leased["lease_token"]
        .as_str()
        .expect("lease token")
        .to_owned();
    let (status, _) = app
        .report(
            &executor,
            &command,
            "complete",
            &serde_json::json!({"lease_token": token, "result": {"ok": true}}),
        )
        .await;
    assert_eq!(status, StatusCode::OK);

    let html = auditor.page(&format!("/audit/proposals/{id}")).await;
    let story = [
        "proposal.submitted",
        "proposal.approved",
        "command.queued",
        "command.leased",
        "command.succeeded",
        "proposal.succeeded",
    ];
    let mut from = 0;
    for kind in story {
        let at = html[from..]
            .find(&format!("data-kind=\"{kind}\""))
            .unwrap_or_else(|| panic!("{kind} after position {from}"));
        from += at;
    }
    let policy = app.services.policy().version().to_string();
    assert!(html.contains(&policy), "the policy version used");
    assert!(html.contains("data-testid=\"timeline-decision\">approved by rev"));
    let rows = seqs(&html);
    assert!(rows.windows(2).all(|w| w[0] < w[1]), "oldest first");
    // The proposal page links compliance officers to it.
    let page = auditor.page(&format!("/proposals/{id}")).await;
    assert_eq!(
        link(&page, "proposal-timeline"),
        Some(format!("/audit/proposals/{id}"))
    );
}

#[tokio::test]
async fn the_proposal_page_shows_its_trail_a_page_at_a_time() {
    let app = TestApp::spawn("sqlite").await;
    let agent = app.agent_token("a1").await;
    let rev = signed_in(&app, "rev", Role::Reviewer).await;
    // A GDPR proposal: every opening of its page is recorded on it.
    let id = app.propose_ok(&agent, "a1").await;
    let page = format!("/proposals/{id}");
    for _ in 0..55 {
        rev.page(&page).await;
    }
    let all = seqs_where(&app, &format!("subject_id = '{id}'")).await;
    assert_eq!(all.len(), 56);
    let first = rev.page(&page).await;
    let rows = first.matches("data-testid=\"trail-row\"").count();
    assert_eq!(rows, 50, "the most recent 50");
    let older = link(&first, "trail-older").expect("a link to older events");
    let second = rev.page(&older).await;
    assert_eq!(second.matches("data-testid=\"trail-row\"").count(), 6);
    assert!(link(&second, "trail-older").is_none());
    assert!(link(&second, "trail-newest").is_some());
}

#[tokio::test]
async fn verify_now_shows_the_head_checkpoint_and_result() {
    let app = TestApp::spawn("sqlite").await;
    let auditor = signed_in(&app, "auditor", Role::Compliance).await;
    let html = auditor.page("/audit").await;
    assert!(html.contains("not verified since the server started"));
    assert!(html.contains("none signed yet"));
    let dir = tempfile::tempdir().expect("dir");
    let key = countersign::audit::checkpoint::CheckpointKey::load_or_create(
        &dir.path().join("audit.key"),
    )
    .expect("key");
    let cp = app
        .services
        .sign_checkpoint(&Principal::Operator, &key)
        .await
        .expect("sign")
        .expect("a checkpoint");

    let csrf = auditor.csrf("/audit").await;
    let r = auditor
        .post_form("/fn/verify_audit_trail", "/audit", &[("csrf_token", &csrf)])
        .await;
    assert_eq!(location(&r), "/audit");
    let html = auditor.page("/audit").await;
    assert!(html.contains("class=\"verified ok\""), "{html}");
    assert!(html.contains(&key.public_key()));
    let shown = html
        .split("data-testid=\"audit-checkpoint\"")
        .nth(1)
        .expect("checkpoint")
        .split("</dd>")
        .next()
        .expect("its text");
    // The signed time, to the second, in the `<time datetime>` (its words say how long ago).
    let signed = OffsetDateTime::parse(&cp.at, &Rfc3339).expect("the signed time");
    assert!(
        shown.contains(&cp.seq.to_string())
            && shown.contains(&format!("<time datetime=\"{}\"", to_the_second(signed))),
        "{shown}"
    );
    assert!(
        !shown.contains(&cp.at),
        "never the raw signed string: {shown}"
    );
    let r = auditor
        .post_form(
            "/fn/verify_audit_trail",
            "/audit",
            &[("csrf_token", "forged")],
        )
        .await;
    assert_eq!(location(&r), "/audit?error=csrf");

    // After an edit, the page names the first bad seq.
    app.exec("drop trigger audit_events_no_update").await;
    app.exec("update audit_events set actor = 'mallory' where seq = 2")
        .await;
    let csrf = auditor.csrf("/audit").await;
    auditor
        .post_form("/fn/verify_audit_trail", "/audit", &[("csrf_token", &csrf)])
        .await;
    let html = auditor.page("/audit").await;
    assert!(html.contains("class=\"verified bad\""), "{html}");
    assert!(html.contains("data-testid=\"audit-first-bad\">2<"));
}

#[tokio::test]
async fn the_charts_draw_decisions_without_parameter_values() {
    let app = TestApp::spawn("sqlite").await;
    let agent = app.agent_token("a1").await;
    let rev = signed_in(&app, "rev", Role::Reviewer).await;
    let auditor = signed_in(&app, "auditor", Role::Compliance).await;
    for verdict in ["approved", "rejected", "rejected"] {
        let id = propose(&app, &agent, "a1", "crm.delete_contact", "support").await;
        rev.decide(&id, verdict, Some("because")).await;
    }
    app.propose_ok(&agent, "a1").await;
    let html = auditor.page("/audit/charts").await;
    for chart in [
        "chart-decisions",
        "chart-queue",
        "chart-latency",
        "chart-tools",
        "chart-reviewers",
    ] {
        assert!(
            html.contains(&format!("data-testid=\"{chart}\"")),
            "{chart}"
        );
    }
    assert!(html.matches("<svg").count() >= 5);
    assert!(
        html.matches("<table").count() >= 5,
        "a table under every chart"
    );
    assert!(html.contains("crm.delete_contact"));
    assert!(html.contains(">rev<"));
    assert!(html.contains("support (3)"));
    assert!(!html.contains("new@example.com") && !html.contains("c-123"));
}

/// Values at the edge of what times and seqs can hold are refused or ignored, never a 500 (or a
/// panic): the last representable day, a bound the commit lag would push past it, the largest
/// seq as a cursor.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn edge_values_in_the_query_string_never_break_the_page() {
    let app = TestApp::spawn("sqlite").await;
    let a1 = app.agent_token("a1").await;
    propose(&app, &a1, "a1", "crm.update_contact", "sales").await;
    let auditor = signed_in(&app, "auditor", Role::Compliance).await;
    for path in [
        "/audit?to=9999-12-31",
        "/audit?to=9999-12-31T23:59",
        "/audit?from=-9999-01-01",
        "/audit?after=9223372036854775807",
        "/audit?before=9223372036854775807",
    ] {
        let status = auditor.get(path).await.status();
        assert!(
            status == StatusCode::OK
                || status == StatusCode::BAD_REQUEST
                || status == StatusCode::UNPROCESSABLE_ENTITY,
            "{path}: {status}"
        );
    }
    for field in [("to", "9999-12-31"), ("after", "9223372036854775807")] {
        let status = export(&auditor, "/audit", &[field]).await.status();
        assert!(
            status == StatusCode::OK
                || status == StatusCode::BAD_REQUEST
                || status == StatusCode::UNPROCESSABLE_ENTITY,
            "export {field:?}: {status}"
        );
    }
    assert_eq!(auditor.get("/audit").await.status(), StatusCode::OK);
}

/// `2026-11-26T10:03:12Z`: `t` in UTC, to the second.
fn to_the_second(t: OffsetDateTime) -> String {
    let format =
        time::macros::format_description!("[year]-[month]-[day]T[hour]:[minute]:[second]Z");
    t.to_offset(time::UtcOffset::UTC)
        .format(&format)
        .expect("formats")
}

/// The first `hh:mm:ss.f` in `html` (a time with fractional seconds), with what follows it.
fn fractional_seconds(html: &str) -> Option<&str> {
    let b = html.as_bytes();
    let digit = |i: usize| b.get(i).is_some_and(u8::is_ascii_digit);
    (0..b.len()).find_map(|i| {
        let shape = [0, 1, 3, 4, 6, 7, 9].into_iter().all(|d| digit(i + d))
            && b.get(i + 2) == Some(&b':')
            && b.get(i + 5) == Some(&b':')
            && b.get(i + 8) == Some(&b'.');
        shape.then(|| &html[i.saturating_sub(300)..(i + 40).min(html.len())])
    })
}

/// Each part of `html` from one `data-testid="{testid}"` to the next `</{end}>`.
fn parts<'a>(html: &'a str, testid: &str, end: &str) -> Vec<&'a str> {
    html.split(&format!("data-testid=\"{testid}\""))
        .skip(1)
        .map(|rest| rest.split(&format!("</{end}>")).next().unwrap_or(rest))
        .collect()
}

/// Every part `testid` marks carries a `<time datetime>`, and the page shows no time with
/// fractional seconds.
fn times_are_readable(html: &str, page: &str, marked: &[(&str, &str)]) {
    for (testid, end) in marked {
        let found = parts(html, testid, end);
        assert!(!found.is_empty(), "{page}: no {testid}");
        for part in found {
            assert!(
                part.contains("<time datetime=\""),
                "{page}: {testid} without a <time>: {part}"
            );
        }
    }
    assert_eq!(fractional_seconds(html), None, "{page}: a raw time");
}

async fn times_read_as_people_read_them(backend: &str) {
    let app = TestApp::spawn(backend).await;
    // A proposal from an agent whose webhook fails once: a delivery with an attempt and a
    // next try.
    let mut attempts = app.services.store().changes().webhook_attempts();
    let (url, mut rx) = receiver(vec![500]).await;
    let request = TokenRequest {
        webhook: Some(&url),
        ..TokenRequest::new(TokenKind::Agent, "hooked")
    };
    let created = (app.services)
        .create_operated_token(&Principal::Operator, request)
        .await
        .expect("token with a webhook");
    let id = app.propose_ok(created.token.expose(), "hooked").await;
    crate::webhooks::next(&mut rx).await;
    recorded(&mut attempts, 1).await;
    let rev = signed_in(&app, "rev", Role::Reviewer).await;
    rev.decide(&id, "approved", Some("fine")).await;
    // A signed checkpoint and a verification, for the chain's box.
    let dir = tempfile::tempdir().expect("dir");
    let key = countersign::audit::checkpoint::CheckpointKey::load_or_create(
        &dir.path().join("audit.key"),
    )
    .expect("key");
    app.services
        .sign_checkpoint(&Principal::Operator, &key)
        .await
        .expect("sign");
    let auditor = signed_in(&app, "auditor", Role::Compliance).await;
    let csrf = auditor.csrf("/audit").await;
    auditor
        .post_form("/fn/verify_audit_trail", "/audit", &[("csrf_token", &csrf)])
        .await;

    let trail = auditor.page("/audit").await;
    let marked = [
        ("audit-row", "tr"),
        ("audit-checkpoint", "dd"),
        ("audit-verification", "dd"),
    ];
    times_are_readable(&trail, "/audit", &marked);
    let timeline = auditor.page(&format!("/audit/proposals/{id}")).await;
    let marked = [("audit-row", "tr"), ("timeline-decision", "dd")];
    times_are_readable(&timeline, "timeline", &marked);
    assert!(timeline.contains("data-testid=\"timeline-decision\">approved by rev"));

    app.user("root", Role::Admin).await;
    let admin = app.browser();
    admin.login("root", PASSWORD).await;
    let webhooks = admin.page("/admin/webhooks").await;
    let marked = [("delivery-row", "tr"), ("delivery-attempt", "li")];
    times_are_readable(&webhooks, "/admin/webhooks", &marked);
    // The failed delivery waits for its next try (a delivered one has none).
    assert!(
        parts(&webhooks, "delivery-next", "td")
            .iter()
            .any(|next| next.contains("<time datetime=\"")),
        "{webhooks}"
    );
    let tokens = admin.page("/admin/tokens").await;
    times_are_readable(&tokens, "/admin/tokens", &[("token-row", "tr")]);
}
