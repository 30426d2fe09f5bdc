//! The storage test suite, run against both backends: every test below runs once on a fresh
//! SQLite file and once on a fresh PostgreSQL database. A database it cannot reach is a
//! failure, never a skip.

mod common;

use std::sync::Arc;

use countersign::domain::command::{CommandSpec, CommandStatus, Outcome};
use countersign::domain::contract::canonical::request_hash_sha256;
use countersign::domain::contract::proposal::ToolProposal;
use countersign::domain::contract::vocab::AuthorizationState;
use countersign::domain::lifecycle::{ProposalStatus, ReviewVerdict};
use countersign::domain::principal::{ActorKind, Role, TokenKind};
use countersign::domain::{Policy, route_proposal};
use countersign::storage::{
    self, AuditEntry, Conflict, DynStore, NewDecision, NewLease, NewProposal, NewReport, NewToken,
    StorageError, Submitted, UserRecord,
};
use serde_json::{Value, json};
use time::{Duration, OffsetDateTime};
use uuid::Uuid;

struct Db {
    store: DynStore,
    url: String,
    _dir: Option<tempfile::TempDir>,
}

async fn db(backend: &str) -> Db {
    let (url, dir) = common::fresh_database(backend);
    let (store, _) = storage::connect(&url)
        .await
        .unwrap_or_else(|e| panic!("cannot open {backend} test database {url}: {e}"));
    Db {
        store,
        url,
        _dir: dir,
    }
}

fn new_proposal(agent: &str, body: &Value) -> NewProposal {
    let contract = ToolProposal::parse(body).expect("valid body");
    NewProposal {
        agent: agent.into(),
        status: ProposalStatus::Pending,
        authorization_state: contract.effective_authorization(),
        request_hash: request_hash_sha256(body),
        routing: route_proposal(&contract.facts(), &Policy::builtin()),
        contract,
        now: OffsetDateTime::now_utc(),
        expires_at: None,
        command: None,
    }
}

async fn submit(store: &DynStore, agent: &str) -> Uuid {
    match store
        .submit_proposal(&new_proposal(agent, &common::proposal_body(agent)))
        .await
    {
        Ok(Submitted::Created(p)) => p.id,
        other => panic!("expected a new proposal, got {other:?}"),
    }
}

async fn approve(store: &DynStore, id: Uuid, reviewer: &str) -> Result<Uuid, StorageError> {
    let p = store.proposal(id).await?.expect("exists");
    let command_id = Uuid::now_v7();
    let now = OffsetDateTime::now_utc();
    store
        .decide_proposal(&NewDecision {
            proposal_id: id,
            verdict: ReviewVerdict::Approved,
            reviewer: reviewer.into(),
            reason: None,
            required_approvals: 1,
            now,
            command: Some((
                command_id,
                CommandSpec::for_approved(
                    &p.contract,
                    &p.request_hash,
                    reviewer,
                    AuthorizationState::Confirmed,
                    now,
                ),
            )),
        })
        .await?;
    Ok(command_id)
}

fn lease(executor: &str, token: &str, expires_in: Duration) -> NewLease {
    let now = OffsetDateTime::now_utc();
    NewLease {
        executor: executor.into(),
        lease_token_hash: countersign::auth::token::hash(token),
        now,
        expires_at: now + expires_in,
    }
}

fn report(command_id: Uuid, token: &str, outcome: Outcome) -> NewReport {
    report_by("exec", command_id, token, outcome)
}

fn report_by(executor: &str, command_id: Uuid, token: &str, outcome: Outcome) -> NewReport {
    NewReport {
        command_id,
        executor: executor.into(),
        lease_token_hash: countersign::auth::token::hash(token),
        outcome,
        report: json!({"ok": outcome == Outcome::Succeeded}),
        now: OffsetDateTime::now_utc(),
    }
}

async fn actions(store: &DynStore, subject_type: &str, id: Uuid) -> Vec<String> {
    store
        .audit_for_subject(subject_type, &id.to_string())
        .await
        .expect("audit")
        .into_iter()
        .map(|a| a.action)
        .collect()
}

