//! A policy change as a gated action: the requests to activate a version and how they end
//! ([`ChangeStatus`], [`Activation`]), what a candidate would have decided differently
//! ([`backtest`]: recorded decisions replayed under it, and the same comparison a shadow run
//! makes of each new decision), the diff between two versions' texts ([`diff`]), and what a
//! policy decides of one input ([`explain`]: `policy explain` and the page's playground).
//!
//! Imports `contract`, `policy` and `routing` (it routes again under another policy); nothing
//! in the wings imports it.

pub mod backtest;
pub mod diff;
pub mod explain;

use crate::domain::contract::wire::wire_enum;

wire_enum! {
    /// Where a request to activate a version stands.
    pub enum ChangeStatus {
        /// Waiting for a second admin.
        Pending => "pending",
        /// A second admin approved it; the version became active.
        Approved => "approved",
        /// A second admin refused it.
        Refused => "refused",
        /// Its proposer withdrew it, or another version became active first.
        Withdrawn => "withdrawn",
    }
}

wire_enum! {
    /// How a version became active.
    pub enum Activation {
        /// A new database: the built-in policy.
        Builtin => "builtin",
        /// `serve --policy FILE` started with a file whose version was not active.
        File => "file",
        /// One admin proposed it, another approved it.
        Approved => "approved",
        /// An operator at the shell (`countersign policy activate`), alone.
        BreakGlass => "break_glass",
    }
}

/// Most characters of a policy's TOML text (a policy is read in one sitting; 256 KiB is far
/// past any real one).
pub const MAX_TEXT: usize = 256 * 1024;

/// Most characters of a reason given for a change.
pub const MAX_REASON: usize = 1000;

/// A version of the policy as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VersionRecord {
    /// `sha256:` of its canonical form.
    pub version: String,
    /// Its TOML text (empty for the built-in policy).
    pub text: String,
    /// `builtin`, `file` or `proposed`.
    pub source: String,
    /// Who loaded it (a username, or `operator` at the shell).
    pub loaded_by: String,
    /// When.
    pub loaded_at: time::OffsetDateTime,
}

/// One activation, as the history lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ActivationRecord {
    /// Its position in the history.
    pub seq: i64,
    /// The version activated.
    pub version: String,
    /// The version it replaced.
    pub previous: Option<String>,
    /// When.
    pub activated_at: time::OffsetDateTime,
    /// How.
    pub how: Activation,
    /// Who proposed it (or loaded the file, or ran the shell command).
    pub proposed_by: String,
    /// The second admin, for an approved change.
    pub approved_by: Option<String>,
    /// The reason given.
    pub reason: Option<String>,
    /// The change it carried out.
    pub change_id: Option<uuid::Uuid>,
}

/// A request to activate a version.
#[derive(Debug, Clone, PartialEq)]
pub struct ChangeRecord {
    /// Its id.
    pub id: uuid::Uuid,
    /// The version to activate.
    pub version: String,
    /// The version active when it was proposed.
    pub base: String,
    /// Who proposed it.
    pub proposed_by: String,
    /// When.
    pub proposed_at: time::OffsetDateTime,
    /// Why.
    pub reason: String,
    /// Where it stands.
    pub status: ChangeStatus,
    /// Who approved, refused or withdrew it.
    pub decided_by: Option<String>,
    /// When.
    pub decided_at: Option<time::OffsetDateTime>,
    /// The second admin's reason.
    pub decision_reason: Option<String>,
    /// The backtest it was proposed with.
    pub backtest: Option<backtest::Report>,
    /// Whether that backtest found a decision that would now be `accept` and was not.
    pub loosening: bool,
    /// The end of its shadow run, when it has one.
    pub shadow_until: Option<time::OffsetDateTime>,
    /// Decisions its shadow run routed.
    pub shadowed: i64,
}
