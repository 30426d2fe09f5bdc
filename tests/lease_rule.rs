//! The lease rule has one source, [`countersign::domain::command::scope::may_lease`]; storage
//! states it again in SQL for speed (a SQLite `GLOB` and a PostgreSQL `LIKE` translation, with
//! the policy's `allowed_executors` as a filter column). This property test generates tool
//! names, patterns (`_`, `%`, `*`, `?`, `[`, `.`, `\`, `,`, non-ASCII), executors, approval
//! windows and paused tools, lets the real statement lease on a real SQLite file and a real
//! PostgreSQL database, and holds what each leased to what the domain says may be leased.
//!
//! Times are whole milliseconds: SQLite compares instants to the millisecond (`julianday`, as
//! every time comparison in storage does), so two instants less than a millisecond apart may
//! compare equal there.

mod common;

use countersign::domain::principal::Principal;
use std::collections::BTreeSet;

use countersign::domain::command::scope::{LeaseRequest, QueuedCommand, ToolScope, may_lease};
use countersign::domain::command::{CommandKind, CommandSpec, CommandStatus};
use countersign::domain::policy::glob::Glob;
use countersign::service::{Services, Submitted};
use countersign::storage::commands::{self, LeaseAsk, NewCommand};
use countersign::storage::{Conn, StorageError, Tx, paused};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};
use time::{Duration, OffsetDateTime};
use uuid::Uuid;

/// Characters tool names and patterns are made of: what LIKE, GLOB or a percent-encoding treat
/// specially, a dot, both cases, and characters of two and three bytes in UTF-8.
const ALPHABET: &[char] = &[
    'a', 'a', 'A', 'b', '.', '.', '_', '%', '*', '?', '[', ']', '\\', ',', 'é', '日',
];

/// Executor names a policy may list (any string) and an executor may lease as.
const EXECUTORS: &[&str] = &["x", "y", "x,y", "x%2Cy", "%", "_"];

/// A generated command: its tool, the executors its approval named, its status, attempts,
/// and its backoff's end and approval window's end in milliseconds from the lease.
#[derive(Debug, Clone)]
struct Cmd {
    tool: String,
    allowed: Vec<String>,
    status: CommandStatus,
    attempts: i32,
    available_ms: i64,
    execute_by_ms: Option<i64>,
}

/// A generated lease: the executor, its token's scope, the tools it asks for.
#[derive(Debug, Clone)]
struct Ask {
    executor: String,
    scope: Option<Vec<String>>,
    wanted: Option<Vec<String>>,
}

/// One world: the queue, the paused patterns, and the leases to try on it.
#[derive(Debug, Clone)]
struct World {
    commands: Vec<Cmd>,
    paused: Vec<String>,
    asks: Vec<Ask>,
}

fn text(chars: &'static [char], len: std::ops::Range<usize>) -> impl Strategy<Value = String> {
    prop::collection::vec(prop::sample::select(chars), len).prop_map(|c| c.into_iter().collect())
}

/// Patterns: the alphabet with wildcards more often, so they match the tools.
fn pattern() -> impl Strategy<Value = String> {
    prop_oneof![
        1 => Just("*".to_owned()),
        6 => text(&['a', 'A', '.', '_', '%', '*', '*', '?', '?', '[', '\\', ',', 'é', '日'], 1..5),
    ]
}

fn names() -> impl Strategy<Value = Vec<String>> {
    prop::collection::vec(prop::sample::select(EXECUTORS), 0..3).prop_map(|names| {
        let mut out: Vec<String> = Vec::new();
        for n in names {
            if !out.iter().any(|o| o == n) {
                out.push(n.to_owned());
            }
        }
        out
    })
}

fn command() -> impl Strategy<Value = Cmd> {
    (
        text(ALPHABET, 1..5),
        names(),
        prop_oneof![6 => Just(CommandStatus::Queued), 1 => Just(CommandStatus::AwaitingApproval)],
        0..2i32,
        -2..3i64,
        prop::option::of(-2..3i64),
    )
        .prop_map(
            |(tool, allowed, status, attempts, available_ms, execute_by_ms)| Cmd {
                tool,
                allowed,
                status,
                attempts,
                available_ms,
                execute_by_ms,
            },
        )
}

fn ask() -> impl Strategy<Value = Ask> {
    (
        prop::sample::select(EXECUTORS),
        prop::option::of(prop::collection::vec(pattern(), 1..3)),
        prop::option::of(prop::collection::vec(pattern(), 1..3)),
    )
        .prop_map(|(executor, scope, wanted)| Ask {
            executor: executor.to_owned(),
            scope,
            wanted,
        })
}

fn world() -> impl Strategy<Value = World> {
    (
        prop::collection::vec(command(), 1..8),
        prop::collection::vec(pattern(), 0..3),
        prop::collection::vec(ask(), 1..4),
    )
        .prop_map(|(commands, paused, asks)| World {
            commands,
            paused,
            asks,
        })
}

