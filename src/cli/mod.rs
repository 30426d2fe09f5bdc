//! The `countersign` command: `serve`, `migrate`, `user add|role|disable`,
//! `token create|revoke`, `policy`, `tool pause|resume|list`,
//! `audit verify|checkpoint|export`, `proposal erase`. Every flag
//! that configures the database or address has an environment fallback.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};

mod accounts;
mod audit;
mod gateway;
mod grant;
mod oidc;
mod policy;
mod proposal;
mod tool;

use crate::config::{
    DEFAULT_AUDIT_KEY, DEFAULT_DATABASE_URL, DEFAULT_GRANT_KEY, Settings, redact_url,
};
use crate::domain::principal::Role;
use crate::service::ChannelUrl;
use crate::service::Services;
use crate::startup::{Application, open_store};
use crate::storage::schema::{RoleName, grant_serving};

/// Countersign: the approval gate between AI agents and the tools they want to run.
#[derive(Debug, Parser)]
#[command(name = "countersign", version, about, long_about = None)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Args)]
pub(crate) struct Database {
    /// Database URL: `sqlite://FILE` (created if missing) or `postgres://USER@HOST/DB`.
    #[arg(long, env = "COUNTERSIGN_DATABASE_URL", default_value = DEFAULT_DATABASE_URL)]
    pub(crate) database_url: String,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Migrate the database and serve the web app and API.
    Serve(Box<ServeArgs>),
    /// Validate and try out routing policies.
    Policy {
        #[command(subcommand)]
        command: policy::PolicyCommand,
    },
    /// Create the database if missing and apply migrations (run as the database's owner).
    Migrate {
        #[command(flatten)]
        db: Database,
        /// PostgreSQL: grant this role what `serve` needs and no more (read and append the
        /// audit trail, the app's tables; no delete, update or truncate of the trail, no DDL),
        /// then serve as it.
        #[arg(long, value_parser = parse_grantee)]
        grant_to: Option<RoleName>,
    },
    /// Manage people who sign in to the web app.
    User {
        #[command(subcommand)]
        command: accounts::UserCommand,
    },
    /// Manage API tokens of agents and executors.
    Token {
        #[command(subcommand)]
        command: accounts::TokenCommand,
    },
    /// The MCP gateway: check its file, list its pinned tools, accept a changed definition.
    Gateway {
        #[command(subcommand)]
        command: gateway::GatewayCommand,
    },
    /// Standing grants: list them, revoke one.
    Grant {
        #[command(subcommand)]
        command: grant::GrantCommand,
    },
    /// Pause or resume tools for every executor (the kill switch).
    Tool {
        #[command(subcommand)]
        command: tool::ToolCommand,
    },
    /// Act on stored proposals (GDPR erasure).
    Proposal {
        #[command(subcommand)]
        command: proposal::ProposalCommand,
    },
    /// Verify, checkpoint and export the hash-chained audit trail.
    Audit {
        #[command(subcommand)]
        command: audit::AuditCommand,
    },
}

