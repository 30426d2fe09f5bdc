//! The executor queue, hardened, on SQLite and PostgreSQL: no side effect twice by accident
//! (lapses, failures and timeouts retried only when safe, else settled by a person), signed
//! grants, drift refused and recorded, scoped executors, paused tools, the approval window and
//! rollback tasks. Time moves by hand.

mod common;

use common::clock::SetClock;

use countersign::domain::principal::Principal;
use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use countersign::domain::Policy;
use countersign::domain::command::grant::GrantClaims;
use countersign::domain::command::retry::SideEffect;
use countersign::domain::command::scope::ToolScope;
use countersign::domain::command::{CommandKind, CommandStatus, Outcome, Resolution};
use countersign::domain::lifecycle::{ProposalStatus, ReviewVerdict};
use countersign::domain::principal::Role;
use countersign::service::Cursor;
use countersign::service::{
    Clock, Conflict, Decided, LeaseRequest, Leased, Report, ServiceError, Services, Submitted,
};
use countersign::storage;
use countersign::storage::audit_query::Selection;
use ed25519_dalek::{Signature, Verifier, VerifyingKey};
use proptest::prelude::*;
use serde_json::{Value, json};
use time::Duration;
use uuid::Uuid;

struct Db {
    services: Services,
    clock: Arc<SetClock>,
    url: String,
    _dir: Option<tempfile::TempDir>,
}

async fn db(backend: &str, policy_toml: &str) -> Db {
    // Any agent may propose; each test adds what it is about.
    let text = if policy_toml.contains("[defaults]") {
        policy_toml.replace("[defaults]", "[defaults]\nunknown_agents = \"allow\"")
    } else {
        format!("[defaults]\nunknown_agents = \"allow\"\n{policy_toml}")
    };
    let policy = Policy::from_toml_str(&text).expect("policy");
    let (url, dir) = common::fresh_database(backend);
    let (store, _) = storage::connect(&url).await.expect("database");
    let clock = Arc::new(SetClock::starting_now());
    let services = Services::with_clock(store, Arc::new(policy), clock.clone());
    Db {
        services,
        clock,
        url,
        _dir: dir,
    }
}

const NO_POLICY: &str = "";

/// Submits `body` (a proposal by `agent-a`) and approves it; the command's id.
async fn approved(services: &Services, body: Value) -> Uuid {
    let id = match common::submit_as(services, "agent-a", &body).await {
        Ok(Submitted::Created(p)) => p.id,
        other => panic!("expected a new proposal, got {other:?}"),
    };
    let rev = Principal::person("rev", Role::Reviewer);
    match services
        .decide(&rev, id, ReviewVerdict::Approved, None)
        .await
    {
        Ok(Decided::Final(_)) => {}
        other => panic!("expected an approval, got {other:?}"),
    }
    services
        .command_for_proposal(&Principal::Operator, id)
        .await
        .expect("read")
        .expect("queued")
        .id
}

fn body_with(extra: Value) -> Value {
    let mut body = common::proposal_body("agent-a");
    if let (Value::Object(b), Value::Object(e)) = (&mut body, extra) {
        b.extend(e);
    }
    body
}

/// A 30 s lease for `executor` with this token scope, not waiting.
fn lease_request(executor: &str, scope: Option<&str>) -> LeaseRequest {
    LeaseRequest {
        executor: executor.into(),
        scope: scope.map(|s| ToolScope::parse_list(s).expect("scope")),
        wanted: None,
        lease_seconds: 30,
        wait: std::time::Duration::ZERO,
    }
}

async fn lease(services: &Services, executor: &str, scope: Option<&str>) -> Option<Leased> {
    let request = lease_request(executor, scope);
    services
        .lease(&Principal::Executor(request.executor.clone()), &request)
        .await
        .expect("lease")
}

async fn any(services: &Services, executor: &str) -> Option<Leased> {
    lease(services, executor, Some("*")).await
}

fn report(l: &Leased, outcome: Outcome, side_effect: SideEffect) -> Report {
    Report {
        command_id: l.command.id,
        lease_token: l.lease_token.expose().into(),
        outcome,
        body: json!({"note": "from the test"}),
        side_effect,
    }
}

fn admin() -> Principal {
    Principal::person("boss", Role::Admin)
}

async fn kinds(services: &Services, id: Uuid) -> Vec<String> {
    services
        .trail(&Principal::Operator, "command", &id.to_string())
        .await
        .expect("trail")
        .into_iter()
        .map(|e| e.action)
        .collect()
}

/// The trail's events of one kind, oldest first, as `/audit?kind=` lists them.
async fn of_kind(services: &Services, kind: &str) -> Vec<Value> {
    let sel = Selection {
        kind: Some(kind.into()),
        ..Selection::default()
    };
    let page = services
        .trail_page(&Principal::Operator, &sel, Cursor::Oldest)
        .await
        .expect("trail");
    page.events.into_iter().map(|e| e.event.details).collect()
}

async fn status_of(services: &Services, id: Uuid) -> CommandStatus {
    services
        .command(&Principal::Operator, id)
        .await
        .expect("read")
        .expect("exists")
        .status
}

async fn proposal_status(services: &Services, command: Uuid) -> ProposalStatus {
    let c = services
        .command(&Principal::Operator, command)
        .await
        .expect("read")
        .expect("exists");
    services
        .proposal(&Principal::Operator, c.proposal_id)
        .await
        .expect("read")
        .expect("exists")
        .status
}

/// What one executor does with each command it leases, drawn by the property test.
#[derive(Debug, Clone, Copy)]
enum Step {
    /// Reports success.
    Succeed,
    /// Reports success and asks for its next command in the same request.
    SucceedAndLeaseNext,
    /// Reports a failure that touched nothing: the command goes back to the queue.
    FailUntouched,
    /// Reports a failure that may have had its effect: the command waits for a person.
    FailPossibly,
    /// Walks away without a report; the lease lapses when time moves on.
    Abandon,
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        2 => Just(Step::Succeed),
        2 => Just(Step::SucceedAndLeaseNext),
        2 => Just(Step::FailUntouched),
        1 => Just(Step::FailPossibly),
        1 => Just(Step::Abandon),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 6, ..ProptestConfig::default() })]

    /// However many executors race for however many commands, whatever each does with what it
    /// leased, no command is ever held by two of them at once and no attempt is handed out
    /// twice; on both backends.
    #[test]
    fn many_executors_never_hold_the_same_command(
        commands in 1usize..16,
        plans in prop::collection::vec(prop::collection::vec(step(), 1..6), 2..9),
    ) {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("runtime");
        for backend in ["sqlite", "postgres"] {
            rt.block_on(race(backend, commands, plans.clone()));
        }
    }
}

