//! Decision insights at scale: `Services::insights` (every figure of `/insights`, each one
//! grouped read) over a database holding `ROWS` decided proposals (default 1,000,000), spread
//! over 30 days, 20 reviewers and 8 domains, each a copy of one real proposal decided through
//! the services (so its contract and routing look as they do in production). Their decisions
//! are counted into `decision_stats` by the migration's own backfill statement, as the server
//! counts each decision when it is taken.
//!
//! ```sh
//! cargo bench --bench insights -- sqlite 1000000
//! cargo bench --bench insights -- postgres 1000000   # COUNTERSIGN_TEST_PG_URL, default local
//! ```
//!
//! Target: p95 under 100 ms for the whole call, 30-day window. Prints p50, p95 and max of 30
//! calls after 3 warm-up calls, and how long seeding took. `cargo test --benches` only builds it.

use std::sync::Arc;
use std::time::{Duration, Instant};

use countersign::domain::lifecycle::ReviewVerdict;
use countersign::domain::principal::{Principal, Role};
use countersign::service::Services;
use sqlx::{Connection, Executor, PgConnection, Row, SqliteConnection};
use uuid::Uuid;

const CALLS: usize = 30;
const WARM_UP: usize = 3;

fn proposal(agent: &str) -> serde_json::Value {
    serde_json::json!({
        "proposal_id": Uuid::new_v4(),
        "proposed_by": agent,
        "timestamp": "2026-11-22T10:00:00Z",
        "domain": "sales",
        "tool": {"name": "crm.update_contact", "version": "2024-01"},
        "intent": {"summary": "Update the contact's email", "reasoning": "The customer asked for it in ticket 42."},
        "parameters": {"contact_id": "c-123", "email": "new@example.com"},
        "risk_level": "medium",
        "approval_required": true,
        "compliance_context": {"gdpr": false, "hipaa": false},
        "idempotency_key": format!("key-{}", Uuid::new_v4()),
        "rollback_supported": true,
        "blast_radius": "small",
        "target_refs": [{"type": "crm_contact", "id": "c-123"}]
    })
}

