//! `TestApp`: the real application on a random port over a fresh database, with helpers that
//! speak to it the way agents, executors and browsers do.

use countersign::domain::principal::Principal;
use countersign::service::NewUser;
use std::sync::{Arc, Mutex};

use countersign::config::Settings;
use countersign::domain::command::scope::ToolScope;
use countersign::domain::principal::{Role, TokenKind};
use countersign::service::Clock;
use countersign::service::Services;
use countersign::startup::Application;
use reqwest::{Client, Response, StatusCode};
use serde_json::Value;

use crate::common;
pub use crate::common::browser::{Browser, location};

pub struct TestApp {
    pub base: String,
    /// The separate metrics listener (`settings.metrics_bind`), if configured.
    pub metrics_base: Option<String>,
    /// The app's clock: tests move it on to lapse leases and end windows.
    pub clock: Arc<ManualClock>,
    pub db_url: String,
    pub services: Services,
    pub client: Client,
    _dir: Option<tempfile::TempDir>,
}

pub const PASSWORD: &str = "correct horse battery staple";

/// The real clock, shared by instances on one database (a hook for tests that move time).
pub struct ManualClock {
    offset: Mutex<time::Duration>,
}

impl Default for ManualClock {
    fn default() -> Self {
        Self {
            offset: Mutex::new(time::Duration::ZERO),
        }
    }
}

impl ManualClock {
    /// Moves the app's time on by `by`.
    pub fn advance(&self, by: time::Duration) {
        *self.offset.lock().expect("clock") += by;
    }
}

impl Clock for ManualClock {
    fn now(&self) -> time::OffsetDateTime {
        time::OffsetDateTime::now_utc() + *self.offset.lock().expect("clock")
    }
}

/// Tests drive tokens harder than any agent should; `tests/api/limits.rs` checks the limit.
const UNLIMITED: countersign::config::RateLimit = countersign::config::RateLimit {
    per_second: 1_000_000,
    burst: 1_000_000,
    waiting: 1_000_000,
};

impl TestApp {
    pub async fn spawn(backend: &str) -> TestApp {
        Self::spawn_with(backend, None).await
    }

    /// The app under the policy in `policy_toml`.
    pub async fn spawn_with_policy(backend: &str, policy_toml: &str) -> TestApp {
        Self::spawn_with(backend, Some(policy_toml)).await
    }

    /// The app with settings changed by `configure` (timeouts, caps, session limits).
    pub async fn spawn_configured(backend: &str, configure: impl FnOnce(&mut Settings)) -> TestApp {
        Self::spawn_full(backend, None, configure).await
    }

    async fn spawn_with(backend: &str, policy_toml: Option<&str>) -> TestApp {
        Self::spawn_full(backend, policy_toml, |_| {}).await
    }

    pub async fn spawn_full(
        backend: &str,
        policy_toml: Option<&str>,
        configure: impl FnOnce(&mut Settings),
    ) -> TestApp {
        if std::env::var_os("RUST_LOG").is_some() {
            countersign::telemetry::init();
        }
        let (url, dir) = common::fresh_database(backend);
        let mut settings = Settings::for_database(&url);
        let policy_dir = tempfile::tempdir().expect("temp dir");
        if let Some(text) = policy_toml {
            let path = policy_dir.path().join("policy.toml");
            std::fs::write(&path, text).expect("write policy");
            settings.policy = Some(path);
        }
        settings.bind = Some("127.0.0.1:0".parse().expect("addr"));
        settings.rate = UNLIMITED;
        configure(&mut settings);
        let clock = Arc::new(ManualClock::default());
        let app = Application::build_with_clock(settings, clock.clone())
            .await
            .unwrap_or_else(|e| panic!("cannot start on {backend}: {e}"));
        let base = format!("http://{}", app.local_addr());
        let metrics_base = app.metrics_addr().map(|a| format!("http://{a}"));
        let services = app.services().clone();
        tokio::spawn(app.run_forever());
        TestApp {
            base,
            metrics_base,
            clock,
            db_url: url,
            services,
            client: Client::new(),
            _dir: dir,
        }
    }

    /// Another instance of the app on the same database (several servers, one PostgreSQL).
    pub async fn another_instance(&self) -> TestApp {
        self.another_instance_configured(|_| {}).await
    }

    /// The same, with settings changed by `configure` (its own policy, a gateway).
    pub async fn another_instance_configured(
        &self,
        configure: impl FnOnce(&mut Settings),
    ) -> TestApp {
        let mut settings = Settings::for_database(&self.db_url);
        settings.bind = Some("127.0.0.1:0".parse().expect("addr"));
        settings.rate = UNLIMITED;
        configure(&mut settings);
        let app = Application::build_with_clock(settings, self.clock.clone())
            .await
            .expect("second instance");
        let base = format!("http://{}", app.local_addr());
        let services = app.services().clone();
        tokio::spawn(app.run_forever());
        TestApp {
            base,
            metrics_base: None,
            clock: self.clock.clone(),
            db_url: self.db_url.clone(),
            services,
            client: Client::new(),
            _dir: None,
        }
    }

