//! Agents' point reads, on both backends: what [`Store::point_read`] answers (on SQLite from
//! connections of its own, stepped on the caller's thread; on PostgreSQL gathered, many reads
//! to a statement) is exactly what the pooled read answers, at every stage of a proposal's
//! life and for every column; a value stored in a form only sqlx decodes is read through the
//! pool; a read still gets an answer when every direct connection is lent (SQLite: the pool)
//! or the database closed a reader's connection (PostgreSQL), and is answered unavailable when
//! the database does not answer.
//! And the agent's read a gateway call makes of itself: one open copy of a call, however many
//! submissions make it at once.

mod common;

use std::sync::Arc;

use common::{LeaseAs, Write};
use countersign::domain::Policy;
use countersign::domain::principal::Principal;

use countersign::domain::command::retry::SideEffect;
use countersign::domain::command::{CommandStatus, Outcome};
use countersign::domain::lifecycle::ReviewVerdict;
use countersign::domain::principal::Role;
use countersign::service::{Report, Services, Submitted};
use countersign::storage::direct::gathered;
use countersign::storage::{Backend, Store, commands, proposals};
use serde_json::{Value, json};
use time::format_description::well_known::Rfc3339;
use uuid::Uuid;

/// Asserts that the point read of proposal `id` and its command equals the pooled reads (and
/// their one statement), and that it was direct (SQLite) or kept (PostgreSQL).
async fn same_as_pooled(store: &Store, id: Uuid) {
    let mut read = store.read().await.expect("pooled read");
    let proposal = proposals::by_id(read.conn(), id).await.expect("proposal");
    let command = commands::for_proposal(read.conn(), id)
        .await
        .expect("command");
    // The two in one statement, as the pool reads them for a status read.
    let both = proposals::with_command::by_id(read.conn(), id).await;
    let expected = proposal.map(|p| (p, command));
    assert_eq!(both.expect("proposal and command"), expected);
    drop(read);
    let mut point = store.point_read().await.expect("point read");
    assert!(
        point.is_direct() || point.is_gathered(),
        "SQLite reads directly, PostgreSQL gathers its reads"
    );
    let both = point.proposal_and_command(id).await;
    assert_eq!(both.expect("point proposal and command"), expected);
}

async fn submit(services: &Services, body: &Value) -> Uuid {
    match services
        .submit(&Principal::Agent("agent-a".into()), body)
        .await
    {
        Ok(Submitted::Created(p)) => p.id,
        other => panic!("expected a new proposal, got {other:?}"),
    }
}

fn reviewer() -> Principal {
    Principal::person("rev", Role::Reviewer)
}

/// A reviewer approves proposal `id`.
async fn approve(services: &Services, id: Uuid) {
    let (by, verdict) = (reviewer(), ReviewVerdict::Approved);
    let decided = services.decide(&by, id, verdict, Some("looks right"));
    decided.await.expect("approve");
}

/// Leases the next command.
async fn lease(services: &Services) -> countersign::service::Leased {
    let leased = services.lease_as("exec", 60).await.expect("lease");
    leased.expect("a command")
}

/// Submits and approves `body`'s proposal and leases its command: the proposal's id and the
/// lease.
async fn approved_and_leased(
    services: &Services,
    body: &Value,
) -> (Uuid, countersign::service::Leased) {
    let id = submit(services, body).await;
    approve(services, id).await;
    (id, lease(services).await)
}

fn report(leased: &countersign::service::Leased, outcome: Outcome, body: Value) -> Report {
    Report {
        command_id: leased.command.id,
        lease_token: leased.lease_token.expose().into(),
        outcome,
        body,
        side_effect: SideEffect::Done,
    }
}

