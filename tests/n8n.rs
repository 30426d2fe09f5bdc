//! The n8n example (`examples/n8n/`) in a real n8n: the pinned npm package `n8n` (installed by
//! `scripts/setup --test` into `.tools/n8n/`) imports the credentials template with a real
//! scoped executor token and the workflow, then runs it from the command line against the real
//! server. The workflow leases the approved command, verifies its grant, runs its harmless local
//! step and reports `complete`; the agent then sees `succeeded` with the result n8n computed.
//! A second run with the queue empty ends cleanly.
//!
//! n8n runs with an empty environment but for what it needs, its own home in a temporary
//! directory, telemetry and update checks off, and nothing listening: `n8n execute` runs the
//! workflow in its own process and talks only to the server on loopback.
//!
//! This test never skips: without n8n it fails, naming `scripts/setup --test`.

mod common;

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use common::browser::Browser;
use common::{fresh_database, run_ok, serve};
use serde_json::{Value, json};

/// The workflow's fixed id in `countersign-executor.workflow.json`.
const WORKFLOW_ID: &str = "csN8nExecutor001";
/// What the credentials template holds in place of the token.
const TOKEN_PLACEHOLDER: &str = "COUNTERSIGN_EXECUTOR_TOKEN";
/// How long one n8n command may take (it loads every node type at start; the machine is slow).
const N8N_LIMIT: Duration = Duration::from_secs(300);
/// The agent's reasoning in `common::proposal_body`: an executor must never see it.
const REASONING: &str = "The customer asked for it in ticket 42.";

fn example(file: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("examples/n8n")
        .join(file)
}

/// The pinned n8n; panics, naming the setup step, when it is not installed.
fn n8n_binary() -> PathBuf {
    let bin = Path::new(env!("CARGO_MANIFEST_DIR")).join(".tools/n8n/node_modules/.bin/n8n");
    assert!(
        bin.is_file(),
        "n8n is not installed at {}: run `scripts/setup --test` (it installs the pinned n8n \
         into .tools/n8n/); this test does not skip",
        bin.display()
    );
    bin
}

/// One n8n CLI run in the n8n home `home`, talking to Countersign at `base`; its stdout, or a
/// panic with everything it printed if it fails or outlives [`N8N_LIMIT`].
async fn n8n(home: &Path, base: &str, lease_wait: u32, args: &[&str]) -> String {
    let mut cmd = tokio::process::Command::new(n8n_binary());
    cmd.args(args)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", home)
        .env("N8N_USER_FOLDER", home)
        .env("DB_TYPE", "sqlite")
        // Nothing leaves the machine, nothing listens beyond loopback.
        .env("N8N_DIAGNOSTICS_ENABLED", "false")
        .env("N8N_VERSION_NOTIFICATIONS_ENABLED", "false")
        .env("N8N_TEMPLATES_ENABLED", "false")
        .env("N8N_PERSONALIZATION_ENABLED", "false")
        .env("N8N_HIRING_BANNER_ENABLED", "false")
        .env("N8N_PUBLIC_API_DISABLED", "true")
        .env("N8N_LISTEN_ADDRESS", "127.0.0.1")
        .env("N8N_HOST", "127.0.0.1")
        .env("N8N_RUNNERS_BROKER_LISTEN_ADDRESS", "127.0.0.1")
        .env("N8N_ENFORCE_SETTINGS_FILE_PERMISSIONS", "true")
        // What the workflow needs: `crypto` in its Code node (grant verification) and `$env`.
        .env("NODE_FUNCTION_ALLOW_BUILTIN", "crypto")
        .env("N8N_BLOCK_ENV_ACCESS_IN_NODE", "false")
        .env("COUNTERSIGN_URL", base)
        .env("COUNTERSIGN_LEASE_WAIT", lease_wait.to_string())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let child = cmd.spawn().unwrap_or_else(|e| panic!("n8n {args:?}: {e}"));
    let out = tokio::time::timeout(N8N_LIMIT, child.wait_with_output())
        .await
        .unwrap_or_else(|_| panic!("n8n {args:?} still ran after {N8N_LIMIT:?}"))
        .unwrap_or_else(|e| panic!("n8n {args:?}: {e}"));
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(
        out.status.success(),
        "n8n {args:?} failed ({}):\n{stdout}\n{stderr}",
        out.status
    );
    stdout
}

