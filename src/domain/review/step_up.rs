//! Passkey step-up: where the policy asks for it (`step_up = true` on a tool, or an effective
//! risk at or above `[defaults] step_up_risk`), approving needs a fresh passkey assertion whose
//! challenge binds the proposal's request hash, so the signature itself says "this person
//! approved this exact request, now".
//!
//! The challenge is [`challenge`]: sha256 of a label, the proposal's id, its request hash and
//! a random nonce. Whoever holds the trail's request hash, the kept nonce, the assertion and
//! the credential's public key can check the binding without trusting the database. A
//! ceremony is used once and lives [`CEREMONY_SECS`].

use sha2::{Digest, Sha256};
use thiserror::Error;
use uuid::Uuid;

/// How long a step-up or registration ceremony may take, in seconds.
pub const CEREMONY_SECS: i64 = 300;

/// The longest name a person may give a passkey, in characters.
pub const MAX_NAME: usize = 60;

/// The label every step-up challenge starts with (so it can never be mistaken for another
/// protocol's challenge).
const LABEL: &[u8] = b"countersign/step-up/v1\0";

/// The challenge of a step-up approval of proposal `proposal` whose request hash is
/// `request_hash`, with `nonce`: what the authenticator signs over.
pub fn challenge(proposal: Uuid, request_hash: &str, nonce: &[u8]) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update(LABEL);
    h.update(proposal.as_bytes());
    h.update(request_hash.as_bytes());
    h.update([0]);
    h.update(nonce);
    h.finalize().into()
}

/// Why a step-up approval is refused.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum StepUpError {
    /// The approver has no passkey: they add one on their account page first.
    #[error("approving this needs a passkey, and you have none: add one on your account page")]
    NoPasskey,
    /// No assertion came with the approval.
    #[error("approving this needs your passkey: approve it on its page")]
    Missing,
    /// The assertion answers no challenge this person was given for this proposal and its
    /// current request (another proposal's, an expired or already used one, or none).
    #[error("the passkey's answer is not for this request (or has expired): approve again")]
    WrongChallenge,
    /// The assertion does not verify (signature, origin, or no user verification).
    #[error("the passkey's answer did not verify: {0}")]
    Invalid(String),
}

/// A passkey's name as its owner gave it, trimmed; an error when empty or longer than
/// [`MAX_NAME`] characters.
pub fn name(text: &str) -> Result<String, String> {
    let name = text.trim();
    let len = name.chars().count();
    if len == 0 || len > MAX_NAME || name.chars().any(char::is_control) {
        return Err(format!("1 to {MAX_NAME} characters, no control characters"));
    }
    Ok(name.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_challenge_binds_proposal_request_and_nonce() {
        let (p, q) = (Uuid::now_v7(), Uuid::now_v7());
        let base = challenge(p, "sha256:aa", b"nonce");
        assert_eq!(base, challenge(p, "sha256:aa", b"nonce"));
        assert_ne!(base, challenge(q, "sha256:aa", b"nonce"));
        assert_ne!(base, challenge(p, "sha256:ab", b"nonce"));
        assert_ne!(base, challenge(p, "sha256:aa", b"other"));
        // The separator keeps hash and nonce apart.
        assert_ne!(challenge(p, "ab", b"c"), challenge(p, "a", b"bc"));
    }

    #[test]
    fn names_are_short_visible_text() {
        assert_eq!(name("  YubiKey 5 ").as_deref(), Ok("YubiKey 5"));
        assert!(name("   ").is_err());
        assert!(name(&"x".repeat(MAX_NAME + 1)).is_err());
        assert!(name("a\u{7}b").is_err());
    }
}
