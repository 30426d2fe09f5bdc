//! What the fill examples share (`fill_queue`, `fill_scale`): varied tool proposals (ten
//! agents, five domains, eight tools, three risks, some GDPR and HIPAA) submitted through
//! `Services::submit`, the real path, and, for `fill_scale`, decided by one of twenty
//! reviewers.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use countersign::domain::lifecycle::{ProposalStatus, ReviewVerdict};
use countersign::domain::principal::{Principal, Role};
use countersign::service::{Services, Submitted};
use serde_json::{Value, json};
use uuid::Uuid;

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

/// Submits proposals numbered from `next` until `count` are in; with `decide`, a reviewer then
/// decides nine in ten of those left waiting (two approvals for each rejection; the policy
/// refuses HIPAA ones outright), and every tenth waits.
pub async fn submit_until(
    services: Services,
    next: Arc<AtomicUsize>,
    count: usize,
    decide: bool,
) -> Result<(), String> {
    loop {
        let i = next.fetch_add(1, Ordering::Relaxed);
        if i >= count {
            return Ok(());
        }
        let agent = format!("agent-{}", i % 10);
        let created = match services
            .submit(&Principal::Agent(agent.clone()), &proposal(i, &agent))
            .await
        {
            Ok(Submitted::Created(p)) => p,
            Ok(other) => return Err(format!("proposal {i}: {other:?}")),
            Err(e) => return Err(format!("proposal {i}: {e:?}")),
        };
        if !decide || i % 10 == 9 || created.status != ProposalStatus::Pending {
            continue;
        }
        let reviewer = Principal::person(&format!("reviewer-{}", i % 20), Role::Reviewer);
        let (verdict, reason) = match i % 3 {
            2 => (
                ReviewVerdict::Rejected,
                Some("Not within the ticket's scope."),
            ),
            _ => (ReviewVerdict::Approved, None),
        };
        // A high-risk approval needs the target's name typed, as the page asks for it.
        let typed = format!("r-{i}");
        services
            .decide_confirmed(&reviewer, created.id, verdict, reason, Some(typed.as_str()))
            .await
            .map_err(|e| format!("deciding proposal {i}: {e:?}"))?;
    }
}

/// The `i`-th proposal, from `agent`.
pub fn proposal(i: usize, agent: &str) -> Value {
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
