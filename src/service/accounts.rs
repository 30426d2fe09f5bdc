//! People and machine principals: users with argon2id passwords (hashed off the async
//! runtime), API tokens shown once and stored hashed, the one-time bootstrap admin of a fresh
//! installation, and signing in.

use uuid::Uuid;

use super::{Conflict, ServiceError, Services};
use crate::audit::{Actor, AuditEvent, TokenCreated, UserCreated};
use crate::auth::password::{self, Password};
use crate::auth::token::{self, Secret};
use crate::domain::principal::{Role, TokenKind, parse_name};
use crate::storage::accounts::{self, NewToken, UserRecord};

/// Why an account could not be created.
#[derive(Debug, thiserror::Error)]
pub enum AccountError {
    /// Bad name, role or password.
    #[error("{0}")]
    Invalid(String),
    /// The username is taken.
    #[error("a user named `{0}` already exists")]
    Taken(String),
    /// The store failed.
    #[error(transparent)]
    Service(#[from] ServiceError),
}

/// The account made on a fresh installation, with its one-time password.
pub struct Bootstrap {
    /// Username (`admin`).
    pub username: String,
    /// The password, shown once.
    pub password: Secret,
}

impl Services {
    /// Adds a user; `actor` is who did it (for the audit trail).
    pub async fn add_user(
        &self,
        username: &str,
        role: Role,
        password: String,
        actor: &Actor,
    ) -> Result<(), AccountError> {
        let username = parse_name(username).map_err(AccountError::Invalid)?;
        let password = Password::new(password).map_err(AccountError::Invalid)?;
        let password_hash = password::hash(password)
            .await
            .map_err(AccountError::Invalid)?;
        let user = UserRecord {
            id: Uuid::now_v7(),
            username: username.clone(),
            password_hash,
            role,
            disabled: false,
        };
        let now = self.now();
        let actor = actor.clone();
        let added = self
            .store()
            .write(move |tx| {
                Box::pin(async move {
                    if !accounts::insert_user(tx.conn(), &user, now).await? {
                        return Err(ServiceError::Conflict(Conflict::UsernameTaken));
                    }
                    let created = UserCreated {
                        user_id: user.id,
                        username: user.username.clone(),
                        role: user.role,
                    };
                    tx.record(now, &actor, AuditEvent::UserCreated(created));
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
        kind: TokenKind,
        name: &str,
        actor: &Actor,
    ) -> Result<Secret, AccountError> {
        let name = parse_name(name).map_err(AccountError::Invalid)?;
        let secret = token::new_api_token(kind);
        let new = NewToken {
            id: Uuid::now_v7(),
            kind,
            name,
            token_hash: secret.hash(),
        };
        let now = self.now();
        let actor = actor.clone();
        self.store()
            .write(move |tx| {
                Box::pin(async move {
                    accounts::insert_token(tx.conn(), &new, now).await?;
                    // The token's id identifies it; the secret never enters the trail.
                    let created = TokenCreated {
                        token_id: new.id,
                        kind: new.kind,
                        name: new.name.clone(),
                    };
                    tx.record(now, &actor, AuditEvent::TokenCreated(created));
                    Ok::<_, ServiceError>(())
                })
            })
            .await?;
        Ok(secret)
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
        match self
            .add_user(
                "admin",
                Role::Admin,
                password.clone(),
                &Actor::system("bootstrap"),
            )
            .await
        {
            Ok(()) => Ok(Some(Bootstrap {
                username: "admin".into(),
                password: Secret::from_shown(password),
            })),
            // Another instance bootstrapped the same database first.
            Err(AccountError::Taken(_)) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// The active account behind a username and password, with the same work either way.
    pub async fn authenticate(
        &self,
        username: &str,
        password: &str,
    ) -> Result<Option<UserRecord>, ServiceError> {
        let active = self.user(username).await?.filter(|u| !u.disabled);
        let ok = password::verify(
            password.to_owned(),
            active.as_ref().map(|u| u.password_hash.clone()),
        )
        .await;
        Ok(active.filter(|_| ok))
    }
}
