//! Signing in through the identity provider (OpenID Connect single sign-on), once the web
//! layer has checked the provider's answer (state, code, ID token: [`crate::auth::oidc`]).
//!
//! The account is the one linked to the provider's issuer and subject — never one found by
//! name. The first sign-in makes it: no password, the role and domains the role claim grants
//! ([`crate::domain::sso`]), or no role at all, which may do nothing until an admin grants
//! one. A later sign-in whose claim grants a role brings the account's role and domains in
//! line with it (recorded as `user.role_changed`, `user.domains_changed`), except that the
//! last enabled admin is never demoted that way. Where the role came from is stored: a claim
//! that grants none leaves what an admin granted, and takes away what a claim granted. Every attempt is recorded: `auth.signed_in` (`via: oidc`), or
//! `auth.sign_in_failed` with an `oidc_…` reason.

use uuid::Uuid;

use super::error::ServiceError;
use super::services::Services;
use crate::audit::{
    Actor, AuditEvent, DomainsChanged, RoleChanged, SignInFailed, SignedIn, UserCreated,
};
use crate::domain::principal::{AdminChange, keeps_an_admin};
use crate::domain::sso::{self, Grant, RoleSource, SsoIdentity};
use crate::storage::Tx;
use crate::storage::accounts::{self, NO_PASSWORD, UserRecord};

/// What a single sign-on came to.
pub enum SsoSignIn {
    /// Signed in to this account (which may have no role).
    SignedIn(UserRecord),
    /// The linked account is disabled.
    Disabled,
    /// No free username could be found for a new account.
    NoUsername,
}

/// How the trail names this way in.
const VIA: &str = "oidc";

impl Services {
    /// Signs in the person the provider vouched for, making their account on the first
    /// sign-in; one change, with its audit events.
    pub async fn sso_sign_in(&self, identity: SsoIdentity) -> Result<SsoSignIn, ServiceError> {
        let grant = sso::grant_from_claim(identity.role_claim.as_ref());
        let now = self.now();
        self.store()
            .write(move |tx| {
                Box::pin(async move {
                    let linked = accounts::user_by_oidc_subject(
                        tx.conn(),
                        &identity.issuer,
                        &identity.subject,
                    )
                    .await?;
                    let outcome = match linked {
                        Some(user) if user.disabled => {
                            failed(tx, now, Some(&user.username), "oidc_disabled");
                            SsoSignIn::Disabled
                        }
                        Some(user) => again(tx, user, &grant, now).await?,
                        None => first(tx, &identity, grant, now).await?,
                    };
                    if let SsoSignIn::SignedIn(user) = &outcome {
                        let event = AuditEvent::SignedIn(SignedIn {
                            username: user.username.clone(),
                            role: user.role,
                            via: Some(VIA),
                        });
                        tx.record(now, &Actor::user(&user.username), event);
                    }
                    Ok::<_, ServiceError>(outcome)
                })
            })
            .await
    }

    /// Records a single sign-on that failed before anyone was identified: `reason` is one of
    /// `oidc_provider_error`, `oidc_state_mismatch`, `oidc_token_invalid`.
    pub async fn sso_sign_in_failed(&self, reason: &'static str) -> Result<(), ServiceError> {
        let now = self.now();
        self.store()
            .write(move |tx| {
                Box::pin(async move {
                    failed(tx, now, None, reason);
                    Ok::<_, ServiceError>(())
                })
            })
            .await
    }
}

/// Records a failed sign-in, against the account when one was identified.
fn failed(tx: &mut Tx, now: time::OffsetDateTime, account: Option<&str>, reason: &'static str) {
    let actor = account.map_or_else(|| Actor::system("sign-in"), Actor::user);
    let event = AuditEvent::SignInFailed(SignInFailed {
        username: account.map(str::to_owned),
        reason,
    });
    tx.record(now, &actor, event);
}

