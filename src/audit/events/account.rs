//! Accounts, sign-in and other security events, the policy in force, and exports of the trail.

use std::collections::BTreeMap;

use serde::Serialize;
use uuid::Uuid;

use super::payload::Payload;
use crate::domain::principal::{Role, TokenKind};

const ACTIVE: &str = "active";

/// Payload of `user.created`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct UserCreated {
    /// The account.
    #[serde(skip)]
    pub user_id: Uuid,
    /// Username.
    pub username: String,
    /// Role (`null`: none yet, an account made at its first single sign-on).
    pub role: Option<Role>,
    /// How the account came to be, when not by an admin: `oidc` (its first single sign-on).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub via: Option<&'static str>,
}

impl Payload for UserCreated {
    fn kind(&self) -> &'static str {
        "user.created"
    }
    fn subject(&self) -> (&'static str, String) {
        ("user", self.user_id.to_string())
    }
    fn change(&self) -> (Option<String>, Option<String>) {
        (None, Some(ACTIVE.into()))
    }
}

/// Payload of `token.created`. The secret never enters the trail.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TokenCreated {
    /// The token's id.
    #[serde(skip)]
    pub token_id: Uuid,
    /// Agent or executor.
    pub kind: TokenKind,
    /// Principal name.
    pub name: String,
    /// An executor token's tool scope (globs), as created.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_scope: Option<String>,
    /// An agent token's operator: the person who runs the agent (and so may not approve
    /// its proposals).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub operator: Option<String>,
    /// An agent token's webhook: its origin only (`https://host:port`); a path or query may
    /// carry a secret.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub webhook_origin: Option<String>,
}

impl Payload for TokenCreated {
    fn kind(&self) -> &'static str {
        "token.created"
    }
    fn subject(&self) -> (&'static str, String) {
        ("token", self.token_id.to_string())
    }
    fn change(&self) -> (Option<String>, Option<String>) {
        (None, Some(ACTIVE.into()))
    }
}

/// Payload of `auth.signed_in` (the row's actor is the person).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SignedIn {
    /// Username.
    #[serde(skip)]
    pub username: String,
    /// Role at sign-in (`null`: none granted yet; such a session may do nothing).
    pub role: Option<Role>,
    /// How, when not by password: `oidc` (single sign-on).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub via: Option<&'static str>,
}

impl Payload for SignedIn {
    fn kind(&self) -> &'static str {
        "auth.signed_in"
    }
    fn subject(&self) -> (&'static str, String) {
        ("user", self.username.clone())
    }
}

/// Payload of `auth.sign_in_failed`. What was typed as a username is recorded only when an
/// account of that name exists: anything else may be a password typed into the wrong box.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SignInFailed {
    /// The account, when one of that name exists.
    #[serde(skip)]
    pub username: Option<String>,
    /// `wrong_password`, `disabled` or `unknown_user`; for single sign-on one of the
    /// `oidc_…` reasons (the provider refused, the state did not match, the ID token or the
    /// code did not check out, the account is disabled).
    pub reason: &'static str,
}

impl Payload for SignInFailed {
    fn kind(&self) -> &'static str {
        "auth.sign_in_failed"
    }
    fn subject(&self) -> (&'static str, String) {
        (
            "user",
            self.username.clone().unwrap_or_else(|| "unknown".into()),
        )
    }
}

/// Payload of `auth.sign_in_throttled`: an attempt refused without checking its password,
/// because its account or its client address failed too often lately. What was typed as a
/// username is recorded only when an account of that name exists (as for
/// `auth.sign_in_failed`); the client's address only as its keyed hash.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SignInThrottled {
    /// The account, when one of that name exists.
    #[serde(skip)]
    pub username: Option<String>,
    /// `account` or `address`: which count refused it.
    pub scope: &'static str,
    /// Seconds until the next attempt is let through.
    pub retry_after_secs: i64,
    /// The keyed hash of the client's address (IPv6: its /64).
    pub client: String,
}

