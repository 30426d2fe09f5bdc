//! The one writer every change passes, on both backends: changes handed over at once commit
//! in groups; a failed change leaves nothing behind and spares the rest of its group, whether
//! the group ran it under a savepoint or (every change in it repeatable) straight, rolled back
//! and ran the others again.

mod common;

use countersign::domain::principal::Principal;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use countersign::audit::Actor;
use countersign::domain::principal::TokenKind;
use countersign::service::{Conflict, ServiceError, Services, Submitted};
use countersign::storage::{self, StorageError, Store, accounts};
use time::OffsetDateTime;
use uuid::Uuid;

/// Many changes written at once (the writer commits them in groups, each under its own
/// savepoint), with events-only records among them (no savepoint): every third change fails
/// after writing a row and recording an event, and leaves neither behind; the other changes and
/// every record commit, and the chain verifies.
async fn a_failed_change_leaves_nothing_and_spares_the_rest(backend: &str) {
    use countersign::audit::{AuditEvent, PolicyLoaded};
    let (services, _, _dir) = common::fresh_services(backend).await;
    let store = services.store().clone();
    let now = OffsetDateTime::now_utc();
    let mut writes = tokio::task::JoinSet::new();
    for i in 0..300_usize {
        if i % 5 == 0 {
            let store = store.clone();
            writes.spawn(async move {
                let event = AuditEvent::PolicyLoaded(PolicyLoaded {
                    policy_version: format!("record-{i}"),
                    source: "file",
                    tool_rules: i,
                });
                let recorded = store
                    .record(vec![(now, Actor::system("test"), event)])
                    .await;
                // Reported as a change that cannot fail (1 is never a multiple of 3).
                (1, recorded)
            });
        }
        let store = store.clone();
        writes.spawn(async move {
            let written = store
                .write(move |tx| {
                    Box::pin(async move {
                        let new = agent_token(format!("batch-{i}"), format!("hash-{i}"));
                        accounts::insert_token(tx.conn(), &new, now).await?;
                        let event = AuditEvent::PolicyLoaded(PolicyLoaded {
                            policy_version: format!("v{i}"),
                            source: "file",
                            tool_rules: i,
                        });
                        tx.record(now, &Actor::system("test"), event);
                        if i % 3 == 0 {
                            return Err(StorageError::Batch("planned".into()));
                        }
                        Ok(())
                    })
                })
                .await;
            (i, written)
        });
    }
    while let Some(done) = writes.join_next().await {
        let (i, written) = done.expect("task");
        match written {
            Ok(()) => assert!(i % 3 != 0, "change {i} should have failed"),
            Err(e) => {
                assert_eq!(i % 3, 0, "change {i} failed: {e}");
                assert!(e.to_string().contains("planned"), "{e}");
            }
        }
    }
    let mut read = store.read().await.expect("read");
    for i in 0..300_usize {
        let found = accounts::token_by_hash(read.conn(), &format!("hash-{i}"))
            .await
            .expect("read");
        assert_eq!(found.is_some(), i % 3 != 0, "token of change {i}");
    }
    drop(read);
    let verified = trail_len(&services).await;
    assert_eq!(
        verified, 260,
        "one event per change that committed, and each record"
    );
}

/// A change that fails alone (a group of one, rolled back whole) leaves the writer's
/// connection ready: the next change commits on it, and neither the failure's row nor its
/// event is anywhere.
async fn a_failed_change_alone_leaves_the_writer_ready(backend: &str) {
    let (services, _, _dir) = common::fresh_services(backend).await;
    let store = services.store().clone();
    let now = OffsetDateTime::now_utc();
    for (i, fail) in [(0_usize, true), (1, false), (2, true), (3, false)] {
        let written = store
            .write(move |tx| {
                let fail = if fail { Fail::Planned } else { Fail::No };
                Box::pin(token_change(tx, "alone", i, fail, now))
            })
            .await;
        assert_eq!(written.is_err(), fail, "change {i}: {written:?}");
    }
    let mut read = store.read().await.expect("read");
    for i in 0..4 {
        let found = accounts::token_by_hash(read.conn(), &format!("alone-hash-{i}"))
            .await
            .expect("read");
        assert_eq!(found.is_some(), i % 2 == 1, "token of change {i}");
    }
    drop(read);
    let before = trail_len(&services).await;
    store
        .record(vec![(now, Actor::system("test"), token_event(9))])
        .await
        .expect("a record after the failures");
    let after = trail_len(&services).await;
    assert_eq!(after, before + 1);
}