/// The proposal as its agent sees it.
async fn poll(client: &reqwest::Client, base: &str, agent: &str, id: &str) -> Value {
    client
        .get(format!("{base}/api/v1/proposals/{id}"))
        .bearer_auth(agent)
        .send()
        .await
        .expect("poll")
        .json()
        .await
        .expect("json")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn n8n_leases_verifies_runs_and_completes_an_approved_command() {
    n8n_binary();
    let (db, dir) = fresh_database("sqlite");
    let dir = dir.expect("temp dir");
    run_ok(&db, &["migrate"], None);
    run_ok(
        &db,
        &[
            "user",
            "add",
            "--username",
            "rev",
            "--role",
            "reviewer",
            "--password-stdin",
        ],
        Some("a long enough password\n"),
    );
    let agent = run_ok(&db, &["token", "create", "--agent", "agent-a"], None);
    let agent = agent.trim();
    let executor = run_ok(
        &db,
        &["token", "create", "--executor", "n8n", "--tools", "crm.*"],
        None,
    );
    let executor = executor.trim();
    let served = serve(&db, &dir.path().join("audit.key"), "info");
    let (mut server, base) = (served.child, served.base);

    // An agent proposes; a reviewer approves through the pages.
    let client = reqwest::Client::new();
    let body = common::proposal_body("agent-a");
    let id = body["proposal_id"].as_str().expect("id").to_owned();
    let r = client
        .post(format!("{base}/api/v1/proposals"))
        .bearer_auth(agent)
        .json(&body)
        .send()
        .await
        .expect("propose");
    assert_eq!(
        r.status().as_u16(),
        201,
        "{}",
        r.text().await.unwrap_or_default()
    );
    let browser = Browser::new(&base);
    browser.login("rev", "a long enough password").await;
    browser.decide(&id, "approved", None).await;
    let polled = poll(&client, &base, agent, &id).await;
    assert_eq!(polled["proposal"]["status"], "approved", "{polled:#}");
    assert_eq!(polled["proposal"]["execution"]["status"], "queued");
    let command_id = polled["proposal"]["execution"]["command_id"]
        .as_str()
        .expect("command id")
        .to_owned();

    // n8n: the credential from the template with the real token, the workflow as shipped.
    let home = tempfile::tempdir().expect("n8n home");
    let template = std::fs::read_to_string(example("countersign-executor.credentials.json"))
        .expect("credentials template");
    assert_eq!(template.matches(TOKEN_PLACEHOLDER).count(), 1);
    let credentials = home.path().join("credentials.json");
    std::fs::write(&credentials, template.replace(TOKEN_PLACEHOLDER, executor))
        .expect("credentials");
    let workflow = example("countersign-executor.workflow.json");
    let shipped: Value =
        serde_json::from_str(&std::fs::read_to_string(&workflow).expect("workflow")).expect("json");
    assert_eq!(shipped["id"], WORKFLOW_ID);
    let input = |p: &Path| format!("--input={}", p.display());
    n8n(
        home.path(),
        &base,
        0,
        &["import:credentials", &input(&credentials)],
    )
    .await;
    std::fs::remove_file(&credentials).expect("the token leaves the disk");
    n8n(
        home.path(),
        &base,
        0,
        &["import:workflow", &input(&workflow)],
    )
    .await;
    let ran = n8n(
        home.path(),
        &base,
        10,
        &["execute", &format!("--id={WORKFLOW_ID}")],
    )
    .await;

    // The agent sees the result n8n computed from the command's fields.
    let polled = poll(&client, &base, agent, &id).await;
    let proposal = &polled["proposal"];
    assert_eq!(proposal["status"], "succeeded", "{polled:#}\n{ran}");
    assert_eq!(proposal["execution"]["command_id"], command_id.as_str());
    assert_eq!(
        proposal["execution"]["result"],
        json!({
            "ran_by": "n8n",
            "tool": "crm.update_contact",
            "version": "2024-01",
            "idempotency_key": body["idempotency_key"],
            "parameter_names": ["contact_id", "email"],
            "targets": ["crm_contact:c-123"],
        })
    );
    // n8n printed every node's output, the leased command among them, and never the agent's
    // reasoning: Countersign does not send it.
    assert!(ran.contains(&command_id), "{ran}");
    assert!(ran.contains("Report complete"), "{ran}");
    assert!(
        !ran.contains(REASONING),
        "n8n received the agent's reasoning"
    );

    // With nothing queued the workflow ends cleanly on the 204.
    let idle = n8n(
        home.path(),
        &base,
        0,
        &["execute", &format!("--id={WORKFLOW_ID}")],
    )
    .await;
    assert!(idle.contains("Nothing to run"), "{idle}");
    assert!(!idle.contains("Report complete"), "{idle}");

    server.kill().expect("stop");
    server.wait().expect("reaped");
}
