//! Standing grants as the pages show them: the offer beside Approve on a proposal's page, the
//! form it posts, and the grants page.

use serde::{Deserialize, Serialize};

use crate::time::Moment;

/// "Approve and allow similar", as offered on a proposal's page.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GrantOfferView {
    /// Why this proposal's calls cannot be granted; when set, nothing else is offered.
    pub refused: Option<String>,
    /// Durations offered, `(seconds, words)`, shortest first; the one-hour choice (or the
    /// policy's limit, if shorter) is selected.
    pub durations: Vec<(u64, String)>,
    /// The duration selected at first.
    pub default_secs: u64,
    /// The parameters the reviewer may free or bound.
    pub fields: Vec<GrantFieldView>,
}

/// One parameter a grant may let differ.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GrantFieldView {
    /// Its JSON pointer (`/amount`), hex-encoded (a key may hold characters a page never
    /// shows raw); the form posts it so.
    pub pointer: String,
    /// Its name, visible form.
    pub name: String,
    /// The approved value, visible form, shortened.
    pub approved: String,
    /// Whether it is a number (a bound is offered).
    pub numeric: bool,
}

/// What the "approve and allow similar" form posts, as typed.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct GrantForm {
    /// Seconds.
    pub duration: String,
    /// At most this many uses; empty for no limit.
    pub max_uses: String,
    /// Fields whose values may differ (hex-encoded JSON pointers).
    pub free: Vec<String>,
    /// `(field, bound)` for each numeric field; an empty bound leaves it exact.
    pub bounds: Vec<(String, String)>,
}

/// One standing grant on the grants page.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GrantView {
    /// Id.
    pub id: String,
    /// The agent it covers.
    pub agent: String,
    /// Tool and version.
    pub tool: String,
    /// Domain.
    pub domain: String,
    /// The proposal whose approval made it.
    pub proposal_id: String,
    /// Who made it.
    pub granted_by: String,
    /// The approved parameters, pretty JSON, visible form.
    pub parameters: String,
    /// What may differ, in words.
    pub scope: String,
    /// Uses so far.
    pub uses: u32,
    /// Its limit.
    pub max_uses: Option<u32>,
    /// `live`, `used_up`, `expired`, `revoked`.
    pub state: String,
    /// When it was made.
    pub created_at: Moment,
    /// When it ends (or ended by time).
    pub expires_at: Moment,
    /// Who revoked it.
    pub ended_by: Option<String>,
    /// Hidden characters in the parameters shown.
    pub hidden: usize,
}

/// The grants page.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GrantsView {
    /// Live grants, newest first.
    pub live: Vec<GrantView>,
    /// Ended grants, newest first.
    pub ended: Vec<GrantView>,
    /// Whether the viewer may revoke.
    pub can_revoke: bool,
}