/// An agent's token row, without scope, operator or webhook.
fn agent_token(name: String, token_hash: String) -> countersign::storage::accounts::NewToken {
    countersign::storage::accounts::NewToken {
        id: Uuid::now_v7(),
        kind: TokenKind::Agent,
        name,
        token_hash,
        tool_scope: None,
        operator: None,
        created_by: None,
        webhook_url: None,
        webhook_secret: None,
    }
}

fn token_event(i: usize) -> countersign::audit::AuditEvent {
    countersign::audit::AuditEvent::PolicyLoaded(countersign::audit::PolicyLoaded {
        policy_version: format!("alone-{i}"),
        source: "file",
        tool_rules: i,
    })
}

/// A group whose every change may run again commits without a savepoint for each; when one
/// fails, the writer rolls the group back and runs the others again without it. A change that
/// waits holds the writer while 300 repeatable changes (and 60 events-only records) are handed
/// over, so they form one group: the first two ran straight, the third failed (a failing
/// statement, which on PostgreSQL aborts the transaction), and the 299 others ran again, where
/// every third fails too (a statement or an error). Then a group that all succeeds runs each
/// change once. Every committed change's row and event are there once, no failed change's,
/// and the chain verifies.
async fn a_failure_in_a_repeatable_group_runs_the_others_again(backend: &str) {
    let (services, url, _dir) = common::fresh_services(backend).await;
    let store = services.store().clone();
    let now = OffsetDateTime::now_utc();
    let runs = Arc::new(AtomicUsize::new(0));
    let fail = |i: usize| match i % 6 {
        2 => Fail::Statement,
        5 => Fail::Planned,
        _ => Fail::No,
    };
    let (expected, writes): (Vec<_>, Vec<_>) = (0..300_usize)
        .flat_map(|i| {
            let record = (i % 5 == 0).then(|| (false, record_one(&store, i, now)));
            let change = repeatable_token(&store, i, fail(i), &runs, now);
            record.into_iter().chain([(i % 3 == 2, change)])
        })
        .unzip();
    let written = as_one_group(&store, writes).await;
    for (n, (written, fails)) in written.iter().zip(expected).enumerate() {
        assert_eq!(written.is_err(), fails, "write {n}: {written:?}");
    }
    assert_eq!(
        runs.load(Ordering::SeqCst),
        2 + 1 + 299,
        "two straight, one failed, 299 again"
    );

    let writes = (300..400_usize)
        .map(|i| repeatable_token(&store, i, Fail::No, &runs, now))
        .collect();
    assert!(as_one_group(&store, writes).await.iter().all(Result::is_ok));
    assert_eq!(
        runs.load(Ordering::SeqCst),
        302 + 100,
        "a group that succeeds runs once"
    );

    let mut read = store.read().await.expect("read");
    for i in 0..400_usize {
        let found = accounts::token_by_hash(read.conn(), &format!("again-hash-{i}"))
            .await
            .expect("read");
        assert_eq!(
            found.is_some(),
            i >= 300 || i % 3 != 2,
            "token of change {i}"
        );
    }
    drop(read);
    let tokens = common::count(&url, "select count(*) from api_tokens").await;
    assert_eq!(tokens, 200 + 100, "each committed change's row, once");
    let verified = trail_len(&services).await;
    assert_eq!(
        verified,
        200 + 60 + 100,
        "each committed change's event, once"
    );
}

