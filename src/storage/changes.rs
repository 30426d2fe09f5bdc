//! What committed, for those waiting on it: agents waiting for a proposal's status to move
//! (`GET /api/v1/proposals/{id}?wait=`, its event stream, MCP's `wait_for_decision`).
//!
//! Every status change of a proposal is recorded as an audit event on the proposal with an
//! `after_status` ([`crate::audit::EventRow`]), in the transaction that makes it. The writer
//! therefore knows, at each commit, which proposals moved, and wakes their waiters once the
//! commit is durable ([`Changes::proposals_changed`]). On PostgreSQL the same commit sends
//! `NOTIFY countersign_proposal, '<id>'`, so waiters on other instances sharing the database
//! wake too (each instance's listener calls [`Changes::proposals_changed`]).
//!
//! The webhook dispatcher waits here too: a commit that queued deliveries wakes it
//! ([`Changes::deliveries_queued`]); and whoever follows deliveries (a test stepping them)
//! hears each round of recorded attempts ([`Changes::attempts_recorded`]). So does the
//! reviewers' notifier: the writer queues a notification per configured channel
//! ([`Changes::set_notify_channels`]) for each change that needs a person, and wakes it.
//!
//! A waiter costs one map entry per watched proposal plus a receiver: thousands of agents
//! waiting cost almost nothing, and a decision wakes only the waiters of its proposal.
//!
//! Whoever follows every proposal at once (the agents' event streams' one watcher per instance,
//! `service::agent_events`) hears each moved id on a bounded broadcast ([`Changes::moves`]),
//! and [`Move::Gap`] when this instance may have missed moves; with nobody subscribed, a commit
//! sends nothing there.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use tokio::sync::{Notify, broadcast, watch};
use uuid::Uuid;

/// The channel other instances hear proposal changes on (PostgreSQL).
pub const PROPOSAL_CHANNEL: &str = "countersign_proposal";

/// The channel other instances hear revocations of API tokens on (PostgreSQL).
pub const CREDENTIALS_CHANNEL: &str = "countersign_credentials";

/// How many moves [`Changes::moves`] holds for a subscriber that has not read them yet; past
/// it the subscriber hears it lagged.
pub const MOVES_BACKLOG: usize = 4096;

/// What a subscriber of [`Changes::moves`] hears.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Move {
    /// This proposal's status moved (committed).
    Proposal(Uuid),
    /// This instance may have missed moves (its PostgreSQL listener reconnected).
    Gap,
}

/// Waiters, by the proposal they wait on.
pub struct Changes {
    waiting: Mutex<HashMap<Uuid, watch::Sender<u64>>>,
    moves: broadcast::Sender<Move>,
    deliveries: Notify,
    attempts: watch::Sender<u64>,
    notify_channels: OnceLock<Vec<&'static str>>,
    notifications: Notify,
    sends: watch::Sender<u64>,
}

impl Default for Changes {
    fn default() -> Self {
        Self {
            waiting: Mutex::default(),
            moves: broadcast::Sender::new(MOVES_BACKLOG),
            deliveries: Notify::new(),
            attempts: watch::Sender::new(0),
            notify_channels: OnceLock::new(),
            notifications: Notify::new(),
            sends: watch::Sender::new(0),
        }
    }
}

impl Changes {
    /// Starts watching `id`: a change committed after this call wakes [`Watching::changed`].
    /// Watch first, then read the proposal: a change between the read and the wait is not
    /// missed.
    pub fn watch(self: &Arc<Self>, id: Uuid) -> Watching {
        let mut waiting = self.waiting.lock().unwrap_or_else(PoisonError::into_inner);
        let receiver = waiting
            .entry(id)
            .or_insert_with(|| watch::Sender::new(0))
            .subscribe();
        Watching {
            id,
            receiver: Some(receiver),
            changes: Arc::clone(self),
        }
    }

    /// The proposals `ids` changed status (committed): wakes their waiters, and tells the
    /// subscribers of [`Changes::moves`], if any.
    pub fn proposals_changed(&self, ids: impl IntoIterator<Item = Uuid>) {
        let told = self.moves.receiver_count() > 0;
        let waiting = self.waiting.lock().unwrap_or_else(PoisonError::into_inner);
        for id in ids {
            if let Some(sender) = waiting.get(&id) {
                sender.send_modify(|n| *n = n.wrapping_add(1));
            }
            if told {
                // Fails only when the last subscriber left meanwhile: nobody to tell.
                let _ = self.moves.send(Move::Proposal(id));
            }
        }
    }

    /// Every proposal move from now on, as it commits (also other instances', on PostgreSQL),
    /// and [`Move::Gap`] when some may have been missed. Holds at most [`MOVES_BACKLOG`] unread.
    pub fn moves(&self) -> broadcast::Receiver<Move> {
        self.moves.subscribe()
    }

