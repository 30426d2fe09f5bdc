//! Who may call which use case, held to one table: every use case in
//! [`countersign::domain::access::UseCase`] is called through the service, as every kind of
//! principal, and refused exactly where the table refuses it. The table in ARCHITECTURE.md is
//! the domain's, word for word; and every public service function either asks for the
//! principal or is named below with the reason it does not.

#[path = "common/mod.rs"]
mod common;

use std::collections::BTreeSet;

use countersign::audit::bundle::BundleError;
use countersign::domain::access::{UseCase, Who, table_markdown};
use countersign::domain::command::Resolution;
use countersign::domain::gateway::{Definition, ToolName};
use countersign::domain::lifecycle::{DecisionError, ProposalStatus, ReviewVerdict};
use countersign::domain::principal::{Principal, Role};
use countersign::domain::queue::QueueQuery;
use countersign::domain::retention::Prunable;
use countersign::domain::review::grant::Ask;
use countersign::service::{
    AccountError, Cursor, LeaseRequest, NewUser, PolicyChangeError, ServiceError, Services,
    VerifyError,
};
use countersign::storage::audit_query::Selection;
use countersign::storage::proposals::ProposalRecord;
use uuid::Uuid;

/// One principal of each kind, as the table's columns name them.
fn principal(who: Who) -> Principal {
    match who {
        Who::Admin => Principal::person("boss", Role::Admin),
        Who::Reviewer => Principal::person("rev", Role::Reviewer),
        Who::Compliance => Principal::person("cora", Role::Compliance),
        Who::Agent => Principal::Agent("agent-a".into()),
        Who::Executor => Principal::Executor("exec".into()),
        Who::Operator => Principal::Operator,
        Who::System => Principal::System("sweep"),
    }
}

/// Whether an answer is the table's refusal. A compliance officer's decision is refused by the
/// review rules (and recorded as `decision.refused`), with the same meaning.
fn refused(e: &ServiceError) -> bool {
    matches!(
        e,
        ServiceError::Denied(_) | ServiceError::Refused(DecisionError::RoleMayNotDecide)
    )
}

fn account(r: Result<(), AccountError>) -> Result<(), ServiceError> {
    match r {
        Err(AccountError::Service(e)) => Err(e),
        _ => Ok(()),
    }
}

fn policy<T>(r: Result<T, PolicyChangeError>) -> Result<(), ServiceError> {
    match r {
        Err(PolicyChangeError::Service(e)) => Err(e),
        _ => Ok(()),
    }
}

fn epoch() -> time::OffsetDateTime {
    time::OffsetDateTime::UNIX_EPOCH
}

fn bundle<T>(r: Result<T, BundleError>) -> Result<(), ServiceError> {
    match r {
        Err(BundleError::Denied(d)) => Err(ServiceError::Denied(d)),
        _ => Ok(()),
    }
}

