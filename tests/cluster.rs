//! The production shape, for real: `scripts/cluster` starts three instances on one PostgreSQL
//! database behind HAProxy with `deploy/haproxy.cfg` (the file the docs tell operators to use).
//! Through the balancer only: every instance answers; a reviewer signed in on one instance
//! decides on the others (sessions and CSRF tokens live in the database); agents submit and wait,
//! an executor leases and completes; an instance killed with SIGKILL mid-run costs no request
//! (the balancer retries the connection elsewhere and takes the instance out); every command
//! runs exactly once; the trail verifies; and the restarted instance is taken back.

mod common;

use std::collections::{BTreeSet, HashSet};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use common::browser::Browser;

const PASSWORD: &str = "correct horse battery staple";
const PROPOSALS: usize = 24;

/// A running cluster; stopped when dropped, so a failing test leaves no process behind.
struct Cluster {
    dir: tempfile::TempDir,
    port: u16,
    db: String,
}

impl Cluster {
    fn script(&self, args: &[&str]) -> std::process::Output {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        Command::new(root.join("scripts/cluster"))
            .args(args)
            .env("BIN", PathBuf::from(env!("CARGO_BIN_EXE_countersign")))
            .env("CLUSTER_DIR", self.dir.path())
            .env("CLUSTER_PORT", self.port.to_string())
            .env("CLUSTER_DATABASE_URL", &self.db)
            .env_remove("RUST_LOG")
            .output()
            .expect("scripts/cluster runs")
    }

    fn run(&self, args: &[&str]) -> String {
        let out = self.script(args);
        assert!(
            out.status.success(),
            "scripts/cluster {args:?}: {}\n{}",
            String::from_utf8_lossy(&out.stderr),
            self.logs()
        );
        String::from_utf8(out.stdout).expect("utf-8")
    }

    /// Every log the cluster wrote (for a failure's message).
    fn logs(&self) -> String {
        let mut all = String::new();
        for entry in std::fs::read_dir(self.dir.path()).expect("dir").flatten() {
            let path = entry.path();
            if path.extension().is_some_and(|e| e == "log") {
                let text = std::fs::read_to_string(&path).unwrap_or_default();
                let tail: Vec<&str> = text.lines().rev().take(20).collect();
                all.push_str(&format!("--- {}\n", path.display()));
                for line in tail.into_iter().rev() {
                    all.push_str(line);
                    all.push('\n');
                }
            }
        }
        all
    }

    fn base(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let _ = self.script(&["stop"]);
    }
}

/// Which instance answered a `GET /healthz` through the balancer.
async fn instance(client: &reqwest::Client, base: &str) -> String {
    let r = client
        .get(format!("{base}/healthz"))
        .send()
        .await
        .expect("the balancer answers");
    assert_eq!(r.status().as_u16(), 200, "healthz through the balancer");
    r.headers()
        .get("countersign-instance")
        .and_then(|v| v.to_str().ok())
        .expect("Countersign-Instance")
        .to_owned()
}

/// The instances that answer `n` requests through the balancer.
async fn answering(client: &reqwest::Client, base: &str, n: usize) -> BTreeSet<String> {
    let mut seen = BTreeSet::new();
    for _ in 0..n {
        seen.insert(instance(client, base).await);
    }
    seen
}

async fn submit(client: &reqwest::Client, base: &str, agent: &str) -> String {
    let body = common::proposal_body("agent-a");
    let r = client
        .post(format!("{base}/api/v1/proposals"))
        .bearer_auth(agent)
        .json(&body)
        .send()
        .await
        .expect("submit");
    assert_eq!(r.status().as_u16(), 201, "submitted through the balancer");
    body["proposal_id"].as_str().expect("id").to_owned()
}