/// Submissions handed over together are inserted by the writer several rows to a statement,
/// and each finds what became of its own row: in one group, 40 new proposals, a replay of the
/// first (the original answers, same seq), a new proposal reusing the second's idempotency key
/// (refused, nothing written), one reusing the third's id (refused), the same new proposal
/// twice (created once, replayed once), and a chain of three where only the middle one, which
/// names a refused one's id, is created (as one after another). Seqs follow the order they were handed over, each new
/// proposal has one `proposal.submitted` event, and the chain verifies. Then the same again in a
/// group where another change fails, so the writer rolls back what it inserted up front and runs
/// every change again on its own: the same answers.
async fn submissions_in_one_group_are_inserted_together(backend: &str) {
    let (services, url, _dir) = common::fresh_services(backend).await;
    let services = Arc::new(services);
    let store = services.store().clone();
    let runs = Arc::new(AtomicUsize::new(0));
    for (round, failing) in [(0, false), (1, true)] {
        let bodies: Vec<serde_json::Value> =
            (0..40).map(|_| common::proposal_body("agent-w")).collect();
        let mut key_reused = common::proposal_body("agent-w");
        key_reused["idempotency_key"] = bodies[1]["idempotency_key"].clone();
        let mut id_reused = common::proposal_body("agent-w");
        id_reused["proposal_id"] = bodies[2]["proposal_id"].clone();
        let twice = common::proposal_body("agent-w");
        // A chain: the first is refused (its key is that of a proposal stored before the
        // group), the second names its id (so it is created), the third names the second's
        // key (and so is refused, as one after another).
        let before_group = common::proposal_body("agent-w");
        services
            .submit(&Principal::Agent("agent-w".into()), &before_group)
            .await
            .expect("stored before the group");
        let mut chain_refused = common::proposal_body("agent-w");
        chain_refused["idempotency_key"] = before_group["idempotency_key"].clone();
        let mut chain_created = common::proposal_body("agent-w");
        chain_created["proposal_id"] = chain_refused["proposal_id"].clone();
        let mut chain_last = common::proposal_body("agent-w");
        chain_last["idempotency_key"] = chain_created["idempotency_key"].clone();
        let mut handed: Vec<serde_json::Value> = bodies.clone();
        handed.extend([
            bodies[0].clone(),
            key_reused,
            id_reused,
            twice.clone(),
            twice,
            chain_refused,
            chain_created,
            chain_last,
        ]);
        let (answers_tx, mut answers) = tokio::sync::mpsc::unbounded_channel();
        let mut writes: Vec<Write> = handed
            .iter()
            .enumerate()
            .map(|(n, body)| {
                let (services, body, answers_tx) =
                    (Arc::clone(&services), body.clone(), answers_tx.clone());
                Box::pin(async move {
                    let answer = services
                        .submit(&Principal::Agent("agent-w".into()), &body)
                        .await;
                    answers_tx.send((n, answer)).expect("answers");
                    Ok(())
                }) as Write
            })
            .collect();
        if failing {
            writes.insert(
                7,
                repeatable_token(
                    &store,
                    round,
                    Fail::Statement,
                    &runs,
                    OffsetDateTime::now_utc(),
                ),
            );
        }
        let before = runs.load(Ordering::SeqCst);
        let together_before = store.writer_stats().inserted_together();
        let written = as_one_group(&store, writes).await;
        // Staged: the 40, the first of the two identical ones, and the chain's first (its key
        // is a row's from before the group); every other names an earlier row's id or key. A
        // group that starts over inserts none together.
        assert_eq!(
            store.writer_stats().inserted_together() - together_before,
            if failing { 0 } else { 42 },
            "round {round}: rows inserted up front"
        );
        assert_eq!(
            written.iter().filter(|w| w.is_err()).count(),
            usize::from(failing)
        );
        assert_eq!(
            runs.load(Ordering::SeqCst) - before,
            usize::from(failing),
            "the failing change ran once, never again"
        );
        drop(answers_tx);
        let mut by_n = std::collections::BTreeMap::new();
        while let Some((n, answer)) = answers.recv().await {
            by_n.insert(n, answer);
        }
        let created = |n: usize| match &by_n[&n] {
            Ok(Submitted::Created(p)) => p.clone(),
            other => panic!("round {round}, submission {n}: {other:?}"),
        };
        let seqs: Vec<i64> = (0..40).map(|n| created(n).seq).collect();
        assert!(
            seqs.windows(2).all(|w| w[0] < w[1]),
            "handed-over order: {seqs:?}"
        );
        match &by_n[&40] {
            Ok(Submitted::Replayed(p)) => assert_eq!(p.seq, seqs[0], "the original answers"),
            other => panic!("replay: {other:?}"),
        }
        assert!(matches!(
            &by_n[&41],
            Err(ServiceError::Conflict(Conflict::IdempotencyKeyReused))
        ));
        assert!(matches!(
            &by_n[&42],
            Err(ServiceError::Conflict(Conflict::ProposalIdTaken))
        ));
        let first = created(43);
        match &by_n[&44] {
            Ok(Submitted::Replayed(p)) => assert_eq!(p.seq, first.seq),
            other => panic!("the same proposal twice: {other:?}"),
        }
        assert!(matches!(
            &by_n[&45],
            Err(ServiceError::Conflict(Conflict::IdempotencyKeyReused))
        ));
        created(46);
        assert!(
            matches!(
                &by_n[&47],
                Err(ServiceError::Conflict(Conflict::IdempotencyKeyReused))
            ),
            "the earlier submission keeps its key: {:?}",
            by_n[&47]
        );
        for n in (0..40).chain([43, 46]) {
            let p = created(n);
            let stored = services
                .proposal(&Principal::Operator, p.id)
                .await
                .expect("read")
                .expect("stored");
            assert_eq!(stored, p, "round {round}: the answer is the row as stored");
        }
    }
    let proposals = common::count(&url, "select count(*) from proposals").await;
    assert_eq!(proposals, 2 * 43, "each new proposal once");
    let submitted = common::count(
        &url,
        "select count(*) from audit_events where action = 'proposal.submitted'",
    )
    .await;
    assert_eq!(submitted, 2 * 43, "one event each");
    assert_eq!(trail_len(&services).await, 2 * 43);
}

