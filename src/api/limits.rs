//! Per-token rate limits: each API token (agent or executor) may make
//! [`crate::config::RateLimit::per_second`] requests a second, with bursts up to
//! [`crate::config::RateLimit::burst`]; the next is answered `429` with `Retry-After` (whole
//! seconds) and changes nothing. Counted per token id, in this instance (GCRA, `governor`), so
//! one runaway agent cannot starve the others or the reviewers' pages.

use std::num::NonZeroU32;
use std::time::Duration;

use governor::clock::{Clock, DefaultClock};
use governor::{DefaultKeyedRateLimiter, Quota, RateLimiter};
use uuid::Uuid;

use crate::config::RateLimit;

/// The limiters of every token seen.
pub struct TokenLimits {
    limiter: DefaultKeyedRateLimiter<Uuid>,
    clock: DefaultClock,
}

impl TokenLimits {
    /// Limits at `rate`.
    pub fn new(rate: RateLimit) -> Self {
        let per_second = NonZeroU32::new(rate.per_second).unwrap_or(NonZeroU32::MIN);
        let burst = NonZeroU32::new(rate.burst).unwrap_or(per_second);
        Self {
            limiter: RateLimiter::keyed(Quota::per_second(per_second).allow_burst(burst)),
            clock: DefaultClock::default(),
        }
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
        });
        let (a, b) = (Uuid::now_v7(), Uuid::now_v7());
        assert!(limits.check(a).is_ok() && limits.check(a).is_ok());
        let wait = limits
            .check(a)
            .expect_err("the third request in a burst of two waits");
        assert!(wait > Duration::ZERO && wait <= Duration::from_secs(1));
        assert!(limits.check(b).is_ok(), "another token has its own budget");
    }
}
