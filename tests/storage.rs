//! The storage test suite, run against both backends: every test below runs once on a fresh
//! SQLite file and once on a fresh PostgreSQL database. A database it cannot reach is a
//! failure, never a skip.
//!
//! Changes go through the service layer (the only writer of state and audit events); the
//! assertions are about what the store then holds. Time comes from a test clock the tests
//! move, never from sleeping.

mod common;

use common::clock::SetClock;

use common::LeaseAs;
use countersign::domain::principal::Principal;

use std::sync::Arc;

use countersign::auth::token;
use countersign::domain::Policy;
use countersign::domain::command::retry::SideEffect;
use countersign::domain::command::{CommandStatus, Outcome};
use countersign::domain::contract::vocab::AuthorizationState;
use countersign::domain::lifecycle::{DecisionError, ProposalStatus, ReviewVerdict};
use countersign::domain::principal::{ActorKind, Role, TokenKind};
use countersign::service::NewUser;
use countersign::service::{
    AccountError, Clock, Conflict, Cursor, Decided, Report, ServiceError, Services, Submitted,
};
use countersign::storage;
use countersign::storage::proposals::ProposalRecord;
use serde_json::json;
use time::Duration;
use uuid::Uuid;

struct Db {
    services: Services,
    clock: Arc<SetClock>,
    url: String,
    _dir: Option<tempfile::TempDir>,
}

async fn db(backend: &str) -> Db {
    db_with(backend, Policy::builtin()).await
}

async fn db_with(backend: &str, policy: Policy) -> Db {
    let (url, dir) = common::fresh_database(backend);
    let (store, _) = storage::connect(&url)
        .await
        .unwrap_or_else(|e| panic!("cannot open {backend} test database {url}: {e}"));
    let clock = Arc::new(SetClock::starting_now());
    let services = Services::with_clock(store, Arc::new(policy), clock.clone());
    Db {
        services,
        clock,
        url,
        _dir: dir,
    }
}

fn reviewer(name: &str) -> Principal {
    Principal::person(name, Role::Reviewer)
}

async fn submit(services: &Services, agent: &str) -> Uuid {
    submit_record(services, agent).await.id
}

async fn submit_record(services: &Services, agent: &str) -> ProposalRecord {
    match services
        .submit(
            &Principal::Agent(agent.into()),
            &common::proposal_body(agent),
        )
        .await
    {
        Ok(Submitted::Created(p)) => p,
        other => panic!("expected a new proposal, got {other:?}"),
    }
}

/// `reviewer` approves proposal `id` (one approval is enough); the id of the queued command.
async fn approve(services: &Services, id: Uuid, by: &str) -> Result<Uuid, ServiceError> {
    match services
        .decide(&reviewer(by), id, ReviewVerdict::Approved, None)
        .await?
    {
        Decided::Final(p) => assert_eq!(p.status, ProposalStatus::Approved),
        Decided::ApprovalRecorded(p) => panic!("one approval should decide, got {p:?}"),
    }
    let command = services
        .command_for_proposal(&Principal::Operator, id)
        .await?
        .expect("an approval queues a command");
    Ok(command.id)
}

/// The status a refusal as "already decided" names, whether the review rules caught it before
/// the write or the store's atomic check (`where status = 'pending'`) caught it in the write.
fn already_decided<T>(result: &Result<T, ServiceError>) -> Option<ProposalStatus> {
    match result {
        Err(ServiceError::Conflict(Conflict::AlreadyDecided(s)))
        | Err(ServiceError::Refused(DecisionError::AlreadyDecided(s))) => Some(*s),
        _ => None,
    }
}

fn report(command_id: Uuid, lease_token: &str, outcome: Outcome) -> Report {
    Report {
        command_id,
        lease_token: lease_token.into(),
        outcome,
        body: json!({"ok": outcome == Outcome::Succeeded}),
        side_effect: SideEffect::Possible,
    }
}

async fn actions(services: &Services, subject_type: &str, id: Uuid) -> Vec<String> {
    services
        .trail(&Principal::Operator, subject_type, &id.to_string())
        .await
        .expect("audit")
        .into_iter()
        .map(|a| a.action)
        .collect()
}

