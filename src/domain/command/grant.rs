//! Signed grants: what lets an executor check, offline, that the command it is about to run is
//! exactly what a human approved.
//!
//! A grant's *claims* name the command, its tool and version, the approved request's hash, the
//! sha256 of the parameters, the attempt and the grant's expiry. The server signs the claims'
//! canonical JSON (RFC 8785) with Ed25519; `GET /api/v1/executor/public-key` serves the key.
//! An executor verifies in three steps:
//!
//! 1. the signature holds over `JCS(grant without "signature")` for the key it fetched (and
//!    pinned) from the server;
//! 2. the claims match the command it received: `command_id`, `tool.name`, `tool.version`,
//!    `request_hash_sha256`, and `sha256(JCS(parameters))`;
//! 3. `expires_at` is in the future.
//!
//! Any change to the command after approval — a parameter, the tool, the version — breaks
//! step 2; any change to the claims breaks step 1.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};
use uuid::Uuid;

use super::CommandSpec;
use crate::domain::contract::canonical::{Uncanonical, rfc8785};

/// Format marker of the claims; bumped if their meaning ever changes.
pub const GRANT_FORMAT: &str = "countersign.grant/1";

/// What a grant vouches for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GrantClaims {
    /// Always [`GRANT_FORMAT`].
    pub format: String,
    /// The command.
    pub command_id: Uuid,
    /// `action`, or `rollback` for a rollback of an earlier command.
    pub kind: String,
    /// The tool's name.
    pub tool: String,
    /// The tool's version.
    pub version: String,
    /// sha256 of the approved request.
    pub request_hash_sha256: String,
    /// sha256 hex of the parameters' canonical JSON (RFC 8785).
    pub parameters_sha256: String,
    /// Which attempt this lease is (1 for the first).
    pub attempt: u32,
    /// Run no later than this (RFC 3339): the lease's end when it was handed out.
    pub expires_at: String,
}

impl GrantClaims {
    /// The claims for attempt `attempt` of command `id` running `spec`, valid until `expires_at`.
    pub fn new(
        id: Uuid,
        kind: &str,
        spec: &CommandSpec,
        attempt: u32,
        expires_at: String,
    ) -> Result<Self, Uncanonical> {
        Ok(GrantClaims {
            format: GRANT_FORMAT.to_owned(),
            command_id: id,
            kind: kind.to_owned(),
            tool: spec.tool.name.clone(),
            version: spec.tool.version.clone(),
            request_hash_sha256: spec.request_hash_sha256.clone(),
            parameters_sha256: parameters_sha256(&spec.parameters)?,
            attempt,
            expires_at,
        })
    }

    /// The bytes signed: the claims' canonical JSON.
    pub fn message(&self) -> Result<Vec<u8>, Uncanonical> {
        rfc8785(self)
    }

    /// Whether these claims describe the command `id` running `spec`: every field but attempt
    /// and expiry (never, for a spec with no canonical form).
    pub fn describe(&self, id: Uuid, spec: &CommandSpec) -> bool {
        self.format == GRANT_FORMAT
            && self.command_id == id
            && self.tool == spec.tool.name
            && self.version == spec.tool.version
            && self.request_hash_sha256 == spec.request_hash_sha256
            && parameters_sha256(&spec.parameters).is_ok_and(|h| self.parameters_sha256 == h)
    }
}

/// sha256 hex of the parameters' canonical JSON (RFC 8785).
pub fn parameters_sha256(parameters: &Map<String, Value>) -> Result<String, Uncanonical> {
    Ok(hex::encode(Sha256::digest(rfc8785(parameters)?)))
}

/// sha256 hex of a whole spec's canonical JSON: what was approved, as queued. Recorded in the
/// chained `command.queued` event and checked again at every lease.
pub fn spec_sha256(spec: &CommandSpec) -> Result<String, Uncanonical> {
    Ok(hex::encode(Sha256::digest(rfc8785(spec)?)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use time::OffsetDateTime;

    fn spec() -> CommandSpec {
        serde_json::from_value(json!({
            "tool": {"name": "crm.update_contact", "version": "1"},
            "parameters": {"email": "a@example.com"},
            "idempotency_key": "k",
            "rollback_supported": false,
            "authorization_state": "confirmed",
            "domain": "sales",
            "request_hash_sha256": "0".repeat(64),
            "approved_by": "rev",
            "approved_at": "2026-11-22T10:00:00Z"
        }))
        .expect("spec")
    }

    #[test]
    fn a_spec_without_a_canonical_form_has_no_hash() {
        let good = spec();
        assert_eq!(spec_sha256(&good).map(|h| h.len()), Ok(64));
        // RFC 3339 has no year before 0: the spec cannot be written, so it has no hash (never
        // the hash of an empty payload).
        let bad = CommandSpec {
            approved_at: OffsetDateTime::UNIX_EPOCH.replace_year(-1).expect("year"),
            ..good
        };
        assert!(spec_sha256(&bad).is_err());
        let claims = GrantClaims::new(Uuid::nil(), "action", &bad, 1, String::new());
        assert!(claims.is_ok(), "the parameters alone still have their form");
        assert!(claims.is_ok_and(|c| c.message().is_ok() && c.describe(Uuid::nil(), &bad)));
    }
}
