//! What the proposal page shows: the proposal, the command the executor will receive (every
//! field of it), the agent's record with the tool, the decision and the trail.
//!
//! Safe to send to the browser by construction: agent-written text arrives already made
//! visible (invisible and direction-changing characters escaped as `⟦U+202E⟧` by the server's
//! `domain::review::text`), secrets never arrive, and personal data of GDPR and HIPAA proposals
//! arrives only after the reviewer's audited reveal (`domain::review::disclosure`).

use serde::{Deserialize, Serialize};

use crate::time::Moment;

/// A reviewer's decision as shown.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReviewView {
    /// `approved` or `rejected`.
    pub verdict: String,
    /// Reviewer.
    pub decided_by: String,
    /// When.
    pub decided_at: Moment,
    /// Reason given (visible form).
    pub reason: Option<String>,
    /// The parameters the reviewer changed before approving, if they edited.
    pub edited: Vec<EditView>,
}

/// One parameter a reviewer changed before approving, as the page shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EditView {
    /// JSON pointer (visible form).
    pub field: String,
    /// What the agent sent (visible form; withheld or secret values say so).
    pub old: String,
    /// What the reviewer approved (likewise).
    pub new: String,
}

/// One parameter offered for editing before approval.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EditFieldView {
    /// Its JSON pointer, hex-encoded, as the form posts it.
    pub pointer: String,
    /// Its name (visible form).
    pub name: String,
    /// Its value as JSON text, hidden characters written as `\u` escapes.
    pub json: String,
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
    /// When.
    pub at: Moment,
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

/// One approval of several.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApprovalView {
    /// Reviewer.
    pub by: String,
    /// When.
    pub at: Moment,
}

/// One value of the command as the page may show it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum FieldValue {
    /// An object (or an array) whose members follow it.
    Group {
        /// How many members.
        members: usize,
        /// Whether it is an array.
        array: bool,
    },
    /// A string, in visible form.
    Text(String),
    /// A number, `true`, `false` or `null`, as JSON.
    Literal(String),
    /// A time.
    Time(Moment),
    /// A secret: never sent to the browser, never revealable.
    Secret {
        /// Its length in characters.
        chars: usize,
    },
    /// Personal data of a GDPR or HIPAA proposal, withheld until revealed.
    Withheld {
        /// Its length in characters (as JSON, for a number).
        chars: usize,
    },
    /// Personal data this reviewer revealed (visible form).
    Revealed(String),
    /// Set by the approval itself (`approved_by`, `approved_at` before anyone approved).
    OnApproval,
}

/// One field of the command: a row of the page's table.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FieldRow {
    /// Its JSON pointer in the command (RFC 6901), e.g. `/execution/retry_policy/max_retries`,
    /// in visible form: the row's `data-field`, so tests compare page and command field by
    /// field.
    pub pointer: String,
    /// 0 for a top-level field, 1 for its members, and so on.
    pub depth: usize,
    /// Its key (visible form), or its index in an array.
    pub key: String,
    /// Whether `key` is an array index.
    pub index: bool,
    /// What is shown.
    pub value: FieldValue,
    /// Invisible or direction-changing characters in its key and value.
    pub hidden: usize,
}

/// The command an executor receives, every field of it.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct CommandSheet {
    /// `true`: the command in the executor queue; `false`: what approving would queue now.
    pub queued: bool,
    /// Every field in reading order, each followed by its members.
    pub rows: Vec<FieldRow>,
    /// Values withheld as secrets.
    pub secrets: usize,
    /// Personal-data values withheld until revealed.
    pub withheld: usize,
    /// Personal-data values shown after this reviewer's reveal.
    pub revealed: usize,
}

/// One of the agent's earlier proposals for the same tool.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HistoryItem {
    /// Its id (for the link).
    pub id: String,
    /// Its summary (visible form).
    pub summary: String,
    /// Hidden characters in its summary.
    pub hidden: usize,
    /// Its status.
    pub status: String,
    /// When it arrived.
    pub at: Moment,
}

