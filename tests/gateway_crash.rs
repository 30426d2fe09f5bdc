//! A Countersign killed with SIGKILL while the gateway's built-in executor waits on an upstream
//! call leaves the command `outcome_unknown` once its lease lapses: never silently run again.
//! The real server binary, a real MCP upstream (`tests/mcp/upstream_server.py`, the official
//! Python SDK's server) and the Python SDK as the agent; on SQLite and PostgreSQL.

mod common;

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use tokio::process::Command;

const POLICY: &str = r#"
[agents.coder]
description = "A coding agent behind the gateway."
domains = ["files"]

[tools."notes.append_note"]
description = "Annotated read-only by the test's upstream: accepted outright."
category = "A"
tool_category = "public_read"
risk = "low"
"#;

/// How long any one step may take (a lease lapses after 30 s).
const LIMIT: Duration = Duration::from_secs(120);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_cut_by_sigkill_ends_outcome_unknown_and_never_runs_twice() {
    for backend in ["sqlite", "postgres"] {
        cut_by_sigkill(backend).await;
    }
}

async fn wait_for(what: &str, mut done: impl AsyncFnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + LIMIT;
    while !done().await {
        assert!(tokio::time::Instant::now() < deadline, "never: {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn cut_by_sigkill(backend: &str) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let python = root.join(".tools/mcp/bin/python");
    assert!(
        python.exists(),
        "{} is missing: run `scripts/setup --test` (it installs the official MCP client)",
        python.display()
    );
    let (db, _db_dir) = common::fresh_database(backend);
    let dir = tempfile::tempdir().expect("dir");
    let notes = dir.path().join("upstream");
    std::fs::create_dir(&notes).expect("upstream dir");
    std::fs::write(notes.join("description.txt"), "Append a note.").expect("write");
    std::fs::write(notes.join("readonly"), "").expect("flag");
    std::fs::write(notes.join("block"), "").expect("flag");
    let policy = dir.path().join("policy.toml");
    std::fs::write(&policy, POLICY).expect("policy");
    let gateway = dir.path().join("gateway.toml");
    std::fs::write(
        &gateway,
        format!(
            "[upstreams.notes]\ncommand = [{python:?}, {script:?}, {notes:?}]\ndomain = \"files\"\n",
            python = python.display().to_string(),
            script = root.join("tests/mcp/upstream_server.py").display().to_string(),
            notes = notes.display().to_string(),
        ),
    )
    .expect("gateway");
    common::run_ok(&db, &["migrate"], None);
    let token = common::run_ok(&db, &["token", "create", "--agent", "coder"], None)
        .trim()
        .to_owned();
    let env = [
        ("COUNTERSIGN_POLICY", policy.as_os_str()),
        ("COUNTERSIGN_GATEWAY", gateway.as_os_str()),
    ];
    let key = dir.path().join("audit.key");
    let served = common::serve_with(&db, &key, "info", &env);
    let (mut server, base) = (served.child, served.base);
    let client = reqwest::Client::new();
    wait_for("the upstream is up", async || {
        let health: serde_json::Value = match client.get(format!("{base}/healthz")).send().await {
            Ok(r) => r.json().await.unwrap_or_default(),
            Err(_) => return false,
        };
        health["gateway"]["notes"] == "up"
    })
    .await;

    // The agent's call is accepted; the executor calls the upstream, which starts and waits.
    let mut agent = Command::new(&python)
        .arg(root.join("tests/mcp/gateway_client.py"))
        .arg(&base)
        .arg(&token)
        .args(["call", "notes__append_note", r#"{"text": "once"}"#])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("python runs");
    wait_for("the upstream call started", async || {
        notes.join("started").exists()
    })
    .await;

    // Countersign dies mid-call; the upstream (its child) loses its client and may finish.
    server.kill().expect("SIGKILL");
    server.wait().expect("reaped");
    let _ = agent.kill().await;
    std::fs::remove_file(notes.join("block")).expect("unblock");

    let served = common::serve_with(&db, &key, "info", &env);
    let (mut server, _base) = (served.child, served.base);
    let unknown = "select count(*) from proposals where tool_name = 'notes.append_note' \
                   and status = 'outcome_unknown'";
    wait_for("the lapsed lease ends outcome_unknown", async || {
        common::count(&db, unknown).await == 1
    })
    .await;
    let leased = common::count(
        &db,
        "select count(*) from audit_events where action = 'command.leased'",
    )
    .await;
    assert_eq!(leased, 1, "leased once; not run again after the restart");
    let attempts = common::count(
        &db,
        "select count(*) from commands where status = 'outcome_unknown' and attempts = 1",
    )
    .await;
    assert_eq!(attempts, 1);
    let written = std::fs::read_to_string(notes.join("notes.txt")).unwrap_or_default();
    assert!(
        written.lines().count() <= 1,
        "run at most once: {written:?}"
    );
    server.kill().expect("stop");
    let _ = server.wait();
}