/// A proposal pending (no command), approved (its command queued), leased, failed with an
/// error body, then erased; one rejected with a reason; one with a run time limit (a run
/// deadline) that succeeds with a result, then is resolved by hand (written straight to the
/// row: no resolution path reaches a succeeded command).
async fn a_point_read_answers_what_the_pool_answers(backend: &str) {
    let (services, url, _dir) = common::fresh_services(backend).await;
    let store = services.store().clone();
    let id = submit(&services, &common::proposal_body("agent-a")).await;
    same_as_pooled(&store, id).await;
    approve(&services, id).await;
    same_as_pooled(&store, id).await;
    let leased = lease(&services).await;
    same_as_pooled(&store, id).await;
    let failure = json!({"error": "the CRM said no", "code": 503});
    let settled = services
        .report(
            &Principal::Executor("exec".into()),
            report(&leased, Outcome::Failed, failure),
        )
        .await
        .expect("report");
    assert_eq!(settled.status, CommandStatus::Failed);
    same_as_pooled(&store, id).await;
    services
        .erase_proposal(&Principal::Operator, id, "the customer asked")
        .await
        .expect("erase");
    same_as_pooled(&store, id).await;

    let rejected = submit(&services, &common::proposal_body("agent-a")).await;
    services
        .decide(&reviewer(), rejected, ReviewVerdict::Rejected, Some("no"))
        .await
        .expect("reject");
    same_as_pooled(&store, rejected).await;

    let mut timed = common::proposal_body("agent-a");
    timed["execution"] = json!({"timeout_ms": 30_000});
    let (timed, leased) = approved_and_leased(&services, &timed).await;
    let running = services
        .command_for_proposal(&Principal::Operator, timed)
        .await
        .expect("read");
    assert!(
        running.and_then(|c| c.run_deadline).is_some(),
        "a run deadline"
    );
    same_as_pooled(&store, timed).await;
    let done = services
        .report(
            &Principal::Executor("exec".into()),
            report(&leased, Outcome::Succeeded, json!({"rows": 1})),
        )
        .await
        .expect("report");
    assert_eq!(done.result, Some(json!({"rows": 1})));
    same_as_pooled(&store, timed).await;
    let at = time::OffsetDateTime::now_utc()
        .replace_nanosecond(0)
        .expect("time");
    let stamp = at.format(&Rfc3339).expect("format");
    // As sqlx writes a time on SQLite (RFC 3339 text); a `timestamptz` literal on PostgreSQL.
    let sql = format!(
        "update commands set resolution = 'succeeded', resolved_by = 'rev', \
         resolved_at = '{stamp}', resolution_reason = 'checked the CRM' \
         where status = 'succeeded'"
    );
    common::exec_sql(&url, &sql).await;
    let mut read = store.point_read().await.expect("point read");
    let resolved = read
        .proposal_and_command(timed)
        .await
        .expect("read")
        .and_then(|(_, command)| command)
        .expect("command");
    assert_eq!(
        (resolved.resolved_by.as_deref(), resolved.resolved_at),
        (Some("rev"), Some(at))
    );
    drop(read);
    same_as_pooled(&store, timed).await;

    let mut point = store.point_read().await.expect("point read");
    let none = point.proposal_and_command(Uuid::new_v4()).await;
    assert_eq!(none.expect("read"), None);
}

/// A time an operator wrote by hand in SQLite's own format (`datetime('now')`), which sqlx
/// decodes and the direct read does not: the read goes to the pool and answers the same.
async fn a_value_only_sqlx_decodes_is_read_through_the_pool(backend: &str) {
    let (services, url, _dir) = common::fresh_services(backend).await;
    let store = services.store().clone();
    let body = common::proposal_body("agent-a");
    let (id, _leased) = approved_and_leased(&services, &body).await;
    let later = match store.backend() {
        Backend::Sqlite => "datetime('now', '+1 hour')",
        Backend::Postgres => "now() + interval '1 hour'",
    };
    let sql = format!("update commands set execute_by = {later} where status = 'leased'");
    common::exec_sql(&url, &sql).await;
    let mut read = store.read().await.expect("pooled read");
    let pooled = commands::for_proposal(read.conn(), id)
        .await
        .expect("sqlx decodes it");
    assert!(pooled.as_ref().and_then(|c| c.execute_by).is_some());
    let mut point = store.point_read().await.expect("point read");
    let both = point.proposal_and_command(id).await.expect("read");
    assert_eq!(both.and_then(|(_, command)| command), pooled);
    assert!(!point.is_direct(), "the read went to the pool");
}

