//! The policy in force on this instance: read without a lock by every decision, swapped in
//! place when another version is activated, and heard by whoever waits for a swap; and the
//! candidates in a shadow run here, with their worker's channel (`super::shadow` runs them).

use std::sync::atomic::AtomicU64;
use std::sync::{Arc, OnceLock};

use arc_swap::ArcSwap;
use tokio::sync::{Mutex, mpsc, watch};
use uuid::Uuid;

use crate::domain::policy::model::Policy;
use crate::domain::policy_change::backtest::Recorded;

/// The policy in force, and who follows it.
pub struct PolicyCell {
    current: ArcSwap<Policy>,
    /// Held while the stored active version is read and swapped in, so two followers never
    /// swap an older read over a newer one.
    pub(super) following: Mutex<()>,
    swaps: watch::Sender<u64>,
}

impl PolicyCell {
    /// `policy` in force.
    pub fn new(policy: Arc<Policy>) -> Self {
        Self {
            current: ArcSwap::new(policy),
            following: Mutex::new(()),
            swaps: watch::Sender::new(0),
        }
    }

    /// The policy in force now.
    pub fn load(&self) -> Arc<Policy> {
        self.current.load_full()
    }

    /// Puts `policy` in force and tells whoever waits.
    pub fn swap(&self, policy: Arc<Policy>) {
        self.current.store(policy);
        self.swaps.send_modify(|n| *n += 1);
    }

    /// Hears every swap from now on.
    pub fn swaps(&self) -> watch::Receiver<u64> {
        self.swaps.subscribe()
    }
}

/// A candidate in a shadow run.
pub(super) struct Candidate {
    pub(super) change_id: Uuid,
    pub(super) version: String,
    pub(super) policy: Arc<Policy>,
}

/// This instance's shadow runs and their worker.
pub struct Shadow {
    pub(super) candidates: ArcSwap<Vec<Arc<Candidate>>>,
    pub(super) sender: OnceLock<mpsc::Sender<Recorded>>,
    pub(super) dropped: AtomicU64,
    /// Decisions handed to the worker.
    pub(super) sent: AtomicU64,
    /// Decisions the worker has routed and stored.
    pub(super) done: watch::Sender<u64>,
}

impl Default for Shadow {
    fn default() -> Self {
        Self {
            candidates: ArcSwap::default(),
            sender: OnceLock::new(),
            dropped: AtomicU64::new(0),
            sent: AtomicU64::new(0),
            done: watch::Sender::new(0),
        }
    }
}