/// A row the group's multi-row insert cannot take (here a trigger refuses one agent's) does
/// not sink the group: the writer starts over without inserting the rows together, each
/// submission inserts its own, and only the one at fault fails.
async fn a_row_refused_in_a_group_insert_fails_alone(backend: &str) {
    let (services, url, _dir) = common::fresh_services(backend).await;
    if backend == "postgres" {
        common::exec_sql(
            &url,
            "create function refuse_bad() returns trigger language plpgsql as \
             $$ begin raise exception 'refused by the test'; end $$",
        )
        .await;
        common::exec_sql(
            &url,
            "create trigger refuse_bad before insert on proposals for each row \
             when (new.agent = 'agent-bad') execute function refuse_bad()",
        )
        .await;
    } else {
        common::exec_sql(
            &url,
            "create trigger refuse_bad before insert on proposals when new.agent = 'agent-bad' \
             begin select raise(abort, 'refused by the test'); end",
        )
        .await;
    }
    let services = Arc::new(services);
    let store = services.store().clone();
    let agents: Vec<&str> = (0..10)
        .map(|n| if n == 4 { "agent-bad" } else { "agent-w" })
        .collect();
    let writes = agents
        .iter()
        .map(|&agent| {
            let services = Arc::clone(&services);
            Box::pin(async move {
                services
                    .submit(
                        &Principal::Agent(agent.into()),
                        &common::proposal_body(agent),
                    )
                    .await
                    .map(|_| ())
                    .map_err(|e| StorageError::Batch(e.to_string()))
            }) as Write
        })
        .collect();
    let written = as_one_group(&store, writes).await;
    for (n, (written, agent)) in written.iter().zip(&agents).enumerate() {
        assert_eq!(
            written.is_err(),
            *agent == "agent-bad",
            "submission {n}: {written:?}"
        );
    }
    let proposals = common::count(&url, "select count(*) from proposals").await;
    assert_eq!(proposals, 9);
    assert_eq!(trail_len(&services).await, 9);
}

