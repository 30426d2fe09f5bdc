//! Events in a command's life: queued, leased, reported, interrupted (lapsed or timed out),
//! expired, settled by a person; rollback tasks; drift; the kill switch.

use serde::Serialize;
use uuid::Uuid;

use super::payload::Payload;
use crate::audit::safe::{self, TextDigest};
use crate::domain::command::retry::SideEffect;
use crate::domain::command::{CommandKind, CommandSpec, CommandStatus, Outcome, Resolution};

fn status<S: ToString>(s: S) -> Option<String> {
    Some(s.to_string())
}

/// The facets every command event carries: which tool, in which domain.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CommandFacets {
    /// Tool name.
    pub tool: String,
    /// Domain.
    pub domain: String,
}

impl CommandFacets {
    /// The facets of a command.
    pub fn of(spec: &CommandSpec) -> Self {
        Self {
            tool: safe::name(&spec.tool.name),
            domain: safe::name(&spec.domain),
        }
    }
}

/// Payload of `command.queued`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CommandQueued {
    /// The command.
    #[serde(skip)]
    pub command_id: Uuid,
    /// Which tool, where.
    #[serde(flatten)]
    pub facets: CommandFacets,
    /// Its proposal.
    pub proposal_id: Uuid,
    /// `action`, or `rollback`.
    pub command_kind: CommandKind,
    /// The command a rollback undoes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rollback_of: Option<Uuid>,
    /// Hash of the approved request.
    pub request_hash_sha256: String,
    /// sha256 of the spec as approved (RFC 8785): checked again at every lease.
    pub spec_sha256: String,
    /// End of the approval window (RFC 3339), if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub execute_by: Option<String>,
}

impl Payload for CommandQueued {
    fn kind(&self) -> &'static str {
        "command.queued"
    }
    fn subject(&self) -> (&'static str, String) {
        ("command", self.command_id.to_string())
    }
    fn change(&self) -> (Option<String>, Option<String>) {
        (None, status(CommandStatus::Queued))
    }
}

/// Payload of `command.leased`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CommandLeased {
    /// The command.
    #[serde(skip)]
    pub command_id: Uuid,
    /// Which tool, where.
    #[serde(flatten)]
    pub facets: CommandFacets,
    /// Its proposal.
    pub proposal_id: Uuid,
    /// Which lease this is (1 for the first).
    pub attempt: i32,
    /// Lease end (RFC 3339).
    pub lease_expires_at: Option<String>,
}

impl Payload for CommandLeased {
    fn kind(&self) -> &'static str {
        "command.leased"
    }
    fn subject(&self) -> (&'static str, String) {
        ("command", self.command_id.to_string())
    }
    fn change(&self) -> (Option<String>, Option<String>) {
        (status(CommandStatus::Queued), status(CommandStatus::Leased))
    }
}

/// Payload of `command.succeeded` / `command.failed`. The executor's result or error body is
/// kept on the command, never in the trail.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CommandReported {
    /// The command.
    #[serde(skip)]
    pub command_id: Uuid,
    /// Success or failure.
    #[serde(skip)]
    pub outcome: Outcome,
    /// Which tool, where.
    #[serde(flatten)]
    pub facets: CommandFacets,
    /// Its proposal.
    pub proposal_id: Uuid,
    /// Which lease reported.
    pub attempt: i32,
    /// Reported after the lease ran out (but before anyone settled it).
    pub late: bool,
    /// What the executor said of a failure's side effect.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub side_effect: Option<SideEffect>,
    /// Where the command went: its outcome, `queued` for a retry, or `outcome_unknown`.
    pub after: CommandStatus,
    /// The size of the reported result or error (bytes of its JSON), never its content.
    pub body_bytes: usize,
    /// The SHA-256 (hex) of the reported result or error's JSON.
    pub body_sha256: String,
}

impl Payload for CommandReported {
    fn kind(&self) -> &'static str {
        match self.outcome {
            Outcome::Succeeded => "command.succeeded",
            Outcome::Failed => "command.failed",
        }
    }
    fn subject(&self) -> (&'static str, String) {
        ("command", self.command_id.to_string())
    }
    fn change(&self) -> (Option<String>, Option<String>) {
        (status(CommandStatus::Leased), status(self.after))
    }
}

/// Payload of `command.lease_lapsed` / `command.timed_out`: the executor went silent, or the
/// run passed `execution.timeout_ms`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CommandInterrupted {
    /// The command.
    #[serde(skip)]
    pub command_id: Uuid,
    /// Lapsed or timed out.
    #[serde(skip)]
    pub timed_out: bool,
    /// Which tool, where.
    #[serde(flatten)]
    pub facets: CommandFacets,
    /// Its proposal.
    pub proposal_id: Uuid,
    /// The attempt that went silent.
    pub attempt: i32,
    /// The executor that held it.
    pub executor: Option<String>,
    /// Where the command went: `queued` (a safe retry), `outcome_unknown` or `timed_out`.
    pub after: CommandStatus,
}

impl Payload for CommandInterrupted {
    fn kind(&self) -> &'static str {
        if self.timed_out {
            "command.timed_out"
        } else {
            "command.lease_lapsed"
        }
    }
    fn subject(&self) -> (&'static str, String) {
        ("command", self.command_id.to_string())
    }
    fn change(&self) -> (Option<String>, Option<String>) {
        (status(CommandStatus::Leased), status(self.after))
    }
}

