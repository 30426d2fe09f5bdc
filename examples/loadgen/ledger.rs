//! The ledger: one JSON line per acknowledged answer (and per run an executor started),
//! written by one task so lines never interleave, and flushed when the run ends. `loadgen
//! probe` appends its one line to a ledger of its own (`scripts/faults`' probes). Entries added
//! later (`seen`, `delivered`) are variants of their own, so older ledgers still parse.

use std::io::Write;
use std::path::Path;

use serde::{Deserialize, Serialize};
use tokio::sync::mpsc;
use uuid::Uuid;

/// One acknowledged answer.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum Entry {
    /// A submission answered `201` or `200` (a replay): the proposal exists. `key` is the
    /// submission's idempotency key (absent in ledgers written before it was recorded): every
    /// answer to one key names one proposal, the one stored for it.
    Submit {
        proposal: Uuid,
        status: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        key: Option<String>,
    },
    /// A reviewer's decision the page confirmed (`?notice=approved` or `rejected`).
    Decide { proposal: Uuid, verdict: String },
    /// A lease handed over.
    Lease { command: Uuid, proposal: Uuid },
    /// An executor started running a command (before its side effect).
    Run { command: Uuid },
    /// A report answered `200`: `succeeded`, or `failed` with `side_effect: none`.
    Report { command: Uuid, outcome: String },
    /// A `status` event the agent's event stream (`GET /api/v1/events`) told: the proposal's
    /// status then (absent in ledgers written before streams were watched).
    Seen { proposal: Uuid, status: String },
    /// A webhook delivery the load generator's receiver verified and answered `200`: its
    /// delivery id (`Countersign-Delivery`, the same on every retry) and the status it names.
    Delivered {
        delivery: Uuid,
        proposal: Uuid,
        status: String,
    },
    /// A pre-tool-check answered `200`: its `check_id`, whose decision the trail holds.
    Check { check: Uuid },
}

/// Where entries go.
#[derive(Clone)]
pub struct Ledger(mpsc::UnboundedSender<Entry>);

impl Ledger {
    /// A ledger writing to `path`; the task ends (and flushes) when every clone is dropped.
    pub fn create(path: &Path) -> std::io::Result<(Ledger, tokio::task::JoinHandle<()>)> {
        let file = std::fs::File::create(path)?;
        let (tx, mut rx) = mpsc::unbounded_channel::<Entry>();
        let writer = tokio::task::spawn_blocking(move || {
            let mut out = std::io::BufWriter::new(file);
            let write = |entry: Entry, out: &mut std::io::BufWriter<std::fs::File>| {
                if let Ok(line) = serde_json::to_string(&entry) {
                    let _ = writeln!(out, "{line}");
                }
            };
            while let Some(entry) = rx.blocking_recv() {
                write(entry, &mut out);
                while let Ok(entry) = rx.try_recv() {
                    write(entry, &mut out);
                }
                // Nothing more waiting: what was recorded reaches the file, where a check made
                // while the run goes on (`loadgen check --during`) reads it.
                let _ = out.flush();
            }
        });
        Ok((Ledger(tx), writer))
    }

    /// Records `entry`.
    pub fn record(&self, entry: Entry) {
        let _ = self.0.send(entry);
    }
}

/// Appends `entry` to the ledger at `path` (created if missing), for a process that records one
/// answer (`loadgen probe`) beside a run's ledger.
pub fn append(path: &Path, entry: &Entry) -> Result<(), String> {
    let line = serde_json::to_string(entry).map_err(|e| e.to_string())?;
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    writeln!(file, "{line}").map_err(|e| format!("{}: {e}", path.display()))
}

/// Every entry of the ledger at `path`; `during` a run, but for a last line not yet written
/// whole.
pub fn read(path: &Path, during: bool) -> Result<Vec<Entry>, String> {
    let mut text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    if during && !text.ends_with('\n') {
        text.truncate(text.rfind('\n').map_or(0, |end| end + 1));
    }
    text.lines()
        .enumerate()
        .map(|(i, line)| {
            serde_json::from_str(line)
                .map_err(|e| format!("{} line {}: {e}", path.display(), i + 1))
        })
        .collect()
}
