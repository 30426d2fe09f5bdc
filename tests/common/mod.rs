//! Shared test helpers: fresh databases on either backend and sample proposals.
#![allow(dead_code, reason = "each test binary uses a different subset")]

pub mod aana;
pub mod browser;
pub mod clock;

use countersign::domain::principal::Principal;
use std::io::{BufRead, BufReader};
use std::process::{Child, Command as Process, Stdio};
use std::sync::{Arc, Condvar, Mutex};

use assert_cmd::cargo::CommandCargoExt;
use serde_json::{Value, json};
use uuid::Uuid;

/// The `countersign` binary on `db`, logging JSON lines.
pub fn countersign(db: &str) -> Process {
    let mut cmd = Process::cargo_bin("countersign").expect("binary");
    cmd.env("COUNTERSIGN_DATABASE_URL", db)
        .env_remove("RUST_LOG")
        .env("COUNTERSIGN_LOG_FORMAT", "json");
    cmd
}

/// A token for executor `name` scoped to the tools `crm.*` (those the tests' proposals name),
/// made with the CLI on `db`.
pub fn executor_token(db: &str, name: &str) -> String {
    let args = ["token", "create", "--executor", name, "--tools", "crm.*"];
    run_ok(db, &args, None).trim().to_owned()
}

/// Adds reviewer `username` signing in with `password`, with the CLI on `db`.
pub fn add_reviewer(db: &str, username: &str, password: &str) {
    let args = [
        "user",
        "add",
        "--username",
        username,
        "--role",
        "reviewer",
        "--password-stdin",
    ];
    run_ok(db, &args, Some(&format!("{password}\n")));
}