async fn submission_is_idempotent_per_agent_and_body(backend: &str) {
    let db = db(backend).await;
    let body = common::proposal_body("agent-a");
    let first = db
        .store
        .submit_proposal(&new_proposal("agent-a", &body))
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
        .store
        .submit_proposal(&new_proposal("agent-a", &retry))
        .await
    {
        Ok(Submitted::Replayed(p)) => assert_eq!(p.id, original.id),
        other => panic!("expected a replay, got {other:?}"),
    }

    // The same key with a different body is refused.
    let mut changed = body.clone();
    changed["parameters"]["email"] = json!("other@example.com");
    match db
        .store
        .submit_proposal(&new_proposal("agent-a", &changed))
        .await
    {
        Err(StorageError::Conflict(Conflict::IdempotencyKeyReused)) => {}
        other => panic!("expected idempotency_key_reused, got {other:?}"),
    }

    // The same proposal id under another key is a conflict, and nothing was written twice.
    let mut same_id = common::proposal_body("agent-a");
    same_id["proposal_id"] = body["proposal_id"].clone();
    match db
        .store
        .submit_proposal(&new_proposal("agent-a", &same_id))
        .await
    {
        Err(StorageError::Conflict(Conflict::ProposalIdTaken)) => {}
        other => panic!("expected proposal id conflict, got {other:?}"),
    }

    // Keys are scoped per agent: another agent may use the same key.
    let mut other_agent = common::proposal_body("agent-b");
    other_agent["idempotency_key"] = body["idempotency_key"].clone();
    assert!(matches!(
        db.store
            .submit_proposal(&new_proposal("agent-b", &other_agent))
            .await,
        Ok(Submitted::Created(_))
    ));
    assert_eq!(
        actions(&db.store, "proposal", original.id).await,
        ["proposal.submitted"]
    );
}

async fn approval_confirms_queues_and_audits_in_one_go(backend: &str) {
    let db = db(backend).await;
    let id = submit(&db.store, "agent-a").await;
    let command_id = approve(&db.store, id, "rev").await.expect("approve");
    let p = db.store.proposal(id).await.expect("read").expect("exists");
    assert_eq!(p.status, ProposalStatus::Approved);
    assert_eq!(p.authorization_state, AuthorizationState::Confirmed);
    let review = p.review.expect("review recorded");
    assert_eq!(
        (review.verdict, review.decided_by.as_str()),
        (ReviewVerdict::Approved, "rev")
    );
    let command = db
        .store
        .command_for_proposal(id)
        .await
        .expect("read")
        .expect("queued");
    assert_eq!(
        (command.id, command.status),
        (command_id, CommandStatus::Queued)
    );
    assert_eq!(command.spec.parameters["email"], "new@example.com");
    assert_eq!(command.spec.request_hash_sha256, p.request_hash);
    assert_eq!(
        actions(&db.store, "proposal", id).await,
        ["proposal.submitted", "proposal.approved"]
    );
    assert_eq!(
        actions(&db.store, "command", command_id).await,
        ["command.queued"]
    );
    let audit = db
        .store
        .audit_for_subject("proposal", &id.to_string())
        .await
        .expect("audit");
    assert_eq!(audit[1].before_status.as_deref(), Some("pending"));
    assert_eq!(audit[1].after_status.as_deref(), Some("approved"));
    assert_eq!(audit[1].actor, "rev");
}

async fn a_decided_proposal_is_never_decided_again(backend: &str) {
    let db = db(backend).await;
    let id = submit(&db.store, "agent-a").await;
    approve(&db.store, id, "rev").await.expect("first decision");
    match approve(&db.store, id, "rev2").await {
        Err(StorageError::Conflict(Conflict::AlreadyDecided(ProposalStatus::Approved))) => {}
        other => panic!("expected already decided, got {other:?}"),
    }
    let reject = db
        .store
        .decide_proposal(&NewDecision {
            proposal_id: id,
            verdict: ReviewVerdict::Rejected,
            reviewer: "rev2".into(),
            reason: Some("no".into()),
            required_approvals: 1,
            now: OffsetDateTime::now_utc(),
            command: None,
        })
        .await;
    assert!(matches!(
        reject,
        Err(StorageError::Conflict(Conflict::AlreadyDecided(_)))
    ));
    let p = db.store.proposal(id).await.expect("read").expect("exists");
    assert_eq!(p.review.expect("review").decided_by, "rev");
    assert_eq!(
        actions(&db.store, "proposal", id).await,
        ["proposal.submitted", "proposal.approved"]
    );
}

