//! Per-token rate limits: each API token (agent or executor) may make
//! [`crate::config::RateLimit::per_second`] requests a second, with bursts up to
//! [`crate::config::RateLimit::burst`]; the next is answered `429` with `Retry-After` (whole
//! seconds) and changes nothing. Counted per token id, in this instance (GCRA, `governor`), so
//! one runaway agent cannot starve the others or the reviewers' pages.
//!
//! A token may also hold at most [`crate::config::RateLimit::waiting`] requests waiting for a
//! change at once (`?wait=`, event streams, MCP's `wait_for_decision`): each holds a
//! [`WaitSlot`] until it answers; one more is `429 too_many_waits`.

use std::collections::HashMap;
use std::hash::Hash;
use std::num::NonZeroU32;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use governor::clock::{Clock, DefaultClock};
use governor::{DefaultKeyedRateLimiter, Quota, RateLimiter};
use uuid::Uuid;

use crate::config::RateLimit;

/// The limiters of every token seen.
pub struct TokenLimits {
    limiter: DefaultKeyedRateLimiter<Uuid>,
    clock: DefaultClock,
    waits: Places<Uuid>,
}

/// One waiting request of a token; its place is given back when dropped.
pub type WaitSlot = Place<Uuid>;

/// Places held at once per key (a token's waiting requests, a session's event streams), at
/// most a limit each. Only keys holding a place are kept.
pub struct Places<K: Hash + Eq + Clone> {
    limit: u32,
    held: Arc<Mutex<HashMap<K, u32>>>,
}

/// One place held under a key; given back when dropped.
pub struct Place<K: Hash + Eq + Clone> {
    key: K,
    held: Arc<Mutex<HashMap<K, u32>>>,
}

impl<K: Hash + Eq + Clone> Drop for Place<K> {
    fn drop(&mut self) {
        let mut held = self.held.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(n) = held.get_mut(&self.key) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                held.remove(&self.key);
            }
        }
    }
}

impl<K: Hash + Eq + Clone> Places<K> {
    /// At most `limit` places per key.
    pub fn new(limit: u32) -> Self {
        Self {
            limit,
            held: Arc::default(),
        }
    }

    /// One more place under `key`; `Err` with the limit when it holds as many as it may.
    pub fn take(&self, key: K) -> Result<Place<K>, u32> {
        let mut held = self.held.lock().unwrap_or_else(PoisonError::into_inner);
        let n = held.get(&key).copied().unwrap_or(0);
        if n >= self.limit {
            return Err(self.limit);
        }
        held.insert(key.clone(), n + 1);
        Ok(Place {
            key,
            held: Arc::clone(&self.held),
        })
    }
}

impl TokenLimits {
    /// Limits at `rate`.
    pub fn new(rate: RateLimit) -> Self {
        let per_second = NonZeroU32::new(rate.per_second).unwrap_or(NonZeroU32::MIN);
        let burst = NonZeroU32::new(rate.burst).unwrap_or(per_second);
        Self {
            limiter: RateLimiter::keyed(Quota::per_second(per_second).allow_burst(burst)),
            clock: DefaultClock::default(),
            waits: Places::new(rate.waiting),
        }
    }

    /// A place for one more waiting request of `token`, or `429 too_many_waits`.
    pub fn waiting_place(&self, token: Uuid) -> Result<WaitSlot, super::error::ApiError> {
        self.wait_slot(token)
            .map_err(|limit| super::error::ApiError::TooManyWaits { limit })
    }

    /// A place for one more waiting request of `token`; `Err` with the limit when it holds as
    /// many as it may.
    pub fn wait_slot(&self, token: Uuid) -> Result<WaitSlot, u32> {
        self.waits.take(token)
    }

    /// Counts a request of `token`; `Err` with how long to wait when it is over its limit.
    pub fn check(&self, token: Uuid) -> Result<(), Duration> {
        self.limiter
            .check_key(&token)
            .map_err(|not_until| not_until.wait_time_from(self.clock.now()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_over_its_burst_waits_and_others_do_not() {
        let limits = TokenLimits::new(RateLimit {
            per_second: 1,
            burst: 2,
            waiting: 1,
        });
        let (a, b) = (Uuid::now_v7(), Uuid::now_v7());
        assert!(limits.check(a).is_ok() && limits.check(a).is_ok());
        let wait = limits
            .check(a)
            .expect_err("the third request in a burst of two waits");
        assert!(wait > Duration::ZERO && wait <= Duration::from_secs(1));
        assert!(limits.check(b).is_ok(), "another token has its own budget");
    }

    #[test]
    fn a_token_holds_at_most_its_waits_and_a_finished_wait_gives_its_place_back() {
        let limits = TokenLimits::new(RateLimit {
            per_second: 1,
            burst: 1,
            waiting: 2,
        });
        let (a, b) = (Uuid::now_v7(), Uuid::now_v7());
        let first = limits.wait_slot(a).expect("first");
        let second = limits.wait_slot(a).expect("second");
        assert_eq!(
            limits.wait_slot(a).err(),
            Some(2),
            "a third wait is refused"
        );
        assert!(limits.wait_slot(b).is_ok(), "another token has its own");
        drop(first);
        let third = limits.wait_slot(a).expect("a place came free");
        drop((second, third));
        assert!(
            limits.waits.held.lock().expect("waits").is_empty(),
            "nothing is kept for tokens that wait no more"
        );
    }
}
