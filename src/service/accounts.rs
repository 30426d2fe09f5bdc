//! People and machine principals: users with argon2id passwords (hashed off the async
//! runtime), API tokens shown once and stored hashed, the one-time bootstrap admin of a fresh
//! installation, roles, disabling and password resets (both end the account's sessions).
//! Signing in is [`super::sign_in`].

use crate::domain::access::UseCase;
use crate::domain::principal::Principal;
use crate::domain::sso::RoleSource;
use uuid::Uuid;

use super::error::{AccountError, Conflict, ServiceError};
use super::services::Services;
use super::slack::check_slack_id;
use crate::audit::{
    Actor, AuditEvent, DomainsChanged, EmailChanged, PasswordReset, RoleChanged, TokenCreated,
    TokenRevoked, UserCreated, UserDisabled,
};
use crate::auth::password::Password;
use crate::auth::token::{self, Secret};
use crate::domain::command::scope::ToolScope;
use crate::domain::principal::{AdminChange, Role, TokenKind, keeps_an_admin, parse_name};
use crate::domain::webhook::check_url;
use crate::storage::accounts::{self, NewToken, UserRecord};
use crate::storage::alerts;

/// A person to add, with everything their account starts with.
#[derive(Debug, Clone)]
pub struct NewUser {
    /// Username.
    pub username: String,
    /// Role.
    pub role: Role,
    /// Initial password (a one-time one from the admin page).
    pub password: String,
    /// The domains they review (`None`: every domain).
    pub domains: Option<Vec<String>>,
    /// The address they are emailed at.
    pub email: Option<String>,
    /// Their Slack user id.
    pub slack_id: Option<String>,
}

impl NewUser {
    /// A person with `role` and `password`, limited to no domain, with no address.
    pub fn new(username: &str, role: Role, password: &str) -> Self {
        Self {
            username: username.to_owned(),
            role,
            password: password.to_owned(),
            domains: None,
            email: None,
            slack_id: None,
        }
    }
}

/// The account made on a fresh installation, with its one-time password.
pub struct Bootstrap {
    /// Username (`admin`).
    pub username: String,
    /// The password, shown once.
    pub password: Secret,
}

/// A token to create.
pub struct TokenRequest<'a> {
    /// Agent or executor.
    pub kind: TokenKind,
    /// The agent's or executor's name.
    pub name: &'a str,
    /// An executor token's tool scope.
    pub scope: Option<&'a ToolScope>,
    /// An agent token's operator (a username).
    pub operator: Option<&'a str>,
    /// An agent token's callback URL.
    pub webhook: Option<&'a str>,
}

impl<'a> TokenRequest<'a> {
    /// A plain token for `name`: no scope, operator or webhook.
    pub fn new(kind: TokenKind, name: &'a str) -> Self {
        Self {
            kind,
            name,
            scope: None,
            operator: None,
            webhook: None,
        }
    }
}

/// A created token's secrets, shown once.
pub struct CreatedToken {
    /// The bearer token.
    pub token: Secret,
    /// The secret that signs its webhook deliveries, when it has a webhook.
    pub webhook_secret: Option<Secret>,
}

impl Services {
    /// Adds a person with everything the admin asked for — role, domains, email address,
    /// Slack id — in one change: the account never exists without the domain limit it was
    /// made with. Audited as `user.created`, with `user.domains_changed` and
    /// `user.email_changed` when given.
    pub async fn add_user(&self, who: &Principal, new: NewUser) -> Result<(), AccountError> {
        self.authorize(who, UseCase::AddUser)?;
        self.insert_user(Actor::of(who), new).await
    }

