//! Web sessions' storage: tower-sessions over the same database (its sqlx store), on either
//! backend. What a session holds and when it ends is the web layer's typed session
//! (`crate::web::session`).

use async_trait::async_trait;
use tower_sessions::session::{Id, Record};
use tower_sessions::session_store::{self, ExpiredDeletion, SessionStore};

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
