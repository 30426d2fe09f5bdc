//! Signing in and staying signed in.
//!
//! A sign-in is refused, without any password hashing, while its account or its client
//! address is throttled ([`crate::domain::sign_in`]); otherwise the password is checked in a
//! slot of the [`crate::auth::password::HashPool`] (against a dummy hash when the account does
//! not exist or is disabled, so every refusal costs the same), and the throttle is looked at
//! again once the slot is held, so a burst of parallel attempts cannot all slip past one
//! look. Failures are counted in the database, so every instance throttles alike. Every
//! attempt is recorded: `auth.signed_in`, `auth.sign_in_failed` or `auth.sign_in_throttled`.
//!
//! A session is checked on each use ([`Services::check_session`]): its idle and absolute
//! limits, then the account: still there, enabled, same role, same session epoch (which
//! disabling and password resets move on). A session that fails is recorded as
//! `auth.session_ended`; the web layer then ends it.

use std::net::IpAddr;

use time::{Duration, OffsetDateTime};

use super::error::ServiceError;
use super::services::Services;
use crate::audit::{Actor, AuditEvent, SessionEnded, SignInFailed, SignInThrottled, SignedIn};
use crate::auth::password::MAX_PASSWORD_LEN;
use crate::domain::principal::Role;
use crate::domain::sign_in::{
    SessionEnd, SessionLimits, SessionUse, ThrottleRule, ThrottleScope, account_key, address_key,
    session_use,
};
use crate::storage::accounts::UserRecord;
use crate::storage::throttle;

/// What a sign-in attempt came to.
pub enum SignIn {
    /// The password matched an active account.
    SignedIn(UserRecord),
    /// Wrong username or password, a disabled account or an over-long password: one answer.
    Refused,
    /// Too many failures lately; the password was not checked.
    Throttled {
        /// How long until an attempt is let through again.
        retry_after: Duration,
    },
}

/// What a session remembers of its sign-in, for [`Services::check_session`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionStamp {
    /// Username.
    pub username: String,
    /// Role at sign-in (`None`: none granted; the session may do nothing).
    pub role: Option<Role>,
    /// The account's session epoch at sign-in.
    pub epoch: i64,
    /// When they signed in.
    pub signed_in_at: OffsetDateTime,
    /// When the session was last noted as used.
    pub seen_at: OffsetDateTime,
}

/// The throttle keys of one attempt: keyed hashes, never the typed name or the address.
struct Keys {
    account: String,
    address: String,
}

fn unix_ms(t: OffsetDateTime) -> i64 {
    i64::try_from(t.unix_timestamp_nanos() / 1_000_000).unwrap_or(i64::MAX)
}

fn from_unix_ms(ms: i64) -> OffsetDateTime {
    OffsetDateTime::from_unix_timestamp_nanos(i128::from(ms) * 1_000_000)
        .unwrap_or(OffsetDateTime::UNIX_EPOCH)
}

/// Whole seconds, rounded up.
fn ceil_secs(d: Duration) -> i64 {
    d.whole_seconds() + i64::from(d.subsec_nanoseconds() > 0)
}

impl Services {
    /// Signs a person in from `client`, throttled per account and per address. Only
    /// [`SignIn::SignedIn`] lets them in; the other two answers say nothing about whether the
    /// account exists.
    pub async fn sign_in(
        &self,
        username: &str,
        password: &str,
        client: IpAddr,
    ) -> Result<SignIn, ServiceError> {
        let salt = self.store().salt();
        let keys = Keys {
            account: salt.hash(format!("sign-in/account\0{}", account_key(username)).as_bytes()),
            address: salt.hash(format!("sign-in/address\0{}", address_key(client)).as_bytes()),
        };
        let found = self.user(username).await?;
        if let Some(refusal) = self.throttled(&keys, found.as_ref()).await? {
            return Ok(refusal);
        }
        if password.chars().count() > MAX_PASSWORD_LEN {
            // Refused as any wrong password is, without hashing a megabyte.
            self.sign_in_failed(&keys, found.as_ref(), "too_long")
                .await?;
            return Ok(SignIn::Refused);
        }
        let slot = self.hashing().slot().await;
        // Others may have failed while this attempt waited for its slot.
        if let Some(refusal) = self.throttled(&keys, found.as_ref()).await? {
            return Ok(refusal);
        }
        let active = found.as_ref().filter(|u| !u.disabled);
        let matches = slot
            .verify(password.to_owned(), active.map(|u| u.password_hash.clone()))
            .await;
        // The failure is counted before the slot is given up, so the next in line sees it.
        let answer = match (found, matches) {
            (Some(user), true) if !user.disabled => {
                self.signed_in(&keys, &user).await?;
                SignIn::SignedIn(user)
            }
            (found, _) => {
                let reason = match &found {
                    Some(u) if u.disabled => "disabled",
                    Some(_) => "wrong_password",
                    None => "unknown_user",
                };
                self.sign_in_failed(&keys, found.as_ref(), reason).await?;
                SignIn::Refused
            }
        };
        drop(slot);
        Ok(answer)
    }

