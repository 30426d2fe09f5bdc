//! A clock the test sets and moves by hand, for tests that drive [`Services`] directly.
//!
//! [`Services`]: countersign::service::Services

use std::sync::{Mutex, PoisonError};

use countersign::service::Clock;
use time::{Duration, OffsetDateTime};

/// Stands where the test puts it.
pub struct SetClock(Mutex<OffsetDateTime>);

impl SetClock {
    /// Standing at `t`.
    pub fn at(t: OffsetDateTime) -> Self {
        Self(Mutex::new(t))
    }

    /// Standing at the current time, in whole seconds (both databases store microseconds, so
    /// times read back compare equal).
    pub fn starting_now() -> Self {
        let now = OffsetDateTime::now_utc();
        Self::at(now.replace_nanosecond(0).unwrap_or(now))
    }

    pub fn set(&self, t: OffsetDateTime) {
        *self.0.lock().unwrap_or_else(PoisonError::into_inner) = t;
    }

    pub fn advance(&self, by: Duration) {
        let now = self.now();
        self.set(now + by);
    }
}

impl Clock for SetClock {
    fn now(&self) -> OffsetDateTime {
        *self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }
}
