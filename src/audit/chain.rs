//! The hash chain over the audit trail. Each row stores
//! `hash = sha256(FORMAT ‖ seq ‖ previous hash ‖ canonical payload)`, where the canonical
//! payload is the RFC 8785 (JCS) form of everything the row says (id, time, actor, kind,
//! subject, status change, details). Changing, deleting, inserting or reordering a row breaks
//! every hash after it; [`Verifier`] walks a trail and names the first row that does not hold.
//!
//! Pure: no IO. Storage links rows as it appends them; `countersign audit verify` feeds rows
//! from a database or an export bundle through a [`Verifier`].
//!
//! ## Verifying stored rows quickly
//!
//! A database row is read as a [`StoredRow`]: `details` as the JSON text the database holds,
//! plus the facet columns, which the hash does not cover but which must copy their `details`
//! keys. [`Verifier::push_stored`] first hashes the row with that text in place of the
//! canonical form of `details`. The text is checked to be one whole JSON value first, so the
//! payload it builds parses back, member by member, into the row's own fields: if its hash
//! matches, the row holds exactly what was hashed. Both databases keep `details` as its
//! canonical text (PostgreSQL in a `json` column, kept as written), so this is the common case
//! and costs one sha256; otherwise (PostgreSQL rows written while the column was `jsonb`) the
//! text is parsed into a value borrowed from it ([`jcs::write_text`]) and canonicalised.
//!
//! Canonical JSON is written by `jcs` (RFC 8785, byte for byte what `serde_json_canonicalizer`
//! writes, which the tests hold it to, at a fifteenth of the cost); the writer's
//! [`ChainedEvent::canonical_payload`] and the verifier share it, and a test pins the format to
//! a hash computed outside Rust.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

pub use crate::domain::contract::canonical::Uncanonical;

mod event;
mod jcs;
mod stored;

pub use event::{ChainedEvent, trail_time};
pub use stored::{FACETS, RowRef, StoredRow, facet_of};
use stored::{FacetKeys, first_facet_mismatch, write_payload};

/// The chain format; part of every hash, so a future format cannot be confused with this one.
pub const FORMAT: &str = "countersign-audit/1";

/// The "previous hash" of the first row.
pub const GENESIS: &str = "0000000000000000000000000000000000000000000000000000000000000000";

/// The canonical (RFC 8785) text of an event's details, as storage keeps it and its hash
/// covers; an error for a number RFC 8785 cannot print (which a `Value` cannot hold unless
/// serde_json's `arbitrary_precision` is on), never a default in its place.
pub fn canonical_text(details: &Value) -> Result<String, Uncanonical> {
    let mut text = Vec::with_capacity(512);
    jcs::write_value(&mut text, details)?;
    String::from_utf8(text).map_err(|e| Uncanonical(e.to_string()))
}

impl ChainedEvent {
    /// The canonical (RFC 8785) payload this row's hash covers: the JSON object of everything
    /// the row says (`id`, `at`, `actor_kind`, `actor`, `kind`, `subject_type`, `subject_id`,
    /// `before_status`, `after_status`, `details`), canonicalised; an error if its details
    /// have no canonical form.
    pub fn canonical_payload(&self) -> Result<String, Uncanonical> {
        let details = self.canonical_details()?;
        String::from_utf8(self.canonical_payload_over(details.as_bytes()))
            .map_err(|e| Uncanonical(e.to_string()))
    }

    /// The canonical (RFC 8785) text of `details`: what storage keeps, so that a verifier
    /// reads the bytes the hash covers as they are ([`canonical_text`]).
    pub fn canonical_details(&self) -> Result<String, Uncanonical> {
        canonical_text(&self.details)
    }

    /// The hash this row must carry after `previous`, its details' canonical text given.
    pub fn link_hash_over(&self, previous: &str, canonical_details: &str) -> String {
        let payload = self.canonical_payload_over(canonical_details.as_bytes());
        hex::encode(link_digest(self.seq, previous, &payload))
    }

    fn canonical_payload_over(&self, details: &[u8]) -> Vec<u8> {
        let row = RowRef {
            seq: self.seq,
            id: self.id,
            at: self.at,
            actor_kind: &self.actor_kind,
            actor: &self.actor,
            kind: &self.kind,
            subject_type: &self.subject_type,
            subject_id: &self.subject_id,
            before_status: self.before_status.as_deref(),
            after_status: self.after_status.as_deref(),
            details: "",
            hash: "",
            facets: [None; 5],
        };
        let mut out = Vec::with_capacity(details.len() + 256);
        write_payload(&mut out, &row, details);
        out
    }

