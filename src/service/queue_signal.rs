//! The executor queue's wake-up signal: long-polling leases wait on it, and every change that
//! may queue something rings it. A leaf: [`super::services::Services`] holds one.

use tokio::sync::watch;

/// Wakes long-polling leases when the queue may hold something new. Counts changes; a waiter
/// subscribes before it looks, so a change between its look and its wait still wakes it.
pub struct QueueSignal {
    changes: watch::Sender<u64>,
}

impl Default for QueueSignal {
    fn default() -> Self {
        Self {
            changes: watch::Sender::new(0),
        }
    }
}

impl QueueSignal {
    /// Something was queued.
    pub fn wake(&self) {
        self.changes.send_modify(|n| *n = n.wrapping_add(1));
    }

    /// A receiver that sees every later [`QueueSignal::wake`].
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.changes.subscribe()
    }
}