/// One backend's database: the services over it, the proposal every command belongs to, and a
/// spec to copy.
struct Db {
    backend: &'static str,
    services: Services,
    proposal: Uuid,
    spec: CommandSpec,
    _dir: Option<tempfile::TempDir>,
}

async fn db(backend: &'static str) -> Db {
    let (services, _url, dir) = common::fresh_services(backend).await;
    let proposal = match services
        .submit(
            &Principal::Agent("agent-a".into()),
            &common::proposal_body("agent-a"),
        )
        .await
    {
        Ok(Submitted::Created(p)) => p.id,
        other => panic!("expected a new proposal, got {other:?}"),
    };
    let spec = serde_json::from_value(serde_json::json!({
        "tool": {"name": "crm.update_contact", "version": "1"},
        "parameters": {},
        "idempotency_key": "k",
        "rollback_supported": false,
        "authorization_state": "confirmed",
        "domain": "sales",
        "request_hash_sha256": "0".repeat(64),
        "approved_by": "rev",
        "approved_at": "2026-11-22T10:00:00Z"
    }))
    .expect("spec");
    Db {
        backend,
        services,
        proposal,
        spec,
        _dir: dir,
    }
}

/// Runs one statement of the test's own (emptying a table, setting attempts) on `conn`.
async fn exec(conn: Conn<'_>, sql: &str, id: Option<(i32, Uuid)>) -> Result<(), StorageError> {
    match (conn, id) {
        (Conn::Sqlite(c), Some((n, id))) => sqlx::query(sql).bind(n).bind(id).execute(c).await?,
        (Conn::Sqlite(c), None) => sqlx::query(sql).execute(c).await?,
        (Conn::Postgres(c), Some((n, id))) => {
            sqlx::query(sql).bind(n).bind(id).execute(c).await?;
            return Ok(());
        }
        (Conn::Postgres(c), None) => {
            sqlx::query(sql).execute(c).await?;
            return Ok(());
        }
    };
    Ok(())
}

/// Empties the queue and the kill switch, then queues `commands` (ids in order) and pauses
/// `paused`.
async fn stock(
    tx: &mut Tx,
    db: (Uuid, &CommandSpec),
    now: OffsetDateTime,
    commands: &[(Uuid, Cmd)],
    paused: &[String],
) -> Result<(), StorageError> {
    exec(tx.conn(), "delete from commands", None).await?;
    exec(tx.conn(), "delete from paused_tools", None).await?;
    for (id, c) in commands {
        let mut spec = db.1.clone().only_for(&c.allowed);
        spec.tool.name.clone_from(&c.tool);
        let row = NewCommand {
            id: *id,
            proposal_id: db.0,
            // Rollbacks: a proposal has one action, and the rule does not look at the kind.
            kind: CommandKind::Rollback,
            rollback_of: None,
            status: c.status,
            spec: &spec,
            execute_by: c.execute_by_ms.map(|ms| now + Duration::milliseconds(ms)),
            now: now + Duration::milliseconds(c.available_ms),
        };
        commands::insert(tx.conn(), &row).await?;
        let sql = "update commands set attempts = $1 where id = $2";
        exec(tx.conn(), sql, Some((c.attempts, *id))).await?;
    }
    for p in paused {
        paused::pause(tx.conn(), p, "admin", now).await?;
    }
    Ok(())
}

/// Leases for `ask` until nothing is left to lease; the ids leased.
async fn drain(tx: &mut Tx, ask: &LeaseAsk) -> Result<BTreeSet<Uuid>, StorageError> {
    let mut leased = BTreeSet::new();
    while let Some(claimed) = commands::claim_next(tx.conn(), ask).await? {
        if !leased.insert(claimed.command.id) {
            return Err(StorageError::Batch("one command leased twice".into()));
        }
    }
    Ok(leased)
}

/// Leases each of `ids` alone for `ask` ([`commands::claim_queued`], an accepted gateway
/// call's lease); the ids leased.
async fn each_alone(
    tx: &mut Tx,
    ask: &LeaseAsk,
    ids: &[Uuid],
) -> Result<BTreeSet<Uuid>, StorageError> {
    let mut leased = BTreeSet::new();
    for &id in ids {
        if let Some(claimed) = commands::claim_queued(tx.conn(), id, ask).await? {
            if claimed.command.id != id {
                return Err(StorageError::Batch("leased another command".into()));
            }
            leased.insert(id);
        }
    }
    Ok(leased)
}

/// The scope a lease's patterns make, or `None` if the domain refuses one of them (the API
/// answers 422 and no statement runs).
fn parsed(patterns: Option<&Vec<String>>) -> Option<Option<ToolScope>> {
    match patterns {
        None => Some(None),
        Some(p) => ToolScope::from_patterns(p.iter().map(String::as_str))
            .ok()
            .map(Some),
    }
}

