//! Web sessions: tower-sessions over the same database (its sqlx store), wrapped in a typed
//! [`WebSession`] that the UI reaches through the `SessionPort` of the `app` crate. The session
//! id is renewed at sign-in and the session deleted at sign-out.

use std::sync::Arc;

use app::dto::{AppError, Viewer};
use app::ports::{SessionHandle, SessionPort};
use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use subtle::ConstantTimeEq;
use tower_sessions::Session;
use tower_sessions::session::{Id, Record};
use tower_sessions::session_store::{self, ExpiredDeletion, SessionStore};

const USER_KEY: &str = "countersign.user";
const CSRF_KEY: &str = "countersign.csrf";

/// The session store on whichever backend the app runs on.
#[derive(Debug, Clone)]
pub enum AnySessionStore {
    /// SQLite.
    Sqlite(tower_sessions_sqlx_store::SqliteStore),
    /// PostgreSQL.
    Postgres(tower_sessions_sqlx_store::PostgresStore),
}

#[async_trait]
impl SessionStore for AnySessionStore {
    async fn create(&self, record: &mut Record) -> session_store::Result<()> {
        match self {
            Self::Sqlite(s) => s.create(record).await,
            Self::Postgres(s) => s.create(record).await,
        }
    }

    async fn save(&self, record: &Record) -> session_store::Result<()> {
        match self {
            Self::Sqlite(s) => s.save(record).await,
            Self::Postgres(s) => s.save(record).await,
        }
    }

    async fn load(&self, id: &Id) -> session_store::Result<Option<Record>> {
        match self {
            Self::Sqlite(s) => s.load(id).await,
            Self::Postgres(s) => s.load(id).await,
        }
    }

    async fn delete(&self, id: &Id) -> session_store::Result<()> {
        match self {
            Self::Sqlite(s) => s.delete(id).await,
            Self::Postgres(s) => s.delete(id).await,
        }
    }
}

#[async_trait]
impl ExpiredDeletion for AnySessionStore {
    async fn delete_expired(&self) -> session_store::Result<()> {
        match self {
            Self::Sqlite(s) => s.delete_expired().await,
            Self::Postgres(s) => s.delete_expired().await,
        }
    }
}

/// What the session remembers about the signed-in person.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct SessionUser {
    username: String,
    role: String,
}

/// The typed session of one request.
pub struct WebSession(pub Session);

impl WebSession {
    /// Wraps the request's session as the UI's session port.
    pub fn handle(session: Session) -> SessionHandle {
        SessionHandle(Arc::new(WebSession(session)))
    }
}

fn internal(e: impl std::fmt::Display) -> AppError {
    tracing::error!(error = %e, "session store failed");
    AppError::Internal
}

#[async_trait]
impl SessionPort for WebSession {
    async fn viewer(&self) -> Result<Option<Viewer>, AppError> {
        let user: Option<SessionUser> = self.0.get(USER_KEY).await.map_err(internal)?;
        Ok(user.and_then(|u| {
            let role = crate::domain::principal::Role::parse(&u.role)?;
            Some(Viewer {
                username: u.username,
                role: role.into(),
                can_decide: role.can_decide(),
            })
        }))
    }

    async fn csrf_token(&self) -> Result<String, AppError> {
        if let Some(token) = self.0.get::<String>(CSRF_KEY).await.map_err(internal)? {
            return Ok(token);
        }
        let token = crate::auth::token::random_hex();
        self.0.insert(CSRF_KEY, &token).await.map_err(internal)?;
        Ok(token)
    }

    async fn csrf_matches(&self, token: &str) -> Result<bool, AppError> {
        let stored: Option<String> = self.0.get(CSRF_KEY).await.map_err(internal)?;
        Ok(match stored {
            Some(s) if !token.is_empty() => s.as_bytes().ct_eq(token.as_bytes()).into(),
            _ => false,
        })
    }

    async fn sign_in(&self, viewer: &Viewer) -> Result<(), AppError> {
        // A new id defeats session fixation; the CSRF token is renewed with it.
        self.0.cycle_id().await.map_err(internal)?;
        let token = crate::auth::token::random_hex();
        self.0.insert(CSRF_KEY, &token).await.map_err(internal)?;
        let user = SessionUser {
            username: viewer.username.clone(),
            role: viewer.role.as_str().to_owned(),
        };
        self.0.insert(USER_KEY, user).await.map_err(internal)
    }

    async fn sign_out(&self) -> Result<(), AppError> {
        self.0.flush().await.map_err(internal)
    }
}
