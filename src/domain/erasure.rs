//! GDPR erasure (seed 004: "proposals must support data erasure workflows"): which parts of a
//! proposal and its command hold personal data values, and when they may be erased.
//!
//! Erasure replaces every value an agent or executor wrote freely — parameter values, the
//! intent, target ids, constraint values, preconditions, evidence, rollback instructions, the
//! reviewer's reason, the executor's result or error — with [`ERASED`], and keeps what the trail and the decision
//! are bound to: parameter keys, tool, domain, risk, request hash, idempotency key, status and
//! decision. The audit trail never held the values (only keyed hashes), so it stays as it is
//! and keeps verifying.

use serde_json::{Map, Value};

use super::command::{CommandSpec, CommandStatus};
use super::contract::proposal::ToolProposal;
use super::lifecycle::ProposalStatus;

/// What an erased value reads.
pub const ERASED: &str = "[erased]";

/// Why a proposal cannot be erased now.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ErasureError {
    /// It waits for a decision: reject it first (an approval would run erased values).
    #[error("the proposal is still pending: reject it first, then erase it")]
    Pending,
    /// Its command may still run with these values.
    #[error("its command is {0}: wait for its outcome, then erase it")]
    CommandOpen(CommandStatus),
    /// It was erased already.
    #[error("the proposal was already erased")]
    AlreadyErased,
    /// Erasure needs a reason.
    #[error("a reason is required (it stays on the proposal)")]
    ReasonRequired,
}

/// Whether a proposal in `status`, with its command in `command`, may be erased now.
pub fn check(
    status: ProposalStatus,
    command: Option<CommandStatus>,
    already_erased: bool,
    reason: &str,
) -> Result<(), ErasureError> {
    if already_erased {
        return Err(ErasureError::AlreadyErased);
    }
    if reason.trim().is_empty() {
        return Err(ErasureError::ReasonRequired);
    }
    if status == ProposalStatus::Pending {
        return Err(ErasureError::Pending);
    }
    match command {
        Some(s @ (CommandStatus::Queued | CommandStatus::Leased)) => {
            Err(ErasureError::CommandOpen(s))
        }
        _ => Ok(()),
    }
}

fn erased() -> Value {
    Value::String(ERASED.to_owned())
}

fn erase_values(map: &Map<String, Value>) -> Map<String, Value> {
    map.keys().map(|k| (k.clone(), erased())).collect()
}

/// The proposal with its personal data values erased, and the names of the parts erased.
pub fn erase_proposal(c: &ToolProposal) -> (ToolProposal, Vec<&'static str>) {
    let mut e = c.clone();
    let mut parts = vec!["parameters", "intent"];
    e.parameters = erase_values(&c.parameters);
    e.intent.summary = ERASED.to_owned();
    e.intent.reasoning = ERASED.to_owned();
    if !e.target_refs.is_empty() {
        parts.push("target_refs");
        for t in &mut e.target_refs {
            t.id = ERASED.to_owned();
        }
    }
    if let Some(constraints) = &c.constraints {
        parts.push("constraints");
        e.constraints = Some(erase_values(constraints));
    }
    if !e.preconditions.is_empty() {
        parts.push("preconditions");
        e.preconditions = vec![erased(); c.preconditions.len()];
    }
    if !e.evidence_refs.is_empty() {
        parts.push("evidence_refs");
        e.evidence_refs.clear();
    }
    if let Some(plan) = &mut e.rollback_plan
        && plan.instructions.is_some()
    {
        parts.push("rollback_plan.instructions");
        plan.instructions = Some(erased());
    }
    (e, parts)
}

/// The command with the same values erased.
pub fn erase_command(spec: &CommandSpec) -> CommandSpec {
    let mut e = spec.clone();
    e.parameters = erase_values(&spec.parameters);
    for t in &mut e.target_refs {
        t.id = ERASED.to_owned();
    }
    if let Some(constraints) = &spec.constraints {
        e.constraints = Some(erase_values(constraints));
    }
    e.preconditions = vec![erased(); spec.preconditions.len()];
    if let Some(plan) = &mut e.rollback_plan
        && plan.instructions.is_some()
    {
        plan.instructions = Some(erased());
    }
    e
}

/// An executor's result or error, erased (`None` stays `None`).
pub fn erase_report(body: Option<&Value>) -> Option<Value> {
    body.map(|_| erased())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_settled_proposals_with_a_reason_may_be_erased() {
        use CommandStatus as C;
        use ProposalStatus as P;
        assert_eq!(
            check(P::Pending, None, false, "r"),
            Err(ErasureError::Pending)
        );
        assert_eq!(
            check(P::Approved, Some(C::Queued), false, "r"),
            Err(ErasureError::CommandOpen(C::Queued))
        );
        assert_eq!(
            check(P::Approved, Some(C::Leased), false, "r"),
            Err(ErasureError::CommandOpen(C::Leased))
        );
        assert_eq!(
            check(P::Rejected, None, false, " "),
            Err(ErasureError::ReasonRequired)
        );
        assert_eq!(
            check(P::Rejected, None, true, "r"),
            Err(ErasureError::AlreadyErased)
        );
        assert_eq!(check(P::Succeeded, Some(C::Succeeded), false, "r"), Ok(()));
        assert_eq!(check(P::Rejected, None, false, "request 42"), Ok(()));
        assert_eq!(check(P::Expired, None, false, "r"), Ok(()));
    }
}
