//! Fills a database with N pending proposals through the real submission path
//! (`Services::submit`: validated, routed, stored with its audit events, group-committed by
//! SQLite's writer), for `scripts/bench-queue`. Ten agents, five domains, eight tools, all
//! three risk levels and some GDPR/HIPAA proposals, so that every queue filter has work.
//!
//! ```sh
//! cargo run --release --example fill_queue -- sqlite:///tmp/queue.db 100000
//! ```

use countersign::domain::principal::Principal;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use countersign::domain::Policy;
use countersign::service::{Services, Submitted};
use countersign::storage;
use serde_json::{Value, json};
use uuid::Uuid;

/// Submissions in flight at once.
const WRITERS: usize = 32;

const DOMAINS: [&str; 5] = ["sales", "billing", "crm", "support", "hr"];
const TOOLS: [&str; 8] = [
    "crm.update_contact",
    "billing.refund",
    "email.send",
    "calendar.create_event",
    "docs.share",
    "tickets.close",
    "hr.update_record",
    "storage.delete",
];
const RISKS: [&str; 3] = ["low", "medium", "high"];

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
        .map(|_| tokio::spawn(submit_until(services.clone(), next.clone(), count)))
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

async fn submit_until(
    services: Services,
    next: Arc<AtomicUsize>,
    count: usize,
) -> Result<(), String> {
    loop {
        let i = next.fetch_add(1, Ordering::Relaxed);
        if i >= count {
            return Ok(());
        }
        let agent = format!("agent-{}", i % 10);
        match services
            .submit(&Principal::Agent(agent.clone()), &proposal(i, &agent))
            .await
        {
            Ok(Submitted::Created(_)) => {}
            Ok(other) => return Err(format!("proposal {i}: {other:?}")),
            Err(e) => return Err(format!("proposal {i}: {e:?}")),
        }
    }
}

fn proposal(i: usize, agent: &str) -> Value {
    json!({
        "proposal_id": Uuid::new_v4(),
        "proposed_by": agent,
        "timestamp": "2026-11-22T10:00:00Z",
        "domain": DOMAINS[i % 5],
        "tool": {"name": TOOLS[(i / 10) % 8], "version": "1"},
        "intent": {"summary": format!("Change number {i}"), "reasoning": "Benchmark load."},
        "parameters": {"record_id": format!("r-{i}"), "value": i},
        "risk_level": RISKS[(i / 3) % 3],
        "approval_required": true,
        "compliance_context": {"gdpr": i.is_multiple_of(7), "hipaa": i.is_multiple_of(11)},
        "idempotency_key": format!("fill-{i}-{}", Uuid::new_v4()),
        "rollback_supported": true,
        "blast_radius": "small",
        "target_refs": [{"type": "record", "id": format!("r-{i}")}]
    })
}
