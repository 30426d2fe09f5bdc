//! Data that crosses between server and browser: what pages show, never secrets.

use serde::{Deserialize, Serialize};

/// The signed-in person.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Viewer {
    /// Username.
    pub username: String,
    /// Role: `admin`, `reviewer` or `compliance`.
    pub role: String,
    /// Whether the role may approve or reject.
    pub can_decide: bool,
}

/// What every page needs about the session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionView {
    /// The signed-in person, if any.
    pub viewer: Option<Viewer>,
    /// This session's CSRF token, embedded in every form.
    pub csrf_token: String,
}

/// One row of the review queue.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct QueueItem {
    /// Proposal id.
    pub id: String,
    /// Intent summary.
    pub summary: String,
    /// Tool name and version.
    pub tool: String,
    /// Target refs, `type:id`.
    pub targets: Vec<String>,
    /// Short preview of the affected data (parameters).
    pub affected: String,
    /// Whether and how it can be rolled back.
    pub rollback: String,
    /// Risk level.
    pub risk: String,
    /// How long it has waited, e.g. `4 min`.
    pub age: String,
    /// Proposing agent.
    pub proposed_by: String,
    /// Route and why it needs a human.
    pub route: String,
}

/// A reviewer's decision as shown.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReviewView {
    /// `approved` or `rejected`.
    pub verdict: String,
    /// Reviewer.
    pub decided_by: String,
    /// When (RFC 3339).
    pub decided_at: String,
    /// Reason given.
    pub reason: Option<String>,
}

/// The executor side of an approved proposal.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExecutionView {
    /// Command id.
    pub command_id: String,
    /// `queued`, `leased`, `succeeded` or `failed`.
    pub status: String,
    /// Times leased.
    pub attempts: i32,
    /// Executor holding or last holding it.
    pub leased_by: Option<String>,
}

/// One audit row as shown.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuditView {
    /// When (RFC 3339).
    pub at: String,
    /// `kind:name` of the actor.
    pub actor: String,
    /// Action.
    pub action: String,
    /// `before → after`.
    pub change: String,
}

/// A machine-readable blocker as shown.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BlockerView {
    /// Code.
    pub code: String,
    /// Meaning.
    pub message: String,
}

/// Everything about one proposal.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProposalView {
    /// Id.
    pub id: String,
    /// Status.
    pub status: String,
    /// Effective authorization state.
    pub authorization_state: String,
    /// Declared by the agent.
    pub declared_authorization: Option<String>,
    /// Intent summary.
    pub summary: String,
    /// Reasoning.
    pub reasoning: String,
    /// Tool name.
    pub tool: String,
    /// Tool version.
    pub tool_version: String,
    /// Proposing agent.
    pub proposed_by: String,
    /// Domain.
    pub domain: String,
    /// Arrival (RFC 3339).
    pub created_at: String,
    /// Age.
    pub age: String,
    /// When it expires if undecided (RFC 3339).
    pub expires_at: Option<String>,
    /// Risk level.
    pub risk_level: String,
    /// Blast radius.
    pub blast_radius: Option<String>,
    /// Rollback support, in words.
    pub rollback: String,
    /// Rollback plan (pretty JSON).
    pub rollback_plan: Option<String>,
    /// Target refs.
    pub targets: Vec<String>,
    /// Parameters (pretty JSON).
    pub parameters: String,
    /// Regulatory regimes that apply.
    pub compliance: Vec<String>,
    /// Tool category, risk domain, evidence count.
    pub classification: Vec<(String, String)>,
    /// Route.
    pub route: String,
    /// Risk after the policy's raises.
    pub effective_risk: String,
    /// Approvals the policy asks for.
    pub required_approvals: u8,
    /// The tool's seed 004 category under the policy.
    pub category: String,
    /// Rule that produced it.
    pub rule: String,
    /// Policy version.
    pub policy_version: String,
    /// Blockers.
    pub blockers: Vec<BlockerView>,
    /// Routing reasons.
    pub reasons: Vec<String>,
    /// Request hash.
    pub request_hash: String,
    /// Idempotency key.
    pub idempotency_key: String,
    /// Decision.
    pub review: Option<ReviewView>,
    /// Execution.
    pub execution: Option<ExecutionView>,
    /// Audit trail.
    pub audit: Vec<AuditView>,
    /// Why this viewer cannot approve (again) although the proposal is open: they already
    /// approved and it waits for other approvers. Rejecting still is possible.
    pub approve_blocked: Option<String>,
    /// Approvals so far, `reviewer at time`.
    pub approvals: Vec<String>,
    /// Whether the viewer may decide it now.
    pub can_decide: bool,
    /// Why the viewer may not decide it, when the proposal is still pending.
    pub cannot_decide_because: Option<String>,
}

/// Errors the server functions return to pages.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
pub enum AppError {
    /// No session.
    #[error("please sign in")]
    Unauthenticated,
    /// Signed in, but the role may not do this.
    #[error("{0}")]
    Forbidden(String),
    /// No such thing.
    #[error("not found")]
    NotFound,
    /// Bad input.
    #[error("{0}")]
    Invalid(String),
    /// Something failed on the server; details are in its log, never here.
    #[error("something went wrong on the server; it has been logged")]
    Internal,
    /// The server function machinery failed.
    #[error("{0}")]
    ServerFn(leptos::server_fn::error::ServerFnErrorErr),
}

impl leptos::server_fn::error::FromServerFnError for AppError {
    type Encoder = leptos::server_fn::codec::JsonEncoding;

    fn from_server_fn_error(value: leptos::server_fn::error::ServerFnErrorErr) -> Self {
        AppError::ServerFn(value)
    }
}
