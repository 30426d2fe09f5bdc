//! `audit verify`'s own work: the pure [`Verifier`] over a trail of 1,000,000 chained rows as
//! the database returns them (`details` as stored JSON text, with the facet columns), built
//! from realistic events (`support/trail_gen.rs`) and hashed by the writer's own code
//! ([`ChainedEvent::link_hash`]).
//!
//! - `sqlite_text`: `details` as SQLite stores it (compact, canonical already): the fast path.
//! - `postgres_text` (100,000 rows): `details` as PostgreSQL's `jsonb` prints it (spaces, keys
//!   by length): every row parsed and canonicalised, the slow path.
//!
//! Target: the whole `countersign audit verify` of 1,000,000 events under 3 s on one core;
//! `scripts/bench-verify` times the command, this the verifier alone. `cargo bench --bench
//! verify` runs the full sizes; `cargo test --benches` a smoke run of 10,000 rows.

#[path = "support/trail_gen.rs"]
mod trail_gen;

use std::hint::black_box;
use std::time::{Duration, Instant};

use countersign::audit::chain::{
    ChainedEvent, FACETS, GENESIS, Head, RowRef, Verifier, facet_of, trail_time,
};
use countersign::audit::safe::Salt;
use countersign::domain::Policy;
use criterion::{Criterion, SamplingMode};
use serde_json::Value;
use time::OffsetDateTime;
use uuid::Uuid;

/// Distinct payloads; rows reuse them (each row still has its own seq, id, time and hash).
const TEMPLATES: usize = 1_000;

/// One distinct payload, as the database returns it.
struct Template {
    details: String,
    facets: [Option<String>; 5],
    kind: &'static str,
    subject_type: &'static str,
    subject_id: String,
    before_status: Option<String>,
    after_status: Option<String>,
    actor: String,
}

/// A generated trail: payload templates, and per row its template and its own link.
struct Trail {
    templates: Vec<Template>,
    rows: Vec<(usize, Uuid, OffsetDateTime, String)>,
}

impl Trail {
    /// `n` rows, `details` stored as `text` writes it, hashed by the writer's code.
    fn generate(n: usize, text: fn(&Value) -> String) -> Self {
        let salt = Salt::from_bytes(&[7; 32]).unwrap_or_else(|| unreachable!("32 bytes"));
        let policy = Policy::builtin();
        let parsed: Vec<_> = (0..TEMPLATES.min(n))
            .map(|i| {
                let (actor, event) = trail_gen::event(&salt, &policy, i);
                (
                    actor,
                    event.into_row().unwrap_or_else(|e| unreachable!("{e}")),
                )
            })
            .collect();
        let templates: Vec<_> = parsed
            .iter()
            .map(|(actor, row)| Template {
                details: text(&row.details),
                facets: FACETS.map(|f| {
                    facet_of(&row.details, f, actor.kind.as_str(), &actor.name).map(str::to_owned)
                }),
                kind: row.kind,
                subject_type: row.subject_type,
                subject_id: row.subject_id.clone(),
                before_status: row.before_status.clone(),
                after_status: row.after_status.clone(),
                actor: actor.name.clone(),
            })
            .collect();
        let start = trail_time(OffsetDateTime::now_utc());
        let mut prev = GENESIS.to_owned();
        let rows = (0..n)
            .map(|i| {
                let t = i % templates.len();
                let (actor, row) = &parsed[t];
                let event = ChainedEvent {
                    seq: i as i64 + 1,
                    id: Uuid::now_v7(),
                    at: start + Duration::from_micros(i as u64),
                    actor_kind: actor.kind.as_str().to_owned(),
                    actor: actor.name.clone(),
                    kind: row.kind.to_owned(),
                    subject_type: row.subject_type.to_owned(),
                    subject_id: row.subject_id.clone(),
                    before_status: row.before_status.clone(),
                    after_status: row.after_status.clone(),
                    details: row.details.clone(),
                    hash: String::new(),
                };
                let hash = (event.link_hash(&prev)).unwrap_or_else(|e| unreachable!("{e}"));
                prev.clone_from(&hash);
                (t, event.id, event.at, hash)
            })
            .collect();
        Self { templates, rows }
    }

    /// Verifies every row, as `audit verify` does after reading them.
    fn verify(&self) -> Head {
        let mut v = Verifier::new(Vec::new());
        for (i, (t, id, at, hash)) in self.rows.iter().enumerate() {
            let t = &self.templates[*t];
            let row = RowRef {
                seq: i as i64 + 1,
                id: *id,
                at: *at,
                actor_kind: "agent",
                actor: &t.actor,
                kind: t.kind,
                subject_type: t.subject_type,
                subject_id: &t.subject_id,
                before_status: t.before_status.as_deref(),
                after_status: t.after_status.as_deref(),
                details: &t.details,
                hash,
                facets: t.facets.each_ref().map(Option::as_deref),
            };
            if let Err(e) = v.push_stored(&row) {
                panic!("the generated trail does not verify: {e}");
            }
        }
        v.finish()
            .unwrap_or_else(|e| panic!("the generated trail does not verify: {e}"))
    }
}

/// PostgreSQL's `jsonb` text: spaces after `:` and `,`, keys shortest first.
fn jsonb_text(v: &Value) -> String {
    match v {
        Value::Object(m) => {
            let mut keys: Vec<_> = m.keys().collect();
            keys.sort_by_key(|k| (k.len(), *k));
            let members: Vec<String> = keys
                .into_iter()
                .map(|k| format!("{}: {}", Value::from(k.as_str()), jsonb_text(&m[k])))
                .collect();
            format!("{{{}}}", members.join(", "))
        }
        Value::Array(a) => {
            let items: Vec<String> = a.iter().map(jsonb_text).collect();
            format!("[{}]", items.join(", "))
        }
        other => other.to_string(),
    }
}

fn compact_text(v: &Value) -> String {
    v.to_string()
}

fn bench(c: &mut Criterion, name: &str, n: usize, text: fn(&Value) -> String) {
    let started = Instant::now();
    let trail = Trail::generate(n, text);
    eprintln!("{name}: generated {n} rows in {:.1?}", started.elapsed());
    let once = Instant::now();
    let head = trail.verify();
    let took = once.elapsed();
    assert_eq!(head.seq, n as i64);
    eprintln!(
        "{name}: verified {n} rows in {took:.2?} ({:.0} ns/row)",
        took.as_nanos() as f64 / n as f64
    );
    let mut group = c.benchmark_group("verify");
    group
        .sampling_mode(SamplingMode::Flat)
        .sample_size(10)
        .measurement_time(Duration::from_secs(if n >= 100_000 { 20 } else { 2 }));
    group.bench_function(format!("{name}/{n}"), |b| {
        b.iter(|| black_box(trail.verify()))
    });
    group.finish();
}

fn main() {
    let bench_mode = std::env::args().any(|a| a == "--bench");
    let mut c = Criterion::default().configure_from_args();
    let (fast, slow) = if bench_mode {
        (1_000_000, 100_000)
    } else {
        (10_000, 1_000)
    };
    bench(&mut c, "sqlite_text", fast, compact_text);
    bench(&mut c, "postgres_text", slow, jsonb_text);
    c.final_summary();
}