    /// [`SignIn::Throttled`], recorded, when the account or the address must wait.
    async fn throttled(
        &self,
        keys: &Keys,
        found: Option<&UserRecord>,
    ) -> Result<Option<SignIn>, ServiceError> {
        let counts = {
            let mut read = self.read().await?;
            throttle::failures(read.conn(), &keys.account, &keys.address).await?
        };
        let now = self.now();
        let locked = counts
            .iter()
            .filter_map(|f| {
                ThrottleRule::for_scope(f.scope)
                    .locked_until(f.count, from_unix_ms(f.last_ms), now)
                    .map(|until| (until, f.scope))
            })
            .max_by_key(|(until, _)| *until);
        let Some((until, scope)) = locked else {
            return Ok(None);
        };
        let retry_after = until - now;
        let event = SignInThrottled {
            username: found.map(|u| u.username.clone()),
            scope: scope.as_str(),
            retry_after_secs: ceil_secs(retry_after),
            client: keys.address.clone(),
        };
        let actor = found.map_or_else(|| Actor::system("sign-in"), |u| Actor::user(&u.username));
        self.store()
            .record(vec![(now, actor, AuditEvent::SignInThrottled(event))])
            .await?;
        Ok(Some(SignIn::Throttled { retry_after }))
    }

    /// Counts a failure against the account and the address, and records it.
    async fn sign_in_failed(
        &self,
        keys: &Keys,
        found: Option<&UserRecord>,
        reason: &'static str,
    ) -> Result<(), ServiceError> {
        let now = self.now();
        let now_ms = unix_ms(now);
        let (actor, username) = match found {
            Some(u) => (Actor::user(&u.username), Some(u.username.clone())),
            None => (Actor::system("sign-in"), None),
        };
        let event = AuditEvent::SignInFailed(SignInFailed { username, reason });
        let (account, address) = (keys.account.clone(), keys.address.clone());
        self.store()
            .write(move |tx| {
                Box::pin(async move {
                    for (scope, key) in [
                        (ThrottleScope::Account, account),
                        (ThrottleScope::Address, address),
                    ] {
                        let forget = unix_ms(now - ThrottleRule::for_scope(scope).window);
                        throttle::add_failure(tx.conn(), scope, &key, now_ms, forget).await?;
                    }
                    tx.record(now, &actor, event);
                    Ok::<_, ServiceError>(())
                })
            })
            .await
    }

    /// Forgets the account's failures and records the sign-in. The address keeps its count:
    /// one good account must not reset the count of an address that tries many.
    async fn signed_in(&self, keys: &Keys, user: &UserRecord) -> Result<(), ServiceError> {
        let now = self.now();
        let account = keys.account.clone();
        let actor = Actor::user(&user.username);
        let event = AuditEvent::SignedIn(SignedIn {
            username: user.username.clone(),
            role: user.role,
            via: None,
        });
        self.store()
            .write(move |tx| {
                Box::pin(async move {
                    throttle::clear(tx.conn(), ThrottleScope::Account, &account).await?;
                    tx.record(now, &actor, event);
                    Ok::<_, ServiceError>(())
                })
            })
            .await
    }

    /// Whether a session may still be used, and whether to note this use. A session that may
    /// not is recorded as `auth.session_ended` with the reason; the caller ends it.
    pub async fn check_session(
        &self,
        stamp: &SessionStamp,
        limits: SessionLimits,
    ) -> Result<Result<SessionUse, SessionEnd>, ServiceError> {
        let now = self.now();
        let verdict = match session_use(limits, stamp.signed_in_at, stamp.seen_at, now) {
            Err(end) => Err(end),
            Ok(used) => match self.user(&stamp.username).await? {
                None => Err(SessionEnd::Gone),
                Some(u) if u.disabled => Err(SessionEnd::Disabled),
                Some(u) if u.session_epoch != stamp.epoch => Err(SessionEnd::SignedOutEverywhere),
                Some(u) if u.role != stamp.role => Err(SessionEnd::RoleChanged),
                Some(_) => Ok(used),
            },
        };
        if let Err(end) = verdict {
            let event = AuditEvent::SessionEnded(SessionEnded {
                username: stamp.username.clone(),
                reason: end.as_str(),
            });
            self.store()
                .record(vec![(now, Actor::user(&stamp.username), event)])
                .await?;
        }
        Ok(verdict)
    }

    /// Deletes failure counts nobody looks at any more (older than the longest window).
    pub async fn purge_sign_in_failures(&self) -> Result<u64, ServiceError> {
        let window = crate::domain::sign_in::ACCOUNT_RULE
            .window
            .max(crate::domain::sign_in::ADDRESS_RULE.window);
        let before = unix_ms(self.now() - window);
        self.store()
            .write(move |tx| Box::pin(async move { throttle::purge(tx.conn(), before).await }))
            .await
            .map_err(ServiceError::from)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn milliseconds_round_trip_and_waits_round_up() {
        let t = OffsetDateTime::UNIX_EPOCH + Duration::milliseconds(1_234_567);
        assert_eq!(from_unix_ms(unix_ms(t)), t);
        assert_eq!(ceil_secs(Duration::milliseconds(29_001)), 30);
        assert_eq!(ceil_secs(Duration::seconds(30)), 30);
    }
}
