//! GDPR erasure's one rule ([`countersign::domain::erasure::check`]) through the admin's erase
//! form: for every status a command can be in, the proposal is erased exactly when no command of
//! it (its action, or a rollback of it) may still run, and every command of it is erased with it.

use countersign::domain::principal::Principal;
use countersign::domain::principal::Role;
use reqwest::StatusCode;
use serde_json::{Value, json};
use uuid::Uuid;

use crate::admin::{erase, signed_in};
use crate::common::{self, on_both_backends};
use crate::helpers::{Browser, TestApp, location};

on_both_backends!(
    erasure_waits_while_a_command_may_still_run,
    erasure_waits_for_a_rollback_and_then_erases_it_too,
);

/// Each command status, and whether a proposal whose command is in it may be erased: not while
/// an executor may still run it (queued, leased, a rollback task a reviewer may approve, an
/// unknown outcome or a timeout a person may release to run once more).
const STATUSES: &[(&str, bool)] = &[
    ("queued", false),
    ("leased", false),
    ("outcome_unknown", false),
    ("timed_out", false),
    ("awaiting_approval", false),
    ("succeeded", true),
    ("failed", true),
    ("expired", true),
    ("dismissed", true),
];

/// A proposal with a rollback plan, submitted by `a1` and approved by `rev`: its id.
async fn approved(app: &TestApp, agent: &str, rev: &Browser) -> String {
    let mut body = common::proposal_body("a1");
    body["rollback_plan"] = json!({"type": "compensate", "instructions": {"steps": ["restore"]}});
    let r = app.propose(agent, &body).await;
    assert_eq!(r.status(), StatusCode::CREATED);
    let created: Value = r.json().await.expect("json");
    let id = created["proposal"]["id"].as_str().expect("id").to_owned();
    let r = rev.decide(&id, "approved", None).await;
    assert_eq!(location(&r), format!("/proposals/{id}?notice=approved"));
    id
}

/// `executor` leases the next command and fails it saying a side effect is possible: its
/// outcome is unknown (and a rollback task opens when it has a plan). The command's id.
pub(crate) async fn outcome_unknown(app: &TestApp, executor: &str) -> String {
    let (status, leased) = app.lease(executor).await;
    assert_eq!(status, StatusCode::OK, "{leased}");
    let command = leased["command"]["id"].as_str().expect("command");
    let report =
        json!({"lease_token": leased["lease_token"], "error": {"e": 1}, "side_effect": "possible"});
    let (status, done) = app.report(executor, command, "fail", &report).await;
    assert_eq!(status, StatusCode::OK, "{done}");
    assert_eq!(done["command"]["status"], "outcome_unknown");
    command.to_owned()
}

/// Whether every parameter value of every command of proposal `id` reads `[erased]`.
async fn commands_erased(app: &TestApp, id: &str) -> Vec<bool> {
    let uuid = Uuid::parse_str(id).expect("uuid");
    let mut read = app.services.store().read().await.expect("read");
    let commands = countersign::storage::commands::of_proposal(read.conn(), uuid)
        .await
        .expect("commands");
    assert!(!commands.is_empty());
    (commands.iter())
        .map(|c| c.spec.parameters.values().all(|v| v == "[erased]"))
        .collect()
}

/// For each command status in turn, an admin erases a proposal whose command is in it: erased
/// (and its command with it) exactly when the command can no longer run; otherwise refused
/// with nothing changed.
async fn erasure_waits_while_a_command_may_still_run(backend: &str) {
    let app = TestApp::spawn(backend).await;
    let admin = signed_in(&app, "boss", Role::Admin).await;
    let rev = signed_in(&app, "rev", Role::Reviewer).await;
    let agent = app.agent_token("a1").await;
    for &(status, erasable) in STATUSES {
        let id = approved(&app, &agent, &rev).await;
        // The command moves behind the app's back, to each status in turn.
        app.exec(&format!(
            "update commands set status = '{status}' where seq = (select max(seq) from commands)"
        ))
        .await;
        let to = erase(&admin, &id).await;
        if erasable {
            assert_eq!(to, format!("/proposals/{id}?notice=erased"), "{status}");
            assert_eq!(commands_erased(&app, &id).await, [true], "{status}");
        } else {
            assert_eq!(
                to,
                format!("/proposals/{id}?error=erase_command_open"),
                "{status}"
            );
            assert_eq!(commands_erased(&app, &id).await, [false], "{status}");
            let uuid = Uuid::parse_str(&id).expect("uuid");
            let p = app
                .services
                .proposal(&Principal::Operator, uuid)
                .await
                .expect("read");
            assert!(p.expect("it").erasure.is_none(), "{status}");
        }
    }
    let erased = "select count(*) from audit_events where action = 'proposal.erased'";
    let expected = STATUSES.iter().filter(|(_, e)| *e).count();
    assert_eq!(
        app.count(erased).await,
        i64::try_from(expected).expect("few")
    );
}

/// A run whose outcome is unknown opens a rollback task: erasure waits for the action and for
/// the rollback; once neither may run, it erases both.
async fn erasure_waits_for_a_rollback_and_then_erases_it_too(backend: &str) {
    let app = TestApp::spawn(backend).await;
    let admin = signed_in(&app, "boss", Role::Admin).await;
    let rev = signed_in(&app, "rev", Role::Reviewer).await;
    let agent = app.agent_token("a1").await;
    let executor = app.executor_token("n8n").await;
    let id = approved(&app, &agent, &rev).await;
    outcome_unknown(&app, &executor).await;
    let open = format!("/proposals/{id}?error=erase_command_open");
    assert_eq!(erase(&admin, &id).await, open);

    // A person says the action failed; its rollback task still waits for a reviewer.
    app.exec("update commands set status = 'failed' where kind = 'action'")
        .await;
    assert_eq!(erase(&admin, &id).await, open);
    assert_eq!(commands_erased(&app, &id).await, [false, false]);

    // Dismissed, nothing may run: both commands are erased with the proposal.
    app.exec("update commands set status = 'dismissed' where kind = 'rollback'")
        .await;
    assert_eq!(
        erase(&admin, &id).await,
        format!("/proposals/{id}?notice=erased")
    );
    assert_eq!(commands_erased(&app, &id).await, [true, true]);
}