impl Payload for SignInThrottled {
    fn kind(&self) -> &'static str {
        "auth.sign_in_throttled"
    }
    fn subject(&self) -> (&'static str, String) {
        (
            "user",
            self.username.clone().unwrap_or_else(|| "unknown".into()),
        )
    }
}

/// Payload of `auth.session_ended`: a session ended without its owner signing out.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SessionEnded {
    /// Username.
    #[serde(skip)]
    pub username: String,
    /// `idle`, `lifetime`, `disabled`, `account_gone`, `role_changed` or
    /// `signed_out_everywhere`.
    pub reason: &'static str,
}

impl Payload for SessionEnded {
    fn kind(&self) -> &'static str {
        "auth.session_ended"
    }
    fn subject(&self) -> (&'static str, String) {
        ("user", self.username.clone())
    }
}

/// Payload of `auth.signed_out`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SignedOut {
    /// Username.
    #[serde(skip)]
    pub username: String,
}

impl Payload for SignedOut {
    fn kind(&self) -> &'static str {
        "auth.signed_out"
    }
    fn subject(&self) -> (&'static str, String) {
        ("user", self.username.clone())
    }
}

/// Payload of `auth.csrf_rejected`: a state-changing form without this session's token.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CsrfRejected {
    /// Which form (`login`, `logout`, `decide`, `erase`, `verify`).
    pub form: &'static str,
    /// Whether the session was signed in.
    pub signed_in: bool,
}

impl Payload for CsrfRejected {
    fn kind(&self) -> &'static str {
        "auth.csrf_rejected"
    }
    fn subject(&self) -> (&'static str, String) {
        ("form", self.form.to_owned())
    }
}

/// Payload of `access.denied`: a signed-in person's role may not see a page or do an action.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AccessDenied {
    /// The page or action (`/audit`, `/audit/charts`, `erase`, …).
    pub page: &'static str,
    /// Their role (absent when nobody was signed in).
    pub role: Option<Role>,
}

impl Payload for AccessDenied {
    fn kind(&self) -> &'static str {
        "access.denied"
    }
    fn subject(&self) -> (&'static str, String) {
        ("page", self.page.to_owned())
    }
}

/// Payload of `policy.loaded`: the server started with this policy.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PolicyLoaded {
    /// The policy's version (`sha256:` of its canonical form).
    pub policy_version: String,
    /// `file` or `built-in`.
    pub source: &'static str,
    /// Tool rules in it.
    pub tool_rules: usize,
}

impl Payload for PolicyLoaded {
    fn kind(&self) -> &'static str {
        "policy.loaded"
    }
    fn subject(&self) -> (&'static str, String) {
        ("policy", self.policy_version.clone())
    }
}

/// Payload of `audit.exported`: a selection of the trail left the system.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AuditExported {
    /// The filters that chose the events (names and values the officer typed, bounded).
    pub selection: BTreeMap<String, String>,
    /// Events exported.
    pub count: i64,
    /// First seq exported.
    pub first_seq: i64,
    /// Last seq exported.
    pub last_seq: i64,
    /// `zip` (download) or `directory` (CLI).
    pub format: &'static str,
}

impl Payload for AuditExported {
    fn kind(&self) -> &'static str {
        "audit.exported"
    }
    fn subject(&self) -> (&'static str, String) {
        ("audit", "export".to_owned())
    }
}

/// Payload of `user.role_changed`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RoleChanged {
    /// The account.
    #[serde(skip)]
    pub user_id: Uuid,
    /// Username.
    pub username: String,
    /// Role before (`null`: none).
    pub from: Option<Role>,
    /// Role after (`null`: taken away, when the identity provider's claim that granted it
    /// stopped granting it).
    pub to: Option<Role>,
}

impl Payload for RoleChanged {
    fn kind(&self) -> &'static str {
        "user.role_changed"
    }
    fn subject(&self) -> (&'static str, String) {
        ("user", self.user_id.to_string())
    }
}