async fn concurrent_reviewers_produce_one_decision_and_one_command(backend: &str) {
    let db = db(backend).await;
    let id = submit(&db.store, "agent-a").await;
    let mut tasks = Vec::new();
    for i in 0..8 {
        let store = Arc::clone(&db.store);
        tasks.push(tokio::spawn(async move {
            approve(&store, id, &format!("rev{i}")).await
        }));
    }
    let mut won = 0;
    for t in tasks {
        match t.await.expect("task") {
            Ok(_) => won += 1,
            Err(StorageError::Conflict(Conflict::AlreadyDecided(_))) => {}
            Err(e) => panic!("unexpected error {e}"),
        }
    }
    assert_eq!(won, 1);
    let approvals = actions(&db.store, "proposal", id)
        .await
        .iter()
        .filter(|a| *a == "proposal.approved")
        .count();
    assert_eq!(approvals, 1);
    assert!(
        db.store
            .command_for_proposal(id)
            .await
            .expect("read")
            .is_some()
    );
}

async fn rejection_records_the_reason_and_queues_nothing(backend: &str) {
    let db = db(backend).await;
    let id = submit(&db.store, "agent-a").await;
    let p = db
        .store
        .decide_proposal(&NewDecision {
            proposal_id: id,
            verdict: ReviewVerdict::Rejected,
            reviewer: "rev".into(),
            reason: Some("wrong customer".into()),
            required_approvals: 1,
            now: OffsetDateTime::now_utc(),
            command: None,
        })
        .await
        .expect("reject");
    assert_eq!(p.status, ProposalStatus::Rejected);
    assert_eq!(p.authorization_state, AuthorizationState::None);
    assert_eq!(
        p.review.expect("review").reason.as_deref(),
        Some("wrong customer")
    );
    assert!(
        db.store
            .command_for_proposal(id)
            .await
            .expect("read")
            .is_none()
    );
    assert!(
        db.store
            .lease_command(&lease("exec", "t", Duration::minutes(1)))
            .await
            .expect("lease")
            .is_none()
    );
}

async fn leases_are_exclusive_and_reports_need_the_current_token(backend: &str) {
    let db = db(backend).await;
    assert!(
        db.store
            .lease_command(&lease("exec", "t0", Duration::minutes(1)))
            .await
            .expect("lease")
            .is_none()
    );
    let id = submit(&db.store, "agent-a").await;
    let command_id = approve(&db.store, id, "rev").await.expect("approve");

    let leased = db
        .store
        .lease_command(&lease("exec", "t1", Duration::minutes(1)))
        .await
        .expect("lease");
    let leased = leased.expect("a command");
    assert_eq!(
        (leased.id, leased.status, leased.attempts),
        (command_id, CommandStatus::Leased, 1)
    );
    assert_eq!(leased.leased_by.as_deref(), Some("exec"));
    // Held: nobody else gets it.
    assert!(
        db.store
            .lease_command(&lease("exec2", "t2", Duration::minutes(1)))
            .await
            .expect("lease")
            .is_none()
    );

    match db
        .store
        .report_command(&report(command_id, "wrong", Outcome::Succeeded))
        .await
    {
        Err(StorageError::Conflict(Conflict::LeaseTokenMismatch)) => {}
        other => panic!("expected lease mismatch, got {other:?}"),
    }
    // The right token from another executor is refused too: the lease is "exec"'s.
    match db
        .store
        .report_command(&report_by("intruder", command_id, "t1", Outcome::Succeeded))
        .await
    {
        Err(StorageError::Conflict(Conflict::LeaseTokenMismatch)) => {}
        other => panic!("expected lease mismatch, got {other:?}"),
    }
    let done = db
        .store
        .report_command(&report(command_id, "t1", Outcome::Succeeded))
        .await
        .expect("report");
    assert_eq!(done.status, CommandStatus::Succeeded);
    assert_eq!(done.result, Some(json!({"ok": true})));
    let p = db.store.proposal(id).await.expect("read").expect("exists");
    assert_eq!(p.status, ProposalStatus::Succeeded);
    match db
        .store
        .report_command(&report(command_id, "t1", Outcome::Failed))
        .await
    {
        Err(StorageError::Conflict(Conflict::CommandNotLeased(CommandStatus::Succeeded))) => {}
        other => panic!("expected not leased, got {other:?}"),
    }
    match db
        .store
        .report_command(&report(Uuid::now_v7(), "t1", Outcome::Failed))
        .await
    {
        Err(StorageError::NotFound) => {}
        other => panic!("expected not found, got {other:?}"),
    }
    assert_eq!(
        actions(&db.store, "command", command_id).await,
        ["command.queued", "command.leased", "command.succeeded"]
    );
    assert_eq!(
        actions(&db.store, "proposal", id).await,
        [
            "proposal.submitted",
            "proposal.approved",
            "proposal.succeeded"
        ]
    );
}

