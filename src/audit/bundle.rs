//! Export bundles: a directory with `events.jsonl` (one chained row per line), `events.csv`
//! (the same rows for spreadsheets) and `manifest.json` (counts, first and last seq, the hash
//! before the first row, the sha256 of every file, the checkpoint covering the range and its
//! public key). A bundle verifies offline, without the database.
//!
//! A bundle holds one contiguous stretch of the chain (a time range) or a selection with gaps
//! (filtered by kind, actor or facet). In a selection with gaps every row carries `prev_hash`,
//! the hash of the row before it in the chain, and the manifest says `contiguous: false`: each
//! row's own hash is then checked against its declared predecessor, and wherever two rows are
//! neighbours in the chain, the later one's `prev_hash` must be the earlier one's hash.

use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::Path;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::chain::{ChainError, ChainedEvent, Head};
use super::checkpoint::{Checkpoint, Trust};

/// The events file.
pub const EVENTS: &str = "events.jsonl";
/// The spreadsheet file.
pub const CSV: &str = "events.csv";
/// The manifest.
pub const MANIFEST: &str = "manifest.json";

/// `manifest.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    /// The chain format.
    pub format: String,
    /// Events in the bundle.
    pub count: i64,
    /// First seq (0 when empty).
    pub first_seq: i64,
    /// Last seq (0 when empty).
    pub last_seq: i64,
    /// The hash of the row before the first (the chain's genesis for a bundle from the start).
    pub previous_hash: String,
    /// sha256 hex of each file, by name.
    pub files: std::collections::BTreeMap<String, String>,
    /// The latest signed checkpoint within the range, if any.
    pub checkpoint: Option<Checkpoint>,
    /// The server's public key (hex), if it signs checkpoints.
    pub public_key: Option<String>,
    /// The filters the export was made with, as given.
    pub selection: serde_json::Value,
    /// Whether the rows are one stretch of the chain without gaps (bundles written before
    /// selections with gaps existed always are).
    #[serde(default = "contiguous_by_default")]
    pub contiguous: bool,
}

fn contiguous_by_default() -> bool {
    true
}

/// One line of `events.jsonl`: the chained row and, in a selection with gaps, the hash of the
/// row before it in the chain.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BundleLine {
    /// The row.
    #[serde(flatten)]
    pub event: ChainedEvent,
    /// The previous row's hash, when the bundle may not hold that row.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prev_hash: Option<String>,
}

