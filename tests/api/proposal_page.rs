//! The proposal page as a reviewer uses it (issue 10): it shows every field of the command the
//! executor receives, field by field; hidden characters are made visible and flagged; secrets
//! never reach the page and personal data only after an audited reveal; approving a high-risk
//! or wide-reaching action needs the target's name typed; the agent's record with the tool.

use countersign::domain::principal::Principal;
use countersign::domain::principal::Role;
use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::common::{self, browser::text_of, on_both_backends};
use crate::helpers::{Browser, PASSWORD, TestApp, location};

/// Fields of a leased command that describe the queue entry, not what to run.
const QUEUE_FIELDS: &[&str] = &[
    "id",
    "proposal_id",
    "status",
    "kind",
    "rollback_of",
    "attempts",
    "created_at",
    "completed_at",
];

/// A GDPR proposal that uses every part of the command: nested parameters, a secret, personal
/// data, constraints, preconditions, execution limits and a rollback plan.
fn full_proposal(agent: &str) -> Value {
    let mut body = common::proposal_body(agent);
    body["blast_radius"] = json!("medium");
    body["parameters"] = json!({
        "contact_id": "c-123",
        "email": "new@example.com",
        "api_token": "tok_9f8e7d6c5b4a39281706",
        "fields": {"tier": "gold", "tags": ["vip", "q4 & <beta>"], "score": 0.75},
        "limit": 25,
        "dry_run": false,
        "note": null
    });
    body["constraints"] = json!({"scope": "all_tenants", "max_records": 500, "window": {"start": "22:00", "end": "06:00"}});
    body["preconditions"] = json!([{"check": "ttl_ok"}, {"resource_state": "active"}]);
    body["execution"] = json!({"execution_slo_ms": 2000, "timeout_ms": 30000, "retry_policy": {"max_retries": 2, "backoff_ms": 500}});
    body["rollback_plan"] = json!({"type": "compensate", "instructions": {"steps": ["restore the old email"]}, "timeout_ms": 60000});
    body
}

/// A JSON pointer token (RFC 6901).
fn token(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

/// Every node of `v` under `pointer`, containers included, as (pointer, value).
fn walk<'a>(pointer: String, v: &'a Value, out: &mut Vec<(String, &'a Value)>) {
    out.push((pointer.clone(), v));
    match v {
        Value::Object(m) => {
            for (k, child) in m {
                walk(format!("{pointer}/{}", token(k)), child, out);
            }
        }
        Value::Array(items) => {
            for (i, child) in items.iter().enumerate() {
                walk(format!("{pointer}/{i}"), child, out);
            }
        }
        _ => {}
    }
}

/// The command's own fields (what to run), every node with its pointer.
fn spec_nodes(command: &Value) -> Vec<(String, &Value)> {
    let mut out = Vec::new();
    for (k, v) in command.as_object().expect("command object") {
        if !QUEUE_FIELDS.contains(&k.as_str()) {
            walk(format!("/{}", token(k)), v, &mut out);
        }
    }
    out
}

/// The HTML of the page's row for `pointer`.
fn row<'a>(html: &'a str, pointer: &str) -> &'a str {
    let marker = format!("data-field=\"{pointer}\"");
    let start = html
        .find(&marker)
        .unwrap_or_else(|| panic!("the page has no row for {pointer}"));
    let end = html[start..].find("</tr>").expect("row end") + start;
    &html[start..end]
}

/// The text of a row's value element (`class="v …"`).
fn value_text(row: &str) -> Option<String> {
    let at = row.find("class=\"v")?;
    let open = row[..at].rfind('<')?;
    let tag: String = row[open + 1..]
        .chars()
        .take_while(char::is_ascii_alphanumeric)
        .collect();
    let inner = at + row[at..].find('>')? + 1;
    let close = row[inner..].find(&format!("</{tag}>"))? + inner;
    Some(text_of(&row[inner..close]))
}

