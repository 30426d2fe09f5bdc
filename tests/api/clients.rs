//! The example agents against the real server: `examples/python/agent.py` (httpx) and
//! `examples/typescript/agent.ts` (Node's fetch, run by the pinned `tsx`). Each runs as its own
//! process with an agent token; the test reads the JSON line it prints for each step and acts
//! when the agent says it waits: a reviewer approves through the pages, an executor runs the
//! command, and the agent (with `--follow`) reports the run's result and exits 0. A second run
//! with the same idempotency key gets the same proposal back (a replay); the same key with a
//! different body is refused; a rejection reaches the agent with its reason and exit code 4.
//! The TypeScript agent also passes `tsc --noEmit` (strict).
//!
//! These tests never skip: without httpx or the npm packages they fail, naming
//! `scripts/setup --test`, which installs both.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use countersign::domain::principal::Role;
use reqwest::StatusCode;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, BufReader, Lines};
use tokio::process::{Child, ChildStdout, Command};
use tokio::task::JoinHandle;
use uuid::Uuid;

use crate::common::on_both_backends;
use crate::helpers::{PASSWORD, TestApp, location};

on_both_backends!(
    the_python_agent_follows_its_proposal_from_check_to_outcome,
    the_typescript_agent_follows_its_proposal_from_check_to_outcome,
);

/// How long the test waits for the agent's next line, or for it to exit.
const LIMIT: Duration = Duration::from_secs(60);
const AGENT: &str = "sales-agent";

fn example(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("examples")
        .join(path)
}

#[derive(Clone, Copy, Debug)]
enum Client {
    Python,
    TypeScript,
}

impl Client {
    /// The command that starts this agent; panics, naming the setup step, when what it needs
    /// is not installed.
    fn command(self) -> Command {
        match self {
            Client::Python => {
                let pinned = std::fs::read_to_string(example("python/requirements.txt"))
                    .expect("requirements.txt");
                let pinned = pinned
                    .lines()
                    .find_map(|l| l.trim().strip_prefix("httpx=="))
                    .expect("requirements.txt pins httpx")
                    .to_owned();
                let found = std::process::Command::new("python3")
                    .args(["-c", "import httpx; print(httpx.__version__)"])
                    .output()
                    .unwrap_or_else(|e| panic!("cannot run python3: {e}"));
                let found = String::from_utf8_lossy(&found.stdout).trim().to_owned();
                assert_eq!(
                    found, pinned,
                    "python3 lacks httpx {pinned} (found {found:?}): run `scripts/setup --test` \
                     (it runs `pip install -r examples/python/requirements.txt`); this test does \
                     not skip"
                );
                let mut cmd = Command::new("python3");
                cmd.arg(example("python/agent.py"));
                cmd
            }
            Client::TypeScript => {
                let mut cmd = Command::new(npm_bin("tsx"));
                cmd.arg(example("typescript/agent.ts"));
                cmd
            }
        }
    }
}

/// A binary of `examples/typescript/node_modules`; panics, naming the setup step, when absent.
fn npm_bin(name: &str) -> PathBuf {
    let bin = example("typescript/node_modules/.bin").join(name);
    assert!(
        bin.is_file(),
        "{} is missing: run `scripts/setup --test` (it runs `npm ci` in examples/typescript); \
         this test does not skip",
        bin.display()
    );
    bin
}

/// A running example agent: its stdout read line by line, its stderr kept for failures.
struct Agent {
    child: Child,
    lines: Lines<BufReader<ChildStdout>>,
    seen: Vec<Value>,
    stderr: JoinHandle<String>,
    name: String,
}

impl Agent {
    fn start(client: Client, app: &TestApp, token: &str, args: &[&str]) -> Agent {
        let mut cmd = client.command();
        cmd.args(["--url", &app.base, "--agent", AGENT, "--wait", "20"])
            .args(["--timeout", "120"])
            .args(args)
            .env("COUNTERSIGN_TOKEN", token)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        let name = format!("{client:?} agent {args:?}");
        let mut child = cmd.spawn().unwrap_or_else(|e| panic!("{name}: {e}"));
        let lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
        let mut stderr = child.stderr.take().expect("stderr");
        let stderr = tokio::spawn(async move {
            let mut text = String::new();
            let _ = stderr.read_to_string(&mut text).await;
            text
        });
        Agent {
            child,
            lines,
            seen: Vec::new(),
            stderr,
            name,
        }
    }

    /// Everything it printed so far, for failure messages.
    fn story(&self) -> String {
        let lines: Vec<String> = self.seen.iter().map(Value::to_string).collect();
        format!("{}:\n{}", self.name, lines.join("\n"))
    }

    /// The next line of its stdout as JSON, `None` at the end.
    async fn next_line(&mut self) -> Option<Value> {
        let line = tokio::time::timeout(LIMIT, self.lines.next_line())
            .await
            .unwrap_or_else(|_| panic!("no line within {LIMIT:?}; {}", self.story()))
            .expect("read stdout")?;
        let value: Value = serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("not a JSON line ({e}): {line}; {}", self.story()));
        self.seen.push(value.clone());
        Some(value)
    }

    /// Reads lines until the one for `step`, which it returns.
    async fn step(&mut self, step: &str) -> Value {
        loop {
            match self.next_line().await {
                Some(v) if v["step"] == step => return v,
                Some(_) => {}
                None => {
                    let stderr = self.finish().await.1;
                    panic!("ended before step {step:?}; {}\n{stderr}", self.story());
                }
            }
        }
    }

    /// Its exit code, and its stderr.
    async fn finish(&mut self) -> (i32, String) {
        let status = tokio::time::timeout(LIMIT, self.child.wait())
            .await
            .unwrap_or_else(|_| panic!("still running after {LIMIT:?}; {}", self.story()))
            .expect("wait");
        let stderr = (&mut self.stderr).await.unwrap_or_default();
        (status.code().unwrap_or(-1), stderr)
    }

    /// Reads the rest of its output, then asserts that it exited with `code`.
    async fn exits(mut self, code: i32) {
        while self.next_line().await.is_some() {}
        let (status, stderr) = self.finish().await;
        assert_eq!(status, code, "{}\n{stderr}", self.story());
    }
}

