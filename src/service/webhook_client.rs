//! How agents' webhooks are sent: the settings (`serve --webhook-…`) and the HTTP client built
//! from them, which never follows redirects, ignores proxy settings from the environment and
//! resolves each callback's host through the operator's [`TargetPolicy`]; and [`describe`],
//! an error and its causes on one line. A leaf: [`super::services::Services`] holds the client,
//! the webhook dispatcher and the notifier use it.

use std::sync::Arc;
use std::time::Duration;

use crate::domain::webhook::{self, Retries, TargetPolicy};

/// How webhooks are sent (`serve --webhook-…`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WebhookSettings {
    /// Which callback targets are allowed beyond https and loopback.
    pub targets: TargetPolicy,
    /// When failed deliveries are tried again, and for how long.
    pub retries: Retries,
    /// How long one attempt may take.
    pub timeout: Duration,
}

impl Default for WebhookSettings {
    fn default() -> Self {
        Self {
            targets: TargetPolicy::default(),
            retries: Retries::default(),
            timeout: Duration::from_secs(10),
        }
    }
}

/// The dispatcher's settings and HTTP client.
pub(crate) struct Webhooks {
    pub(super) settings: WebhookSettings,
    pub(super) client: reqwest::Client,
}

impl Webhooks {
    pub(crate) fn new(settings: WebhookSettings) -> Self {
        let client = reqwest::Client::builder()
            .dns_resolver(Arc::new(GuardedResolver(settings.targets)))
            .redirect(reqwest::redirect::Policy::none())
            .no_proxy()
            .timeout(settings.timeout)
            .user_agent(concat!("Countersign-Webhooks/", env!("CARGO_PKG_VERSION")))
            .build()
            .unwrap_or_else(|e| {
                // Only a TLS back end that cannot start fails here; sending then fails loudly.
                tracing::error!(error = %e, "cannot build the webhook client");
                reqwest::Client::new()
            });
        Self { settings, client }
    }
}

/// Resolves a callback's host and keeps only the addresses the policy allows.
struct GuardedResolver(TargetPolicy);

impl reqwest::dns::Resolve for GuardedResolver {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let policy = self.0;
        Box::pin(async move {
            let host = name.as_str().to_owned();
            let found: Vec<_> = tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            let mut refused = None;
            let allowed: Vec<_> = found
                .into_iter()
                .filter(|a| match webhook::check_ip(a.ip(), policy) {
                    Ok(()) => true,
                    Err(why) => {
                        refused = Some(why);
                        false
                    }
                })
                .collect();
            if allowed.is_empty() {
                let why = refused.unwrap_or_else(|| "resolves to no address".into());
                return Err(format!("`{host}` {why}").into());
            }
            let addrs: reqwest::dns::Addrs = Box::new(allowed.into_iter());
            Ok(addrs)
        })
    }
}

/// An error and its causes, one line (the URL already taken out).
pub(super) fn describe(e: &reqwest::Error) -> String {
    let mut text = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}