/// Payload of `user.disabled`: the account can no longer sign in; its sessions end.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct UserDisabled {
    /// The account.
    #[serde(skip)]
    pub user_id: Uuid,
    /// Username.
    pub username: String,
}

impl Payload for UserDisabled {
    fn kind(&self) -> &'static str {
        "user.disabled"
    }
    fn subject(&self) -> (&'static str, String) {
        ("user", self.user_id.to_string())
    }
    fn change(&self) -> (Option<String>, Option<String>) {
        (Some(ACTIVE.into()), Some("disabled".into()))
    }
}

/// Payload of `user.enabled`: a disabled account may sign in again.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct UserEnabled {
    /// The account.
    #[serde(skip)]
    pub user_id: Uuid,
    /// Username.
    pub username: String,
}

impl Payload for UserEnabled {
    fn kind(&self) -> &'static str {
        "user.enabled"
    }
    fn subject(&self) -> (&'static str, String) {
        ("user", self.user_id.to_string())
    }
    fn change(&self) -> (Option<String>, Option<String>) {
        (Some("disabled".into()), Some(ACTIVE.into()))
    }
}

/// Payload of `user.password_reset`: the account has a new password; every session of it
/// ended.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PasswordReset {
    /// The account.
    #[serde(skip)]
    pub user_id: Uuid,
    /// Username.
    pub username: String,
}

impl Payload for PasswordReset {
    fn kind(&self) -> &'static str {
        "user.password_reset"
    }
    fn subject(&self) -> (&'static str, String) {
        ("user", self.user_id.to_string())
    }
}

/// Payload of `token.revoked`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TokenRevoked {
    /// The token's id.
    #[serde(skip)]
    pub token_id: Uuid,
    /// Agent or executor.
    pub kind: TokenKind,
    /// Principal name.
    pub name: String,
}

impl Payload for TokenRevoked {
    fn kind(&self) -> &'static str {
        "token.revoked"
    }
    fn subject(&self) -> (&'static str, String) {
        ("token", self.token_id.to_string())
    }
    fn change(&self) -> (Option<String>, Option<String>) {
        (Some(ACTIVE.into()), Some("revoked".into()))
    }
}

/// Payload of `token.webhook_secret_rotated`: an agent token's callback got a new signing
/// secret; the old one signs too until `previous_until`. Neither secret enters the trail.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct WebhookSecretRotated {
    /// The token's id.
    #[serde(skip)]
    pub token_id: Uuid,
    /// The agent.
    pub name: String,
    /// Until when the replaced secret signs too (RFC 3339; `None`: it stopped at once).
    pub previous_until: Option<String>,
}

impl Payload for WebhookSecretRotated {
    fn kind(&self) -> &'static str {
        "token.webhook_secret_rotated"
    }
    fn subject(&self) -> (&'static str, String) {
        ("token", self.token_id.to_string())
    }
}

/// Payload of `user.email_changed`: where a person's notifications go changed. The address
/// itself is personal data and stays out of the trail.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EmailChanged {
    /// The account.
    #[serde(skip)]
    pub user_id: Uuid,
    /// Username.
    pub username: String,
    /// Whether they have an address now.
    pub has_email: bool,
}

impl Payload for EmailChanged {
    fn kind(&self) -> &'static str {
        "user.email_changed"
    }
    fn subject(&self) -> (&'static str, String) {
        ("user", self.user_id.to_string())
    }
}

/// Payload of `user.domains_changed`: the domains a person sees and decides.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DomainsChanged {
    /// The account.
    #[serde(skip)]
    pub user_id: Uuid,
    /// Username.
    pub username: String,
    /// Domains before (`null`: every domain).
    pub from: Option<Vec<String>>,
    /// Domains after (`null`: every domain).
    pub to: Option<Vec<String>>,
}

impl Payload for DomainsChanged {
    fn kind(&self) -> &'static str {
        "user.domains_changed"
    }
    fn subject(&self) -> (&'static str, String) {
        ("user", self.user_id.to_string())
    }
}
