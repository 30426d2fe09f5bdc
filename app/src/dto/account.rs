//! A person's account page: who they are and their passkeys, which prove the approvals the
//! policy asks a step-up for.

use serde::{Deserialize, Serialize};

use crate::time::Moment;

/// The account page.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AccountView {
    /// The signed-in person.
    pub username: String,
    /// Their role, as the page names it.
    pub role: String,
    /// Their passkeys, oldest first.
    pub passkeys: Vec<PasskeyView>,
}

/// One registered passkey.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PasskeyView {
    /// Id (the forms post it).
    pub id: String,
    /// The name its owner gave it.
    pub name: String,
    /// The WebAuthn credential id, base64url, as the trail records it.
    pub credential_id: String,
    /// When it was added.
    pub created_at: Moment,
    /// When it last proved an approval.
    pub last_used_at: Option<Moment>,
}

/// An approval proved by a passkey, as a proposal's page lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PasskeyProofView {
    /// The approver.
    pub by: String,
    /// The credential that signed, base64url.
    pub credential_id: String,
}