/// SQLite: reads taken while every direct connection is lent go to the pool and answer the
/// same; the connections come back once those reads end.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_a_read_with_every_direct_connection_lent_uses_the_pool() {
    let (services, _, _dir) = common::fresh_services("sqlite").await;
    let store = services.store().clone();
    let id = submit(&services, &common::proposal_body("agent-a")).await;
    let expected = services
        .proposal(&Principal::Operator, id)
        .await
        .expect("read");
    assert!(expected.is_some());
    let mut held = Vec::new();
    loop {
        let mut point = store.point_read().await.expect("point read");
        let direct = point.is_direct();
        let both = point.proposal_and_command(id).await.expect("read");
        assert_eq!(both.map(|(proposal, _)| proposal), expected);
        held.push(point);
        if !direct {
            break;
        }
        assert!(
            held.len() <= 1024,
            "direct connections are a small, fixed set"
        );
    }
    assert!(held.len() > 1, "SQLite lends direct connections");
    drop(held);
    let point = store.point_read().await.expect("point read");
    assert!(point.is_direct(), "lent connections come back");
}

/// PostgreSQL: reads asked at once are answered together, a statement for many, on one
/// connection of their own; each answer is what the pool reads for its proposal, whoever else
/// asked for the same one. (One runtime thread: the reads are asked before the reader runs,
/// so its statements take many each.)
#[tokio::test]
async fn postgres_reads_asked_at_once_are_answered_by_few_statements() {
    let (services, url, _dir) = common::fresh_services("postgres").await;
    let store = services.store().clone();
    let mut ids = Vec::new();
    for _ in 0..20 {
        ids.push(submit(&services, &common::proposal_body("agent-a")).await);
    }
    approve(&services, ids[0]).await;
    lease(&services).await;
    approve(&services, ids[1]).await;
    let mut expected = Vec::new();
    for id in &ids {
        let mut read = store.read().await.expect("pooled read");
        expected.push(
            proposals::with_command::by_id(read.conn(), *id)
                .await
                .expect("read"),
        );
    }
    let counts = store
        .gathered_counts()
        .expect("PostgreSQL gathers point reads");
    let (reads, statements) = (counts.reads(), counts.statements());
    // Each proposal asked for ten times, and one that does not exist.
    let asked: Vec<Uuid> = (0..200).map(|i| ids[i % ids.len()]).collect();
    let missing = Uuid::new_v4();
    let answers = futures_util::future::join_all(asked.iter().chain([&missing]).map(|id| {
        let store = store.clone();
        async move {
            let mut point = store.point_read().await.expect("point read");
            assert!(point.is_gathered());
            point.proposal_and_command(*id).await.expect("read")
        }
    }))
    .await;
    for (i, answer) in answers[..200].iter().enumerate() {
        let (proposal, command) = answer.as_ref().expect("found");
        let (want, want_command) = expected[i % ids.len()].as_ref().expect("found");
        assert_eq!(proposal, want);
        // What a status read shows: the command of a proposal whose status may have one.
        let want_command = want_command
            .as_ref()
            .filter(|_| want.status.may_have_command());
        assert_eq!(command.as_ref(), want_command);
    }
    assert_eq!(answers[200], None, "no such proposal");
    assert!(
        answers[0].as_ref().and_then(|(_, c)| c.as_ref()).is_some(),
        "leased"
    );
    assert!(
        answers[1].as_ref().and_then(|(_, c)| c.as_ref()).is_some(),
        "queued"
    );
    assert_eq!(
        counts.reads() - reads,
        201,
        "every read answered by a statement"
    );
    // At most MOST_IDS a statement; how many each took depends on when the reader ran
    // between the reads being asked, so only "far fewer statements than reads" is asserted.
    let used = counts.statements() - statements;
    assert!(
        (201_u64.div_ceil(gathered::MOST_IDS as u64)..=20).contains(&used),
        "201 reads asked at once took {used} statements"
    );
    let open = common::count(&url, &format!("select count(*) {}", reader_sessions())).await;
    assert_eq!(open, 1, "the reader's connection");
}

/// The `from` and `where` of this database's point reader's connection in `pg_stat_activity`.
fn reader_sessions() -> String {
    format!(
        "from pg_stat_activity where datname = current_database() and application_name = '{}'",
        gathered::APPLICATION_NAME
    )
}