fn shown(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Checks that the page shows the node at `pointer` as the command has it: containers and
/// leaves alike have a row; a leaf's value is its text, a withheld leaf says why, a time is
/// its `datetime`.
fn check_leaf(html: &str, pointer: &str, value: &Value, withheld: &[(&str, &str)]) {
    let row = row(html, pointer);
    if value.as_object().is_some_and(|m| !m.is_empty())
        || value.as_array().is_some_and(|a| !a.is_empty())
    {
        return;
    }
    if let Some((_, why)) = withheld.iter().find(|(p, _)| *p == pointer) {
        assert!(
            row.contains(&format!("data-masked=\"{why}\"")),
            "{pointer} is withheld as {why}: {row}"
        );
        return;
    }
    if pointer == "/approved_at" {
        let at = value.as_str().expect("time");
        let seconds = format!("{}Z", &at[..19]);
        assert!(row.contains(&format!("datetime=\"{seconds}\"")), "{row}");
        return;
    }
    let expected = match value {
        Value::Object(_) => "(empty)".to_owned(),
        Value::Array(_) => "(empty list)".to_owned(),
        other => shown(other),
    };
    assert_eq!(
        value_text(row).as_deref(),
        Some(expected.as_str()),
        "{pointer}"
    );
}

async fn reviewer(app: &TestApp, name: &str) -> Browser {
    app.user(name, Role::Reviewer).await;
    let b = app.browser();
    b.login(name, PASSWORD).await;
    b
}

async fn propose(app: &TestApp, token: &str, body: &Value) -> String {
    let r = app.propose(token, body).await;
    assert_eq!(r.status(), StatusCode::CREATED);
    let v: Value = r.json().await.expect("json");
    v["proposal"]["id"].as_str().expect("id").to_owned()
}

async fn page_and_command_agree_field_by_field(backend: &str) {
    let app = TestApp::spawn(backend).await;
    let agent = app.agent_token("a1").await;
    let executor = app.executor_token("worker").await;
    let rev = reviewer(&app, "rev").await;
    let id = propose(&app, &agent, &full_proposal("a1")).await;
    let path = format!("/proposals/{id}");
    let before = rev.page(&path).await;

    assert_eq!(
        location(&rev.decide(&id, "approved", None).await),
        format!("{path}?notice=approved")
    );
    let (status, leased) = app.lease(&executor).await;
    assert_eq!(status, StatusCode::OK);
    let command = &leased["command"];
    assert_eq!(command["constraints"]["scope"], "all_tenants");
    let nodes = spec_nodes(command);

    // Before the reveal: the secret and the personal data are withheld, everything else shown.
    let masked = rev.page(&path).await;
    let withheld = [
        ("/parameters/api_token", "secret"),
        ("/parameters/email", "personal"),
    ];
    for (pointer, value) in &nodes {
        check_leaf(&masked, pointer, value, &withheld);
    }
    assert_eq!(
        masked.matches("data-field=\"").count(),
        nodes.len(),
        "one row per field of the command, no more"
    );
    for value in ["tok_9f8e7d6c5b4a39281706", "new@example.com"] {
        assert!(!masked.contains(value), "{value} reached the page");
    }

    // After the reveal the personal data is shown; the secret never is.
    assert_eq!(
        location(&rev.reveal(&id).await),
        format!("{path}?revealed=1&notice=revealed#command")
    );
    let revealed = rev.page(&format!("{path}?revealed=1")).await;
    for (pointer, value) in &nodes {
        check_leaf(&revealed, pointer, value, &withheld[..1]);
    }
    assert!(!revealed.contains("tok_9f8e7d6c5b4a39281706"));

    // The page before the approval showed the same command (the approval's own fields aside).
    for (pointer, value) in nodes
        .iter()
        .filter(|(p, _)| p != "/approved_by" && p != "/approved_at")
    {
        check_leaf(&before, pointer, value, &withheld);
    }
    for pointer in ["/approved_by", "/approved_at"] {
        assert!(row(&before, pointer).contains("data-masked=\"on-approval\""));
    }
}

async fn hidden_characters_are_shown_and_counted(backend: &str) {
    let app = TestApp::spawn(backend).await;
    let agent = app.agent_token("a1").await;
    let rev = reviewer(&app, "rev").await;
    let mut body = common::proposal_body("a1");
    body["intent"]["summary"] = json!("Archive /tmp/\u{202E}fdp.exe");
    body["intent"]["reasoning"] = json!("Safe\u{200B}ly archived.");
    body["parameters"] = json!({"pa\u{200D}th": "/srv/\u{2066}data\u{2069}", "n": 1});
    body["compliance_context"] = json!({"gdpr": false, "hipaa": false});
    let id = propose(&app, &agent, &body).await;
    let html = rev.page(&format!("/proposals/{id}")).await;

    for raw in ['\u{202E}', '\u{200B}', '\u{200D}', '\u{2066}', '\u{2069}'] {
        assert!(
            !html.contains(raw),
            "U+{:04X} reached the page raw",
            u32::from(raw)
        );
    }
    assert!(html.contains("data-testid=\"hidden-chars\""));
    assert!(
        html.contains("data-testid=\"hidden-count\">5<"),
        "counted once each"
    );
    let summary = html
        .find("data-testid=\"proposal-summary\"")
        .expect("summary");
    assert!(text_of(&html[summary..summary + 400]).contains("Archive /tmp/⟦U+202E⟧fdp.exe"));
    let param = row(&html, "/parameters/pa⟦U+200D⟧th");
    assert_eq!(
        value_text(param).as_deref(),
        Some("/srv/⟦U+2066⟧data⟦U+2069⟧")
    );
    assert!(param.contains("⟦U+200D⟧"), "the key too");
    assert!(param.contains("data-testid=\"field-hidden\""));
}

async fn high_risk_approval_needs_the_targets_name(backend: &str) {
    let app = TestApp::spawn(backend).await;
    let agent = app.agent_token("a1").await;
    let rev = reviewer(&app, "rev").await;
    let mut body = common::proposal_body("a1");
    body["risk_level"] = json!("high");
    body["target_refs"] = json!([{"type": "database", "id": "prod-billing"}]);
    let id = propose(&app, &agent, &body).await;
    let path = format!("/proposals/{id}");
    let html = rev.page(&path).await;
    assert_eq!(
        common::browser::confirm_name(&html).as_deref(),
        Some("prod-billing")
    );

    for (typed, error) in [
        (None, "confirmation_missing"),
        (Some("prod-billin"), "confirmation_mismatch"),
        (Some("PROD-BILLING"), "confirmation_mismatch"),
    ] {
        let r = rev.decide_typed(&id, "approved", None, typed).await;
        assert_eq!(location(&r), format!("{path}?error={error}"), "{typed:?}");
        assert_eq!(
            app.poll(&agent, &id).await.1["proposal"]["status"],
            "pending"
        );
    }
    // Rejecting never needs it.
    let other = propose(&app, &agent, &{
        let mut b = body.clone();
        b["proposal_id"] = json!(uuid::Uuid::new_v4());
        b["idempotency_key"] = json!(format!("key-{}", uuid::Uuid::new_v4()));
        b
    })
    .await;
    let r = rev.decide_typed(&other, "rejected", Some("no"), None).await;
    assert_eq!(location(&r), format!("/proposals/{other}?notice=rejected"));

    let r = rev
        .decide_typed(&id, "approved", None, Some(" prod-billing "))
        .await;
    assert_eq!(location(&r), format!("{path}?notice=approved"));

    // A small, medium-risk change asks for nothing.
    let plain = app.propose_ok(&agent, "a1").await;
    let html = rev.page(&format!("/proposals/{plain}")).await;
    assert!(common::browser::confirm_name(&html).is_none());
}

async fn a_reveal_is_audited_personal_and_short_lived(backend: &str) {
    let app = TestApp::spawn(backend).await;
    let agent = app.agent_token("a1").await;
    let rev = reviewer(&app, "rev").await;
    let other = reviewer(&app, "rev2").await;
    let id = app.propose_ok(&agent, "a1").await;
    let path = format!("/proposals/{id}");
    let asked = format!("{path}?revealed=1");

    // Asking for the values without the audited reveal shows nothing.
    let html = rev.page(&asked).await;
    assert!(!html.contains("new@example.com"));
    assert!(html.contains("data-testid=\"reveal\""));
    assert_eq!(
        app.count(
            "select count(*) from audit_events where action = 'proposal.personal_data_revealed'"
        )
        .await,
        0
    );

    rev.reveal(&id).await;
    assert!(rev.page(&asked).await.contains("new@example.com"));
    assert!(
        !rev.page(&path).await.contains("new@example.com"),
        "hidden unless asked"
    );
    assert!(
        !other.page(&asked).await.contains("new@example.com"),
        "one reviewer's reveal shows nothing to another"
    );

    let trail = app
        .services
        .trail(&Principal::Operator, "proposal", &id)
        .await
        .expect("trail");
    let revealed: Vec<_> = trail
        .iter()
        .filter(|e| e.action == "proposal.personal_data_revealed")
        .collect();
    assert_eq!(revealed.len(), 1);
    assert_eq!(revealed[0].actor, "rev");
    assert_eq!(revealed[0].details["fields"], json!(["/parameters/email"]));
    assert!(!revealed[0].details.to_string().contains("new@example.com"));

    app.clock.advance(time::Duration::minutes(16));
    assert!(
        !rev.page(&asked).await.contains("new@example.com"),
        "a reveal lapses"
    );
}

async fn the_agents_record_with_the_tool_is_on_the_page(backend: &str) {
    let app = TestApp::spawn(backend).await;
    let agent = app.agent_token("a1").await;
    let rev = reviewer(&app, "rev").await;
    let approved = app.propose_ok(&agent, "a1").await;
    let rejected = app.propose_ok(&agent, "a1").await;
    let mut elsewhere = common::proposal_body("a1");
    elsewhere["tool"]["name"] = json!("calendar.create_event");
    propose(&app, &agent, &elsewhere).await;
    rev.decide(&approved, "approved", None).await;
    rev.decide(&rejected, "rejected", Some("wrong contact"))
        .await;
    let current = app.propose_ok(&agent, "a1").await;

    let html = rev.page(&format!("/proposals/{current}")).await;
    assert!(
        html.contains("data-testid=\"history-total\">2<"),
        "same tool only, not itself"
    );
    assert!(html.contains("data-testid=\"history-approved\">1<"));
    assert!(html.contains("data-testid=\"history-rejected\">1<"));
    for id in [&approved, &rejected] {
        assert!(
            html.contains(&format!("href=\"/proposals/{id}\"")),
            "links to {id}"
        );
    }
    assert!(!html.contains(&format!("href=\"/proposals/{current}\"")));
    assert_eq!(html.matches("data-testid=\"history-item\"").count(), 2);

    let first = rev.page(&format!("/proposals/{approved}")).await;
    assert!(first.contains("data-testid=\"history-none\""));
}

on_both_backends!(
    page_and_command_agree_field_by_field,
    hidden_characters_are_shown_and_counted,
    high_risk_approval_needs_the_targets_name,
    a_reveal_is_audited_personal_and_short_lived,
    the_agents_record_with_the_tool_is_on_the_page,
    an_open_page_hears_when_its_proposal_moves,
    open_queues_hear_each_change_on_the_desk,
    opening_a_hipaa_proposal_is_recorded_and_a_plain_one_is_not,
);

/// HIPAA's enhanced logging: opening a proposal whose compliance context is HIPAA (and not
/// GDPR) records who viewed it; opening one with neither records nothing.
async fn opening_a_hipaa_proposal_is_recorded_and_a_plain_one_is_not(backend: &str) {
    let app = TestApp::spawn(backend).await;
    let agent = app.agent_token("a1").await;
    let rev = reviewer(&app, "rev").await;
    let mut hipaa = common::proposal_body("a1");
    hipaa["compliance_context"] = json!({"gdpr": false, "hipaa": true});
    let hipaa = propose(&app, &agent, &hipaa).await;
    let mut plain = common::proposal_body("a1");
    plain["compliance_context"] = json!({"gdpr": false, "hipaa": false});
    let plain = propose(&app, &agent, &plain).await;
    let viewed = |id: String| {
        let app = &app;
        async move {
            app.services
                .trail(&Principal::Operator, "proposal", &id)
                .await
                .expect("trail")
                .into_iter()
                .filter(|e| e.action == "proposal.viewed")
                .collect::<Vec<_>>()
        }
    };
    assert!(viewed(hipaa.clone()).await.is_empty(), "not opened yet");

    rev.page(&format!("/proposals/{hipaa}")).await;
    let rows = viewed(hipaa.clone()).await;
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(
        (rows[0].actor.as_str(), rows[0].actor_kind.to_string()),
        ("rev", "user".into())
    );
    assert_eq!(rows[0].details["compliance"], json!(["hipaa"]));
    assert_eq!(rows[0].details["agent"], "a1");

    rev.page(&format!("/proposals/{plain}")).await;
    assert!(viewed(plain).await.is_empty());
    assert_eq!(
        app.count("select count(*) from audit_events where action = 'proposal.viewed'")
            .await,
        1
    );
}

/// `GET /events/proposals/{id}`: only people who may open the proposal get its stream, and a
/// colleague's decision sends a `change` the page refetches on.
async fn an_open_page_hears_when_its_proposal_moves(backend: &str) {
    let app = TestApp::spawn(backend).await;
    let agent = app.agent_token("sales-agent").await;
    let id = propose(&app, &agent, &common::proposal_body("sales-agent")).await;
    let path = format!("/events/proposals/{id}");
    assert_eq!(
        app.browser().get(&path).await.status(),
        StatusCode::UNAUTHORIZED
    );
    let outsider = reviewer(&app, "bill").await;
    app.services
        .set_domains(&Principal::Operator, "bill", Some(vec!["billing".into()]))
        .await
        .expect("domains");
    assert_eq!(outsider.get(&path).await.status(), StatusCode::NOT_FOUND);
    let unknown = format!("/events/proposals/{}", uuid::Uuid::now_v7());
    let watcher = reviewer(&app, "rita").await;
    assert_eq!(watcher.get(&unknown).await.status(), StatusCode::NOT_FOUND);

    let mut stream = watcher.get(&path).await;
    assert_eq!(stream.status(), StatusCode::OK);
    assert!(
        stream.headers()["content-type"]
            .to_str()
            .expect("type")
            .starts_with("text/event-stream")
    );
    let colleague = reviewer(&app, "sam").await;
    colleague
        .decide(&id, "rejected", Some("Not this week."))
        .await;
    assert_eq!(
        app.poll(&agent, &id).await.1["proposal"]["status"],
        "rejected"
    );
    assert!(next_change(&mut stream).await.contains("data: rejected"));
    // A page that still shows `pending` (it rendered before the decision, or its browser
    // reconnected) hears at once; one showing the status as it is hears nothing yet.
    let mut behind = watcher.get(&format!("{path}?seen=pending")).await;
    assert_eq!(behind.status(), StatusCode::OK);
    assert!(next_change(&mut behind).await.contains("data: rejected"));
}

/// `GET /events/desk`: every open queue, of every session, hears each change on the desk (one
/// watcher per instance fans the chain's head out to them all); only signed-in people get
/// the stream.
async fn open_queues_hear_each_change_on_the_desk(backend: &str) {
    let app = TestApp::spawn(backend).await;
    let agent = app.agent_token("sales-agent").await;
    assert_eq!(
        app.browser().get("/events/desk").await.status(),
        StatusCode::UNAUTHORIZED
    );
    let (rita, sam) = (reviewer(&app, "rita").await, reviewer(&app, "sam").await);
    let mut streams = vec![
        rita.get("/events/desk").await,
        rita.get("/events/desk").await,
        sam.get("/events/desk").await,
    ];
    for stream in &streams {
        assert_eq!(stream.status(), StatusCode::OK);
    }
    let id = propose(&app, &agent, &common::proposal_body("sales-agent")).await;
    let mut heads = Vec::new();
    for stream in &mut streams {
        heads.push(head_of(&next_change(stream).await));
    }
    let proposed = heads[0];
    sam.decide(&id, "rejected", Some("Not this week.")).await;
    let mut latest = proposed;
    for (stream, before) in streams.iter_mut().zip(heads) {
        let after = head_of(&next_change(stream).await);
        assert!(after > before, "the head moved on: {before} -> {after}");
        latest = after;
    }
    // A queue whose rows were read before the decision (`seen`: the head then) hears at once,
    // with the head as it is now.
    let mut behind = rita.get(&format!("/events/desk?seen={proposed}")).await;
    assert_eq!(behind.status(), StatusCode::OK);
    assert_eq!(head_of(&next_change(&mut behind).await), latest);
    // One read at the head as it is hears the next change, and nothing before it.
    let mut current = sam.get(&format!("/events/desk?seen={latest}")).await;
    let second = propose(&app, &agent, &common::proposal_body("sales-agent")).await;
    assert_ne!(second, id);
    assert!(head_of(&next_change(&mut current).await) > latest);
}

/// The seq a desk `change` event carries.
fn head_of(event: &str) -> i64 {
    let data = event.split("data: ").nth(1).expect("data");
    data.trim().parse().expect("a seq")
}

/// The next `change` event of a page's stream, whole.
async fn next_change(stream: &mut reqwest::Response) -> String {
    let mut text = String::new();
    loop {
        if let Some(start) = text.find("event: change")
            && let Some(end) = text[start..].find("\n\n")
        {
            return text[start..start + end].to_owned();
        }
        let chunk = tokio::time::timeout(std::time::Duration::from_secs(10), stream.chunk())
            .await
            .expect("a change in time")
            .expect("chunk")
            .expect("the stream stays open");
        text.push_str(std::str::from_utf8(&chunk).expect("utf-8"));
    }
}
