//! Retention: rows that only record how Countersign reached people are pruned once past their
//! retention, a batch at a time, by the system alone; rows still pending, alerts of proposals
//! still waiting and the audit trail are never touched. Web sessions go once they have ended,
//! and a session still open is kept.

use countersign::domain::lifecycle::ReviewVerdict;
use countersign::domain::principal::{Principal, Role, TokenKind};
use countersign::domain::retention::{BATCH, Prunable};
use countersign::service::{ChannelUrl, NotifySettings, SigningSecret, TokenRequest};
use std::time::Duration;

use crate::admin::signed_in;
use crate::common::on_both_backends;
use crate::helpers::TestApp;
use crate::webhooks::{next, receiver, recorded};

on_both_backends!(
    rows_past_their_retention_are_pruned_and_the_trail_is_not,
    ended_sessions_are_pruned_a_batch_at_a_time
);

const DAY: Duration = Duration::from_secs(86_400);

/// When the old rows are next due: never within the test, so the dispatcher leaves them be.
const NEVER: &str = "2999-01-01T00:00:00Z";

/// SQL inserting `n` reviewers' notifications in `state`, made at unix millisecond `ms`, for
/// proposal `proposal` (ids as UUIDv7 would make them then).
fn notifications(backend: &str, n: u32, ms: i64, state: &str, proposal: &str) -> String {
    let hex = proposal.replace('-', "");
    if backend == "sqlite" {
        format!(
            "with recursive k(i) as (select 1 union all select i + 1 from k where i < {n}) \
             insert into notifications (id, channel, reason, proposal_id, created_at, state, \
             next_attempt_at) select unhex(printf('%012x', {ms}) || '70008000' || printf('%012x', i)), 'webhook', \
             'waiting', unhex('{hex}'), '2026-01-01T00:00:00Z', '{state}', '{NEVER}' from k"
        )
    } else {
        format!(
            "insert into notifications (id, channel, reason, proposal_id, created_at, state, \
             next_attempt_at) select (lpad(to_hex({ms}::bigint), 12, '0') || '70008000' || \
             lpad(to_hex(i), 12, '0'))::uuid, 'webhook', 'waiting', '{proposal}'::uuid, \
             '2026-01-01T00:00:00Z', '{state}', '{NEVER}' from generate_series(1, {n}) as i"
        )
    }
}

fn alert(backend: &str, proposal: &str, at: &str) -> String {
    let id = if backend == "sqlite" {
        format!("unhex('{}')", proposal.replace('-', ""))
    } else {
        format!("'{proposal}'::uuid")
    };
    format!(
        "insert into proposal_alerts (proposal_id, kind, tier, audience, at) \
         values ({id}, 'escalated', 1, 'reviewer', '{at}')"
    )
}

/// Prunes `kind` batch by batch until a batch comes back short, as the background task does;
/// each batch's count.
async fn prune_all(app: &TestApp, kind: Prunable, keep: Duration) -> Vec<u64> {
    let system = Principal::System("retention");
    let mut batches = Vec::new();
    loop {
        let n = app
            .services
            .prune(&system, kind, keep)
            .await
            .expect("prune");
        batches.push(n);
        if n < u64::from(BATCH) {
            return batches;
        }
    }
}