/// PostgreSQL: the reader's connection the database closed (a restart, an operator's
/// `pg_terminate_backend`) fails its statement, whose read the pool answers instead; the
/// reader opens another connection for its next one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_the_readers_connection_the_database_closed_is_replaced() {
    let (services, url, _dir) = common::fresh_services("postgres").await;
    let store = services.store().clone();
    let id = submit(&services, &common::proposal_body("agent-a")).await;
    let counts = store
        .gathered_counts()
        .expect("PostgreSQL gathers point reads");
    let read = |store: Store| async move {
        let mut point = store.point_read().await.expect("point read");
        let both = point.proposal_and_command(id).await.expect("read");
        both.map(|(p, _)| p.id)
    };
    assert_eq!(read(store.clone()).await, Some(id));
    assert_eq!(counts.reads(), 1);
    let readers = reader_sessions();
    let closed = format!("select count(pg_terminate_backend(pid)) {readers}");
    assert_eq!(common::count(&url, &closed).await, 1);
    // Its statement fails, and the pool answers.
    assert_eq!(read(store.clone()).await, Some(id));
    assert_eq!(counts.reads(), 1, "read through the pool");
    // On a new connection.
    assert_eq!(read(store.clone()).await, Some(id));
    assert_eq!(counts.reads(), 2);
    let open = common::count(&url, &format!("select count(*) {readers}")).await;
    assert_eq!(open, 1, "the reader's connection");
}

/// PostgreSQL: a read that gets no answer for as long as a read waits for the pool (3 s; here
/// the proposals table is locked) is answered unavailable (`503`), and the reader's statement
/// is given up on; once the lock is gone, reads are answered again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_a_read_without_an_answer_is_unavailable() {
    use sqlx::Connection;
    let (services, url, _dir) = common::fresh_services("postgres").await;
    let store = services.store().clone();
    let id = submit(&services, &common::proposal_body("agent-a")).await;
    let mut locker = sqlx::PgConnection::connect(&url).await.expect("connect");
    let mut lock = locker.begin().await.expect("begin");
    sqlx::query("lock table proposals in access exclusive mode")
        .execute(&mut *lock)
        .await
        .expect("lock");
    let mut point = store.point_read().await.expect("point read");
    match point.proposal_and_command(id).await {
        Err(e) => assert!(e.is_unavailable(), "{e}"),
        Ok(found) => panic!("read a locked table: {found:?}"),
    }
    lock.commit().await.expect("unlock");
    let mut point = store.point_read().await.expect("point read");
    let found = point.proposal_and_command(id).await.expect("read");
    assert_eq!(found.map(|(p, _)| p.id), Some(id));
}

/// A gateway call's proposal body from agent-a: its idempotency key is `prefix` and a new id,
/// as the gateway makes it.
fn gateway_call(prefix: &str) -> Value {
    let mut body = common::proposal_body("agent-a");
    body["idempotency_key"] = json!(format!("{prefix}{}", Uuid::now_v7()));
    body
}

/// What a submission answered: the proposal's id, and whether it made it.
async fn submitted(services: &Services, body: &Value) -> (Uuid, bool) {
    match common::submit_as(services, "agent-a", body).await {
        Ok(Submitted::Created(p)) => (p.id, true),
        Ok(Submitted::Replayed(p)) => (p.id, false),
        Err(e) => panic!("a gateway call's submission failed: {e:?}"),
    }
}

/// The proposals whose key starts with `prefix`.
async fn calls(url: &str, prefix: &str) -> i64 {
    let sql = format!("select count(*) from proposals where idempotency_key like '{prefix}%'");
    common::count(url, &sql).await
}

/// `before` (if any), then a gateway call for each of `prefixes` (each with a key of its
/// own), all in one writer's group: each call's answer, in order.
async fn in_one_group(
    services: &Services,
    before: Option<Write>,
    prefixes: &[&str],
) -> Vec<(Uuid, bool)> {
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let mut writes: Vec<Write> = before.into_iter().collect();
    for (i, prefix) in prefixes.iter().enumerate() {
        let (services, body, tx) = (services.clone(), gateway_call(prefix), tx.clone());
        writes.push(Box::pin(async move {
            tx.send((i, submitted(&services, &body).await))
                .expect("answers");
            Ok(())
        }));
    }
    for written in common::as_one_group(services.store(), writes).await {
        written.expect("handed to the writer");
    }
    drop(tx);
    let mut answers = Vec::new();
    while let Some(answer) = rx.recv().await {
        answers.push(answer);
    }
    answers.sort_by_key(|(i, _)| *i);
    answers.into_iter().map(|(_, a)| a).collect()
}

