//! Each kind of audit event and its payload.

use serde::Serialize;
use serde_json::Value;
use uuid::Uuid;

use super::{EventRow, details, status};
use crate::domain::command::{CommandStatus, Outcome};
use crate::domain::contract::vocab::Route;
use crate::domain::contract::vocab::{AuthorizationState, RiskLevel};
use crate::domain::lifecycle::{ProposalStatus, ReviewVerdict};
use crate::domain::principal::{Role, TokenKind};

/// Everything the audit trail records.
#[derive(Debug, Clone, PartialEq)]
pub enum AuditEvent {
    /// An agent's proposal was received and routed (`proposal.submitted`).
    ProposalSubmitted(ProposalSubmitted),
    /// A submission broke the contract; only the broken field paths are kept
    /// (`proposal.rejected_input`).
    ProposalInputRejected(ProposalInputRejected),
    /// One approval of several required (`proposal.approval_recorded`).
    ApprovalRecorded(ApprovalRecorded),
    /// A reviewer's final decision (`proposal.approved` / `proposal.rejected`).
    ProposalDecided(ProposalDecided),
    /// Nobody decided in time (`proposal.expired`).
    ProposalExpired(ProposalExpired),
    /// An approved or accepted proposal's command entered the queue (`command.queued`).
    CommandQueued(CommandQueued),
    /// An executor leased a command (`command.leased`).
    CommandLeased(CommandLeased),
    /// An executor reported on its command (`command.succeeded` / `command.failed`).
    CommandReported(CommandReported),
    /// The proposal took its command's outcome (`proposal.succeeded` / `proposal.failed`).
    ProposalFinished(ProposalFinished),
    /// A pre-tool-check was answered (`pre_tool_check.decided`).
    PreToolCheckDecided(PreToolCheckDecided),
    /// A pre-tool-check event broke the contract (`pre_tool_check.rejected`).
    PreToolCheckRejected(PreToolCheckRejected),
    /// An account was created (`user.created`).
    UserCreated(UserCreated),
    /// An API token was created (`token.created`).
    TokenCreated(TokenCreated),
}

/// Payload of [`AuditEvent::ProposalSubmitted`].
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ProposalSubmitted {
    /// The proposal.
    #[serde(skip)]
    pub proposal_id: Uuid,
    /// The status it starts in.
    #[serde(skip)]
    pub status: ProposalStatus,
    /// Tool name.
    pub tool: String,
    /// Domain.
    pub domain: String,
    /// Declared risk.
    pub risk_level: RiskLevel,
    /// Route given.
    pub route: Route,
    /// The rule that decided the route.
    pub rule: String,
    /// Policy version used.
    pub policy_version: String,
    /// Hash the approval is bound to.
    pub request_hash_sha256: String,
    /// Parameter names (audit-safe), never values.
    pub parameter_keys: Vec<String>,
}

/// Payload of [`AuditEvent::ProposalInputRejected`].
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ProposalInputRejected {
    /// The agent that sent it: rejected input is recorded against its sender, never against
    /// whatever proposal id the body names.
    #[serde(skip)]
    pub agent: String,
    /// Broken field paths (audit-safe), never the rejected values.
    pub fields: Vec<String>,
}

/// Payload of [`AuditEvent::ApprovalRecorded`].
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ApprovalRecorded {
    /// The proposal.
    #[serde(skip)]
    pub proposal_id: Uuid,
    /// Approvals so far.
    pub approvals: i64,
    /// Approvals needed.
    pub required_approvals: u8,
    /// The reviewer's reason.
    pub reason: Option<String>,
    /// Hash the approval is bound to.
    pub request_hash_sha256: String,
}

/// Payload of [`AuditEvent::ProposalDecided`].
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ProposalDecided {
    /// The proposal.
    #[serde(skip)]
    pub proposal_id: Uuid,
    /// Approved or rejected.
    #[serde(skip)]
    pub verdict: ReviewVerdict,
    /// Authorization after the decision (`confirmed` on approval).
    pub authorization_state: AuthorizationState,
    /// The reviewer's reason.
    pub reason: Option<String>,
    /// Approvals the policy required.
    pub required_approvals: u8,
    /// Hash the decision is bound to.
    pub request_hash_sha256: String,
}