    /// Adds `new` for `actor`, whoever decided it may.
    async fn insert_user(&self, actor: Actor, new: NewUser) -> Result<(), AccountError> {
        let username = parse_name(&new.username).map_err(AccountError::Invalid)?;
        let email = new
            .email
            .as_deref()
            .map(super::mail::check_address)
            .transpose()
            .map_err(AccountError::Invalid)?;
        let slack_id = new.slack_id.as_deref().map(check_slack_id).transpose()?;
        let password = Password::new(new.password).map_err(AccountError::Invalid)?;
        let password_hash = self
            .hashing()
            .hash(password)
            .await
            .map_err(AccountError::Invalid)?;
        let user = UserRecord {
            id: Uuid::now_v7(),
            username: username.clone(),
            password_hash,
            role: Some(new.role),
            disabled: false,
            session_epoch: 0,
        };
        let (now, domains) = (self.now(), new.domains);
        let added = self
            .store()
            .write(move |tx| {
                Box::pin(async move {
                    if !accounts::insert_user(tx.conn(), &user, now).await? {
                        return Err(ServiceError::Conflict(Conflict::UsernameTaken));
                    }
                    let (id, name) = (user.id, user.username.clone());
                    let created = UserCreated {
                        user_id: id,
                        username: name.clone(),
                        role: user.role,
                        via: None,
                    };
                    tx.record(now, &actor, AuditEvent::UserCreated(created));
                    if let Some(to) = domains {
                        accounts::set_user_domains(tx.conn(), &name, Some(&to)).await?;
                        let event = DomainsChanged {
                            user_id: id,
                            username: name.clone(),
                            from: None,
                            to: Some(to),
                        };
                        tx.record(now, &actor, AuditEvent::DomainsChanged(event));
                    }
                    if let Some(email) = email {
                        alerts::set_email(tx.conn(), &name, Some(&email)).await?;
                        let event = EmailChanged {
                            user_id: id,
                            username: name.clone(),
                            has_email: true,
                        };
                        tx.record(now, &actor, AuditEvent::EmailChanged(event));
                    }
                    if let Some(slack_id) = slack_id {
                        crate::storage::slack::set_slack_id(tx.conn(), &name, Some(&slack_id))
                            .await?;
                    }
                    Ok(())
                })
            })
            .await;
        match added {
            Err(ServiceError::Conflict(Conflict::UsernameTaken)) => {
                Err(AccountError::Taken(username))
            }
            other => Ok(other?),
        }
    }

    /// Creates an API token for an agent or executor and returns the secret, to show once.
    pub async fn create_token(
        &self,
        who: &Principal,
        kind: TokenKind,
        name: &str,
        scope: Option<&ToolScope>,
    ) -> Result<Secret, AccountError> {
        self.authorize(who, UseCase::ManageTokens)?;
        let request = TokenRequest {
            scope,
            ..TokenRequest::new(kind, name)
        };
        Ok(self.create_operated_token(who, request).await?.token)
    }

    /// Creates an API token; an agent's may name its `operator`, an existing person who then
    /// may not approve that agent's proposals, and a webhook URL (checked against
    /// [`super::WebhookSettings::targets`]) that hears every status change of the proposals
    /// submitted with it. Returns the secrets, to show once.
    pub async fn create_operated_token(
        &self,
        who: &Principal,
        request: TokenRequest<'_>,
    ) -> Result<CreatedToken, AccountError> {
        self.authorize(who, UseCase::ManageTokens)?;
        let actor = &Actor::of(who);
        let TokenRequest {
            kind,
            name,
            scope,
            operator,
            webhook,
        } = request;
        let name = parse_name(name).map_err(AccountError::Invalid)?;
        if kind == TokenKind::Executor && name == crate::domain::gateway::GATEWAY_EXECUTOR {
            return Err(AccountError::Invalid(format!(
                "`{name}` is the built-in gateway executor's name; no token may take it"
            )));
        }
        if scope.is_some() && kind != TokenKind::Executor {
            return Err(AccountError::Invalid(
                "only executor tokens carry a tool scope".into(),
            ));
        }
        let operator = self.operator(kind, operator).await?;
        let webhook = self.webhook_url(kind, webhook)?;
        let secret = token::new_api_token(kind);
        let webhook_secret = webhook.as_ref().map(|_| token::new_webhook_secret());
        let new = NewToken {
            id: Uuid::now_v7(),
            kind,
            name,
            token_hash: secret.hash(),
            tool_scope: scope.map(ToolScope::to_list),
            operator,
            created_by: who.as_person().map(|p| p.username.clone()),
            webhook_url: webhook.as_ref().map(|u| u.as_str().to_owned()),
            webhook_secret: webhook_secret.as_ref().map(|s| s.expose().to_owned()),
        };
        let webhook_origin = webhook.map(|u| u.origin().ascii_serialization());
        let now = self.now();
        let actor = actor.clone();
        self.store()
            .write(move |tx| {
                Box::pin(async move {
                    accounts::insert_token(tx.conn(), &new, now).await?;
                    // The token's id identifies it; no secret enters the trail, nor the
                    // webhook's path or query (they may carry one): only its origin.
                    let created = TokenCreated {
                        token_id: new.id,
                        kind: new.kind,
                        name: new.name.clone(),
                        tool_scope: new.tool_scope.clone(),
                        operator: new.operator.clone(),
                        webhook_origin,
                    };
                    tx.record(now, &actor, AuditEvent::TokenCreated(created));
                    Ok::<_, ServiceError>(())
                })
            })
            .await?;
        Ok(CreatedToken {
            token: secret,
            webhook_secret,
        })
    }