async fn count_users(services: &Services) -> i64 {
    let mut read = services.store().read().await.expect("read");
    storage::accounts::count_users(read.conn())
        .await
        .expect("count")
}

async fn submission_is_idempotent_per_agent_and_body(backend: &str) {
    let db = db(backend).await;
    let body = common::proposal_body("agent-a");
    let first = db
        .services
        .submit(&Principal::Agent("agent-a".into()), &body)
        .await
        .expect("first");
    let Submitted::Created(original) = first else {
        panic!("first submission must create")
    };
    assert_eq!(original.status, ProposalStatus::Pending);
    assert_eq!(original.authorization_state, AuthorizationState::None);

    // The same request again, even with a new timestamp, returns the original.
    let mut retry = body.clone();
    retry["timestamp"] = json!("2026-11-22T10:05:00Z");
    match db
        .services
        .submit(&Principal::Agent("agent-a".into()), &retry)
        .await
    {
        Ok(Submitted::Replayed(p)) => assert_eq!(p.id, original.id),
        other => panic!("expected a replay, got {other:?}"),
    }

    // The same key with a different body is refused.
    let mut changed = body.clone();
    changed["parameters"]["email"] = json!("other@example.com");
    match db
        .services
        .submit(&Principal::Agent("agent-a".into()), &changed)
        .await
    {
        Err(ServiceError::Conflict(Conflict::IdempotencyKeyReused)) => {}
        other => panic!("expected idempotency_key_reused, got {other:?}"),
    }

    // The same proposal id under another key is a conflict, and nothing was written twice.
    let mut same_id = common::proposal_body("agent-a");
    same_id["proposal_id"] = body["proposal_id"].clone();
    match db
        .services
        .submit(&Principal::Agent("agent-a".into()), &same_id)
        .await
    {
        Err(ServiceError::Conflict(Conflict::ProposalIdTaken)) => {}
        other => panic!("expected proposal id conflict, got {other:?}"),
    }

    // Keys are scoped per agent: another agent may use the same key.
    let mut other_agent = common::proposal_body("agent-b");
    other_agent["idempotency_key"] = body["idempotency_key"].clone();
    assert!(matches!(
        db.services
            .submit(&Principal::Agent("agent-b".into()), &other_agent)
            .await,
        Ok(Submitted::Created(_))
    ));
    assert_eq!(
        actions(&db.services, "proposal", original.id).await,
        ["proposal.submitted"]
    );
}

async fn approval_confirms_queues_and_audits_in_one_go(backend: &str) {
    let db = db(backend).await;
    let id = submit(&db.services, "agent-a").await;
    let command_id = approve(&db.services, id, "rev").await.expect("approve");
    let p = db
        .services
        .proposal(&Principal::Operator, id)
        .await
        .expect("read")
        .expect("exists");
    assert_eq!(p.status, ProposalStatus::Approved);
    assert_eq!(p.authorization_state, AuthorizationState::Confirmed);
    let review = p.review.expect("review recorded");
    assert_eq!(
        (review.verdict, review.decided_by.as_str()),
        (ReviewVerdict::Approved, "rev")
    );
    let command = db
        .services
        .command_for_proposal(&Principal::Operator, id)
        .await
        .expect("read")
        .expect("queued");
    assert_eq!(
        (command.id, command.proposal_id, command.status),
        (command_id, id, CommandStatus::Queued)
    );
    assert_eq!(command.spec.parameters["email"], "new@example.com");
    assert_eq!(command.spec.request_hash_sha256, p.request_hash);
    assert_eq!(
        actions(&db.services, "proposal", id).await,
        ["proposal.submitted", "proposal.approved"]
    );
    assert_eq!(
        actions(&db.services, "command", command_id).await,
        ["command.queued"]
    );
    let audit = db
        .services
        .trail(&Principal::Operator, "proposal", &id.to_string())
        .await
        .expect("audit");
    assert_eq!(audit[1].before_status.as_deref(), Some("pending"));
    assert_eq!(audit[1].after_status.as_deref(), Some("approved"));
    assert_eq!(audit[1].actor, "rev");
    assert_eq!(audit[1].actor_kind, ActorKind::User);
}