/// Payload of [`AuditEvent::ProposalExpired`].
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ProposalExpired {
    /// The proposal.
    #[serde(skip)]
    pub proposal_id: Uuid,
    /// When its time ran out (RFC 3339).
    pub expires_at: Option<String>,
}

/// Payload of [`AuditEvent::CommandQueued`].
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CommandQueued {
    /// The command.
    #[serde(skip)]
    pub command_id: Uuid,
    /// Its proposal.
    pub proposal_id: Uuid,
    /// Tool name.
    pub tool: String,
    /// Hash of the approved request.
    pub request_hash_sha256: String,
}

/// Payload of [`AuditEvent::CommandLeased`].
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CommandLeased {
    /// The command.
    #[serde(skip)]
    pub command_id: Uuid,
    /// Status before the lease (`queued`, or `leased` for a lapsed lease taken over).
    #[serde(skip)]
    pub before: CommandStatus,
    /// Its proposal.
    pub proposal_id: Uuid,
    /// Which lease this is (1 for the first).
    pub attempt: i32,
    /// Lease end (RFC 3339).
    pub lease_expires_at: Option<String>,
}

/// Payload of [`AuditEvent::CommandReported`].
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CommandReported {
    /// The command.
    #[serde(skip)]
    pub command_id: Uuid,
    /// Success or failure.
    #[serde(skip)]
    pub outcome: Outcome,
    /// Its proposal.
    pub proposal_id: Uuid,
    /// Which lease reported.
    pub attempt: i32,
    /// Reported after the lease ran out (but before anyone else took it).
    pub late: bool,
}

/// Payload of [`AuditEvent::ProposalFinished`].
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ProposalFinished {
    /// The proposal.
    #[serde(skip)]
    pub proposal_id: Uuid,
    /// Status before (`approved` or `accepted`).
    #[serde(skip)]
    pub before: ProposalStatus,
    /// The command's outcome.
    #[serde(skip)]
    pub outcome: Outcome,
    /// The command that ran.
    pub command_id: Uuid,
}

/// Payload of [`AuditEvent::PreToolCheckDecided`].
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PreToolCheckDecided {
    /// The check's id, as answered.
    #[serde(skip)]
    pub check_id: String,
    /// Route.
    pub route: Route,
    /// AANA gate decision.
    pub gate_decision: Value,
    /// The deciding rule.
    pub rule: String,
    /// Policy version used.
    pub policy_version: String,
    /// Blocker codes.
    pub hard_blockers: Vec<String>,
    /// The audit-safe form of the event (argument keys, never values).
    pub event: Value,
}

/// Payload of [`AuditEvent::PreToolCheckRejected`].
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PreToolCheckRejected {
    /// The check's id.
    #[serde(skip)]
    pub check_id: String,
    /// Route (`refuse`).
    pub route: Route,
    /// Policy version used.
    pub policy_version: String,
    /// Broken field paths (audit-safe), never the rejected values.
    pub fields: Vec<String>,
}

/// Payload of [`AuditEvent::UserCreated`].
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct UserCreated {
    /// The account.
    #[serde(skip)]
    pub user_id: Uuid,
    /// Username.
    pub username: String,
    /// Role.
    pub role: Role,
}

/// Payload of [`AuditEvent::TokenCreated`]. The secret never enters the trail.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TokenCreated {
    /// The token's id.
    #[serde(skip)]
    pub token_id: Uuid,
    /// Agent or executor.
    pub kind: TokenKind,
    /// Principal name.
    pub name: String,
}

const ACTIVE: &str = "active";

impl AuditEvent {
    /// The event as a row: its kind, subject, status change and details. The one place an
    /// event's shape in the trail is decided.
    pub fn into_row(self) -> EventRow {
        use AuditEvent as E;
        let row = |kind, subject_type, subject_id: String, before, after, details| EventRow {
            kind,
            subject_type,
            subject_id,
            before_status: before,
            after_status: after,
            details,
        };
        match self {
            E::ProposalSubmitted(p) => row(
                "proposal.submitted",
                "proposal",
                p.proposal_id.to_string(),
                None,
                status(p.status),
                details(&p),
            ),
            E::ProposalInputRejected(p) => row(
                "proposal.rejected_input",
                "agent",
                p.agent.clone(),
                None,
                None,
                details(&p),
            ),
            E::ApprovalRecorded(p) => row(
                "proposal.approval_recorded",
                "proposal",
                p.proposal_id.to_string(),
                status(ProposalStatus::Pending),
                status(ProposalStatus::Pending),
                details(&p),
            ),
            E::ProposalDecided(p) => row(
                match p.verdict {
                    ReviewVerdict::Approved => "proposal.approved",
                    ReviewVerdict::Rejected => "proposal.rejected",
                },
                "proposal",
                p.proposal_id.to_string(),
                status(ProposalStatus::Pending),
                status(p.verdict.status()),
                details(&p),
            ),
            E::ProposalExpired(p) => row(
                "proposal.expired",
                "proposal",
                p.proposal_id.to_string(),
                status(ProposalStatus::Pending),
                status(ProposalStatus::Expired),
                details(&p),
            ),
            other => other.command_or_account_row(),
        }
    }