    /// A token's webhook URL, checked: agents only, and a target the operator allows.
    fn webhook_url(
        &self,
        kind: TokenKind,
        webhook: Option<&str>,
    ) -> Result<Option<url::Url>, AccountError> {
        let Some(raw) = webhook.map(str::trim).filter(|w| !w.is_empty()) else {
            return Ok(None);
        };
        if kind != TokenKind::Agent {
            return Err(AccountError::Invalid(
                "only agent tokens carry a webhook".into(),
            ));
        }
        check_url(raw, self.webhook_settings().targets)
            .map(Some)
            .map_err(|why| AccountError::Invalid(format!("the webhook URL {why}")))
    }

    /// A token's operator, checked: agents only, and an existing person.
    async fn operator(
        &self,
        kind: TokenKind,
        operator: Option<&str>,
    ) -> Result<Option<String>, AccountError> {
        let Some(operator) = operator.map(str::trim).filter(|o| !o.is_empty()) else {
            return Ok(None);
        };
        if kind != TokenKind::Agent {
            return Err(AccountError::Invalid(
                "only agent tokens name an operator".into(),
            ));
        }
        match self.user(operator).await? {
            Some(user) => Ok(Some(user.username)),
            None => Err(AccountError::Invalid(format!(
                "the operator `{operator}` is not a user"
            ))),
        }
    }

