//! The audit trail's vocabulary: every kind of event Countersign records, one variant of
//! [`AuditEvent`] each with its payload as a struct, and [`AuditEvent::into_row`], the one
//! place an event becomes a row (kind, subject, status change, details). Services record
//! events on their write transaction; storage appends them with the change they describe.
//!
//! Payloads are audit-safe by construction ([`safe`]): parameter keys with keyed hashes of
//! their values, free text as length and hash, bounded names and lists; never parameter
//! values, free text, secrets or tokens.

pub mod bundle;
pub mod chain;
pub mod checkpoint;
mod events;
pub mod safe;

pub use events::*;

use serde::Serialize;
use serde_json::Value;

use crate::domain::principal::ActorKind;

/// Who did something.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Actor {
    /// A person, an agent, an executor or the system.
    pub kind: ActorKind,
    /// Their name (for the system: which part of it, e.g. `expiry`).
    pub name: String,
}

impl Actor {
    /// A signed-in person.
    pub fn user(name: &str) -> Self {
        Self::new(ActorKind::User, name)
    }
    /// An agent, by its token.
    pub fn agent(name: &str) -> Self {
        Self::new(ActorKind::Agent, name)
    }
    /// An executor, by its token.
    pub fn executor(name: &str) -> Self {
        Self::new(ActorKind::Executor, name)
    }
    /// Countersign itself (`policy`, `expiry`, `bootstrap`, `cli`).
    pub fn system(name: &str) -> Self {
        Self::new(ActorKind::System, name)
    }
    /// Any kind.
    pub fn new(kind: ActorKind, name: &str) -> Self {
        Self {
            kind,
            name: name.to_owned(),
        }
    }
}

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

/// Serialises a payload struct into the row's details (its subject fields are `serde(skip)`).
fn details<T: Serialize>(payload: &T) -> Value {
    // Payloads are plain structs of strings, numbers and ids: serialising cannot fail.
    serde_json::to_value(payload).unwrap_or(Value::Null)
}
