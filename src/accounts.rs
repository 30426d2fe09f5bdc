//! Creating people and machine principals: users with argon2id passwords, API tokens shown
//! once and stored hashed, and the one-time bootstrap admin of a fresh installation.

use serde_json::json;
use uuid::Uuid;

use crate::auth::password::{self, Password};
use crate::auth::token::{self, Secret};
use crate::domain::principal::{ActorKind, Role, TokenKind, parse_name};
use crate::storage::{AuditEntry, Conflict, DynStore, NewToken, StorageError, UserRecord};

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
    Storage(#[from] StorageError),
}

/// Adds a user; `actor` is who did it (for the audit trail).
pub async fn add_user(
    store: &DynStore,
    username: &str,
    role: Role,
    password: String,
    actor: (ActorKind, &str),
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
    let audit = AuditEntry {
        actor_kind: actor.0,
        actor: actor.1.to_owned(),
        action: "user.created",
        subject_type: "user",
        subject_id: user.id.to_string(),
        before_status: None,
        after_status: Some("active".into()),
        details: json!({ "username": username, "role": role }),
    };
    match store.insert_user(&user, &audit).await {
        Err(StorageError::Conflict(Conflict::UsernameTaken)) => Err(AccountError::Taken(username)),
        other => Ok(other?),
    }
}

/// Creates an API token for an agent or executor and returns the secret, to show once.
pub async fn create_token(
    store: &DynStore,
    kind: TokenKind,
    name: &str,
    actor: (ActorKind, &str),
) -> Result<Secret, AccountError> {
    let name = parse_name(name).map_err(AccountError::Invalid)?;
    let secret = token::new_api_token(kind);
    let id = Uuid::now_v7();
    let audit = AuditEntry {
        actor_kind: actor.0,
        actor: actor.1.to_owned(),
        action: "token.created",
        subject_type: "token",
        subject_id: id.to_string(),
        before_status: None,
        after_status: Some("active".into()),
        // The token's hash identifies it; the secret itself never enters the trail.
        details: json!({ "kind": kind, "name": name }),
    };
    store
        .insert_token(
            &NewToken {
                id,
                kind,
                name,
                token_hash: secret.hash(),
            },
            &audit,
        )
        .await?;
    Ok(secret)
}

/// The account made on a fresh installation, with its one-time password.
pub struct Bootstrap {
    /// Username (`admin`).
    pub username: String,
    /// The password, shown once.
    pub password: Secret,
}

/// On a database without users, creates `admin` with a random password and returns it.
pub async fn bootstrap_admin(store: &DynStore) -> Result<Option<Bootstrap>, AccountError> {
    if store.count_users().await? > 0 {
        return Ok(None);
    }
    let password = token::random_hex()[..24].to_owned();
    match add_user(
        store,
        "admin",
        Role::Admin,
        password.clone(),
        (ActorKind::System, "bootstrap"),
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