    fn command_or_account_row(self) -> EventRow {
        use AuditEvent as E;
        let (kind, subject_type, subject_id, before, after, details) = match self {
            E::CommandQueued(p) => (
                "command.queued",
                "command",
                p.command_id.to_string(),
                None,
                status(CommandStatus::Queued),
                details(&p),
            ),
            E::CommandLeased(p) => (
                "command.leased",
                "command",
                p.command_id.to_string(),
                status(p.before),
                status(CommandStatus::Leased),
                details(&p),
            ),
            E::CommandReported(p) => (
                match p.outcome {
                    Outcome::Succeeded => "command.succeeded",
                    Outcome::Failed => "command.failed",
                },
                "command",
                p.command_id.to_string(),
                status(CommandStatus::Leased),
                status(p.outcome.command_status()),
                details(&p),
            ),
            E::ProposalFinished(p) => (
                match p.outcome {
                    Outcome::Succeeded => "proposal.succeeded",
                    Outcome::Failed => "proposal.failed",
                },
                "proposal",
                p.proposal_id.to_string(),
                status(p.before),
                status(p.outcome.proposal_status()),
                details(&p),
            ),
            other => return other.check_or_account_row(),
        };
        EventRow {
            kind,
            subject_type,
            subject_id,
            before_status: before,
            after_status: after,
            details,
        }
    }
}

impl AuditEvent {
    fn check_or_account_row(self) -> EventRow {
        use AuditEvent as E;
        let (kind, subject_type, subject_id, before, after, details) = match self {
            E::PreToolCheckDecided(p) => (
                "pre_tool_check.decided",
                "pre_tool_check",
                p.check_id.clone(),
                None,
                None,
                details(&p),
            ),
            E::PreToolCheckRejected(p) => (
                "pre_tool_check.rejected",
                "pre_tool_check",
                p.check_id.clone(),
                None,
                None,
                details(&p),
            ),
            E::UserCreated(p) => (
                "user.created",
                "user",
                p.user_id.to_string(),
                None,
                status(ACTIVE),
                details(&p),
            ),
            E::TokenCreated(p) => (
                "token.created",
                "token",
                p.token_id.to_string(),
                None,
                status(ACTIVE),
                details(&p),
            ),
            other => return other.into_row(),
        };
        EventRow {
            kind,
            subject_type,
            subject_id,
            before_status: before,
            after_status: after,
            details,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subject_fields_stay_out_of_the_details() {
        let id = Uuid::now_v7();
        let row = AuditEvent::ProposalExpired(ProposalExpired {
            proposal_id: id,
            expires_at: Some("2026-11-23T10:00:00Z".into()),
        })
        .into_row();
        assert_eq!(row.kind, "proposal.expired");
        assert_eq!(row.subject_id, id.to_string());
        assert_eq!(
            (row.before_status.as_deref(), row.after_status.as_deref()),
            (Some("pending"), Some("expired"))
        );
        assert_eq!(
            row.details,
            serde_json::json!({"expires_at": "2026-11-23T10:00:00Z"})
        );
    }

    #[test]
    fn reports_name_their_outcome() {
        let row = AuditEvent::CommandReported(CommandReported {
            command_id: Uuid::now_v7(),
            outcome: Outcome::Failed,
            proposal_id: Uuid::now_v7(),
            attempt: 2,
            late: true,
        })
        .into_row();
        assert_eq!(row.kind, "command.failed");
        assert_eq!(row.after_status.as_deref(), Some("failed"));
        assert_eq!(row.details["late"], serde_json::json!(true));
    }
}
