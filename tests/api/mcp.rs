//! MCP at `/mcp` with a real client: the official Python SDK (`mcp`, installed by
//! `scripts/setup --test` into `.tools/mcp`) runs `tests/mcp/client.py`, which lists the tools,
//! compares their input schemas with the published ones, and calls each; the test approves the
//! proposal while the client waits in `wait_for_decision`. Without a token nothing answers.
//! A missing client fails the test, naming the setup step; it never skips.

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use countersign::domain::principal::Role;
use reqwest::StatusCode;
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::Command;

use crate::common;
use crate::common::on_both_backends;
use crate::helpers::{PASSWORD, TestApp};

on_both_backends!(an_mcp_client_lists_the_tools_and_calls_each);

const LIMIT: Duration = Duration::from_secs(60);

async fn an_mcp_client_lists_the_tools_and_calls_each(backend: &str) {
    let app = TestApp::spawn(backend).await;
    let token = app.agent_token("sales-agent").await;
    app.user("rev", Role::Reviewer).await;
    let browser = app.browser();
    browser.login("rev", PASSWORD).await;

    // No token, no MCP.
    let r = app
        .client
        .post(app.url("/mcp"))
        .header("Accept", "application/json, text/event-stream")
        .json(&serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}))
        .send()
        .await
        .expect("request");
    assert_eq!(r.status(), StatusCode::UNAUTHORIZED);

    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let python = root.join(".tools/mcp/bin/python");
    assert!(
        python.exists(),
        "{} is missing: run `scripts/setup --test` (it installs the official MCP client)",
        python.display()
    );
    let proposal = common::proposal_body("sales-agent");
    let mut child = Command::new(&python)
        .arg(root.join("tests/mcp/client.py"))
        .arg(&app.base)
        .arg(&token)
        .arg(proposal.to_string())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .expect("python runs");
    let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
    let mut next = async || -> Value {
        let line = tokio::time::timeout(LIMIT, lines.next_line())
            .await
            .expect("the client answers in time")
            .expect("reads")
            .expect("the client printed a line before exiting");
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("{line}: {e}"))
    };

    let tools = next().await;
    assert_eq!(
        tools["names"],
        serde_json::json!([
            "countersign_pre_tool_check",
            "get_proposal",
            "propose_action",
            "wait_for_decision"
        ])
    );
    let check = next().await;
    assert_eq!(check["is_error"], false, "{check}");
    assert_eq!(
        check["gate_decision"], "fail",
        "a validated write is not confirmed"
    );
    assert!(
        check["hard_blockers"]
            .as_array()
            .is_some_and(|b| b.iter().all(Value::is_string))
    );
    let invalid = next().await;
    assert_eq!(invalid["route"], "refuse", "{invalid}");
    assert!(
        invalid["paths"]
            .as_array()
            .is_some_and(|p| p.contains(&"tool_category".into()))
    );
    let proposed = next().await;
    assert_eq!(
        (proposed["is_error"].as_bool(), proposed["status"].as_str()),
        (Some(false), Some("pending")),
        "{proposed}"
    );
    assert_eq!(
        (proposed["replayed"].as_bool(), proposed["same"].as_bool()),
        (Some(true), Some(true))
    );
    let id = proposed["id"].as_str().expect("id").to_owned();
    assert_eq!(next().await["status"], "pending");
    let not_found = next().await;
    assert_eq!(
        (not_found["is_error"].as_bool(), not_found["code"].as_str()),
        (Some(true), Some("not_found"))
    );
    assert_eq!(next().await["step"], "waiting");
    // The client's wait_for_decision is in flight (or about to be): approving wakes it.
    browser.decide(&id, "approved", None).await;
    let decided = next().await;
    assert_eq!(decided["status"], "approved", "{decided}");
    let status = tokio::time::timeout(LIMIT, child.wait())
        .await
        .expect("exits")
        .expect("status");
    assert!(status.success(), "the MCP client failed");
    // Every call went through the agent's own token: the trail names it.
    let checks = app
        .count("select count(*) from audit_events where action like 'pre_tool_check.%' and actor = 'sales-agent'")
        .await;
    assert_eq!(checks, 2);
}
