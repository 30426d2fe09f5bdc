//! Web sessions' storage: tower-sessions over the same database (its sqlx store), on either
//! backend. What a session holds and when it ends is the web layer's typed session
//! (`crate::web::session`).
//!
//! A session's id is the cookie's secret, so the database keeps only its SHA-256, as it keeps
//! API tokens' ([`Hashed`]): someone who reads the sessions table cannot sign in as anyone.
//! Sessions that have ended are deleted a batch at a time with the other operational rows
//! (`crate::storage::retention::prune_sessions`).
//!
//! The pages save a changed session themselves, before tower-sessions' layer would, so that a
//! store that fails is answered with words (`crate::web::session`); the layer, which cannot be
//! told, then saves the same record again. [`Hashed`] remembers what it just saved, and takes
//! that second save as made: one write per changed session, and normally no second write that
//! could fail after the first (the layer answers such a failure with an empty `500`). Another
//! request's save of the same session in between, or a layer slower than [`SAME_SAVE`], is
//! written as before.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use sha2::{Digest, Sha256};
use time::OffsetDateTime;
use tower_sessions::session::{Id, Record};
use tower_sessions::session_store::{self, SessionStore};

/// A store that keys every session by the SHA-256 of its id (the first 128 bits), never by the
/// id itself; the record it stores carries the hashed id too. A save of the record it has just
/// saved is taken as made ([`JustSaved`]).
#[derive(Debug, Clone)]
pub struct Hashed<S> {
    inner: S,
    just_saved: Arc<JustSaved>,
}

impl<S> Hashed<S> {
    /// `inner`, keyed by hashed ids.
    pub fn new(inner: S) -> Self {
        Self {
            inner,
            just_saved: Arc::default(),
        }
    }
}

/// How long a save is remembered, and how far apart two saves' expiry dates may be and still be
/// the same record (the layer computes the date again when it saves).
const SAME_SAVE: Duration = Duration::from_secs(2);

/// The records saved in the last [`SAME_SAVE`], by session id: what a request's session held
/// when the pages saved it, for the layer's save of it that follows.
#[derive(Debug, Default)]
struct JustSaved(Mutex<HashMap<Id, Saved>>);

#[derive(Debug)]
struct Saved {
    data: HashMap<String, serde_json::Value>,
    expiry: OffsetDateTime,
    at: Instant,
}

impl JustSaved {
    fn map(&self) -> std::sync::MutexGuard<'_, HashMap<Id, Saved>> {
        // An insert or a removal cannot be left half made: a poisoned lock is taken as it is.
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Remembers `record` as saved now.
    fn note(&self, record: &Record) {
        let mut map = self.map();
        // Few sessions change in any two seconds: the map stays that small.
        map.retain(|_, saved| saved.at.elapsed() < SAME_SAVE);
        let saved = Saved {
            data: record.data.clone(),
            expiry: record.expiry_date,
            at: Instant::now(),
        };
        map.insert(record.id, saved);
    }

    /// Whether `record` is the one saved last under its id, moments ago (and so need not be
    /// saved again). Either way, that save is forgotten: the next is written.
    fn take_same(&self, record: &Record) -> bool {
        let Some(saved) = self.map().remove(&record.id) else {
            return false;
        };
        let apart = (record.expiry_date - saved.expiry).unsigned_abs();
        saved.at.elapsed() < SAME_SAVE && apart < SAME_SAVE && saved.data == record.data
    }