    /// The hash this row must carry after `previous`; an error if its details have no
    /// canonical form (such a row can neither be linked nor verify).
    pub fn link_hash(&self, previous: &str) -> Result<String, Uncanonical> {
        Ok(self.link_hash_over(previous, &self.canonical_details()?))
    }
}

/// `sha256(FORMAT ‖ seq ‖ previous ‖ payload)`, hex; fields separated by newlines.
pub fn link(seq: i64, previous: &str, canonical_payload: &str) -> String {
    hex::encode(link_digest(seq, previous, canonical_payload.as_bytes()))
}

/// The end of the chain: the last row's position and hash.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Head {
    /// Last seq (0 for an empty trail).
    pub seq: i64,
    /// Last hash ([`GENESIS`] for an empty trail).
    pub hash: String,
}

impl Head {
    /// The head of an empty trail.
    pub fn genesis() -> Self {
        Self {
            seq: 0,
            hash: GENESIS.to_owned(),
        }
    }
}

/// What is wrong at the first bad row.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ChainError {
    /// A row is missing, or rows are out of order.
    #[error("seq {found}: expected seq {expected} (a row is missing, inserted or out of order)")]
    Gap {
        /// The seq that should come next.
        expected: i64,
        /// The seq found.
        found: i64,
    },
    /// The row's content or its link does not match its hash.
    #[error("seq {seq}: hash mismatch (the row was changed, or the chain was rewritten before it)")]
    HashMismatch {
        /// The row.
        seq: i64,
    },
    /// A facet column is not the copy of its `details` key it must be (or, for an agent's own
    /// event without an `agent` key, of its actor).
    #[error("seq {seq}: facet `{facet}` does not match the row's details")]
    Facet {
        /// The row.
        seq: i64,
        /// The facet column, one of [`FACETS`].
        facet: &'static str,
    },
    /// A kept or signed checkpoint disagrees with the trail.
    #[error("seq {seq}: differs from the checkpoint (the chain was recomputed after an edit)")]
    CheckpointMismatch {
        /// The checkpoint's seq.
        seq: i64,
    },
    /// The trail ends before a kept checkpoint.
    #[error(
        "the trail ends at seq {head} but a checkpoint covers seq {checkpoint}: rows were removed from the end"
    )]
    Truncated {
        /// Last seq in the trail.
        head: i64,
        /// The checkpoint's seq.
        checkpoint: i64,
    },
}

impl ChainError {
    /// The first bad sequence number.
    pub fn seq(&self) -> i64 {
        match self {
            ChainError::Gap { expected, .. } => *expected,
            ChainError::HashMismatch { seq }
            | ChainError::Facet { seq, .. }
            | ChainError::CheckpointMismatch { seq } => *seq,
            ChainError::Truncated { head, .. } => head + 1,
        }
    }
}

/// Walks a trail row by row, in seq order, checking every link.
#[derive(Debug)]
pub struct Verifier {
    head: Head,
    /// Hashes that must appear at given seqs (from checkpoints), sorted by seq.
    expected: Vec<Head>,
    /// The next checkpoint in `expected` not yet passed.
    next_checkpoint: usize,
    /// Scratch space for a row's canonical payload.
    payload: Vec<u8>,
    /// Scratch space for a row's canonical details (when they are not stored canonical).
    canonical: Vec<u8>,
}

impl Verifier {
    /// A verifier from the start of the trail, checking the given checkpoint heads on the way.
    pub fn new(mut checkpoints: Vec<Head>) -> Self {
        checkpoints.sort_by_key(|h| h.seq);
        Self {
            head: Head::genesis(),
            expected: checkpoints,
            next_checkpoint: 0,
            payload: Vec::with_capacity(1024),
            canonical: Vec::new(),
        }
    }

    /// A verifier that starts after `head` (a bundle's range, or a trail whose first rows
    /// predate the chain).
    pub fn resume(head: Head, checkpoints: Vec<Head>) -> Self {
        let mut v = Self::new(checkpoints);
        v.head = head;
        v
    }

