//! Fills a database with N audit events through the real write path — `Store::record`, linked
//! and hashed by storage at commit, group-committed by SQLite's writer — for
//! `scripts/bench-verify`. The events are the verify benchmark's (`benches/support/
//! trail_gen.rs`): mostly pre-tool-check decisions.
//!
//! ```sh
//! cargo run --release --example fill_trail -- sqlite:///tmp/verify.db 1000000
//! ```

#[path = "../benches/support/trail_gen.rs"]
mod trail_gen;

use std::sync::Arc;
use std::sync::atomic::AtomicUsize;
use std::time::Instant;

use countersign::storage;

/// Events per change (one transaction each; SQLite's writer groups several).
const BATCH: usize = 1_000;
/// Changes in flight at once.
const WRITERS: usize = 4;

#[tokio::main]
async fn main() -> Result<(), String> {
    let mut args = std::env::args().skip(1);
    let usage = "usage: fill_trail DATABASE_URL COUNT";
    let url = args.next().ok_or(usage)?;
    let count: usize = args
        .next()
        .ok_or(usage)?
        .parse()
        .map_err(|e| format!("COUNT: {e}"))?;
    let (store, _) = storage::connect(&url).await.map_err(|e| e.to_string())?;
    let started = Instant::now();
    let next = Arc::new(AtomicUsize::new(0));
    let writers: Vec<_> = (0..WRITERS)
        .map(|_| {
            tokio::spawn(trail_gen::record_until(
                store.clone(),
                next.clone(),
                count,
                BATCH,
            ))
        })
        .collect();
    for w in writers {
        w.await.map_err(|e| e.to_string())??;
    }
    eprintln!("wrote {count} events to {url} in {:.1?}", started.elapsed());
    Ok(())
}
