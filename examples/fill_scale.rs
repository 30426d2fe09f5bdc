//! Grows a database to a given history for `scripts/bench-scale`, through the real write paths:
//! tool proposals submitted with `Services::submit` under a policy where everything waits for a
//! person, nine in ten then decided by one of twenty reviewers with `Services::decide`
//! (two approvals for each rejection; approvals queue their command), so the queue holds a
//! tenth of them; then, if the trail is still shorter than EVENTS, pre-tool-check decisions
//! recorded with `Store::record` (the verify benchmark's events) until it is that long.
//! Run it again with larger numbers to grow the same database.
//!
//! ```sh
//! cargo run --release --example fill_scale -- sqlite:///tmp/scale.db 100000
//! cargo run --release --example fill_scale -- sqlite:///tmp/scale.db 1000000 10000000
//! ```

#[path = "support/fill.rs"]
mod fill;
#[path = "../benches/support/trail_gen.rs"]
mod trail_gen;

use std::sync::Arc;
use std::sync::atomic::AtomicUsize;
use std::time::Instant;

use countersign::domain::Policy;
use countersign::service::Services;
use countersign::storage::{self, Store};

/// Submissions (each then decided) in flight at once.
const WRITERS: usize = 32;
/// Events per recorded change.
const BATCH: usize = 2_000;
/// Event changes in flight at once.
const EVENT_WRITERS: usize = 4;

#[tokio::main]
async fn main() -> Result<(), String> {
    let mut args = std::env::args().skip(1);
    let usage = "usage: fill_scale DATABASE_URL PROPOSALS [EVENTS]";
    let url = args.next().ok_or(usage)?;
    let number = |arg: Option<String>, name: &str| -> Result<Option<usize>, String> {
        arg.map(|a| a.parse().map_err(|e| format!("{name}: {e}")))
            .transpose()
    };
    let proposals = number(args.next(), "PROPOSALS")?.ok_or(usage)?;
    let events = number(args.next(), "EVENTS")?.unwrap_or(0);
    let (store, _) = storage::connect(&url).await.map_err(|e| e.to_string())?;
    let have = count(&store, "proposals").await?;
    let started = Instant::now();
    // Every agent may propose; no tool is accepted outright, so everything waits for review.
    let policy = Policy::from_toml_str("[defaults]\nunknown_agents = \"allow\"\n")
        .map_err(|e| format!("policy: {e:?}"))?;
    let services = Services::new(store.clone(), Arc::new(policy));
    let next = Arc::new(AtomicUsize::new(have));
    let writers: Vec<_> = (0..WRITERS)
        .map(|_| {
            let decide = true;
            tokio::spawn(fill::submit_until(
                services.clone(),
                next.clone(),
                proposals,
                decide,
            ))
        })
        .collect();
    for w in writers {
        w.await.map_err(|e| e.to_string())??;
    }
    let added = proposals.saturating_sub(have);
    eprintln!("added {added} proposals in {:.1?}", started.elapsed());
    let trail = count(&store, "audit_events").await?;
    if trail < events {
        let started = Instant::now();
        let next = Arc::new(AtomicUsize::new(trail));
        let writers: Vec<_> = (0..EVENT_WRITERS)
            .map(|_| {
                let (store, next) = (store.clone(), next.clone());
                tokio::spawn(trail_gen::record_until(store, next, events, BATCH))
            })
            .collect();
        for w in writers {
            w.await.map_err(|e| e.to_string())??;
        }
        let added = events - trail;
        eprintln!(
            "added {added} pre-tool-check events in {:.1?}",
            started.elapsed()
        );
    }
    Ok(())
}

/// Rows in `table` (a name of ours, never input).
async fn count(store: &Store, table: &str) -> Result<usize, String> {
    let mut read = store.read().await.map_err(|e| e.to_string())?;
    let sql = format!("select count(*) from {table}");
    let n: i64 = match read.conn() {
        storage::Conn::Sqlite(c) => sqlx::query_scalar(&sql).fetch_one(c).await,
        storage::Conn::Postgres(c) => sqlx::query_scalar(&sql).fetch_one(c).await,
    }
    .map_err(|e| e.to_string())?;
    usize::try_from(n).map_err(|e| e.to_string())
}