/// What `serve` runs with (see docs/configuration.md).
#[derive(Debug, Args)]
struct ServeArgs {
    #[command(flatten)]
    db: Database,
    /// Address to listen on [default: Leptos.toml's site-addr].
    #[arg(long, env = "COUNTERSIGN_BIND")]
    bind: Option<SocketAddr>,
    /// The Leptos settings file.
    #[arg(long, env = "COUNTERSIGN_LEPTOS_CONFIG", default_value = "Leptos.toml")]
    leptos_config: PathBuf,
    /// Mark the session cookie `Secure` (set this behind HTTPS).
    #[arg(long, env = "COUNTERSIGN_SECURE_COOKIES")]
    secure_cookies: bool,
    /// The routing policy (TOML; see policy.example.toml) [default: built-in, every tool
    /// Category C].
    #[arg(long, env = "COUNTERSIGN_POLICY")]
    policy: Option<PathBuf>,
    /// Serve the upstream MCP servers this file names at `/mcp/gateway` (TOML; see
    /// docs/gateway.md): agents reach their tools only through Countersign.
    #[arg(long, env = "COUNTERSIGN_GATEWAY")]
    gateway: Option<PathBuf>,
    /// The Ed25519 key that signs audit checkpoints (created, mode 0600, if missing). Keep
    /// it where the database's owner cannot write.
    #[arg(long, env = "COUNTERSIGN_AUDIT_KEY", default_value = DEFAULT_AUDIT_KEY)]
    audit_key: PathBuf,
    /// Earlier checkpoint public keys (hex, comma-separated) whose checkpoints the trail page's
    /// verification still takes, after the key file was replaced. Any other key but the
    /// current one fails verification.
    #[arg(long, env = "COUNTERSIGN_AUDIT_EARLIER_KEYS", value_delimiter = ',')]
    audit_earlier_keys: Vec<String>,
    /// The Ed25519 key that signs executor grants (created, mode 0600, if missing); its
    /// public half is served at `GET /api/v1/executor/public-key`.
    #[arg(long, env = "COUNTERSIGN_GRANT_KEY", default_value = DEFAULT_GRANT_KEY)]
    grant_key: PathBuf,
    #[command(flatten)]
    hardening: Hardening,
    #[command(flatten)]
    webhooks: WebhookArgs,
    /// `GET /metrics` (Prometheus) answers a bearer of this token on the main listener.
    #[arg(long, env = "COUNTERSIGN_METRICS_TOKEN", hide_env_values = true)]
    metrics_token: Option<String>,
    /// Serve `GET /metrics`, without a token, on this separate address instead (keep it
    /// where only Prometheus reaches).
    #[arg(long, env = "COUNTERSIGN_METRICS_BIND")]
    metrics_bind: Option<SocketAddr>,
    #[command(flatten)]
    notify: NotifyArgs,
    #[command(flatten)]
    oidc: oidc::OidcArgs,
    #[command(flatten)]
    retention: RetentionArgs,
}

/// How long operational rows are kept (see docs/operations.md); the trail is kept for ever.
#[derive(Debug, Args)]
struct RetentionArgs {
    /// Reviewers' notifications, once sent or given up (e.g. `30d`, or `forever`).
    #[arg(long, env = "COUNTERSIGN_RETAIN_NOTIFICATIONS", default_value = "30d")]
    retain_notifications: Keep,
    /// Agents' webhook deliveries and their attempts, once delivered or given up.
    #[arg(
        long,
        env = "COUNTERSIGN_RETAIN_WEBHOOK_DELIVERIES",
        default_value = "30d"
    )]
    retain_webhook_deliveries: Keep,
    /// Expiry warnings and escalation tiers raised, once their proposal no longer waits.
    #[arg(long, env = "COUNTERSIGN_RETAIN_ALERTS", default_value = "90d")]
    retain_alerts: Keep,
}

/// A retention: a duration, or `forever` (`None`).
#[derive(Debug, Clone, Copy)]
struct Keep(Option<std::time::Duration>);

impl std::str::FromStr for Keep {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        crate::domain::retention::parse_retention(s).map(Keep)
    }
}

impl RetentionArgs {
    fn settings(&self) -> crate::domain::retention::Retention {
        crate::domain::retention::Retention {
            notifications: self.retain_notifications.0,
            webhook_deliveries: self.retain_webhook_deliveries.0,
            alerts: self.retain_alerts.0,
        }
    }
}

