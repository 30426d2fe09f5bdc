//! API tokens for agents and executors, and executor lease tokens: 256 random bits, shown
//! once, stored only as their sha256. High-entropy secrets need no slow hash; sha256 lets the
//! lookup be one indexed equality.

use argon2::password_hash::rand_core::{OsRng, RngCore};

use crate::domain::contract::canonical::sha256_hex;
use crate::domain::principal::TokenKind;

/// A freshly made secret. Not `Debug`, not `Serialize`: it is printed once, by hand.
pub struct Secret(String);

impl Secret {
    /// The secret text, to show once.
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// Wraps a secret made elsewhere (a generated password) so it is shown once like a token.
    pub fn from_shown(secret: String) -> Self {
        Secret(secret)
    }

    /// The hash to store.
    pub fn hash(&self) -> String {
        hash(&self.0)
    }
}

/// 256 random bits as lowercase hex.
pub fn random_hex() -> String {
    let mut bytes = [0u8; 32];
    OsRng.fill_bytes(&mut bytes);
    hex::encode(bytes)
}

/// A new API token; the prefix says what it is for (`csa_` agent, `cse_` executor), which
/// helps secret scanners and people.
pub fn new_api_token(kind: TokenKind) -> Secret {
    let prefix = match kind {
        TokenKind::Agent => "csa_",
        TokenKind::Executor => "cse_",
    };
    Secret(format!("{prefix}{}", random_hex()))
}

/// A new webhook signing secret (`csw_`): the receiver keys its HMAC check with it.
pub fn new_webhook_secret() -> Secret {
    Secret(format!("csw_{}", random_hex()))
}

/// A new lease token.
pub fn new_lease_token() -> Secret {
    Secret(format!("csl_{}", random_hex()))
}

/// The stored form of a presented token.
pub fn hash(token: &str) -> String {
    sha256_hex(token.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_random_prefixed_and_hashed() {
        let a = new_api_token(TokenKind::Agent);
        let b = new_api_token(TokenKind::Agent);
        assert!(a.expose().starts_with("csa_"));
        assert_eq!(a.expose().len(), 4 + 64);
        assert_ne!(a.expose(), b.expose());
        assert_eq!(a.hash(), hash(a.expose()));
        assert_ne!(a.hash(), a.expose());
        assert!(
            new_api_token(TokenKind::Executor)
                .expose()
                .starts_with("cse_")
        );
    }
}