/// Leases every ready command and completes it; the proposals run.
async fn run_commands(client: &reqwest::Client, base: &str, executor: &str) -> Vec<String> {
    let mut ran = Vec::new();
    loop {
        let r = client
            .post(format!("{base}/api/v1/executor/lease"))
            .bearer_auth(executor)
            .json(&json!({"lease_seconds": 60}))
            .send()
            .await
            .expect("lease");
        if r.status().as_u16() == 204 {
            return ran;
        }
        assert_eq!(r.status().as_u16(), 200, "lease through the balancer");
        let v: Value = r.json().await.expect("json");
        let command = v["command"]["id"].as_str().expect("command").to_owned();
        let token = v["lease_token"].as_str().expect("token");
        let done = client
            .post(format!(
                "{base}/api/v1/executor/commands/{command}/complete"
            ))
            .bearer_auth(executor)
            .json(&json!({"lease_token": token, "result": {"ok": true}}))
            .send()
            .await
            .expect("complete");
        assert_eq!(done.status().as_u16(), 200, "complete");
        ran.push(v["command"]["proposal_id"].as_str().expect("id").to_owned());
    }
}

/// The proposal's status, waiting up to 10 s for it to leave `approved`/`executing`.
async fn final_status(client: &reqwest::Client, base: &str, agent: &str, id: &str) -> String {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let v: Value = client
            .get(format!("{base}/api/v1/proposals/{id}?wait=5"))
            .bearer_auth(agent)
            .send()
            .await
            .expect("poll")
            .json()
            .await
            .expect("json");
        let status = v["proposal"]["status"].as_str().unwrap_or_default();
        if !matches!(status, "approved" | "executing" | "pending") || Instant::now() > deadline {
            return status.to_owned();
        }
    }
}

/// The balancer's configuration (`deploy/haproxy.cfg`) outlasts every request Countersign
/// holds open: an idle side is cut only after longer than the longest long poll (`?wait=`, an
/// executor's lease `wait`), the gateway's default hold, and the event streams' keep-alive.
#[test]
fn the_balancers_timeouts_outlast_every_wait() {
    let cfg =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy/haproxy.cfg"))
            .expect("deploy/haproxy.cfg");
    let seconds = |key: &str| -> u64 {
        let line = cfg
            .lines()
            .map(str::trim)
            .find_map(|l| l.strip_prefix(&format!("timeout {key} ")))
            .unwrap_or_else(|| panic!("`timeout {key}` in deploy/haproxy.cfg"));
        line.trim()
            .strip_suffix('s')
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("`timeout {key} {line}` in whole seconds"))
    };
    let longest = [
        countersign::service::MAX_WAIT.as_secs(),
        countersign::domain::command::MAX_LEASE_WAIT_SECONDS,
        countersign::domain::gateway::config::DEFAULT_HOLD.as_secs(),
        15, // axum's keep-alive comment on an event stream
    ]
    .into_iter()
    .max()
    .unwrap_or(0);
    for key in ["client", "server"] {
        assert!(
            seconds(key) >= longest + 10,
            "`timeout {key}` must outlast the longest wait ({longest} s) with room to spare"
        );
    }
}

