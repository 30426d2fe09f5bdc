//! One row of the trail as stored and exported ([`ChainedEvent`]), and the precision its time
//! is kept to. A leaf: the chain and its stored-row reader both name it; how a row is hashed
//! lives in the chain.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use time::OffsetDateTime;
use uuid::Uuid;

/// One row of the trail, as stored and as exported (`events.jsonl`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChainedEvent {
    /// Position: 1, 2, 3, … without gaps.
    pub seq: i64,
    /// Unique id.
    pub id: Uuid,
    /// When (UTC, microseconds).
    #[serde(with = "time::serde::rfc3339")]
    pub at: OffsetDateTime,
    /// `user`, `agent`, `executor` or `system`.
    pub actor_kind: String,
    /// Who.
    pub actor: String,
    /// What, e.g. `proposal.approved`.
    pub kind: String,
    /// What kind of thing it happened to.
    pub subject_type: String,
    /// Its id.
    pub subject_id: String,
    /// Status before.
    pub before_status: Option<String>,
    /// Status after.
    pub after_status: Option<String>,
    /// Audit-safe payload.
    pub details: Value,
    /// This row's link in the chain (hex sha256).
    pub hash: String,
}

/// Times in the trail are kept to the microsecond, the precision both databases store.
pub fn trail_time(t: OffsetDateTime) -> OffsetDateTime {
    let t = t.to_offset(time::UtcOffset::UTC);
    t.replace_nanosecond(t.nanosecond() / 1_000 * 1_000)
        .unwrap_or(t)
}