use common::{Write, as_one_group};

/// A repeatable change that writes token `i` and its event, then fails as `fail` says; counts
/// its runs in `runs`.
fn repeatable_token(
    store: &Store,
    i: usize,
    fail: Fail,
    runs: &Arc<AtomicUsize>,
    now: OffsetDateTime,
) -> Write {
    let (store, runs) = (store.clone(), Arc::clone(runs));
    Box::pin(async move {
        store
            .write_repeatable(move |tx| {
                runs.fetch_add(1, Ordering::SeqCst);
                Box::pin(token_change(tx, "again", i, fail, now))
            })
            .await
    })
}

/// Whether and how a test change fails, after writing its row and recording its event.
#[derive(Clone, Copy)]
enum Fail {
    No,
    /// It returns an error.
    Planned,
    /// A statement fails: it inserts its token again (on PostgreSQL this aborts the whole
    /// transaction).
    Statement,
}

/// A change that writes token `{prefix}-{i}` (hash `{prefix}-hash-{i}`) and its event, then
/// fails as `fail` says.
async fn token_change(
    tx: &mut storage::Tx,
    prefix: &'static str,
    i: usize,
    fail: Fail,
    now: OffsetDateTime,
) -> Result<(), StorageError> {
    let new = agent_token(format!("{prefix}-{i}"), format!("{prefix}-hash-{i}"));
    accounts::insert_token(tx.conn(), &new, now).await?;
    tx.record(now, &Actor::system("test"), token_event(i));
    match fail {
        Fail::No => Ok(()),
        Fail::Planned => Err(StorageError::Batch("planned".into())),
        Fail::Statement => {
            let again = agent_token(format!("{prefix}-{i}-again"), new.token_hash);
            accounts::insert_token(tx.conn(), &again, now).await
        }
    }
}

/// The number of events in the trail, once it verifies.
async fn trail_len(services: &Services) -> i64 {
    services
        .verify_trail(&Principal::Operator, None)
        .await
        .expect("chain verifies")
        .count
}

/// An events-only record.
fn record_one(store: &Store, i: usize, now: OffsetDateTime) -> Write {
    let store = store.clone();
    Box::pin(async move {
        store
            .record(vec![(now, Actor::system("test"), token_event(i))])
            .await
    })
}

/// The planning mode the writer's PostgreSQL transaction is in.
async fn plan_mode(tx: &mut storage::Tx) -> Result<String, StorageError> {
    let storage::Conn::Postgres(c) = tx.conn() else {
        return Err(StorageError::Batch("PostgreSQL only".into()));
    };
    Ok(
        sqlx::query_scalar("select current_setting('plan_cache_mode')")
            .fetch_one(c)
            .await?,
    )
}