/// The agent's record with this tool.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct HistoryView {
    /// Earlier proposals counted.
    pub total: u64,
    /// Whether only the most recent ones were counted (there may be more).
    pub capped: bool,
    /// Approved by a reviewer or accepted by the policy.
    pub approved: u64,
    /// Rejected.
    pub rejected: u64,
    /// Refused by the policy.
    pub refused: u64,
    /// Expired.
    pub expired: u64,
    /// Still pending.
    pub pending: u64,
    /// Runs that succeeded.
    pub succeeded: u64,
    /// Runs that failed or timed out.
    pub failed: u64,
    /// Runs whose outcome nobody knows.
    pub unknown: u64,
    /// Approved ones not finished yet.
    pub running: u64,
    /// The most recent few, newest first.
    pub recent: Vec<HistoryItem>,
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
    /// Intent summary (visible form).
    pub summary: String,
    /// Reasoning (visible form).
    pub reasoning: String,
    /// Tool name.
    pub tool: String,
    /// Tool version (visible form).
    pub tool_version: String,
    /// Proposing agent.
    pub proposed_by: String,
    /// Domain.
    pub domain: String,
    /// Arrival.
    pub created_at: Moment,
    /// When it expires if undecided (open proposals only).
    pub expires_at: Option<Moment>,
    /// Declared risk level.
    pub risk_level: String,
    /// Blast radius.
    pub blast_radius: Option<String>,
    /// Rollback support, in words.
    pub rollback: String,
    /// Target refs, `type:id` (visible form).
    pub targets: Vec<String>,
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
    /// Routing reasons not already said by a blocker.
    pub reasons: Vec<String>,
    /// Request hash.
    pub request_hash: String,
    /// Idempotency key (visible form).
    pub idempotency_key: String,
    /// Decision.
    pub review: Option<ReviewView>,
    /// Execution.
    pub execution: Option<ExecutionView>,
    /// Audit trail: the most recent events of the proposal and its command, newest first.
    pub audit: Vec<AuditView>,
    /// `trail_before` of the page of older events, if there may be one.
    pub audit_older: Option<i64>,
    /// Set when this is not the newest page of the trail.
    pub audit_newer: Option<i64>,
    /// Why this viewer cannot approve (again) although the proposal is open: they already
    /// approved and it waits for other approvers. Rejecting still is possible.
    pub approve_blocked: Option<String>,
    /// Approvals so far.
    pub approvals: Vec<ApprovalView>,
    /// Whether the viewer may decide it now.
    pub can_decide: bool,
    /// Why the viewer may not decide it, when the proposal is still pending.
    pub cannot_decide_because: Option<String>,
    /// Who erased its personal data, when and why, once erased.
    pub erased: Option<ErasedView>,
    /// Whether the viewer (an admin) is offered the erase button.
    pub can_erase: bool,
    /// Every field of the command the executor receives (or would, on approval).
    pub command: CommandSheet,
    /// The agent's earlier proposals for this tool.
    pub history: HistoryView,
    /// The name to type before approving (high risk, or a medium, large or unstated blast
    /// radius), in visible form.
    pub confirm_name: Option<String>,
    /// Invisible or direction-changing characters anywhere on the page's agent-written text.
    pub hidden_chars: usize,
    /// The proposal this one revises, the ones that revise it, and what changed.
    pub revision: RevisionView,
    /// Escalations raised because nobody decided in time, oldest first.
    pub escalations: Vec<EscalationView>,
    /// For a call through the MCP gateway: the tool's definition the model read.
    pub tool_definition: Option<ToolDefinitionView>,
    /// What the viewer is offered beside Approve.
    pub offers: DecisionOffers,
    /// The break-glass that approved it, if one did.
    pub broke_glass: Option<BrokeGlassView>,
    /// The approvals proved by a passkey, in order.
    pub passkey_proofs: Vec<super::account::PasskeyProofView>,
}

/// What the viewer is offered beside Approve: a standing grant and break-glass.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct DecisionOffers {
    /// "Approve and allow similar", when the viewer may approve it now.
    pub grant: Option<super::grant::GrantOfferView>,
    /// Whether the viewer (an admin) is offered break-glass: approving alone what needs more
    /// approvers.
    pub break_glass: bool,
    /// The name to type for break-glass, when the action needs it.
    pub glass_confirm: Option<String>,
    /// "Edit, then approve": the parameters the viewer may change, when offered.
    pub edit: Option<Vec<EditFieldView>>,
    /// Approving needs the viewer's passkey (the policy's step-up): `Some(true)` when they
    /// have one to answer with, `Some(false)` when they must add one first.
    pub step_up: Option<bool>,
}

/// A break-glass approval, as the page marks it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BrokeGlassView {
    /// The admin.
    pub by: String,
    /// When.
    pub at: Moment,
}

/// A gateway tool's definition, as the reviewer reads it: the one the call was made against
/// (else the pinned one).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolDefinitionView {
    /// The tool's description in that definition (visible form).
    pub description: String,
    /// Its annotations in that definition, `(name, value)` (visible form).
    pub annotations: Vec<(String, String)>,
    /// `sha256:` of the pinned definition.
    pub pinned: String,
    /// Whether the call was made against the pinned definition.
    pub called_against_pinned: bool,
    /// `sha256:` of a different definition the upstream now serves, withheld.
    pub changed_to: Option<String>,
}

/// One escalation tier raised (policy `escalate_after` / `escalate_to`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EscalationView {
    /// The tier (1 for the first).
    pub tier: i32,
    /// Whom: a username or a role.
    pub to: String,
    /// When.
    pub at: Moment,
}

/// A proposal's place in a chain of revisions (after a reviewer asked for changes).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RevisionView {
    /// The proposal this one revises.
    pub supersedes: Option<String>,
    /// The proposals that revise this one, oldest first.
    pub revised_by: Vec<String>,
    /// Parameters changed since the proposal it revises: `(path, before, after)`, `—` for
    /// absent, `••••` for personal data not revealed.
    pub changes: Vec<(String, String, String)>,
}

/// A proposal's erasure, as shown.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErasedView {
    /// Who erased it.
    pub by: String,
    /// When.
    pub at: Moment,
    /// Why.
    pub reason: String,
}
