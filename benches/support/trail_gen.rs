//! A realistic audit trail for the verify benchmarks: mostly pre-tool-check decisions (the most
//! frequent event, and the largest: argument keys with keyed hashes, free text as length and
//! hash, evidence digests), every tenth a rejected submission. Built by the real payload
//! constructors, so `details` looks as it does in production.

use countersign::audit::safe::Salt;
use countersign::audit::{Actor, AuditEvent, PreToolCheckDecided, ProposalInputRejected};
use countersign::domain::{Event, Policy, check};
use serde_json::json;

const TOOLS: [&str; 8] = [
    "crm.update_contact",
    "crm.delete_contact",
    "support.close_ticket",
    "billing.refund",
    "email.send",
    "calendar.create_event",
    "docs.share",
    "db.export_report",
];

/// The `i`-th event of the trail, and who recorded it.
pub fn event(salt: &Salt, policy: &Policy, i: usize) -> (Actor, AuditEvent) {
    let agent = format!("agent-{}", i % 13);
    if i % 10 == 9 {
        let rejected = ProposalInputRejected {
            agent: agent.clone(),
            fields: vec![format!("parameters.field_{}", i % 5), "risk_level".into()],
        };
        return (
            Actor::agent(&agent),
            AuditEvent::ProposalInputRejected(rejected),
        );
    }
    let tool = TOOLS[i % TOOLS.len()];
    let body = json!({
        "schema_version": "aana.agent_tool_precheck.v1",
        "request_id": format!("req-{i:08x}"),
        "agent_id": agent,
        "tool_name": tool,
        "tool_category": "write",
        "authorization_state": "confirmed",
        "evidence_refs": [
            {"source_id": format!("auth.session.{}", i % 977), "kind": "auth_event",
             "trust_tier": "verified", "redaction_status": "redacted",
             "summary": "User authenticated with SSO.", "provenance": "connector",
             "freshness": {"status": "fresh"}},
            format!("ticket:{}", i % 10_007)
        ],
        "risk_domain": "customer_support",
        "proposed_arguments": {"record_id": format!("rec_{i}"), "status": "closed", "notify": i.is_multiple_of(2)},
        "recommended_route": "accept",
        "user_intent": "Close the resolved support ticket and notify the customer."
    });
    // The event above is valid by construction; a rejected one still makes a realistic row.
    let Ok(event) = Event::parse(&body) else {
        let rejected = ProposalInputRejected {
            agent: agent.clone(),
            fields: vec!["event".into()],
        };
        return (
            Actor::agent(&agent),
            AuditEvent::ProposalInputRejected(rejected),
        );
    };
    let decision = check(&event, policy);
    let check_id = format!("0192f0c4-0000-7000-8000-{i:012x}");
    let decided = PreToolCheckDecided::new(salt, &check_id, &event, &decision)
        .unwrap_or_else(|e| unreachable!("{e}"));
    (
        Actor::agent(&agent),
        AuditEvent::PreToolCheckDecided(decided),
    )
}

/// Records events numbered from `next`, `batch` per change, until the trail holds `count`:
/// several of these in flight at once fill a database through the real write path
/// (`Store::record`: linked, hashed and faceted at commit).
#[allow(
    dead_code,
    reason = "the fill examples use it; the verify benchmark does not"
)]
pub async fn record_until(
    store: countersign::storage::Store,
    next: std::sync::Arc<std::sync::atomic::AtomicUsize>,
    count: usize,
    batch: usize,
) -> Result<(), String> {
    let policy = Policy::builtin();
    loop {
        let first = next.fetch_add(batch, std::sync::atomic::Ordering::Relaxed);
        if first >= count {
            return Ok(());
        }
        let now = time::OffsetDateTime::now_utc();
        let events = (first..count.min(first + batch))
            .map(|i| {
                let (actor, event) = event(store.salt(), &policy, i);
                (now, actor, event)
            })
            .collect();
        store.record(events).await.map_err(|e| e.to_string())?;
    }
}
