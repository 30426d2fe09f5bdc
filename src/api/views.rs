//! The JSON shapes the API answers with, built from stored records.

use serde::Serialize;
use serde_json::Value;
use time::OffsetDateTime;
use uuid::Uuid;

use crate::domain::command::{CommandKind, CommandSpec, CommandStatus};
use crate::domain::contract::proposal::{Intent, ToolRef};
use crate::domain::contract::vocab::{AuthorizationState, RiskLevel};
use crate::domain::lifecycle::{ProposalStatus, ReviewVerdict};
use crate::domain::record::CommandRecord;
use crate::domain::record::ProposalRecord;
use crate::domain::review::edit::FieldChange;
use crate::domain::routing::proposal::ProposalDecision;
use crate::domain::routing::verdict::Blocker;

/// `{"proposal": …}`, how the agent API answers with one proposal: serialized as it stands,
/// not built as a `serde_json::Value` first (a tree of maps and strings per answer).
#[derive(Serialize)]
pub struct ProposalEnvelope {
    /// The proposal.
    pub proposal: AgentProposal,
}

impl From<AgentProposal> for ProposalEnvelope {
    fn from(proposal: AgentProposal) -> Self {
        Self { proposal }
    }
}

/// A proposal as its agent sees it.
#[derive(Serialize)]
pub struct AgentProposal {
    /// The agent's proposal id.
    pub id: Uuid,
    /// Current status.
    pub status: ProposalStatus,
    /// Effective authorization; `confirmed` once approved.
    pub authorization_state: AuthorizationState,
    /// What the agent declared.
    pub declared_authorization_state: Option<AuthorizationState>,
    /// Route the policy gave it.
    pub route: crate::domain::contract::vocab::Route,
    /// What stands between it and execution, machine-readable.
    pub blockers: Vec<Blocker>,
    /// The full routing record.
    pub routing: ProposalDecision,
    /// The proposing agent.
    pub proposed_by: String,
    /// Domain.
    pub domain: String,
    /// Tool.
    pub tool: ToolRef,
    /// Intent (the agent's own words, returned to the agent).
    pub intent: Intent,
    /// Declared risk.
    pub risk_level: RiskLevel,
    /// The idempotency key.
    pub idempotency_key: String,
    /// sha256 of the canonical request; an approval is bound to it.
    pub request_hash_sha256: String,
    /// When it arrived.
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    /// Last change.
    #[serde(with = "time::serde::rfc3339")]
    pub updated_at: OffsetDateTime,
    /// When it expires if no one decides it (pending proposals only).
    #[serde(with = "time::serde::rfc3339::option")]
    pub expires_at: Option<OffsetDateTime>,
    /// The reviewer's decision, once taken.
    pub review: Option<AgentReview>,
    /// The executor side, once queued.
    pub execution: Option<AgentExecution>,
}

/// A reviewer's decision.
#[derive(Serialize)]
pub struct AgentReview {
    /// `approved`, `rejected` or `changes_requested` (then `reason` says what must change,
    /// and a revised proposal names this one in `supersedes`).
    pub decision: ReviewVerdict,
    /// Reviewer.
    pub decided_by: String,
    /// When.
    #[serde(with = "time::serde::rfc3339")]
    pub decided_at: OffsetDateTime,
    /// Reason given.
    pub reason: Option<String>,
    /// The parameters the reviewer changed before approving ("edit, then approve"), each
    /// with its JSON pointer, the value sent and the value approved: the command runs with
    /// the approved ones.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub edited: Option<Vec<FieldChange>>,
}

/// The command's progress as the agent sees it.
#[derive(Serialize)]
pub struct AgentExecution {
    /// Command id.
    pub command_id: Uuid,
    /// Command status.
    pub status: CommandStatus,
    /// Lease count.
    pub attempts: i32,
    /// Success report.
    pub result: Option<Value>,
    /// Failure report.
    pub error: Option<Value>,
    /// When it was reported.
    #[serde(with = "time::serde::rfc3339::option")]
    pub completed_at: Option<OffsetDateTime>,
}

impl AgentProposal {
    /// Builds the view of a stored proposal and its command.
    pub fn new(p: ProposalRecord, command: Option<CommandRecord>) -> Self {
        let c = p.contract;
        AgentProposal {
            id: p.id,
            status: p.status,
            authorization_state: p.authorization_state,
            declared_authorization_state: c.authorization_state,
            route: p.routing.route,
            blockers: if matches!(p.status, ProposalStatus::Pending | ProposalStatus::Refused) {
                p.routing.blockers.clone()
            } else {
                Vec::new()
            },
            routing: p.routing,
            proposed_by: p.agent,
            domain: c.domain,
            tool: c.tool,
            intent: c.intent,
            risk_level: c.risk_level,
            idempotency_key: c.idempotency_key,
            request_hash_sha256: p.request_hash,
            created_at: p.created_at,
            updated_at: p.updated_at,
            expires_at: p.expires_at,
            review: p.review.map(|r| AgentReview {
                decision: r.verdict,
                decided_by: r.decided_by,
                decided_at: r.decided_at,
                reason: r.reason,
                edited: r.edited.map(|e| e.changes),
            }),
            execution: command.map(|x| AgentExecution {
                command_id: x.id,
                status: x.status,
                attempts: x.attempts,
                result: x.result,
                error: x.error,
                completed_at: x.completed_at,
            }),
        }
    }
}

/// A command as an executor sees it: never the agent's intent or reasoning.
#[derive(Serialize)]
pub struct CommandView {
    /// Command id.
    pub id: Uuid,
    /// The proposal it executes.
    pub proposal_id: Uuid,
    /// Status.
    pub status: CommandStatus,
    /// `action`, or `rollback` (run the spec's `rollback_plan` to undo `rollback_of`).
    pub kind: CommandKind,
    /// The command a rollback undoes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rollback_of: Option<Uuid>,
    /// What to run.
    #[serde(flatten)]
    pub spec: CommandSpec,
    /// Lease count (this lease's attempt number).
    pub attempts: i32,
    /// When it was queued.
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    /// When it was reported.
    #[serde(with = "time::serde::rfc3339::option")]
    pub completed_at: Option<OffsetDateTime>,
}

impl From<CommandRecord> for CommandView {
    fn from(c: CommandRecord) -> Self {
        CommandView {
            id: c.id,
            proposal_id: c.proposal_id,
            status: c.status,
            kind: c.kind,
            rollback_of: c.rollback_of,
            spec: c.spec,
            attempts: c.attempts,
            created_at: c.created_at,
            completed_at: c.completed_at,
        }
    }
}
