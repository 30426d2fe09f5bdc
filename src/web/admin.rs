//! The server's side of the account, token and gateway admin pages: the [`Admin`] port over
//! the account and gateway use cases. Admins only (deny by default); every refusal is recorded as `access.denied`.
//!
//! Secrets are shown once. A new token or one-time password is kept here, in memory, under a
//! random key bound to the admin who made it, for [`SHOWN_FOR`]; the redirect carries only
//! the key, and the next page view takes the secret out. Behind a load balancer the page after
//! the form must reach the same instance (else the secret is lost, never leaked: make another).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use app::dto::{
    AppError, GatewayToolItem, GatewayView, Notice, NotificationItem, ShownSecret, TokenItem,
    TokensView, UserItem, UsersView, Viewer, WebhookAttempt, WebhookDelivery, WebhooksView,
};
use app::ports::{Admin, AdminOutcome, TokenChange, UserChange};
use async_trait::async_trait;
use uuid::Uuid;

use super::{Flagged, internal, moment, principal, role_of};
use crate::audit::{AccessDenied, Actor, AuditEvent};
use crate::auth::token;
use crate::domain::access::{UseCase, authorize};
use crate::domain::command::scope::ToolScope;
use crate::domain::gateway::ToolPin;
use crate::domain::principal::{Principal, Role, TokenKind};
use crate::domain::webhook::DEFAULT_OVERLAP;
use crate::gateway::Gateway;
use crate::service::{AccountError, NewUser, RotateWhich, ServiceError, Services, TokenRequest};

/// Deliveries the webhooks page lists.
const DELIVERIES_SHOWN: i64 = 100;

/// How long a secret waits for its one showing.
pub const SHOWN_FOR: Duration = Duration::from_secs(300);

/// A secret waiting to be shown. Deliberately not `Debug`.
struct Waiting {
    owner: String,
    made: Made,
    at: Instant,
}

/// Secrets a change made, to show once: what they are for, the secret, and a new agent
/// token's webhook secret. Deliberately not `Debug`.
struct Made {
    label: String,
    secret: String,
    webhook_secret: Option<String>,
}

impl Made {
    fn one(label: String, secret: String) -> Self {
        Self {
            label,
            secret,
            webhook_secret: None,
        }
    }
}

/// Accounts, tokens and the gateway's tools over the use cases.
pub struct AccountsAdmin {
    services: Services,
    gateway: Option<Arc<Gateway>>,
    waiting: Mutex<HashMap<String, Waiting>>,
}

impl AccountsAdmin {
    /// The admin port over the use cases; `gateway` the running MCP gateway, if any (its
    /// upstreams' states).
    pub fn new(services: Services, gateway: Option<Arc<Gateway>>) -> Arc<Self> {
        Arc::new(Self {
            services,
            gateway,
            waiting: Mutex::default(),
        })
    }

    /// Keeps `secret` for one showing to `owner`; the key to show it under.
    fn keep(&self, owner: &str, made: Made) -> Option<String> {
        let key = token::random_hex();
        let mut waiting = self.waiting.lock().ok()?;
        waiting.retain(|_, w| w.at.elapsed() < SHOWN_FOR);
        let w = Waiting {
            owner: owner.to_owned(),
            made,
            at: Instant::now(),
        };
        waiting.insert(key.clone(), w);
        Some(key)
    }

    /// Takes the secret kept under `key` for `owner`, if it is still waiting.
    fn take(&self, owner: &str, key: Option<&str>) -> Option<ShownSecret> {
        let mut waiting = self.waiting.lock().ok()?;
        let w = waiting.remove(key?)?;
        (w.owner == owner && w.at.elapsed() < SHOWN_FOR).then_some(ShownSecret {
            label: w.made.label,
            secret: w.made.secret,
            webhook_secret: w.made.webhook_secret,
        })
    }

    /// The principal behind `viewer` when the table lets them call `use_case`; otherwise
    /// records `access.denied` and answers `Forbidden`. The service checks again.
    async fn admin_only(&self, viewer: &Viewer, use_case: UseCase) -> Result<Principal, AppError> {
        let who = principal(&self.services, viewer).await?;
        if authorize(&who, use_case).is_ok() {
            return Ok(who);
        }
        let event = AuditEvent::AccessDenied(AccessDenied {
            page: "/admin",
            role: Some(role_of(viewer)),
        });
        self.services
            .record_security(&Actor::of(&who), event)
            .await
            .map_err(internal)?;
        Err(AppError::Forbidden(
            "only an admin may manage accounts and tokens".into(),
        ))
    }
}