/// A lease, handed over as the executor service hands it (its claim made up front), that
/// answers the planning mode its transaction is in; or, if it `fails`, fails after reading it
/// (its group then starts over without it), and answers `failed`.
fn lease_reading_plan_mode(
    store: &Store,
    modes: &Arc<std::sync::Mutex<Vec<String>>>,
    fails: bool,
) -> Write {
    let (store, modes) = (store.clone(), Arc::clone(modes));
    let now = OffsetDateTime::now_utc();
    let ask = Arc::new(storage::commands::LeaseAsk {
        executor: "plans".into(),
        scope: None,
        wanted: None,
        lease_token_hash: Uuid::new_v4().simple().to_string(),
        now,
        expires_at: now + time::Duration::minutes(5),
    });
    Box::pin(async move {
        let upfront = storage::Upfront::Claim(Arc::clone(&ask));
        let mode = store
            .write_staged(upfront, move |tx| {
                let ask = Arc::clone(&ask);
                Box::pin(async move {
                    // Nothing is queued: the lease finds nothing, as the writer's staging did.
                    let claimed = match tx.staged_claim(&ask) {
                        Some(staged) => staged,
                        None => storage::commands::claim_next(tx.conn(), &ask).await?,
                    };
                    assert!(claimed.is_none(), "nothing was queued");
                    let mode = plan_mode(tx).await?;
                    if fails {
                        return Err(StorageError::Batch("this lease fails".into()));
                    }
                    Ok(mode)
                })
            })
            .await;
        let mode = match mode {
            Err(StorageError::Batch(why)) if fails && why == "this lease fails" => "failed".into(),
            other => other?,
        };
        modes.lock().expect("modes").push(mode);
        Ok(())
    })
}

/// A plain change (no statement made up front) that answers the planning mode.
fn plain_reading_plan_mode(store: &Store, modes: &Arc<std::sync::Mutex<Vec<String>>>) -> Write {
    let (store, modes) = (store.clone(), Arc::clone(modes));
    Box::pin(async move {
        let mode = store
            .write(|tx| Box::pin(async move { plan_mode(tx).await }))
            .await?;
        modes.lock().expect("modes").push(format!("plain {mode}"));
        Ok(())
    })
}

/// On PostgreSQL a group whose every change starts with a statement the writer may make up
/// front (leases here) plans generically for its transaction, where PostgreSQL's plan cache
/// re-planned such statements at every group; a group holding any other change keeps
/// PostgreSQL's own choice, since a generic plan for a range (the expiry sweep's) can read a
/// whole table, and so does a group that starts over. Both settings end with their
/// transactions.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_plans_generically_only_groups_of_staged_changes() {
    let (services, _url, _dir) = common::fresh_services("postgres").await;
    let store = services.store().clone();
    let modes = Arc::new(std::sync::Mutex::new(Vec::new()));
    let staged = (0..3)
        .map(|_| lease_reading_plan_mode(&store, &modes, false))
        .collect();
    for written in as_one_group(&store, staged).await {
        written.expect("a lease");
    }
    let alone = lease_reading_plan_mode(&store, &modes, false).await;
    alone.expect("a lease alone");
    assert_eq!(
        *modes.lock().expect("modes"),
        vec!["force_generic_plan"; 4],
        "leases, in a group of three and alone"
    );
    modes.lock().expect("modes").clear();
    let mixed = vec![
        lease_reading_plan_mode(&store, &modes, false),
        plain_reading_plan_mode(&store, &modes),
        lease_reading_plan_mode(&store, &modes, false),
    ];
    for written in as_one_group(&store, mixed).await {
        written.expect("a change");
    }
    plain_reading_plan_mode(&store, &modes)
        .await
        .expect("a plain change alone");
    let mut seen = std::mem::take(&mut *modes.lock().expect("modes"));
    seen.sort();
    assert_eq!(seen, ["auto", "auto", "plain auto", "plain auto"]);
    // A group of leases that starts over (one failed) runs the others again as PostgreSQL
    // chooses.
    let starting_over = vec![
        lease_reading_plan_mode(&store, &modes, false),
        lease_reading_plan_mode(&store, &modes, true),
        lease_reading_plan_mode(&store, &modes, false),
    ];
    for written in as_one_group(&store, starting_over).await {
        written.expect("a lease, or the one that failed");
    }
    let mut seen = std::mem::take(&mut *modes.lock().expect("modes"));
    seen.sort();
    assert_eq!(seen, ["auto", "auto", "failed"]);
}

