//! A short-lived cache of valid API tokens, so the hot paths (pre-tool-check, submission,
//! lease) do not read the token table on every request. Only active tokens are cached, for at
//! most [`TTL`]. A revocation made through this instance clears the cache at once; on
//! PostgreSQL one made anywhere (another instance, the CLI) does too, as its commit notifies
//! every instance (`countersign_credentials`). Only a CLI revocation of a SQLite file served by
//! another process waits out the [`TTL`]. Unknown or revoked tokens are never cached, so
//! guessing cannot fill it.
//!
//! Guessing cannot make the token table the bottleneck either ([`Services::authenticate_token`]):
//! lookups that find no active token are counted per client address, in this instance's
//! memory, under [`UNKNOWN_TOKEN_RULE`]. Once an address is throttled, a token it presents that
//! is not cached is looked up only if it is among the active tokens' hashes, a set read in one
//! statement and trusted for [`ACTIVE_FRESH`] (read only while some address is throttled);
//! any other is refused from memory, with the time left. So a valid token from a throttled
//! address still works (a token created since the set was read, after at most
//! [`ACTIVE_FRESH`]), and a flood of guesses costs one read per [`ACTIVE_FRESH`], not one per
//! request. (Guesses sent in parallel are each looked up until the first failures are
//! counted: at most as many more as the address has requests in flight.) The counts are this
//! instance's: each instance on one PostgreSQL throttles on its own.
//!
//! [`TTL`]: super::token_cache::TTL
//! [`ACTIVE_FRESH`]: super::token_cache::ACTIVE_FRESH
//! [`UNKNOWN_TOKEN_RULE`]: crate::domain::sign_in::UNKNOWN_TOKEN_RULE

use std::collections::HashSet;
use std::net::IpAddr;
use std::sync::Arc;
use std::time::Instant;

use time::OffsetDateTime;

use super::error::ServiceError;
use super::services::Services;
use crate::domain::sign_in::address_key;
use crate::storage::accounts::{self, TokenRecord};

/// What a presented bearer token came to.
#[derive(Debug)]
pub enum TokenCheck {
    /// An active token.
    Active(TokenRecord),
    /// Unknown or revoked; counted against the client's address.
    Refused,
    /// The client's address presented too many unknown tokens lately: nothing was looked up.
    Throttled {
        /// How long until its unknown tokens are looked up again.
        retry_after: time::Duration,
    },
}

impl Services {
    /// The active token behind `token_hash`, presented from `client`, throttled per address
    /// (see the module's documentation).
    pub async fn authenticate_token(
        &self,
        token_hash: &str,
        client: IpAddr,
    ) -> Result<TokenCheck, ServiceError> {
        if let Some(cached) = self.tokens.get(token_hash, Instant::now()) {
            return Ok(TokenCheck::Active(cached));
        }
        let (now, address) = (self.now(), address_key(client));
        if let Some(until) = self.tokens.throttled_until(&address, now)
            && !self.is_active_hash(token_hash, now).await?
        {
            return Ok(TokenCheck::Throttled {
                retry_after: until - now,
            });
        }
        match self.token(token_hash).await? {
            Some(record) if !record.revoked => Ok(TokenCheck::Active(record)),
            _ => {
                if self.tokens.failed(&address, now) {
                    tracing::warn!(
                        client = %client,
                        "too many unknown API tokens from one address: refusing its unknown \
                         tokens for a while"
                    );
                }
                Ok(TokenCheck::Refused)
            }
        }
    }

    /// Changes each time API tokens may have been revoked (through this instance, or anywhere
    /// on PostgreSQL, or after its listener reconnected): an open stream then looks whether its
    /// own token still stands.
    pub fn revocations(&self) -> tokio::sync::watch::Receiver<u64> {
        self.tokens.revocations()
    }

    /// Whether `token_hash` is among the active tokens' hashes, read again when older than
    /// [`ACTIVE_FRESH`].
    async fn is_active_hash(
        &self,
        token_hash: &str,
        now: OffsetDateTime,
    ) -> Result<bool, ServiceError> {
        if let Some(active) = self.tokens.active_hashes(now) {
            return Ok(active.contains(token_hash));
        }
        let _reading = self.tokens.reading_active.lock().await;
        // Read by whoever held the lock before.
        if let Some(active) = self.tokens.active_hashes(now) {
            return Ok(active.contains(token_hash));
        }
        let mut read = self.read().await?;
        let hashes = accounts::active_token_hashes(read.conn()).await?;
        let active: HashSet<String> = hashes.into_iter().collect();
        let found = active.contains(token_hash);
        self.tokens.set_active_hashes(Arc::new(active), now);
        Ok(found)
    }
}
