//! The policy's events: a request to activate a version (`policy.proposed`), a second admin's
//! answer (`policy.approved`, `policy.refused`), a refused approval (`policy.approval_refused`:
//! the proposer, or a version no longer pending), a shadow run started or stopped
//! (`policy.shadowed`), and the activation itself (`policy.activated`), always with the
//! versions, never only "changed". The subject is the version concerned; reasons are free
//! text, recorded as a keyed hash.

use serde::Serialize;
use uuid::Uuid;

use super::payload::Payload;
use crate::audit::safe::TextDigest;

/// Payload of `policy.proposed`: one admin asks to make `policy_version` active.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PolicyProposed {
    /// The request.
    pub change_id: Uuid,
    /// The version to activate.
    #[serde(skip)]
    pub policy_version: String,
    /// The version active when proposed.
    pub base_version: String,
    /// The backtest's counts: replayed, routed differently, not replayable.
    pub replayed: u64,
    /// Routed differently under it.
    pub changed: u64,
    /// Not replayable (erased, or recorded without inputs).
    pub not_replayable: u64,
    /// Whether some decision would now be `accept` and was not.
    pub loosening: bool,
    /// Why, as length and keyed hash.
    pub reason: TextDigest,
}

impl Payload for PolicyProposed {
    fn kind(&self) -> &'static str {
        "policy.proposed"
    }
    fn subject(&self) -> (&'static str, String) {
        ("policy", self.policy_version.clone())
    }
}

/// Payload of `policy.approved` and `policy.refused`: a second admin answered a request.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PolicyAnswered {
    /// `approved` or `refused`.
    #[serde(skip)]
    pub answer: &'static str,
    /// The request.
    pub change_id: Uuid,
    /// The version it asked to activate.
    #[serde(skip)]
    pub policy_version: String,
    /// Who proposed it.
    pub proposed_by: String,
    /// Whether its backtest found a loosening.
    pub loosening: bool,
    /// Why, as length and keyed hash, when given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<TextDigest>,
}

impl Payload for PolicyAnswered {
    fn kind(&self) -> &'static str {
        match self.answer {
            "approved" => "policy.approved",
            _ => "policy.refused",
        }
    }
    fn subject(&self) -> (&'static str, String) {
        ("policy", self.policy_version.clone())
    }
}

/// Payload of `policy.approval_refused`: an approval the rules refused.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PolicyApprovalRefused {
    /// The request.
    pub change_id: Uuid,
    /// The version it asks to activate.
    #[serde(skip)]
    pub policy_version: String,
    /// `own_change` (the proposer may not approve) or `not_pending`.
    pub rule: &'static str,
}

impl Payload for PolicyApprovalRefused {
    fn kind(&self) -> &'static str {
        "policy.approval_refused"
    }
    fn subject(&self) -> (&'static str, String) {
        ("policy", self.policy_version.clone())
    }
}

/// Payload of `policy.shadowed`: a request's version runs in shadow until `until` (or no
/// longer, when `None`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PolicyShadowed {
    /// The request.
    pub change_id: Uuid,
    /// Its version.
    #[serde(skip)]
    pub policy_version: String,
    /// The end of the run (RFC 3339), or none: stopped.
    pub until: Option<String>,
}

impl Payload for PolicyShadowed {
    fn kind(&self) -> &'static str {
        "policy.shadowed"
    }
    fn subject(&self) -> (&'static str, String) {
        ("policy", self.policy_version.clone())
    }
}

/// Payload of `policy.activated`: `policy_version` governs every decision from now on.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PolicyActivated {
    /// The version now active.
    #[serde(skip)]
    pub policy_version: String,
    /// The version it replaced (none on a new database).
    pub previous_version: Option<String>,
    /// `builtin`, `file`, `approved` or `break_glass`.
    pub how: &'static str,
    /// Whether one person activated it alone at the shell.
    pub break_glass: bool,
    /// The request it carried out, when approved.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub change_id: Option<Uuid>,
    /// Who proposed it, and who approved it.
    pub proposed_by: String,
    /// The second admin.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub approved_by: Option<String>,
    /// Why (break-glass), as length and keyed hash.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<TextDigest>,
}

impl Payload for PolicyActivated {
    fn kind(&self) -> &'static str {
        "policy.activated"
    }
    fn subject(&self) -> (&'static str, String) {
        ("policy", self.policy_version.clone())
    }
}
