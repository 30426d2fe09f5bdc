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
mod row;
pub mod safe;
pub mod trail;

pub use events::*;
pub use row::EventRow;

use crate::domain::principal::{ActorKind, Principal};

/// A time as the trail writes it (RFC 3339), if it has that form.
pub fn rfc3339(t: time::OffsetDateTime) -> Option<String> {
    t.format(&time::format_description::well_known::Rfc3339)
        .ok()
}

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
    /// Whoever `principal` is, as the trail names them (the operator is `system:cli`).
    pub fn of(principal: &Principal) -> Self {
        let kind = match principal {
            Principal::Person(_) => ActorKind::User,
            Principal::Agent(_) => ActorKind::Agent,
            Principal::Executor(_) => ActorKind::Executor,
            Principal::Operator | Principal::System(_) => ActorKind::System,
        };
        Self::new(kind, principal.name())
    }
    /// Any kind.
    pub fn new(kind: ActorKind, name: &str) -> Self {
        Self {
            kind,
            name: name.to_owned(),
        }
    }
}
