//! The writer's running totals: how many of its groups' changes it made together, up front
//! ([`super::Upfront`]); and, once an operator's metrics ask for them, each group's times.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use super::upfront::Staged;
use crate::storage::commands::{StagedClaims, StagedSettles};
use crate::storage::proposals;

/// The writer's running totals since it started ([`crate::storage::Store::writer_stats`]).
#[derive(Debug, Default)]
pub struct WriterStats {
    inserted_together: AtomicU64,
    claimed_together: AtomicU64,
    settled_together: AtomicU64,
    settled_with_leases: AtomicU64,
    queue_statements: AtomicU64,
    appended_on_thread: AtomicU64,
    /// Where each group's times go ([`WriterStats::time_into`]).
    timers: OnceLock<Timers>,
}

/// The histograms a group's times are observed into: its whole time on the writer, and its
/// `commit` statement's (the durable flush).
#[derive(Debug)]
struct Timers {
    group: prometheus::Histogram,
    commit: prometheus::Histogram,
}

impl WriterStats {
    /// Proposal rows committed groups inserted up front, several to a statement
    /// ([`super::tx::Tx::staged_proposal`]); a group that started over inserted none so.
    pub fn inserted_together(&self) -> u64 {
        self.inserted_together.load(Ordering::Relaxed)
    }

    /// Leases committed groups asked for up front ([`super::tx::Tx::staged_claim`]), whether or not a
    /// command was there for them.
    pub fn claimed_together(&self) -> u64 {
        self.claimed_together.load(Ordering::Relaxed)
    }

    /// Success reports committed groups made up front ([`super::tx::Tx::staged_success`]), whether or not
    /// they held.
    pub fn settled_together(&self) -> u64 {
        self.settled_together.load(Ordering::Relaxed)
    }

    /// Of those, the reports made in the statement that also leased, one round trip for both
    /// (PostgreSQL: [`crate::storage::commands::settle_and_claim_staged`],
    /// [`crate::storage::commands::settle_then_claim_staged`]).
    pub fn settled_with_leases(&self) -> u64 {
        self.settled_with_leases.load(Ordering::Relaxed)
    }

    /// The statements committed groups ran up front for those leases and reports: one for each
    /// run of leases with one executor filter, and for the reports one on PostgreSQL (shared
    /// with the first run of leases, when there are both), two on SQLite (the commands, then
    /// their proposals; one when no action's proposal moves).
    pub fn queue_statements(&self) -> u64 {
        self.queue_statements.load(Ordering::Relaxed)
    }

    /// Audit events committed groups that only recorded events appended on the writer's own
    /// thread (SQLite: [`crate::storage::audit::append_and_commit`]).
    pub fn appended_on_thread(&self) -> u64 {
        self.appended_on_thread.load(Ordering::Relaxed)
    }

    /// From now on, observes each committed group's time on the writer into `group` and its
    /// `commit` statement's into `commit` (once: a second call keeps the first pair).
    pub fn time_into(&self, group: prometheus::Histogram, commit: prometheus::Histogram) {
        let _ = self.timers.set(Timers { group, commit });
    }

    /// A group committed: it took `group` on the writer, its `commit` statement `commit`.
    pub(super) fn timed(&self, group: Duration, commit: Option<Duration>) {
        let Some(timers) = self.timers.get() else {
            return;
        };
        timers.group.observe(group.as_secs_f64());
        if let Some(commit) = commit {
            timers.commit.observe(commit.as_secs_f64());
        }
    }

    /// Counts `events` appended on the writer's own thread.
    pub(super) fn appended(&self, events: usize) {
        (self.appended_on_thread).fetch_add(events as u64, Ordering::Relaxed);
    }

    pub(super) fn committed(&self, staged: &Staged) {
        let add = |counter: &AtomicU64, n: Option<usize>| {
            counter.fetch_add(n.unwrap_or(0) as u64, Ordering::Relaxed);
        };
        add(
            &self.inserted_together,
            staged.proposals.as_ref().map(proposals::Staged::count),
        );
        add(
            &self.claimed_together,
            staged.claims.as_ref().map(StagedClaims::count),
        );
        let settled = staged.settles.as_ref().map(StagedSettles::count);
        add(&self.settled_together, settled);
        if staged.together {
            add(&self.settled_with_leases, settled);
        }
        let statements = (staged.claims.as_ref()).map_or(0, StagedClaims::statements)
            + (staged.settles.as_ref()).map_or(0, StagedSettles::statements);
        add(&self.queue_statements, Some(statements));
    }
}
