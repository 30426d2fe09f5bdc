//! Agents' point reads, on both backends: what [`Store::point_read`] answers (on SQLite from
//! connections of its own, stepped on the caller's thread) is exactly what the pooled read
//! answers, at every stage of a proposal's life, and a read still gets an answer when every
//! such connection is lent.

mod common;

use common::LeaseAs;

use countersign::audit::Actor;
use countersign::domain::command::retry::SideEffect;
use countersign::domain::command::{CommandStatus, Outcome};
use countersign::domain::lifecycle::ReviewVerdict;
use countersign::domain::principal::Role;
use countersign::service::{Report, Reviewer, Services, Submitted};
use countersign::storage::{PointRead, Store, commands, proposals};
use serde_json::json;
use uuid::Uuid;

/// Asserts that the point read of proposal `id` and of its command equals the pooled read, and
/// that on SQLite it was read directly.
async fn same_as_pooled(store: &Store, id: Uuid) {
    let mut read = store.read().await.expect("pooled read");
    let proposal = proposals::by_id(read.conn(), id).await.expect("proposal");
    let command = commands::for_proposal(read.conn(), id)
        .await
        .expect("command");
    let mut point = store.point_read().await.expect("point read");
    if store.backend() == countersign::storage::Backend::Sqlite {
        assert!(
            matches!(point, PointRead::Direct(_)),
            "SQLite reads directly"
        );
    }
    assert_eq!(point.proposal(id).await.expect("point proposal"), proposal);
    assert_eq!(
        point.command_for_proposal(id).await.expect("point command"),
        command
    );
}

async fn submit(services: &Services, body: &serde_json::Value) -> Uuid {
    match services.submit("agent-a", body).await {
        Ok(Submitted::Created(p)) => p.id,
        other => panic!("expected a new proposal, got {other:?}"),
    }
}

/// Every column a point read decodes, filled in turn: a pending proposal (no command), one
/// approved (its command queued), leased, failed with an error body and an expiry, then
/// erased; and one rejected with a reason.
async fn a_point_read_answers_what_the_pool_answers(backend: &str) {
    let (services, _, _dir) = common::fresh_services(backend).await;
    let store = services.store().clone();
    let reviewer = Reviewer {
        username: "rev".into(),
        role: Role::Reviewer,
    };
    let id = submit(&services, &common::proposal_body("agent-a")).await;
    same_as_pooled(&store, id).await;
    services
        .decide(&reviewer, id, ReviewVerdict::Approved, Some("looks right"))
        .await
        .expect("approve");
    same_as_pooled(&store, id).await;
    let leased = services
        .lease_as("exec", 60)
        .await
        .expect("lease")
        .expect("a command");
    same_as_pooled(&store, id).await;
    let report = Report {
        command_id: leased.command.id,
        lease_token: leased.lease_token.expose().into(),
        outcome: Outcome::Failed,
        body: json!({"error": "the CRM said no", "code": 503}),
        side_effect: SideEffect::Done,
    };
    let settled = services.report("exec", report).await.expect("report");
    assert_eq!(settled.status, CommandStatus::Failed);
    same_as_pooled(&store, id).await;
    services
        .erase_proposal(&Actor::user("admin"), id, "the customer asked")
        .await
        .expect("erase");
    same_as_pooled(&store, id).await;

    let rejected = submit(&services, &common::proposal_body("agent-a")).await;
    services
        .decide(&reviewer, rejected, ReviewVerdict::Rejected, Some("no"))
        .await
        .expect("reject");
    same_as_pooled(&store, rejected).await;

    let mut point = store.point_read().await.expect("point read");
    assert_eq!(point.proposal(Uuid::new_v4()).await.expect("read"), None);
    assert_eq!(
        point
            .command_for_proposal(Uuid::new_v4())
            .await
            .expect("read"),
        None
    );
}

/// Reads taken while every direct connection is lent go to the pool and still answer; the
/// connections come back once those reads end.
async fn a_read_with_every_connection_lent_uses_the_pool(backend: &str) {
    let (services, _, _dir) = common::fresh_services(backend).await;
    let store = services.store().clone();
    let id = submit(&services, &common::proposal_body("agent-a")).await;
    let mut held = Vec::new();
    loop {
        let mut point = store.point_read().await.expect("point read");
        let direct = matches!(point, PointRead::Direct(_));
        assert_eq!(
            point.proposal(id).await.expect("read").map(|p| p.id),
            Some(id)
        );
        held.push(point);
        if !direct {
            break;
        }
        assert!(
            held.len() <= 64,
            "direct connections are a small, fixed set"
        );
    }
    let lent = held.len() - 1;
    assert!(
        backend == "postgres" && lent == 0 || backend == "sqlite" && lent > 0,
        "{backend}: {lent} direct reads before the pool"
    );
    drop(held);
    let point = store.point_read().await.expect("point read");
    assert_eq!(
        matches!(point, PointRead::Direct(_)),
        backend == "sqlite",
        "lent connections come back"
    );
}

common::on_both_backends!(
    a_point_read_answers_what_the_pool_answers,
    a_read_with_every_connection_lent_uses_the_pool,
);
