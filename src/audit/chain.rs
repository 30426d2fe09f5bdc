//! The hash chain over the audit trail. Each row stores
//! `hash = sha256(FORMAT ‖ seq ‖ previous hash ‖ canonical payload)`, where the canonical
//! payload is the RFC 8785 (JCS) form of everything the row says (id, time, actor, kind,
//! subject, status change, details). Changing, deleting, inserting or reordering a row breaks
//! every hash after it; [`Verifier`] walks a trail and names the first row that does not hold.
//!
//! Pure: no IO. Storage links rows as it appends them; `countersign audit verify` feeds rows
//! from a database or an export bundle through a [`Verifier`].

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;
use uuid::Uuid;

/// The chain format; part of every hash, so a future format cannot be confused with this one.
pub const FORMAT: &str = "countersign-audit/1";

/// The "previous hash" of the first row.
pub const GENESIS: &str = "0000000000000000000000000000000000000000000000000000000000000000";

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

impl ChainedEvent {
    /// The canonical (RFC 8785) payload this row's hash covers.
    pub fn canonical_payload(&self) -> String {
        let at = trail_time(self.at).format(&Rfc3339).unwrap_or_default();
        let payload = json!({
            "id": self.id,
            "at": at,
            "actor_kind": self.actor_kind,
            "actor": self.actor,
            "kind": self.kind,
            "subject_type": self.subject_type,
            "subject_id": self.subject_id,
            "before_status": self.before_status,
            "after_status": self.after_status,
            "details": self.details,
        });
        // A `Value` of strings, numbers and objects always canonicalises.
        serde_json_canonicalizer::to_string(&payload).unwrap_or_default()
    }

    /// The hash this row must carry after `previous`.
    pub fn link_hash(&self, previous: &str) -> String {
        link(self.seq, previous, &self.canonical_payload())
    }
}

/// `sha256(FORMAT ‖ seq ‖ previous ‖ payload)`, hex; fields separated by newlines.
pub fn link(seq: i64, previous: &str, canonical_payload: &str) -> String {
    let mut h = Sha256::new();
    h.update(FORMAT.as_bytes());
    h.update(b"\n");
    h.update(seq.to_string().as_bytes());
    h.update(b"\n");
    h.update(previous.as_bytes());
    h.update(b"\n");
    h.update(canonical_payload.as_bytes());
    hex::encode(h.finalize())
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
            ChainError::HashMismatch { seq } | ChainError::CheckpointMismatch { seq } => *seq,
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
}

impl Verifier {
    /// A verifier from the start of the trail, checking the given checkpoint heads on the way.
    pub fn new(mut checkpoints: Vec<Head>) -> Self {
        checkpoints.sort_by_key(|h| h.seq);
        Self {
            head: Head::genesis(),
            expected: checkpoints,
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
        let expected = self.head.seq + 1;
        if row.seq != expected {
            return Err(ChainError::Gap {
                expected,
                found: row.seq,
            });
        }
        if row.link_hash(&self.head.hash) != row.hash {
            return Err(ChainError::HashMismatch { seq: row.seq });
        }
        self.head = Head {
            seq: row.seq,
            hash: row.hash.clone(),
        };
        while let Some(cp) = self.expected.first() {
            if cp.seq > row.seq {
                break;
            }
            if cp.seq == row.seq && cp.hash != row.hash {
                return Err(ChainError::CheckpointMismatch { seq: cp.seq });
            }
            self.expected.remove(0);
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

#[cfg(test)]
mod tests {
    use super::*;

    fn chain(n: i64) -> Vec<ChainedEvent> {
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
                    details: json!({"n": seq}),
                    hash: String::new(),
                };
                e.hash = e.link_hash(&prev);
                prev = e.hash.clone();
                e
            })
            .collect()
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
            r.hash = r.link_hash(&prev);
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
}
