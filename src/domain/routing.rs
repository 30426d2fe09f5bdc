//! Routing: what happens to a proposal when it arrives. The route ladder is seed 000's
//! `accept < ask < defer < refuse`. Until a policy allow-lists a tool, every tool is Category C
//! (seed 004: "default category for all new tools"): it waits for a human and never runs on
//! its own, whatever the agent's `approval_required` says.

use serde::{Deserialize, Serialize};

use super::proposal::ToolProposal;
use super::text::str_enum;

/// The version string of the built-in default policy.
pub const DEFAULT_POLICY_VERSION: &str = "builtin:category-c-default/1";

str_enum! {
    /// Seed 000 routes, least strict first.
    pub enum Route { Accept => "accept", Ask => "ask", Defer => "defer", Refuse => "refuse" }
}

str_enum! {
    /// Seed 004 tool action categories.
    pub enum Category { A => "a", B => "b", C => "c" }
}

/// A machine-readable reason the proposal cannot run now, that an agent can act on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Blocker {
    /// Stable code, e.g. `human_approval_required`.
    pub code: String,
    /// What it means and what resolves it.
    pub message: String,
}

/// The routing of one proposal, stored with it and shown to the agent and the reviewer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Routing {
    /// Where the proposal goes.
    pub route: Route,
    /// Its seed 004 category.
    pub category: Category,
    /// Why it cannot run now (empty only for `accept`).
    pub blockers: Vec<Blocker>,
    /// Human-readable reasoning, in order.
    pub reasons: Vec<String>,
    /// The rule that produced the route.
    pub rule: String,
    /// The policy version that was applied.
    pub policy_version: String,
}

/// Routes a proposal under the built-in default: Category C, human approval.
pub fn route_by_default(proposal: &ToolProposal) -> Routing {
    let mut reasons = vec![format!(
        "tool `{}` is not allow-listed, so it is Category C: a human must approve it",
        proposal.tool.name
    )];
    if !proposal.approval_required {
        reasons
            .push("`approval_required: false` is only honoured for allow-listed tools".to_owned());
    }
    Routing {
        route: Route::Ask,
        category: Category::C,
        blockers: vec![Blocker {
            code: "human_approval_required".into(),
            message:
                "waiting for a reviewer to approve or reject; poll the proposal for the decision"
                    .into(),
        }],
        reasons,
        rule: "default: unlisted tools are Category C".into(),
        policy_version: DEFAULT_POLICY_VERSION.into(),
    }
}
