//! What the queue's shared statements take and answer: a lease to take ([`LeaseAsk`]) and a
//! success report to settle ([`Success`]), owned so a write closure and the writer's group
//! can share them, and what they answer ([`Claimed`], [`SettledSuccess`]).

use serde_json::Value;
use time::OffsetDateTime;
use uuid::Uuid;

use crate::domain::lifecycle::ProposalStatus;
use crate::domain::record::CommandRecord;

/// A command just leased.
#[derive(Debug)]
pub struct Claimed {
    /// The command, as leased.
    pub command: CommandRecord,
    /// What its chained `command.queued` event says was approved.
    pub approval: Approval,
}

/// What the trail holds of a command's approval, as its `command.queued` event recorded it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Approval {
    /// The sha256 of the spec as approved.
    Recorded(String),
    /// Queued before events recorded the spec's hash (databases from before the hash).
    Unhashed,
    /// No `command.queued` event committed (queued earlier in the same group, or never).
    Missing,
}

impl Approval {
    /// From the claim's column: the hash, `''` for an event without one, null for no event.
    pub(super) fn of(column: Option<String>) -> Self {
        match column {
            None => Self::Missing,
            Some(h) if h.is_empty() => Self::Unhashed,
            Some(h) => Self::Recorded(h),
        }
    }
}

/// A lease to take: what one executor's request asks, owned so a write closure and the
/// writer's group ([`super::staged::claim_staged`]) can share it.
#[derive(Debug, Clone)]
pub struct LeaseAsk {
    /// Executor name.
    pub executor: String,
    /// The executor token's tool scope (globs); `None` for a token without one.
    pub scope: Option<Vec<String>>,
    /// Tools the executor asks for this time (globs); `None` for any it may run.
    pub wanted: Option<Vec<String>>,
    /// sha256 hex of the lease token handed to the executor.
    pub lease_token_hash: String,
    /// Now.
    pub now: OffsetDateTime,
    /// Lease end.
    pub expires_at: OffsetDateTime,
}

impl LeaseAsk {
    /// Whether `other` asks for the same commands (same executor, scope and tools), so one
    /// statement may claim for both.
    pub(super) fn same_filter(&self, other: &Self) -> bool {
        self.executor == other.executor && self.scope == other.scope && self.wanted == other.wanted
    }
}

/// A success report to settle: owned, so a write closure and the writer's group
/// ([`super::staged::settle_staged`]) can share it.
#[derive(Debug, Clone)]
pub struct Success {
    /// The command.
    pub id: Uuid,
    /// The executor's `result`.
    pub result: Value,
    /// The executor reporting.
    pub executor: String,
    /// sha256 hex of the lease token it presented.
    pub lease_token_hash: String,
    /// Now.
    pub now: OffsetDateTime,
}

/// What a report's statement saw of the command's proposal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProposalSeen {
    /// Its status, read with the command.
    Read(ProposalStatus),
    /// The statement also moved it to the command's outcome, from this status.
    Moved(ProposalStatus),
}

/// What a settled success report answers: the command and what was seen of its proposal.
pub type SettledSuccess = (CommandRecord, Option<ProposalSeen>);

#[cfg(test)]
mod tests {
    use super::Approval;

    #[test]
    fn an_approval_is_a_hash_an_old_event_without_one_or_nothing() {
        assert_eq!(
            Approval::of(Some("ab12".into())),
            Approval::Recorded("ab12".into())
        );
        assert_eq!(Approval::of(Some(String::new())), Approval::Unhashed);
        assert_eq!(Approval::of(None), Approval::Missing);
    }
}
