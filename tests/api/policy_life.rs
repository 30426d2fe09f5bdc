//! The policy's life on both backends: versions kept in the database, a backtest that finds
//! exactly the differences a hand-built history predicts, shadow runs that never reach
//! agents, two-person activation followed by a second instance within a second, and
//! `--policy FILE` at start.

use std::time::{Duration, Instant};

use countersign::domain::lifecycle::ReviewVerdict;
use countersign::domain::principal::{Principal, Role};
use countersign::service::PolicyChangeError;
use reqwest::StatusCode;
use serde_json::Value;
use uuid::Uuid;

use crate::common::{self, on_both_backends};
use crate::helpers::TestApp;
use crate::policy_texts::{AFTER, BEFORE, search, search_docs_check};

on_both_backends!(
    a_backtest_finds_exactly_the_predicted_differences,
    activation_needs_a_second_admin_and_reaches_another_instance_within_a_second,
    a_changed_policy_file_at_start_becomes_active_everywhere,
    a_shadow_run_lists_its_differences_and_never_answers_agents,
);

async fn submitted(app: &TestApp, token: &str, body: &Value) -> (String, String) {
    let r = app.propose(token, body).await;
    assert_eq!(r.status(), StatusCode::CREATED);
    let b: Value = r.json().await.expect("json");
    let p = &b["proposal"];
    (
        p["id"].as_str().expect("id").to_owned(),
        p["route"].as_str().expect("route").to_owned(),
    )
}

fn admin(name: &str) -> Principal {
    Principal::person(name, Role::Admin)
}

fn long_ago() -> time::OffsetDateTime {
    time::OffsetDateTime::UNIX_EPOCH
}

/// Four proposals and two checks under BEFORE; the candidate AFTER replays them.
async fn a_backtest_finds_exactly_the_predicted_differences(backend: &str) {
    let app = TestApp::spawn_with_policy(backend, BEFORE).await;
    let sales = app.agent_token("sales-agent").await;
    let intruder = app.agent_token("intruder").await;
    let bot = app.agent_token("support-bot").await;
    let (sales_search, route) = submitted(&app, &sales, &search("sales-agent")).await;
    assert_eq!(route, "accept");
    let (intruder_search, route) = submitted(&app, &intruder, &search("intruder")).await;
    assert_eq!(route, "refuse");
    let (_, route) = submitted(&app, &sales, &common::proposal_body("sales-agent")).await;
    assert_eq!(route, "ask");
    let (erased, _) = submitted(&app, &sales, &common::proposal_body("sales-agent")).await;
    let erased = Uuid::parse_str(&erased).expect("uuid");
    app.user("rev", Role::Reviewer).await;
    let rev = Principal::person("rev", Role::Reviewer);
    app.services
        .decide(&rev, erased, ReviewVerdict::Rejected, Some("no"))
        .await
        .expect("reject");
    app.services
        .erase_proposal(&admin("boss"), erased, "the customer asked")
        .await
        .expect("erase");
    let (status, d) = app.pre_tool_check(&bot, &search_docs_check()).await;
    assert_eq!(
        (status, d["route"].as_str()),
        (StatusCode::OK, Some("accept"))
    );
    let (_, d) = app.pre_tool_check(&bot, &common::check_body()).await;
    let unchanged_check_route = d["route"].clone();

    let report = app
        .services
        .backtest_policy(&Principal::Operator, AFTER, long_ago())
        .await
        .expect("backtest");
    assert_eq!(
        (
            report.considered,
            report.replayed,
            report.erased,
            report.unrecorded
        ),
        (6, 5, 1, 0),
        "{report:#?}"
    );
    assert_eq!(report.changed, 3, "{report:#?}");
    let mut seen: Vec<(String, String, String, String, String, u64)> = report
        .transitions
        .iter()
        .map(|t| {
            (
                t.kind.to_string(),
                t.from.to_string(),
                t.to.to_string(),
                t.tool.clone(),
                t.agent.clone(),
                t.count,
            )
        })
        .collect();
    seen.sort();
    let row = |k: &str, f: &str, t: &str, tool: &str, agent: &str| {
        (k.into(), f.into(), t.into(), tool.into(), agent.into(), 1)
    };
    assert_eq!(
        seen,
        vec![
            row(
                "pre_tool_check",
                "accept",
                "ask",
                "search_docs",
                "support-bot"
            ),
            row("proposal", "accept", "refuse", "docs.search", "sales-agent"),
            row("proposal", "refuse", "accept", "docs.search", "intruder"),
        ]
    );
    assert!(report.loosens(), "refuse → accept loosens");
    let example = |agent: &str| {
        report
            .transitions
            .iter()
            .find(|t| t.agent == agent)
            .map(|t| t.examples[0].clone())
            .expect("example")
    };
    let e = example("sales-agent");
    assert_eq!(e.subject, sales_search);
    assert!(
        e.now.blockers.contains(&"agent_not_in_lane".to_owned()),
        "{e:?}"
    );
    assert!(e.now.rule.contains("allowed_agents"), "{e:?}");
    let e = example("intruder");
    assert_eq!(e.subject, intruder_search);
    assert!(
        e.was.blockers.contains(&"agent_not_in_lane".to_owned()),
        "{e:?}"
    );
    assert!(e.now.blockers.is_empty(), "{e:?}");
    assert!(unchanged_check_route.is_string());

    // The same history under the active version changes nothing.
    let same = app
        .services
        .backtest_policy(&Principal::Operator, BEFORE, long_ago())
        .await
        .expect("backtest");
    assert_eq!((same.changed, same.replayed), (0, 5), "{same:#?}");
    // Only what was recorded since `since` is replayed.
    let later = app.clock_now() + time::Duration::hours(1);
    let none = app
        .services
        .backtest_policy(&Principal::Operator, AFTER, later)
        .await
        .expect("backtest");
    assert_eq!(none.considered, 0);
}

