//! Events waiting for their commit ([`PendingEvent`]) and how they become linked rows of the
//! hash chain: what both appends ([`super::append`], and on SQLite's writer thread
//! [`super::inline`]) share.

use serde_json::Value;
use time::OffsetDateTime;
use uuid::Uuid;

use crate::audit::chain::{self, ChainedEvent, Head};
use crate::audit::{Actor, AuditEvent, EventRow};
use crate::domain::contract::canonical::Uncanonical;
use crate::storage::error::Result;

/// An event recorded on a transaction, waiting for its commit. Its details' canonical text is
/// made where the event is built (a request's own task, when the service builds it before the
/// write), so the one writer only links and inserts it.
#[derive(Debug, Clone)]
pub struct PendingEvent {
    at: OffsetDateTime,
    actor: Actor,
    /// The row and the canonical text of its details; an event that has none fails the
    /// commit it was recorded in (it is never chained as something else).
    row: Result<(EventRow, String), Uncanonical>,
}

impl PendingEvent {
    /// This event's details if it is of `kind` and about `subject_type` `subject_id`.
    pub(crate) fn details_of(
        &self,
        kind: &str,
        subject_type: &str,
        subject_id: &str,
    ) -> Option<&Value> {
        let (row, _) = self.row.as_ref().ok()?;
        (row.kind == kind && row.subject_type == subject_type && row.subject_id == subject_id)
            .then_some(&row.details)
    }

    /// The proposal whose status this event records a change of, if it does.
    pub(crate) fn moved_proposal(&self) -> Option<Uuid> {
        let (row, _) = self.row.as_ref().ok()?;
        if row.subject_type != "proposal" || row.after_status.is_none() {
            return None;
        }
        if row.after_status == row.before_status {
            return None;
        }
        Uuid::parse_str(&row.subject_id).ok()
    }

    /// An event by `actor` at `at`.
    pub fn new(at: OffsetDateTime, actor: Actor, event: AuditEvent) -> Self {
        let row = event.into_row().and_then(|row| {
            let text = chain::canonical_text(&row.details)?;
            Ok((row, text))
        });
        Self {
            at: chain::trail_time(at),
            actor,
            row,
        }
    }
}

/// `events` as rows to link (each with a fresh id, not yet linked), with the proposal each
/// moves (if any) and its details' canonical text, in order.
pub(super) fn unlinked(events: Vec<PendingEvent>) -> Result<Unlinked> {
    let mut proposals = Vec::with_capacity(events.len());
    let mut rows = Vec::with_capacity(events.len());
    let mut texts = Vec::with_capacity(events.len());
    for e in events {
        proposals.push(e.moved_proposal());
        // Kept as the canonical text the hash covers, so verifying reads it as it is.
        let (row, text) = e.row?;
        rows.push(ChainedEvent {
            seq: 0,
            id: Uuid::now_v7(),
            at: e.at,
            actor_kind: e.actor.kind.as_str().to_owned(),
            actor: e.actor.name,
            kind: row.kind.to_owned(),
            subject_type: row.subject_type.to_owned(),
            subject_id: row.subject_id,
            before_status: row.before_status,
            after_status: row.after_status,
            details: row.details,
            hash: String::new(),
        });
        texts.push(text);
    }
    Ok((proposals, rows, texts))
}

/// What [`unlinked`] makes of events: the proposals they move, the rows, their texts.
/// The proposals whose status events moved (`proposals`, as [`unlinked`] answers them), each
/// once, in order.
pub(super) fn moved_once(proposals: &[Option<Uuid>]) -> Vec<Uuid> {
    let mut moved: Vec<Uuid> = proposals.iter().flatten().copied().collect();
    moved.sort_unstable();
    moved.dedup();
    moved
}

pub(super) type Unlinked = (Vec<Option<Uuid>>, Vec<ChainedEvent>, Vec<String>);

/// Links `rows` (with their canonical details, `texts`) one after another from `from`;
/// answers the head after the last.
pub(super) fn link_all(rows: &mut [ChainedEvent], texts: &[String], from: &Head) -> Head {
    let mut head = from.clone();
    for (row, text) in rows.iter_mut().zip(texts) {
        row.seq = head.seq + 1;
        row.hash = link(row, &head.hash, text);
        head = Head {
            seq: row.seq,
            hash: row.hash.clone(),
        };
    }
    head
}

/// The row's link in the chain. A build with the `bench-unchained` feature skips it (the rows
/// carry a constant instead), only to measure what the chain costs; such a build says so loudly
/// at start and its trail never verifies.
#[cfg(not(feature = "bench-unchained"))]
fn link(row: &ChainedEvent, previous: &str, canonical_details: &str) -> String {
    row.link_hash_over(previous, canonical_details)
}

#[cfg(feature = "bench-unchained")]
fn link(_row: &ChainedEvent, _previous: &str, _canonical_details: &str) -> String {
    "unchained".to_owned()
}

/// SQLite: moves the head to `$1`, `$2` if it is at `$3`, `$4` (with sqlx, and with rusqlite
/// on the writer's thread: [`super::inline`]).
pub(super) const SQLITE_MOVE_HEAD: &str =
    "update audit_chain set seq = $1, hash = $2 where id = 1 and seq = $3 and hash = $4";

/// Sets the head to `$1`, `$2` (both backends; on SQLite also on the writer's thread).
pub(super) const SET_HEAD: &str = "update audit_chain set seq = $1, hash = $2 where id = 1";