/// A later sign-in: the account's role and domains follow the claim when it grants a role.
async fn again(
    tx: &mut Tx,
    mut user: UserRecord,
    grant: &Grant,
    now: time::OffsetDateTime,
) -> Result<SsoSignIn, ServiceError> {
    let domains = accounts::user_domains(tx.conn(), &user.username).await?;
    let source = accounts::role_source(tx.conn(), user.id).await?;
    if sso::revokes(user.role, source, grant) {
        return revoke(tx, user, now).await;
    }
    let Some((role, to)) = sso::role_update((user.role, domains.as_deref()), grant) else {
        return Ok(SsoSignIn::SignedIn(user));
    };
    let admins = accounts::count_enabled_admins(tx.conn()).await?;
    if keeps_an_admin(user.role, true, admins, AdminChange::Role(role)).is_err() {
        tracing::warn!(
            user = %user.username,
            "the identity provider's role claim would demote the last enabled admin; kept"
        );
        return Ok(SsoSignIn::SignedIn(user));
    }
    let actor = Actor::system(VIA);
    if user.role != Some(role) {
        accounts::update_role(tx.conn(), user.id, role, RoleSource::Claim).await?;
        let event = RoleChanged {
            user_id: user.id,
            username: user.username.clone(),
            from: user.role,
            to: Some(role),
        };
        tx.record(now, &actor, AuditEvent::RoleChanged(event));
        user.role = Some(role);
    }
    if domains != to {
        accounts::set_user_domains(tx.conn(), &user.username, to.as_deref()).await?;
        let event = DomainsChanged {
            user_id: user.id,
            username: user.username.clone(),
            from: domains,
            to,
        };
        tx.record(now, &actor, AuditEvent::DomainsChanged(event));
    }
    Ok(SsoSignIn::SignedIn(user))
}

/// A later sign-in whose claim no longer grants the role a claim gave: the account keeps no
/// role (it may do nothing until the claim or an admin grants one), recorded as
/// `user.role_changed` to `null`. The last enabled admin keeps theirs.
async fn revoke(
    tx: &mut Tx,
    mut user: UserRecord,
    now: time::OffsetDateTime,
) -> Result<SsoSignIn, ServiceError> {
    let admins = accounts::count_enabled_admins(tx.conn()).await?;
    if keeps_an_admin(user.role, true, admins, AdminChange::Disable).is_err() {
        tracing::warn!(
            user = %user.username,
            "the identity provider no longer grants the last enabled admin a role; kept"
        );
        return Ok(SsoSignIn::SignedIn(user));
    }
    if accounts::revoke_claimed_role(tx.conn(), user.id).await? {
        let event = RoleChanged {
            user_id: user.id,
            username: user.username.clone(),
            from: user.role,
            to: None,
        };
        tx.record(now, &Actor::system(VIA), AuditEvent::RoleChanged(event));
        user.role = None;
    }
    Ok(SsoSignIn::SignedIn(user))
}

/// The first sign-in: a new account linked to the identity, under a free username.
async fn first(
    tx: &mut Tx,
    identity: &SsoIdentity,
    grant: Grant,
    now: time::OffsetDateTime,
) -> Result<SsoSignIn, ServiceError> {
    let base = sso::username_for(
        identity.preferred_username.as_deref(),
        identity.email.as_deref(),
    );
    let mut username = base.clone();
    if accounts::username_taken(tx.conn(), &username).await? {
        username = sso::username_with_suffix(&base, &identity.issuer, &identity.subject);
        if accounts::username_taken(tx.conn(), &username).await? {
            failed(tx, now, None, "oidc_no_username");
            return Ok(SsoSignIn::NoUsername);
        }
    }
    let user = UserRecord {
        id: Uuid::now_v7(),
        username,
        password_hash: NO_PASSWORD.to_owned(),
        role: grant.role,
        disabled: false,
        session_epoch: 0,
    };
    let linked = (identity.issuer.as_str(), identity.subject.as_str());
    if !accounts::insert_oidc_user(tx.conn(), &user, linked, grant.domains.as_deref(), now).await? {
        failed(tx, now, None, "oidc_no_username");
        return Ok(SsoSignIn::NoUsername);
    }
    let created = UserCreated {
        user_id: user.id,
        username: user.username.clone(),
        role: user.role,
        via: Some(VIA),
    };
    tx.record(now, &Actor::system(VIA), AuditEvent::UserCreated(created));
    Ok(SsoSignIn::SignedIn(user))
}