/// Waits up to `within` for `app`'s policy in force to be `version`; how long it took.
async fn in_force_within(app: &TestApp, version: &str, within: Duration) -> Duration {
    let start = Instant::now();
    let mut changed = app.services.policy_changes();
    loop {
        if app.services.policy().version() == version {
            return start.elapsed();
        }
        let left = within.saturating_sub(start.elapsed());
        assert!(
            tokio::time::timeout(left, changed.changed()).await.is_ok(),
            "{version} not in force within {within:?}: {}",
            app.services.policy().version()
        );
    }
}

async fn activation_needs_a_second_admin_and_reaches_another_instance_within_a_second(
    backend: &str,
) {
    let app = TestApp::spawn_with_policy(backend, BEFORE).await;
    let other = app.another_instance().await;
    let before = app.services.policy().version().to_owned();
    assert_eq!(
        other.services.policy().version(),
        before,
        "the database's active version"
    );
    let (alice, bob) = (admin("alice"), admin("bob"));
    let change = app
        .services
        .propose_policy(&alice, AFTER, "intruder takes over search", long_ago())
        .await
        .expect("propose");
    assert_ne!(change.version, before);
    assert_eq!(change.base, before);
    assert_eq!(
        app.services.policy().version(),
        before,
        "proposing activates nothing"
    );

    let own = app.services.approve_policy(&alice, change.id, None).await;
    assert!(
        matches!(
            own,
            Err(PolicyChangeError::Refused {
                code: "own_change",
                ..
            })
        ),
        "{own:?}"
    );
    assert_eq!(
        app.count("select count(*) from audit_events where action = 'policy.approval_refused'")
            .await,
        1
    );
    let reviewer = Principal::person("rev", Role::Reviewer);
    let denied = app
        .services
        .approve_policy(&reviewer, change.id, None)
        .await;
    assert!(
        matches!(denied, Err(PolicyChangeError::Service(_))),
        "{denied:?}"
    );
    assert_eq!(app.services.policy().version(), before);

    let approved = app
        .services
        .approve_policy(&bob, change.id, Some("looked at the backtest"))
        .await
        .expect("approve");
    assert_eq!(approved.status.as_str(), "approved");
    assert_eq!(app.services.policy().version(), change.version);
    let took = in_force_within(&other, &change.version, Duration::from_secs(1)).await;
    assert!(took <= Duration::from_secs(1), "{took:?}");
    // The other instance decides under it, and says so.
    let bot = other.agent_token("support-bot").await;
    let (_, d) = other.pre_tool_check(&bot, &search_docs_check()).await;
    assert_eq!(d["route"], "ask");
    assert_eq!(d["policy_version"], change.version.as_str());
    for kind in ["policy.proposed", "policy.approved", "policy.activated"] {
        let sql = format!(
            "select count(*) from audit_events where action = '{kind}' and subject_id = '{}'",
            change.version
        );
        assert_eq!(app.count(&sql).await, 1, "{kind}");
    }
    let again = app
        .services
        .approve_policy(&admin("carol"), change.id, None)
        .await;
    assert!(
        matches!(
            again,
            Err(PolicyChangeError::Refused {
                code: "not_pending",
                ..
            })
        ),
        "{again:?}"
    );
    let history = app
        .services
        .policy_history(&bob, 10)
        .await
        .expect("history");
    assert_eq!(history[0].version, change.version);
    assert_eq!(history[0].approved_by.as_deref(), Some("bob"));
    assert_eq!(history[0].proposed_by, "alice");
    assert_eq!(history[0].previous.as_deref(), Some(before.as_str()));

    // Break-glass at the shell: back to the first version, alone, marked.
    let a = app
        .services
        .activate_policy(&Principal::Operator, &before, "the pages are down")
        .await
        .expect("activate");
    assert_eq!(a.how.as_str(), "break_glass");
    in_force_within(&other, &before, Duration::from_secs(1)).await;
    let marked = app
        .count("select count(*) from audit_events where action = 'policy.activated' and cast(details as text) like '%\"break_glass\":true%'")
        .await;
    assert_eq!(marked, 1);
    let admin_alone = app
        .services
        .activate_policy(&bob, &change.version, "me")
        .await;
    assert!(admin_alone.is_err(), "break-glass is the shell's alone");
}

