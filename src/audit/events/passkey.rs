//! Passkeys' events: registered, renamed and removed on an account page, and the step-up that
//! proved an approval. The trail names the credential (its id, base64url) and, for a step-up,
//! the challenge it signed; a passkey's name is recorded as a keyed hash, like every free text.

use serde::Serialize;
use uuid::Uuid;

use super::payload::Payload;
use super::proposal::ProposalFacets;
use crate::audit::safe::TextDigest;

/// Payload of `passkey.registered`, `passkey.renamed` and `passkey.removed`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PasskeyChanged {
    /// `registered`, `renamed` or `removed`.
    #[serde(skip)]
    pub change: &'static str,
    /// The passkey.
    #[serde(skip)]
    pub passkey_id: Uuid,
    /// Whose it is.
    pub username: String,
    /// The WebAuthn credential id, base64url.
    pub credential_id: String,
    /// Its name, as length and keyed hash (none when removed).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<TextDigest>,
}

impl Payload for PasskeyChanged {
    fn kind(&self) -> &'static str {
        match self.change {
            "registered" => "passkey.registered",
            "renamed" => "passkey.renamed",
            _ => "passkey.removed",
        }
    }
    fn subject(&self) -> (&'static str, String) {
        ("passkey", self.passkey_id.to_string())
    }
}

/// Payload of `proposal.stepped_up`: an approval was proved by the approver's passkey, over a
/// challenge that binds this proposal's request hash (the `proposal.approved` or
/// `approval.recorded` that follows in the same transaction is that approval).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ProposalSteppedUp {
    /// The proposal.
    #[serde(skip)]
    pub proposal_id: Uuid,
    /// Whose, which tool, where, how risky.
    #[serde(flatten)]
    pub facets: ProposalFacets,
    /// The credential that signed, base64url.
    pub credential_id: String,
    /// The challenge it signed, base64url: sha256 of the proposal, its request hash and the
    /// nonce ([`crate::domain::review::step_up::challenge`]).
    pub challenge: String,
    /// The nonce, hex.
    pub nonce: String,
    /// Whether the authenticator verified the person (always, or it is refused).
    pub user_verified: bool,
    /// The request hash the challenge bound.
    pub request_hash_sha256: String,
}

impl Payload for ProposalSteppedUp {
    fn kind(&self) -> &'static str {
        "proposal.stepped_up"
    }
    fn subject(&self) -> (&'static str, String) {
        ("proposal", self.proposal_id.to_string())
    }
}
