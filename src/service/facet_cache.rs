//! What the reviewer's queue keeps between page views ([`super::desk`]): the last grouped read
//! of the pending proposals, its generation, whether a refresh is under way, and what a page
//! view does about them ([`CacheState::plan`]). A leaf: [`super::services::Services`] holds
//! one, the desk reads and refreshes it.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::storage::queue::QueueGroup;

/// How long per-value counts are shown before they are read again, at least.
pub const FACETS_FRESH: Duration = Duration::from_secs(2);

/// And at least this many times as long as the last grouped read took, so refreshing the
/// counts takes at most a twentieth of a core however many proposals wait (at 160,000 pending
/// a read takes about 0.3 s: every 2 s, the page views sharing a core with it were the
/// slowest percent).
const FACETS_READ_SHARE: u32 = 20;

/// After a change here, a page view reads the counts again itself, so that they count what
/// its own reviewer just did, while the queue is this short or the read this quick. A longer
/// read is done in the background, no more often than [`FACETS_READ_SHARE`] allows, and the
/// page shows the counts it has. (PostgreSQL, 212,000 pending, one submission every 0.05 s:
/// every queue page waited for the read, p50 67 ms.)
const READ_NOW_PENDING: i64 = 5_000;
/// See [`READ_NOW_PENDING`].
const READ_NOW_TAKES: Duration = Duration::from_millis(10);

/// The last grouped read and whether a refresh is under way.
#[derive(Default)]
pub(crate) struct FacetCache {
    pub(super) state: Mutex<CacheState>,
}

/// A grouped read, kept.
pub(super) struct Kept {
    /// When it began and when it ended.
    began: Instant,
    ended: Instant,
    /// The generation as it began.
    seen: u64,
    /// How many proposals were pending.
    pending: i64,
    pub(super) groups: Arc<Vec<QueueGroup>>,
}

#[derive(Default)]
pub(super) struct CacheState {
    /// The newest read.
    pub(super) kept: Option<Kept>,
    /// Moves on with every change to the pending set this instance makes.
    pub(super) generation: u64,
    pub(super) refreshing: bool,
    /// How long the last grouped read took.
    took: Duration,
}

/// What a page view does for the counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Plan {
    /// Shows the counts kept.
    Kept,
    /// Shows the counts kept, and starts a read in the background.
    KeptWhileRefreshing,
    /// Reads them, and waits for them.
    ReadNow,
}

impl CacheState {
    /// What a page view at `now` does: shows the kept counts while they are fresh; refreshes
    /// stale ones in the background; reads them itself only when there are none, or after a
    /// change here when the read is short ([`READ_NOW_PENDING`]).
    pub(super) fn plan(&self, now: Instant) -> Plan {
        let Some(kept) = &self.kept else {
            return Plan::ReadNow;
        };
        let age = now.saturating_duration_since(kept.ended);
        let spacing = self.took * FACETS_READ_SHARE;
        let refresh = if self.refreshing {
            Plan::Kept
        } else {
            Plan::KeptWhileRefreshing
        };
        if kept.seen == self.generation {
            // Stale by age only: shown while a background read refreshes it.
            if age < FACETS_FRESH.max(spacing) {
                Plan::Kept
            } else {
                refresh
            }
        } else if kept.pending <= READ_NOW_PENDING || self.took <= READ_NOW_TAKES {
            Plan::ReadNow
        } else if age < spacing {
            Plan::Kept
        } else {
            refresh
        }
    }

    /// Keeps a read that began at `began`, at generation `seen`, and ends now, unless a read
    /// that began later is kept already. A change here while it ran leaves it kept at the
    /// generation it began with, so the next page view knows it may have missed the change.
    pub(super) fn keep(&mut self, began: Instant, seen: u64, groups: Arc<Vec<QueueGroup>>) {
        let ended = Instant::now();
        self.took = ended.saturating_duration_since(began);
        if self.kept.as_ref().is_some_and(|k| k.began > began) {
            return;
        }
        let pending = groups.iter().map(|g| g.n).sum();
        self.kept = Some(Kept {
            began,
            ended,
            seen,
            pending,
            groups,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn groups(pending: i64) -> Arc<Vec<QueueGroup>> {
        Arc::new(vec![QueueGroup {
            agent: "a".into(),
            domain: "d".into(),
            tool_name: "t".into(),
            risk_level: "low".into(),
            route: "ask".into(),
            gdpr: 0,
            hipaa: 0,
            n: pending,
        }])
    }

    /// A state whose last read of `pending` proposals took `took` and ended `ago` before the
    /// answer's `now`.
    fn kept(pending: i64, took: Duration, ago: Duration) -> (CacheState, Instant) {
        let mut state = CacheState::default();
        let began = Instant::now();
        state.keep(began, state.generation, groups(pending));
        state.took = took;
        let now = state.kept.as_ref().map(|k| k.ended).unwrap_or(began) + ago;
        (state, now)
    }

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn fresh_counts_are_shown_and_stale_ones_refreshed_behind_the_page() {
        assert_eq!(CacheState::default().plan(Instant::now()), Plan::ReadNow);
        let (state, now) = kept(100, MS, 500 * MS);
        assert_eq!(state.plan(now), Plan::Kept);
        let (mut state, now) = kept(100, MS, 2_500 * MS);
        assert_eq!(state.plan(now), Plan::KeptWhileRefreshing);
        state.refreshing = true;
        assert_eq!(state.plan(now), Plan::Kept, "one refresh at a time");
        // A 300 ms read is kept twenty times as long: 6 s.
        let (state, now) = kept(300_000, 300 * MS, 5_000 * MS);
        assert_eq!(state.plan(now), Plan::Kept);
    }

    #[test]
    fn after_a_change_here_a_short_queue_is_read_at_once_and_a_long_one_behind_the_page() {
        let (mut state, now) = kept(4_000, 30 * MS, MS);
        state.generation += 1;
        assert_eq!(state.plan(now), Plan::ReadNow, "a short queue");
        let (mut state, now) = kept(50_000, 8 * MS, MS);
        state.generation += 1;
        assert_eq!(state.plan(now), Plan::ReadNow, "a quick read");
        // 200,000 pending, a 100 ms read: at most one read every 2 s, never on the page.
        let (mut state, now) = kept(200_000, 100 * MS, 1_000 * MS);
        state.generation += 1;
        assert_eq!(state.plan(now), Plan::Kept);
        let later = now + 1_500 * MS;
        assert_eq!(state.plan(later), Plan::KeptWhileRefreshing);
        state.refreshing = true;
        assert_eq!(state.plan(later), Plan::Kept);
    }

    #[test]
    fn a_read_that_began_earlier_never_replaces_a_later_one() {
        let mut state = CacheState::default();
        let (early, late) = (Instant::now(), Instant::now() + MS);
        state.keep(late, 1, groups(2));
        state.keep(early, 0, groups(1));
        let kept = state.kept.as_ref().expect("kept");
        assert_eq!((kept.seen, kept.pending), (1, 2));
        state.keep(late + MS, 2, groups(3));
        assert_eq!(state.kept.as_ref().map(|k| k.pending), Some(3));
    }
}