/// Where `serve` tells reviewers that work waits (see docs/notifications.md).
#[derive(Debug, Args)]
struct NotifyArgs {
    /// Countersign's address as reviewers reach it, for the links in notifications (e.g.
    /// `https://countersign.example.com`).
    #[arg(long, env = "COUNTERSIGN_PUBLIC_URL")]
    public_url: Option<ChannelUrl>,
    /// A Slack incoming-webhook URL: a Block Kit message when work waits for a reviewer.
    #[arg(long, env = "COUNTERSIGN_SLACK_WEBHOOK_URL", hide_env_values = true)]
    slack_webhook_url: Option<ChannelUrl>,
    /// A Microsoft Teams incoming-webhook URL: an Adaptive Card when work waits.
    #[arg(long, env = "COUNTERSIGN_TEAMS_WEBHOOK_URL", hide_env_values = true)]
    teams_webhook_url: Option<ChannelUrl>,
    /// A generic webhook: JSON signed like agents' webhooks (`Countersign-Signature`).
    #[arg(
        long,
        env = "COUNTERSIGN_NOTIFY_WEBHOOK_URL",
        hide_env_values = true,
        requires = "notify_webhook_secret"
    )]
    notify_webhook_url: Option<ChannelUrl>,
    /// The secret the generic webhook's messages are signed with.
    #[arg(
        long,
        env = "COUNTERSIGN_NOTIFY_WEBHOOK_SECRET",
        hide_env_values = true
    )]
    notify_webhook_secret: Option<NotifySecret>,
    /// The Slack app's signing secret: Slack messages then carry Approve and Reject buttons,
    /// answered at `POST /integrations/slack/actions` (map people with `user add --slack-id`).
    #[arg(long, env = "COUNTERSIGN_SLACK_SIGNING_SECRET", hide_env_values = true)]
    slack_signing_secret: Option<NotifySecret>,
    /// At most one message per channel (per reviewer on email) in this long; the rest fold
    /// into a digest.
    #[arg(long, env = "COUNTERSIGN_NOTIFY_WINDOW", default_value = "1m", value_parser = parse_secs)]
    notify_window: std::time::Duration,
    /// Email reviewers over SMTP: `smtp://HOST:PORT` (plain), `smtp://HOST:PORT?tls=required`
    /// (STARTTLS) or `smtps://HOST:PORT`; `user:password@` authenticates (not over plain
    /// `smtp://`, which would send it unencrypted). Each reviewer with an
    /// address (`user add --email`) who may decide the proposal gets one.
    #[arg(
        long,
        env = "COUNTERSIGN_SMTP_URL",
        hide_env_values = true,
        requires = "smtp_from"
    )]
    smtp_url: Option<SmtpUrl>,
    /// Whom reviewers' email is from, e.g. `Countersign <countersign@example.com>`.
    #[arg(long, env = "COUNTERSIGN_SMTP_FROM")]
    smtp_from: Option<String>,
    /// Tell reviewers this long before a waiting proposal expires undecided.
    #[arg(
        long,
        env = "COUNTERSIGN_NOTIFY_BEFORE_EXPIRY",
        default_value = "15m",
        value_parser = parse_secs
    )]
    notify_before_expiry: std::time::Duration,
}

/// An SMTP URL (it may hold a password); never printed.
#[derive(Clone)]
struct SmtpUrl(String);

impl std::fmt::Debug for SmtpUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SmtpUrl(***)")
    }
}

impl std::str::FromStr for SmtpUrl {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Ok(SmtpUrl(s.trim().to_owned()))
    }
}

/// The generic notification webhook's signing secret; never printed.
#[derive(Clone)]
struct NotifySecret(String);

impl std::fmt::Debug for NotifySecret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("NotifySecret(***)")
    }
}

impl std::str::FromStr for NotifySecret {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim() {
            short if short.len() < 16 => Err("must be at least 16 characters".into()),
            secret => Ok(NotifySecret(secret.to_owned())),
        }
    }
}