async fn failures_are_recorded_on_command_and_proposal(backend: &str) {
    let db = db(backend).await;
    let id = submit(&db.store, "agent-a").await;
    let command_id = approve(&db.store, id, "rev").await.expect("approve");
    db.store
        .lease_command(&lease("exec", "t", Duration::minutes(1)))
        .await
        .expect("lease")
        .expect("command");
    let failed = db
        .store
        .report_command(&report(command_id, "t", Outcome::Failed))
        .await
        .expect("report");
    assert_eq!(failed.status, CommandStatus::Failed);
    assert_eq!(failed.error, Some(json!({"ok": false})));
    assert_eq!(
        db.store
            .proposal(id)
            .await
            .expect("read")
            .expect("exists")
            .status,
        ProposalStatus::Failed
    );
}

async fn an_expired_lease_is_taken_over_and_fences_the_old_holder(backend: &str) {
    let db = db(backend).await;
    let id = submit(&db.store, "agent-a").await;
    let command_id = approve(&db.store, id, "rev").await.expect("approve");
    let first = db
        .store
        .lease_command(&lease("slow", "old", -Duration::seconds(1)))
        .await
        .expect("lease");
    assert_eq!(first.expect("command").attempts, 1);
    let second = db
        .store
        .lease_command(&lease("fast", "new", Duration::minutes(1)))
        .await
        .expect("lease");
    let second = second.expect("expired lease is re-leased");
    assert_eq!((second.id, second.attempts), (command_id, 2));
    match db
        .store
        .report_command(&report_by("slow", command_id, "old", Outcome::Succeeded))
        .await
    {
        Err(StorageError::Conflict(Conflict::LeaseTokenMismatch)) => {}
        other => panic!("the old holder must be fenced off, got {other:?}"),
    }
    db.store
        .report_command(&report_by("fast", command_id, "new", Outcome::Succeeded))
        .await
        .expect("current holder reports");
    let audit = db
        .store
        .audit_for_subject("command", &command_id.to_string())
        .await
        .expect("audit");
    assert_eq!(
        audit.last().map(|a| a.details["late"].clone()),
        Some(json!(false))
    );
}

async fn concurrent_executors_never_share_a_command(backend: &str) {
    let db = db(backend).await;
    for _ in 0..6 {
        let id = submit(&db.store, "agent-a").await;
        approve(&db.store, id, "rev").await.expect("approve");
    }
    let mut tasks = Vec::new();
    for i in 0..12 {
        let store = Arc::clone(&db.store);
        tasks.push(tokio::spawn(async move {
            store
                .lease_command(&lease(
                    &format!("exec{i}"),
                    &format!("tok{i}"),
                    Duration::minutes(1),
                ))
                .await
        }));
    }
    let mut leased = Vec::new();
    for t in tasks {
        if let Some(c) = t.await.expect("task").expect("lease") {
            leased.push(c.id);
        }
    }
    leased.sort();
    let before = leased.len();
    leased.dedup();
    assert_eq!((before, leased.len()), (6, 6));
}

async fn the_queue_lists_pending_proposals_oldest_first(backend: &str) {
    let db = db(backend).await;
    let a = submit(&db.store, "agent-a").await;
    let b = submit(&db.store, "agent-a").await;
    let c = submit(&db.store, "agent-a").await;
    approve(&db.store, b, "rev").await.expect("approve");
    let pending: Vec<Uuid> = db
        .store
        .proposals_by_status(ProposalStatus::Pending, 10)
        .await
        .expect("list")
        .into_iter()
        .map(|p| p.id)
        .collect();
    assert_eq!(pending, [a, c]);
}

