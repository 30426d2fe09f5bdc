//! What a writer may do up front for a group's changes: a change's first statement
//! ([`Upfront`]), run together with the same statement of the others, and what came of it
//! ([`Staged`]), which each change then takes.

use std::sync::Arc;

use crate::storage::commands::{LeaseAsk, StagedClaims, StagedSettles, Success};
use crate::storage::proposals;

/// A change's first statement, which the writer may run for all the changes of a group that
/// start so, together (a few statements for all of them), before it runs them
/// ([`crate::storage::Store::write_staged`]).
///
/// A change that starts so must read and write only by key (and lease through the index of
/// queued commands in queue order): a group of such changes is planned generically on
/// PostgreSQL ([`super::Writer::begin`]), and a generic plan for a range or a scan (an expiry sweep's)
/// can read a whole table.
pub enum Upfront {
    /// It inserts this proposal row first ([`super::tx::Tx::staged_proposal`]).
    Proposal(Arc<proposals::NewProposal>),
    /// It leases a command first ([`super::tx::Tx::staged_claim`]).
    Claim(Arc<LeaseAsk>),
    /// It settles a success report first ([`super::tx::Tx::staged_success`]).
    Success(Arc<Success>),
    /// It settles a success report first and, only if that settles, leases the next command
    /// ([`super::tx::Tx::staged_success`], then [`super::tx::Tx::staged_claim`]): an executor's report that asks
    /// for its next command in the same request. The writer leases for it only once the
    /// group's reports are settled, and only if this one was.
    SuccessThenClaim(Arc<Success>, Arc<LeaseAsk>),
}

impl Upfront {
    pub(super) fn proposal(&self) -> Option<&Arc<proposals::NewProposal>> {
        match self {
            Upfront::Proposal(row) => Some(row),
            _ => None,
        }
    }

    pub(super) fn claim(&self) -> Option<&Arc<LeaseAsk>> {
        match self {
            Upfront::Claim(ask) => Some(ask),
            _ => None,
        }
    }

    pub(super) fn success(&self) -> Option<&Arc<Success>> {
        match self {
            Upfront::Success(report) | Upfront::SuccessThenClaim(report, _) => Some(report),
            _ => None,
        }
    }

    /// A lease to take only if its report settles.
    pub(super) fn claim_after(&self) -> Option<(&Arc<Success>, &Arc<LeaseAsk>)> {
        match self {
            Upfront::SuccessThenClaim(report, ask) => Some((report, ask)),
            _ => None,
        }
    }
}

/// What a writer did for its group's changes before running them ([`super::staging::stage`]).
#[derive(Default)]
pub(super) struct Staged {
    /// The proposal rows it inserted.
    pub(super) proposals: Option<proposals::Staged>,
    /// The leases it took.
    pub(super) claims: Option<StagedClaims>,
    /// The success reports it settled.
    pub(super) settles: Option<StagedSettles>,
    /// Whether it settled them in a statement that (also) leased, whether or not it leased
    /// anything (PostgreSQL).
    pub(super) together: bool,
}

impl Staged {
    /// Whether a lease or a settle made up front was not taken by its change.
    pub(super) fn left_over(&self) -> bool {
        (self.claims.as_ref()).is_some_and(StagedClaims::left_over)
            || (self.settles.as_ref()).is_some_and(StagedSettles::left_over)
    }

    /// Whether the writer made `upfront` for its change (and the change has not yet run).
    pub(super) fn holds(&self, upfront: &Upfront) -> bool {
        match upfront {
            Upfront::Proposal(row) => {
                (self.proposals.as_ref()).is_some_and(|staged| staged.outcome(row).is_some())
            }
            Upfront::Claim(ask) => (self.claims.as_ref()).is_some_and(|staged| staged.holds(ask)),
            Upfront::Success(report) | Upfront::SuccessThenClaim(report, _) => {
                (self.settles.as_ref()).is_some_and(|staged| staged.holds(report))
            }
        }
    }
}
