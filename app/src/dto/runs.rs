//! What the runs page shows: commands whose outcome a person must settle, rollback tasks
//! waiting for a reviewer, and the paused tools.

use serde::{Deserialize, Serialize};

use crate::time::Moment;

/// One command on the runs page.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunItem {
    /// Command id.
    pub id: String,
    /// Its proposal.
    pub proposal_id: String,
    /// `action` or `rollback`.
    pub kind: String,
    /// Its proposal's intent summary (`None`: not found).
    pub summary: Option<String>,
    /// Tool name and version.
    pub tool: String,
    /// The parameters it runs with, by name (`key=…`: the values are on the proposal page).
    pub parameters: String,
    /// Domain.
    pub domain: String,
    /// Status (`outcome_unknown`, `timed_out`, `awaiting_approval`).
    pub status: String,
    /// Leases taken.
    pub attempts: i32,
    /// How the last attempt ended: `failed`, `lease_lapsed`, `timed_out`.
    pub interruption: Option<String>,
    /// What the executor said of its side effect.
    pub side_effect: Option<String>,
    /// The executor that last held it.
    pub leased_by: Option<String>,
    /// The executor's error report, pretty JSON.
    pub error: Option<String>,
    /// The rollback plan's type (`compensate`, `restore`, `revert`).
    pub rollback_type: Option<String>,
    /// The rollback plan's instructions, pretty JSON.
    pub rollback_instructions: Option<String>,
    /// The command a rollback undoes.
    pub rollback_of: Option<String>,
    /// How long ago it changed, e.g. `4 min`.
    pub age: String,
    /// Hidden characters in the agent's and the executor's text the card shows or names (each
    /// shown escaped as `⟦U+…⟧`, as every such string of this card is).
    pub hidden: usize,
}

/// A paused tool.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PausedView {
    /// Name or glob.
    pub pattern: String,
    /// Who paused it.
    pub paused_by: String,
    /// When.
    pub paused_at: Moment,
}

/// The runs page.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunsView {
    /// Commands a person must settle.
    pub unknown: Vec<RunItem>,
    /// Rollback tasks.
    pub rollbacks: Vec<RunItem>,
    /// Paused tools.
    pub paused: Vec<PausedView>,
    /// Whether the viewer may settle and approve (reviewers, admins).
    pub can_act: bool,
    /// Whether the viewer may pause tools (admins).
    pub can_pause: bool,
}