    /// Checks the next row.
    pub fn push(&mut self, row: &ChainedEvent) -> Result<(), ChainError> {
        self.check_seq(row.seq)?;
        if row.link_hash(&self.head.hash).as_ref() != Ok(&row.hash) {
            return Err(ChainError::HashMismatch { seq: row.seq });
        }
        self.advance(row.seq, &row.hash)
    }

    /// Checks the next row as the database holds it: its link, and its facet columns.
    pub fn push_stored(&mut self, row: &RowRef<'_>) -> Result<(), ChainError> {
        self.check_seq(row.seq)?;
        let bad = ChainError::HashMismatch { seq: row.seq };
        // Text with `": ` is not canonical (PostgreSQL prints `jsonb` so): straight to the slow
        // path. Either path is sound on any text; this only saves a wasted hash.
        let stored_canonical = !row.details.contains("\": ");
        let keys = stored_canonical
            .then(|| serde_json::from_str::<FacetKeys<'_>>(row.details))
            .and_then(Result::ok);
        let facet = match keys {
            // One whole JSON object: try it as its own canonical form.
            Some(keys) if self.links(row, row.details.as_bytes()) => keys.first_mismatch(row),
            _ => {
                let mut canonical = std::mem::take(&mut self.canonical);
                canonical.clear();
                let written = jcs::write_text(&mut canonical, row.details);
                let links = written.is_ok() && self.links(row, &canonical);
                self.canonical = canonical;
                match written {
                    Ok(details) if links => first_facet_mismatch(&details, row),
                    _ => return Err(bad),
                }
            }
        };
        if let Some(facet) = facet {
            return Err(ChainError::Facet {
                seq: row.seq,
                facet,
            });
        }
        self.advance(row.seq, row.hash)
    }

    /// Whether `row`, with `details` standing for its canonical details, links to the head.
    fn links(&mut self, row: &RowRef<'_>, details: &[u8]) -> bool {
        write_payload(&mut self.payload, row, details);
        let digest = link_digest(row.seq, &self.head.hash, &self.payload);
        let mut hex = [0u8; 64];
        hex::encode_to_slice(digest, &mut hex).is_ok() && hex.as_slice() == row.hash.as_bytes()
    }

    fn check_seq(&self, seq: i64) -> Result<(), ChainError> {
        let expected = self.head.seq + 1;
        if seq != expected {
            return Err(ChainError::Gap {
                expected,
                found: seq,
            });
        }
        Ok(())
    }

    /// Moves the head to a row that linked, and checks the checkpoints it passes.
    fn advance(&mut self, seq: i64, hash: &str) -> Result<(), ChainError> {
        self.head.seq = seq;
        self.head.hash.clear();
        self.head.hash.push_str(hash);
        while let Some(cp) = self.expected.get(self.next_checkpoint) {
            if cp.seq > seq {
                break;
            }
            if cp.seq == seq && cp.hash != hash {
                return Err(ChainError::CheckpointMismatch { seq: cp.seq });
            }
            self.next_checkpoint += 1;
        }
        Ok(())
    }

    /// Ends the walk: the head, or the error if a checkpoint lies past the end.
    pub fn finish(self) -> Result<Head, ChainError> {
        match self.expected.last() {
            Some(cp) if cp.seq > self.head.seq => Err(ChainError::Truncated {
                head: self.head.seq,
                checkpoint: cp.seq,
            }),
            _ => Ok(self.head),
        }
    }
}

/// `sha256(FORMAT ‖ seq ‖ previous ‖ payload)`, as [`link`] computes it, unencoded.
fn link_digest(seq: i64, previous: &str, canonical_payload: &[u8]) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update(FORMAT.as_bytes());
    h.update(b"\n");
    h.update(seq.to_string().as_bytes());
    h.update(b"\n");
    h.update(previous.as_bytes());
    h.update(b"\n");
    h.update(canonical_payload);
    h.finalize().into()
}