/// Checks `world` on `db`: for each ask the domain does not refuse, what the statement leases
/// is what [`may_lease`] allows.
async fn check(db: &Db, world: &World) -> Result<(), TestCaseError> {
    let now = OffsetDateTime::now_utc();
    let now = now.replace_nanosecond(0).unwrap_or(now);
    // A pattern the domain refuses (`[`, `\`, …) cannot be paused: the service answers 422.
    let paused: Vec<Glob> = (world.paused.iter())
        .filter_map(|p| Glob::new(p).ok())
        .collect();
    let pausable: Vec<String> = paused.iter().map(|g| g.as_str().to_owned()).collect();
    for ask in &world.asks {
        let (Some(scope), Some(wanted)) = (parsed(ask.scope.as_ref()), parsed(ask.wanted.as_ref()))
        else {
            continue;
        };
        let commands: Vec<(Uuid, Cmd)> = (world.commands.iter())
            .map(|c| (Uuid::new_v4(), c.clone()))
            .collect();
        let request = LeaseRequest {
            executor: &ask.executor,
            scope: scope.as_ref(),
            wanted: wanted.as_ref(),
            now,
        };
        let expected: BTreeSet<Uuid> = (commands.iter())
            .filter(|(_, c)| {
                let queued = QueuedCommand {
                    status: c.status,
                    tool: &c.tool,
                    allowed_executors: &c.allowed,
                    attempts: c.attempts,
                    available_at: now + Duration::milliseconds(c.available_ms),
                    execute_by: c.execute_by_ms.map(|ms| now + Duration::milliseconds(ms)),
                };
                may_lease(&request, &queued, &paused)
            })
            .map(|(id, _)| *id)
            .collect();
        let lease = LeaseAsk {
            executor: ask.executor.clone(),
            scope: scope.as_ref().map(ToolScope::patterns),
            wanted: wanted.as_ref().map(ToolScope::patterns),
            lease_token_hash: format!("{:064x}", 0),
            now,
            expires_at: now + Duration::minutes(5),
        };
        let (proposal, spec) = (db.proposal, db.spec.clone());
        let (stocked, to_pause) = (commands.clone(), pausable.clone());
        let ids: Vec<Uuid> = commands.iter().map(|(id, _)| *id).collect();
        let (leased, alone) = (db.services.store())
            .write(move |tx| {
                Box::pin(async move {
                    stock(tx, (proposal, &spec), now, &stocked, &to_pause).await?;
                    let leased = drain(tx, &lease).await?;
                    stock(tx, (proposal, &spec), now, &stocked, &to_pause).await?;
                    Ok::<_, StorageError>((leased, each_alone(tx, &lease, &ids).await?))
                })
            })
            .await
            .map_err(|e| TestCaseError::fail(format!("{}: {e}", db.backend)))?;
        if alone != expected {
            return Err(TestCaseError::fail(format!(
                "{}: {ask:?} with paused {pausable:?}: leasing one command at a time took \
                 {alone:?}, the domain allows {expected:?}",
                db.backend
            )));
        }
        if leased != expected {
            let differ: Vec<String> = (commands.iter())
                .filter(|(id, _)| leased.contains(id) != expected.contains(id))
                .map(|(id, c)| format!("{c:?}: the SQL leased it: {}", leased.contains(id)))
                .collect();
            return Err(TestCaseError::fail(format!(
                "{}: {ask:?} with paused {pausable:?} disagrees with the domain on {differ:?}",
                db.backend
            )));
        }
    }
    Ok(())
}

/// Both dialects of both lease statements (the oldest command, and one command by id) lease
/// exactly what the domain's rule allows, for generated tools, patterns, executors, windows
/// and paused tools.
#[test]
fn the_lease_statements_agree_with_the_domain() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let dbs = [rt.block_on(db("sqlite")), rt.block_on(db("postgres"))];
    let mut runner = TestRunner::new(Config {
        cases: 512,
        failure_persistence: None,
        ..Config::default()
    });
    let outcome = runner.run(&world(), |world| {
        for db in &dbs {
            rt.block_on(check(db, &world))?;
        }
        Ok(())
    });
    if let Err(e) = outcome {
        panic!("{e}");
    }
}

/// The patterns the domain refuses never reach a statement: a token's scope, a lease's tools
/// and the kill switch all parse through [`Glob::new`], which refuses each reserved character.
#[test]
fn patterns_the_domain_refuses_never_reach_the_sql() {
    for p in ["crm.[ab]", "crm\\*", "a]", "{a}", "!crm", "a b"] {
        assert!(Glob::new(p).is_err(), "{p}");
        assert!(ToolScope::from_patterns([p]).is_err(), "{p}");
    }
}
