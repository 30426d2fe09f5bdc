//! The expiry sweeps as history grows, on both backends: each finds what is due through an
//! index of its own (named with `indexed by` on SQLite, whose planner would otherwise take the
//! status index and read every row of that status) (never by reading every pending proposal or queued command, which took
//! 0.4-0.6 s of the writer at a million proposals), and a backlog larger than one batch is
//! worked off in one sweep, a batch per write.

mod common;

use common::clock::SetClock;

use std::sync::Arc;

use countersign::domain::Policy;
use countersign::domain::principal::Principal;
use countersign::service::{Services, Submitted};
use countersign::storage;
use time::{Duration, OffsetDateTime};

common::on_both_backends!(
    a_backlog_of_overdue_proposals_expires_in_one_sweep,
    the_sweeps_find_what_is_due_through_their_indexes,
);

async fn a_backlog_of_overdue_proposals_expires_in_one_sweep(backend: &str) {
    let (url, _dir) = common::fresh_database(backend);
    let (store, _) = storage::connect(&url).await.expect("store");
    let now = OffsetDateTime::now_utc();
    // Submitted a day and a minute ago: the built-in policy gives a proposal 24 hours.
    let clock = Arc::new(SetClock::at(
        now - Duration::hours(24) - Duration::minutes(1),
    ));
    let services = Services::with_clock(store, Arc::new(Policy::builtin()), clock.clone());
    let agent = Principal::Agent("agent-a".into());
    for _ in 0..520 {
        let created = services
            .submit(&agent, &common::proposal_body("agent-a"))
            .await;
        assert!(matches!(created, Ok(Submitted::Created(_))), "{created:?}");
    }
    clock.set(now);
    let expired = services.expire_due().await.expect("sweep");
    assert_eq!(
        expired.len(),
        520,
        "two batches (500, then 20) in one sweep"
    );
    let pending = "select count(*) from proposals where status = 'pending'";
    assert_eq!(common::count(&url, pending).await, 0);
    let events = "select count(*) from audit_events where action = 'proposal.expired'";
    assert_eq!(common::count(&url, events).await, 520);
    assert!(services.expire_due().await.expect("sweep").is_empty());
}

/// The plan of each sweep's search for what is due (as `storage::proposals::expire_due`,
/// `storage::commands::expire_unleased` and `storage::alerts::expiring_unwarned` ask it).
async fn the_sweeps_find_what_is_due_through_their_indexes(backend: &str) {
    let (url, _dir) = common::fresh_database(backend);
    storage::connect(&url).await.expect("migrated");
    let searches: [(&str, &str, &str); 3] = [
        (
            "select seq from proposals indexed by proposals_expiring where status = 'pending' \
             and julianday(expires_at) <= julianday('2026-01-01') \
             order by julianday(expires_at) limit 500",
            "select seq from proposals where status = 'pending' \
             and expires_at <= '2026-01-01' order by expires_at limit 500",
            "proposals_expiring|queue_by_expiry",
        ),
        (
            "select seq from commands indexed by commands_expiring where status = 'queued' \
             and attempts = 0 and execute_by is not null and julianday(execute_by) <= julianday('2026-01-01') \
             order by julianday(execute_by) limit 500",
            "select seq from commands where status = 'queued' and attempts = 0 \
             and execute_by is not null and execute_by <= '2026-01-01' \
             order by execute_by limit 500",
            "commands_expiring",
        ),
        (
            "select p.id from proposals p indexed by proposals_expiring where p.status = 'pending' \
             and julianday(p.expires_at) <= julianday('2026-01-02') \
             and julianday(p.expires_at) > julianday('2026-01-01') \
             order by julianday(p.expires_at) limit 100",
            "select p.id from proposals p where p.status = 'pending' \
             and p.expires_at <= '2026-01-02' and p.expires_at > '2026-01-01' \
             order by p.expires_at limit 100",
            "proposals_expiring|queue_by_expiry",
        ),
    ];
    for (sqlite, postgres, indexes) in searches {
        let plan = plan_of(&url, sqlite, postgres).await;
        assert!(
            indexes.split('|').any(|i| plan.contains(i)),
            "{backend}: expected {indexes} in the plan of\n{sqlite}\n{plan}"
        );
    }
}

/// The query plan of `sqlite` or `postgres` (as the database is), its lines joined.
async fn plan_of(url: &str, sqlite: &str, postgres: &str) -> String {
    use sqlx::{Connection, Row};
    if url.starts_with("sqlite:") {
        let mut c = sqlx::SqliteConnection::connect(url).await.expect("connect");
        let rows = sqlx::query(&format!("explain query plan {sqlite}"))
            .fetch_all(&mut c)
            .await
            .expect("plan");
        rows.iter()
            .map(|r| r.get::<String, _>(3))
            .collect::<Vec<_>>()
            .join("; ")
    } else {
        let mut c = sqlx::PgConnection::connect(url).await.expect("connect");
        // An empty table is cheaper to read whole: ask whether the index serves at all.
        sqlx::query("set enable_seqscan = off")
            .execute(&mut c)
            .await
            .expect("set");
        let rows = sqlx::query(&format!("explain {postgres}"))
            .fetch_all(&mut c)
            .await
            .expect("plan");
        rows.iter()
            .map(|r| r.get::<String, _>(0))
            .collect::<Vec<_>>()
            .join("; ")
    }
}