    /// On a database without users, creates `admin` with a random password and returns it.
    pub async fn bootstrap_admin(&self) -> Result<Option<Bootstrap>, AccountError> {
        let users = {
            let mut read = self.read().await?;
            accounts::count_users(read.conn())
                .await
                .map_err(ServiceError::from)?
        };
        if users > 0 {
            return Ok(None);
        }
        let password = token::random_hex()[..24].to_owned();
        // Only on a database without users: nobody else could have made this account.
        let admin = NewUser::new("admin", Role::Admin, &password);
        match self.insert_user(Actor::system("bootstrap"), admin).await {
            Ok(()) => Ok(Some(Bootstrap {
                username: "admin".into(),
                password: Secret::from_shown(password),
            })),
            // Another instance bootstrapped the same database first.
            Err(AccountError::Taken(_)) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Records a security event about a person (sign-out, a refused form, a denied page).
    pub async fn record_security(
        &self,
        actor: &Actor,
        event: AuditEvent,
    ) -> Result<(), ServiceError> {
        self.store()
            .record(vec![(self.now(), actor.clone(), event)])
            .await?;
        Ok(())
    }
}

impl Services {
    /// Records that the server started with the policy in force (`source`: `file` or
    /// `built-in`).
    pub async fn record_policy_loaded(&self, source: &'static str) -> Result<(), ServiceError> {
        let policy = self.policy();
        let event = AuditEvent::PolicyLoaded(crate::audit::PolicyLoaded {
            policy_version: policy.version().to_string(),
            source,
            tool_rules: policy.tools().len(),
        });
        self.record_security(&Actor::system("policy"), event).await
    }
}

impl Services {
    /// Gives `username` another role (their sessions end at their next request). The last
    /// enabled admin keeps theirs ([`keeps_an_admin`]).
    pub async fn set_role(
        &self,
        who: &Principal,
        username: &str,
        role: Role,
    ) -> Result<(), AccountError> {
        self.authorize(who, UseCase::ChangeUser)?;
        let actor = &Actor::of(who);
        let user = self
            .user(username)
            .await?
            .filter(|u| !u.disabled)
            .ok_or_else(|| AccountError::Missing(format!("user `{username}`")))?;
        let (now, actor) = (self.now(), actor.clone());
        let changed = self
            .store()
            .write(move |tx| {
                Box::pin(async move {
                    let admins = accounts::count_enabled_admins(tx.conn()).await?;
                    if let Err(e) = keeps_an_admin(user.role, true, admins, AdminChange::Role(role))
                    {
                        return Ok(Err(e));
                    }
                    if !accounts::update_role(tx.conn(), user.id, role, RoleSource::Admin).await? {
                        return Ok(Ok(false));
                    }
                    let event = RoleChanged {
                        user_id: user.id,
                        username: user.username,
                        from: user.role,
                        to: Some(role),
                    };
                    tx.record(now, &actor, AuditEvent::RoleChanged(event));
                    Ok::<_, ServiceError>(Ok(true))
                })
            })
            .await??;
        changed
            .then_some(())
            .ok_or_else(|| AccountError::Missing(format!("user `{username}`")))
    }

    /// Disables `username`: no more sign-ins; every session of theirs ends at its next request.
    /// The last enabled admin is never disabled ([`keeps_an_admin`]).
    pub async fn disable_user(&self, who: &Principal, username: &str) -> Result<(), AccountError> {
        self.authorize(who, UseCase::ChangeUser)?;
        let actor = &Actor::of(who);
        let (now, actor, name) = (self.now(), actor.clone(), username.to_owned());
        let disabled = self
            .store()
            .write(move |tx| {
                Box::pin(async move {
                    if let Some(user) = accounts::user_by_username(tx.conn(), &name).await? {
                        let admins = accounts::count_enabled_admins(tx.conn()).await?;
                        let kept =
                            keeps_an_admin(user.role, !user.disabled, admins, AdminChange::Disable);
                        if let Err(e) = kept {
                            return Ok(Err(e));
                        }
                    }
                    let Some(user_id) = accounts::disable_user(tx.conn(), &name, now).await? else {
                        return Ok(Ok(false));
                    };
                    let event = UserDisabled {
                        user_id,
                        username: name,
                    };
                    tx.record(now, &actor, AuditEvent::UserDisabled(event));
                    Ok::<_, ServiceError>(Ok(true))
                })
            })
            .await??;
        disabled
            .then_some(())
            .ok_or_else(|| AccountError::Missing(format!("user `{username}`")))
    }

    /// Gives `username` a new password and ends every session of theirs (the next request of
    /// each finds the session epoch moved on).
    pub async fn reset_password(
        &self,
        who: &Principal,
        username: &str,
        password: String,
    ) -> Result<(), AccountError> {
        self.authorize(who, UseCase::ChangeUser)?;
        let actor = &Actor::of(who);
        let password = Password::new(password).map_err(AccountError::Invalid)?;
        let password_hash = self
            .hashing()
            .hash(password)
            .await
            .map_err(AccountError::Invalid)?;
        let (now, actor, name) = (self.now(), actor.clone(), username.to_owned());
        let reset = self
            .store()
            .write(move |tx| {
                Box::pin(async move {
                    let Some(user_id) =
                        accounts::reset_password(tx.conn(), &name, &password_hash).await?
                    else {
                        return Ok(false);
                    };
                    let event = PasswordReset {
                        user_id,
                        username: name,
                    };
                    tx.record(now, &actor, AuditEvent::PasswordReset(event));
                    Ok::<_, ServiceError>(true)
                })
            })
            .await?;
        reset
            .then_some(())
            .ok_or_else(|| AccountError::Missing(format!("user `{username}`")))
    }

    /// Revokes every active token of an agent or executor; how many were revoked.
    pub async fn revoke_tokens(
        &self,
        who: &Principal,
        kind: TokenKind,
        name: &str,
    ) -> Result<usize, AccountError> {
        self.authorize(who, UseCase::ManageTokens)?;
        let actor = &Actor::of(who);
        let (now, actor, owner) = (self.now(), actor.clone(), name.to_owned());
        let revoked = self
            .store()
            .write(move |tx| {
                Box::pin(async move {
                    let ids = accounts::revoke_tokens(tx.conn(), kind, &owner, now).await?;
                    if !ids.is_empty() {
                        accounts::announce_revocation(tx.conn()).await?;
                    }
                    for token_id in &ids {
                        let event = TokenRevoked {
                            token_id: *token_id,
                            kind,
                            name: owner.clone(),
                        };
                        tx.record(now, &actor, AuditEvent::TokenRevoked(event));
                    }
                    Ok::<_, ServiceError>(ids.len())
                })
            })
            .await?;
        self.tokens.clear();
        if revoked == 0 {
            return Err(AccountError::Missing(format!("{kind} token for `{name}`")));
        }
        Ok(revoked)
    }
}