/// The columns of `proposals` but `seq`, each as the copy's expression: the overridden ones
/// varied by the row number `i`, the others copied from the template `t`.
fn select_list(columns: &[String], postgres: bool) -> String {
    let over = |c: &str| -> Option<&'static str> {
        Some(match (c, postgres) {
            ("id", false) => "randomblob(16)",
            ("id", true) => "gen_random_uuid()",
            ("idempotency_key", false) => "'bench-' || i",
            ("idempotency_key", true) => "'bench-' || i::text",
            ("decided_by", false) => "'reviewer-' || (i % 20)",
            ("decided_by", true) => "'reviewer-' || (i % 20)::text",
            ("domain", false) => "'domain-' || (i % 8)",
            ("domain", true) => "'domain-' || (i % 8)::text",
            ("decision", _) => "case when i % 5 = 0 then 'rejected' else 'approved' end",
            ("status", _) => "case when i % 5 = 0 then 'rejected' else 'approved' end",
            ("decided_at", false) => {
                "strftime('%Y-%m-%dT%H:%M:%fZ', 'now', '-' || (i % 2592000) || ' seconds')"
            }
            ("decided_at", true) => "now() - make_interval(secs => i % 2592000)",
            ("created_at" | "updated_at", false) => {
                "strftime('%Y-%m-%dT%H:%M:%fZ', 'now', '-' || (i % 2592000 + i % 3600) || ' seconds')"
            }
            ("created_at" | "updated_at", true) => {
                "now() - make_interval(secs => i % 2592000 + i % 3600)"
            }
            _ => return None,
        })
    };
    columns
        .iter()
        .map(|c| over(c).map_or_else(|| format!("t.{c}"), str::to_owned))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The statement of the migration that counts decisions already taken (what the server does
/// at each decision, done once for the seeded rows).
fn backfill(migration: &str) -> String {
    let at = migration
        .find("insert into decision_stats")
        .expect("the backfill statement");
    migration[at..].to_owned()
}

async fn seed_sqlite(url: &str, template: Uuid, rows: usize) {
    let mut c = SqliteConnection::connect(url).await.expect("sqlite");
    let columns: Vec<String> = sqlx::query("select name from pragma_table_info('proposals')")
        .fetch_all(&mut c)
        .await
        .expect("columns")
        .iter()
        .map(|r| r.get::<String, _>(0))
        .filter(|n| n != "seq")
        .collect();
    let list = columns.join(", ");
    let select = select_list(&columns, false);
    let sql = format!(
        "with recursive n(i) as (select 1 union all select i + 1 from n where i < {rows}) \
         insert into proposals ({list}) select {select} from n, proposals t where t.id = ?"
    );
    sqlx::query(&sql)
        .bind(template)
        .execute(&mut c)
        .await
        .expect("seed");
    c.execute("delete from decision_stats")
        .await
        .expect("reset");
    let count = backfill(include_str!(
        "../migrations/sqlite/20261205000004_decision_stats.sql"
    ));
    c.execute(count.as_str()).await.expect("count");
    c.execute("analyze").await.expect("analyze");
}

async fn seed_postgres(url: &str, template: Uuid, rows: usize) {
    let mut c = PgConnection::connect(url).await.expect("postgres");
    let columns: Vec<String> = sqlx::query(
        "select column_name::text from information_schema.columns \
         where table_name = 'proposals' order by ordinal_position",
    )
    .fetch_all(&mut c)
    .await
    .expect("columns")
    .iter()
    .map(|r| r.get::<String, _>(0))
    .filter(|n| n != "seq")
    .collect();
    let list = columns.join(", ");
    let select = select_list(&columns, true);
    let sql = format!(
        "insert into proposals ({list}) select {select} \
         from generate_series(1, {rows}) as g(i), proposals t where t.id = $1"
    );
    sqlx::query(&sql)
        .bind(template)
        .execute(&mut c)
        .await
        .expect("seed");
    c.execute("delete from decision_stats")
        .await
        .expect("reset");
    let count = backfill(include_str!(
        "../migrations/postgres/20261205000004_decision_stats.sql"
    ));
    c.execute(count.as_str()).await.expect("count");
    c.execute("analyze").await.expect("analyze");
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let rank = ((sorted.len() as f64) * p).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect();
    let backend = args.first().map_or("sqlite", String::as_str).to_owned();
    let rows: usize = args
        .get(1)
        .and_then(|n| n.parse().ok())
        .unwrap_or(1_000_000);
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    runtime.block_on(async move {
        let dir = tempfile::tempdir().expect("temp dir");
        let url = match backend.as_str() {
            "sqlite" => format!("sqlite://{}/insights.db", dir.path().display()),
            "postgres" => {
                let base = std::env::var("COUNTERSIGN_TEST_PG_URL")
                    .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432".into());
                format!(
                    "{}/cs_bench_{}",
                    base.trim_end_matches('/'),
                    Uuid::new_v4().simple()
                )
            }
            other => panic!("unknown backend {other}: sqlite or postgres"),
        };
        let (store, _) = countersign::storage::connect(&url).await.expect("database");
        let policy = Arc::new(countersign::domain::Policy::builtin());
        let services = Services::new(store, policy);
        let admin = Principal::Operator;
        for (name, role) in [("rev", Role::Reviewer), ("cora", Role::Compliance)] {
            let new = countersign::service::NewUser::new(name, role, "a long enough password");
            services.add_user(&admin, new).await.expect("user");
        }
        let agent = Principal::Agent("agent-a".into());
        let template = services
            .submit(&agent, &proposal("agent-a"))
            .await
            .expect("submit")
            .record()
            .id;
        let rev = Principal::person("rev", Role::Reviewer);
        services
            .decide(&rev, template, ReviewVerdict::Approved, None)
            .await
            .expect("decided");
        let started = Instant::now();
        match backend.as_str() {
            "sqlite" => seed_sqlite(&url, template, rows).await,
            _ => seed_postgres(&url, template, rows).await,
        }
        let seeded = started.elapsed();

        let cora = Principal::person("cora", Role::Compliance);
        let mut times = Vec::with_capacity(CALLS);
        let mut reviewers = 0;
        for n in 0..WARM_UP + CALLS {
            let t = Instant::now();
            let i = services.insights(&cora, 30).await.expect("insights");
            if n >= WARM_UP {
                times.push(t.elapsed());
            }
            reviewers = i.reviewers.len();
        }
        times.sort();
        println!(
            "insights, {backend}, {rows} decided proposals ({reviewers} reviewers), seeded in \
             {:.1} s: p50 {:.1} ms, p95 {:.1} ms, max {:.1} ms over {CALLS} calls",
            seeded.as_secs_f64(),
            percentile(&times, 0.50).as_secs_f64() * 1e3,
            percentile(&times, 0.95).as_secs_f64() * 1e3,
            times.last().map_or(0.0, |d| d.as_secs_f64() * 1e3),
        );
        if let Some((base, name)) = url.rsplit_once('/').filter(|_| backend == "postgres") {
            // A million rows are not left behind.
            let mut c = PgConnection::connect(&format!("{base}/postgres"))
                .await
                .expect("postgres");
            let drop = format!("drop database \"{name}\" with (force)");
            c.execute(drop.as_str())
                .await
                .expect("drop the bench database");
        }
    });
}
