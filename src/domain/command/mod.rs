//! Commands in the executor queue: what an executor may see of an approved proposal (never
//! the agent's intent or reasoning), and the states a command moves through.
//!
//! ```text
//!                  ┌──────────── retry (safe, within budget, after backoff) ───────────┐
//!                  ▼                                                                    │
//! approved ──▶ queued ──lease──▶ leased ──complete──▶ succeeded                          │
//!                  │               │ ├──fail / lapse / timeout──▶ (rules in [`retry`]) ──┘
//!                  │               │ └──────────────────────────▶ failed | outcome_unknown | timed_out
//!                  └─ not leased within execute_within ─▶ expired
//! outcome_unknown | timed_out ──a person──▶ succeeded | failed | queued (one more attempt)
//! failed | timed_out | outcome_unknown, with a rollback plan ──▶ a rollback task
//!   (`awaiting_approval`) ──approved──▶ queued (its own command) | dismissed
//! ```
//!
//! [`retry`] decides retries, [`scope`] who may run what, [`grant`] what a signed grant
//! vouches for.

pub mod grant;
pub mod retry;
pub mod scope;

use serde_json::Value;

use crate::domain::contract::wire::wire_enum;

/// Shortest lease an executor may ask for, in seconds.
pub const MIN_LEASE_SECONDS: u64 = 5;
/// Longest lease an executor may ask for, in seconds.
pub const MAX_LEASE_SECONDS: u64 = 3_600;
/// Lease length when the executor does not ask for one.
pub const DEFAULT_LEASE_SECONDS: u64 = 300;
/// Largest `result` or `error` report an executor may send, in bytes of JSON.
pub const MAX_REPORT_BYTES: usize = 64 * 1024;

wire_enum! {
    /// Where a command is in the queue.
    pub enum CommandStatus {
        /// Waiting for an executor.
        Queued => "queued",
        /// Held by an executor until its lease expires.
        Leased => "leased",
        /// Reported done.
        Succeeded => "succeeded",
        /// Reported failed.
        Failed => "failed",
        /// The run may or may not have had its effect; a person must say which.
        OutcomeUnknown => "outcome_unknown",
        /// The run passed its `execution.timeout_ms`; a person must say what happened.
        TimedOut => "timed_out",
        /// Not leased within the approval window; never runs.
        Expired => "expired",
        /// A rollback task waiting for a reviewer.
        AwaitingApproval => "awaiting_approval",
        /// A rollback task a reviewer declined.
        Dismissed => "dismissed"
    }
}

impl CommandStatus {
    /// The proposal status an action command in this status shows the agent, when it differs
    /// from the proposal's approval (`approved` / `accepted`).
    pub fn proposal_status(self) -> Option<crate::domain::lifecycle::ProposalStatus> {
        use crate::domain::lifecycle::ProposalStatus as P;
        match self {
            CommandStatus::Succeeded => Some(P::Succeeded),
            CommandStatus::Failed => Some(P::Failed),
            CommandStatus::OutcomeUnknown => Some(P::OutcomeUnknown),
            CommandStatus::TimedOut => Some(P::TimedOut),
            CommandStatus::Expired => Some(P::Expired),
            _ => None,
        }
    }

    /// Whether a person must settle the command (it ended without a known outcome).
    pub fn needs_resolution(self) -> bool {
        matches!(
            self,
            CommandStatus::OutcomeUnknown | CommandStatus::TimedOut
        )
    }

    /// Whether an executor may still run the command: it waits in the queue or runs now, a
    /// person may release its unknown outcome to run once more, or it is a rollback task a
    /// reviewer may still approve. Its values must stay until it cannot
    /// ([`crate::domain::erasure::check`]).
    pub fn may_still_run(self) -> bool {
        matches!(
            self,
            CommandStatus::Queued
                | CommandStatus::Leased
                | CommandStatus::OutcomeUnknown
                | CommandStatus::TimedOut
                | CommandStatus::AwaitingApproval
        )
    }

    /// Whether the command's run is over (a rollback may follow the unhappy ones).
    pub fn opens_rollback(self) -> bool {
        matches!(
            self,
            CommandStatus::Failed | CommandStatus::OutcomeUnknown | CommandStatus::TimedOut
        )
    }
}

wire_enum! {
    /// What a command does.
    pub enum CommandKind {
        /// The approved action.
        Action => "action",
        /// The rollback of an earlier command, per its proposal's rollback plan.
        Rollback => "rollback"
    }
}

wire_enum! {
    /// How a person settles a command whose outcome is unknown.
    pub enum Resolution {
        /// It had its effect.
        Succeeded => "succeeded",
        /// It did not (or failed).
        Failed => "failed",
        /// Run it once more.
        Release => "release"
    }
}

impl Resolution {
    /// The command status this resolution sets.
    pub fn command_status(self) -> CommandStatus {
        match self {
            Resolution::Succeeded => CommandStatus::Succeeded,
            Resolution::Failed => CommandStatus::Failed,
            Resolution::Release => CommandStatus::Queued,
        }
    }
}

/// Longest approval window a policy may set, in seconds.
pub const MAX_EXECUTE_WITHIN_SECS: u64 = 30 * 86_400;
/// Approval window when the policy sets none: one hour.
pub const DEFAULT_EXECUTE_WITHIN_SECS: u64 = 3_600;
/// Longest wait a lease may ask for, in seconds.
pub const MAX_LEASE_WAIT_SECONDS: u64 = 60;

wire_enum! {
    /// An executor's report on a command.
    pub enum Outcome { Succeeded => "succeeded", Failed => "failed" }
}

impl Outcome {
    /// The command status this report sets.
    pub fn command_status(self) -> CommandStatus {
        match self {
            Outcome::Succeeded => CommandStatus::Succeeded,
            Outcome::Failed => CommandStatus::Failed,
        }
    }

