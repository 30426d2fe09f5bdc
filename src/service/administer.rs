//! The admin's side of accounts and tokens, beyond [`super::accounts`]: the listings the admin
//! pages and `token list` show (never a secret or hash), enabling a disabled person again,
//! revoking one token, and who operates an agent (for the decision rule).

use crate::domain::access::UseCase;
use crate::domain::principal::Principal;
use uuid::Uuid;

use super::error::{AccountError, ServiceError};
use super::services::Services;
use crate::audit::{Actor, AuditEvent, TokenRevoked, UserEnabled};
use crate::storage::accounts::{self, TokenListing, UserListing};

impl Services {
    /// Every user, by name.
    pub async fn list_users(&self, who: &Principal) -> Result<Vec<UserListing>, ServiceError> {
        self.authorize(who, UseCase::ListUsers)?;
        let mut read = self.read().await?;
        Ok(accounts::list_users(read.conn()).await?)
    }

    /// Every token, newest first.
    pub async fn list_tokens(&self, who: &Principal) -> Result<Vec<TokenListing>, ServiceError> {
        self.authorize(who, UseCase::ManageTokens)?;
        let mut read = self.read().await?;
        Ok(accounts::list_tokens(read.conn()).await?)
    }

    /// The people who operate `agent` (its tokens name them), for the decision rule.
    pub(super) async fn agent_operators(&self, agent: &str) -> Result<Vec<String>, ServiceError> {
        let mut read = self.read().await?;
        Ok(accounts::agent_operators(read.conn(), agent).await?)
    }

    /// Enables a disabled `username` again: they may sign in (with their password, or one an
    /// admin resets); sessions from before they were disabled stay ended.
    pub async fn enable_user(&self, who: &Principal, username: &str) -> Result<(), AccountError> {
        self.authorize(who, UseCase::ChangeUser)?;
        let actor = &Actor::of(who);
        let (now, actor, name) = (self.now(), actor.clone(), username.to_owned());
        let enabled = self
            .store()
            .write(move |tx| {
                Box::pin(async move {
                    let Some(user_id) = accounts::enable_user(tx.conn(), &name).await? else {
                        return Ok(false);
                    };
                    let event = UserEnabled {
                        user_id,
                        username: name,
                    };
                    tx.record(now, &actor, AuditEvent::UserEnabled(event));
                    Ok::<_, ServiceError>(true)
                })
            })
            .await?;
        enabled
            .then_some(())
            .ok_or_else(|| AccountError::Missing(format!("disabled user `{username}`")))
    }

    /// Revokes one token. This instance forgets its cached tokens at once, so the token's next
    /// request here is refused; on PostgreSQL the commit tells every other instance to forget
    /// theirs too (`countersign_credentials`).
    pub async fn revoke_token(&self, who: &Principal, id: Uuid) -> Result<(), AccountError> {
        self.authorize(who, UseCase::ManageTokens)?;
        let actor = &Actor::of(who);
        let (now, actor) = (self.now(), actor.clone());
        let revoked = self
            .store()
            .write(move |tx| {
                Box::pin(async move {
                    let Some((kind, name)) = accounts::revoke_token(tx.conn(), id, now).await?
                    else {
                        return Ok(false);
                    };
                    let event = TokenRevoked {
                        token_id: id,
                        kind,
                        name,
                    };
                    tx.record(now, &actor, AuditEvent::TokenRevoked(event));
                    accounts::announce_revocation(tx.conn()).await?;
                    Ok::<_, ServiceError>(true)
                })
            })
            .await?;
        self.tokens.clear();
        revoked
            .then_some(())
            .ok_or_else(|| AccountError::Missing("token".into()))
    }
}