/// Rounds of concurrent leasing; between rounds abandoned leases lapse. Asserts the invariant
/// on every lease.
async fn race(backend: &str, commands: usize, plans: Vec<Vec<Step>>) {
    let db = db(backend, NO_POLICY).await;
    for _ in 0..commands {
        // `execution.retry_policy` makes a lapsed lease safe to retry, so abandoned commands
        // come back too.
        let body =
            body_with(json!({"execution": {"retry_policy": {"max_retries": 2, "backoff_ms": 0}}}));
        approved(&db.services, body).await;
    }
    let held: Arc<Mutex<HashSet<Uuid>>> = Arc::default();
    let leases: Arc<Mutex<Vec<(Uuid, i32)>>> = Arc::default();
    for _round in 0..3 {
        let mut tasks = Vec::new();
        for (e, plan) in plans.iter().enumerate() {
            let (services, held, leases) = (db.services.clone(), held.clone(), leases.clone());
            let plan = plan.clone();
            tasks.push(tokio::spawn(async move {
                let name = format!("exec{e}");
                let took = |l: &Leased| {
                    assert!(
                        held.lock().expect("held").insert(l.command.id),
                        "command {} handed to two executors at once",
                        l.command.id
                    );
                    leases
                        .lock()
                        .expect("leases")
                        .push((l.command.id, l.command.attempts));
                };
                // A lease taken with the last report, if it took one.
                let mut carried: Option<Leased> = None;
                for step in plan {
                    let l = match carried.take() {
                        Some(l) => l,
                        None => {
                            let Some(l) = any(&services, &name).await else {
                                return;
                            };
                            took(&l);
                            l
                        }
                    };
                    let (outcome, effect) = match step {
                        Step::Abandon => continue,
                        Step::SucceedAndLeaseNext => {
                            held.lock().expect("held").remove(&l.command.id);
                            let r = report(&l, Outcome::Succeeded, SideEffect::None);
                            let next = next_lease(&name);
                            let (_, next) = (services
                                .report_and_lease(&Principal::Executor(name.clone()), r, &next)
                                .await)
                                .expect("the holder's report");
                            if let Some(next) = next {
                                took(&next);
                                carried = Some(next);
                            }
                            continue;
                        }
                        Step::Succeed => (Outcome::Succeeded, SideEffect::None),
                        Step::FailUntouched => (Outcome::Failed, SideEffect::None),
                        Step::FailPossibly => (Outcome::Failed, SideEffect::Possible),
                    };
                    held.lock().expect("held").remove(&l.command.id);
                    services
                        .report(
                            &Principal::Executor(name.clone()),
                            report(&l, outcome, effect),
                        )
                        .await
                        .expect("the holder's report");
                }
            }));
        }
        for t in tasks {
            t.await.expect("executor");
        }
        // Abandoned leases lapse; the sweep settles them before the next round.
        db.clock.advance(Duration::seconds(31));
        db.services.sweep_queue().await.expect("sweep");
        held.lock().expect("held").clear();
    }
    let leases = leases.lock().expect("leases").clone();
    let distinct: HashSet<(Uuid, i32)> = leases.iter().copied().collect();
    assert_eq!(distinct.len(), leases.len(), "an attempt was leased twice");
}

async fn a_stale_lease_token_changes_nothing(backend: &str) {
    let db = db(backend, NO_POLICY).await;
    let id = approved(&db.services, common::proposal_body("agent-a")).await;
    let l = any(&db.services, "exec").await.expect("leased");
    let mut stale = report(&l, Outcome::Succeeded, SideEffect::None);
    stale.lease_token = "lease_not-the-token".into();
    match db
        .services
        .report(&Principal::Executor("exec".into()), stale)
        .await
    {
        Err(ServiceError::Conflict(Conflict::LeaseTokenMismatch)) => {}
        other => panic!("expected 409 lease_token_mismatch, got {other:?}"),
    }
    match db
        .services
        .heartbeat(
            &Principal::Executor("exec".into()),
            id,
            "lease_not-the-token",
            60,
        )
        .await
    {
        Err(ServiceError::Conflict(Conflict::LeaseTokenMismatch)) => {}
        other => panic!("expected 409 lease_token_mismatch, got {other:?}"),
    }
    let c = db
        .services
        .command(&Principal::Operator, id)
        .await
        .expect("read")
        .expect("exists");
    assert_eq!(
        (c.status, c.attempts, c.lease_expires_at),
        (CommandStatus::Leased, 1, l.command.lease_expires_at)
    );
    // The holder's heartbeat extends the lease.
    db.clock.advance(Duration::seconds(20));
    let beat = db
        .services
        .heartbeat(
            &Principal::Executor("exec".into()),
            id,
            l.lease_token.expose(),
            60,
        )
        .await
        .expect("heartbeat");
    assert!(beat.lease_expires_at > c.lease_expires_at);
    assert_eq!(
        kinds(&db.services, id).await,
        [
            "command.queued",
            "command.leased",
            "executor.drift",
            "executor.drift"
        ]
    );
}