async fn the_python_agent_follows_its_proposal_from_check_to_outcome(backend: &str) {
    follows_its_proposal(backend, Client::Python).await;
}

async fn the_typescript_agent_follows_its_proposal_from_check_to_outcome(backend: &str) {
    follows_its_proposal(backend, Client::TypeScript).await;
}

async fn follows_its_proposal(backend: &str, client: Client) {
    // Fails here, naming the setup step, when the agent's packages are missing.
    client.command();
    let app = TestApp::spawn(backend).await;
    let token = app.agent_token(AGENT).await;
    let executor = app.executor_token("crm-executor").await;
    app.user("rev", Role::Reviewer).await;
    let browser = app.browser();
    browser.login("rev", PASSWORD).await;

    // Approved, then run: with --follow the agent waits for the run and prints its result.
    let key = format!("clients-{}", Uuid::new_v4());
    let mut agent = Agent::start(
        client,
        &app,
        &token,
        &["--idempotency-key", &key, "--follow"],
    );
    let check = agent.step("pre_tool_check").await;
    assert_eq!(
        (
            &check["route"],
            &check["gate_decision"],
            &check["execute_allowed"]
        ),
        (&json!("ask"), &json!("fail"), &json!(false)),
        "a write at `user_claimed` needs a person's confirmation; {}",
        agent.story()
    );
    assert_eq!(
        check["hard_blockers"],
        json!(["authorization_below_required"])
    );
    let submitted = agent.step("submitted").await;
    let id = submitted["id"].as_str().expect("id").to_owned();
    assert_eq!(
        (&submitted["status"], &submitted["replayed"]),
        (&json!("pending"), &json!(false))
    );
    assert_eq!(submitted["idempotency_key"], key.as_str());
    assert_eq!(agent.step("waiting").await["id"], id.as_str());
    let r = browser.decide(&id, "approved", None).await;
    assert_eq!(location(&r), format!("/proposals/{id}?notice=approved"));
    let decided = agent.step("decided").await;
    assert_eq!(
        (&decided["status"], &decided["decided_by"]),
        (&json!("approved"), &json!("rev"))
    );
    let (status, leased) = app.lease(&executor).await;
    assert_eq!(status, StatusCode::OK, "{leased}");
    assert_eq!(leased["command"]["proposal_id"], id.as_str());
    assert_eq!(leased["command"]["idempotency_key"], key.as_str());
    let report = json!({"lease_token": leased["lease_token"], "result": {"updated": true}});
    let command = leased["command"]["id"].as_str().expect("command id");
    let (status, body) = app.report(&executor, command, "complete", &report).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let outcome = agent.step("outcome").await;
    assert_eq!(
        (&outcome["status"], &outcome["result"]),
        (&json!("succeeded"), &json!({"updated": true}))
    );
    agent.exits(0).await;

    // The same key again: the same request, so the same proposal comes back, already run.
    let mut again = Agent::start(client, &app, &token, &["--idempotency-key", &key]);
    let submitted = again.step("submitted").await;
    assert_eq!(
        (
            &submitted["id"],
            &submitted["replayed"],
            &submitted["status"]
        ),
        (&json!(id), &json!(true), &json!("succeeded")),
        "{}",
        again.story()
    );
    assert_eq!(again.step("outcome").await["status"], "succeeded");
    again.exits(0).await;
    assert_eq!(app.count("select count(*) from proposals").await, 1);

    // The same key for a different request is refused, and the agent says why.
    let mut changed = Agent::start(
        client,
        &app,
        &token,
        &["--idempotency-key", &key, "--email", "other@example.com"],
    );
    let error = changed.step("error").await;
    assert_eq!(
        (&error["http_status"], &error["code"]),
        (&json!(422), &json!("idempotency_key_reused")),
        "{}",
        changed.story()
    );
    changed.exits(1).await;

    // Rejected: the agent reports the reviewer's reason and exits 4.
    let mut agent = Agent::start(client, &app, &token, &[]);
    let id = agent.step("submitted").await["id"]
        .as_str()
        .expect("id")
        .to_owned();
    agent.step("waiting").await;
    let r = browser
        .decide(&id, "rejected", Some("Wrong customer"))
        .await;
    assert_eq!(location(&r), format!("/proposals/{id}?notice=rejected"));
    let decided = agent.step("decided").await;
    assert_eq!(
        (&decided["status"], &decided["reason"]),
        (&json!("rejected"), &json!("Wrong customer"))
    );
    agent.exits(4).await;
    assert_eq!(app.count("select count(*) from proposals").await, 2);
    assert_eq!(app.lease(&executor).await.0, StatusCode::NO_CONTENT);
}

/// The TypeScript agent typechecks under its strict tsconfig.json.
#[test]
fn the_typescript_agent_typechecks() {
    let out = std::process::Command::new(npm_bin("tsc"))
        .args(["--noEmit", "-p"])
        .arg(example("typescript"))
        .output()
        .expect("run tsc");
    assert!(
        out.status.success(),
        "tsc --noEmit:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}
