//! The compliance officer's reads of the trail, on both backends: keyset pages visit every
//! selected event exactly once (unfiltered, by one facet, by two facets where a page runs out
//! of its scan budget, by time range), both ways; time ranges are exact at their ends; an
//! export of a selection with gaps verifies offline row by row and fails after a one-byte edit.

mod common;

use countersign::domain::principal::Principal;
use std::collections::BTreeSet;

use countersign::audit::bundle;
use countersign::audit::{Actor, AuditEvent, ProposalInputRejected};
use countersign::service::{Cursor, SCAN_BUDGET, Services, TRAIL_PAGE, TrailPage};
use countersign::storage::audit_query::Selection;
use time::{Duration, OffsetDateTime};

struct Db {
    services: Services,
    _dir: Option<tempfile::TempDir>,
}

async fn db(backend: &str) -> Db {
    let (services, _, dir) = common::fresh_services(backend).await;
    Db {
        services,
        _dir: dir,
    }
}

/// The start of the filled trail: event `i` is at `T0 + i` seconds.
fn t0() -> OffsetDateTime {
    time::macros::datetime!(2026-11-20 0:00 UTC)
}

/// What event `i` of the fill is: its agent facet and actor.
fn agent_of(i: usize) -> &'static str {
    if i % 10 == 3 { "agent-b" } else { "agent-a" }
}
fn actor_of(i: usize) -> &'static str {
    if i % 1_000 == 7 { "rare" } else { "common" }
}

/// Appends `n` events, one second apart, in batches: seqs 1..=n.
async fn fill(services: &Services, n: usize) {
    for chunk in (0..n).collect::<Vec<_>>().chunks(2_000) {
        let events = chunk
            .iter()
            .map(|&i| {
                // An event that names its agent: here another than its actor.
                let event = AuditEvent::ProposalInputRejected(ProposalInputRejected {
                    agent: agent_of(i).to_owned(),
                    fields: vec!["tool.name".into()],
                });
                (
                    t0() + Duration::seconds(i as i64),
                    Actor::agent(actor_of(i)),
                    event,
                )
            })
            .collect();
        services.store().record(events).await.expect("record");
    }
}

/// Walks older pages from the newest; every seq seen, in order, and how many pages it took.
async fn walk_older(services: &Services, sel: &Selection) -> (Vec<i64>, usize) {
    let mut seen = Vec::new();
    let mut cursor = Cursor::Newest;
    let mut pages = 0;
    loop {
        let page: TrailPage = services
            .trail_page(&Principal::Operator, sel, cursor)
            .await
            .expect("page");
        pages += 1;
        assert!(page.events.len() <= TRAIL_PAGE as usize);
        seen.extend(page.events.iter().map(|e| e.event.seq));
        match page.older {
            Some(before) => cursor = Cursor::Before(before),
            None => break,
        }
        assert!(pages < 10_000, "the walk does not end");
    }
    (seen, pages)
}

/// Walks newer pages from the oldest.
async fn walk_newer(services: &Services, sel: &Selection) -> Vec<i64> {
    let mut seen = Vec::new();
    let mut cursor = Cursor::Oldest;
    loop {
        let page = services
            .trail_page(&Principal::Operator, sel, cursor)
            .await
            .expect("page");
        let mut seqs: Vec<i64> = page.events.iter().map(|e| e.event.seq).collect();
        seqs.reverse();
        seen.extend(seqs);
        match page.newer {
            Some(after) => cursor = Cursor::After(after),
            None => break,
        }
    }
    seen
}

fn expected(n: usize, keep: impl Fn(usize) -> bool) -> Vec<i64> {
    (0..n)
        .filter(|&i| keep(i))
        .map(|i| i as i64 + 1)
        .rev()
        .collect()
}

fn assert_once(seen: &[i64], want: &[i64]) {
    let distinct: BTreeSet<_> = seen.iter().collect();
    assert_eq!(distinct.len(), seen.len(), "an event was shown twice");
    assert_eq!(seen, want, "every selected event, newest first");
}