async fn rows_past_their_retention_are_pruned_and_the_trail_is_not(backend: &str) {
    let (notify_url, mut notified) = receiver(vec![]).await;
    let (hook_url, mut hooked) = receiver(vec![]).await;
    let app = TestApp::spawn_configured(backend, |s| {
        s.notify = NotifySettings {
            webhook: Some((
                ChannelUrl(notify_url.parse().expect("url")),
                SigningSecret("notify-secret-0123456789".to_owned()),
            )),
            window: None,
            ..NotifySettings::default()
        };
    })
    .await;
    let mut sends = app.services.store().changes().notification_sends();
    let mut attempts = app.services.store().changes().webhook_attempts();
    let request = TokenRequest {
        webhook: Some(&hook_url),
        ..TokenRequest::new(TokenKind::Agent, "sales-agent")
    };
    let token = (app.services)
        .create_operated_token(&Principal::Operator, request)
        .await
        .expect("token");
    let settled = app.propose_ok(token.token.expose(), "sales-agent").await;
    let waiting = app.propose_ok(token.token.expose(), "sales-agent").await;
    recorded(&mut sends, 1).await;
    next(&mut notified).await;
    // Whatever the first message did not carry waits out the channel's window, then goes.
    app.clock.advance(time::Duration::seconds(61));
    app.services.deliver_notifications().await.expect("deliver");
    // The background dispatcher may claim that row before this call does; then it is settled
    // by that loop's send, a moment later: wait for the send that settles it.
    let sent = "select count(*) from notifications where state = 'sent'";
    let mut seen = *sends.borrow();
    while app.count(sent).await < 2 {
        seen += 1;
        recorded(&mut sends, seen).await;
    }
    assert_eq!(app.count(sent).await, 2);
    recorded(&mut attempts, 2).await;
    next(&mut hooked).await;
    app.user("rev", Role::Reviewer).await;
    let rev = Principal::person("rev", Role::Reviewer);
    (app.services)
        .decide(
            &rev,
            settled.parse().expect("id"),
            ReviewVerdict::Rejected,
            Some("not this time"),
        )
        .await
        .expect("rejected");
    app.services.deliver_webhooks().await.expect("deliver");
    recorded(&mut attempts, 3).await; // submitted twice, rejected once

    // Old rows beside the real ones: 1,200 sent notifications from a year ago, and a pending
    // one as old, which is never pruned (it still has to go out).
    let year_ago = (app.clock_now() - time::Duration::days(365)).unix_timestamp() * 1000;
    app.exec(&notifications(backend, 1_200, year_ago, "sent", &settled))
        .await;
    app.exec(&notifications(
        backend,
        1,
        year_ago + 1,
        "pending",
        &settled,
    ))
    .await;
    let old = "2025-01-01T00:00:00Z";
    app.exec(&alert(backend, &settled, old)).await;
    app.exec(&alert(backend, &waiting, old)).await;
    let trail = app.count("select count(*) from audit_events").await;

    // Nothing of today's is past a 30-day retention yet: only the year-old sent rows go,
    // a batch at a time.
    let batches = prune_all(&app, Prunable::Notifications, 30 * DAY).await;
    let full = u64::from(BATCH);
    assert_eq!(batches.iter().sum::<u64>(), 1_200);
    assert_eq!(batches.len() as u64, 1_200 / full + 1, "{batches:?}");
    assert!(
        batches[..batches.len() - 1].iter().all(|&n| n == full),
        "{batches:?}"
    );
    assert_eq!(
        prune_all(&app, Prunable::WebhookDeliveries, 30 * DAY).await,
        vec![0]
    );
    let left = app.count("select count(*) from notifications").await;
    assert_eq!(left, 3, "today's two and the old pending one");

    // A month on, today's delivered notifications and webhook deliveries are past it too.
    app.clock.advance(time::Duration::days(31));
    assert_eq!(
        prune_all(&app, Prunable::Notifications, 30 * DAY).await,
        vec![2]
    );
    assert_eq!(
        app.count("select count(*) from notifications where state = 'pending'")
            .await,
        1
    );
    assert_eq!(app.count("select count(*) from notifications").await, 1);
    assert_eq!(
        prune_all(&app, Prunable::WebhookDeliveries, 30 * DAY).await,
        vec![3]
    );
    assert_eq!(
        app.count("select count(*) from webhook_deliveries").await,
        0
    );
    assert_eq!(app.count("select count(*) from webhook_attempts").await, 0);

    // The settled proposal's alert goes; the waiting one's stays, or its tier would be raised
    // again.
    assert_eq!(prune_all(&app, Prunable::Alerts, 90 * DAY).await, vec![1]);
    assert_eq!(app.count("select count(*) from proposal_alerts").await, 1);

    assert_eq!(
        app.count("select count(*) from audit_events").await,
        trail,
        "the trail is never pruned, nor is pruning recorded in it"
    );
    let metrics = app.services.metrics().render(&[]);
    for line in [
        "countersign_pruned_rows_total{table=\"notifications\"} 1202",
        "countersign_pruned_rows_total{table=\"webhook_deliveries\"} 3",
        "countersign_pruned_rows_total{table=\"proposal_alerts\"} 1",
    ] {
        assert!(metrics.contains(line), "{line} in\n{metrics}");
    }
    let refused = (app.services)
        .prune(&rev, Prunable::Notifications, DAY)
        .await;
    assert!(refused.is_err(), "only the system prunes");
}

/// SQL inserting `n` web sessions that ended at the start of 2026, in the session store's table.
fn ended_sessions(backend: &str, n: u32) -> String {
    if backend == "sqlite" {
        format!(
            "with recursive k(i) as (select 1 union all select i + 1 from k where i < {n}) \
             insert into tower_sessions (id, data, expiry_date) \
             select 'ended-' || i, x'00', '2026-01-01T00:00:00Z' from k"
        )
    } else {
        format!(
            "insert into tower_sessions.session (id, data, expiry_date) \
             select 'ended-' || i, '\\x00'::bytea, '2026-01-01T00:00:00Z' \
             from generate_series(1, {n}) as i"
        )
    }
}

async fn ended_sessions_are_pruned_a_batch_at_a_time(backend: &str) {
    let app = TestApp::spawn(backend).await;
    let browser = signed_in(&app, "rev", Role::Reviewer).await;
    app.exec(&ended_sessions(backend, 250)).await;
    let table = if backend == "sqlite" {
        "tower_sessions"
    } else {
        "tower_sessions.session"
    };
    let open = app
        .count(&format!(
            "select count(*) from {table} where id not like 'ended-%'"
        ))
        .await;
    assert!(open >= 1, "the reviewer's session is stored");
    assert_eq!(
        prune_all(&app, Prunable::Sessions, Duration::ZERO).await,
        vec![100, 100, 50],
        "ended sessions go a batch at a time"
    );
    assert_eq!(
        app.count(&format!("select count(*) from {table}")).await,
        open,
        "a session still open is kept"
    );
    assert_eq!(
        browser.get("/").await.status(),
        reqwest::StatusCode::OK,
        "and its reviewer is still signed in"
    );
    let metrics = app.services.metrics().render(&[]);
    let line = "countersign_pruned_rows_total{table=\"sessions\"} 250";
    assert!(metrics.contains(line), "{line} in\n{metrics}");
}