async fn a_decided_proposal_is_never_decided_again(backend: &str) {
    let db = db(backend).await;
    let id = submit(&db.services, "agent-a").await;
    approve(&db.services, id, "rev")
        .await
        .expect("first decision");
    let again = approve(&db.services, id, "rev2").await;
    assert_eq!(
        already_decided(&again),
        Some(ProposalStatus::Approved),
        "expected already decided, got {again:?}"
    );
    let reject = db
        .services
        .decide(&reviewer("rev2"), id, ReviewVerdict::Rejected, Some("no"))
        .await;
    assert!(
        already_decided(&reject).is_some(),
        "expected already decided, got {reject:?}"
    );
    // The store's own guard: a decided proposal can no longer be claimed for a decision.
    let now = db.clock.now();
    let claimed = db
        .services
        .store()
        .write(move |tx| {
            Box::pin(async move { storage::proposals::claim_pending(tx.conn(), id, now).await })
        })
        .await
        .expect("claim");
    assert!(claimed.is_none(), "claimed a decided proposal: {claimed:?}");
    let p = db
        .services
        .proposal(&Principal::Operator, id)
        .await
        .expect("read")
        .expect("exists");
    assert_eq!(p.review.expect("review").decided_by, "rev");
    assert_eq!(
        actions(&db.services, "proposal", id).await,
        ["proposal.submitted", "proposal.approved"]
    );
}

async fn concurrent_reviewers_produce_one_decision_and_one_command(backend: &str) {
    let db = db(backend).await;
    let id = submit(&db.services, "agent-a").await;
    let mut tasks = Vec::new();
    for i in 0..8 {
        let services = db.services.clone();
        tasks.push(tokio::spawn(async move {
            approve(&services, id, &format!("rev{i}")).await
        }));
    }
    let mut won = 0;
    for t in tasks {
        let outcome = t.await.expect("task");
        match &outcome {
            Ok(_) => won += 1,
            Err(_) if already_decided(&outcome).is_some() => {}
            Err(e) => panic!("unexpected error {e}"),
        }
    }
    assert_eq!(won, 1);
    let approvals = actions(&db.services, "proposal", id)
        .await
        .iter()
        .filter(|a| *a == "proposal.approved")
        .count();
    assert_eq!(approvals, 1);
    assert!(
        db.services
            .command_for_proposal(&Principal::Operator, id)
            .await
            .expect("read")
            .is_some()
    );
}

async fn rejection_records_the_reason_and_queues_nothing(backend: &str) {
    let db = db(backend).await;
    let id = submit(&db.services, "agent-a").await;
    let decided = db
        .services
        .decide(
            &reviewer("rev"),
            id,
            ReviewVerdict::Rejected,
            Some("wrong customer"),
        )
        .await
        .expect("reject");
    let Decided::Final(p) = decided else {
        panic!("a rejection is final, got {decided:?}")
    };
    assert_eq!(p.status, ProposalStatus::Rejected);
    assert_eq!(p.authorization_state, AuthorizationState::None);
    assert_eq!(
        p.review.expect("review").reason.as_deref(),
        Some("wrong customer")
    );
    assert!(
        db.services
            .command_for_proposal(&Principal::Operator, id)
            .await
            .expect("read")
            .is_none()
    );
    assert!(
        db.services
            .lease_as("exec", 60)
            .await
            .expect("lease")
            .is_none()
    );
}

