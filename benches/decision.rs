//! Decision latency: parse an AANA event from a JSON string and route it against a 100-rule
//! policy (`support/policy_gen.rs`), for an exact-rule hit, prefix/suffix/broad pattern hits,
//! an unlisted tool (every pattern scanned), an evidence leak and a schema-invalid event; plus
//! `check` alone and `route_proposal`.
//!
//! Besides criterion's statistics, `main` first times every decision of a mixed stream one by
//! one (100k iterations in `cargo bench`, 1k as a smoke run under `cargo test --benches`) and
//! prints p50/p90/p99/p99.9/max per decision against the 20 µs p99 target.

#[path = "support/policy_gen.rs"]
mod policy_gen;

use std::hint::black_box;
use std::time::{Duration, Instant};

use countersign::domain::contract::aana::EvidenceRef;
use countersign::domain::contract::vocab::{
    AuthorizationState, BlastRadius, RiskLevel, ToolCategory,
};
use countersign::domain::routing::gate::check_json_str;
use countersign::domain::{Event, Policy, ProposalFacts, check, route_proposal};
use criterion::{Criterion, criterion_group};
use policy_gen::{BENCH_TOOLS, generate_policy};

const RULES: usize = 100;
const TARGET_P99: Duration = Duration::from_micros(20);

fn event_json(tool: &str, agent: &str, summary: &str) -> String {
    format!(
        r#"{{
  "schema_version": "aana.agent_tool_precheck.v1",
  "request_id": "req-7f3a9c",
  "agent_id": "{agent}",
  "tool_name": "{tool}",
  "tool_category": "write",
  "authorization_state": "confirmed",
  "evidence_refs": [
    {{"source_id": "auth.session.4711", "kind": "auth_event", "trust_tier": "verified",
      "redaction_status": "redacted", "summary": "{summary}",
      "provenance": "connector", "freshness": {{"status": "fresh"}}}},
    {{"source_id": "approval.user.991", "kind": "approval", "trust_tier": "verified",
      "redaction_status": "redacted", "summary": "User explicitly confirmed the action.",
      "provenance": "connector", "freshness": {{"status": "fresh"}}}},
    "ticket:88231"
  ],
  "risk_domain": "customer_support",
  "proposed_arguments": {{"record_id": "rec_redacted", "status": "closed", "notify": true}},
  "recommended_route": "accept",
  "user_intent": "Close the resolved support ticket and notify the customer."
}}"#
    )
}

/// `(label, json)` for every kind of decision.
fn events() -> Vec<(&'static str, String)> {
    let labels = [
        "exact_rule",
        "prefix_pattern",
        "suffix_pattern",
        "broad_pattern",
        "unlisted",
    ];
    let mut out: Vec<(&'static str, String)> = BENCH_TOOLS
        .iter()
        .zip(labels)
        .map(|((tool, agent), label)| {
            (
                label,
                event_json(
                    tool,
                    agent,
                    "User identity was authenticated for this account.",
                ),
            )
        })
        .collect();
    out.push((
        "evidence_leak",
        event_json(
            "svc3.op_3",
            "agent-3",
            "Customer jane.doe@example.com confirmed by phone.",
        ),
    ));
    out.push((
        "schema_invalid",
        r#"{"tool_name": "", "tool_category": "delete", "evidence_refs": {}, "extra": 1}"#.into(),
    ));
    out
}

fn proposal() -> ProposalFacts {
    ProposalFacts {
        agent: "agent-9".into(),
        domain: "domain-9".into(),
        tool_name: "svc9.update_status".into(),
        risk_level: RiskLevel::Low,
        approval_required: true,
        gdpr: true,
        hipaa: false,
        rollback_supported: true,
        blast_radius: Some(BlastRadius::Small),
        has_rollback_plan: true,
        authorization_mode: None,
        tool_category: Some(ToolCategory::Write),
        authorization_state: Some(AuthorizationState::Validated),
        evidence: vec![EvidenceRef::Plain("ticket:88231".into())],
        risk_domain: None,
    }
}

fn policy() -> Policy {
    match Policy::from_toml_str(&generate_policy(RULES)) {
        Ok(p) => p,
        Err(errors) => panic!("generated policy is invalid: {errors:?}"),
    }
}

fn bench_decisions(c: &mut Criterion) {
    let policy = policy();
    let events = events();
    let mut group = c.benchmark_group("decision");
    for (label, json) in &events {
        group.bench_function(format!("parse_and_check/{label}"), |b| {
            b.iter(|| check_json_str(black_box(json), &policy));
        });
    }
    let parsed = match Event::from_json_str(&events[0].1) {
        Ok(e) => e,
        Err(errors) => panic!("bench event is invalid: {errors:?}"),
    };
    group.bench_function("check_only/exact_rule", |b| {
        b.iter(|| check(black_box(&parsed), &policy));
    });
    let facts = proposal();
    group.bench_function("route_proposal/broad_pattern", |b| {
        b.iter(|| route_proposal(black_box(&facts), &policy));
    });
    group.finish();
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// Times each decision of a round-robin stream over every event kind, one at a time.
fn latency_report(iterations: usize) {
    let policy = policy();
    let events = events();
    for (_, json) in events.iter().cycle().take(10_000.min(iterations * 10)) {
        black_box(check_json_str(black_box(json), &policy));
    }
    let mut all = Vec::with_capacity(iterations);
    let mut per_kind: Vec<Vec<Duration>> =
        vec![Vec::with_capacity(iterations / events.len() + 1); events.len()];
    for i in 0..iterations {
        let k = i % events.len();
        let start = Instant::now();
        let decision = check_json_str(black_box(&events[k].1), &policy);
        let elapsed = start.elapsed();
        black_box(decision);
        all.push(elapsed);
        per_kind[k].push(elapsed);
    }
    let line = |label: &str, samples: &mut Vec<Duration>| {
        samples.sort_unstable();
        let mean = samples.iter().sum::<Duration>() / samples.len().max(1) as u32;
        println!(
            "  {label:<16} n={:<7} mean={:>8.2?} p50={:>8.2?} p90={:>8.2?} p99={:>8.2?} p99.9={:>8.2?} max={:>8.2?}",
            samples.len(),
            mean,
            percentile(samples, 50.0),
            percentile(samples, 90.0),
            percentile(samples, 99.0),
            percentile(samples, 99.9),
            samples[samples.len() - 1],
        );
    };
    println!(
        "parse + route per decision, {RULES}-rule policy, {iterations} decisions (each timed alone):"
    );
    for (k, (label, _)) in events.iter().enumerate() {
        line(label, &mut per_kind[k]);
    }
    line("all", &mut all);
    let p99 = percentile(&all, 99.0);
    println!(
        "  p99 {p99:.2?} against a target of {TARGET_P99:?}: {}",
        if p99 < TARGET_P99 {
            "within target"
        } else {
            "OVER TARGET"
        }
    );
}

mod group {
    //! The criterion group (its generated function carries no docs of its own).
    #![allow(missing_docs)]
    use super::{Criterion, Duration, bench_decisions, criterion_group};

    criterion_group! {
        name = benches;
        config = Criterion::default()
            .warm_up_time(Duration::from_millis(500))
            .measurement_time(Duration::from_secs(2));
        targets = bench_decisions
    }
}

fn main() {
    let bench_mode = std::env::args().any(|a| a == "--bench");
    latency_report(if bench_mode { 100_000 } else { 1_000 });
    group::benches();
    Criterion::default().configure_from_args().final_summary();
}