    /// The app's now (its clock may have been moved on).
    pub fn clock_now(&self) -> time::OffsetDateTime {
        countersign::service::Clock::now(self.clock.as_ref())
    }

    pub async fn agent_token(&self, name: &str) -> String {
        self.token(TokenKind::Agent, name).await
    }

    /// An executor token that may run every tool (`--tools '*'`).
    pub async fn executor_token(&self, name: &str) -> String {
        self.scoped_executor_token(name, Some("*")).await
    }

    /// An executor token with this tool scope (`None`: no scope, only what the policy names).
    pub async fn scoped_executor_token(&self, name: &str, tools: Option<&str>) -> String {
        let scope = tools.map(|t| ToolScope::parse_list(t).expect("scope"));
        self.services
            .create_token(
                &Principal::Operator,
                TokenKind::Executor,
                name,
                scope.as_ref(),
            )
            .await
            .expect("token")
            .expose()
            .to_owned()
    }

    async fn token(&self, kind: TokenKind, name: &str) -> String {
        self.services
            .create_token(&Principal::Operator, kind, name, None)
            .await
            .expect("token")
            .expose()
            .to_owned()
    }

    pub async fn user(&self, name: &str, role: Role) {
        self.services
            .add_user(&Principal::Operator, NewUser::new(name, role, PASSWORD))
            .await
            .expect("user");
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// A count straight from the database, for checking what was (not) written.
    pub async fn count(&self, sql: &str) -> i64 {
        common::count(&self.db_url, sql).await
    }

    /// Runs one SQL statement straight on the database (to simulate an operator's change).
    pub async fn exec(&self, sql: &str) {
        common::exec_sql(&self.db_url, sql).await;
    }

    pub async fn pre_tool_check(&self, token: &str, body: &Value) -> (StatusCode, Value) {
        let r = self
            .client
            .post(self.url("/api/v1/pre-tool-check"))
            .bearer_auth(token)
            .json(body)
            .send()
            .await
            .expect("request");
        (r.status(), r.json().await.unwrap_or(Value::Null))
    }

    pub async fn propose(&self, token: &str, body: &Value) -> Response {
        self.client
            .post(self.url("/api/v1/proposals"))
            .bearer_auth(token)
            .json(body)
            .send()
            .await
            .expect("request")
    }

    pub async fn propose_ok(&self, token: &str, agent: &str) -> String {
        let r = self.propose(token, &common::proposal_body(agent)).await;
        assert_eq!(r.status(), StatusCode::CREATED);
        let body: Value = r.json().await.expect("json");
        body["proposal"]["id"].as_str().expect("id").to_owned()
    }

    /// Approves proposal `id` in-process (as the admin `boss`): the command it queued.
    pub async fn approve_queued(
        &self,
        id: uuid::Uuid,
    ) -> countersign::domain::record::CommandRecord {
        let boss = Principal::person("boss", Role::Admin);
        let verdict = countersign::domain::lifecycle::ReviewVerdict::Approved;
        (self.services)
            .decide(&boss, id, verdict, None)
            .await
            .expect("approve");
        (self.services)
            .command_for_proposal(&Principal::Operator, id)
            .await
            .expect("read")
            .expect("queued")
    }

    pub async fn poll(&self, token: &str, id: &str) -> (StatusCode, Value) {
        let r = self
            .client
            .get(self.url(&format!("/api/v1/proposals/{id}")))
            .bearer_auth(token)
            .send()
            .await
            .expect("request");
        (r.status(), r.json().await.unwrap_or(Value::Null))
    }

    pub async fn lease(&self, token: &str) -> (StatusCode, Value) {
        let r = self
            .client
            .post(self.url("/api/v1/executor/lease"))
            .bearer_auth(token)
            .json(&serde_json::json!({}))
            .send()
            .await
            .expect("request");
        let status = r.status();
        let text = r.text().await.expect("body");
        (status, serde_json::from_str(&text).unwrap_or(Value::Null))
    }

    pub async fn report(
        &self,
        token: &str,
        command_id: &str,
        verb: &str,
        body: &Value,
    ) -> (StatusCode, Value) {
        let r = self
            .client
            .post(self.url(&format!("/api/v1/executor/commands/{command_id}/{verb}")))
            .bearer_auth(token)
            .json(body)
            .send()
            .await
            .expect("request");
        (r.status(), r.json().await.unwrap_or(Value::Null))
    }

    /// A browser-like client: keeps cookies, does not follow redirects, asks for HTML.
    pub fn browser(&self) -> Browser {
        Browser::new(&self.base)
    }
}
