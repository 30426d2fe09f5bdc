//! Fills a database with N recorded decisions for `scripts/bench-backtest`, through the real
//! write paths: four in five pre-tool-check decisions (`Store::record`, the verify benchmark's
//! events from `benches/support/trail_gen.rs`, each with what routing read of its evidence),
//! one in five tool proposals submitted through `Services::submit` under the built-in policy
//! (varied tools, agents and risks).
//!
//! ```sh
//! cargo run --release --example fill_decisions -- sqlite:///tmp/backtest.db 1000000
//! ```

#[path = "../benches/support/trail_gen.rs"]
mod trail_gen;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use countersign::domain::Policy;
use countersign::domain::principal::Principal;
use countersign::service::Services;
use countersign::storage::{self, Store};
use serde_json::{Value, json};

/// Events per change (one transaction each; SQLite's writer groups several).
const BATCH: usize = 1_000;
/// Changes in flight at once.
const WRITERS: usize = 4;
/// Proposals submitted at once.
const SUBMITTERS: usize = 16;
/// Tools the proposals name.
const TOOLS: [&str; 6] = [
    "crm.update_contact",
    "docs.search",
    "billing.refund",
    "email.send",
    "calendar.create_event",
    "db.export_report",
];

#[tokio::main]
async fn main() -> Result<(), String> {
    let mut args = std::env::args().skip(1);
    let usage = "usage: fill_decisions DATABASE_URL COUNT";
    let url = args.next().ok_or(usage)?;
    let count: usize = (args.next().ok_or(usage)?.parse()).map_err(|e| format!("COUNT: {e}"))?;
    let (store, _) = storage::connect(&url).await.map_err(|e| e.to_string())?;
    let started = Instant::now();
    let proposals = count / 5;
    let checks = count - proposals;
    let next = Arc::new(AtomicUsize::new(0));
    let mut tasks: Vec<tokio::task::JoinHandle<Result<(), String>>> = (0..WRITERS)
        .map(|_| tokio::spawn(write_checks(store.clone(), next.clone(), checks)))
        .collect();
    let services = Services::new(store, Arc::new(Policy::builtin()));
    let submitted = Arc::new(AtomicUsize::new(0));
    tasks.extend(
        (0..SUBMITTERS)
            .map(|_| tokio::spawn(submit(services.clone(), submitted.clone(), proposals))),
    );
    for t in tasks {
        t.await.map_err(|e| e.to_string())??;
    }
    eprintln!(
        "wrote {checks} checks and {proposals} proposals to {url} in {:.1?}",
        started.elapsed()
    );
    Ok(())
}

/// Records the next batch of checks until `count` are written (trail_gen's rejected inputs,
/// every tenth event, are skipped: only decisions count).
async fn write_checks(store: Store, next: Arc<AtomicUsize>, count: usize) -> Result<(), String> {
    let policy = Policy::builtin();
    loop {
        let first = next.fetch_add(BATCH, Ordering::Relaxed);
        if first >= count {
            return Ok(());
        }
        let now = time::OffsetDateTime::now_utc();
        let events = (first..count.min(first + BATCH))
            .map(|i| {
                // Skip trail_gen's every tenth (a rejected submission): 9 of 10 are checks.
                let (actor, event) = trail_gen::event(store.salt(), &policy, i + i / 9);
                (now, actor, event)
            })
            .collect();
        store.record(events).await.map_err(|e| e.to_string())?;
    }
}

/// Submits proposals until `count` are in.
async fn submit(services: Services, next: Arc<AtomicUsize>, count: usize) -> Result<(), String> {
    loop {
        let i = next.fetch_add(1, Ordering::Relaxed);
        if i >= count {
            return Ok(());
        }
        let agent = format!("agent-{}", i % 13);
        services
            .submit(&Principal::Agent(agent.clone()), &proposal(&agent, i))
            .await
            .map_err(|e| format!("proposal {i}: {e}"))?;
    }
}

/// The `i`-th proposal.
fn proposal(agent: &str, i: usize) -> Value {
    let tool = TOOLS[i % TOOLS.len()];
    let risk = ["low", "medium", "high"][i % 3];
    let domain = ["sales", "support", "billing"][i % 3];
    let blast = ["tiny", "small", "medium"][i % 3];
    json!({
        "proposal_id": uuid::Uuid::now_v7(),
        "proposed_by": agent,
        "timestamp": "2026-11-22T10:00:00Z",
        "domain": domain,
        "tool": {"name": tool, "version": "2024-01"},
        "intent": {"summary": format!("Routine change {i}"), "reasoning": "Asked for in the ticket."},
        "parameters": {"record_id": format!("rec_{i}"), "status": "closed"},
        "risk_level": risk,
        "approval_required": !i.is_multiple_of(4),
        "compliance_context": {"gdpr": i.is_multiple_of(7), "hipaa": false},
        "idempotency_key": format!("fill-{i}"),
        "rollback_supported": i.is_multiple_of(2),
        "blast_radius": blast,
        "target_refs": [{"type": "record", "id": format!("rec_{i}")}]
    })
}
