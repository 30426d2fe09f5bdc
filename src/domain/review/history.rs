//! An agent's record with one tool, as a reviewer weighs it: of its earlier proposals for the
//! same tool, how many were approved (by a person or the policy), rejected, refused or let
//! expire, and of the approved ones how many runs succeeded, failed or ended unknown.

use crate::domain::lifecycle::ProposalStatus;

/// Most recent similar proposals the counts look at: the page stays as fast for an agent with
/// a million proposals as for one with ten.
pub const HISTORY_WINDOW: i64 = 1_000;
/// Similar proposals listed by name, newest first.
pub const HISTORY_RECENT: i64 = 5;

/// Earlier proposals by outcome.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Tally {
    /// All counted.
    pub total: u64,
    /// Approved by a reviewer or accepted by the policy, whatever happened next.
    pub approved: u64,
    /// Rejected by a reviewer.
    pub rejected: u64,
    /// Refused by the policy.
    pub refused: u64,
    /// Expired before a decision (or before an executor took it).
    pub expired: u64,
    /// Still waiting for a decision.
    pub pending: u64,
    /// Approved, and the run succeeded.
    pub succeeded: u64,
    /// Approved, and the run failed or timed out.
    pub failed: u64,
    /// Approved, and nobody knows whether the run had its effect.
    pub unknown: u64,
    /// Anything else (a status this build does not know).
    pub other: u64,
}

impl Tally {
    /// Counts `(status, n)` pairs as the database groups them; an unknown status counts as
    /// `other`.
    pub fn of<'a>(counts: impl IntoIterator<Item = (&'a str, u64)>) -> Self {
        let mut t = Tally::default();
        for (status, n) in counts {
            t.total += n;
            let Some(status) = ProposalStatus::parse(status) else {
                t.other += n;
                continue;
            };
            t.add(status, n);
        }
        t
    }

    fn add(&mut self, status: ProposalStatus, n: u64) {
        use ProposalStatus as S;
        match status {
            S::Approved | S::Accepted => self.approved += n,
            S::Succeeded => {
                self.approved += n;
                self.succeeded += n;
            }
            S::Failed | S::TimedOut => {
                self.approved += n;
                self.failed += n;
            }
            S::OutcomeUnknown => {
                self.approved += n;
                self.unknown += n;
            }
            S::Rejected => self.rejected += n,
            S::Refused => self.refused += n,
            S::Expired => self.expired += n,
            S::Pending => self.pending += n,
            // Statuses added later (e.g. by the review desk) count as other until named here.
            #[allow(
                unreachable_patterns,
                reason = "unreachable only until the lifecycle grows a status"
            )]
            _ => self.other += n,
        }
    }

    /// Approved ones whose run has not ended yet (queued, leased, or waiting to be settled).
    pub fn running(&self) -> u64 {
        self.approved
            .saturating_sub(self.succeeded + self.failed + self.unknown)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outcomes_are_counted_under_what_reviewers_ask() {
        let t = Tally::of([
            ("approved", 2),
            ("accepted", 1),
            ("succeeded", 5),
            ("failed", 1),
            ("timed_out", 1),
            ("outcome_unknown", 1),
            ("rejected", 3),
            ("refused", 1),
            ("expired", 2),
            ("pending", 1),
            ("something_new", 4),
        ]);
        assert_eq!(t.total, 22);
        assert_eq!(t.approved, 11);
        assert_eq!(
            (t.succeeded, t.failed, t.unknown, t.running()),
            (5, 2, 1, 3)
        );
        assert_eq!(
            (t.rejected, t.refused, t.expired, t.pending, t.other),
            (3, 1, 2, 1, 4)
        );
    }

    #[test]
    fn nothing_before_is_all_zero() {
        assert_eq!(Tally::of([]), Tally::default());
    }
}