    fn forget(&self, id: &Id) {
        self.map().remove(id);
    }
}

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
            self.inner.create(&mut row).await?;
            if row.id == wanted {
                self.just_saved.note(record);
                return Ok(());
            }
            // Another session is stored under that hash (the inner store made a new id for the
            // row, which no cookie can name): take it back and draw a new id.
            self.inner.delete(&row.id).await?;
            record.id = Id::default();
        }
    }

    async fn save(&self, record: &Record) -> session_store::Result<()> {
        if self.just_saved.take_same(record) {
            return Ok(());
        }
        self.inner.save(&stored(record)).await?;
        self.just_saved.note(record);
        Ok(())
    }

    async fn load(&self, id: &Id) -> session_store::Result<Option<Record>> {
        let found = self.inner.load(&stored_id(id)).await?;
        Ok(found.map(|record| Record { id: *id, ..record }))
    }

    async fn delete(&self, id: &Id) -> session_store::Result<()> {
        self.just_saved.forget(id);
        self.inner.delete(&stored_id(id)).await
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

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use tower_sessions::{MemoryStore, Session};

    use super::*;

    /// A memory store that counts the writes it is asked for.
    #[derive(Debug, Clone, Default)]
    struct Counting {
        inner: MemoryStore,
        writes: Arc<AtomicUsize>,
    }

    #[async_trait]
    impl SessionStore for Counting {
        async fn create(&self, record: &mut Record) -> session_store::Result<()> {
            self.writes.fetch_add(1, Ordering::SeqCst);
            self.inner.create(record).await
        }
        async fn save(&self, record: &Record) -> session_store::Result<()> {
            self.writes.fetch_add(1, Ordering::SeqCst);
            self.inner.save(record).await
        }
        async fn load(&self, id: &Id) -> session_store::Result<Option<Record>> {
            self.inner.load(id).await
        }
        async fn delete(&self, id: &Id) -> session_store::Result<()> {
            self.inner.delete(id).await
        }
    }

    fn store() -> (Arc<Hashed<Counting>>, Arc<AtomicUsize>) {
        let counting = Counting::default();
        let writes = Arc::clone(&counting.writes);
        (Arc::new(Hashed::new(counting)), writes)
    }

    #[tokio::test]
    async fn the_layers_save_after_the_pages_own_is_not_written_again() {
        let (store, writes) = store();
        let session = Session::new(None, Arc::clone(&store), None);
        session.insert("user", "rev").await.expect("insert");
        // The pages' save (a create), then the layer's of the same record.
        session.save().await.expect("created");
        session.save().await.expect("the layer's");
        assert_eq!(writes.load(Ordering::SeqCst), 1, "written once");
        // A change after it is written, and its second save is not.
        session.insert("user", "rev2").await.expect("insert");
        session.save().await.expect("saved");
        session.save().await.expect("the layer's");
        assert_eq!(writes.load(Ordering::SeqCst), 2);
        // A save that was taken as made is forgotten: the next one is written.
        session.save().await.expect("a third");
        assert_eq!(writes.load(Ordering::SeqCst), 3);
        // What was stored is what the session held.
        let again = Session::new(session.id(), Arc::clone(&store), None);
        let user: Option<String> = again.get("user").await.expect("read");
        assert_eq!(user.as_deref(), Some("rev2"));
    }

    #[tokio::test]
    async fn another_record_under_the_same_id_is_written() {
        let (store, writes) = store();
        let session = Session::new(None, Arc::clone(&store), None);
        session.insert("user", "rev").await.expect("insert");
        session.save().await.expect("created");
        let id = session.id().expect("an id");
        let record = |expiry_date| Record {
            id,
            data: HashMap::from([("user".to_owned(), serde_json::json!("rev"))]),
            expiry_date,
        };
        let far = OffsetDateTime::now_utc() + time::Duration::days(30);
        // The same data with an expiry date far from the saved one: another record.
        store.save(&record(far)).await.expect("saved");
        assert_eq!(writes.load(Ordering::SeqCst), 2);
        store.save(&record(far)).await.expect("taken as made");
        store.save(&record(far)).await.expect("written");
        assert_eq!(writes.load(Ordering::SeqCst), 3);
        // Once the session is deleted, the save that came before is forgotten.
        store.delete(&id).await.expect("deleted");
        store.save(&record(far)).await.expect("written");
        assert_eq!(writes.load(Ordering::SeqCst), 4);
    }
}