/// One agent's same gateway call (the same tool, arguments and definition: its key's prefix)
/// has one proposal open at a time, however its submissions meet: several in one writer's
/// group, and eight at once through two instances on one database (each with its own writer).
/// While it is pending, or approved and not yet run, the same call answers it; once rejected,
/// or run, the same call is a new proposal. Another prefix, or another agent, is another call.
async fn a_gateway_call_is_open_once_however_many_make_it(backend: &str) {
    let (services, url, _dir) = common::fresh_services(backend).await;
    let (store, _) = countersign::storage::connect(&url)
        .await
        .expect("a second instance");
    let other = Services::new(store, Arc::new(Policy::builtin()));
    let prefix = "gateway-0123456789abcdef0123456789abcdef-";

    let grouped = in_one_group(&services, None, &[prefix; 4]).await;
    let first = grouped[0].0;
    assert_eq!(
        grouped,
        [
            (first, true),
            (first, false),
            (first, false),
            (first, false)
        ],
        "one group: the first makes it, the rest answer it"
    );
    assert_eq!(calls(&url, prefix).await, 1);
    services
        .decide(&reviewer(), first, ReviewVerdict::Rejected, Some("no"))
        .await
        .expect("reject");

    let mut at_once = tokio::task::JoinSet::new();
    for n in 0..8 {
        let instance = match n % 2 {
            0 => services.clone(),
            _ => other.clone(),
        };
        let body = gateway_call(prefix);
        at_once.spawn(async move { submitted(&instance, &body).await });
    }
    let answers = at_once.join_all().await;
    let second = answers.iter().find(|(_, made)| *made).expect("one made").0;
    assert_ne!(second, first, "a rejected call is not open");
    assert_eq!(answers.iter().filter(|(_, made)| *made).count(), 1);
    assert!(answers.iter().all(|(id, _)| *id == second), "{answers:?}");
    assert_eq!(calls(&url, prefix).await, 2);

    approve(&services, second).await;
    assert_eq!(
        submitted(&other, &gateway_call(prefix)).await,
        (second, false),
        "approved, not yet run"
    );
    // A gateway call is the built-in gateway executor's alone.
    let gateway = countersign::domain::gateway::GATEWAY_EXECUTOR;
    let leased = services.lease_as(gateway, 60).await.expect("lease");
    let leased = leased.expect("the call's command");
    assert_eq!(leased.command.proposal_id, second);
    // Its run reported in the same group as the same call made again and another call: the
    // call made again is answered, as the open one or as a new one (its row can be inserted
    // before the report settles, and its change run after it), never refused.
    let another = "gateway-ffffffffffffffffffffffffffffffff-";
    let reported = {
        let (services, leased) = (services.clone(), leased);
        Box::pin(async move {
            let by = Principal::Executor(gateway.into());
            let done = report(&leased, Outcome::Succeeded, json!({"ok": true}));
            services.report(&by, done).await.expect("report");
            Ok(())
        }) as Write
    };
    let made = in_one_group(&services, Some(reported), &[prefix, another]).await;
    assert!(made[0].1 || made[0].0 == second, "{made:?}");
    assert!(made[1].1, "another call is another proposal");
    let third = match made[0] {
        (id, true) => id,
        _ => submitted(&services, &gateway_call(prefix)).await.0,
    };
    assert_ne!(third, second, "a call that ran is not open");
    assert_eq!(
        submitted(&other, &gateway_call(prefix)).await,
        (third, false)
    );

    // An agent's own keys that merely start like a gateway call's are its own.
    let own = |n: u32| {
        let mut body = common::proposal_body("agent-a");
        body["idempotency_key"] = json!(format!("gateway-payments-batch-2026-11-30-000000-{n}"));
        body
    };
    assert!(submitted(&services, &own(1)).await.1);
    assert!(submitted(&services, &own(2)).await.1);
    let mut by_b = gateway_call(prefix);
    by_b["proposed_by"] = json!("agent-b");
    let made_by_b = common::submit_as(&services, "agent-b", &by_b).await;
    assert!(
        matches!(made_by_b, Ok(Submitted::Created(_))),
        "{made_by_b:?}"
    );
    assert_eq!(calls(&url, prefix).await, 4);
    assert_eq!(calls(&url, "gateway-payments-").await, 2);
}

common::on_both_backends!(
    a_point_read_answers_what_the_pool_answers,
    a_value_only_sqlx_decodes_is_read_through_the_pool,
    a_gateway_call_is_open_once_however_many_make_it,
);
