//! The life of a proposal: `pending` until a reviewer decides; `approved` (authorization
//! `confirmed`, one command queued) or `rejected`; then `succeeded` or `failed` when the
//! executor reports. Decided proposals are never decided again.

use time::OffsetDateTime;

use super::contract::vocab::Route;
use super::contract::wire::wire_enum;
use super::principal::Role;

/// Longest rejection reason, in characters.
pub const MAX_REASON: usize = 2_000;

wire_enum! {
    /// Where a proposal is in its life.
    pub enum ProposalStatus {
        /// Waiting for a human decision.
        Pending => "pending",
        /// Approved by a reviewer; its command is in the executor queue.
        Approved => "approved",
        /// Rejected by a reviewer, with a reason.
        Rejected => "rejected",
        /// Routed `accept` by policy and queued without review.
        Accepted => "accepted",
        /// Routed `refuse` by policy; never executes.
        Refused => "refused",
        /// Not decided in time; never executes.
        Expired => "expired",
        /// The executor reported success.
        Succeeded => "succeeded",
        /// The executor reported failure.
        Failed => "failed",
        /// The command's run may or may not have had its effect; a person must say which.
        OutcomeUnknown => "outcome_unknown",
        /// The command's run passed its time limit; a person must say what happened.
        TimedOut => "timed_out",
        /// A reviewer asked for changes; the agent may submit a revised proposal that names
        /// this one in `supersedes`. Never executes.
        ChangesRequested => "changes_requested",
        /// The agent withdrew it while it waited (an MCP client's `tasks/cancel`). Never
        /// executes.
        Withdrawn => "withdrawn"
    }
}

impl ProposalStatus {
    /// Whether a reviewer may still decide it.
    pub fn is_open(self) -> bool {
        self == ProposalStatus::Pending
    }

    /// Whether its command may run: a person approved it, or policy accepted it, and no run
    /// has ended yet.
    pub fn is_executable(self) -> bool {
        Self::EXECUTABLE.contains(&self)
    }

    /// The statuses in which a proposal's command may run ([`Self::is_executable`]).
    pub const EXECUTABLE: [ProposalStatus; 2] =
        [ProposalStatus::Approved, ProposalStatus::Accepted];

    /// Whether a proposal in this status may have a command: one was queued when it was
    /// approved or accepted, and a command's end sets the statuses that follow. A proposal
    /// still pending, or one that never executes for a decision (`rejected`, `refused`,
    /// `changes_requested`), has none, so reading its status needs no command read.
    pub fn may_have_command(self) -> bool {
        !matches!(
            self,
            ProposalStatus::Pending
                | ProposalStatus::Rejected
                | ProposalStatus::Refused
                | ProposalStatus::ChangesRequested
        )
    }

    /// Whether nothing follows this status: it never executes (`rejected`, `refused`,
    /// `expired`, `changes_requested`, `withdrawn`) or its run has ended (`succeeded`, `failed`). An
    /// `approved`, `accepted`, `outcome_unknown` or `timed_out` proposal still moves (a run, a
    /// reviewer's settlement).
    pub fn is_final(self) -> bool {
        matches!(
            self,
            ProposalStatus::Rejected
                | ProposalStatus::Refused
                | ProposalStatus::Expired
                | ProposalStatus::ChangesRequested
                | ProposalStatus::Withdrawn
                | ProposalStatus::Succeeded
                | ProposalStatus::Failed
        )
    }
}

wire_enum! {
    /// A reviewer's verdict on a proposal (`approved`, `rejected` or `changes_requested`).
    pub enum ReviewVerdict {
        Approved => "approved",
        Rejected => "rejected",
        /// The reviewer asks the agent for a revised proposal; this one never executes.
        ChangesRequested => "changes_requested",
    }
}

impl ReviewVerdict {
    /// The status a proposal takes on this verdict.
    pub fn status(self) -> ProposalStatus {
        match self {
            ReviewVerdict::Approved => ProposalStatus::Approved,
            ReviewVerdict::Rejected => ProposalStatus::Rejected,
            ReviewVerdict::ChangesRequested => ProposalStatus::ChangesRequested,
        }
    }
}

/// Why a decision cannot be taken.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecisionError {
    /// The reviewer's role may not decide.
    #[error("your role may not approve or reject proposals")]
    RoleMayNotDecide,
    /// The reviewer is the proposer (separation of duties).
    #[error("you proposed this action, so you cannot decide it")]
    OwnProposal,
    /// The reviewer operates the proposing agent (an agent token names them its operator):
    /// separation of duties again.
    #[error("you operate the agent that proposed this action, so you cannot approve it")]
    OperatesAgent,
    /// The proposal was already decided (or never needed a decision).
    #[error("this proposal is already {0}; it cannot be decided again")]
    AlreadyDecided(ProposalStatus),
    /// A rejection needs a reason, and a request for changes says what must change.
    #[error(
        "a rejection needs a reason, and a request for changes what must change \
         (1-{MAX_REASON} characters)"
    )]
    ReasonRequired,
    /// Approving this action needs the target's name typed, and it was not (see
    /// [`super::review::confirm`]).
    #[error(transparent)]
    Unconfirmed(#[from] super::review::confirm::ConfirmationError),
    /// A batch from the queue may not take this approval (see [`super::review::batch`]).
    #[error(transparent)]
    NotBatchable(#[from] super::review::batch::NotBatchable),
}

/// A decision a reviewer wants to take, checked against the rules.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReviewDecision {
    /// Approve or reject.
    pub verdict: ReviewVerdict,
    /// Reviewer's reason (required to reject, optional to approve).
    pub reason: Option<String>,
}