async fn leases_are_exclusive_and_reports_need_the_current_token(backend: &str) {
    let db = db(backend).await;
    assert!(
        db.services
            .lease_as("exec", 60)
            .await
            .expect("lease")
            .is_none()
    );
    let id = submit(&db.services, "agent-a").await;
    let command_id = approve(&db.services, id, "rev").await.expect("approve");

    let leased = db.services.lease_as("exec", 60).await.expect("lease");
    let leased = leased.expect("a command");
    let token = leased.lease_token.expose().to_owned();
    let command = &leased.command;
    assert_eq!(
        (command.id, command.status, command.attempts),
        (command_id, CommandStatus::Leased, 1)
    );
    assert_eq!(command.leased_by.as_deref(), Some("exec"));
    // Held: nobody else gets it.
    assert!(
        db.services
            .lease_as("exec2", 60)
            .await
            .expect("lease")
            .is_none()
    );

    match db
        .services
        .report(
            &Principal::Executor("exec".into()),
            report(command_id, "wrong", Outcome::Succeeded),
        )
        .await
    {
        Err(ServiceError::Conflict(Conflict::LeaseTokenMismatch)) => {}
        other => panic!("expected lease mismatch, got {other:?}"),
    }
    // The right token from another executor is refused too: the lease is "exec"'s.
    match db
        .services
        .report(
            &Principal::Executor("intruder".into()),
            report(command_id, &token, Outcome::Succeeded),
        )
        .await
    {
        Err(ServiceError::Conflict(Conflict::LeaseTokenMismatch)) => {}
        other => panic!("expected lease mismatch, got {other:?}"),
    }
    let done = db
        .services
        .report(
            &Principal::Executor("exec".into()),
            report(command_id, &token, Outcome::Succeeded),
        )
        .await
        .expect("report");
    assert_eq!(done.status, CommandStatus::Succeeded);
    assert_eq!(done.result, Some(json!({"ok": true})));
    let p = db
        .services
        .proposal(&Principal::Operator, id)
        .await
        .expect("read")
        .expect("exists");
    assert_eq!(p.status, ProposalStatus::Succeeded);
    match db
        .services
        .report(
            &Principal::Executor("exec".into()),
            report(command_id, &token, Outcome::Failed),
        )
        .await
    {
        Err(ServiceError::Conflict(Conflict::CommandNotLeased(CommandStatus::Succeeded))) => {}
        other => panic!("expected not leased, got {other:?}"),
    }
    match db
        .services
        .report(
            &Principal::Executor("exec".into()),
            report(Uuid::now_v7(), &token, Outcome::Failed),
        )
        .await
    {
        Err(ServiceError::NotFound) => {}
        other => panic!("expected not found, got {other:?}"),
    }
    // The wrong token, the intruder and the report after the outcome are drift, recorded.
    assert_eq!(
        actions(&db.services, "command", command_id).await,
        [
            "command.queued",
            "command.leased",
            "executor.drift",
            "executor.drift",
            "command.succeeded",
            "executor.drift"
        ]
    );
    assert_eq!(
        actions(&db.services, "proposal", id).await,
        [
            "proposal.submitted",
            "proposal.approved",
            "proposal.succeeded"
        ]
    );
}

async fn failures_are_recorded_on_command_and_proposal(backend: &str) {
    let db = db(backend).await;
    let id = submit(&db.services, "agent-a").await;
    let command_id = approve(&db.services, id, "rev").await.expect("approve");
    let leased = db
        .services
        .lease_as("exec", 60)
        .await
        .expect("lease")
        .expect("command");
    assert_eq!(leased.command.id, command_id);
    let failed = db
        .services
        .report(
            &Principal::Executor("exec".into()),
            Report {
                side_effect: SideEffect::Done,
                ..report(command_id, leased.lease_token.expose(), Outcome::Failed)
            },
        )
        .await
        .expect("report");
    assert_eq!(failed.status, CommandStatus::Failed);
    assert_eq!(failed.error, Some(json!({"ok": false})));
    assert_eq!(
        db.services
            .proposal(&Principal::Operator, id)
            .await
            .expect("read")
            .expect("exists")
            .status,
        ProposalStatus::Failed
    );
}

async fn an_expired_lease_is_never_re_leased_silently(backend: &str) {
    let db = db(backend).await;
    let id = submit(&db.services, "agent-a").await;
    let command_id = approve(&db.services, id, "rev").await.expect("approve");
    let first = db
        .services
        .lease_as("slow", 5)
        .await
        .expect("lease")
        .expect("command");
    assert_eq!(first.command.attempts, 1);
    // The slow executor's lease runs out: nobody else gets the command (it may have run).
    db.clock.advance(Duration::seconds(6));
    assert!(
        db.services
            .lease_as("fast", 60)
            .await
            .expect("lease")
            .is_none()
    );
    let swept = db.services.sweep_queue().await.expect("sweep");
    assert_eq!((swept.retried, swept.settled), (0, 1));
    let p = db
        .services
        .proposal(&Principal::Operator, id)
        .await
        .expect("read")
        .expect("exists");
    assert_eq!(p.status, ProposalStatus::OutcomeUnknown);
    // The old holder's late report is refused and recorded as drift.
    match db
        .services
        .report(
            &Principal::Executor("slow".into()),
            report(command_id, first.lease_token.expose(), Outcome::Succeeded),
        )
        .await
    {
        Err(ServiceError::Conflict(Conflict::CommandNotLeased(CommandStatus::OutcomeUnknown))) => {}
        other => panic!("the old holder must be fenced off, got {other:?}"),
    }
    assert_eq!(
        actions(&db.services, "command", command_id).await,
        [
            "command.queued",
            "command.leased",
            "command.lease_lapsed",
            "executor.drift"
        ]
    );
}