    /// Wakes every waiter, as if each proposal had changed: after this instance may have
    /// missed other instances' changes (its PostgreSQL listener reconnected). Each waiter reads
    /// its proposal again and sleeps on if nothing moved.
    pub fn wake_all(&self) {
        let waiting = self.waiting.lock().unwrap_or_else(PoisonError::into_inner);
        for sender in waiting.values() {
            sender.send_modify(|n| *n = n.wrapping_add(1));
        }
        if self.moves.receiver_count() > 0 {
            let _ = self.moves.send(Move::Gap);
        }
    }

    /// A commit queued webhook deliveries: wakes the dispatcher.
    pub fn deliveries_queued(&self) {
        self.deliveries.notify_one();
    }

    /// Resolves after the next [`Changes::deliveries_queued`] (or at once, if one came since
    /// the last wait).
    pub async fn deliveries(&self) {
        self.deliveries.notified().await;
    }

    /// `n` webhook attempts were recorded (committed).
    pub fn attempts_recorded(&self, n: usize) {
        let n = u64::try_from(n).unwrap_or(u64::MAX);
        self.attempts
            .send_modify(|total| *total = total.saturating_add(n));
    }

    /// How many webhook attempts this instance has recorded, as it grows.
    pub fn webhook_attempts(&self) -> watch::Receiver<u64> {
        self.attempts.subscribe()
    }

    /// The reviewers' channels the operator configured (once, at start).
    pub fn set_notify_channels(&self, channels: Vec<&'static str>) {
        if self.notify_channels.set(channels).is_err() {
            tracing::warn!("notification channels were already set");
        }
    }

    /// The configured reviewers' channels (none until set).
    pub fn notify_channels(&self) -> &[&'static str] {
        self.notify_channels.get().map_or(&[], Vec::as_slice)
    }

    /// A commit queued notifications: wakes the notifier.
    pub fn notifications_queued(&self) {
        self.notifications.notify_one();
    }

    /// Resolves after the next [`Changes::notifications_queued`].
    pub async fn notifications(&self) {
        self.notifications.notified().await;
    }

    /// `n` notification sends were settled (committed).
    pub fn sends_settled(&self, n: usize) {
        let n = u64::try_from(n).unwrap_or(u64::MAX);
        self.sends
            .send_modify(|total| *total = total.saturating_add(n));
    }

    /// How many notification sends this instance has settled, as it grows.
    pub fn notification_sends(&self) -> watch::Receiver<u64> {
        self.sends.subscribe()
    }

    /// How many proposals have someone waiting on them.
    pub fn watched(&self) -> usize {
        self.waiting
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }
}

/// One waiter on one proposal; stops watching when dropped.
pub struct Watching {
    id: Uuid,
    receiver: Option<watch::Receiver<u64>>,
    changes: Arc<Changes>,
}

impl Watching {
    /// Resolves when the proposal changes after [`Changes::watch`] (or after the last call).
    pub async fn changed(&mut self) {
        match self.receiver.as_mut() {
            Some(r) => {
                if r.changed().await.is_err() {
                    // The sender is kept while a receiver exists; never reached.
                    std::future::pending::<()>().await;
                }
            }
            None => std::future::pending::<()>().await,
        }
    }
}

impl Drop for Watching {
    fn drop(&mut self) {
        let mut waiting = self
            .changes
            .waiting
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        drop(self.receiver.take());
        if waiting
            .get(&self.id)
            .is_some_and(|s| s.receiver_count() == 0)
        {
            waiting.remove(&self.id);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_change_wakes_only_its_waiters_and_a_dropped_waiter_leaves_nothing() {
        let changes = Arc::new(Changes::default());
        let (a, b) = (Uuid::now_v7(), Uuid::now_v7());
        let mut on_a = changes.watch(a);
        let on_b = changes.watch(b);
        assert_eq!(changes.watched(), 2);
        changes.proposals_changed([a]);
        tokio::time::timeout(std::time::Duration::from_secs(5), on_a.changed())
            .await
            .expect("a woke");
        let b_changed = on_b.receiver.as_ref().map(|r| r.has_changed().ok());
        assert_eq!(b_changed, Some(Some(false)), "b must not wake for a");
        drop(on_a);
        drop(on_b);
        assert_eq!(changes.watched(), 0);
    }

    #[tokio::test]
    async fn moves_reach_subscribers_only_and_a_gap_is_told() {
        let changes = Arc::new(Changes::default());
        let (a, b) = (Uuid::now_v7(), Uuid::now_v7());
        changes.proposals_changed([a]);
        let mut moves = changes.moves();
        changes.proposals_changed([b]);
        changes.wake_all();
        assert_eq!(
            moves.try_recv().ok(),
            Some(Move::Proposal(b)),
            "not a, sent before"
        );
        assert_eq!(moves.try_recv().ok(), Some(Move::Gap));
        assert!(moves.try_recv().is_err());
    }

    #[tokio::test]
    async fn a_change_between_watch_and_wait_is_not_missed() {
        let changes = Arc::new(Changes::default());
        let id = Uuid::now_v7();
        let mut w = changes.watch(id);
        changes.proposals_changed([id]);
        tokio::time::timeout(std::time::Duration::from_secs(5), w.changed())
            .await
            .expect("woke");
    }
}