async fn users_and_tokens_round_trip(backend: &str) {
    let db = db(backend).await;
    assert_eq!(db.store.count_users().await.expect("count"), 0);
    let audit = AuditEntry {
        actor_kind: ActorKind::System,
        actor: "test".into(),
        action: "user.created",
        subject_type: "user",
        subject_id: "u".into(),
        before_status: None,
        after_status: None,
        details: json!({}),
    };
    let user = UserRecord {
        id: Uuid::now_v7(),
        username: "rev".into(),
        password_hash: "$argon2id$fake".into(),
        role: Role::Reviewer,
        disabled: false,
    };
    db.store.insert_user(&user, &audit).await.expect("insert");
    let again = UserRecord {
        id: Uuid::now_v7(),
        ..user.clone()
    };
    assert!(matches!(
        db.store.insert_user(&again, &audit).await,
        Err(StorageError::Conflict(Conflict::UsernameTaken))
    ));
    let read = db
        .store
        .user_by_username("rev")
        .await
        .expect("read")
        .expect("exists");
    assert_eq!((read.id, read.role), (user.id, Role::Reviewer));
    assert!(
        db.store
            .user_by_username("nobody")
            .await
            .expect("read")
            .is_none()
    );

    let token = NewToken {
        id: Uuid::now_v7(),
        kind: TokenKind::Executor,
        name: "n8n".into(),
        token_hash: "h1".into(),
    };
    db.store.insert_token(&token, &audit).await.expect("token");
    let found = db
        .store
        .token_by_hash("h1")
        .await
        .expect("read")
        .expect("exists");
    assert_eq!(
        (found.kind, found.name.as_str(), found.revoked),
        (TokenKind::Executor, "n8n", false)
    );
    assert!(db.store.token_by_hash("h2").await.expect("read").is_none());
}

async fn the_audit_trail_refuses_updates_and_deletes(backend: &str) {
    let db = db(backend).await;
    submit(&db.store, "agent-a").await;
    let update = "update audit_events set actor = 'mallory'";
    let delete = "delete from audit_events";
    match backend {
        "sqlite" => {
            let mut conn = <sqlx::SqliteConnection as sqlx::Connection>::connect(&db.url)
                .await
                .expect("connect");
            assert!(sqlx::query(update).execute(&mut conn).await.is_err());
            assert!(sqlx::query(delete).execute(&mut conn).await.is_err());
        }
        _ => {
            let mut conn = <sqlx::PgConnection as sqlx::Connection>::connect(&db.url)
                .await
                .expect("connect");
            assert!(sqlx::query(update).execute(&mut conn).await.is_err());
            assert!(sqlx::query(delete).execute(&mut conn).await.is_err());
        }
    }
}

async fn migrations_run_twice_without_harm(backend: &str) {
    let db = db(backend).await;
    submit(&db.store, "agent-a").await;
    let (again, _) = storage::connect(&db.url).await.expect("reconnect");
    assert_eq!(
        again
            .proposals_by_status(ProposalStatus::Pending, 10)
            .await
            .expect("list")
            .len(),
        1
    );
}

async fn undecided_proposals_expire_and_are_never_approved(backend: &str) {
    let db = db(backend).await;
    let now = OffsetDateTime::now_utc();
    let mut late = new_proposal("agent-a", &common::proposal_body("agent-a"));
    late.expires_at = Some(now - Duration::seconds(1));
    let Submitted::Created(late) = db.store.submit_proposal(&late).await.expect("submit") else {
        panic!("created")
    };
    let mut timely = new_proposal("agent-a", &common::proposal_body("agent-a"));
    timely.expires_at = Some(now + Duration::hours(1));
    let Submitted::Created(timely) = db.store.submit_proposal(&timely).await.expect("submit")
    else {
        panic!("created")
    };

    // Deciding after the deadline fails and expires it, even before any sweep.
    match approve(&db.store, late.id, "rev").await {
        Err(StorageError::Conflict(Conflict::AlreadyDecided(ProposalStatus::Expired))) => {}
        other => panic!("expected expired, got {other:?}"),
    }
    let p = db
        .store
        .proposal(late.id)
        .await
        .expect("read")
        .expect("exists");
    assert_eq!(
        (p.status, p.authorization_state),
        (ProposalStatus::Expired, AuthorizationState::None)
    );
    assert!(
        db.store
            .command_for_proposal(late.id)
            .await
            .expect("read")
            .is_none()
    );
    assert_eq!(
        actions(&db.store, "proposal", late.id).await,
        ["proposal.submitted", "proposal.expired"]
    );

    // The sweep expires exactly what is due.
    assert!(db.store.expire_due(now).await.expect("sweep").is_empty());
    let swept = db
        .store
        .expire_due(now + Duration::hours(2))
        .await
        .expect("sweep");
    assert_eq!(swept.iter().map(|p| p.id).collect::<Vec<_>>(), [timely.id]);
    assert_eq!(
        db.store
            .proposals_by_status(ProposalStatus::Pending, 10)
            .await
            .expect("list")
            .len(),
        0
    );
}