async fn concurrent_executors_never_share_a_command(backend: &str) {
    let db = db(backend).await;
    for _ in 0..6 {
        let id = submit(&db.services, "agent-a").await;
        approve(&db.services, id, "rev").await.expect("approve");
    }
    let mut tasks = Vec::new();
    for i in 0..12 {
        let services = db.services.clone();
        tasks.push(tokio::spawn(async move {
            services.lease_as(&format!("exec{i}"), 60).await
        }));
    }
    let mut leased = Vec::new();
    for t in tasks {
        if let Some(l) = t.await.expect("task").expect("lease") {
            leased.push(l.command.id);
        }
    }
    leased.sort();
    let before = leased.len();
    leased.dedup();
    assert_eq!((before, leased.len()), (6, 6));
}

async fn the_queue_lists_pending_proposals_oldest_first(backend: &str) {
    let db = db(backend).await;
    let a = submit(&db.services, "agent-a").await;
    let b = submit(&db.services, "agent-a").await;
    let c = submit(&db.services, "agent-a").await;
    approve(&db.services, b, "rev").await.expect("approve");
    let ids = |list: Vec<ProposalRecord>| list.into_iter().map(|p| p.id).collect::<Vec<_>>();
    let pending = ids(db
        .services
        .proposals_in(
            &Principal::person("boss", Role::Admin),
            ProposalStatus::Pending,
            10,
        )
        .await
        .expect("list"));
    assert_eq!(pending, [a, c]);
    let queue = ids(db
        .services
        .pending(&Principal::person("boss", Role::Admin), 10)
        .await
        .expect("queue"));
    assert_eq!(queue, [a, c]);
}

async fn users_and_tokens_round_trip(backend: &str) {
    let db = db(backend).await;
    let actor = Principal::Operator;
    let password = "correct horse battery staple";
    assert_eq!(count_users(&db.services).await, 0);
    db.services
        .add_user(&actor, NewUser::new("rev", Role::Reviewer, password))
        .await
        .expect("insert");
    match db
        .services
        .add_user(
            &actor,
            NewUser::new("rev", Role::Admin, "another long password"),
        )
        .await
    {
        Err(AccountError::Taken(name)) => assert_eq!(name, "rev"),
        Err(AccountError::Service(ServiceError::Conflict(Conflict::UsernameTaken))) => {}
        Err(e) => panic!("expected username taken, got {e}"),
        Ok(()) => panic!("expected username taken, got a second user"),
    }
    assert_eq!(count_users(&db.services).await, 1);
    let read = db
        .services
        .user("rev")
        .await
        .expect("read")
        .expect("exists");
    assert_eq!(
        (read.username.as_str(), read.role, read.disabled),
        ("rev", Some(Role::Reviewer), false)
    );
    // The row read back is the one created: its id is the one the trail recorded.
    assert_eq!(
        actions(&db.services, "user", read.id).await,
        ["user.created"]
    );
    let localhost = std::net::IpAddr::from([127, 0, 0, 1]);
    let countersign::service::SignIn::SignedIn(signed_in) = db
        .services
        .sign_in("rev", password, localhost)
        .await
        .expect("sign in")
    else {
        panic!("the stored hash verifies");
    };
    assert_eq!(signed_in.id, read.id);
    assert!(db.services.user("nobody").await.expect("read").is_none());

    let secret = db
        .services
        .create_token(&actor, TokenKind::Executor, "n8n", None)
        .await
        .expect("token");
    let found = db
        .services
        .token(&token::hash(secret.expose()))
        .await
        .expect("read")
        .expect("exists");
    assert_eq!(
        (found.kind, found.name.as_str(), found.revoked),
        (TokenKind::Executor, "n8n", false)
    );
    // Only the hash is stored: the secret itself finds nothing, nor does an unknown hash.
    assert!(
        db.services
            .token(secret.expose())
            .await
            .expect("read")
            .is_none()
    );
    assert!(
        db.services
            .token(&token::hash("h2"))
            .await
            .expect("read")
            .is_none()
    );
}