async fn a_killed_executor_is_retried_only_when_safe(backend: &str) {
    let db = db(backend, "[tools.\"crm.idempotent_*\"]\nidempotent = true\n").await;
    // 1. Nothing says a retry is safe: outcome unknown, never leased again by itself.
    let plain = approved(&db.services, common::proposal_body("agent-a")).await;
    // 2. The proposal's retry policy allows one more attempt after 2 s.
    let retry =
        body_with(json!({"execution": {"retry_policy": {"max_retries": 1, "backoff_ms": 2000}}}));
    let retried = approved(&db.services, retry).await;
    // 3. The policy declares the tool idempotent.
    let mut idem = common::proposal_body("agent-a");
    idem["tool"]["name"] = json!("crm.idempotent_update");
    let idempotent = approved(&db.services, idem).await;
    for _ in 0..3 {
        any(&db.services, "doomed").await.expect("leased");
    }
    db.clock.advance(Duration::seconds(31));
    let swept = db.services.sweep_queue().await.expect("sweep");
    assert_eq!((swept.retried, swept.settled), (2, 1));
    assert_eq!(
        status_of(&db.services, plain).await,
        CommandStatus::OutcomeUnknown
    );
    assert_eq!(
        proposal_status(&db.services, plain).await,
        ProposalStatus::OutcomeUnknown
    );
    assert_eq!(
        status_of(&db.services, retried).await,
        CommandStatus::Queued
    );
    assert_eq!(
        status_of(&db.services, idempotent).await,
        CommandStatus::Queued
    );
    // The idempotent one comes back after the default backoff (1 s); the retry policy's after 2 s.
    db.clock.advance(Duration::seconds(1));
    let next = any(&db.services, "second")
        .await
        .expect("the idempotent retry");
    assert_eq!((next.command.id, next.command.attempts), (idempotent, 2));
    assert!(
        any(&db.services, "second").await.is_none(),
        "backoff not over yet"
    );
    db.clock.advance(Duration::seconds(1));
    let again = any(&db.services, "second")
        .await
        .expect("the retry policy's retry");
    assert_eq!((again.command.id, again.command.attempts), (retried, 2));
    // Its budget is spent: the next lapse is an unknown outcome, not a third run.
    db.clock.advance(Duration::seconds(31));
    db.services.sweep_queue().await.expect("sweep");
    assert_eq!(
        status_of(&db.services, retried).await,
        CommandStatus::OutcomeUnknown
    );
    assert_eq!(
        kinds(&db.services, retried).await,
        [
            "command.queued",
            "command.leased",
            "command.lease_lapsed",
            "command.leased",
            "command.lease_lapsed"
        ]
    );
    // A person settles the first: release it for one more attempt, with a reason.
    let released = db
        .services
        .resolve_command(
            &admin(),
            plain,
            Resolution::Release,
            "checked the CRM: nothing changed",
        )
        .await
        .expect("release");
    assert_eq!(released.status, CommandStatus::Queued);
    assert_eq!(
        proposal_status(&db.services, plain).await,
        ProposalStatus::Approved
    );
    let last = any(&db.services, "third").await.expect("released");
    assert_eq!((last.command.id, last.command.attempts), (plain, 2));
    match db
        .services
        .resolve_command(&admin(), plain, Resolution::Succeeded, "too late")
        .await
    {
        Err(ServiceError::Conflict(Conflict::CommandState(CommandStatus::Leased))) => {}
        other => panic!("a leased command is not settled by a person, got {other:?}"),
    }
}

async fn failures_follow_their_side_effect(backend: &str) {
    let db = db(backend, NO_POLICY).await;
    let none = approved(&db.services, common::proposal_body("agent-a")).await;
    let possible = approved(&db.services, common::proposal_body("agent-a")).await;
    let done = approved(&db.services, common::proposal_body("agent-a")).await;
    let mut by_id = std::collections::HashMap::new();
    for _ in 0..3 {
        let l = any(&db.services, "exec").await.expect("leased");
        by_id.insert(l.command.id, l);
    }
    for (id, side_effect) in [
        (none, SideEffect::None),
        (possible, SideEffect::Possible),
        (done, SideEffect::Done),
    ] {
        let l = &by_id[&id];
        db.services
            .report(
                &Principal::Executor("exec".into()),
                report(l, Outcome::Failed, side_effect),
            )
            .await
            .expect("report");
    }
    assert_eq!(status_of(&db.services, none).await, CommandStatus::Queued);
    assert_eq!(
        status_of(&db.services, possible).await,
        CommandStatus::OutcomeUnknown
    );
    assert_eq!(status_of(&db.services, done).await, CommandStatus::Failed);
    assert_eq!(
        proposal_status(&db.services, done).await,
        ProposalStatus::Failed
    );
    assert_eq!(
        proposal_status(&db.services, possible).await,
        ProposalStatus::OutcomeUnknown
    );
    let unknown = db
        .services
        .needing_resolution(&admin())
        .await
        .expect("list");
    assert_eq!(unknown.iter().map(|c| c.id).collect::<Vec<_>>(), [possible]);
}

async fn a_timeout_opens_a_rollback_task(backend: &str) {
    let mut db = db(backend, NO_POLICY).await;
    // Reviewers are told on the channels configured (nothing is sent here: no dispatcher).
    let slack =
        countersign::service::ChannelUrl("https://hooks.slack.test/x".parse().expect("url"));
    db.services = db
        .services
        .clone()
        .with_notifications(countersign::service::NotifySettings {
            slack: Some(slack),
            ..Default::default()
        });
    let body = body_with(json!({
        "execution": {"timeout_ms": 5000},
        "rollback_plan": {"type": "compensate", "instructions": {"step": "restore the old email"}}
    }));
    let id = approved(&db.services, body).await;
    let l = any(&db.services, "exec").await.expect("leased");
    // The lease is cut to the run's time limit.
    assert_eq!(l.lease_expires_at, db.clock.now() + Duration::seconds(5));
    db.clock.advance(Duration::seconds(6));
    db.services.sweep_queue().await.expect("sweep");
    assert_eq!(status_of(&db.services, id).await, CommandStatus::TimedOut);
    assert_eq!(
        proposal_status(&db.services, id).await,
        ProposalStatus::TimedOut
    );
    let tasks = db.services.rollback_tasks(&admin()).await.expect("tasks");
    assert_eq!(tasks.len(), 1);
    let task = &tasks[0];
    assert_eq!(
        (task.kind, task.rollback_of, task.status),
        (
            CommandKind::Rollback,
            Some(id),
            CommandStatus::AwaitingApproval
        )
    );
    let told = db
        .services
        .recent_notifications(&Principal::Operator, 50)
        .await
        .expect("list");
    let reasons: Vec<&str> = told.iter().map(|n| n.reason.as_str()).collect();
    assert!(reasons.contains(&"rollback"), "{reasons:?}");
    // Not leasable until a reviewer approves it.
    assert!(any(&db.services, "exec").await.is_none());
    db.services
        .decide_rollback(&admin(), task.id, true, None)
        .await
        .expect("approve rollback");
    let rollback = any(&db.services, "exec").await.expect("the rollback");
    assert_eq!(
        (rollback.command.id, rollback.command.kind),
        (task.id, CommandKind::Rollback)
    );
    assert_eq!(rollback.grant.claims.kind, "rollback");
}

