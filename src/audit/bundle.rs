//! Export bundles: a directory with `events.jsonl` (one chained row per line), `events.csv`
//! (the same rows for spreadsheets) and `manifest.json` (counts, first and last seq, the hash
//! before the first row, the sha256 of every file, the checkpoint covering the range and its
//! public key). A bundle verifies offline, without the database.

use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::Path;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::chain::{ChainError, ChainedEvent, Head, Verifier};
use super::checkpoint::Checkpoint;

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
    #[error("the manifest's checkpoint at seq {0} has a bad signature")]
    BadSignature(i64),
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
        serde_json::to_writer(&mut self.jsonl, e)
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
/// link of the chain from the manifest's `previous_hash`, the manifest's checkpoint. Returns
/// the manifest and the head.
pub fn verify(dir: &Path, kept: Option<&Checkpoint>) -> Result<(Manifest, Head), BundleError> {
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
        expected.push(cp.head());
    }
    let start = Head {
        seq: manifest.first_seq.max(1) - 1,
        hash: manifest.previous_hash.clone(),
    };
    let mut verifier = Verifier::resume(start, expected);
    let file = BufReader::new(std::fs::File::open(dir.join(EVENTS))?);
    for (n, line) in file.lines().enumerate() {
        let line = line?;
        let event: ChainedEvent = serde_json::from_str(&line)
            .map_err(|e| BundleError::Malformed(format!("{EVENTS} line {}: {e}", n + 1)))?;
        verifier.push(&event)?;
    }
    let head = verifier.finish()?;
    Ok((manifest, head))
}