/// Payload of `command.expired`: not leased within the policy's `execute_within`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CommandExpired {
    /// The command.
    #[serde(skip)]
    pub command_id: Uuid,
    /// Which tool, where.
    #[serde(flatten)]
    pub facets: CommandFacets,
    /// Its proposal.
    pub proposal_id: Uuid,
    /// The window's end (RFC 3339).
    pub execute_by: Option<String>,
}

impl Payload for CommandExpired {
    fn kind(&self) -> &'static str {
        "command.expired"
    }
    fn subject(&self) -> (&'static str, String) {
        ("command", self.command_id.to_string())
    }
    fn change(&self) -> (Option<String>, Option<String>) {
        (
            status(CommandStatus::Queued),
            status(CommandStatus::Expired),
        )
    }
}

/// Payload of `command.resolved`: a person settled an unknown outcome (the row's actor).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CommandResolved {
    /// The command.
    #[serde(skip)]
    pub command_id: Uuid,
    /// Status before (`outcome_unknown` or `timed_out`).
    #[serde(skip)]
    pub before: CommandStatus,
    /// Which tool, where.
    #[serde(flatten)]
    pub facets: CommandFacets,
    /// Its proposal.
    pub proposal_id: Uuid,
    /// What they said.
    pub resolution: Resolution,
    /// Their reason, as length and keyed hash.
    pub reason: TextDigest,
}

impl Payload for CommandResolved {
    fn kind(&self) -> &'static str {
        "command.resolved"
    }
    fn subject(&self) -> (&'static str, String) {
        ("command", self.command_id.to_string())
    }
    fn change(&self) -> (Option<String>, Option<String>) {
        (
            status(self.before),
            status(self.resolution.command_status()),
        )
    }
}

/// Payload of `command.rollback_opened`: a rollback task for reviewers (subject: the task).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RollbackOpened {
    /// The rollback command.
    #[serde(skip)]
    pub command_id: Uuid,
    /// Which tool, where.
    #[serde(flatten)]
    pub facets: CommandFacets,
    /// Its proposal.
    pub proposal_id: Uuid,
    /// The command it would undo.
    pub rollback_of: Uuid,
    /// How that command ended.
    pub because: CommandStatus,
}

impl Payload for RollbackOpened {
    fn kind(&self) -> &'static str {
        "command.rollback_opened"
    }
    fn subject(&self) -> (&'static str, String) {
        ("command", self.command_id.to_string())
    }
    fn change(&self) -> (Option<String>, Option<String>) {
        (None, status(CommandStatus::AwaitingApproval))
    }
}

/// Payload of `command.rollback_approved` / `command.rollback_dismissed`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RollbackDecided {
    /// The rollback command.
    #[serde(skip)]
    pub command_id: Uuid,
    /// Approved (queued) or dismissed.
    #[serde(skip)]
    pub approved: bool,
    /// Which tool, where.
    #[serde(flatten)]
    pub facets: CommandFacets,
    /// Its proposal.
    pub proposal_id: Uuid,
    /// The command it undoes.
    pub rollback_of: Option<Uuid>,
    /// The reviewer's reason, as length and keyed hash.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<TextDigest>,
}

impl Payload for RollbackDecided {
    fn kind(&self) -> &'static str {
        if self.approved {
            "command.rollback_approved"
        } else {
            "command.rollback_dismissed"
        }
    }
    fn subject(&self) -> (&'static str, String) {
        ("command", self.command_id.to_string())
    }
    fn change(&self) -> (Option<String>, Option<String>) {
        let after = if self.approved {
            CommandStatus::Queued
        } else {
            CommandStatus::Dismissed
        };
        (status(CommandStatus::AwaitingApproval), status(after))
    }
}

/// Payload of `executor.drift` (seed 003's bypass): an executor reported on a command it does
/// not hold, or on a proposal never approved, or a command's spec no longer matched its
/// approval at lease. Refused; the row's actor is the executor (or the system at lease).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ExecutorDrift {
    /// The command named, as given (it may not exist).
    #[serde(skip)]
    pub command_id: String,
    /// `not_held`, `never_approved`, `unknown_command` or `spec_mismatch`.
    pub reason: &'static str,
    /// What was attempted: `complete`, `fail`, `heartbeat` or `lease`.
    pub attempted: &'static str,
    /// The executor.
    pub executor: String,
    /// The command's status when it happened, if it exists.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub command_status: Option<CommandStatus>,
    /// Tool, when the command exists.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
}

impl Payload for ExecutorDrift {
    fn kind(&self) -> &'static str {
        "executor.drift"
    }
    fn subject(&self) -> (&'static str, String) {
        ("command", self.command_id.clone())
    }
}

/// Payload of `tool.paused` / `tool.resumed` (the kill switch).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolSwitched {
    /// Exact tool name or glob.
    #[serde(skip)]
    pub pattern: String,
    /// Paused, or resumed.
    #[serde(skip)]
    pub paused: bool,
}

impl Payload for ToolSwitched {
    fn kind(&self) -> &'static str {
        if self.paused {
            "tool.paused"
        } else {
            "tool.resumed"
        }
    }
    fn subject(&self) -> (&'static str, String) {
        ("tool", safe::name(&self.pattern))
    }
    fn change(&self) -> (Option<String>, Option<String>) {
        let (before, after) = if self.paused {
            ("running", "paused")
        } else {
            ("paused", "running")
        };
        (Some(before.into()), Some(after.into()))
    }
}
