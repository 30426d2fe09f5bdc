//! The token cache behind [`super::tokens`]: valid tokens by hash for [`TTL`], failed lookups
//! by client address under [`UNKNOWN_TOKEN_RULE`], and the active tokens' hashes for
//! [`ACTIVE_FRESH`]. A leaf: [`super::services::Services`] holds one, the use cases read it.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use time::OffsetDateTime;

use crate::domain::sign_in::UNKNOWN_TOKEN_RULE;
use crate::storage::accounts::TokenRecord;

/// How long a valid token is trusted without reading the table again.
pub const TTL: Duration = Duration::from_secs(2);
/// Most tokens kept; past it the cache starts over.
const CAPACITY: usize = 10_000;
/// How long the active tokens' hashes, once read for a throttled address, are trusted.
pub const ACTIVE_FRESH: time::Duration = time::Duration::seconds(5);
/// Most client addresses whose failed lookups are counted at once; past it, addresses whose
/// count the rule has forgotten are dropped, and a new address is not counted until there is
/// room.
const ADDRESSES: usize = 100_000;

/// Token hash → principal, with the time it was read; and what throttles unknown tokens.
#[derive(Default)]
pub struct TokenCache {
    entries: Mutex<HashMap<String, (TokenRecord, Instant)>>,
    /// Bumped by every [`TokenCache::clear`]: a read that began before a revocation must not
    /// put what it read after the revocation cleared the cache.
    generation: AtomicU64,
    /// Failed lookups by client address: how many, the last one when.
    failures: Mutex<HashMap<String, (i64, OffsetDateTime)>>,
    /// The active tokens' hashes, and when they were read.
    active: Mutex<Option<(OffsetDateTime, Arc<HashSet<String>>)>>,
    /// Held while the active tokens' hashes are read, so one read serves every request waiting.
    pub(super) reading_active: tokio::sync::Mutex<()>,
    /// Bumped by every [`TokenCache::clear`]: open streams look whether their token still
    /// stands ([`TokenCache::revocations`]).
    cleared: tokio::sync::watch::Sender<u64>,
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
        self.cleared.send_modify(|n| *n = n.wrapping_add(1));
    }

    /// Changes at every [`TokenCache::clear`].
    pub fn revocations(&self) -> tokio::sync::watch::Receiver<u64> {
        self.cleared.subscribe()
    }

    /// Until when `address`'s unknown tokens are refused, if they are.
    pub(super) fn throttled_until(
        &self,
        address: &str,
        now: OffsetDateTime,
    ) -> Option<OffsetDateTime> {
        let failures = self.failures.lock().unwrap_or_else(PoisonError::into_inner);
        let (count, last) = failures.get(address)?;
        UNKNOWN_TOKEN_RULE.locked_until(*count, *last, now)
    }

    /// Counts a failed lookup from `address` at `now`; `true` if it throttles the address.
    pub(super) fn failed(&self, address: &str, now: OffsetDateTime) -> bool {
        let rule = UNKNOWN_TOKEN_RULE;
        let mut failures = self.failures.lock().unwrap_or_else(PoisonError::into_inner);
        if failures.len() >= ADDRESSES && !failures.contains_key(address) {
            failures.retain(|_, (_, last)| now - *last <= rule.window);
            if failures.len() >= ADDRESSES {
                return false;
            }
        }
        let (count, last) = failures.entry(address.to_owned()).or_insert((0, now));
        if now - *last > rule.window {
            *count = 0;
        }
        *count += 1;
        *last = now;
        rule.locked_until(*count, now, now).is_some()
    }

    /// The active tokens' hashes, if read less than [`ACTIVE_FRESH`] before `now`.
    pub(super) fn active_hashes(&self, now: OffsetDateTime) -> Option<Arc<HashSet<String>>> {
        let active = self.active.lock().unwrap_or_else(PoisonError::into_inner);
        let (read_at, hashes) = active.as_ref()?;
        (now - *read_at < ACTIVE_FRESH).then(|| Arc::clone(hashes))
    }

    pub(super) fn set_active_hashes(&self, hashes: Arc<HashSet<String>>, now: OffsetDateTime) {
        *self.active.lock().unwrap_or_else(PoisonError::into_inner) = Some((now, hashes));
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
    fn an_address_is_throttled_after_twenty_failures_and_a_quiet_hour_forgets() {
        let cache = TokenCache::default();
        let t0 = OffsetDateTime::UNIX_EPOCH + time::Duration::days(20_000);
        for _ in 0..19 {
            assert!(!cache.failed("10.0.0.1", t0));
        }
        assert_eq!(cache.throttled_until("10.0.0.1", t0), None);
        assert!(cache.failed("10.0.0.1", t0), "the twentieth throttles");
        let until = t0 + time::Duration::seconds(30);
        assert_eq!(cache.throttled_until("10.0.0.1", t0), Some(until));
        assert_eq!(cache.throttled_until("10.0.0.2", t0), None);
        let later = t0 + time::Duration::hours(2);
        assert!(!cache.failed("10.0.0.1", later), "the count started over");
    }

    #[test]
    fn the_active_hashes_are_trusted_for_a_while() {
        let cache = TokenCache::default();
        let t0 = OffsetDateTime::UNIX_EPOCH + time::Duration::days(20_000);
        assert!(cache.active_hashes(t0).is_none(), "never read");
        cache.set_active_hashes(Arc::new(HashSet::from(["h".to_owned()])), t0);
        assert!(
            cache
                .active_hashes(t0 + time::Duration::seconds(4))
                .is_some()
        );
        assert!(cache.active_hashes(t0 + ACTIVE_FRESH).is_none());
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