async fn drift_is_refused_and_listed(backend: &str) {
    let db = db(backend, NO_POLICY).await;
    let id = approved(&db.services, common::proposal_body("agent-a")).await;
    // A report on a command nobody leased.
    let bogus = Report {
        command_id: id,
        lease_token: "lease_guess".into(),
        outcome: Outcome::Succeeded,
        body: json!({}),
        side_effect: SideEffect::Possible,
    };
    match db
        .services
        .report(&Principal::Executor("rogue".into()), bogus)
        .await
    {
        Err(ServiceError::Conflict(Conflict::CommandNotLeased(CommandStatus::Queued))) => {}
        other => panic!("expected 409, got {other:?}"),
    }
    // A database edit after approval: the lease refuses the command.
    let edited = approved(&db.services, common::proposal_body("agent-a")).await;
    let sql = format!(
        "update commands set spec = replace(spec{}, 'new@example.com', 'attacker@example.com'){} \
         where status = 'queued'",
        if backend == "sqlite" { "" } else { "::text" },
        if backend == "sqlite" { "" } else { "::jsonb" },
    );
    common::exec_sql(&db.url, &sql).await;
    // Both queued commands were edited: neither is handed out.
    assert!(any(&db.services, "exec").await.is_none());
    assert_eq!(status_of(&db.services, edited).await, CommandStatus::Failed);
    // A command written into the database with no approval on record (a copy of a genuine
    // queued one, for a proposal still pending): the genuine one is handed out, the copy never.
    let genuine = approved(&db.services, common::proposal_body("agent-a")).await;
    let pending = match db
        .services
        .submit(
            &Principal::Agent("agent-a".into()),
            &common::proposal_body("agent-a"),
        )
        .await
    {
        Ok(Submitted::Created(p)) => p.id,
        other => panic!("expected a new proposal, got {other:?}"),
    };
    let columns = "kind, rollback_of, tool_name, status, spec, attempts, allowed_executors, \
                   available_at, execute_by, created_at, updated_at";
    let new_id = if backend == "sqlite" {
        "randomblob(16)"
    } else {
        "gen_random_uuid()"
    };
    common::exec_sql(
        &db.url,
        &format!(
            "insert into commands (id, proposal_id, {columns}) \
             select {new_id}, (select id from proposals where status = 'pending'), {columns} \
             from commands where status = 'queued'"
        ),
    )
    .await;
    let l = any(&db.services, "exec")
        .await
        .expect("the genuine command");
    assert_eq!(l.command.id, genuine);
    assert!(
        any(&db.services, "exec").await.is_none(),
        "the copy was handed out"
    );
    let forged = common::count(
        &db.url,
        "select count(*) from commands where status = 'failed' and interruption = 'never_approved'",
    )
    .await;
    assert_eq!(forged, 1);
    // The genuine proposal the copy named is left as it was: still pending, for a reviewer.
    let proposal = db
        .services
        .proposal(&Principal::Operator, pending)
        .await
        .expect("read");
    assert_eq!(proposal.expect("exists").status, ProposalStatus::Pending);
    // A report, with the right token, on a command whose proposal is no longer approved (a
    // database edit after the lease): refused, and nothing moves.
    let third = approved(&db.services, common::proposal_body("agent-a")).await;
    let l = any(&db.services, "exec").await.expect("the third command");
    assert_eq!(l.command.id, third);
    common::exec_sql(
        &db.url,
        "update proposals set status = 'pending' where status = 'approved'",
    )
    .await;
    match db
        .services
        .report(
            &Principal::Executor("exec".into()),
            report(&l, Outcome::Succeeded, SideEffect::Done),
        )
        .await
    {
        Err(ServiceError::Forbidden { code, .. }) => assert_eq!(code, "never_approved"),
        other => panic!("expected 403 never_approved, got {other:?}"),
    }
    assert_eq!(status_of(&db.services, third).await, CommandStatus::Leased);
    let drift = of_kind(&db.services, "executor.drift").await;
    let mut reasons: Vec<&str> = drift.iter().filter_map(|d| d["reason"].as_str()).collect();
    reasons.sort_unstable();
    assert_eq!(
        reasons,
        [
            "never_approved",
            "never_approved",
            "not_held",
            "spec_mismatch",
            "spec_mismatch"
        ]
    );
}

async fn the_grant_verifies_and_fails_after_any_change(backend: &str) {
    let db = db(backend, NO_POLICY).await;
    approved(&db.services, common::proposal_body("agent-a")).await;
    let l = any(&db.services, "exec").await.expect("leased");
    let key_bytes: [u8; 32] = hex::decode(db.services.grant_public_key())
        .expect("hex")
        .try_into()
        .expect("32 bytes");
    let key = VerifyingKey::from_bytes(&key_bytes).expect("key");
    let sig: [u8; 64] = hex::decode(&l.grant.signature)
        .expect("hex")
        .try_into()
        .expect("64");
    let sig = Signature::from_bytes(&sig);
    let claims = &l.grant.claims;
    assert!(
        key.verify(&claims.message().expect("message"), &sig)
            .is_ok()
    );
    assert!(claims.describe(l.command.id, &l.command.spec));
    assert_eq!(claims.attempt, 1);
    // Any change to the claims breaks the signature...
    let mut forged: GrantClaims = claims.clone();
    forged.tool = "payments.refund".into();
    assert!(
        key.verify(&forged.message().expect("message"), &sig)
            .is_err()
    );
    // ...and any change to the command no longer matches the claims.
    let mut spec = l.command.spec.clone();
    spec.parameters
        .insert("email".into(), json!("attacker@example.com"));
    assert!(!claims.describe(l.command.id, &spec));
    let mut spec = l.command.spec.clone();
    spec.tool.version = "2099-01".into();
    assert!(!claims.describe(l.command.id, &spec));
}

async fn scopes_and_the_policy_decide_who_leases(backend: &str) {
    let db = db(
        backend,
        "[tools.\"payments.*\"]\nallowed_executors = [\"payments-runner\"]\n",
    )
    .await;
    let crm = approved(&db.services, common::proposal_body("agent-a")).await;
    let mut refund = common::proposal_body("agent-a");
    refund["tool"]["name"] = json!("payments.refund");
    let refund = approved(&db.services, refund).await;
    // No scope, no policy entry for crm: nobody; the reporting worker never gets the refund.
    assert!(lease(&db.services, "reporter", None).await.is_none());
    assert!(
        lease(&db.services, "reporter", Some("reports.*"))
            .await
            .is_none()
    );
    assert!(
        lease(&db.services, "crm-runner", Some("payments.*"))
            .await
            .is_none()
    );
    // A scope that covers the tool leases it.
    let l = lease(&db.services, "crm-runner", Some("crm.*"))
        .await
        .expect("crm");
    assert_eq!(l.command.id, crm);
    // The policy names the payments executor; no scope needed, a wrong scope refuses.
    assert!(
        lease(&db.services, "payments-runner", Some("crm.*"))
            .await
            .is_none()
    );
    let p = lease(&db.services, "payments-runner", None)
        .await
        .expect("refund");
    assert_eq!(p.command.id, refund);
}