fn done(notice: Notice, shown: Option<String>) -> AdminOutcome {
    AdminOutcome {
        notice,
        refused: false,
        shown,
    }
}

fn refused(notice: Notice) -> AdminOutcome {
    AdminOutcome {
        notice,
        refused: true,
        shown: None,
    }
}

/// The notice an account error shows; internal errors are logged, never echoed.
fn account_refusal(e: AccountError) -> Result<AdminOutcome, AppError> {
    Ok(refused(match e {
        AccountError::Invalid(_) => Notice::AccountInvalid,
        AccountError::Taken(_) => Notice::UsernameTaken,
        AccountError::Missing(_) => Notice::AccountMissing,
        AccountError::LastAdmin(_) => Notice::LastAdmin,
        AccountError::Service(ServiceError::Denied(_)) => Notice::AdminRole,
        AccountError::Service(e) => return Err(internal(e)),
    }))
}

/// A pinned gateway tool as the gateway page shows it: both definitions as indented JSON,
/// made visible, and the top-level fields in which they differ.
fn gateway_tool(pin: ToolPin, now: time::OffsetDateTime) -> GatewayToolItem {
    let mut shown = Flagged::default();
    let mut json = |v: &serde_json::Value| {
        let text = serde_json::to_string_pretty(v).unwrap_or_else(|_| v.to_string());
        shown.text(&text)
    };
    let pinned_json = pin.pinned.as_json();
    let offered_json = pin.offered.as_ref().map(|d| d.as_json());
    let changed_fields = match (
        pinned_json.as_object(),
        offered_json.as_ref().and_then(|o| o.as_object()),
    ) {
        (Some(before), Some(after)) => {
            let mut keys: Vec<String> = before.keys().chain(after.keys()).cloned().collect();
            keys.sort();
            keys.dedup();
            keys.retain(|k| before.get(k) != after.get(k));
            keys
        }
        _ => Vec::new(),
    };
    GatewayToolItem {
        pinned: json(&pinned_json),
        offered: offered_json.as_ref().map(&mut json),
        pinned_sha256: pin.pinned.sha256(),
        offered_sha256: pin.offered.as_ref().map(|d| d.sha256()),
        changed_fields,
        hidden: shown.hidden,
        first_seen: moment(pin.first_seen_at, now),
        updated: moment(pin.updated_at, now),
        name: pin.name,
        upstream: pin.upstream,
    }
}

fn parse_role(role: &str) -> Result<Role, AccountError> {
    Role::parse(role.trim()).ok_or_else(|| AccountError::Invalid(format!("role `{role}`")))
}

/// Domains as typed: blank is every domain.
fn parse_domains(domains: Option<&str>) -> Result<Option<Vec<String>>, AccountError> {
    match domains.map(str::trim).filter(|d| !d.is_empty()) {
        None => Ok(None),
        Some(d) => crate::domain::queue::parse_domains(d)
            .map(Some)
            .map_err(AccountError::Invalid),
    }
}

fn one_time_password() -> String {
    token::random_hex()[..24].to_owned()
}

impl AccountsAdmin {
    async fn apply_user(
        &self,
        actor: &Principal,
        change: UserChange,
    ) -> Result<(Notice, Option<Made>), AccountError> {
        let s = &self.services;
        Ok(match change {
            UserChange::Add {
                username,
                role,
                domains,
                email,
            } => {
                let password = one_time_password();
                let new = NewUser {
                    domains: parse_domains(domains.as_deref())?,
                    email: email.filter(|e| !e.trim().is_empty()),
                    ..NewUser::new(username.trim(), parse_role(&role)?, &password)
                };
                s.add_user(actor, new).await?;
                let label = format!("user {}", username.trim());
                (Notice::UserAdded, Some(Made::one(label, password)))
            }
            UserChange::Disable(username) => {
                s.disable_user(actor, &username).await?;
                (Notice::UserDisabled, None)
            }
            UserChange::Enable(username) => {
                s.enable_user(actor, &username).await?;
                (Notice::UserEnabled, None)
            }
            UserChange::ResetPassword(username) => {
                let password = one_time_password();
                s.reset_password(actor, &username, password.clone()).await?;
                let label = format!("user {username}");
                (Notice::PasswordReset, Some(Made::one(label, password)))
            }
            UserChange::Role { username, role } => {
                s.set_role(actor, &username, parse_role(&role)?).await?;
                (Notice::RoleChanged, None)
            }
            UserChange::Domains { username, domains } => {
                s.set_domains(actor, &username, parse_domains(domains.as_deref())?)
                    .await?;
                (Notice::DomainsChanged, None)
            }
            UserChange::Email { username, email } => {
                let email = email.filter(|e| !e.trim().is_empty());
                s.set_email(actor, &username, email.as_deref()).await?;
                (Notice::EmailChanged, None)
            }
        })
    }

