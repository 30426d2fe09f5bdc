//! Agents' point reads, on both backends: what [`Store::point_read`] answers (on SQLite from
//! connections of its own, stepped on the caller's thread) is exactly what the pooled read
//! answers, at every stage of a proposal's life and for every column; a value stored in a
//! form only sqlx decodes is read through the pool; a read still gets an answer when every
//! direct connection is lent; and the gateway's open-call lookup finds what the pool finds.

mod common;

use common::LeaseAs;
use countersign::domain::principal::Principal;

use countersign::domain::command::retry::SideEffect;
use countersign::domain::command::{CommandStatus, Outcome};
use countersign::domain::lifecycle::ReviewVerdict;
use countersign::domain::principal::Role;
use countersign::service::{Report, Services, Submitted};
use countersign::storage::{Backend, Store, commands, gateway, proposals};
use serde_json::{Value, json};
use time::format_description::well_known::Rfc3339;
use uuid::Uuid;

/// Asserts that the point read of proposal `id` and of its command equals the pooled read, and
/// that on SQLite both were read directly.
async fn same_as_pooled(store: &Store, id: Uuid) {
    let mut read = store.read().await.expect("pooled read");
    let proposal = proposals::by_id(read.conn(), id).await.expect("proposal");
    let command = commands::for_proposal(read.conn(), id)
        .await
        .expect("command");
    let mut point = store.point_read().await.expect("point read");
    assert_eq!(point.proposal(id).await.expect("point proposal"), proposal);
    assert_eq!(
        point.command_for_proposal(id).await.expect("point command"),
        command
    );
    assert_eq!(
        point.is_direct(),
        store.backend() == Backend::Sqlite,
        "SQLite reads directly, PostgreSQL through the pool"
    );
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
        .command_for_proposal(timed)
        .await
        .expect("read")
        .expect("command");
    assert_eq!(
        (resolved.resolved_by.as_deref(), resolved.resolved_at),
        (Some("rev"), Some(at))
    );
    drop(read);
    same_as_pooled(&store, timed).await;

    let mut point = store.point_read().await.expect("point read");
    assert_eq!(point.proposal(Uuid::new_v4()).await.expect("read"), None);
    let none = point.command_for_proposal(Uuid::new_v4()).await;
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
    assert_eq!(point.command_for_proposal(id).await.expect("read"), pooled);
    assert!(!point.is_direct(), "the read went to the pool");
}

/// Reads taken while every direct connection is lent go to the pool and answer the same; the
/// connections come back once those reads end.
async fn a_read_with_every_connection_lent_uses_the_pool(backend: &str) {
    let (services, _, _dir) = common::fresh_services(backend).await;
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
        assert_eq!(point.proposal(id).await.expect("read"), expected);
        held.push(point);
        if !direct {
            break;
        }
        assert!(
            held.len() <= 1024,
            "direct connections are a small, fixed set"
        );
    }
    let lent = held.len() - 1;
    match store.backend() {
        Backend::Sqlite => assert!(lent > 0, "SQLite lends direct connections"),
        Backend::Postgres => assert_eq!(lent, 0, "PostgreSQL reads through the pool"),
    }
    drop(held);
    let point = store.point_read().await.expect("point read");
    assert_eq!(
        point.is_direct(),
        store.backend() == Backend::Sqlite,
        "lent connections come back"
    );
}

/// Agent `agent`'s open call with key prefix `prefix` as the point read finds it, asserted to be
/// what the pooled read finds (on SQLite read directly).
async fn open_call_as_pooled(store: &Store, agent: &str, prefix: &str) -> Option<Uuid> {
    let mut read = store.read().await.expect("pooled read");
    let pooled = gateway::open_call(read.conn(), agent, prefix)
        .await
        .expect("pooled open call");
    drop(read);
    let mut point = store.point_read().await.expect("point read");
    let found = point.open_gateway_call(agent, prefix).await;
    assert_eq!(found.expect("point open call"), pooled);
    assert_eq!(point.is_direct(), store.backend() == Backend::Sqlite);
    pooled
}

/// The gateway's lookup of the same call still open (pending, or approved and not yet run)
/// answers on the point read what it answers through the pool, as calls open and end.
async fn an_open_gateway_call_is_found_as_the_pool_finds_it(backend: &str) {
    let (services, _url, _dir) = common::fresh_services(backend).await;
    let store = services.store().clone();
    let prefix = "gateway-0123456789abcdef0123456789abcdef-";
    let call = |n: u32| {
        let mut body = common::proposal_body("agent-a");
        body["idempotency_key"] = json!(format!("{prefix}{n}"));
        body
    };
    assert_eq!(open_call_as_pooled(&store, "agent-a", prefix).await, None);
    let first = submit(&services, &call(1)).await;
    assert_eq!(
        open_call_as_pooled(&store, "agent-a", prefix).await,
        Some(first)
    );
    let second = submit(&services, &call(2)).await;
    assert_eq!(
        open_call_as_pooled(&store, "agent-a", prefix).await,
        Some(second),
        "the newest open call"
    );
    services
        .decide(&reviewer(), second, ReviewVerdict::Rejected, Some("no"))
        .await
        .expect("reject");
    assert_eq!(
        open_call_as_pooled(&store, "agent-a", prefix).await,
        Some(first)
    );
    approve(&services, first).await;
    assert_eq!(
        open_call_as_pooled(&store, "agent-a", prefix).await,
        Some(first),
        "approved, not yet run"
    );
    let leased = lease(&services).await;
    services
        .report(
            &Principal::Executor("exec".into()),
            report(&leased, Outcome::Succeeded, json!({"ok": true})),
        )
        .await
        .expect("report");
    assert_eq!(open_call_as_pooled(&store, "agent-a", prefix).await, None);
    let other = "gateway-ffffffffffffffffffffffffffffffff-";
    submit(&services, &call(3)).await;
    assert_eq!(open_call_as_pooled(&store, "agent-a", other).await, None);
    assert_eq!(open_call_as_pooled(&store, "agent-b", prefix).await, None);
}

common::on_both_backends!(
    a_point_read_answers_what_the_pool_answers,
    a_value_only_sqlx_decodes_is_read_through_the_pool,
    a_read_with_every_connection_lent_uses_the_pool,
    an_open_gateway_call_is_found_as_the_pool_finds_it,
);