async fn the_audit_trail_refuses_updates_and_deletes(backend: &str) {
    let db = db(backend).await;
    let id = submit(&db.services, "agent-a").await;
    // A signed checkpoint is evidence too (its row as the signer wrote it; the refusal does not
    // depend on the signature).
    common::exec_sql(
        &db.url,
        "insert into audit_checkpoints (seq, hash, at, public_key, signature) \
         values (1, 'h', '2026-11-26T00:00:00Z', 'k', 's')",
    )
    .await;
    for (table, column) in [("audit_events", "actor"), ("audit_checkpoints", "hash")] {
        let update = format!("update {table} set {column} = 'mallory'");
        let delete = format!("delete from {table}");
        assert!(common::refuses(&db.url, &update).await, "{update}");
        assert!(common::refuses(&db.url, &delete).await, "{delete}");
        // SQLite has no `truncate`.
        if backend != "sqlite" {
            let truncate = format!("truncate {table}");
            assert!(common::refuses(&db.url, &truncate).await, "{truncate}");
        }
    }
    assert_eq!(
        common::count(
            &db.url,
            "select count(*) from audit_checkpoints where hash = 'h'"
        )
        .await,
        1
    );
    let trail = db
        .services
        .trail(&Principal::Operator, "proposal", &id.to_string())
        .await
        .expect("audit");
    assert_eq!(
        trail
            .iter()
            .map(|a| (a.action.as_str(), a.actor.as_str()))
            .collect::<Vec<_>>(),
        [("proposal.submitted", "agent-a")]
    );
}

async fn migrations_run_twice_without_harm(backend: &str) {
    let db = db(backend).await;
    submit(&db.services, "agent-a").await;
    let (again, _) = storage::connect(&db.url).await.expect("reconnect");
    let again = Services::new(again, Arc::new(Policy::builtin()));
    assert_eq!(
        again
            .proposals_in(
                &Principal::person("boss", Role::Admin),
                ProposalStatus::Pending,
                10
            )
            .await
            .expect("list")
            .len(),
        1
    );
}

async fn undecided_proposals_expire_and_are_never_approved(backend: &str) {
    let db = db(backend).await;
    let now = db.clock.now();
    // Submitted more than a day ago (the built-in policy's expiry is 24 h): due a second ago.
    db.clock
        .set(now - Duration::hours(24) - Duration::seconds(1));
    let late = submit_record(&db.services, "agent-a").await;
    assert_eq!(late.expires_at, Some(now - Duration::seconds(1)));
    // Submitted 23 h ago: due in an hour.
    db.clock.set(now - Duration::hours(23));
    let timely = submit_record(&db.services, "agent-a").await;
    assert_eq!(timely.expires_at, Some(now + Duration::hours(1)));
    db.clock.set(now);

    // Deciding after the deadline fails and expires it, even before any sweep.
    match approve(&db.services, late.id, "rev").await {
        Err(ServiceError::Conflict(Conflict::AlreadyDecided(ProposalStatus::Expired))) => {}
        other => panic!("expected expired, got {other:?}"),
    }
    let p = db
        .services
        .proposal(&Principal::Operator, late.id)
        .await
        .expect("read")
        .expect("exists");
    assert_eq!(
        (p.status, p.authorization_state),
        (ProposalStatus::Expired, AuthorizationState::None)
    );
    assert!(
        db.services
            .command_for_proposal(&Principal::Operator, late.id)
            .await
            .expect("read")
            .is_none()
    );
    assert_eq!(
        actions(&db.services, "proposal", late.id).await,
        ["proposal.submitted", "proposal.expired"]
    );

    // The sweep expires exactly what is due.
    assert!(db.services.expire_due().await.expect("sweep").is_empty());
    db.clock.set(now + Duration::hours(2));
    let swept = db.services.expire_due().await.expect("sweep");
    assert_eq!(swept.iter().map(|p| p.id).collect::<Vec<_>>(), [timely.id]);
    assert_eq!(
        db.services
            .proposals_in(
                &Principal::person("boss", Role::Admin),
                ProposalStatus::Pending,
                10
            )
            .await
            .expect("list")
            .len(),
        0
    );
}