    async fn apply_token(
        &self,
        actor: &Principal,
        change: TokenChange,
    ) -> Result<(Notice, Option<Made>), AccountError> {
        match change {
            TokenChange::Create {
                kind,
                name,
                tools,
                operator,
                webhook,
            } => {
                let kind = TokenKind::parse(kind.trim())
                    .ok_or_else(|| AccountError::Invalid(format!("token kind `{kind}`")))?;
                let tools = tools.as_deref().map(str::trim).filter(|t| !t.is_empty());
                let scope = tools
                    .map(ToolScope::parse_list)
                    .transpose()
                    .map_err(AccountError::Invalid)?;
                let request = TokenRequest {
                    scope: scope.as_ref(),
                    operator: operator.as_deref(),
                    webhook: webhook.as_deref(),
                    ..TokenRequest::new(kind, name.trim())
                };
                let created = self.services.create_operated_token(actor, request).await?;
                let made = Made {
                    label: format!("{kind} {}", name.trim()),
                    secret: created.token.expose().to_owned(),
                    webhook_secret: created.webhook_secret.map(|s| s.expose().to_owned()),
                };
                Ok((Notice::TokenCreated, Some(made)))
            }
            TokenChange::Revoke(id) => {
                let id = Uuid::parse_str(id.trim())
                    .map_err(|_| AccountError::Missing("token".into()))?;
                self.services.revoke_token(actor, id).await?;
                Ok((Notice::TokenRevoked, None))
            }
            TokenChange::RotateWebhookSecret(id) => {
                let id = Uuid::parse_str(id.trim())
                    .map_err(|_| AccountError::Missing("token".into()))?;
                let mut rotated = self
                    .services
                    .rotate_webhook_secrets(actor, RotateWhich::Token(id), DEFAULT_OVERLAP)
                    .await?;
                let made = rotated.pop().map(|r| {
                    let label =
                        format!("the webhook of agent {} (its new signing secret)", r.agent);
                    Made::one(label, r.secret.expose().to_owned())
                });
                Ok((Notice::WebhookSecretRotated, made))
            }
        }
    }

    fn outcome(
        &self,
        viewer: &Viewer,
        applied: Result<(Notice, Option<Made>), AccountError>,
    ) -> Result<AdminOutcome, AppError> {
        match applied {
            Ok((notice, made)) => {
                let shown = made.and_then(|m| self.keep(&viewer.username, m));
                Ok(done(notice, shown))
            }
            Err(e) => account_refusal(e),
        }
    }
}

#[async_trait]
impl Admin for AccountsAdmin {
    async fn users(&self, viewer: &Viewer, shown: Option<&str>) -> Result<UsersView, AppError> {
        let who = self.admin_only(viewer, UseCase::ListUsers).await?;
        let users = self.services.list_users(&who).await.map_err(internal)?;
        Ok(UsersView {
            users: users
                .into_iter()
                .map(|u| UserItem {
                    username: u.username,
                    role: u.role,
                    domains: u.domains.map(|d| d.0.join(", ")),
                    email: u.email,
                    disabled: u.disabled_at.is_some(),
                })
                .collect(),
            shown: self.take(&viewer.username, shown),
        })
    }

    async fn tokens(&self, viewer: &Viewer, shown: Option<&str>) -> Result<TokensView, AppError> {
        let who = self.admin_only(viewer, UseCase::ManageTokens).await?;
        let tokens = self.services.list_tokens(&who).await.map_err(internal)?;
        let now = self.services.now();
        Ok(TokensView {
            tokens: tokens
                .into_iter()
                .map(|t| {
                    // What a token grants, shown as agent-written text is: hidden characters
                    // escaped and flagged.
                    let mut shown = Flagged::default();
                    TokenItem {
                        id: t.id.to_string(),
                        kind: t.kind,
                        name: t.name,
                        scope: t.tool_scope.map(|s| shown.text(&s)),
                        operator: t.operator,
                        created: moment(t.created_at, now),
                        revoked: t.revoked_at.map(|r| moment(r, now)),
                        webhook: t.webhook_url.map(|u| shown.text(&u)),
                        hidden: shown.hidden,
                    }
                })
                .collect(),
            shown: self.take(&viewer.username, shown),
        })
    }

