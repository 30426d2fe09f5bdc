//! `TestApp`: the real application on a random port over a fresh database, with helpers that
//! speak to it the way agents, executors and browsers do.

use countersign::audit::Actor;
use countersign::config::Settings;
use countersign::domain::principal::{Role, TokenKind};
use countersign::service::Services;
use countersign::startup::Application;
use reqwest::{Client, Response, StatusCode};
use serde_json::Value;

use crate::common;

pub struct TestApp {
    pub base: String,
    pub db_url: String,
    pub services: Services,
    pub client: Client,
    _dir: Option<tempfile::TempDir>,
}

pub const PASSWORD: &str = "correct horse battery staple";

impl TestApp {
    pub async fn spawn(backend: &str) -> TestApp {
        Self::spawn_with(backend, None).await
    }

    /// The app under the policy in `policy_toml`.
    pub async fn spawn_with_policy(backend: &str, policy_toml: &str) -> TestApp {
        Self::spawn_with(backend, Some(policy_toml)).await
    }

    async fn spawn_with(backend: &str, policy_toml: Option<&str>) -> TestApp {
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
        let app = Application::build(settings)
            .await
            .unwrap_or_else(|e| panic!("cannot start on {backend}: {e}"));
        let base = format!("http://{}", app.local_addr());
        let services = app.services().clone();
        tokio::spawn(app.run_forever());
        TestApp {
            base,
            db_url: url,
            services,
            client: Client::new(),
            _dir: dir,
        }
    }

    pub async fn agent_token(&self, name: &str) -> String {
        self.token(TokenKind::Agent, name).await
    }

    pub async fn executor_token(&self, name: &str) -> String {
        self.token(TokenKind::Executor, name).await
    }

    async fn token(&self, kind: TokenKind, name: &str) -> String {
        self.services
            .create_token(kind, name, &Actor::system("test"))
            .await
            .expect("token")
            .expose()
            .to_owned()
    }

    pub async fn user(&self, name: &str, role: Role) {
        self.services
            .add_user(name, role, PASSWORD.into(), &Actor::system("test"))
            .await
            .expect("user");
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// A count straight from the database, for checking what was (not) written.
    pub async fn count(&self, sql: &str) -> i64 {
        if self.db_url.starts_with("sqlite:") {
            let mut c = <sqlx::SqliteConnection as sqlx::Connection>::connect(&self.db_url)
                .await
                .expect("connect");
            sqlx::query_scalar(sql)
                .fetch_one(&mut c)
                .await
                .expect("count")
        } else {
            let mut c = <sqlx::PgConnection as sqlx::Connection>::connect(&self.db_url)
                .await
                .expect("connect");
            sqlx::query_scalar(sql)
                .fetch_one(&mut c)
                .await
                .expect("count")
        }
    }

    /// Runs one SQL statement straight on the database (to simulate an operator's change).
    pub async fn exec(&self, sql: &str) {
        if self.db_url.starts_with("sqlite:") {
            let mut c = <sqlx::SqliteConnection as sqlx::Connection>::connect(&self.db_url)
                .await
                .expect("connect");
            sqlx::query(sql).execute(&mut c).await.expect("exec");
        } else {
            let mut c = <sqlx::PgConnection as sqlx::Connection>::connect(&self.db_url)
                .await
                .expect("connect");
            sqlx::query(sql).execute(&mut c).await.expect("exec");
        }
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
        let client = Client::builder()
            .cookie_store(true)
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .expect("client");
        Browser {
            client,
            base: self.base.clone(),
        }
    }
}

pub struct Browser {
    pub client: Client,
    base: String,
}

/// A redirect's target path.
pub fn location(r: &Response) -> String {
    r.headers()
        .get("location")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned()
}

impl Browser {
    pub async fn get(&self, path: &str) -> Response {
        self.client
            .get(format!("{}{path}", self.base))
            .header("accept", "text/html")
            .send()
            .await
            .expect("request")
    }

    pub async fn page(&self, path: &str) -> String {
        let r = self.get(path).await;
        assert_eq!(r.status(), StatusCode::OK, "GET {path}");
        r.text().await.expect("html")
    }

    /// The CSRF token embedded in the page's forms.
    pub async fn csrf(&self, path: &str) -> String {
        let html = self.page(path).await;
        let marker = "name=\"csrf_token\" value=\"";
        let start = html.find(marker).expect("a form with a CSRF token") + marker.len();
        html[start..start + 64].to_owned()
    }

    pub async fn post_form(&self, path: &str, referer: &str, form: &[(&str, &str)]) -> Response {
        self.client
            .post(format!("{}{path}", self.base))
            .header("accept", "text/html")
            .header("referer", format!("{}{referer}", self.base))
            .form(form)
            .send()
            .await
            .expect("request")
    }

    pub async fn login(&self, username: &str, password: &str) -> Response {
        let csrf = self.csrf("/login").await;
        self.post_form(
            "/fn/login",
            "/login",
            &[
                ("csrf_token", &csrf),
                ("username", username),
                ("password", password),
            ],
        )
        .await
    }

    pub async fn decide(&self, id: &str, verdict: &str, reason: Option<&str>) -> Response {
        let page = format!("/proposals/{id}");
        let csrf = self.csrf(&page).await;
        let mut form = vec![
            ("csrf_token", csrf.as_str()),
            ("id", id),
            ("verdict", verdict),
        ];
        if let Some(r) = reason {
            form.push(("reason", r));
        }
        self.post_form("/fn/decide_proposal", &page, &form).await
    }
}