async fn quorum_needs_distinct_approvers(backend: &str) {
    let db = db(backend).await;
    let id = submit(&db.store, "agent-a").await;
    let decide = |reviewer: &'static str| {
        let store = Arc::clone(&db.store);
        async move {
            let p = store.proposal(id).await?.expect("exists");
            let now = OffsetDateTime::now_utc();
            let spec = CommandSpec::for_approved(
                &p.contract,
                &p.request_hash,
                reviewer,
                AuthorizationState::Confirmed,
                now,
            );
            store
                .decide_proposal(&NewDecision {
                    proposal_id: id,
                    verdict: ReviewVerdict::Approved,
                    reviewer: reviewer.into(),
                    reason: None,
                    required_approvals: 2,
                    now,
                    command: Some((Uuid::now_v7(), spec)),
                })
                .await
        }
    };
    let first = decide("rev1").await.expect("first approval");
    assert_eq!(
        (first.status, first.authorization_state),
        (ProposalStatus::Pending, AuthorizationState::None)
    );
    assert!(
        db.store
            .command_for_proposal(id)
            .await
            .expect("read")
            .is_none()
    );
    assert!(matches!(
        decide("rev1").await,
        Err(StorageError::Conflict(Conflict::AlreadyApproved))
    ));
    let second = decide("rev2").await.expect("second approval");
    assert_eq!(
        (second.status, second.authorization_state),
        (ProposalStatus::Approved, AuthorizationState::Confirmed)
    );
    assert!(
        db.store
            .command_for_proposal(id)
            .await
            .expect("read")
            .is_some()
    );
    let approvers: Vec<String> = db
        .store
        .approvals(id)
        .await
        .expect("read")
        .into_iter()
        .map(|a| a.0)
        .collect();
    assert_eq!(approvers, ["rev1", "rev2"]);
    assert_eq!(
        actions(&db.store, "proposal", id).await,
        [
            "proposal.submitted",
            "proposal.approval_recorded",
            "proposal.approved"
        ]
    );
    assert!(matches!(
        decide("rev3").await,
        Err(StorageError::Conflict(Conflict::AlreadyDecided(
            ProposalStatus::Approved
        )))
    ));
}

macro_rules! on_both_backends {
    ($($name:ident),+ $(,)?) => {
        mod sqlite {
            $(#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $name() { super::$name("sqlite").await })+
        }
        mod postgres {
            $(#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $name() { super::$name("postgres").await })+
        }
    };
}

on_both_backends!(
    submission_is_idempotent_per_agent_and_body,
    approval_confirms_queues_and_audits_in_one_go,
    a_decided_proposal_is_never_decided_again,
    concurrent_reviewers_produce_one_decision_and_one_command,
    rejection_records_the_reason_and_queues_nothing,
    leases_are_exclusive_and_reports_need_the_current_token,
    failures_are_recorded_on_command_and_proposal,
    an_expired_lease_is_taken_over_and_fences_the_old_holder,
    concurrent_executors_never_share_a_command,
    the_queue_lists_pending_proposals_oldest_first,
    users_and_tokens_round_trip,
    the_audit_trail_refuses_updates_and_deletes,
    migrations_run_twice_without_harm,
    undecided_proposals_expire_and_are_never_approved,
    quorum_needs_distinct_approvers,
);