async fn a_paused_tool_is_not_leased(backend: &str) {
    let db = db(backend, NO_POLICY).await;
    let body = common::proposal_body("agent-a");
    let proposal = Uuid::parse_str(body["proposal_id"].as_str().expect("id")).expect("uuid");
    let id = approved(&db.services, body).await;
    let actor = Principal::Operator;
    assert!(
        db.services
            .pause_tool(&actor, "crm.*")
            .await
            .expect("pause")
    );
    assert!(any(&db.services, "exec").await.is_none());
    let why = (db.services)
        .waiting_reason(&Principal::Operator, proposal)
        .await
        .expect("reason");
    assert!(
        why.is_some_and(|w| w.contains("paused")),
        "the page says why it waits"
    );
    assert!(
        db.services
            .resume_tool(&actor, "crm.*")
            .await
            .expect("resume")
    );
    assert_eq!(
        any(&db.services, "exec").await.expect("leased").command.id,
        id
    );
    assert_eq!(of_kind(&db.services, "tool.paused").await.len(), 1);
}

async fn a_command_not_leased_in_its_window_expires(backend: &str) {
    let db = db(backend, "[defaults]\nexecute_within = \"10m\"\n").await;
    let id = approved(&db.services, common::proposal_body("agent-a")).await;
    db.clock.advance(Duration::minutes(10));
    // Past the window: never handed out, even before the sweep records it.
    assert!(any(&db.services, "exec").await.is_none());
    let swept = db.services.sweep_queue().await.expect("sweep");
    assert_eq!(swept.expired, 1);
    assert_eq!(status_of(&db.services, id).await, CommandStatus::Expired);
    assert_eq!(
        proposal_status(&db.services, id).await,
        ProposalStatus::Expired
    );
}

/// Leases and success reports handed to the writer together are made a few to a statement
/// (the writer stages them: on PostgreSQL the reports with the first lease filter's leases,
/// one statement more for each further filter; on SQLite the reports in two statements and
/// each filter's leases in one), and each
/// finds its own outcome as if they ran one after another. In one group: a success report, a
/// second report on the same command (refused: it is settled), a report with the wrong token
/// (refused, recorded as drift), a failure with a stale token handed over before them all (it
/// runs after the success and is refused for it), three leases by one executor and one by an
/// executor whose
/// scope matches nothing. The first lease is handed a command whose spec was edited after its
/// approval: it refuses it as drift and claims the next one itself. Every other lease gets a
/// command of its own, oldest first; no command is handed out twice; the chain verifies.
async fn leases_and_reports_in_one_group_are_made_together(backend: &str) {
    let db = db(backend, NO_POLICY).await;
    let services = Arc::new(db.services.clone());
    let mut ids = Vec::new();
    for _ in 0..6 {
        ids.push(approved(&services, common::proposal_body("agent-a")).await);
    }
    let first = any(&services, "exec").await.expect("leased");
    let second = any(&services, "exec").await.expect("leased");
    assert_eq!((first.command.id, second.command.id), (ids[0], ids[1]));
    let sql = format!(
        "update commands set spec = replace(spec{}, 'new@example.com', 'attacker@example.com'){} \
         where id = {}",
        if backend == "sqlite" { "" } else { "::text" },
        if backend == "sqlite" { "" } else { "::jsonb" },
        if backend == "sqlite" {
            format!("x'{}'", ids[2].simple())
        } else {
            format!("'{}'", ids[2])
        },
    );
    common::exec_sql(&db.url, &sql).await;

    type Answer = Result<Option<Uuid>, ServiceError>;
    let (answers_tx, mut answers) = tokio::sync::mpsc::unbounded_channel::<(usize, Answer)>();
    let mut wrong = report(&second, Outcome::Succeeded, SideEffect::None);
    wrong.lease_token = "lease_not-the-token".into();
    let mut stale_failure = report(&first, Outcome::Failed, SideEffect::None);
    stale_failure.lease_token = "lease_not-the-token".into();
    let reports = [
        stale_failure,
        report(&first, Outcome::Succeeded, SideEffect::None),
        report(&first, Outcome::Succeeded, SideEffect::None),
        wrong,
    ];
    let mut writes: Vec<common::Write> = Vec::new();
    for (n, r) in reports.into_iter().enumerate() {
        let (services, answers_tx) = (Arc::clone(&services), answers_tx.clone());
        writes.push(Box::pin(async move {
            let answer = services
                .report(&Principal::Executor("exec".into()), r)
                .await
                .map(|c| Some(c.id));
            answers_tx.send((n, answer)).expect("answers");
            Ok(())
        }));
    }
    for (n, (executor, scope)) in [
        ("exec", "*"),
        ("exec", "*"),
        ("exec", "*"),
        ("other", "nothing.*"),
    ]
    .into_iter()
    .enumerate()
    {
        let (services, answers_tx) = (Arc::clone(&services), answers_tx.clone());
        writes.push(Box::pin(async move {
            let leased = lease(&services, executor, Some(scope)).await;
            answers_tx
                .send((4 + n, Ok(leased.map(|l| l.command.id))))
                .expect("answers");
            Ok(())
        }));
    }
    drop(answers_tx);
    let stats = services.store().writer_stats();
    let (claimed_before, settled_before) = (stats.claimed_together(), stats.settled_together());
    let with_leases_before = stats.settled_with_leases();
    let statements_before = stats.queue_statements();
    let written = common::as_one_group(services.store(), writes).await;
    assert!(written.iter().all(Result::is_ok), "{written:?}");
    // On PostgreSQL the reports are settled in the statement that makes the first run of
    // leases (the executor `exec`'s three; `other`'s lease is a statement of its own).
    assert_eq!(
        stats.settled_with_leases() - with_leases_before,
        if backend == "postgres" { 2 } else { 0 },
        "reports settled with the leases"
    );
    // Staged: the four leases, and two successful reports (the second on the first's command
    // is left to its own change, which runs after and finds it settled; failures are not
    // staged).
    assert_eq!(
        (
            stats.claimed_together() - claimed_before,
            stats.settled_together() - settled_before
        ),
        (4, 2),
        "leases and reports made together"
    );
    // In few statements: the executor `exec`'s three leases in one and `other`'s in another;
    // the reports in one on PostgreSQL (the first run of leases', there), in two on SQLite
    // (the commands, then their proposals), never one each.
    assert_eq!(
        stats.queue_statements() - statements_before,
        if backend == "postgres" { 2 } else { 4 },
        "statements for the leases and reports"
    );
    let mut by_n = std::collections::BTreeMap::new();
    while let Some((n, answer)) = answers.recv().await {
        by_n.insert(n, answer);
    }
    // The staged changes run first, then the others, which see what they made: the stale
    // failure handed over before the success finds the command settled, as does the second
    // success.
    assert!(
        matches!(by_n[&1], Ok(Some(id)) if id == ids[0]),
        "{:?}",
        by_n[&1]
    );
    for n in [0, 2] {
        assert!(
            matches!(
                by_n[&n],
                Err(ServiceError::Conflict(Conflict::CommandNotLeased(
                    CommandStatus::Succeeded
                )))
            ),
            "report {n}: {:?}",
            by_n[&n]
        );
    }
    assert!(
        matches!(
            by_n[&3],
            Err(ServiceError::Conflict(Conflict::LeaseTokenMismatch))
        ),
        "{:?}",
        by_n[&3]
    );
    let leased: Vec<Option<Uuid>> = (4..8)
        .map(|n| match &by_n[&n] {
            Ok(id) => *id,
            Err(e) => panic!("lease {n}: {e:?}"),
        })
        .collect();
    assert_eq!(
        leased,
        [Some(ids[5]), Some(ids[3]), Some(ids[4]), None],
        "the drifted command refused, then the next claimed; the others oldest first"
    );
    assert_eq!(status_of(&services, ids[0]).await, CommandStatus::Succeeded);
    assert_eq!(
        proposal_status(&services, ids[0]).await,
        ProposalStatus::Succeeded
    );
    assert_eq!(status_of(&services, ids[1]).await, CommandStatus::Leased);
    assert_eq!(status_of(&services, ids[2]).await, CommandStatus::Failed);
    let drift = of_kind(&services, "executor.drift").await;
    let mut reasons: Vec<&str> = drift.iter().filter_map(|d| d["reason"].as_str()).collect();
    reasons.sort_unstable();
    assert_eq!(
        reasons,
        ["not_held", "not_held", "not_held", "spec_mismatch"]
    );
    // The trail tells it in the order it happened: the success, then the reports refused for it.
    assert_eq!(
        kinds(&services, ids[0]).await,
        [
            "command.queued",
            "command.leased",
            "command.succeeded",
            "executor.drift",
            "executor.drift"
        ]
    );
    services
        .verify_trail(&Principal::Operator, None)
        .await
        .expect("chain verifies");
}