impl NotifyArgs {
    /// The settings, every channel URL checked like an agent's webhook.
    fn settings(
        self,
        targets: crate::domain::webhook::TargetPolicy,
    ) -> Result<crate::service::NotifySettings, String> {
        let check = |flag: &str, url: Option<ChannelUrl>| match url {
            Some(u) => crate::domain::webhook::check_url(u.0.as_str(), targets)
                .map(|u| Some(ChannelUrl(u)))
                .map_err(|why| format!("--{flag}: the URL {why}")),
            None => Ok(None),
        };
        let webhook = check("notify-webhook-url", self.notify_webhook_url)?;
        let secret = (self.notify_webhook_secret).map(|s| crate::service::SigningSecret(s.0));
        let mailer = match (self.smtp_url, self.smtp_from) {
            (Some(url), Some(from)) => Some(
                crate::service::Mailer::new(&url.0, &from)
                    .map_err(|why| format!("--smtp-url: {why}"))?,
            ),
            _ => None,
        };
        Ok(crate::service::NotifySettings {
            mailer,
            expiry_warning: Some(time_duration(self.notify_before_expiry)),
            public_url: self.public_url.map(|u| u.0),
            slack: check("slack-webhook-url", self.slack_webhook_url)?,
            teams: check("teams-webhook-url", self.teams_webhook_url)?,
            webhook: webhook.zip(secret),
            window: Some(time_duration(self.notify_window)),
            slack_signing_secret: self
                .slack_signing_secret
                .map(|s| crate::service::SigningSecret(s.0)),
        })
    }
}

/// Timeouts, caps and session limits of `serve` (see docs/configuration.md).
#[derive(Debug, Args)]
struct Hardening {
    /// A request's line and headers must arrive within this (e.g. `10s`); also how long a
    /// kept-alive connection waits for its next request.
    #[arg(long, env = "COUNTERSIGN_HEADER_TIMEOUT", default_value = "10s", value_parser = parse_secs)]
    header_timeout: std::time::Duration,
    /// A request's body must arrive within this of its headers.
    #[arg(long, env = "COUNTERSIGN_BODY_TIMEOUT", default_value = "30s", value_parser = parse_secs)]
    body_timeout: std::time::Duration,
    /// A connection whose client reads nothing of its answer for this long is closed.
    #[arg(long, env = "COUNTERSIGN_WRITE_TIMEOUT", default_value = "30s", value_parser = parse_secs)]
    write_timeout: std::time::Duration,
    /// Connections served at once; more wait to be accepted.
    #[arg(long, env = "COUNTERSIGN_MAX_CONNECTIONS", default_value_t = 512, value_parser = clap::value_parser!(u32).range(1..))]
    max_connections: u32,
    /// A web session unused for this long ends (e.g. `30m`).
    #[arg(long, env = "COUNTERSIGN_SESSION_IDLE", default_value = "30m", value_parser = parse_secs)]
    session_idle: std::time::Duration,
    /// A web session ends this long after sign-in, however active (e.g. `12h`).
    #[arg(long, env = "COUNTERSIGN_SESSION_LIFETIME", default_value = "12h", value_parser = parse_secs)]
    session_lifetime: std::time::Duration,
    /// Reverse proxies (IP addresses, comma-separated) whose `X-Forwarded-For` names the
    /// client; sign-in throttling counts by client address. Without it the socket's peer is
    /// the client.
    #[arg(long, env = "COUNTERSIGN_TRUSTED_PROXIES", value_delimiter = ',')]
    trusted_proxies: Vec<std::net::IpAddr>,
    /// Requests per second each API token may make, sustained; more are answered `429`.
    #[arg(long, env = "COUNTERSIGN_RATE_LIMIT", default_value_t = 100, value_parser = clap::value_parser!(u32).range(1..))]
    rate_limit: u32,
    /// Requests each API token may make at once after a quiet spell.
    #[arg(long, env = "COUNTERSIGN_RATE_BURST", default_value_t = 200, value_parser = clap::value_parser!(u32).range(1..))]
    rate_burst: u32,
    /// Requests each API token may hold waiting for a change at once (`?wait=`, event
    /// streams, MCP's `wait_for_decision`); more are answered `429`.
    #[arg(long, env = "COUNTERSIGN_MAX_WAITING_PER_TOKEN", default_value_t = 1_000, value_parser = clap::value_parser!(u32).range(1..))]
    max_waiting_per_token: u32,
}

