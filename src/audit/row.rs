//! An audit event as a row of the trail ([`EventRow`]), and how a payload becomes the row's
//! details. A leaf: the events name it, it names none of them.

use serde::Serialize;
use serde_json::Value;

use crate::domain::contract::canonical::Uncanonical;

/// An event as a row of the trail, without its position, time and actor.
#[derive(Debug, Clone, PartialEq)]
pub struct EventRow {
    /// What happened, e.g. `proposal.approved`.
    pub kind: &'static str,
    /// What kind of thing it happened to.
    pub subject_type: &'static str,
    /// Its id.
    pub subject_id: String,
    /// Status before.
    pub before_status: Option<String>,
    /// Status after.
    pub after_status: Option<String>,
    /// The payload.
    pub details: Value,
}

/// Serialises a payload struct into the row's details (its subject fields are `serde(skip)`);
/// a payload that does not serialise is an error, never a `null` the chain would vouch for.
pub(super) fn details<T: Serialize>(payload: &T) -> Result<Value, Uncanonical> {
    Ok(serde_json::to_value(payload)?)
}
