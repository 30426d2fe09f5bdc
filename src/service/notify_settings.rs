//! Where and how reviewers are notified (`serve --slack-webhook-url …`): the channels, their
//! addresses and secrets (never printed), and when each channel's window opens again. A leaf:
//! [`super::services::Services`] holds them, the notifier ([`super::notify`]) reads them.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

use time::OffsetDateTime;

use super::mail::Mailer;
use crate::domain::notify;

/// A channel's address; never printed (a Slack or Teams webhook URL is a credential).
#[derive(Clone, PartialEq, Eq)]
pub struct ChannelUrl(pub url::Url);

impl std::fmt::Debug for ChannelUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "ChannelUrl({}://{}/***)",
            self.0.scheme(),
            self.0.host_str().unwrap_or("")
        )
    }
}

impl std::str::FromStr for ChannelUrl {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        url::Url::parse(s.trim())
            .map(ChannelUrl)
            .map_err(|e| format!("not a URL ({e})"))
    }
}

/// Where and how reviewers are notified (`serve --slack-webhook-url …`).
#[derive(Debug, Clone, Default)]
pub struct NotifySettings {
    /// Email over SMTP, to each reviewer with an address (`--smtp-url`, `--smtp-from`).
    pub mailer: Option<Mailer>,
    /// Warn this long before a waiting proposal expires (`None`: [`DEFAULT_EXPIRY_WARNING`]).
    pub expiry_warning: Option<time::Duration>,
    /// Countersign's address as reviewers reach it, for links (`--public-url`).
    pub public_url: Option<url::Url>,
    /// A Slack incoming webhook.
    pub slack: Option<ChannelUrl>,
    /// A Microsoft Teams incoming webhook.
    pub teams: Option<ChannelUrl>,
    /// A generic webhook, and the secret its messages are signed with.
    pub webhook: Option<(ChannelUrl, SigningSecret)>,
    /// At most one message per channel in this long (`None`: [`notify::DEFAULT_WINDOW`]).
    pub window: Option<time::Duration>,
    /// The Slack app's signing secret: Slack messages then carry Approve and Reject buttons,
    /// answered at `POST /integrations/slack/actions`.
    pub slack_signing_secret: Option<SigningSecret>,
}

/// Reviewers hear that a proposal is about to expire undecided this long before.
pub const DEFAULT_EXPIRY_WARNING: time::Duration = time::Duration::minutes(15);

/// A signing secret (a Slack app's, the generic webhook's); never printed.
#[derive(Clone, PartialEq, Eq)]
pub struct SigningSecret(pub String);

impl std::fmt::Debug for SigningSecret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SigningSecret(***)")
    }
}

impl NotifySettings {
    /// The channels configured, by their stored names.
    pub fn channels(&self) -> Vec<&'static str> {
        let mut channels = Vec::new();
        if self.slack.is_some() {
            channels.push("slack");
        }
        if self.teams.is_some() {
            channels.push("teams");
        }
        if self.webhook.is_some() {
            channels.push("webhook");
        }
        // Last: a slow mail server holds up no shared channel.
        if self.mailer.is_some() {
            channels.push("email");
        }
        channels
    }

    pub(super) fn window(&self) -> time::Duration {
        self.window.unwrap_or(notify::DEFAULT_WINDOW)
    }

    /// How long before expiry reviewers are warned.
    pub fn expiry_warning(&self) -> time::Duration {
        self.expiry_warning.unwrap_or(DEFAULT_EXPIRY_WARNING)
    }

    pub(super) fn link(&self, path: &str) -> String {
        match &self.public_url {
            Some(base) => base
                .join(path)
                .map_or_else(|_| path.to_owned(), String::from),
            None => path.to_owned(),
        }
    }
}

/// When each channel's (each person's, on email) window opens again, as this instance last
/// saw it: the dispatcher, woken by every commit that queued something, leaves the database
/// alone until then. Another instance's sends only make the window later, which the database
/// says when it is asked.
#[derive(Debug, Default)]
pub(super) struct Windows(Mutex<HashMap<(&'static str, String), OffsetDateTime>>);

impl Windows {
    pub(super) fn closed(
        &self,
        channel: &'static str,
        recipient: &str,
        now: OffsetDateTime,
    ) -> bool {
        let key = (channel, recipient.to_owned());
        let opens = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        opens.get(&key).is_some_and(|at| now < *at)
    }

    pub(super) fn close_until(&self, channel: &'static str, recipient: &str, at: OffsetDateTime) {
        let mut opens = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        opens.insert((channel, recipient.to_owned()), at);
    }
}