/// The executors' steady state: one executor reports its success while another leases, both
/// in one writer group. On PostgreSQL the two are one statement (even one of each); the report
/// settles (its proposal `succeeded`, recorded as such), the lease gets the oldest queued
/// command (recorded as leased), and the trail verifies.
async fn a_report_and_a_lease_in_one_group(backend: &str) {
    let db = db(backend, NO_POLICY).await;
    let services = Arc::new(db.services.clone());
    let mut ids = Vec::new();
    for _ in 0..3 {
        ids.push(approved(&services, common::proposal_body("agent-a")).await);
    }
    let first = any(&services, "exec").await.expect("leased");
    let stats = services.store().writer_stats();
    let before = (
        stats.claimed_together(),
        stats.settled_together(),
        stats.settled_with_leases(),
    );
    let (answers_tx, mut answers) = tokio::sync::mpsc::unbounded_channel();
    let reporting: common::Write = Box::pin({
        let (services, answers_tx) = (Arc::clone(&services), answers_tx.clone());
        let r = report(&first, Outcome::Succeeded, SideEffect::None);
        async move {
            let done = services
                .report(&Principal::Executor("exec".into()), r)
                .await
                .expect("settled");
            answers_tx.send(("report", Some(done.id))).expect("answers");
            Ok(())
        }
    });
    let leasing: common::Write = Box::pin({
        let services = Arc::clone(&services);
        async move {
            let leased = any(&services, "exec-2").await.map(|l| l.command.id);
            answers_tx.send(("lease", leased)).expect("answers");
            Ok(())
        }
    });
    let written = common::as_one_group(services.store(), vec![reporting, leasing]).await;
    assert!(written.iter().all(Result::is_ok), "{written:?}");
    let mut got = std::collections::BTreeMap::new();
    while let Some((what, id)) = answers.recv().await {
        got.insert(what, id);
    }
    assert_eq!(got["report"], Some(ids[0]));
    assert_eq!(got["lease"], Some(ids[1]), "the oldest queued command");
    let made = (
        stats.claimed_together() - before.0,
        stats.settled_together() - before.1,
        stats.settled_with_leases() - before.2,
    );
    // SQLite stages nothing for one of each: each change's own statements are as many.
    let expected = if backend == "postgres" {
        (1, 1, 1)
    } else {
        (0, 0, 0)
    };
    assert_eq!(
        made, expected,
        "(leased, settled, settled with the lease) up front"
    );
    assert_eq!(status_of(&services, ids[0]).await, CommandStatus::Succeeded);
    assert_eq!(
        proposal_status(&services, ids[0]).await,
        ProposalStatus::Succeeded
    );
    assert_eq!(status_of(&services, ids[1]).await, CommandStatus::Leased);
    assert_eq!(status_of(&services, ids[2]).await, CommandStatus::Queued);
    assert_eq!(
        kinds(&services, ids[0]).await,
        ["command.queued", "command.leased", "command.succeeded"]
    );
    assert_eq!(
        kinds(&services, ids[1]).await,
        ["command.queued", "command.leased"]
    );
    // The statement moved the proposal and said so: its event is recorded (a wrong
    // `proposal_moved` would leave the status moved and the event out).
    let finished = of_kind(&services, "proposal.succeeded").await;
    assert_eq!(finished.len(), 1, "{finished:?}");
    assert_eq!(finished[0]["command_id"], ids[0].to_string());
    services
        .verify_trail(&Principal::Operator, None)
        .await
        .expect("chain verifies");
}

/// What [`any`] asks, as a report's `next`.
fn next_lease(executor: &str) -> LeaseRequest {
    lease_request(executor, Some("*"))
}