/// Why a bundle does not verify.
#[derive(Debug, thiserror::Error)]
pub enum BundleError {
    /// A file could not be read or written.
    #[error("{0}")]
    Io(#[from] std::io::Error),
    /// The manifest or an event line is not what an export writes.
    #[error("{0}")]
    Malformed(String),
    /// A file's sha256 differs from the manifest.
    #[error("{file}: sha256 differs from the manifest (the file was changed)")]
    FileChanged {
        /// The file.
        file: String,
    },
    /// The chain does not hold.
    #[error(transparent)]
    Chain(#[from] ChainError),
    /// The manifest's checkpoint signature does not hold.
    #[error("the checkpoint at seq {0} has a bad signature")]
    BadSignature(i64),
    /// A checkpoint's signature holds under a key not trusted.
    #[error("the checkpoint at seq {0} is signed with a key that is not trusted")]
    UntrustedCheckpoint(i64),
    /// Keys were given to trust, and the bundle holds no checkpoint signed with one of them.
    #[error("no checkpoint signed with a trusted key: nothing vouches for the bundle")]
    NoTrustedCheckpoint,
    /// The principal may not export the trail.
    #[error(transparent)]
    Denied(#[from] crate::domain::access::Denied),
    /// Reading the trail to export failed (internal; logged, never echoed to a browser).
    #[error("reading the trail failed: {0}")]
    Read(String),
    /// The database could not be read now (down, restarting): nothing was exported; try again.
    #[error("the database is not answering: {0}")]
    Unavailable(String),
}

fn sha256_file(path: &Path) -> std::io::Result<String> {
    let mut h = Sha256::new();
    let mut f = std::fs::File::open(path)?;
    std::io::copy(&mut f, &mut h)?;
    Ok(hex::encode(h.finalize()))
}

/// Writes rows into `events.jsonl` and `events.csv` as they come.
pub struct BundleWriter {
    jsonl: BufWriter<std::fs::File>,
    csv: csv::Writer<std::fs::File>,
}

impl BundleWriter {
    /// Starts a bundle in `dir` (created if missing).
    pub fn create(dir: &Path) -> Result<Self, BundleError> {
        std::fs::create_dir_all(dir)?;
        let jsonl = BufWriter::new(std::fs::File::create(dir.join(EVENTS))?);
        let mut csv = csv::Writer::from_path(dir.join(CSV)).map_err(csv_error)?;
        csv.write_record([
            "seq",
            "at",
            "actor_kind",
            "actor",
            "kind",
            "subject_type",
            "subject_id",
            "before_status",
            "after_status",
            "details",
            "hash",
        ])
        .map_err(csv_error)?;
        Ok(Self { jsonl, csv })
    }

    /// Adds one row.
    pub fn push(&mut self, e: &ChainedEvent) -> Result<(), BundleError> {
        self.push_linked(e, None)
    }

    /// Adds one row with the hash of the row before it in the chain.
    pub fn push_linked(
        &mut self,
        e: &ChainedEvent,
        prev_hash: Option<&str>,
    ) -> Result<(), BundleError> {
        let line = BundleLine {
            event: e.clone(),
            prev_hash: prev_hash.map(str::to_owned),
        };
        serde_json::to_writer(&mut self.jsonl, &line)
            .map_err(|x| BundleError::Malformed(x.to_string()))?;
        self.jsonl.write_all(b"\n")?;
        let at =
            e.at.format(&time::format_description::well_known::Rfc3339)
                .unwrap_or_default();
        self.csv
            .write_record([
                e.seq.to_string().as_str(),
                &at,
                &e.actor_kind,
                &e.actor,
                &e.kind,
                &e.subject_type,
                &e.subject_id,
                e.before_status.as_deref().unwrap_or(""),
                e.after_status.as_deref().unwrap_or(""),
                &e.details.to_string(),
                &e.hash,
            ])
            .map_err(csv_error)
    }

    /// Flushes the files and writes the manifest with their hashes.
    pub fn finish(mut self, dir: &Path, mut manifest: Manifest) -> Result<Manifest, BundleError> {
        self.jsonl.flush()?;
        self.csv.flush()?;
        drop(self);
        for name in [EVENTS, CSV] {
            manifest
                .files
                .insert(name.to_owned(), sha256_file(&dir.join(name))?);
        }
        let text = serde_json::to_string_pretty(&manifest)
            .map_err(|e| BundleError::Malformed(e.to_string()))?;
        std::fs::write(dir.join(MANIFEST), text + "\n")?;
        Ok(manifest)
    }
}

fn csv_error(e: csv::Error) -> BundleError {
    BundleError::Malformed(e.to_string())
}

/// Verifies a bundle in `dir`, optionally against a kept checkpoint: every file's hash, every
/// link of the chain from the manifest's `previous_hash` (across a gap, from the row's own
/// `prev_hash`), the manifest's checkpoint, and the manifest's count and seqs. Returns the
/// manifest and the last row as head.
pub fn verify(dir: &Path, kept: Option<&Checkpoint>) -> Result<(Manifest, Head), BundleError> {
    verify_trusting(dir, kept, &Trust::default())
}

/// [`verify`], taking checkpoints only under keys `trust` admits. Without trusted keys or a
/// kept checkpoint, a bundle's own checkpoint proves only that whoever made the bundle held
/// some key.
pub fn verify_trusting(
    dir: &Path,
    kept: Option<&Checkpoint>,
    trust: &Trust,
) -> Result<(Manifest, Head), BundleError> {
    let text = std::fs::read_to_string(dir.join(MANIFEST))?;
    let manifest: Manifest = serde_json::from_str(&text)
        .map_err(|e| BundleError::Malformed(format!("{MANIFEST}: {e}")))?;
    for (name, expected) in &manifest.files {
        if sha256_file(&dir.join(name))? != *expected {
            return Err(BundleError::FileChanged { file: name.clone() });
        }
    }
    let mut expected = Vec::new();
    for cp in manifest.checkpoint.iter().chain(kept) {
        if !cp.signature_holds() {
            return Err(BundleError::BadSignature(cp.seq));
        }
        if !trust.admits(cp, kept) {
            return Err(BundleError::UntrustedCheckpoint(cp.seq));
        }
        expected.push(cp.head());
    }
    if trust.require_one && expected.is_empty() {
        return Err(BundleError::NoTrustedCheckpoint);
    }
    let start = Head {
        seq: manifest.first_seq.max(1) - 1,
        hash: manifest.previous_hash.clone(),
    };
    let mut walk = LinkWalk::new(start, expected);
    let file = BufReader::new(std::fs::File::open(dir.join(EVENTS))?);
    for (n, line) in file.lines().enumerate() {
        let line = line?;
        let row: BundleLine = serde_json::from_str(&line)
            .map_err(|e| BundleError::Malformed(format!("{EVENTS} line {}: {e}", n + 1)))?;
        walk.push(&row)?;
    }
    let head = walk.finish(&manifest)?;
    Ok((manifest, head))
}

/// Checks a bundle's rows one by one: each row's hash from its predecessor's, which is the
/// row before it in the bundle or, across a gap, the `prev_hash` it declares.
struct LinkWalk {
    head: Head,
    first: Option<i64>,
    count: i64,
    gaps: bool,
    /// Heads that must appear where the bundle has their seq, sorted by seq.
    checkpoints: Vec<Head>,
}

impl LinkWalk {
    fn new(start: Head, mut checkpoints: Vec<Head>) -> Self {
        checkpoints.sort_by_key(|h| h.seq);
        Self {
            head: start,
            first: None,
            count: 0,
            gaps: false,
            checkpoints,
        }
    }

    fn push(&mut self, row: &BundleLine) -> Result<(), ChainError> {
        let e = &row.event;
        let next = self.head.seq + 1;
        let previous = match &row.prev_hash {
            // A declared link must agree with the row before it when that row is here.
            Some(p) if e.seq == next && *p != self.head.hash => {
                return Err(ChainError::HashMismatch { seq: e.seq });
            }
            Some(p) if e.seq >= next => {
                self.gaps |= e.seq > next;
                p.clone()
            }
            None if e.seq == next => self.head.hash.clone(),
            _ => {
                return Err(ChainError::Gap {
                    expected: next,
                    found: e.seq,
                });
            }
        };
        if e.link_hash(&previous).as_ref() != Ok(&e.hash) {
            return Err(ChainError::HashMismatch { seq: e.seq });
        }
        for cp in &self.checkpoints {
            let differs = (cp.seq == e.seq && cp.hash != e.hash)
                || (cp.seq == e.seq - 1 && cp.hash != previous);
            if differs {
                return Err(ChainError::CheckpointMismatch { seq: cp.seq });
            }
        }
        self.first.get_or_insert(e.seq);
        self.count += 1;
        self.head = Head {
            seq: e.seq,
            hash: e.hash.clone(),
        };
        Ok(())
    }

    fn finish(self, manifest: &Manifest) -> Result<Head, BundleError> {
        let malformed = |what: &str| {
            BundleError::Malformed(format!("{MANIFEST}: {what} does not match {EVENTS}"))
        };
        if self.count != manifest.count {
            return Err(malformed("count"));
        }
        if self.count > 0
            && (self.first != Some(manifest.first_seq) || self.head.seq != manifest.last_seq)
        {
            return Err(malformed("first_seq or last_seq"));
        }
        if self.gaps && manifest.contiguous {
            return Err(malformed("contiguous"));
        }
        if manifest.contiguous
            && let Some(cp) = self.checkpoints.last()
            && cp.seq > self.head.seq
        {
            return Err(ChainError::Truncated {
                head: self.head.seq,
                checkpoint: cp.seq,
            }
            .into());
        }
        Ok(self.head)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::audit::chain::GENESIS;
    use serde_json::json;

    fn chain(n: i64) -> Vec<ChainedEvent> {
        crate::audit::chain::sample_chain(n)
    }

    /// Writes `rows` (with their chain predecessors' hashes) and returns the verdict.
    fn bundle(rows: &[(ChainedEvent, String)], linked: bool) -> Result<Head, BundleError> {
        let dir = tempfile::tempdir().expect("dir");
        let mut w = BundleWriter::create(dir.path()).expect("create");
        for (e, prev) in rows {
            w.push_linked(e, linked.then_some(prev.as_str()))
                .expect("push");
        }
        let manifest = Manifest {
            format: crate::audit::chain::FORMAT.into(),
            count: rows.len() as i64,
            first_seq: rows.first().map_or(0, |r| r.0.seq),
            last_seq: rows.last().map_or(0, |r| r.0.seq),
            previous_hash: rows.first().map_or(GENESIS.into(), |r| r.1.clone()),
            files: Default::default(),
            checkpoint: None,
            public_key: None,
            selection: json!({}),
            contiguous: !linked,
        };
        w.finish(dir.path(), manifest).expect("finish");
        verify(dir.path(), None).map(|(_, head)| head)
    }

    fn with_prev(rows: &[ChainedEvent]) -> Vec<(ChainedEvent, String)> {
        let mut prev = GENESIS.to_owned();
        rows.iter()
            .map(|e| {
                let p = std::mem::replace(&mut prev, e.hash.clone());
                (e.clone(), p)
            })
            .collect()
    }

    fn seq_of(r: Result<Head, BundleError>) -> Result<i64, String> {
        r.map(|h| h.seq).map_err(|e| e.to_string())
    }

    #[test]
    fn a_selection_with_gaps_verifies_row_by_row() {
        let all = with_prev(&chain(8));
        let evens: Vec<_> = all.iter().filter(|r| r.0.seq % 2 == 0).cloned().collect();
        assert_eq!(seq_of(bundle(&evens, true)), Ok(8));
        // A stretch written with links verifies too (each link agrees with its neighbour).
        assert_eq!(seq_of(bundle(&all, true)), Ok(8));
        assert_eq!(seq_of(bundle(&all, false)), Ok(8));
        // Without links, a gap is a missing row.
        let err = seq_of(bundle(&evens, false)).expect_err("gap");
        assert!(err.contains("expected seq"), "{err}");
    }

    #[test]
    fn a_changed_row_or_a_false_link_is_named() {
        let all = with_prev(&chain(6));
        let mut evens: Vec<_> = all.iter().filter(|r| r.0.seq % 2 == 0).cloned().collect();
        evens[1].0.details = json!({"n": 99});
        assert_eq!(
            seq_of(bundle(&evens, true)),
            Err(
                "seq 4: hash mismatch (the row was changed, or the chain was rewritten before it)"
                    .into()
            )
        );
        // A link that disagrees with the row before it, although that row is in the bundle.
        let mut linked = all.clone();
        linked[3].1 = linked[0].0.hash.clone();
        assert!(seq_of(bundle(&linked, true)).is_err());
        // Rows out of order.
        let mut swapped = all.clone();
        swapped.swap(2, 3);
        assert!(seq_of(bundle(&swapped, true)).is_err());
    }
}
