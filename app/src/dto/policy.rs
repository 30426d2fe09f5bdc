//! The policy pages as they show it: the active version, its history and the requests to
//! change it (`/policy`), one request with its diff, backtest and shadow run
//! (`/policy/changes/:id`), and the playground's side-by-side answer.

use serde::{Deserialize, Serialize};

use crate::time::Moment;

/// A stored version of the policy.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PolicyVersionView {
    /// `sha256:…`.
    pub version: String,
    /// Its TOML text; empty for the built-in policy.
    pub text: String,
    /// Whether it is the built-in policy (it has no text).
    pub builtin: bool,
}

/// One activation, as the history lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ActivationView {
    /// Its position in the history.
    pub seq: i64,
    /// The version activated.
    pub version: String,
    /// The version it replaced, if any.
    pub previous: Option<String>,
    /// When.
    pub activated_at: Moment,
    /// `file`, `builtin`, `approved` or `break_glass`.
    pub how: String,
    /// Who proposed it (or loaded the file, or ran the shell command).
    pub proposed_by: String,
    /// The second admin, for an approved change.
    pub approved_by: Option<String>,
    /// The reason given, visible form.
    pub reason: Option<String>,
    /// The request it carried out.
    pub change_id: Option<String>,
    /// Unified diff from the version before it; empty when there is none or it is equal.
    pub diff: Vec<DiffLine>,
    /// Whether it is the built-in policy.
    pub builtin: bool,
}

/// One line of a unified diff.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DiffLine {
    /// `added`, `removed`, `header` or `context`.
    pub kind: String,
    /// The line, with its `+`/`-`/` ` prefix.
    pub text: String,
}

/// A request to activate a version, as lists show it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChangeItem {
    /// Its id.
    pub id: String,
    /// The version to activate.
    pub version: String,
    /// The version active when it was proposed.
    pub base: String,
    /// `pending`, `approved`, `refused` or `withdrawn`.
    pub status: String,
    /// Who proposed it.
    pub proposed_by: String,
    /// When.
    pub proposed_at: Moment,
    /// Why, visible form.
    pub reason: String,
    /// Whether its backtest found a decision that would now be `accept` and was not.
    pub loosening: bool,
}

/// The policy page.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PolicyView {
    /// The version in force.
    pub active: Option<PolicyVersionView>,
    /// How it became active (its newest activation).
    pub activation: Option<ActivationView>,
    /// Requests waiting for a second admin.
    pub pending: Vec<ChangeItem>,
    /// The latest decided requests.
    pub decided: Vec<ChangeItem>,
    /// The activations, newest first.
    pub history: Vec<ActivationView>,
    /// Whether the viewer may propose (admins).
    pub can_propose: bool,
    /// What was wrong with the candidate this viewer just proposed, one error per line (kept
    /// in their session for this page only).
    pub errors: Vec<String>,
}

/// A decision's route, rule and blockers, as a backtest or shadow run compares them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OutcomeView {
    /// The route.
    pub route: String,
    /// The deciding rule.
    pub rule: String,
    /// Blocker codes.
    pub blockers: Vec<String>,
}

/// One recorded decision a candidate routes differently.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExampleView {
    /// `proposal` or `pre_tool_check`.
    pub kind: String,
    /// The proposal's id or the check's audit seq.
    pub subject: String,
    /// The proposal's page, for a proposal.
    pub link: Option<String>,
    /// When it was decided.
    pub at: Moment,
    /// Under the version in force.
    pub was: OutcomeView,
    /// Under the candidate.
    pub now: OutcomeView,
}

/// Every difference from one route to another for one tool and agent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TransitionView {
    /// `proposal` or `pre_tool_check`.
    pub kind: String,
    /// Route under the version in force.
    pub from: String,
    /// Route under the candidate.
    pub to: String,
    /// The tool, visible form.
    pub tool: String,
    /// The agent, visible form.
    pub agent: String,
    /// How many decisions.
    pub count: u64,
    /// The first few.
    pub examples: Vec<ExampleView>,
}

