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
    /// A command of it may still run with these values ([`CommandStatus::may_still_run`]).
    #[error("its command is {0} and may still run: wait for or settle its outcome, then erase it")]
    CommandOpen(CommandStatus),
    /// It was erased already.
    #[error("the proposal was already erased")]
    AlreadyErased,
    /// Erasure needs a reason.
    #[error("a reason is required (it stays on the proposal)")]
    ReasonRequired,
}

/// Whether a proposal in `status`, whose commands (its action and any rollback of it) are in
/// `commands`, may be erased now: the one rule; storage only checks, as it writes, that none of
/// these statuses moved since they were read.
pub fn check(
    status: ProposalStatus,
    commands: &[CommandStatus],
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
    match commands.iter().find(|s| s.may_still_run()) {
        Some(&open) => Err(ErasureError::CommandOpen(open)),
        None => Ok(()),
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
            check(P::Pending, &[], false, "r"),
            Err(ErasureError::Pending)
        );
        for open in [
            C::Queued,
            C::Leased,
            C::OutcomeUnknown,
            C::TimedOut,
            C::AwaitingApproval,
        ] {
            assert_eq!(
                check(P::Approved, &[open], false, "r"),
                Err(ErasureError::CommandOpen(open))
            );
            assert_eq!(
                check(P::Failed, &[C::Failed, open], false, "r"),
                Err(ErasureError::CommandOpen(open)),
                "a rollback that may still run keeps the values too"
            );
        }
        for settled in [C::Succeeded, C::Failed, C::Expired, C::Dismissed] {
            assert_eq!(check(P::Succeeded, &[settled], false, "r"), Ok(()));
        }
        assert_eq!(
            check(P::Rejected, &[], false, " "),
            Err(ErasureError::ReasonRequired)
        );
        assert_eq!(
            check(P::Rejected, &[], true, "r"),
            Err(ErasureError::AlreadyErased)
        );
        assert_eq!(check(P::Rejected, &[], false, "request 42"), Ok(()));
        assert_eq!(check(P::Expired, &[], false, "r"), Ok(()));
    }
}