/// The built-in policy's behaviour, except that `crm.update_contact` needs two approvers.
const QUORUM_POLICY: &str = r#"
[policy]
name = "quorum"

[defaults]
required_approvals = 1
expiry = "24h"
unknown_agents = "allow"

[tools."crm.update_contact"]
category = "C"
tool_category = "write"
risk = "medium"
required_approvals = 2
"#;

async fn quorum_needs_distinct_approvers(backend: &str) {
    let policy = Policy::from_toml_str(QUORUM_POLICY)
        .unwrap_or_else(|e| panic!("the quorum policy must load: {e:?}"));
    let db = db_with(backend, policy).await;
    let p = submit_record(&db.services, "agent-a").await;
    assert_eq!(
        (p.status, p.routing.required_approvals),
        (ProposalStatus::Pending, 2)
    );
    let id = p.id;
    let decide = |by: &'static str| {
        let services = db.services.clone();
        async move {
            services
                .decide(&reviewer(by), id, ReviewVerdict::Approved, None)
                .await
        }
    };
    let first = decide("rev1").await.expect("first approval");
    let Decided::ApprovalRecorded(first) = first else {
        panic!("one of two approvals must not decide, got {first:?}")
    };
    assert_eq!(
        (first.status, first.authorization_state),
        (ProposalStatus::Pending, AuthorizationState::None)
    );
    assert!(
        db.services
            .command_for_proposal(&Principal::Operator, id)
            .await
            .expect("read")
            .is_none()
    );
    assert!(matches!(
        decide("rev1").await,
        Err(ServiceError::Conflict(Conflict::AlreadyApproved))
    ));
    db.clock.advance(Duration::seconds(1));
    let second = decide("rev2").await.expect("second approval");
    let Decided::Final(second) = second else {
        panic!("the second approval must decide, got {second:?}")
    };
    assert_eq!(
        (second.status, second.authorization_state),
        (ProposalStatus::Approved, AuthorizationState::Confirmed)
    );
    assert!(
        db.services
            .command_for_proposal(&Principal::Operator, id)
            .await
            .expect("read")
            .is_some()
    );
    let approvers: Vec<String> = db
        .services
        .proposal_page(&Principal::Operator, id, Cursor::Newest)
        .await
        .expect("read")
        .expect("the page")
        .approvals
        .into_iter()
        .map(|a| a.0)
        .collect();
    assert_eq!(approvers, ["rev1", "rev2"]);
    assert_eq!(
        actions(&db.services, "proposal", id).await,
        [
            "proposal.submitted",
            "proposal.approval_recorded",
            "proposal.approved"
        ]
    );
    let third = decide("rev3").await;
    assert_eq!(
        already_decided(&third),
        Some(ProposalStatus::Approved),
        "expected already decided, got {third:?}"
    );
}

common::on_both_backends!(
    submission_is_idempotent_per_agent_and_body,
    approval_confirms_queues_and_audits_in_one_go,
    a_decided_proposal_is_never_decided_again,
    concurrent_reviewers_produce_one_decision_and_one_command,
    rejection_records_the_reason_and_queues_nothing,
    leases_are_exclusive_and_reports_need_the_current_token,
    failures_are_recorded_on_command_and_proposal,
    an_expired_lease_is_never_re_leased_silently,
    concurrent_executors_never_share_a_command,
    the_queue_lists_pending_proposals_oldest_first,
    users_and_tokens_round_trip,
    the_audit_trail_refuses_updates_and_deletes,
    migrations_run_twice_without_harm,
    undecided_proposals_expire_and_are_never_approved,
    quorum_needs_distinct_approvers,
);
