//! What happens to a command whose run was interrupted — its lease lapsed, its run timed out,
//! or its executor reported a failure — so that no side effect is ever run twice by accident
//! (seed 004: no "silent retries of side-effecting actions").
//!
//! A command goes back to the queue only when another attempt is *safe*:
//!
//! - the executor said the failure had no side effect (`side_effect: "none"`), or
//! - the policy declares the tool idempotent, or
//! - the proposal's seed 003 `execution.retry_policy` allows another attempt (the reviewer saw
//!   it when approving);
//!
//! and then only within the budget — `retry_policy.max_retries` when the proposal has one, else
//! [`DEFAULT_SAFE_RETRIES`] — after the policy's backoff. Otherwise the run ends:
//!
//! | interruption                         | ends as           |
//! |--------------------------------------|-------------------|
//! | failure, `side_effect: "none"`       | `failed`          |
//! | failure, `side_effect: "done"`       | `failed`          |
//! | failure, `side_effect: "possible"`   | `outcome_unknown` |
//! | lease lapsed (executor vanished)     | `outcome_unknown` |
//! | `execution.timeout_ms` passed        | `timed_out`       |
//!
//! A failure with `side_effect: "done"` is never retried, even for an idempotent tool: the
//! executor says the effect happened, so running it again is not a retry but a second action.

use super::CommandStatus;
use crate::domain::contract::proposal::RetryPolicy;
use crate::domain::contract::wire::wire_enum;

/// Retries allowed for a safe interruption when the proposal names no retry policy.
pub const DEFAULT_SAFE_RETRIES: u32 = 3;
/// Delay before a retry when the proposal names no backoff, in milliseconds.
pub const DEFAULT_BACKOFF_MS: u64 = 1_000;
/// Longest backoff honoured, in milliseconds (a larger `backoff_ms` is capped).
pub const MAX_BACKOFF_MS: u64 = 3_600_000;

wire_enum! {
    /// What the executor knows of a failed run's effect on the world.
    pub enum SideEffect {
        /// Nothing happened: safe to try again.
        None => "none",
        /// Something may have happened (the default: a failing executor rarely knows).
        Possible => "possible",
        /// The effect happened, though the run failed.
        Done => "done",
    }
}

/// Why a run stopped without success.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Interruption {
    /// The executor reported a failure.
    Failed(SideEffect),
    /// The lease ran out without a report.
    LeaseLapsed,
    /// The run passed its `execution.timeout_ms`.
    TimedOut,
}

impl Interruption {
    /// The audit and wire name of the interruption.
    pub fn as_str(self) -> &'static str {
        match self {
            Interruption::Failed(_) => "failed",
            Interruption::LeaseLapsed => "lease_lapsed",
            Interruption::TimedOut => "timed_out",
        }
    }
}

/// What the rules allow for one command.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RetryRules {
    /// The policy declares the tool idempotent.
    pub idempotent: bool,
    /// The proposal's seed 003 `execution.retry_policy`.
    pub retry_policy: Option<RetryPolicy>,
}

/// What happens next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Next {
    /// Back to the queue, not before `backoff_ms` from now.
    Retry {
        /// Delay before the next lease.
        backoff_ms: u64,
    },
    /// The run is over, in this status.
    End(CommandStatus),
}

impl RetryRules {
    /// How many retries the command may have in all.
    pub fn budget(&self) -> u32 {
        self.retry_policy.map_or(DEFAULT_SAFE_RETRIES, |r| {
            u32::try_from(r.max_retries).unwrap_or(u32::MAX)
        })
    }

    /// Whether another attempt after `interruption` is safe, budget aside.
    pub fn is_safe(&self, interruption: Interruption) -> bool {
        match interruption {
            Interruption::Failed(SideEffect::None) => true,
            Interruption::Failed(SideEffect::Done) => false,
            Interruption::Failed(SideEffect::Possible)
            | Interruption::LeaseLapsed
            | Interruption::TimedOut => self.idempotent || self.retry_policy.is_some(),
        }
    }

    /// What follows `interruption` of attempt number `attempts` (1 for the first run).
    pub fn after(&self, interruption: Interruption, attempts: u32) -> Next {
        let retries_done = attempts.saturating_sub(1);
        if self.is_safe(interruption) && retries_done < self.budget() {
            let backoff_ms = self
                .retry_policy
                .map_or(DEFAULT_BACKOFF_MS, |r| r.backoff_ms.min(MAX_BACKOFF_MS));
            return Next::Retry { backoff_ms };
        }
        Next::End(match interruption {
            Interruption::Failed(SideEffect::None | SideEffect::Done) => CommandStatus::Failed,
            Interruption::Failed(SideEffect::Possible) | Interruption::LeaseLapsed => {
                CommandStatus::OutcomeUnknown
            }
            Interruption::TimedOut => CommandStatus::TimedOut,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PLAIN: RetryRules = RetryRules {
        idempotent: false,
        retry_policy: None,
    };

    #[test]
    fn a_side_effecting_run_is_never_retried_silently() {
        assert_eq!(
            PLAIN.after(Interruption::LeaseLapsed, 1),
            Next::End(CommandStatus::OutcomeUnknown)
        );
        assert_eq!(
            PLAIN.after(Interruption::Failed(SideEffect::Possible), 1),
            Next::End(CommandStatus::OutcomeUnknown)
        );
        assert_eq!(
            PLAIN.after(Interruption::TimedOut, 1),
            Next::End(CommandStatus::TimedOut)
        );
        assert_eq!(
            PLAIN.after(Interruption::Failed(SideEffect::Done), 1),
            Next::End(CommandStatus::Failed)
        );
    }

    #[test]
    fn no_side_effect_is_retried_up_to_the_default_budget() {
        let none = Interruption::Failed(SideEffect::None);
        for attempt in 1..=DEFAULT_SAFE_RETRIES {
            assert_eq!(
                PLAIN.after(none, attempt),
                Next::Retry {
                    backoff_ms: DEFAULT_BACKOFF_MS
                }
            );
        }
        assert_eq!(
            PLAIN.after(none, DEFAULT_SAFE_RETRIES + 1),
            Next::End(CommandStatus::Failed)
        );
    }

    #[test]
    fn idempotent_tools_retry_lapses_and_done_never_retries() {
        let rules = RetryRules {
            idempotent: true,
            retry_policy: None,
        };
        assert!(matches!(
            rules.after(Interruption::LeaseLapsed, 1),
            Next::Retry { .. }
        ));
        assert_eq!(
            rules.after(Interruption::Failed(SideEffect::Done), 1),
            Next::End(CommandStatus::Failed)
        );
    }

    #[test]
    fn a_retry_policy_sets_budget_and_backoff() {
        let rules = RetryRules {
            idempotent: false,
            retry_policy: Some(RetryPolicy {
                max_retries: 2,
                backoff_ms: 250,
            }),
        };
        assert_eq!(
            rules.after(Interruption::TimedOut, 1),
            Next::Retry { backoff_ms: 250 }
        );
        assert_eq!(
            rules.after(Interruption::LeaseLapsed, 2),
            Next::Retry { backoff_ms: 250 }
        );
        assert_eq!(
            rules.after(Interruption::LeaseLapsed, 3),
            Next::End(CommandStatus::OutcomeUnknown)
        );
        let none = RetryRules {
            retry_policy: Some(RetryPolicy {
                max_retries: 0,
                backoff_ms: 0,
            }),
            ..rules
        };
        assert_eq!(
            none.after(Interruption::Failed(SideEffect::None), 1),
            Next::End(CommandStatus::Failed)
        );
    }
}
