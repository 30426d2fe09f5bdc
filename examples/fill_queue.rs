//! Fills a database with N pending proposals through the real submission path
//! (`Services::submit`: validated, routed, stored with its audit events, group-committed by
//! SQLite's writer), for `scripts/bench-queue`. Ten agents, five domains, eight tools, all
//! three risk levels and some GDPR/HIPAA proposals, so that every queue filter has work.
//!
//! ```sh
//! cargo run --release --example fill_queue -- sqlite:///tmp/queue.db 100000
//! ```

#[path = "support/fill.rs"]
mod fill;

use std::sync::Arc;
use std::sync::atomic::AtomicUsize;
use std::time::Instant;

use countersign::domain::Policy;
use countersign::service::Services;
use countersign::storage;

/// Submissions in flight at once.
const WRITERS: usize = 32;

#[tokio::main]
async fn main() -> Result<(), String> {
    let mut args = std::env::args().skip(1);
    let usage = "usage: fill_queue DATABASE_URL COUNT";
    let url = args.next().ok_or(usage)?;
    let count: usize = args
        .next()
        .ok_or(usage)?
        .parse()
        .map_err(|e| format!("COUNT: {e}"))?;
    // Every agent may propose; no tool is accepted outright, so everything waits for review.
    let policy = Policy::from_toml_str("[defaults]\nunknown_agents = \"allow\"\n")
        .map_err(|e| format!("policy: {e:?}"))?;
    let (store, _) = storage::connect(&url).await.map_err(|e| e.to_string())?;
    let services = Services::new(store, Arc::new(policy));
    let started = Instant::now();
    let next = Arc::new(AtomicUsize::new(0));
    let writers: Vec<_> = (0..WRITERS)
        .map(|_| {
            tokio::spawn(fill::submit_until(
                services.clone(),
                next.clone(),
                count,
                false,
            ))
        })
        .collect();
    for w in writers {
        w.await.map_err(|e| e.to_string())??;
    }
    eprintln!(
        "submitted {count} proposals to {url} in {:.1?}",
        started.elapsed()
    );
    Ok(())
}
