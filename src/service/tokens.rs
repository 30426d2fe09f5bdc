//! A short-lived cache of valid API tokens, so the hot paths (pre-tool-check, submission,
//! lease) do not read the token table on every request. Only active tokens are cached, for at
//! most [`TTL`]. A revocation made through this instance clears the cache at once; on
//! PostgreSQL one made anywhere (another instance, the CLI) does too, as its commit notifies
//! every instance (`countersign_credentials`). Only a CLI revocation of a SQLite file served by
//! another process waits out the [`TTL`]. Unknown or revoked tokens are never cached, so
//! guessing cannot fill it.

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crate::storage::accounts::TokenRecord;

/// How long a valid token is trusted without reading the table again.
pub const TTL: Duration = Duration::from_secs(2);
/// Most tokens kept; past it the cache starts over.
const CAPACITY: usize = 10_000;

/// Token hash → principal, with the time it was read.
#[derive(Default)]
pub struct TokenCache {
    entries: Mutex<HashMap<String, (TokenRecord, Instant)>>,
    /// Bumped by every [`TokenCache::clear`]: a read that began before a revocation must not
    /// put what it read after the revocation cleared the cache.
    generation: AtomicU64,
}

impl TokenCache {
    /// The cached principal behind `hash`, if read less than [`TTL`] ago.
    pub fn get(&self, hash: &str, now: Instant) -> Option<TokenRecord> {
        let entries = self.entries.lock().ok()?;
        let (record, at) = entries.get(hash)?;
        (now.duration_since(*at) < TTL).then(|| record.clone())
    }

    /// The generation to pass to [`TokenCache::put`]: take it before reading the table.
    pub fn generation(&self) -> u64 {
        self.generation.load(Ordering::SeqCst)
    }

    /// Remembers an active token read at `now`, unless the cache was cleared since
    /// `generation` was taken.
    pub fn put(&self, hash: &str, record: &TokenRecord, now: Instant, generation: u64) {
        if record.revoked {
            return;
        }
        if let Ok(mut entries) = self.entries.lock() {
            // Checked under the lock `clear` takes, so a clear cannot slip in between.
            if self.generation.load(Ordering::SeqCst) != generation {
                return;
            }
            if entries.len() >= CAPACITY {
                entries.clear();
            }
            entries.insert(hash.to_owned(), (record.clone(), now));
        }
    }

    /// Forgets every token (after a revocation).
    pub fn clear(&self) {
        if let Ok(mut entries) = self.entries.lock() {
            self.generation.fetch_add(1, Ordering::SeqCst);
            entries.clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::principal::TokenKind;

    fn record(revoked: bool) -> TokenRecord {
        TokenRecord {
            id: uuid::Uuid::now_v7(),
            kind: TokenKind::Agent,
            name: "a".into(),
            revoked,
            tool_scope: None,
        }
    }

    #[test]
    fn valid_tokens_are_kept_for_the_ttl_only() {
        let cache = TokenCache::default();
        let t0 = Instant::now();
        cache.put("h", &record(false), t0, cache.generation());
        assert!(cache.get("h", t0 + Duration::from_millis(10)).is_some());
        assert!(cache.get("h", t0 + TTL).is_none());
        cache.clear();
        assert!(cache.get("h", t0).is_none());
    }

    #[test]
    fn revoked_tokens_are_never_cached() {
        let cache = TokenCache::default();
        let t0 = Instant::now();
        cache.put("h", &record(true), t0, cache.generation());
        assert!(cache.get("h", t0).is_none());
    }

    #[test]
    fn a_read_that_began_before_a_revocation_is_not_cached() {
        let cache = TokenCache::default();
        let t0 = Instant::now();
        let before = cache.generation();
        cache.clear();
        cache.put("h", &record(false), t0, before);
        assert!(cache.get("h", t0).is_none());
    }
}
