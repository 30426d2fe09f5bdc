//! Runtime settings: from flags with environment fallbacks (see `cli`), plus the Leptos
//! settings read from `Leptos.toml` at start.

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::time::Duration;

use crate::domain::sign_in::SessionLimits;

/// The default database: a SQLite file in the working directory.
pub const DEFAULT_DATABASE_URL: &str = "sqlite://countersign.db";

/// Where `serve` keeps its audit checkpoint key unless told otherwise.
pub const DEFAULT_AUDIT_KEY: &str = "countersign-audit.key";

/// Where `serve` keeps the key that signs executor grants unless told otherwise.
pub const DEFAULT_GRANT_KEY: &str = "countersign-grant.key";

/// What `serve` runs with.
#[derive(Debug, Clone)]
pub struct Settings {
    /// `sqlite://FILE` or `postgres://…`.
    pub database_url: String,
    /// Address to listen on; `None` means Leptos.toml's `site-addr`.
    pub bind: Option<SocketAddr>,
    /// Path of Leptos.toml.
    pub leptos_config: PathBuf,
    /// Mark the session cookie `Secure` (behind HTTPS).
    pub secure_cookies: bool,
    /// The routing policy file; `None` means the built-in default (every tool Category C).
    pub policy: Option<PathBuf>,
    /// The MCP gateway's upstreams (`serve --gateway`); `None`: no `/mcp/gateway`.
    pub gateway: Option<crate::domain::gateway::GatewayConfig>,
    /// The key that signs audit checkpoints; `None`: the head is not signed.
    pub audit_key: Option<PathBuf>,
    /// Earlier checkpoint public keys (hex) still trusted for older checkpoints.
    pub audit_earlier_keys: Vec<String>,
    /// The key that signs executor grants; `None`: a key generated for this process only.
    pub grant_key: Option<PathBuf>,
    /// How connections are served: timeouts and the connection cap.
    pub limits: ConnectionLimits,
    /// How long web sessions last.
    pub sessions: SessionLimits,
    /// Proxies whose `X-Forwarded-For` names the client (sign-in throttling counts by client
    /// address); nobody else's is believed.
    pub trusted_proxies: Vec<IpAddr>,
    /// Requests each API token may make.
    pub rate: RateLimit,
    /// Agents' webhooks: allowed targets, retries, time limit.
    pub webhooks: crate::service::WebhookSettings,
    /// The bearer token `GET /metrics` answers on the main listener (`None`: not there).
    pub metrics_token: Option<MetricsToken>,
    /// A separate listener serving `GET /metrics` without a token.
    pub metrics_bind: Option<SocketAddr>,
    /// Reviewers' notification channels and links.
    pub notify: crate::service::NotifySettings,
    /// Single sign-on through an OpenID provider (`None`: passwords only).
    pub oidc: Option<OidcSettings>,
    /// How long operational rows are kept before the background task prunes them.
    pub retention: crate::domain::retention::Retention,
}

/// Single sign-on through an OpenID provider (see docs/sso.md).
#[derive(Debug, Clone)]
pub struct OidcSettings {
    /// The provider's issuer URL (its discovery document is under it).
    pub issuer: String,
    /// This app's client id at the provider.
    pub client_id: String,
    /// This app's client secret at the provider (from the environment only).
    pub client_secret: OidcClientSecret,
    /// The ID token claim read for roles and domains.
    pub role_claim: String,
    /// Where the provider sends people back: the public URL + `/auth/oidc/callback`.
    pub redirect_url: String,
}

/// The OpenID client secret; never printed.
#[derive(Clone, PartialEq, Eq)]
pub struct OidcClientSecret(String);

impl OidcClientSecret {
    /// Wraps a secret.
    pub fn new(secret: String) -> Self {
        Self(secret)
    }

    /// The secret, for the token request only.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for OidcClientSecret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("OidcClientSecret(***)")
    }
}

/// The metrics scrape token; never printed.
#[derive(Clone, PartialEq, Eq)]
pub struct MetricsToken(pub String);

impl std::fmt::Debug for MetricsToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("MetricsToken(***)")
    }
}

/// Requests per API token (agent or executor): a steady rate with bursts; more are answered
/// `429` with `Retry-After`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RateLimit {
    /// Requests per second, sustained.
    pub per_second: u32,
    /// Requests allowed at once after a quiet spell.
    pub burst: u32,
    /// Requests waiting for a change (`?wait=`, event streams) each token may hold at once.
    pub waiting: u32,
}

impl Default for RateLimit {
    fn default() -> Self {
        Self {
            per_second: 100,
            burst: 200,
            waiting: 1_000,
        }
    }
}

/// What keeps slow or idle clients from holding connections.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnectionLimits {
    /// A request's line and headers must arrive within this; it is also how long a kept-alive
    /// connection may wait for its next request.
    pub header_timeout: Duration,
    /// A request's body must arrive within this of its headers.
    pub body_timeout: Duration,
    /// A connection whose client reads nothing of its answer for this long is closed.
    pub write_timeout: Duration,
    /// Connections served at once; more wait to be accepted.
    pub max_connections: usize,
    /// On shutdown, how long the requests in flight have to finish: the longest wait
    /// (`?wait=`, 60 s) with room to answer. What is still open then (event streams, which end
    /// only when their client leaves; gateway calls held longer or still running upstream) is
    /// cut as the process exits.
    pub drain_limit: Duration,
}

impl Default for ConnectionLimits {
    fn default() -> Self {
        Self {
            header_timeout: Duration::from_secs(10),
            body_timeout: Duration::from_secs(30),
            write_timeout: Duration::from_secs(30),
            max_connections: 512,
            drain_limit: Duration::from_secs(65),
        }
    }
}

impl Settings {
    /// Settings for `database_url` with every other value at its default.
    pub fn for_database(database_url: impl Into<String>) -> Self {
        Settings {
            database_url: database_url.into(),
            bind: None,
            leptos_config: PathBuf::from("Leptos.toml"),
            secure_cookies: false,
            policy: None,
            gateway: None,
            audit_key: None,
            audit_earlier_keys: Vec::new(),
            grant_key: None,
            rate: RateLimit::default(),
            limits: ConnectionLimits::default(),
            sessions: SessionLimits::default(),
            trusted_proxies: Vec::new(),
            webhooks: crate::service::WebhookSettings::default(),
            metrics_token: None,
            metrics_bind: None,
            notify: crate::service::NotifySettings::default(),
            oidc: None,
            retention: crate::domain::retention::Retention::default(),
        }
    }
}

/// The database URL as it may be logged: any password replaced.
pub fn redact_url(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(scheme), Some(at)) if at > scheme => {
            let userinfo = &url[scheme + 3..at];
            match userinfo.find(':') {
                Some(colon) => format!(
                    "{}{}:***{}",
                    &url[..scheme + 3],
                    &userinfo[..colon],
                    &url[at..]
                ),
                None => url.to_owned(),
            }
        }
        _ => url.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_client_secret_never_reaches_logs() {
        let secret = OidcClientSecret::new("hunter2-hunter2".into());
        assert_eq!(format!("{secret:?}"), "OidcClientSecret(***)");
    }

    #[test]
    fn passwords_never_reach_logs() {
        assert_eq!(
            redact_url("postgres://u:secret@h:5432/db"),
            "postgres://u:***@h:5432/db"
        );
        assert_eq!(redact_url("postgres://u@h/db"), "postgres://u@h/db");
        assert_eq!(
            redact_url("sqlite://countersign.db"),
            "sqlite://countersign.db"
        );
    }
}