/// A linked chain of `n` sample rows (`details` carries the `agent` facet), for tests.
#[cfg(test)]
pub(crate) fn sample_chain(n: i64) -> Vec<ChainedEvent> {
    use time::OffsetDateTime;
    use uuid::Uuid;

    let mut prev = GENESIS.to_owned();
    (1..=n)
        .map(|seq| {
            let mut e = ChainedEvent {
                seq,
                id: Uuid::now_v7(),
                at: trail_time(OffsetDateTime::now_utc()),
                actor_kind: "agent".into(),
                actor: "a".into(),
                kind: "proposal.submitted".into(),
                subject_type: "proposal".into(),
                subject_id: seq.to_string(),
                before_status: None,
                after_status: Some("pending".into()),
                details: serde_json::json!({"n": seq, "agent": "a"}),
                hash: String::new(),
            };
            e.hash = e.link_hash(&prev).expect("canonical");
            prev = e.hash.clone();
            e
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use time::OffsetDateTime;
    use time::format_description::well_known::Rfc3339;
    use uuid::Uuid;

    use super::*;

    fn chain(n: i64) -> Vec<ChainedEvent> {
        sample_chain(n)
    }

    fn verify(rows: &[ChainedEvent], cps: Vec<Head>) -> Result<Head, ChainError> {
        let mut v = Verifier::new(cps);
        for r in rows {
            v.push(r)?;
        }
        v.finish()
    }

    #[test]
    fn an_intact_chain_verifies() {
        let rows = chain(5);
        assert_eq!(verify(&rows, vec![]).map(|h| h.seq), Ok(5));
    }

    #[test]
    fn every_tamper_names_the_first_bad_seq() {
        let rows = chain(6);
        let mut changed = rows.clone();
        changed[2].details = json!({"n": 99});
        assert_eq!(verify(&changed, vec![]).map_err(|e| e.seq()), Err(3));

        let mut deleted = rows.clone();
        deleted.remove(3);
        assert_eq!(verify(&deleted, vec![]).map_err(|e| e.seq()), Err(4));

        let mut swapped = rows.clone();
        swapped.swap(1, 2);
        assert_eq!(verify(&swapped, vec![]).map_err(|e| e.seq()), Err(2));

        // Recomputing every hash after an edit is caught by a checkpoint taken before it.
        let kept = Head {
            seq: 5,
            hash: rows[4].hash.clone(),
        };
        let mut rewritten = rows.clone();
        rewritten[1].actor = "mallory".into();
        let mut prev = rewritten[0].hash.clone();
        for r in &mut rewritten[1..] {
            r.hash = r.link_hash(&prev).expect("canonical");
            prev = r.hash.clone();
        }
        assert!(verify(&rewritten, vec![]).is_ok());
        assert_eq!(
            verify(&rewritten, vec![kept.clone()]).map_err(|e| e.seq()),
            Err(5)
        );

        // A truncated tail is caught by a kept checkpoint.
        assert!(matches!(
            verify(&rows[..3], vec![kept]),
            Err(ChainError::Truncated { head: 3, .. })
        ));
    }

    #[test]
    fn the_hash_format_is_fixed() {
        // Computed outside Rust: sha256 over "countersign-audit/1\n1\n" + GENESIS + "\n" + the
        // payload with sorted keys and no whitespace.
        let e = ChainedEvent {
            seq: 1,
            id: Uuid::parse_str("0192f0c4-0000-7000-8000-000000000001").expect("uuid"),
            at: OffsetDateTime::parse("2026-11-24T10:00:00.123456Z", &Rfc3339).expect("time"),
            actor_kind: "agent".into(),
            actor: "agent-a".into(),
            kind: "proposal.submitted".into(),
            subject_type: "proposal".into(),
            subject_id: "p-1".into(),
            before_status: None,
            after_status: Some("pending".into()),
            details: json!({"tool": "crm.update", "n": 3, "agent": "agent-a"}),
            hash: String::new(),
        };
        assert_eq!(
            e.canonical_payload().expect("canonical"),
            r#"{"actor":"agent-a","actor_kind":"agent","after_status":"pending","at":"2026-11-24T10:00:00.123456Z","before_status":null,"details":{"agent":"agent-a","n":3,"tool":"crm.update"},"id":"0192f0c4-0000-7000-8000-000000000001","kind":"proposal.submitted","subject_id":"p-1","subject_type":"proposal"}"#
        );
        assert_eq!(
            e.link_hash(GENESIS).expect("canonical"),
            "2f5038bf43066e8f52015750cb25ef07e6a052a1a8171e80a2c98694ad11442d"
        );
    }
}