/// Records that only append events (pre-tool-checks', above all) commit together; on SQLite
/// the writer appends them on its own thread (the connection's handle taken once, not a
/// hand-off to sqlx's thread per statement), on PostgreSQL as any group. One refused by the
/// database (a trigger here) fails with its group and moves nothing: the next record links
/// after the head as it was, and the chain verifies with every row in the form the rest of
/// the trail is read in (verification also checks each facet column against its details: the
/// pre-tool-checks among the records fill all five).
async fn events_alone_commit_together_and_a_refused_one_moves_nothing(backend: &str) {
    use countersign::audit::{AuditEvent, PolicyLoaded};
    let (services, url, _dir) = common::fresh_services(backend).await;
    let store = services.store().clone();
    let loaded = |i: usize| {
        AuditEvent::PolicyLoaded(PolicyLoaded {
            policy_version: format!("v{i}"),
            source: "file",
            tool_rules: i,
        })
    };
    let start = services
        .verify_trail(&Principal::Operator, None)
        .await
        .expect("verifies")
        .count;
    let inline_before = store.writer_stats().appended_on_thread();
    let mut records = tokio::task::JoinSet::new();
    for i in 0..64 {
        let (store, event) = (store.clone(), loaded(i));
        records.spawn(async move {
            let now = OffsetDateTime::now_utc();
            store
                .record(vec![(now, Actor::agent("agent-a"), event)])
                .await
        });
        // Pre-tool-checks among them: events with every facet column set.
        let services = services.clone();
        records.spawn(async move {
            let checked = services
                .pre_tool_check(&Principal::Agent("agent-a".into()), &common::check_body())
                .await;
            checked
                .map(|_| ())
                .map_err(|e| StorageError::Batch(e.to_string()))
        });
    }
    while let Some(recorded) = records.join_next().await {
        recorded.expect("task").expect("recorded");
    }
    let inline = store.writer_stats().appended_on_thread() - inline_before;
    assert_eq!(inline, if backend == "sqlite" { 128 } else { 0 });
    common::exec_sql(
        &url,
        if backend == "sqlite" {
            "create trigger refuse_me before insert on audit_events \
             when new.actor = 'refuse-me' begin select raise(abort, 'refused'); end"
        } else {
            "create function refuse_me() returns trigger language plpgsql as \
             'begin if new.actor = ''refuse-me'' then raise exception ''refused''; end if; \
             return new; end'"
        },
    )
    .await;
    if backend != "sqlite" {
        common::exec_sql(
            &url,
            "create trigger refuse_me before insert on audit_events \
             for each row execute function refuse_me()",
        )
        .await;
    }
    let now = OffsetDateTime::now_utc();
    let refused = store
        .record(vec![(now, Actor::agent("refuse-me"), loaded(64))])
        .await;
    assert!(refused.is_err(), "{refused:?}");
    store
        .record(vec![(now, Actor::agent("agent-a"), loaded(65))])
        .await
        .expect("the next record, after the head as it was");
    let ok = services
        .verify_trail(&Principal::Operator, None)
        .await
        .expect("the chain verifies");
    let mut read = store.read().await.expect("read");
    let (head, _) = storage::audit::head(read.conn()).await.expect("head");
    assert_eq!((ok.count, head.seq), (start + 129, start + 129));
}

common::on_both_backends!(
    events_alone_commit_together_and_a_refused_one_moves_nothing,
    a_failed_change_leaves_nothing_and_spares_the_rest,
    a_failed_change_alone_leaves_the_writer_ready,
    a_failure_in_a_repeatable_group_runs_the_others_again,
    submissions_in_one_group_are_inserted_together,
    a_row_refused_in_a_group_insert_fails_alone,
);