/// The proposals an agent's event stream tells `succeeded`, read until there are `n` of them
/// (10 s at most).
async fn succeeded_on(stream: &mut reqwest::Response, n: usize) -> BTreeSet<String> {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    let (mut text, mut told) = (String::new(), BTreeSet::new());
    while told.len() < n {
        let chunk = tokio::time::timeout_at(deadline, stream.chunk())
            .await
            .unwrap_or_else(|_| panic!("{} of {n} successes told in time", told.len()))
            .expect("reads")
            .expect("the stream stays open");
        text.push_str(&String::from_utf8_lossy(&chunk));
        while let Some(end) = text.find("\n\n") {
            let frame: String = text.drain(..end + 2).collect();
            let data = frame.lines().find_map(|l| l.strip_prefix("data: "));
            let Some(v) = data.and_then(|d| serde_json::from_str::<Value>(d).ok()) else {
                continue;
            };
            if v["proposal"]["status"] == "succeeded"
                && let Some(id) = v["proposal"]["id"].as_str()
            {
                told.insert(id.to_owned());
            }
        }
    }
    told
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_instances_behind_haproxy_act_as_one_and_survive_a_kill() {
    let cluster = Cluster {
        dir: tempfile::tempdir().expect("dir"),
        port: common::free_ports(),
        db: format!(
            "{}/cs_test_cluster_{}",
            common::pg_base(),
            uuid::Uuid::new_v4().simple()
        ),
    };
    let printed = cluster.run(&["start"]);
    let base = cluster.base();
    assert_eq!(printed.trim(), format!("{base}/"));
    let db = cluster.db.clone();
    let cli = |args: &[&str], stdin: Option<&str>| common::run_ok(&db, args, stdin);
    let agent = cli(&["token", "create", "--agent", "agent-a"], None);
    let executor = common::executor_token(&db, "runner");
    let (agent, executor) = (agent.trim(), executor.as_str());
    common::add_reviewer(&db, "rita", PASSWORD);

    let client = reqwest::Client::new();
    let all: BTreeSet<String> = ["cs1", "cs2", "cs3"].map(String::from).into();
    assert_eq!(
        answering(&client, &base, 30).await,
        all,
        "every instance answers"
    );

    // A reviewer signs in once; the decisions land on whichever instance the balancer picks.
    let rita = Browser::new(&base);
    assert!(rita.login("rita", PASSWORD).await.status().is_redirection());
    let mut ids = Vec::new();
    for i in 0..PROPOSALS {
        if i == PROPOSALS / 2 {
            // SIGKILL mid-run: no request fails, the balancer takes the instance out.
            cluster.run(&["kill", "2"]);
        }
        let id = submit(&client, &base, agent).await;
        let decided = rita.decide(&id, "approved", None).await;
        assert!(
            decided.status().is_redirection(),
            "decided through the balancer"
        );
        ids.push(id);
    }
    let without: BTreeSet<String> = ["cs1", "cs3"].map(String::from).into();
    assert_eq!(answering(&client, &base, 20).await, without, "cs2 is out");
    let status = cluster.run(&["status"]);
    assert!(
        status.contains("instance 2") && status.contains("down"),
        "{status}"
    );

    // Every approved command runs once, leased through the balancer.
    let ran = run_commands(&client, &base, executor).await;
    let unique: HashSet<&String> = ran.iter().collect();
    assert_eq!(ran.len(), PROPOSALS, "every command ran");
    assert_eq!(unique.len(), PROPOSALS, "none ran twice");
    for id in &ids {
        assert_eq!(final_status(&client, &base, agent, id).await, "succeeded");
    }

    // The instance comes back and is taken back.
    cluster.run(&["restart", "2"]);
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let seen = answering(&client, &base, 12).await;
        if seen == all {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "cs2 was not taken back: {seen:?} answered"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    let verified = cli(&["audit", "verify"], None);
    assert!(verified.starts_with("ok: "), "{verified}");

    // The agent's event stream through the balancer tells each move as it happens (the
    // balancer passes server-sent events through, unbuffered): one more proposal, approved
    // and run, is told `succeeded` on it.
    let mut stream = (client.get(format!("{base}/api/v1/events")))
        .bearer_auth(agent)
        .send()
        .await
        .expect("stream");
    assert_eq!(stream.status(), reqwest::StatusCode::OK);
    let id = submit(&client, &base, agent).await;
    let decided = rita.decide(&id, "approved", None).await;
    assert!(decided.status().is_redirection());
    assert_eq!(run_commands(&client, &base, executor).await.len(), 1);
    let told = succeeded_on(&mut stream, 1).await;
    assert_eq!(told, BTreeSet::from([id]), "the stream told the success");

    cluster.run(&["stop"]);
    assert!(
        client.get(format!("{base}/healthz")).send().await.is_err(),
        "stopped"
    );
}