    /// The proposal status this report sets.
    pub fn proposal_status(self) -> crate::domain::lifecycle::ProposalStatus {
        match self {
            Outcome::Succeeded => crate::domain::lifecycle::ProposalStatus::Succeeded,
            Outcome::Failed => crate::domain::lifecycle::ProposalStatus::Failed,
        }
    }
}

/// Checks a requested lease length, defaulting when absent.
pub fn lease_seconds(requested: Option<u64>) -> Result<u64, String> {
    match requested {
        None => Ok(DEFAULT_LEASE_SECONDS),
        Some(s) if (MIN_LEASE_SECONDS..=MAX_LEASE_SECONDS).contains(&s) => Ok(s),
        Some(_) => Err(format!(
            "must be between {MIN_LEASE_SECONDS} and {MAX_LEASE_SECONDS} seconds"
        )),
    }
}

/// Checks an executor's `result` or `error` report: present and not too large.
pub fn check_report(value: &Value) -> Result<(), String> {
    if value.is_null() {
        return Err("is required".into());
    }
    if serde_json::to_string(value).map_or(usize::MAX, |s| s.len()) > MAX_REPORT_BYTES {
        return Err(format!("must be at most {MAX_REPORT_BYTES} bytes of JSON"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn lease_length_is_bounded() {
        assert_eq!(lease_seconds(None), Ok(DEFAULT_LEASE_SECONDS));
        assert_eq!(lease_seconds(Some(60)), Ok(60));
        assert!(lease_seconds(Some(1)).is_err());
        assert!(lease_seconds(Some(86_400)).is_err());
    }

    #[test]
    fn reports_must_be_present_and_bounded() {
        assert!(check_report(&json!({"ok": true})).is_ok());
        assert!(check_report(&Value::Null).is_err());
        assert!(check_report(&json!("x".repeat(MAX_REPORT_BYTES + 1))).is_err());
    }
}

use serde::{Deserialize, Serialize};
use serde_json::Map;
use time::OffsetDateTime;

use crate::domain::contract::proposal::{
    ExecutionLimits, RollbackPlan, TargetRef, ToolProposal, ToolRef,
};
use crate::domain::contract::vocab::{AuthorizationState, BlastRadius};

/// What an executor receives: the validated, approved command, and nothing of the agent's
/// intent or reasoning (seed 004: executors never receive raw AI output).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CommandSpec {
    /// The tool to run.
    pub tool: ToolRef,
    /// Its parameters, exactly as approved.
    pub parameters: Map<String, Value>,
    /// The proposal's idempotency key, so executors can make retries safe.
    pub idempotency_key: String,
    /// Affected resources.
    #[serde(default)]
    pub target_refs: Vec<TargetRef>,
    /// How to reverse it.
    #[serde(default)]
    pub rollback_plan: Option<RollbackPlan>,
    /// Whether the proposer said it can be rolled back.
    pub rollback_supported: bool,
    /// Impact scope.
    #[serde(default)]
    pub blast_radius: Option<BlastRadius>,
    /// Scope constraints (seed 003), as proposed.
    #[serde(default)]
    pub constraints: Option<Map<String, Value>>,
    /// Checks that must pass before dispatch (seed 003).
    #[serde(default)]
    pub preconditions: Vec<Value>,
    /// Execution limits (seed 003).
    #[serde(default)]
    pub execution: Option<ExecutionLimits>,
    /// Executors the policy lets run this tool; empty means any.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allowed_executors: Vec<String>,
    /// `confirmed` for a reviewer's approval; a policy-accepted command carries the
    /// authorization the policy accepted it at.
    pub authorization_state: AuthorizationState,
    /// Domain the action belongs to.
    pub domain: String,
    /// `sha256` of the approved request; the approval is bound to exactly this request.
    pub request_hash_sha256: String,
    /// Who approved it (`policy` for policy-accepted commands).
    pub approved_by: String,
    /// When.
    #[serde(with = "time::serde::rfc3339")]
    pub approved_at: OffsetDateTime,
}

impl CommandSpec {
    /// The command for a proposal approved by `approved_by` (a reviewer, or `policy`) at
    /// `authorization_state`.
    pub fn for_approved(
        proposal: &ToolProposal,
        request_hash: &str,
        approved_by: &str,
        authorization_state: AuthorizationState,
        approved_at: OffsetDateTime,
    ) -> Self {
        Self::build(
            proposal,
            request_hash,
            approved_by,
            authorization_state,
            approved_at,
            Vec::new(),
        )
    }

    /// Limits the command to `executors` (from the policy's `allowed_executors`).
    pub fn only_for(mut self, executors: &[String]) -> Self {
        self.allowed_executors = executors.to_vec();
        self
    }

    fn build(
        proposal: &ToolProposal,
        request_hash: &str,
        approved_by: &str,
        authorization_state: AuthorizationState,
        approved_at: OffsetDateTime,
        allowed_executors: Vec<String>,
    ) -> Self {
        CommandSpec {
            tool: proposal.tool.clone(),
            parameters: proposal.parameters.clone(),
            idempotency_key: proposal.idempotency_key.clone(),
            target_refs: proposal.target_refs.clone(),
            rollback_plan: proposal.rollback_plan.clone(),
            rollback_supported: proposal.rollback_supported,
            blast_radius: proposal.blast_radius,
            constraints: proposal.constraints.clone(),
            preconditions: proposal.preconditions.clone(),
            execution: proposal.execution,
            allowed_executors,
            authorization_state,
            domain: proposal.domain.clone(),
            request_hash_sha256: request_hash.to_owned(),
            approved_by: approved_by.to_owned(),
            approved_at,
        }
    }
}