/// Runs a `countersign` command on `db` and returns its stdout; panics with its stderr if it
/// fails.
pub fn run_ok(db: &str, args: &[&str], stdin: Option<&str>) -> String {
    use std::io::Write;
    let mut child = countersign(db)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    if let Some(input) = stdin {
        child
            .stdin
            .take()
            .expect("stdin")
            .write_all(input.as_bytes())
            .expect("write stdin");
    }
    let out = child.wait_with_output().expect("run");
    assert!(
        out.status.success(),
        "countersign {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("utf-8")
}

/// A running `countersign serve`, its base URL and every log line it wrote so far.
pub struct Served {
    /// The process.
    pub child: Child,
    /// `http://127.0.0.1:PORT`.
    pub base: String,
    /// Its log (stderr), line by line.
    pub log: Arc<Mutex<Vec<String>>>,
    /// Notified at every line the log gains.
    logged: Arc<Condvar>,
}

impl Served {
    /// Waits until the log has a line containing `needle` (answers it), or `None` once
    /// `deadline` has passed without one.
    pub fn wait_for_line(&self, needle: &str, deadline: std::time::Duration) -> Option<String> {
        self.wait_until(deadline, |lines| {
            lines.iter().find(|l| l.contains(needle)).cloned()
        })
    }

    /// Waits until the log has `n` lines containing `needle`; answers how many it has (fewer
    /// than `n` once `deadline` has passed).
    pub fn wait_for_lines(&self, needle: &str, n: usize, deadline: std::time::Duration) -> usize {
        let count = |lines: &[String]| lines.iter().filter(|l| l.contains(needle)).count();
        (self.wait_until(deadline, |lines| Some(count(lines)).filter(|&c| c >= n)))
            .unwrap_or_else(|| count(&self.log.lock().expect("log")))
    }

    /// Waits until `found` finds something in the log (answers it), or `None` once `deadline`
    /// has passed without.
    fn wait_until<T>(
        &self,
        deadline: std::time::Duration,
        found: impl Fn(&[String]) -> Option<T>,
    ) -> Option<T> {
        let log = self.log.lock().expect("log");
        let (log, _) = (self.logged)
            .wait_timeout_while(log, deadline, |lines| found(lines).is_none())
            .expect("log");
        found(&log)
    }
}

/// Starts `serve` on a free port at `RUST_LOG=log_level` and returns it once it listens. Its
/// log is read to the end on a thread of its own, so the server never blocks on a full pipe.
pub fn serve(db: &str, key: &std::path::Path, log_level: &str) -> Served {
    serve_with(db, key, log_level, &[])
}

/// [`serve`] with more environment (`COUNTERSIGN_POLICY`, `COUNTERSIGN_GATEWAY`, ...).
pub fn serve_with(
    db: &str,
    key: &std::path::Path,
    log_level: &str,
    env: &[(&str, &std::ffi::OsStr)],
) -> Served {
    let mut command = countersign(db);
    for (name, value) in env {
        command.env(name, value);
    }
    let mut child = command
        .args(["serve", "--bind", "127.0.0.1:0", "--audit-key"])
        .arg(key)
        .arg("--grant-key")
        .arg(key.with_extension("grant"))
        .env("RUST_LOG", log_level)
        // These servers are driven harder than any agent should drive one token.
        .env("COUNTERSIGN_RATE_LIMIT", "1000000")
        .env("COUNTERSIGN_RATE_BURST", "1000000")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("serve");
    let lines = BufReader::new(child.stderr.take().expect("stderr"));
    let log = Arc::new(Mutex::new(Vec::new()));
    let logged = Arc::new(Condvar::new());
    let (found, addr) = std::sync::mpsc::channel();
    let (sink, ring) = (log.clone(), logged.clone());
    std::thread::spawn(move || {
        for line in lines.lines().map_while(Result::ok) {
            if line.contains("Countersign is serving")
                && let Ok(v) = serde_json::from_str::<Value>(&line)
                && let Some(addr) = v["fields"]["addr"].as_str()
            {
                let _ = found.send(addr.to_owned());
            }
            sink.lock().expect("log").push(line);
            ring.notify_all();
        }
    });
    let addr = addr.recv().expect("the server exited before listening");
    Served {
        child,
        base: format!("http://{addr}"),
        log,
        logged,
    }
}

/// A loopback port with the three after it free (a balancer and its three instances).
pub fn free_ports() -> u16 {
    for _ in 0..200 {
        let bytes = Uuid::new_v4().into_bytes();
        let base = 20_000 + u16::from_le_bytes([bytes[0], bytes[1]]) % 30_000;
        if (0..4).all(|i| std::net::TcpListener::bind(("127.0.0.1", base + i)).is_ok()) {
            return base;
        }
    }
    panic!("no four free ports in a row");
}

/// Where test PostgreSQL databases are created; override with `COUNTERSIGN_TEST_PG_URL`.
pub fn pg_base() -> String {
    std::env::var("COUNTERSIGN_TEST_PG_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432".into())
}

/// A fresh, empty database URL on `backend` (`sqlite` or `postgres`). SQLite files live in a
/// temporary directory that lives as long as the returned guard.
pub fn fresh_database(backend: &str) -> (String, Option<tempfile::TempDir>) {
    match backend {
        "sqlite" => {
            let dir = tempfile::tempdir().expect("temp dir");
            let url = format!("sqlite://{}/countersign.db", dir.path().display());
            (url, Some(dir))
        }
        "postgres" => (
            format!("{}/cs_test_{}", pg_base(), Uuid::new_v4().simple()),
            None,
        ),
        other => panic!("unknown backend {other}"),
    }
}

/// A fresh database on `backend` and the services over it, with the built-in policy and the
/// real clock: the services, the database URL, and the guard of a SQLite file's directory.
#[allow(dead_code, reason = "each test binary uses a different subset")]
pub async fn fresh_services(
    backend: &str,
) -> (
    countersign::service::Services,
    String,
    Option<tempfile::TempDir>,
) {
    let (url, dir) = fresh_database(backend);
    let (store, _) = countersign::storage::connect(&url)
        .await
        .unwrap_or_else(|e| panic!("cannot open {backend} test database {url}: {e}"));
    let policy = Arc::new(countersign::domain::Policy::builtin());
    (countersign::service::Services::new(store, policy), url, dir)
}

/// A pre-tool-check the built-in policy answers (a read, authenticated).
pub fn check_body() -> serde_json::Value {
    json!({
        "tool_name": "crm.get_contact", "tool_category": "private_read",
        "authorization_state": "authenticated", "evidence_refs": ["ticket-42"],
        "risk_domain": "customer_support", "proposed_arguments": {"contact_id": "c-1"},
        "recommended_route": "accept"
    })
}

/// A valid seed 004 proposal body from `agent`.
pub fn proposal_body(agent: &str) -> Value {
    json!({
        "proposal_id": Uuid::new_v4(),
        "proposed_by": agent,
        "timestamp": "2026-11-22T10:00:00Z",
        "domain": "sales",
        "tool": {"name": "crm.update_contact", "version": "2024-01"},
        "intent": {"summary": "Update the contact's email", "reasoning": "The customer asked for it in ticket 42."},
        "parameters": {"contact_id": "c-123", "email": "new@example.com"},
        "risk_level": "medium",
        "approval_required": true,
        "compliance_context": {"gdpr": true, "hipaa": false},
        "idempotency_key": format!("key-{}", Uuid::new_v4()),
        "rollback_supported": true,
        "blast_radius": "small",
        "target_refs": [{"type": "crm_contact", "id": "c-123"}]
    })
}

/// `services.lease_as("exec", 60)`: a lease by an executor whose token may run every tool, not
/// waiting.
pub trait LeaseAs {
    /// Leases as `executor` for `secs` seconds.
    fn lease_as(
        &self,
        executor: &str,
        secs: u64,
    ) -> impl std::future::Future<
        Output = Result<Option<countersign::service::Leased>, countersign::service::ServiceError>,
    >;
}

impl LeaseAs for countersign::service::Services {
    async fn lease_as(
        &self,
        executor: &str,
        secs: u64,
    ) -> Result<Option<countersign::service::Leased>, countersign::service::ServiceError> {
        let request = countersign::service::LeaseRequest {
            executor: executor.to_owned(),
            scope: Some(
                countersign::domain::command::scope::ToolScope::parse_list("*").expect("scope"),
            ),
            wanted: None,
            lease_seconds: secs,
            wait: std::time::Duration::ZERO,
        };
        self.lease(&Principal::Executor(request.executor.clone()), &request)
            .await
    }
}

/// Runs `$body` with `$c` a fresh connection to the database at `$url` (SQLite or PostgreSQL).
macro_rules! on_connection {
    ($url:expr, |$c:ident| $body:expr) => {
        if $url.starts_with("sqlite:") {
            let mut $c = <sqlx::SqliteConnection as sqlx::Connection>::connect($url)
                .await
                .expect("connect");
            $body
        } else {
            let mut $c = <sqlx::PgConnection as sqlx::Connection>::connect($url)
                .await
                .expect("connect");
            $body
        }
    };
}

/// Runs one SQL statement straight on the database at `url` (an operator's, or an attacker's,
/// change behind Countersign's back).
pub async fn exec_sql(url: &str, sql: &str) {
    on_connection!(url, |c| {
        sqlx::query(sql).execute(&mut c).await.expect("exec");
    })
}

/// Whether the database at `url` refuses the statement `sql` (an error, not a panic).
pub async fn refuses(url: &str, sql: &str) -> bool {
    on_connection!(url, |c| sqlx::query(sql).execute(&mut c).await.is_err())
}

/// A count straight from the database at `url`, for checking what was (not) written.
pub async fn count(url: &str, sql: &str) -> i64 {
    on_connection!(url, |c| sqlx::query_scalar(sql)
        .fetch_one(&mut c)
        .await
        .expect("count"))
}

/// One text value straight from the database at `url` (a column cast to text).
#[allow(dead_code, reason = "each test binary uses a different subset")]
pub async fn text(url: &str, sql: &str) -> String {
    on_connection!(url, |c| sqlx::query_scalar(sql)
        .fetch_one(&mut c)
        .await
        .expect("text"))
}

/// The details of the one audit event with `action` in the database at `url`, as JSON.
pub async fn audit_details(url: &str, action: &str) -> Value {
    let sql = format!("select cast(details as text) from audit_events where action = '{action}'");
    serde_json::from_str(&text(url, &sql).await).expect("an event's details are JSON")
}

/// Runs each named `async fn(backend: &str)` as two tests, `sqlite::NAME` and `postgres::NAME`.
#[allow(unused_macros, reason = "each test binary uses a different subset")]
macro_rules! on_both_backends {
    ($($name:ident),+ $(,)?) => {
        mod sqlite {
            $(#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $name() { super::$name("sqlite").await })+
        }
        mod postgres {
            $(#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $name() { super::$name("postgres").await })+
        }
    };
}
#[allow(unused_imports, reason = "each test binary uses a different subset")]
pub(crate) use on_both_backends;

/// A write handed to the writer, for [`as_one_group`].
pub type Write = std::pin::Pin<
    Box<dyn std::future::Future<Output = Result<(), countersign::storage::StorageError>> + Send>,
>;

/// Hands every write to the writer while a change that waits holds it, then lets it go: the
/// writes, handed over in order, form the writer's next group. Answers each write's result.
pub async fn as_one_group(
    store: &countersign::storage::Store,
    writes: Vec<Write>,
) -> Vec<Result<(), countersign::storage::StorageError>> {
    let (started, writer_busy) = tokio::sync::oneshot::channel();
    let (release, released) = tokio::sync::oneshot::channel::<()>();
    let holder = tokio::spawn({
        let store = store.clone();
        async move {
            store
                .write(move |_tx| {
                    Box::pin(async move {
                        let _ = started.send(());
                        released.await.map_err(|_| {
                            countersign::storage::StorageError::Batch("never released".into())
                        })
                    })
                })
                .await
        }
    });
    writer_busy.await.expect("the writer runs the holder");
    // A write hands its change over on its first poll (the writer's queue has room), then
    // waits for its answer; unconstrained, or tokio's cooperative budget would make the writes
    // after the first hundred or so wait for a later poll, and so for a later group.
    let mut writes: Vec<_> = writes
        .into_iter()
        .map(|write| Box::pin(tokio::task::unconstrained(write)))
        .collect();
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    for write in &mut writes {
        assert!(
            matches!(write.as_mut().poll(&mut cx), std::task::Poll::Pending),
            "answered before its group"
        );
    }
    release.send(()).expect("the holder waits");
    holder
        .await
        .expect("holder task")
        .expect("the holder commits");
    futures_util::future::join_all(writes).await
}

/// Submits `body` as agent `agent`, the way it would arrive: a body whose idempotency key has
/// the MCP gateway's shape as the gateway submits its calls when no call slot is free (no other
/// way in takes such a key), any other as the API does.
pub async fn submit_as(
    services: &countersign::service::Services,
    agent: &str,
    body: &serde_json::Value,
) -> Result<countersign::service::Submitted, countersign::service::ServiceError> {
    use countersign::domain::gateway::call::call_prefix;
    let who = countersign::domain::principal::Principal::Agent(agent.to_owned());
    let key = body["idempotency_key"].as_str().unwrap_or_default();
    if call_prefix(key).is_none() {
        return services.submit(&who, body).await;
    }
    let (submitted, _) = services.submit_gateway_call(&who, None, body, None).await?;
    Ok(submitted)
}
