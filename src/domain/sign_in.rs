//! The rules for people signing in, free of IO and clocks (times are passed in):
//!
//! - **Throttling.** Failed sign-ins are counted per account (what was typed as a username,
//!   whether or not an account of that name exists, so the answer never tells the two apart)
//!   and per client address. After [`ThrottleRule::free_failures`] failures, each further
//!   attempt waits: 30 s after the last failure, doubling with every failure after that, at
//!   most 15 min. A quiet [`ThrottleRule::window`] forgets the count.
//! - **Unknown bearer tokens** are throttled per client address by the same kind of rule
//!   ([`UNKNOWN_TOKEN_RULE`]): an address whose tokens keep matching no active token is refused
//!   a while, so guessing cannot make the token table the bottleneck.
//! - **Sessions.** A session ends [`SessionLimits::idle`] after its last use and
//!   [`SessionLimits::lifetime`] after sign-in, whatever its activity; it is renewed (and so
//!   its idle deadline moved on) at most once per [`TOUCH_EVERY`].

use std::net::IpAddr;

use time::{Duration, OffsetDateTime};

/// What a throttle counts by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ThrottleScope {
    /// What was typed as a username.
    Account,
    /// The client's address (an IPv6 client's /64 network).
    Address,
}

impl ThrottleScope {
    /// `account` or `address`, as stored and recorded.
    pub fn as_str(self) -> &'static str {
        match self {
            ThrottleScope::Account => "account",
            ThrottleScope::Address => "address",
        }
    }
}

/// When failures start to cost time, and how much.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ThrottleRule {
    /// Failures allowed before the first wait.
    pub free_failures: i64,
    /// The first wait.
    pub base: Duration,
    /// The longest wait.
    pub max: Duration,
    /// A count whose last failure is older than this starts again from zero.
    pub window: Duration,
}

/// Per account: the fifth failure makes the sixth attempt wait.
pub const ACCOUNT_RULE: ThrottleRule = ThrottleRule {
    free_failures: 5,
    base: Duration::seconds(30),
    max: Duration::minutes(15),
    window: Duration::hours(1),
};

/// Per client address: more room, since an office behind one address shares it.
pub const ADDRESS_RULE: ThrottleRule = ThrottleRule {
    free_failures: 20,
    base: Duration::seconds(30),
    max: Duration::minutes(15),
    window: Duration::hours(1),
};

/// Per client address, for API bearer tokens that match no active token (unknown or
/// revoked): twenty free, for an agent with a mistyped or just revoked token, then the same
/// waits as sign-ins.
pub const UNKNOWN_TOKEN_RULE: ThrottleRule = ThrottleRule {
    free_failures: 20,
    base: Duration::seconds(30),
    max: Duration::minutes(15),
    window: Duration::hours(1),
};

impl ThrottleRule {
    /// The rule for `scope`.
    pub fn for_scope(scope: ThrottleScope) -> ThrottleRule {
        match scope {
            ThrottleScope::Account => ACCOUNT_RULE,
            ThrottleScope::Address => ADDRESS_RULE,
        }
    }

    /// How long to wait after the last of `failures` failures (zero while still free).
    pub fn wait_after(&self, failures: i64) -> Duration {
        if failures < self.free_failures {
            return Duration::ZERO;
        }
        let doublings = u32::try_from(failures - self.free_failures).unwrap_or(u32::MAX);
        let factor = 2i32.checked_pow(doublings.min(30)).unwrap_or(i32::MAX);
        self.base
            .checked_mul(factor)
            .map_or(self.max, |wait| wait.min(self.max))
    }

    /// Until when the next attempt is refused, if it is: `failures` counted, the last at
    /// `last_failure`. A count older than the window is forgotten.
    pub fn locked_until(
        &self,
        failures: i64,
        last_failure: OffsetDateTime,
        now: OffsetDateTime,
    ) -> Option<OffsetDateTime> {
        if now - last_failure > self.window {
            return None;
        }
        let until = last_failure + self.wait_after(failures);
        (until > now).then_some(until)
    }
}

/// The address failures are counted by: IPv4 as is (an IPv4-mapped IPv6 address as its IPv4),
/// IPv6 by its /64 network, which one client usually holds whole.
pub fn address_key(addr: IpAddr) -> String {
    match addr {
        IpAddr::V4(v4) => v4.to_string(),
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => v4.to_string(),
            None => {
                let s = v6.segments();
                format!("{:x}:{:x}:{:x}:{:x}::/64", s[0], s[1], s[2], s[3])
            }
        },
    }
}

/// What was typed as a username, as the account throttle counts it: trimmed and lowercased
/// (names are lowercase), cut to 128 characters.
pub fn account_key(typed: &str) -> String {
    typed.trim().to_lowercase().chars().take(128).collect()
}

/// How long sessions last.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SessionLimits {
    /// Ends this long after the session was last used.
    pub idle: Duration,
    /// Ends this long after sign-in, used or not.
    pub lifetime: Duration,
}

impl Default for SessionLimits {
    /// 30 minutes idle, 12 hours in all (OWASP ASVS level 2).
    fn default() -> Self {
        Self {
            idle: Duration::minutes(30),
            lifetime: Duration::hours(12),
        }
    }
}

/// A used session is renewed at most this often: each renewal is a write.
pub const TOUCH_EVERY: Duration = Duration::minutes(1);