async fn pages_visit_every_selected_event_exactly_once(backend: &str) {
    let db = db(backend).await;
    let n = SCAN_BUDGET as usize + 2_345;
    fill(&db.services, n).await;
    let s = &db.services;

    let all = Selection::default();
    let (seen, pages) = walk_older(s, &all).await;
    assert_once(&seen, &expected(n, |_| true));
    assert_eq!(pages, n.div_ceil(TRAIL_PAGE as usize));

    let one = Selection {
        agent: Some("agent-b".into()),
        ..Selection::default()
    };
    assert_once(
        &walk_older(s, &one).await.0,
        &expected(n, |i| agent_of(i) == "agent-b"),
    );

    // Two facets: the agent index drives (most events), the actor is checked on the walk;
    // matches are rare, so a page stops at its scan budget and the next continues below it.
    let two = Selection {
        agent: Some("agent-a".into()),
        actor: Some("rare".into()),
        ..Selection::default()
    };
    let want = expected(n, |i| agent_of(i) == "agent-a" && actor_of(i) == "rare");
    assert!(!want.is_empty());
    let (seen, pages) = walk_older(s, &two).await;
    assert_once(&seen, &want);
    assert!(pages > 1, "the budget split the walk");
    let first = s
        .trail_page(&Principal::Operator, &two, Cursor::Newest)
        .await
        .expect("page");
    assert!(first.searched_to.is_some());

    let mut up = walk_newer(s, &two).await;
    up.reverse();
    assert_once(&up, &want);

    // A time range: from the 100th to the 300th second (exclusive).
    let timed = Selection {
        from: Some(t0() + Duration::seconds(100)),
        until: Some(t0() + Duration::seconds(300)),
        ..Selection::default()
    };
    assert_once(
        &walk_older(s, &timed).await.0,
        &expected(n, |i| (100..300).contains(&i)),
    );
    let timed_agent = Selection {
        agent: Some("agent-b".into()),
        ..timed.clone()
    };
    assert_once(
        &walk_older(s, &timed_agent).await.0,
        &expected(n, |i| (100..300).contains(&i) && agent_of(i) == "agent-b"),
    );
    let nothing = Selection {
        tool: Some("no-such-tool".into()),
        ..Selection::default()
    };
    assert_once(&walk_older(s, &nothing).await.0, &[]);
}

async fn an_export_of_a_selection_with_gaps_verifies_row_by_row(backend: &str) {
    let db = db(backend).await;
    fill(&db.services, 300).await;
    let dir = tempfile::tempdir().expect("dir");
    let sel = Selection {
        agent: Some("agent-b".into()),
        from: Some(t0() + Duration::seconds(30)),
        ..Selection::default()
    };
    let out = dir.path().join("gaps");
    let manifest = db
        .services
        .export_selection(&Principal::Operator, &out, &sel)
        .await
        .expect("export");
    let want = expected(300, |i| i >= 30 && agent_of(i) == "agent-b");
    assert_eq!(manifest.count, want.len() as i64);
    assert_eq!(
        (manifest.first_seq, manifest.last_seq),
        (want[want.len() - 1], want[0])
    );
    assert!(!manifest.contiguous);
    assert_eq!(manifest.selection["agent"], "agent-b");
    let (verified, head) = bundle::verify(&out, None).expect("verifies");
    assert_eq!(
        (verified.count, head.seq),
        (manifest.count, manifest.last_seq)
    );
    let text = std::fs::read_to_string(out.join(bundle::EVENTS)).expect("read");
    assert!(text.lines().all(|l| l.contains("\"prev_hash\"")));

    // A time range alone is one stretch of the chain, without links.
    let stretch = dir.path().join("stretch");
    let range = Selection {
        from: Some(t0() + Duration::seconds(10)),
        until: Some(t0() + Duration::seconds(20)),
        ..Selection::default()
    };
    let m = db
        .services
        .export_selection(&Principal::Operator, &stretch, &range)
        .await
        .expect("export");
    assert_eq!(
        (m.count, m.first_seq, m.last_seq, m.contiguous),
        (10, 11, 20, true)
    );
    bundle::verify(&stretch, None).expect("verifies");

    // One changed byte is caught.
    let events = out.join(bundle::EVENTS);
    let mut bytes = std::fs::read(&events).expect("read");
    let at = bytes.len() / 2;
    bytes[at] = if bytes[at] == b'a' { b'b' } else { b'a' };
    std::fs::write(&events, bytes).expect("write");
    let err = bundle::verify(&out, None).expect_err("one byte changed");
    assert!(err.to_string().contains("events.jsonl"), "{err}");
}

macro_rules! on_both_backends {
    ($($name:ident),* $(,)?) => {
        mod sqlite {
            $( #[tokio::test] async fn $name() { super::$name("sqlite").await } )*
        }
        mod postgres {
            $( #[tokio::test] async fn $name() { super::$name("postgres").await } )*
        }
    };
}

on_both_backends!(
    pages_visit_every_selected_event_exactly_once,
    an_export_of_a_selection_with_gaps_verifies_row_by_row,
);