impl Hardening {
    fn apply(self, settings: &mut Settings) {
        settings.limits = crate::config::ConnectionLimits {
            header_timeout: self.header_timeout,
            body_timeout: self.body_timeout,
            write_timeout: self.write_timeout,
            max_connections: usize::try_from(self.max_connections).unwrap_or(usize::MAX),
            ..crate::config::ConnectionLimits::default()
        };
        settings.sessions = crate::domain::sign_in::SessionLimits {
            idle: time_duration(self.session_idle),
            lifetime: time_duration(self.session_lifetime),
        };
        settings.trusted_proxies = self.trusted_proxies;
        settings.rate = crate::config::RateLimit {
            per_second: self.rate_limit,
            burst: self.rate_burst,
            waiting: self.max_waiting_per_token,
        };
    }
}

/// Which webhook targets are allowed beyond `https` and loopback (`serve`, `token create`).
#[derive(Debug, Clone, Copy, Args)]
pub(crate) struct WebhookTargets {
    /// Allow plain-`http` webhook URLs to any host, not only to loopback.
    #[arg(long, env = "COUNTERSIGN_WEBHOOK_ALLOW_HTTP")]
    webhook_allow_http: bool,
    /// Allow webhook targets in private, link-local and shared address ranges (10/8,
    /// 172.16/12, 192.168/16, 169.254/16, 100.64/10, fc00::/7, fe80::/10).
    #[arg(long, env = "COUNTERSIGN_WEBHOOK_ALLOW_PRIVATE")]
    webhook_allow_private: bool,
}

impl WebhookTargets {
    pub(crate) fn policy(self) -> crate::domain::webhook::TargetPolicy {
        crate::domain::webhook::TargetPolicy {
            allow_http: self.webhook_allow_http,
            allow_private: self.webhook_allow_private,
        }
    }
}

/// How `serve` sends agents' webhooks (see docs/api.md, Webhooks).
#[derive(Debug, Args)]
struct WebhookArgs {
    #[command(flatten)]
    targets: WebhookTargets,
    /// A failing delivery is tried again (5 s, 10 s, 20 s … at most an hour apart) until it
    /// is this old, then given up.
    #[arg(long, env = "COUNTERSIGN_WEBHOOK_GIVE_UP_AFTER", default_value = "24h", value_parser = parse_secs)]
    webhook_give_up_after: std::time::Duration,
    /// One delivery attempt may take this long.
    #[arg(long, env = "COUNTERSIGN_WEBHOOK_TIMEOUT", default_value = "10s", value_parser = parse_secs)]
    webhook_timeout: std::time::Duration,
}

impl WebhookArgs {
    fn settings(self) -> crate::service::WebhookSettings {
        let defaults = crate::service::WebhookSettings::default();
        crate::service::WebhookSettings {
            targets: self.targets.policy(),
            retries: crate::domain::webhook::Retries {
                give_up_after: time_duration(self.webhook_give_up_after),
                ..defaults.retries
            },
            timeout: self.webhook_timeout,
        }
    }
}

fn time_duration(d: std::time::Duration) -> time::Duration {
    time::Duration::try_from(d).unwrap_or(time::Duration::MAX)
}

/// `90s`, `15m`, `12h`, `7d`: as the policy writes durations.
pub(crate) fn parse_secs(s: &str) -> Result<std::time::Duration, String> {
    crate::domain::policy::loader::parse_duration(s).map(std::time::Duration::from_secs)
}

fn parse_grantee(s: &str) -> Result<RoleName, String> {
    RoleName::parse(s).ok_or_else(|| {
        "a PostgreSQL role name: lowercase letters, digits and `_`, at most 63".to_owned()
    })
}

async fn migrate(url: &str, grant_to: Option<&RoleName>) -> Result<(), String> {
    open_store(url).await.map_err(|e| e.to_string())?;
    eprintln!("database {} is migrated", redact_url(url));
    let Some(role) = grant_to else { return Ok(()) };
    if url.starts_with("sqlite:") {
        return Err("--grant-to is for PostgreSQL; a SQLite file has no roles".into());
    }
    grant_serving(url, role)
        .await
        .map_err(|e| format!("granting to `{role}`: {e}"))?;
    eprintln!("granted `{role}` what `countersign serve` needs; serve as `{role}`");
    Ok(())
}