/// One row of the from → to table.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RouteRow {
    /// Route under the version in force.
    pub from: String,
    /// Route under the candidate.
    pub to: String,
    /// How many decisions.
    pub count: u64,
}

/// What a backtest found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BacktestView {
    /// Decisions considered.
    pub considered: u64,
    /// Decisions replayed.
    pub replayed: u64,
    /// Replayed decisions the candidate routes differently.
    pub changed: u64,
    /// Erased proposals (not replayable).
    pub erased: u64,
    /// Checks recorded without their routing inputs (not replayable).
    pub unrecorded: u64,
    /// Differences by route change alone, most frequent first.
    pub by_route: Vec<RouteRow>,
    /// Differences by tool and agent, most frequent first.
    pub transitions: Vec<TransitionView>,
}

/// One difference a shadow run saw.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShadowItem {
    /// When.
    pub at: Moment,
    /// `proposal` or `pre_tool_check`.
    pub kind: String,
    /// The proposal's id or the check's id.
    pub subject: String,
    /// The proposal's page, for a proposal.
    pub link: Option<String>,
    /// The tool, visible form.
    pub tool: String,
    /// The agent, visible form.
    pub agent: String,
    /// Route and rule under the active version.
    pub from_route: String,
    /// Its rule.
    pub from_rule: String,
    /// Route under the candidate.
    pub to_route: String,
    /// Its rule.
    pub to_rule: String,
    /// Blocker codes under the active version (JSON array).
    pub from_blockers: String,
    /// Blocker codes under the candidate (JSON array).
    pub to_blockers: String,
}

/// A request's shadow run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShadowView {
    /// When it ends (or ended).
    pub until: Option<Moment>,
    /// Whether it runs now.
    pub running: bool,
    /// Decisions it routed.
    pub shadowed: i64,
    /// Differences it saw in all.
    pub differences: i64,
    /// Its differences counted by route change, tool and agent, most frequent first: kind,
    /// from route, to route, tool, agent, how many.
    pub transitions: Vec<(String, String, String, String, String, i64)>,
    /// A few examples of each, newest first.
    pub listed: Vec<ShadowItem>,
}

/// One request's page.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PolicyChangeView {
    /// The request.
    pub change: ChangeItem,
    /// Who approved, refused or withdrew it.
    pub decided_by: Option<String>,
    /// When.
    pub decided_at: Option<Moment>,
    /// The second admin's reason, visible form.
    pub decision_reason: Option<String>,
    /// The version active now.
    pub active_version: Option<String>,
    /// Whether the candidate is the built-in policy.
    pub candidate_builtin: bool,
    /// Unified diff from the active version's text to the candidate's.
    pub diff: Vec<DiffLine>,
    /// Its backtest.
    pub backtest: Option<BacktestView>,
    /// Its shadow run.
    pub shadow: ShadowView,
    /// Whether the viewer may approve or refuse it now (an admin who did not propose it).
    pub can_answer: bool,
    /// Whether the viewer proposed it (and may not answer it).
    pub own: bool,
    /// Whether the viewer may start or stop its shadow run.
    pub can_shadow: bool,
}

/// What one version decides of the playground's input.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum ExplainView {
    /// Its decision.
    Decided {
        /// The route.
        route: String,
        /// The deciding rule.
        rule: String,
        /// Blocker codes.
        blockers: Vec<String>,
        /// The version that decided.
        policy_version: String,
    },
    /// The input is neither a proposal nor an event: every broken rule, `(path, message)`.
    Contract(Vec<(String, String)>),
}

/// The playground's answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlaygroundView {
    /// Why nothing was decided (not JSON, too large, no such candidate).
    pub error: Option<String>,
    /// Under the active version.
    pub active: Option<ExplainView>,
    /// Under the candidate, when one was chosen.
    pub candidate: Option<ExplainView>,
}