/// Success reports that ask for the executor's next command, in one writer group with a
/// plain lease: a report that is taken leases its next command in the same transaction; one
/// that is refused (a stale token) leases nothing, and no command is left leased to nobody.
/// The writer settles the group's reports together, then leases for those that settled in one
/// more statement (on both backends).
async fn a_report_leases_the_next_command_only_if_taken(backend: &str) {
    let db = db(backend, NO_POLICY).await;
    let services = Arc::new(db.services.clone());
    let mut ids = Vec::new();
    for _ in 0..5 {
        ids.push(approved(&services, common::proposal_body("agent-a")).await);
    }
    let first = any(&services, "exec").await.expect("leased");
    let second = any(&services, "exec-2").await.expect("leased");
    let stats = services.store().writer_stats();
    let (claimed_before, statements_before) = (stats.claimed_together(), stats.queue_statements());
    let (answers_tx, mut answers) = tokio::sync::mpsc::unbounded_channel();
    let taken: common::Write = Box::pin({
        let (services, answers_tx) = (Arc::clone(&services), answers_tx.clone());
        let r = report(&first, Outcome::Succeeded, SideEffect::None);
        async move {
            let (done, next) = (services
                .report_and_lease(&Principal::Executor("exec".into()), r, &next_lease("exec"))
                .await)
                .expect("taken");
            assert_eq!(done.status, CommandStatus::Succeeded);
            let next = next.map(|l| l.command.id);
            answers_tx.send(("exec", next)).expect("answers");
            Ok(())
        }
    });
    let refused: common::Write = Box::pin({
        let (services, answers_tx) = (Arc::clone(&services), answers_tx.clone());
        let mut r = report(&second, Outcome::Succeeded, SideEffect::None);
        r.lease_token = "not-the-token".into();
        async move {
            let answer = (services.report_and_lease(
                &Principal::Executor("exec-2".into()),
                r,
                &next_lease("exec-2"),
            ))
            .await;
            assert!(
                matches!(
                    answer,
                    Err(ServiceError::Conflict(Conflict::LeaseTokenMismatch))
                ),
                "a stale token is refused"
            );
            answers_tx.send(("exec-2", None)).expect("answers");
            Ok(())
        }
    });
    let leasing: common::Write = Box::pin({
        let services = Arc::clone(&services);
        async move {
            let leased = any(&services, "exec-3").await.map(|l| l.command.id);
            answers_tx.send(("exec-3", leased)).expect("answers");
            Ok(())
        }
    });
    let written = common::as_one_group(services.store(), vec![taken, refused, leasing]).await;
    assert!(written.iter().all(Result::is_ok), "{written:?}");
    let mut got = std::collections::BTreeMap::new();
    while let Some((who, id)) = answers.recv().await {
        got.insert(who, id);
    }
    // The next lease and the plain one took the two oldest queued commands (which took which
    // is the writer's order of the group, not a contract); the refused report took none.
    let mut leased = vec![
        got["exec"].expect("a next command"),
        got["exec-3"].expect("leased"),
    ];
    leased.sort_by_key(|id| ids.iter().position(|i| i == id));
    assert_eq!(leased, [ids[2], ids[3]]);
    assert_eq!(got["exec-2"], None);
    assert_eq!(status_of(&services, ids[0]).await, CommandStatus::Succeeded);
    assert_eq!(status_of(&services, ids[1]).await, CommandStatus::Leased);
    assert_eq!(status_of(&services, ids[2]).await, CommandStatus::Leased);
    assert_eq!(status_of(&services, ids[3]).await, CommandStatus::Leased);
    assert_eq!(
        status_of(&services, ids[4]).await,
        CommandStatus::Queued,
        "nothing leased for the refused report"
    );
    let next = got["exec"].expect("next");
    assert_eq!(
        kinds(&services, next).await,
        ["command.queued", "command.leased"]
    );
    assert_eq!(
        kinds(&services, ids[0]).await,
        ["command.queued", "command.leased", "command.succeeded"]
    );
    let made = stats.claimed_together() - claimed_before;
    let statements = stats.queue_statements() - statements_before;
    // PostgreSQL: the plain lease in the reports' statement, the next lease in one after them.
    // SQLite: the reports' commands and their proposals in a statement each, the next lease in
    // one after them; the plain lease, alone, is its change's own.
    assert_eq!(
        (made, statements),
        if backend == "postgres" {
            (2, 2)
        } else {
            (1, 3)
        },
        "leased up front, in so many statements"
    );
    services
        .verify_trail(&Principal::Operator, None)
        .await
        .expect("chain verifies");
}

/// Reports that ask for their executors' next commands, alone in their group (no plain
/// lease): a refused report (a stale token, handed over first) leases nothing and takes no
/// command from the others; of the two taken, the first leases the one command left and the
/// second gets none. PostgreSQL settles the reports and leases for those taken in one
/// statement; SQLite in three (the commands, their proposals, the leases).
async fn reports_with_next_alone_lease_for_those_taken(backend: &str) {
    let db = db(backend, NO_POLICY).await;
    let services = Arc::new(db.services.clone());
    let mut ids = Vec::new();
    for _ in 0..4 {
        ids.push(approved(&services, common::proposal_body("agent-a")).await);
    }
    let mut held = Vec::new();
    for _ in 0..3 {
        held.push(any(&services, "exec").await.expect("leased"));
    }
    let stats = services.store().writer_stats();
    let before = (stats.claimed_together(), stats.queue_statements());
    let (answers_tx, mut answers) = tokio::sync::mpsc::unbounded_channel();
    let mut writes: Vec<common::Write> = Vec::new();
    // The refused report first: were its lease numbered with the others', it would take the
    // command left.
    for (n, at) in [1, 0, 2].into_iter().enumerate() {
        let (services, answers_tx) = (Arc::clone(&services), answers_tx.clone());
        let mut r = report(&held[at], Outcome::Succeeded, SideEffect::None);
        if n == 0 {
            r.lease_token = "not-the-token".into();
        }
        writes.push(Box::pin(async move {
            let answer = services
                .report_and_lease(&Principal::Executor("exec".into()), r, &next_lease("exec"))
                .await
                .map(|(done, next)| (done.id, next.map(|l| l.command.id)));
            answers_tx.send((n, answer)).expect("answers");
            Ok(())
        }));
    }
    drop(answers_tx);
    let written = common::as_one_group(services.store(), writes).await;
    assert!(written.iter().all(Result::is_ok), "{written:?}");
    let mut got = std::collections::BTreeMap::new();
    while let Some((n, answer)) = answers.recv().await {
        got.insert(n, answer);
    }
    assert!(
        matches!(
            got[&0],
            Err(ServiceError::Conflict(Conflict::LeaseTokenMismatch))
        ),
        "{:?}",
        got[&0]
    );
    assert!(
        matches!(&got[&1], Ok((done, Some(next))) if *done == ids[0] && *next == ids[3]),
        "{:?}",
        got[&1]
    );
    assert!(
        matches!(&got[&2], Ok((done, None)) if *done == ids[2]),
        "{:?}",
        got[&2]
    );
    for (id, status) in [
        (ids[0], CommandStatus::Succeeded),
        (ids[1], CommandStatus::Leased),
        (ids[2], CommandStatus::Succeeded),
        (ids[3], CommandStatus::Leased),
    ] {
        assert_eq!(status_of(&services, id).await, status);
    }
    for id in [ids[0], ids[2]] {
        assert_eq!(
            proposal_status(&services, id).await,
            ProposalStatus::Succeeded
        );
    }
    let made = (
        stats.claimed_together() - before.0,
        stats.queue_statements() - before.1,
    );
    assert_eq!(
        made,
        if backend == "postgres" {
            (2, 1)
        } else {
            (2, 3)
        },
        "leased up front for the two taken, in so many statements"
    );
    services
        .verify_trail(&Principal::Operator, None)
        .await
        .expect("chain verifies");
}