/// Why a session ended without its owner signing out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SessionEnd {
    /// Unused for longer than the idle limit.
    Idle,
    /// Older than the absolute limit.
    Lifetime,
    /// The account was disabled.
    Disabled,
    /// The account no longer exists.
    Gone,
    /// The account's role changed since sign-in.
    RoleChanged,
    /// Signed out everywhere (password reset or account disabled) since sign-in.
    SignedOutEverywhere,
}

impl SessionEnd {
    /// As recorded in the trail.
    pub fn as_str(self) -> &'static str {
        match self {
            SessionEnd::Idle => "idle",
            SessionEnd::Lifetime => "lifetime",
            SessionEnd::Disabled => "disabled",
            SessionEnd::Gone => "account_gone",
            SessionEnd::RoleChanged => "role_changed",
            SessionEnd::SignedOutEverywhere => "signed_out_everywhere",
        }
    }
}

/// What the session layer should do with a session still within its limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SessionUse {
    /// Use it as it is.
    Keep,
    /// Use it and note this use, which moves its idle deadline on.
    Touch,
}

/// Whether a session signed in at `signed_in` and last used at `seen` may be used `now`.
pub fn session_use(
    limits: SessionLimits,
    signed_in: OffsetDateTime,
    seen: OffsetDateTime,
    now: OffsetDateTime,
) -> Result<SessionUse, SessionEnd> {
    if now - signed_in >= limits.lifetime {
        Err(SessionEnd::Lifetime)
    } else if now - seen >= limits.idle {
        Err(SessionEnd::Idle)
    } else if now - seen >= TOUCH_EVERY {
        Ok(SessionUse::Touch)
    } else {
        Ok(SessionUse::Keep)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::{Ipv4Addr, Ipv6Addr};

    fn t0() -> OffsetDateTime {
        OffsetDateTime::UNIX_EPOCH + Duration::days(20_000)
    }

    #[test]
    fn five_failures_are_free_then_the_wait_doubles_up_to_a_cap() {
        let r = ACCOUNT_RULE;
        assert_eq!(r.wait_after(4), Duration::ZERO);
        assert_eq!(r.wait_after(5), Duration::seconds(30));
        assert_eq!(r.wait_after(6), Duration::seconds(60));
        assert_eq!(r.wait_after(7), Duration::seconds(120));
        assert_eq!(r.wait_after(10), Duration::minutes(15));
        assert_eq!(r.wait_after(i64::MAX), Duration::minutes(15));
    }

    #[test]
    fn the_sixth_attempt_waits_and_a_quiet_window_forgets() {
        let r = ACCOUNT_RULE;
        let last = t0();
        assert_eq!(r.locked_until(4, last, last), None);
        assert_eq!(
            r.locked_until(5, last, last + Duration::seconds(1)),
            Some(last + Duration::seconds(30))
        );
        assert_eq!(r.locked_until(5, last, last + Duration::seconds(30)), None);
        assert_eq!(r.locked_until(50, last, last + Duration::hours(2)), None);
        assert_eq!(ADDRESS_RULE.locked_until(19, last, last), None);
        assert!(ADDRESS_RULE.locked_until(20, last, last).is_some());
    }

    #[test]
    fn twenty_unknown_tokens_are_free_then_the_address_waits() {
        let r = UNKNOWN_TOKEN_RULE;
        let last = t0();
        assert_eq!(r.locked_until(19, last, last), None);
        assert_eq!(
            r.locked_until(20, last, last),
            Some(last + Duration::seconds(30))
        );
        assert_eq!(r.wait_after(21), Duration::seconds(60));
        assert_eq!(r.locked_until(40, last, last + Duration::hours(2)), None);
    }

    #[test]
    fn addresses_count_by_ipv4_or_ipv6_network() {
        assert_eq!(
            address_key(IpAddr::V4(Ipv4Addr::new(10, 1, 2, 3))),
            "10.1.2.3"
        );
        let mapped = Ipv4Addr::new(10, 1, 2, 3).to_ipv6_mapped();
        assert_eq!(address_key(IpAddr::V6(mapped)), "10.1.2.3");
        let a: Ipv6Addr = "2001:db8:1:2:aaaa::1".parse().expect("v6");
        let b: Ipv6Addr = "2001:db8:1:2:bbbb::9".parse().expect("v6");
        assert_eq!(address_key(IpAddr::V6(a)), address_key(IpAddr::V6(b)));
        assert_eq!(address_key(IpAddr::V6(a)), "2001:db8:1:2::/64");
    }

    #[test]
    fn typed_names_count_alike_whatever_their_case() {
        assert_eq!(account_key("  Alice "), "alice");
        assert_eq!(account_key(&"x".repeat(500)).len(), 128);
    }

    #[test]
    fn sessions_end_idle_or_old_and_are_touched_once_a_minute() {
        let limits = SessionLimits::default();
        let t = t0();
        assert_eq!(session_use(limits, t, t, t), Ok(SessionUse::Keep));
        let later = t + Duration::minutes(2);
        assert_eq!(session_use(limits, t, t, later), Ok(SessionUse::Touch));
        assert_eq!(
            session_use(limits, t, t, t + Duration::minutes(30)),
            Err(SessionEnd::Idle)
        );
        let seen = t + Duration::hours(12) - Duration::minutes(1);
        assert_eq!(
            session_use(limits, t, seen, t + Duration::hours(12)),
            Err(SessionEnd::Lifetime)
        );
    }
}
