//! argon2id password hashing, always off the async runtime (`spawn_blocking`): a hash takes
//! tens of milliseconds of CPU and 19 MiB of memory, and must not stall other requests. A
//! [`HashPool`] bounds how many run at once, so a burst of sign-ins queues instead of filling
//! the blocking pool (and memory) with hashes.

use std::sync::atomic::{AtomicU64, Ordering};

use argon2::password_hash::rand_core::OsRng;
use argon2::password_hash::{PasswordHash, PasswordHasher, PasswordVerifier, SaltString};
use argon2::{Algorithm, Argon2, Params, Version};

/// Shortest accepted password.
pub const MIN_PASSWORD_LEN: usize = 12;
/// Longest accepted password (bounds hashing work).
pub const MAX_PASSWORD_LEN: usize = 1024;

/// A password that is never printed.
pub struct Password(String);

impl Password {
    /// Checks length rules.
    pub fn new(raw: String) -> Result<Self, String> {
        let len = raw.chars().count();
        if len < MIN_PASSWORD_LEN {
            Err(format!(
                "password must be at least {MIN_PASSWORD_LEN} characters"
            ))
        } else if len > MAX_PASSWORD_LEN {
            Err(format!(
                "password must be at most {MAX_PASSWORD_LEN} characters"
            ))
        } else {
            Ok(Self(raw))
        }
    }
}

fn hasher() -> Argon2<'static> {
    // OWASP's argon2id baseline: 19 MiB, 2 iterations, 1 lane.
    let params = Params::new(19 * 1024, 2, 1, None).unwrap_or_default();
    Argon2::new(Algorithm::Argon2id, Version::V0x13, params)
}

/// How many hashes run at once in one process (19 MiB each).
pub const MAX_CONCURRENT_HASHES: usize = 4;

/// Bounds concurrent argon2 work and counts it. One per process (the [`crate::service::Services`]
/// hold it); a [`HashSlot`] is the right to run one hash.
pub struct HashPool {
    permits: tokio::sync::Semaphore,
    done: AtomicU64,
}

impl Default for HashPool {
    fn default() -> Self {
        Self {
            permits: tokio::sync::Semaphore::new(MAX_CONCURRENT_HASHES),
            done: AtomicU64::new(0),
        }
    }
}

/// The right to run argon2 now; others wait for it.
pub struct HashSlot<'a> {
    pool: &'a HashPool,
    _permit: Option<tokio::sync::SemaphorePermit<'a>>,
}

impl HashPool {
    /// Waits for a free slot.
    pub async fn slot(&self) -> HashSlot<'_> {
        // The semaphore is never closed, so `acquire` cannot fail.
        HashSlot {
            pool: self,
            _permit: self.permits.acquire().await.ok(),
        }
    }

    /// How many hashes and verifications this pool has run.
    pub fn work_done(&self) -> u64 {
        self.done.load(Ordering::Relaxed)
    }

    /// Hashes a password in a slot of its own.
    pub async fn hash(&self, password: Password) -> Result<String, String> {
        self.slot().await.hash(password).await
    }
}

impl HashSlot<'_> {
    /// Hashes a password to a PHC string, on the blocking pool.
    pub async fn hash(&self, password: Password) -> Result<String, String> {
        self.pool.done.fetch_add(1, Ordering::Relaxed);
        hash(password).await
    }

    /// Checks a password as [`verify`] does.
    pub async fn verify(&self, password: String, stored: Option<String>) -> bool {
        self.pool.done.fetch_add(1, Ordering::Relaxed);
        verify(password, stored).await
    }
}

/// Hashes a password to a PHC string, on the blocking pool (unbounded: use a [`HashPool`]).
pub async fn hash(password: Password) -> Result<String, String> {
    tokio::task::spawn_blocking(move || {
        let salt = SaltString::generate(&mut OsRng);
        hasher()
            .hash_password(password.0.as_bytes(), &salt)
            .map(|h| h.to_string())
            .map_err(|e| e.to_string())
    })
    .await
    .map_err(|e| e.to_string())?
}

/// A valid hash of a random password, checked when the user does not exist so that a wrong
/// username costs as much time as a wrong password.
const DUMMY_HASH: &str = "$argon2id$v=19$m=19456,t=2,p=1$c29tZXNhbHRzb21lc2FsdA$V5Ny2C3oAvOBoa2Ze3GSCGxx1y6c8w2VoFjAxG3eMc8";

/// Checks `password` against `stored` (or against a dummy when there is no user), on the
/// blocking pool. Returns true only for a match with a real hash. Unbounded: use a
/// [`HashPool`].
pub async fn verify(password: String, stored: Option<String>) -> bool {
    let real = stored.is_some();
    let checked = tokio::task::spawn_blocking(move || {
        let stored = stored.unwrap_or_else(|| DUMMY_HASH.to_owned());
        match PasswordHash::new(&stored) {
            Ok(parsed) => hasher()
                .verify_password(password.as_bytes(), &parsed)
                .is_ok(),
            Err(_) => false,
        }
    })
    .await
    .unwrap_or(false);
    real && checked
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn hashes_verify_and_differ_per_salt() {
        let a = hash(Password::new("correct horse battery".into()).expect("ok"))
            .await
            .expect("hash");
        let b = hash(Password::new("correct horse battery".into()).expect("ok"))
            .await
            .expect("hash");
        assert!(a.starts_with("$argon2id$"));
        assert_ne!(a, b);
        assert!(verify("correct horse battery".into(), Some(a.clone())).await);
        assert!(!verify("wrong horse battery".into(), Some(a)).await);
    }

    #[tokio::test]
    async fn unknown_users_never_verify() {
        assert!(PasswordHash::new(DUMMY_HASH).is_ok());
        assert!(!verify("anything at all".into(), None).await);
    }

    #[tokio::test]
    async fn the_pool_counts_its_work() {
        let pool = HashPool::default();
        let slot = pool.slot().await;
        assert!(!slot.verify("anything at all".into(), None).await);
        drop(slot);
        assert_eq!(pool.work_done(), 1);
    }

    #[test]
    fn short_passwords_are_refused() {
        assert!(Password::new("short".into()).is_err());
    }
}