async fn a_changed_policy_file_at_start_becomes_active_everywhere(backend: &str) {
    let app = TestApp::spawn_with_policy(backend, BEFORE).await;
    let before = app.services.policy().version().to_owned();
    let file = tempfile::NamedTempFile::new().expect("file");
    std::fs::write(file.path(), AFTER).expect("write");
    let path = file.path().to_owned();
    let other = app
        .another_instance_configured(|s| s.policy = Some(path))
        .await;
    let after = other.services.policy().version().to_owned();
    assert_ne!(before, after);
    in_force_within(&app, &after, Duration::from_secs(1)).await;
    let history = app
        .services
        .policy_history(&Principal::Operator, 10)
        .await
        .expect("history");
    let hows: Vec<(&str, &str)> = history
        .iter()
        .map(|a| (a.version.as_str(), a.how.as_str()))
        .collect();
    assert_eq!(hows, [(after.as_str(), "file"), (before.as_str(), "file")]);
    // Without --policy, the database's active version governs.
    let third = app.another_instance().await;
    assert_eq!(third.services.policy().version(), after);
    // The same file again activates nothing more.
    let file_again = tempfile::NamedTempFile::new().expect("file");
    std::fs::write(file_again.path(), AFTER).expect("write");
    let path = file_again.path().to_owned();
    let _fourth = app
        .another_instance_configured(|s| s.policy = Some(path))
        .await;
    assert_eq!(
        app.count("select count(*) from policy_activations").await,
        2
    );
}

async fn a_shadow_run_lists_its_differences_and_never_answers_agents(backend: &str) {
    let app = TestApp::spawn_with_policy(backend, BEFORE).await;
    let change = app
        .services
        .propose_policy(&admin("alice"), AFTER, "try it", long_ago())
        .await
        .expect("propose");
    app.services
        .shadow_policy(&admin("alice"), change.id, Some(time::Duration::hours(1)))
        .await
        .expect("shadow");
    let sales = app.agent_token("sales-agent").await;
    let bot = app.agent_token("support-bot").await;
    let (id, route) = submitted(&app, &sales, &search("sales-agent")).await;
    assert_eq!(route, "accept", "the agent hears the active version");
    let (_, d) = app.pre_tool_check(&bot, &search_docs_check()).await;
    assert_eq!(d["route"], "accept", "the agent hears the active version");
    let (_, d) = app.pre_tool_check(&bot, &common::check_body()).await;
    assert!(d["route"].is_string());

    let deadline = Instant::now() + Duration::from_secs(10);
    let page = loop {
        let page = app
            .services
            .policy_change(&admin("bob"), change.id)
            .await
            .expect("page")
            .expect("change");
        if page.change.shadowed == 3 {
            break page;
        }
        assert!(
            Instant::now() < deadline,
            "shadowed {}",
            page.change.shadowed
        );
        app.services.shadow_settled().await;
    };
    assert_eq!(page.shadow_differences, 2, "{:?}", page.shadow);
    let counted: Vec<(&str, &str, &str, i64)> = (page.shadow_transitions.iter())
        .map(|t| {
            (
                t.kind.as_str(),
                t.from_route.as_str(),
                t.to_route.as_str(),
                t.count,
            )
        })
        .collect();
    assert_eq!(counted.len(), 2, "{counted:?}");
    assert!(counted.iter().all(|t| t.3 == 1), "{counted:?}");
    let mut seen: Vec<(&str, &str, &str, &str)> = page
        .shadow
        .iter()
        .map(|d| {
            (
                d.kind.as_str(),
                d.from_route.as_str(),
                d.to_route.as_str(),
                d.tool.as_str(),
            )
        })
        .collect();
    seen.sort();
    assert_eq!(
        seen,
        [
            ("pre_tool_check", "accept", "ask", "search_docs"),
            ("proposal", "accept", "refuse", "docs.search"),
        ]
    );
    assert!(page.shadow.iter().any(|d| d.subject == id));
    assert!(
        page.diff.contains("+allowed_agents = [\"intruder\"]"),
        "{}",
        page.diff
    );
    // Stopped, it shadows nothing more.
    app.services
        .shadow_policy(&admin("alice"), change.id, None)
        .await
        .expect("stop");
    let _ = submitted(&app, &sales, &search("sales-agent")).await;
    app.services.shadow_settled().await;
    let page = app
        .services
        .policy_change(&admin("bob"), change.id)
        .await
        .expect("page")
        .expect("change");
    assert_eq!(page.change.shadowed, 3);
}