/// A command reported twice in one group, the second time asking for the next command (a
/// client's retry): the first report settles it; the second, left to its own change, finds it
/// settled, is refused and leases nothing; the writer goes on.
async fn a_second_report_with_next_on_one_command_leases_nothing(backend: &str) {
    let db = db(backend, NO_POLICY).await;
    let services = Arc::new(db.services.clone());
    let mut ids = Vec::new();
    for _ in 0..2 {
        ids.push(approved(&services, common::proposal_body("agent-a")).await);
    }
    let held = any(&services, "exec").await.expect("leased");
    let (answers_tx, mut answers) = tokio::sync::mpsc::unbounded_channel();
    let plain: common::Write = Box::pin({
        let (services, answers_tx) = (Arc::clone(&services), answers_tx.clone());
        let r = report(&held, Outcome::Succeeded, SideEffect::None);
        async move {
            let answer = services
                .report(&Principal::Executor("exec".into()), r)
                .await
                .map(|c| (c.status, None));
            answers_tx.send((0, answer)).expect("answers");
            Ok(())
        }
    });
    let again: common::Write = Box::pin({
        let r = report(&held, Outcome::Succeeded, SideEffect::None);
        let services = Arc::clone(&services);
        async move {
            let answer = (services
                .report_and_lease(&Principal::Executor("exec".into()), r, &next_lease("exec"))
                .await)
                .map(|(c, next)| (c.status, next.map(|l| l.command.id)));
            answers_tx.send((1, answer)).expect("answers");
            Ok(())
        }
    });
    let written = common::as_one_group(services.store(), vec![plain, again]).await;
    assert!(written.iter().all(Result::is_ok), "{written:?}");
    let mut got = std::collections::BTreeMap::new();
    while let Some((n, answer)) = answers.recv().await {
        got.insert(n, answer);
    }
    assert!(
        matches!(got[&0], Ok((CommandStatus::Succeeded, None))),
        "{:?}",
        got[&0]
    );
    assert!(
        matches!(
            got[&1],
            Err(ServiceError::Conflict(Conflict::CommandNotLeased(
                CommandStatus::Succeeded
            )))
        ),
        "{:?}",
        got[&1]
    );
    assert_eq!(status_of(&services, ids[1]).await, CommandStatus::Queued);
    // The writer goes on: the command left is leased.
    let next = any(&services, "exec").await.expect("leased");
    assert_eq!(next.command.id, ids[1]);
    services
        .verify_trail(&Principal::Operator, None)
        .await
        .expect("chain verifies");
}

/// A gateway call whose run ended unknown is not released to run again while its agent's
/// same call is open again (only one copy of a call is open at a time): `call_open_again`,
/// and nothing changes. Once that copy is decided, it is released.
async fn a_call_made_again_keeps_its_first_copy_from_release(backend: &str) {
    let db = db(backend, NO_POLICY).await;
    let call = || {
        let key = format!(
            "gateway-0123456789abcdef0123456789abcdef-{}",
            Uuid::now_v7()
        );
        body_with(json!({ "idempotency_key": key }))
    };
    let first = approved(&db.services, call()).await;
    // A gateway call is the built-in gateway executor's alone.
    let gateway = countersign::domain::gateway::GATEWAY_EXECUTOR;
    assert!(any(&db.services, "doomed").await.is_none(), "no other's");
    any(&db.services, gateway).await.expect("leased");
    db.clock.advance(Duration::seconds(31));
    db.services.sweep_queue().await.expect("sweep");
    assert_eq!(
        status_of(&db.services, first).await,
        CommandStatus::OutcomeUnknown
    );
    let again = match common::submit_as(&db.services, "agent-a", &call()).await {
        Ok(Submitted::Created(p)) => p.id,
        other => panic!("the call made again is new: {other:?}"),
    };
    let why = "checked the CRM: nothing changed";
    let refused = (db.services)
        .resolve_command(&admin(), first, Resolution::Release, why)
        .await;
    assert!(
        matches!(refused, Err(ServiceError::Conflict(Conflict::CallOpenAgain(id))) if id == again),
        "{refused:?}"
    );
    assert_eq!(
        status_of(&db.services, first).await,
        CommandStatus::OutcomeUnknown
    );
    let rev = Principal::person("rev", Role::Reviewer);
    (db.services)
        .decide(&rev, again, ReviewVerdict::Rejected, Some("a copy"))
        .await
        .expect("reject the copy");
    let released = (db.services)
        .resolve_command(&admin(), first, Resolution::Release, why)
        .await
        .expect("released");
    assert_eq!(released.status, CommandStatus::Queued);
}

common::on_both_backends!(
    a_call_made_again_keeps_its_first_copy_from_release,
    a_report_leases_the_next_command_only_if_taken,
    reports_with_next_alone_lease_for_those_taken,
    a_second_report_with_next_on_one_command_leases_nothing,
    a_report_and_a_lease_in_one_group,
    a_stale_lease_token_changes_nothing,
    a_killed_executor_is_retried_only_when_safe,
    failures_follow_their_side_effect,
    a_timeout_opens_a_rollback_task,
    drift_is_refused_and_listed,
    the_grant_verifies_and_fails_after_any_change,
    scopes_and_the_policy_decide_who_leases,
    a_paused_tool_is_not_leased,
    a_command_not_leased_in_its_window_expires,
    leases_and_reports_in_one_group_are_made_together,
);
