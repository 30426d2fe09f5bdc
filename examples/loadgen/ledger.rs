//! The ledger: one JSON line per acknowledged answer (and per run an executor started),
//! written by one task so lines never interleave, and flushed when the run ends.

use std::io::Write;
use std::path::Path;

use serde::{Deserialize, Serialize};
use tokio::sync::mpsc;
use uuid::Uuid;

/// One acknowledged answer.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum Entry {
    /// A submission answered `201` or `200` (a replay): the proposal exists.
    Submit { proposal: Uuid, status: String },
    /// A reviewer's decision the page confirmed (`?notice=approved` or `rejected`).
    Decide { proposal: Uuid, verdict: String },
    /// A lease handed over.
    Lease { command: Uuid, proposal: Uuid },
    /// An executor started running a command (before its side effect).
    Run { command: Uuid },
    /// A report answered `200`: `succeeded`, or `failed` with `side_effect: none`.
    Report { command: Uuid, outcome: String },
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
            while let Some(entry) = rx.blocking_recv() {
                if let Ok(line) = serde_json::to_string(&entry) {
                    let _ = writeln!(out, "{line}");
                }
            }
            let _ = out.flush();
        });
        Ok((Ledger(tx), writer))
    }

    /// Records `entry`.
    pub fn record(&self, entry: Entry) {
        let _ = self.0.send(entry);
    }
}

/// Every entry of the ledger at `path`.
pub fn read(path: &Path) -> Result<Vec<Entry>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    text.lines()
        .enumerate()
        .map(|(i, line)| {
            serde_json::from_str(line)
                .map_err(|e| format!("{} line {}: {e}", path.display(), i + 1))
        })
        .collect()
}
