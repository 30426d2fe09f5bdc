//! What the reviewer's queue keeps between page views ([`super::desk`]): the last grouped read
//! of the pending proposals, its generation, and whether a refresh is under way. A leaf:
//! [`super::services::Services`] holds one, the desk reads and refreshes it.

use std::sync::{Arc, Mutex};
use std::time::Instant;

use crate::storage::queue::QueueGroup;

/// The last grouped read and whether a refresh is under way.
#[derive(Default)]
pub(crate) struct FacetCache {
    pub(super) state: Mutex<CacheState>,
}

#[derive(Default)]
pub(super) struct CacheState {
    /// When it was read, at which generation, and what.
    pub(super) groups: Option<(Instant, u64, Arc<Vec<QueueGroup>>)>,
    /// Moves on with every change to the pending set this instance makes.
    pub(super) generation: u64,
    pub(super) refreshing: bool,
    /// How long the last grouped read took.
    pub(super) took: std::time::Duration,
}
