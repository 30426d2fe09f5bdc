//! argon2id password hashing, always off the async runtime (`spawn_blocking`): a hash takes
//! tens of milliseconds of CPU and must not stall other requests.

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

/// Hashes a password to a PHC string, on the blocking pool.
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
/// blocking pool. Returns true only for a match with a real hash.
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

    #[test]
    fn short_passwords_are_refused() {
        assert!(Password::new("short".into()).is_err());
    }
}
