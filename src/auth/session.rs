//! Web sessions' storage: tower-sessions over the same database (its sqlx store), on either
//! backend. What a session holds and when it ends is the web layer's typed session
//! (`crate::web::session`).
//!
//! A session's id is the cookie's secret, so the database keeps only its SHA-256, as it keeps
//! API tokens' ([`Hashed`]): someone who reads the sessions table cannot sign in as anyone.
//! Sessions that have ended are deleted a batch at a time with the other operational rows
//! (`crate::storage::retention::prune_sessions`).

use async_trait::async_trait;
use sha2::{Digest, Sha256};
use tower_sessions::session::{Id, Record};
use tower_sessions::session_store::{self, SessionStore};

/// A store that keys every session by the SHA-256 of its id (the first 128 bits), never by the
/// id itself; the record it stores carries the hashed id too.
#[derive(Debug, Clone)]
pub struct Hashed<S>(pub S);

/// The id a session is stored under.
fn stored_id(id: &Id) -> Id {
    let digest = Sha256::digest(id.0.to_le_bytes());
    let mut first = [0u8; 16];
    first.copy_from_slice(&digest[..16]);
    Id(i128::from_le_bytes(first))
}

/// `record` as stored: the same, under its stored id.
fn stored(record: &Record) -> Record {
    Record {
        id: stored_id(&record.id),
        ..record.clone()
    }
}

#[async_trait]
impl<S: SessionStore> SessionStore for Hashed<S> {
    async fn create(&self, record: &mut Record) -> session_store::Result<()> {
        loop {
            let mut row = stored(record);
            let wanted = row.id;
            self.0.create(&mut row).await?;
            if row.id == wanted {
                return Ok(());
            }
            // Another session is stored under that hash (the inner store made a new id for the
            // row, which no cookie can name): take it back and draw a new id.
            self.0.delete(&row.id).await?;
            record.id = Id::default();
        }
    }

    async fn save(&self, record: &Record) -> session_store::Result<()> {
        self.0.save(&stored(record)).await
    }

    async fn load(&self, id: &Id) -> session_store::Result<Option<Record>> {
        let found = self.0.load(&stored_id(id)).await?;
        Ok(found.map(|record| Record { id: *id, ..record }))
    }

    async fn delete(&self, id: &Id) -> session_store::Result<()> {
        self.0.delete(&stored_id(id)).await
    }
}

/// The session store on whichever backend the app runs on.
#[derive(Debug, Clone)]
pub enum AnySessionStore {
    /// SQLite.
    Sqlite(Hashed<tower_sessions_sqlx_store::SqliteStore>),
    /// PostgreSQL.
    Postgres(Hashed<tower_sessions_sqlx_store::PostgresStore>),
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