/// Checks whether `reviewer` (with `role`) may take `verdict` on a proposal by `proposer` that
/// is currently `status`. The storage layer repeats the status check atomically.
pub fn check_decision(
    status: ProposalStatus,
    proposer: &str,
    reviewer: &str,
    role: Role,
    verdict: ReviewVerdict,
    reason: Option<&str>,
) -> Result<ReviewDecision, DecisionError> {
    if !role.can_decide() {
        return Err(DecisionError::RoleMayNotDecide);
    }
    if proposer == reviewer {
        return Err(DecisionError::OwnProposal);
    }
    if !status.is_open() {
        return Err(DecisionError::AlreadyDecided(status));
    }
    let reason = reason.map(str::trim).filter(|r| !r.is_empty());
    if reason.is_some_and(|r| r.chars().count() > MAX_REASON) {
        return Err(DecisionError::ReasonRequired);
    }
    if verdict != ReviewVerdict::Approved && reason.is_none() {
        return Err(DecisionError::ReasonRequired);
    }
    Ok(ReviewDecision {
        verdict,
        reason: reason.map(str::to_owned),
    })
}

/// Refuses an approval by a person who operates the proposing agent (`operators`: the people
/// its tokens name). Rejecting stays open to them: saying no is never a conflict of interest.
pub fn check_operator(
    operators: &[String],
    reviewer: &str,
    verdict: ReviewVerdict,
) -> Result<(), DecisionError> {
    if verdict == ReviewVerdict::Approved && operators.iter().any(|o| o == reviewer) {
        return Err(DecisionError::OperatesAgent);
    }
    Ok(())
}

/// Where a person stands towards approving a proposal now: what the proposal page shows
/// beside its buttons. The same rules as [`check_decision`] and [`check_operator`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Standing {
    /// The proposal's status now (a pending proposal past its time reads expired).
    pub status: ProposalStatus,
    /// Whether they may decide it at all.
    pub can_decide: bool,
    /// Why they may not, for an open proposal.
    pub cannot: Option<String>,
    /// Why they may not approve (again), when they may still reject.
    pub approve_blocked: Option<String>,
}

/// What a person limited to nothing else sees of a proposal's decision: who they are
/// (`reviewer`, `role`), the proposal (`status` as of now, its `proposer`, the people who
/// `operators` its agent) and who approved it so far out of `required_approvals`.
pub fn standing(
    status: ProposalStatus,
    proposer: &str,
    operators: &[String],
    (reviewer, role): (&str, Role),
    approvals: &[String],
    required_approvals: u8,
) -> Standing {
    let check = check_decision(
        status,
        proposer,
        reviewer,
        role,
        ReviewVerdict::Approved,
        None,
    );
    let (can_decide, cannot) = match check {
        Ok(_) => (true, None),
        Err(DecisionError::AlreadyDecided(_)) => (false, None),
        Err(e) => (false, Some(e.to_string())),
    };
    let approved = approvals.iter().any(|who| who == reviewer);
    let approve_blocked = if !can_decide {
        None
    } else if approved {
        let more = usize::from(required_approvals.max(1)).saturating_sub(approvals.len());
        Some(format!(
            "You approved. {more} more approval(s) from other reviewers are needed."
        ))
    } else {
        check_operator(operators, reviewer, ReviewVerdict::Approved)
            .err()
            .map(|e| e.to_string())
    };
    Standing {
        status,
        can_decide,
        cannot: if status.is_open() { cannot } else { None },
        approve_blocked,
    }
}

/// The status a proposal starts in, by its route: `accept` is queued at once, `ask` and
/// `defer` wait for a reviewer, `refuse` never executes.
pub fn initial_status(route: Route) -> ProposalStatus {
    match route {
        Route::Accept => ProposalStatus::Accepted,
        Route::Ask | Route::Defer => ProposalStatus::Pending,
        Route::Refuse => ProposalStatus::Refused,
    }
}

/// When a proposal in `status` stops waiting for a decision: only pending proposals expire,
/// `expires_after_secs` after they arrive.
pub fn expires_at(
    status: ProposalStatus,
    arrived: OffsetDateTime,
    expires_after_secs: u64,
) -> Option<OffsetDateTime> {
    (status == ProposalStatus::Pending).then(|| {
        arrived + time::Duration::seconds(i64::try_from(expires_after_secs).unwrap_or(i64::MAX))
    })
}