/// Calls `use_case` as `who` on the services' proposal `pid`; `Err` only with what the
/// service answered when it did not get past its own checks. A new use case without an arm
/// here does not compile.
async fn call(
    s: &Services,
    use_case: UseCase,
    who: &Principal,
    pid: Uuid,
) -> Result<(), ServiceError> {
    let out = std::env::temp_dir().join(format!("cs-access-{}", Uuid::new_v4()));
    let r = match use_case {
        UseCase::Submit => s
            .submit(who, &common::proposal_body("agent-a"))
            .await
            .map(drop),
        UseCase::PreToolCheck => s.pre_tool_check(who, &common::check_body()).await.map(drop),
        UseCase::ReadOwnProposal => s.agent_proposal(who, pid).await.map(drop),
        UseCase::Withdraw => s.withdraw(who, pid).await.map(drop),
        UseCase::Execute => {
            let request = LeaseRequest {
                executor: "exec".into(),
                scope: None,
                wanted: None,
                lease_seconds: 30,
                wait: std::time::Duration::ZERO,
            };
            s.lease(who, &request).await.map(drop)
        }
        UseCase::ViewQueue => s.queue_page(who, &QueueQuery::default()).await.map(drop),
        UseCase::ViewProposal => s.proposal(who, pid).await.map(drop),
        UseCase::Decide => s
            .decide(who, pid, ReviewVerdict::Rejected, Some("no"))
            .await
            .map(drop),
        UseCase::RevealPersonalData => s.reveal_personal_data(who, pid).await.map(drop),
        UseCase::Erase => s
            .erase_proposal(who, Uuid::new_v4(), "asked")
            .await
            .map(drop),
        UseCase::ViewRuns => s.needing_resolution(who).await.map(drop),
        UseCase::ResolveCommand => s
            .resolve_command(who, Uuid::new_v4(), Resolution::Failed, "checked")
            .await
            .map(drop),
        UseCase::DecideRollback => s
            .decide_rollback(who, Uuid::new_v4(), false, Some("no"))
            .await
            .map(drop),
        UseCase::SwitchTool => s.pause_tool(who, "crm.*").await.map(drop),
        UseCase::ListUsers => s.list_users(who).await.map(drop),
        UseCase::AddUser => {
            let new = NewUser::new("newcomer", Role::Reviewer, "a long enough password");
            account(s.add_user(who, new).await)
        }
        UseCase::ChangeUser => account(s.set_role(who, "rev", Role::Reviewer).await),
        UseCase::ManageTokens => s.list_tokens(who).await.map(drop),
        UseCase::ReadTrail => s
            .trail_page(who, &Selection::default(), Cursor::Newest)
            .await
            .map(drop),
        UseCase::ExportTrail => bundle(s.export_selection(who, &out, &Selection::default()).await),
        UseCase::VerifyTrail => match s.verify_trail(who, None).await {
            Err(VerifyError::Service(e)) => Err(e),
            _ => Ok(()),
        },
        UseCase::PinGatewayTools => {
            let name = ToolName::new("files", "read_file").expect("name");
            let definition = Definition::of(&serde_json::json!({"name": "read_file"}));
            s.pin_gateway_tools(who, "files", vec![(name, definition)])
                .await
                .map(drop)
        }
        UseCase::ManageGateway => s.gateway_tools(who).await.map(drop),
        UseCase::BreakGlass => s
            .break_glass(who, pid, "the outage costs a lot every minute", None)
            .await
            .map(drop),
        UseCase::MakeGrant => s
            .approve_and_grant(who, pid, None, None, &Ask::narrowest())
            .await
            .map(drop),
        UseCase::ViewGrants => s.grants(who, true).await.map(drop),
        UseCase::RevokeGrant => s.revoke_grant(who, Uuid::new_v4()).await.map(drop),
        UseCase::ViewInsights => s.insights(who, 30).await.map(drop),
        UseCase::ManagePasskeys => s.passkeys(who).await.map(drop),
        UseCase::ViewPolicy => s.policy_overview(who).await.map(drop),
        UseCase::ProposePolicy => policy(s.backtest_policy(who, "", epoch()).await),
        UseCase::ApprovePolicy => policy(s.approve_policy(who, Uuid::new_v4(), None).await),
        UseCase::ActivatePolicy => policy(s.activate_policy(who, "sha256:none", "why").await),
        UseCase::Prune => s
            .prune(
                who,
                Prunable::Notifications,
                std::time::Duration::from_secs(60),
            )
            .await
            .map(drop),
    };
    let _ = std::fs::remove_dir_all(&out);
    r
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_use_case_refuses_exactly_whom_the_table_refuses() {
    let (s, _url, _dir) = common::fresh_services("sqlite").await;
    for (name, role) in [
        ("boss", Role::Admin),
        ("rev", Role::Reviewer),
        ("cora", Role::Compliance),
    ] {
        let new = NewUser::new(name, role, "a long enough password");
        s.add_user(&Principal::Operator, new).await.expect("user");
    }
    let agent = Principal::Agent("agent-a".into());
    let body = common::proposal_body("agent-a");
    let pid = s.submit(&agent, &body).await.expect("submit").record().id;
    let mut wrong = Vec::new();
    for &use_case in UseCase::ALL {
        let rule = use_case.rule();
        for who in Who::ALL {
            let answer = call(&s, use_case, &principal(who), pid).await;
            let was_refused = answer.as_ref().is_err_and(refused);
            if was_refused == rule.allowed.contains(&who) {
                wrong.push(format!(
                    "{} as {}: {answer:?}",
                    use_case.as_str(),
                    who.as_str()
                ));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "answers that break the table:\n{}",
        wrong.join("\n")
    );
}

/// Every read a page makes after a use case let its viewer in, with the use case it is part of:
/// it asks that use case itself, so an adapter that forgot to ask opens nothing.
const READS: &[(&str, UseCase)] = &[
    ("proposal_page", UseCase::ViewProposal),
    ("command_for_proposal", UseCase::ViewProposal),
    ("waiting_reason", UseCase::ViewProposal),
    ("pending", UseCase::ViewQueue),
    ("proposals_in", UseCase::ViewQueue),
    ("runs_page", UseCase::ViewRuns),
    ("command", UseCase::ViewRuns),
    ("proposal_timeline", UseCase::ReadTrail),
    ("trail", UseCase::ReadTrail),
    ("chain_state", UseCase::ReadTrail),
    ("recent_notifications", UseCase::ManageTokens),
    ("webhook_deliveries", UseCase::ManageTokens),
];

/// Calls the read `name` as `who` on proposal `pid` (and its command `cid`).
async fn read(
    s: &Services,
    name: &str,
    who: &Principal,
    pid: Uuid,
    cid: Uuid,
) -> Result<(), ServiceError> {
    match name {
        "proposal_page" => s.proposal_page(who, pid, Cursor::Newest).await.map(drop),
        "command_for_proposal" => s.command_for_proposal(who, pid).await.map(drop),
        "waiting_reason" => s.waiting_reason(who, pid).await.map(drop),
        "pending" => s.pending(who, 10).await.map(drop),
        "proposals_in" => s
            .proposals_in(who, ProposalStatus::Approved, 10)
            .await
            .map(drop),
        "runs_page" => s.runs_page(who).await.map(drop),
        "command" => s.command(who, cid).await.map(drop),
        "proposal_timeline" => s
            .proposal_timeline(who, pid, Cursor::Oldest)
            .await
            .map(drop),
        "trail" => s.trail(who, "proposal", &pid.to_string()).await.map(drop),
        "chain_state" => s.chain_state(who).await.map(drop),
        "recent_notifications" => s.recent_notifications(who, 10).await.map(drop),
        "webhook_deliveries" => s.webhook_deliveries(who, 10).await.map(drop),
        other => panic!("no call for the read `{other}`"),
    }
}

/// An approved proposal of agent-a's in `domain`, with its queued command: (proposal, command).
async fn approved_in(s: &Services, domain: &str) -> (Uuid, Uuid) {
    let mut body = common::proposal_body("agent-a");
    body["domain"] = serde_json::json!(domain);
    let agent = Principal::Agent("agent-a".into());
    let pid = s.submit(&agent, &body).await.expect("submit").record().id;
    let boss = Principal::person("boss", Role::Admin);
    s.decide(&boss, pid, ReviewVerdict::Approved, None)
        .await
        .expect("approve");
    let cid = (s.command_for_proposal(&Principal::Operator, pid).await)
        .expect("read")
        .expect("queued")
        .id;
    (pid, cid)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_guarded_read_refuses_exactly_whom_its_use_case_refuses() {
    let (s, _url, _dir) = common::fresh_services("sqlite").await;
    let (pid, cid) = approved_in(&s, "crm").await;
    let mut wrong = Vec::new();
    for &(name, use_case) in READS {
        let rule = use_case.rule();
        for who in Who::ALL {
            let answer = read(&s, name, &principal(who), pid, cid).await;
            let was_refused = matches!(answer, Err(ServiceError::Denied(_)));
            if was_refused == rule.allowed.contains(&who) {
                wrong.push(format!("{name} as {}: {answer:?}", who.as_str()));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "reads that break their use case's row:\n{}",
        wrong.join("\n")
    );
    for (name, _) in READS {
        assert!(
            !WITHOUT_PRINCIPAL.iter().any(|(n, _)| n == name),
            "{name} asks who acts"
        );
    }
}

/// A person limited to `billing` reads no part of a `sales` proposal through any read: its
/// page, command, why it waits, its timeline, its run, its place in the queue are not found or
/// not listed, exactly as the proposal itself is not; their own domain's they read, and so does
/// a person limited to nothing. Agents and executors read none of it.
async fn a_domain_limited_person_reads_no_part_of_another_domains_proposal(backend: &str) {
    let (s, _url, _dir) = common::fresh_services(backend).await;
    let (sales, sales_cmd) = approved_in(&s, "sales").await;
    let (billing, billing_cmd) = approved_in(&s, "billing").await;
    // Paused, so each queued command has a reason to wait to show.
    s.pause_tool(&Principal::Operator, "*")
        .await
        .expect("pause");
    let limited =
        |name: &str, role| Principal::person_in(name, role, Some(vec!["billing".to_owned()]));
    let bill = limited("bill", Role::Reviewer);
    let cleo = limited("cleo", Role::Compliance);
    let rev = Principal::person("rev", Role::Reviewer);
    let auditor = Principal::person("cora", Role::Compliance);
    for who in [&bill, &cleo] {
        let page = |id| s.proposal_page(who, id, Cursor::Newest);
        assert!(
            page(sales).await.expect("read").is_none(),
            "{who}: the page"
        );
        assert!(
            page(billing).await.expect("read").is_some(),
            "{who}: own page"
        );
        let command = |id| s.command_for_proposal(who, id);
        assert_eq!(command(sales).await.expect("read"), None, "{who}: command");
        assert!(command(billing).await.expect("read").is_some());
        let waits = |id| s.waiting_reason(who, id);
        assert_eq!(waits(sales).await.expect("read"), None, "{who}: waiting");
        assert!(
            waits(billing)
                .await
                .expect("read")
                .is_some_and(|w| w.contains("paused"))
        );
        assert_eq!(
            s.command(who, sales_cmd).await.expect("read"),
            None,
            "{who}: run"
        );
        assert!(s.command(who, billing_cmd).await.expect("read").is_some());
        let listed = |ps: Vec<ProposalRecord>| ps.into_iter().map(|p| p.id).collect::<Vec<_>>();
        let approved = listed(
            s.proposals_in(who, ProposalStatus::Approved, 10)
                .await
                .expect("read"),
        );
        assert_eq!(approved, [billing], "{who}: the queue's reads");
    }
    let timeline = |who, id| s.proposal_timeline(who, id, Cursor::Oldest);
    assert!(
        timeline(&cleo, sales).await.expect("read").is_none(),
        "timeline"
    );
    assert!(timeline(&cleo, billing).await.expect("read").is_some());
    for who in [&rev, &auditor] {
        let page = s
            .proposal_page(who, sales, Cursor::Newest)
            .await
            .expect("read");
        let page = page.expect("a person limited to nothing reads every domain");
        assert_eq!(page.command.map(|c| c.id), Some(sales_cmd));
        assert!(s.command(who, sales_cmd).await.expect("read").is_some());
    }
    assert!(timeline(&auditor, sales).await.expect("read").is_some());
    for who in [
        Principal::Agent("agent-a".into()),
        Principal::Executor("exec".into()),
    ] {
        for &(name, _) in READS {
            let answer = read(&s, name, &who, sales, sales_cmd).await;
            assert!(
                matches!(answer, Err(ServiceError::Denied(_))),
                "{name} as {who}: {answer:?}"
            );
        }
    }
}

common::on_both_backends!(a_domain_limited_person_reads_no_part_of_another_domains_proposal);

#[test]
fn architecture_shows_the_domains_table() {
    let doc = std::fs::read_to_string("ARCHITECTURE.md").expect("ARCHITECTURE.md");
    let table = table_markdown();
    assert!(
        doc.contains(&table),
        "ARCHITECTURE.md's use-case table differs from domain::access; paste this:\n{table}"
    );
}

/// Public async service functions (the ones that read or write) that take no principal, each with why. Everything else a service
/// exports must take `who: &Principal`, so a new use case cannot forget to ask.
const WITHOUT_PRINCIPAL: &[(&str, &str)] = &[
    // Before anyone is known: signing in and presenting a token is how a principal comes to be.
    ("sign_in", "authentication"),
    ("check_session", "authentication"),
    ("sso_sign_in", "authentication"),
    ("sso_sign_in_failed", "authentication"),
    ("token", "authentication: the bearer token's lookup"),
    (
        "authenticate_token",
        "authentication: the bearer token, throttled per address",
    ),
    ("user", "authentication: the session's account"),
    ("person", "authentication: makes the principal"),
    (
        "stream_token_stands",
        "authentication: whether an open stream's bearer token still stands",
    ),
    ("reviewer_domains", "authentication: makes the principal"),
    (
        "slack_action",
        "authentication: Slack's signature, then the person's own decide",
    ),
    // Countersign's own work, started by the server, never by a request.
    ("bootstrap_admin", "system: a database without users"),
    ("sweep_queue", "system task"),
    ("expire_due", "system task"),
    ("deliver_webhooks", "system task"),
    ("deliver_notifications", "system task"),
    ("raise_alerts", "system task"),
    ("purge_sign_in_failures", "system task"),
    ("record_policy_loaded", "system: recorded at start"),
    (
        "start_policy",
        "system: at start, the `--policy` file or the database's active version",
    ),
    (
        "follow_policy",
        "system: each instance follows the stored active version",
    ),
    (
        "shadow_settled",
        "tests and benchmarks: waits for the shadow worker; reads nothing",
    ),
    ("latest_checkpoint", "system: the checkpoint task"),
    (
        "record_security",
        "records a refusal the adapter saw (sign-out, CSRF, a denied page)",
    ),
    (
        "record_export",
        "records an export the principal was allowed",
    ),
    ("record_view", "records a view the principal was allowed"),
    (
        "pending_by_domain_and_risk",
        "/metrics: counts, no content (its own bearer token)",
    ),
    (
        "read_queue_counts",
        "the start's read of the queue's counts, before any request: nothing is answered",
    ),
    ("send", "the SMTP mailer's (`Mailer::send`), not a use case"),
    // Not a read of any record: where the chain's head is, which moves with every change. Every
    // read of a record's content above asks for the use case it is part of.
    (
        "trail_head",
        "live pages: the head's seq, read by the one watcher that wakes every signed-in page's \
         stream; a number, no content",
    ),
];

#[test]
fn every_service_function_asks_who_acts_or_says_why_not() {
    let mut missing = Vec::new();
    let exempt: BTreeSet<&str> = WITHOUT_PRINCIPAL.iter().map(|(n, _)| *n).collect();
    let mut seen = BTreeSet::new();
    for entry in std::fs::read_dir("src/service").expect("src/service") {
        let path = entry.expect("entry").path();
        let text = std::fs::read_to_string(&path).expect("read");
        for (at, _) in text.match_indices("    pub async fn ") {
            let rest = &text[at + "    pub async fn ".len()..];
            let name: String = rest
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            let signature = &rest[..rest.find('{').unwrap_or(rest.len())];
            seen.insert(name.clone());
            if !signature.contains("who: &Principal") && !exempt.contains(name.as_str()) {
                missing.push(format!("{}: {name}", path.display()));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "these service functions take no principal: make them ask (`who: &Principal`, a row in \
         domain::access), or say why in WITHOUT_PRINCIPAL:\n{}",
        missing.join("\n")
    );
    let stale: Vec<_> = exempt.iter().filter(|n| !seen.contains(**n)).collect();
    assert!(stale.is_empty(), "exempt but gone: {stale:?}");
}
