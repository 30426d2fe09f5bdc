//! Audit-safe by construction: personal data and a secret planted in a proposal's parameters,
//! intent and targets, in a pre-tool-check's free text and arguments, in rejected inputs, in a
//! reviewer's reason, an executor's report and an erasure reason never appear in any audit
//! row, log line (at `debug`), export bundle or compliance page. Then GDPR erasure removes
//! them from the proposal and its command, and the chain still verifies. The real server
//! binary, on both backends.

mod common;

use common::browser::{Browser, location};
use common::{run_ok, serve};
use serde_json::{Value, json};

/// Values no audit row, log line, export or chart may contain.
const PLANTED: [&str; 5] = [
    "Zorblax",
    "Quuxington",
    "XJ9-syndrome",
    "planted-secret-7f3a9",
    "77 Wobble Lane",
];
const PASSWORD: &str = "correct horse battery staple";

fn assert_clean(what: &str, text: &str) {
    for p in PLANTED {
        assert!(!text.contains(p), "{what} contains the planted value {p:?}");
    }
}

fn planted_proposal(agent: &str) -> Value {
    let mut body = common::proposal_body(agent);
    body["intent"] = json!({
        "summary": "Book Zorblax Quuxington at 77 Wobble Lane",
        "reasoning": "Follow-up for XJ9-syndrome"
    });
    body["parameters"] = json!({
        "patient": "Zorblax Quuxington",
        "address": "77 Wobble Lane",
        "diagnosis": "XJ9-syndrome",
        "note": "planted-secret-7f3a9"
    });
    body["target_refs"] = json!([{"type": "patient", "id": "Zorblax"}]);
    body
}

fn planted_check() -> Value {
    json!({
        "request_id": "req-Zorblax-1",
        "agent_id": "agent-a",
        "user_intent": "Call Zorblax Quuxington about XJ9-syndrome",
        "authorization_subject": {"subject_type": "user", "subject_ref": "Quuxington"},
        "tool_name": "calendar.create_event",
        "tool_category": "write",
        "authorization_state": "validated",
        "evidence_refs": ["chart of Zorblax at 77 Wobble Lane"],
        "risk_domain": "healthcare",
        "proposed_arguments": {"who": "Zorblax Quuxington", "key": "planted-secret-7f3a9"},
        "recommended_route": "ask"
    })
}

async fn sign_in(base: &str, user: &str) -> Browser {
    let b = Browser::new(base);
    let r = b.login(user, PASSWORD).await;
    assert_eq!(location(&r), "/", "{user} signs in");
    b
}

async fn post(client: &reqwest::Client, url: String, token: &str, body: &Value) -> Value {
    let r = client
        .post(url)
        .bearer_auth(token)
        .json(body)
        .send()
        .await
        .expect("request");
    let status = r.status();
    let v: Value = r.json().await.unwrap_or(Value::Null);
    assert!(status.is_success(), "{status}: {v}");
    v
}

/// Drives every flow that records something with the planted values in it.
async fn drive(base: &str, agent: &str, executor: &str) -> String {
    let http = reqwest::Client::new();
    let api = |p: &str| format!("{base}/api/v1{p}");
    let proposal = planted_proposal("agent-a");
    let id = proposal["proposal_id"].as_str().expect("id").to_owned();
    post(&http, api("/proposals"), agent, &proposal).await;
    post(&http, api("/pre-tool-check"), agent, &planted_check()).await;
    // Rejected inputs: a bad enum next to planted values, a broken pre-tool-check.
    let mut bad = planted_proposal("agent-a");
    bad["risk_level"] = json!("Zorblax");
    let r = http
        .post(api("/proposals"))
        .bearer_auth(agent)
        .json(&bad)
        .send()
        .await;
    assert_eq!(r.expect("send").status().as_u16(), 422);
    let mut bad_check = planted_check();
    bad_check["tool_category"] = json!("Quuxington");
    let r = http
        .post(api("/pre-tool-check"))
        .bearer_auth(agent)
        .json(&bad_check)
        .send()
        .await;
    assert_eq!(r.expect("send").status().as_u16(), 422);

    let admin = sign_in(base, "ada").await;
    let r = admin
        .decide(&id, "approved", Some("Fine for Zorblax Quuxington"))
        .await;
    assert!(location(&r).contains("notice=approved"), "{}", location(&r));
    let leased = post(&http, api("/executor/lease"), executor, &json!({})).await;
    let command = leased["command"]["id"]
        .as_str()
        .expect("command")
        .to_owned();
    let token = leased["lease_token"].as_str().expect("lease token");
    let report = json!({"lease_token": token, "result": {"booked": "Zorblax at 77 Wobble Lane"}});
    post(
        &http,
        api(&format!("/executor/commands/{command}/complete")),
        executor,
        &report,
    )
    .await;

    // An admin opens it (a GDPR proposal: the view is recorded) and erases it.
    let page = format!("/proposals/{id}");
    let html = admin.page(&page).await;
    assert!(
        html.contains("Zorblax"),
        "the reviewer sees the values before erasure"
    );
    let csrf = admin.csrf(&page).await;
    let form = [
        ("csrf_token", csrf.as_str()),
        ("id", id.as_str()),
        ("reason", "Erasure request, ticket Zorblax-4711"),
    ];
    let r = admin.post_form("/fn/erase_proposal", &page, &form).await;
    assert!(location(&r).contains("notice=erased"), "{}", location(&r));
    let html = admin.page(&page).await;
    assert!(html.contains("[erased]"), "the page shows the erasure");
    // Everything but the erasure's own reason (shown on the page by design) is gone.
    for p in [
        "Quuxington",
        "XJ9-syndrome",
        "planted-secret-7f3a9",
        "77 Wobble Lane",
    ] {
        assert!(
            !html.contains(p),
            "erased value {p:?} still on the proposal page"
        );
    }
    // The agent and the executor see the erased values too.
    let polled = http
        .get(api(&format!("/proposals/{id}")))
        .bearer_auth(agent)
        .send()
        .await;
    assert_clean(
        "the agent's poll after erasure",
        &polled.expect("poll").text().await.expect("body"),
    );

    // The compliance pages, as a compliance officer.
    let officer = sign_in(base, "cora").await;
    for path in ["/audit", "/audit?tool=crm.update_contact", "/audit/charts"] {
        assert_clean(path, &officer.page(path).await);
    }
    assert_clean(
        "the timeline",
        &officer.page(&format!("/audit/proposals/{id}")).await,
    );
    id
}

