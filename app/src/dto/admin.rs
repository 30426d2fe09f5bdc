//! What the account and token admin pages show. Secrets appear here once: a new token or a
//! one-time password travels in [`ShownSecret`] to the one page that shows it, never logged.

use serde::{Deserialize, Serialize};

use crate::time::Moment;

/// A person, as the users page lists them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UserItem {
    /// Username.
    pub username: String,
    /// `admin`, `reviewer` or `compliance`; `None`: not granted yet (an account made at its
    /// first single sign-on), and so may do nothing.
    pub role: Option<String>,
    /// The domains they review, comma-separated (`None`: every domain).
    pub domains: Option<String>,
    /// The address they are emailed at about work they may decide.
    pub email: Option<String>,
    /// Whether they are disabled.
    pub disabled: bool,
}

/// A token, as the tokens page lists it (never its secret or hash).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokenItem {
    /// Id (what the revoke form sends).
    pub id: String,
    /// `agent` or `executor`.
    pub kind: String,
    /// Principal name.
    pub name: String,
    /// An executor's tool scope.
    pub scope: Option<String>,
    /// An agent's operator.
    pub operator: Option<String>,
    /// When it was created.
    pub created: Moment,
    /// When it was revoked, if it was.
    pub revoked: Option<Moment>,
    /// An agent token's callback URL.
    pub webhook: Option<String>,
    /// Hidden characters in its scope and callback URL (each shown escaped as `⟦U+…⟧`).
    pub hidden: usize,
}

/// A secret shown once: a new token or a one-time password.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShownSecret {
    /// What it is for (`agent sales-bot`, `user rita`).
    pub label: String,
    /// The secret itself.
    pub secret: String,
    /// A new agent token's webhook signing secret, shown with it.
    pub webhook_secret: Option<String>,
}

impl std::fmt::Debug for ShownSecret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ShownSecret")
            .field("label", &self.label)
            .finish_non_exhaustive()
    }
}

/// The users page.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UsersView {
    /// Every user, by name.
    pub users: Vec<UserItem>,
    /// A one-time password to show once, if the last change made one.
    pub shown: Option<ShownSecret>,
}

/// One webhook delivery, as the deliveries page lists it (never its body or secret).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WebhookDelivery {
    /// Its id (`Countersign-Delivery`).
    pub id: String,
    /// The agent whose token it belongs to.
    pub agent: String,
    /// The proposal it is about.
    pub proposal_id: String,
    /// Where it goes.
    pub url: String,
    /// `pending`, `delivered` or `failed` (given up).
    pub state: String,
    /// When it was queued.
    pub created: Moment,
    /// The next try, while pending.
    pub next_attempt: Option<Moment>,
    /// Every attempt, first first.
    pub attempts: Vec<WebhookAttempt>,
}

/// One attempt at a delivery.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WebhookAttempt {
    /// Its number (1 for the first).
    pub attempt: i32,
    /// When.
    pub at: Moment,
    /// The receiver's status code, if it answered.
    pub status: Option<i32>,
    /// Why it failed, if it did.
    pub error: Option<String>,
    /// How long it took.
    pub took_ms: i64,
}

/// One reviewers' notification (several share a send when folded into a digest).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NotificationItem {
    /// `slack`, `teams` or `webhook`.
    pub channel: String,
    /// `waiting`, `outcome_unknown`, `expiring`, `escalated`, `rollback`, `break_glass` or
    /// `policy_break_glass`.
    pub reason: String,
    /// What it is about, and where that is shown: a proposal's id and page, or a policy
    /// activation and `/policy`.
    pub about: (String, String),
    /// `pending`, `sent` or `failed`.
    pub state: String,
    /// The send that carried it.
    pub message_id: Option<String>,
    /// Attempts made.
    pub attempts: i32,
    /// When it was queued.
    pub created: Moment,
    /// The last attempt.
    pub last_attempt: Option<Moment>,
    /// The channel's last status code.
    pub last_status: Option<i32>,
    /// Why the last attempt failed.
    pub last_error: Option<String>,
}

/// The webhook deliveries page.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WebhooksView {
    /// The newest deliveries, newest first.
    pub deliveries: Vec<WebhookDelivery>,
    /// The newest reviewers' notifications, newest first.
    pub notifications: Vec<NotificationItem>,
}

/// The tokens page.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokensView {
    /// Every token, newest first.
    pub tokens: Vec<TokenItem>,
    /// A new token to show once, if the last change made one.
    pub shown: Option<ShownSecret>,
}

/// The gateway page: each upstream's state, and every tool the gateway has pinned.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GatewayView {
    /// Whether this server runs a gateway at all.
    pub configured: bool,
    /// Each upstream, by name, with its state (`starting`, `up`, `down`, `restarting`).
    pub upstreams: Vec<(String, String)>,
    /// Every pinned tool, changed ones first, then by name.
    pub tools: Vec<GatewayToolItem>,
}

/// One pinned gateway tool, and the changed definition its upstream serves now, if any.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GatewayToolItem {
    /// Internal name (`files.write_file`).
    pub name: String,
    /// Its upstream.
    pub upstream: String,
    /// `sha256:` of the pinned definition.
    pub pinned_sha256: String,
    /// The pinned definition as indented JSON (visible form).
    pub pinned: String,
    /// `sha256:` of a changed definition, withheld until accepted.
    pub offered_sha256: Option<String>,
    /// That definition as indented JSON (visible form).
    pub offered: Option<String>,
    /// The definition's fields that differ (`description`, `inputSchema`, …).
    pub changed_fields: Vec<String>,
    /// Hidden characters in both definitions' text.
    pub hidden: usize,
    /// When the tool was first seen.
    pub first_seen: Moment,
    /// When either definition last changed.
    pub updated: Moment,
}