/// The status a proposal shows at `now`: a pending one whose time ran out is expired, even
/// before the sweep records it.
pub fn status_at(
    status: ProposalStatus,
    expires_at: Option<OffsetDateTime>,
    now: OffsetDateTime,
) -> ProposalStatus {
    match (status, expires_at) {
        (ProposalStatus::Pending, Some(t)) if t <= now => ProposalStatus::Expired,
        (s, _) => s,
    }
}

/// Whether `approvals` distinct reviewers meet the policy's `required` (at least one).
pub fn quorum_met(approvals: i64, required: u8) -> bool {
    approvals >= i64::from(required.max(1))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::command::CommandStatus;
    use crate::domain::contract::wire::WireEnum;

    #[test]
    fn every_status_a_command_sets_may_have_a_command() {
        let set_by_commands = CommandStatus::ALL
            .iter()
            .filter_map(|c| c.proposal_status());
        for s in set_by_commands.chain([ProposalStatus::Approved, ProposalStatus::Accepted]) {
            assert!(s.may_have_command(), "{s}");
        }
        assert!(!ProposalStatus::Pending.may_have_command());
    }

    #[test]
    fn reviewer_approves_a_pending_proposal() {
        let d = check_decision(
            ProposalStatus::Pending,
            "agent",
            "rev",
            Role::Reviewer,
            ReviewVerdict::Approved,
            None,
        )
        .expect("allowed");
        assert_eq!(d.verdict.status(), ProposalStatus::Approved);
    }

    #[test]
    fn nobody_decides_their_own_proposal() {
        let e = check_decision(
            ProposalStatus::Pending,
            "alice",
            "alice",
            Role::Admin,
            ReviewVerdict::Approved,
            None,
        );
        assert_eq!(e, Err(DecisionError::OwnProposal));
    }

    #[test]
    fn compliance_reads_but_never_decides() {
        let e = check_decision(
            ProposalStatus::Pending,
            "a",
            "c",
            Role::Compliance,
            ReviewVerdict::Approved,
            None,
        );
        assert_eq!(e, Err(DecisionError::RoleMayNotDecide));
    }

    #[test]
    fn decided_proposals_stay_decided() {
        for s in [
            ProposalStatus::Approved,
            ProposalStatus::Rejected,
            ProposalStatus::Succeeded,
            ProposalStatus::Refused,
        ] {
            let e = check_decision(
                s,
                "a",
                "r",
                Role::Reviewer,
                ReviewVerdict::Rejected,
                Some("no"),
            );
            assert_eq!(e, Err(DecisionError::AlreadyDecided(s)));
        }
    }

    #[test]
    fn rejection_needs_a_reason() {
        let e = check_decision(
            ProposalStatus::Pending,
            "a",
            "r",
            Role::Reviewer,
            ReviewVerdict::Rejected,
            Some("  "),
        );
        assert_eq!(e, Err(DecisionError::ReasonRequired));
        let ok = check_decision(
            ProposalStatus::Pending,
            "a",
            "r",
            Role::Reviewer,
            ReviewVerdict::Rejected,
            Some(" too risky "),
        );
        assert_eq!(ok.expect("allowed").reason.as_deref(), Some("too risky"));
    }

    #[test]
    fn operators_do_not_approve_their_agents() {
        let ops = vec!["olga".to_owned()];
        assert_eq!(
            check_operator(&ops, "olga", ReviewVerdict::Approved),
            Err(DecisionError::OperatesAgent)
        );
        assert!(check_operator(&ops, "rita", ReviewVerdict::Approved).is_ok());
        assert!(check_operator(&ops, "olga", ReviewVerdict::Rejected).is_ok());
    }

    #[test]
    fn standing_says_why_a_person_may_not_approve() {
        let ops = vec!["olga".to_owned()];
        let open = ProposalStatus::Pending;
        let rita = standing(open, "agent-1", &ops, ("rita", Role::Reviewer), &[], 1);
        assert!(rita.can_decide && rita.approve_blocked.is_none() && rita.cannot.is_none());
        let olga = standing(open, "agent-1", &ops, ("olga", Role::Reviewer), &[], 1);
        assert!(olga.can_decide);
        assert_eq!(
            olga.approve_blocked,
            Some(DecisionError::OperatesAgent.to_string())
        );
        let again = standing(
            open,
            "agent-1",
            &[],
            ("rita", Role::Admin),
            &["rita".into()],
            2,
        );
        assert_eq!(
            again.approve_blocked.as_deref(),
            Some("You approved. 1 more approval(s) from other reviewers are needed.")
        );
        let compliance = standing(open, "agent-1", &[], ("cora", Role::Compliance), &[], 1);
        assert!(!compliance.can_decide && compliance.cannot.is_some());
        let own = standing(open, "rita", &[], ("rita", Role::Reviewer), &[], 1);
        assert_eq!(own.cannot, Some(DecisionError::OwnProposal.to_string()));
        let done = standing(
            ProposalStatus::Approved,
            "a",
            &[],
            ("rita", Role::Reviewer),
            &[],
            1,
        );
        assert!(!done.can_decide && done.cannot.is_none());
    }
}
