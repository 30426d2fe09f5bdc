//! Fills a database with N audit events spread evenly over the last D days, through the real
//! write path (`Store::record`: linked, hashed and faceted by storage at commit), for
//! `scripts/bench-audit-pages`. The events are the verify benchmark's (`benches/support/
//! trail_gen.rs`: pre-tool-check decisions from 13 agents over 8 tools, every tenth a rejected
//! submission), written in order, so seq order and time order agree as they do in production.
//!
//! ```sh
//! cargo run --release --example fill_audit -- sqlite:///tmp/audit.db 1000000 30
//! ```

#[path = "../benches/support/trail_gen.rs"]
mod trail_gen;

use std::time::Instant;

use countersign::domain::Policy;
use countersign::storage;

/// Events per change; SQLite's writer commits each in one transaction.
const BATCH: usize = 5_000;

#[tokio::main]
async fn main() -> Result<(), String> {
    let mut args = std::env::args().skip(1);
    let usage = "usage: fill_audit DATABASE_URL COUNT [DAYS]";
    let url = args.next().ok_or(usage)?;
    let count: usize = args
        .next()
        .ok_or(usage)?
        .parse()
        .map_err(|e| format!("COUNT: {e}"))?;
    let days: i64 = match args.next() {
        Some(d) => d.parse().map_err(|e| format!("DAYS: {e}"))?,
        None => 30,
    };
    let (store, _) = storage::connect(&url).await.map_err(|e| e.to_string())?;
    let policy = Policy::builtin();
    let started = Instant::now();
    let end = time::OffsetDateTime::now_utc();
    let span = time::Duration::days(days);
    let step = span / count.max(1) as f64;
    for first in (0..count).step_by(BATCH) {
        let events = (first..count.min(first + BATCH))
            .map(|i| {
                let (actor, event) = trail_gen::event(store.salt(), &policy, i);
                (end - span + step * i as f64, actor, event)
            })
            .collect();
        store.record(events).await.map_err(|e| e.to_string())?;
    }
    eprintln!(
        "wrote {count} events over {days} days to {url} in {:.1?}",
        started.elapsed()
    );
    Ok(())
}