fn parse_role(s: &str) -> Result<Role, String> {
    Role::parse(s).ok_or_else(|| "must be one of `admin`, `reviewer`, `compliance`".to_owned())
}

/// Runs the command line and returns the process exit code.
pub async fn run() -> ExitCode {
    let cli = Cli::parse();
    crate::telemetry::init();
    match execute(cli.command).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("error: {message}");
            ExitCode::FAILURE
        }
    }
}

async fn execute(command: Command) -> Result<(), String> {
    match command {
        Command::Serve(args) => {
            let ServeArgs {
                db,
                bind,
                leptos_config,
                secure_cookies,
                policy,
                gateway,
                audit_key,
                audit_earlier_keys,
                grant_key,
                hardening,
                webhooks,
                metrics_token,
                metrics_bind,
                notify,
                oidc,
                retention,
            } = *args;
            let mut settings = Settings {
                bind,
                leptos_config,
                secure_cookies,
                policy,
                audit_key: Some(audit_key),
                audit_earlier_keys: audit_earlier_keys
                    .iter()
                    .map(|k| {
                        crate::audit::checkpoint::public_key_hex(k).ok_or_else(|| {
                            format!("--audit-earlier-keys: `{k}` is not a public key (64 hex characters)")
                        })
                    })
                    .collect::<Result<_, _>>()?,
                grant_key: Some(grant_key),
                gateway: gateway.as_deref().map(gateway::load_gateway).transpose()?,
                ..Settings::for_database(db.database_url)
            };
            hardening.apply(&mut settings);
            settings.webhooks = webhooks.settings();
            settings.notify = notify.settings(settings.webhooks.targets)?;
            settings.oidc = oidc.settings(settings.notify.public_url.as_ref())?;
            settings.metrics_token = metrics_token.map(crate::config::MetricsToken);
            settings.metrics_bind = metrics_bind;
            settings.retention = retention.settings();
            serve(settings).await
        }
        Command::Policy { command } => policy::run(command).await,
        Command::Migrate { db, grant_to } => migrate(&db.database_url, grant_to.as_ref()).await,
        Command::User { command } => accounts::user_command(command).await,
        Command::Token { command } => accounts::token_command(command).await,
        Command::Audit { command } => audit::run(command).await,
        Command::Proposal { command } => proposal::run(command).await,
        Command::Tool { command } => tool::run(command).await,
        Command::Gateway { command } => gateway::run(command).await,
        Command::Grant { command } => grant::run(command).await,
    }
}

/// The use cases over the database at `url`, for one-off commands (built-in policy: account
/// commands do not route anything).
pub(crate) async fn services(url: &str) -> Result<Services, String> {
    let (store, _) = open_store(url).await.map_err(|e| e.to_string())?;
    Ok(Services::new(
        store,
        std::sync::Arc::new(crate::domain::policy::model::Policy::builtin()),
    ))
}

async fn serve(settings: Settings) -> Result<(), String> {
    let app = Application::build(settings.clone())
        .await
        .map_err(|e| e.to_string())?;
    let addr = app.local_addr();
    if let Some(b) = app
        .services()
        .bootstrap_admin()
        .await
        .map_err(|e| e.to_string())?
    {
        // Printed, not logged: the one place this password ever appears.
        eprintln!(
            "\n  Countersign's first start created the account `{}` with the one-time password\n\n      {}\n\n  \
             Sign in at http://{addr}/login, then add reviewers with\n  \
             `countersign user add --username NAME --role reviewer`.\n",
            b.username,
            b.password.expose()
        );
    }
    tracing::info!(%addr, database = %redact_url(&settings.database_url), "Countersign is serving");
    app.run().await.map_err(|e| e.to_string())
}