async fn planted_values_stay_out_of_the_trail(backend: &str) {
    let (db, dir) = common::fresh_database(backend);
    let keys = tempfile::tempdir().expect("temp dir");
    run_ok(&db, &["migrate"], None);
    for (user, role) in [("ada", "admin"), ("cora", "compliance")] {
        let args = [
            "user",
            "add",
            "--username",
            user,
            "--role",
            role,
            "--password-stdin",
        ];
        run_ok(&db, &args, Some(&format!("{PASSWORD}\n")));
    }
    let agent = run_ok(&db, &["token", "create", "--agent", "agent-a"], None);
    let executor = run_ok(
        &db,
        &["token", "create", "--executor", "exec-1", "--tools", "*"],
        None,
    );
    let mut served = serve(&db, &keys.path().join("audit.key"), "debug");
    drive(&served.base, agent.trim(), executor.trim()).await;
    served.child.kill().expect("stop");
    served.child.wait().expect("reaped");
    let log = served.log.lock().expect("log").join("\n");
    assert!(log.contains("proposal received"), "the log was captured");
    assert_clean("the server log", &log);

    let out = keys.path().join("export");
    run_ok(
        &db,
        &["audit", "export", "--out", out.to_str().expect("path")],
        None,
    );
    let mut exported = 0;
    for file in std::fs::read_dir(&out).expect("bundle") {
        let text = std::fs::read_to_string(file.expect("file").path()).expect("text");
        assert_clean("the export", &text);
        exported += text.len();
    }
    assert!(exported > 0);
    let events = std::fs::read_to_string(out.join("events.jsonl")).expect("events");
    let by = |kind: &str, actor: &str| {
        events.lines().any(|l| {
            let v: Value = serde_json::from_str(l).expect("json");
            v["kind"] == kind && v["actor"] == actor
        })
    };
    // HIPAA/GDPR enhanced logging, the erasure, sign-ins and the decision are all there.
    for (kind, actor) in [
        ("proposal.viewed", "ada"),
        ("proposal.erased", "ada"),
        ("proposal.approved", "ada"),
        ("auth.signed_in", "cora"),
        ("pre_tool_check.decided", "agent-a"),
        ("proposal.rejected_input", "agent-a"),
        ("command.succeeded", "exec-1"),
    ] {
        assert!(by(kind, actor), "{backend}: no {kind} by {actor}");
    }
    let verified = run_ok(&db, &["audit", "verify"], None);
    assert!(verified.starts_with("ok:"), "{verified}");
    let bundle = run_ok(
        &db,
        &["audit", "verify", "--bundle", out.to_str().expect("path")],
        None,
    );
    assert!(bundle.starts_with("ok:"), "{bundle}");
    drop(dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn planted_values_stay_out_of_the_trail_on_sqlite() {
    planted_values_stay_out_of_the_trail("sqlite").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn planted_values_stay_out_of_the_trail_on_postgres() {
    planted_values_stay_out_of_the_trail("postgres").await;
}