    async fn webhooks(&self, viewer: &Viewer) -> Result<WebhooksView, AppError> {
        let who = self.admin_only(viewer, UseCase::ManageTokens).await?;
        let now = self.services.now();
        let deliveries = (self.services)
            .webhook_deliveries(&who, DELIVERIES_SHOWN)
            .await
            .map_err(internal)?;
        let notifications = (self.services)
            .recent_notifications(&who, DELIVERIES_SHOWN)
            .await
            .map_err(internal)?
            .into_iter()
            .map(|n| NotificationItem {
                channel: n.channel,
                reason: n.reason,
                about: match (n.proposal_id, n.policy_activation) {
                    (Some(id), _) => (id.to_string(), format!("/proposals/{id}")),
                    (None, seq) => (
                        format!("policy activation {}", seq.unwrap_or_default()),
                        "/policy".to_owned(),
                    ),
                },
                state: n.state,
                message_id: n.message_id.map(|m| m.to_string()),
                attempts: n.attempts,
                created: moment(n.created_at, now),
                last_attempt: n.last_attempt_at.map(|t| moment(t, now)),
                last_status: n.last_status,
                last_error: n.last_error,
            })
            .collect();
        Ok(WebhooksView {
            notifications,
            deliveries: deliveries
                .into_iter()
                .map(|(d, attempts)| WebhookDelivery {
                    id: d.id.to_string(),
                    agent: d.agent,
                    proposal_id: d.proposal_id.to_string(),
                    url: d.url,
                    state: d.state,
                    created: moment(d.created_at, now),
                    next_attempt: d.next_attempt_at.map(|t| moment(t, now)),
                    attempts: attempts
                        .into_iter()
                        .map(|a| WebhookAttempt {
                            attempt: a.attempt,
                            at: moment(a.at, now),
                            status: a.status,
                            error: a.error,
                            took_ms: a.took_ms,
                        })
                        .collect(),
                })
                .collect(),
        })
    }

    async fn change_user(
        &self,
        viewer: &Viewer,
        change: UserChange,
    ) -> Result<AdminOutcome, AppError> {
        let actor = match self.admin_only(viewer, UseCase::ChangeUser).await {
            Ok(actor) => actor,
            Err(AppError::Forbidden(_)) => return Ok(refused(Notice::AdminRole)),
            Err(e) => return Err(e),
        };
        let applied = self.apply_user(&actor, change).await;
        self.outcome(viewer, applied)
    }

    async fn change_token(
        &self,
        viewer: &Viewer,
        change: TokenChange,
    ) -> Result<AdminOutcome, AppError> {
        let actor = match self.admin_only(viewer, UseCase::ManageTokens).await {
            Ok(actor) => actor,
            Err(AppError::Forbidden(_)) => return Ok(refused(Notice::AdminRole)),
            Err(e) => return Err(e),
        };
        let applied = self.apply_token(&actor, change).await;
        self.outcome(viewer, applied)
    }

    async fn gateway(&self, viewer: &Viewer) -> Result<GatewayView, AppError> {
        let who = self.admin_only(viewer, UseCase::ManageGateway).await?;
        let pins = self.services.gateway_tools(&who).await.map_err(internal)?;
        let now = self.services.now();
        let mut tools: Vec<GatewayToolItem> =
            pins.into_iter().map(|p| gateway_tool(p, now)).collect();
        tools.sort_by(|a, b| (a.offered.is_none(), &a.name).cmp(&(b.offered.is_none(), &b.name)));
        let upstreams = (self.gateway.iter())
            .flat_map(|g| g.states())
            .map(|(name, state)| (name, state.as_str().to_owned()))
            .collect();
        Ok(GatewayView {
            configured: self.gateway.is_some(),
            upstreams,
            tools,
        })
    }

    async fn accept_gateway_tool(
        &self,
        viewer: &Viewer,
        name: &str,
        seen: &str,
    ) -> Result<AdminOutcome, AppError> {
        let actor = match self.admin_only(viewer, UseCase::ManageGateway).await {
            Ok(actor) => actor,
            Err(AppError::Forbidden(_)) => return Ok(refused(Notice::AdminRole)),
            Err(e) => return Err(e),
        };
        match self
            .services
            .accept_gateway_tool(&actor, name, Some(seen))
            .await
        {
            Ok(_) => Ok(done(Notice::GatewayToolAccepted, None)),
            Err(ServiceError::Invalid(e)) if e.iter().any(|e| e.field == "sha256") => {
                Ok(refused(Notice::DefinitionChangedAgain))
            }
            Err(ServiceError::NotFound | ServiceError::Invalid(_)) => {
                Ok(refused(Notice::NothingToAccept))
            }
            Err(ServiceError::Denied(_)) => Ok(refused(Notice::AdminRole)),
            Err(e) => Err(internal(e)),
        }
    }
}
