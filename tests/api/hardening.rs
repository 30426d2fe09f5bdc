//! The doors locked (issue 10): security headers with a CSP nonce on every page, sign-in
//! throttling per account and per client address (audited, no hashing while throttled), one
//! answer for unknown users and wrong passwords, passwords capped at sign-in, no session row
//! for anonymous page views, sessions that end (idle, absolute, disabled account, password
//! reset), and connections that slow clients cannot hold.

use countersign::domain::principal::Principal;
use std::time::Duration;

use countersign::domain::principal::Role;
use reqwest::StatusCode;
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::common::on_both_backends;
use crate::helpers::{Browser, PASSWORD, TestApp, location};

on_both_backends!(
    every_page_carries_the_security_headers_and_its_scripts_the_nonce,
    hsts_is_sent_only_when_cookies_are_secure,
    anonymous_page_views_write_no_session_row,
    the_sign_in_form_is_bound_to_its_own_browser,
    the_sixth_attempt_on_an_account_is_throttled_even_with_the_right_password,
    many_failures_from_one_address_throttle_every_account_there,
    forwarded_addresses_are_believed_only_from_trusted_proxies,
    unknown_users_and_wrong_passwords_get_the_same_answer_and_the_same_work,
    over_long_passwords_are_refused_without_hashing,
    disabling_an_account_ends_its_open_sessions,
    the_database_keeps_a_sessions_hash_never_its_id,
    a_password_reset_signs_the_account_out_everywhere,
    idle_sessions_end_and_activity_keeps_them_alive,
    sessions_end_after_the_absolute_limit_however_active,
    a_session_store_that_fails_is_answered_503_never_500,
    a_changed_session_is_written_once,
    a_form_whose_change_fails_sends_its_browser_back_with_words,
    a_client_that_never_finishes_its_headers_is_disconnected,
    a_body_that_never_arrives_does_not_hold_the_connection,
    the_connection_cap_holds_extra_clients_until_one_leaves,
);

/// The sessions table of the backend.
fn sessions_table(app: &TestApp) -> &'static str {
    if app.db_url.starts_with("sqlite:") {
        "tower_sessions"
    } else {
        "tower_sessions.session"
    }
}

/// The audit rows about user `name` (sign-ins, throttling, session ends), oldest first.
async fn trail_of(app: &TestApp, name: &str) -> Vec<(String, Value)> {
    app.services
        .trail(&Principal::Operator, "user", name)
        .await
        .expect("trail")
        .into_iter()
        .map(|r| (r.action, r.details))
        .collect()
}

/// Signs in with the page's own CSRF token, claiming to come from `forwarded_for`.
async fn login_from(
    browser: &Browser,
    base: &str,
    forwarded_for: &str,
    user: &str,
    pw: &str,
) -> String {
    let csrf = browser.csrf("/login").await;
    let r = browser
        .client
        .post(format!("{base}/fn/login"))
        .header("accept", "text/html")
        .header("x-forwarded-for", forwarded_for)
        .form(&[
            ("csrf_token", csrf.as_str()),
            ("username", user),
            ("password", pw),
        ])
        .send()
        .await
        .expect("request");
    location(&r)
}

const THROTTLED: &str = "/login?error=throttled";
const REFUSED: &str = "/login?error=invalid_credentials";

async fn every_page_carries_the_security_headers_and_its_scripts_the_nonce(backend: &str) {
    let app = TestApp::spawn(backend).await;
    let browser = app.browser();
    let r = browser.get("/login").await;
    assert_eq!(r.status(), StatusCode::OK);
    let header = |name: &str| {
        r.headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_owned()
    };
    let csp = header("content-security-policy");
    let script_src = csp
        .split(';')
        .map(str::trim)
        .find(|d| d.starts_with("script-src"))
        .expect("a script-src directive")
        .to_owned();
    assert!(!script_src.contains("unsafe-inline"), "{script_src}");
    assert!(csp.contains("frame-ancestors 'none'"), "{csp}");
    assert_eq!(header("x-content-type-options"), "nosniff");
    assert_eq!(header("referrer-policy"), "same-origin");
    assert!(r.headers().get("strict-transport-security").is_none());
    let nonce = script_src
        .split_whitespace()
        .find_map(|s| s.strip_prefix("'nonce-")?.strip_suffix('\''))
        .expect("a nonce")
        .to_owned();
    assert!(nonce.len() >= 22, "a nonce of at least 128 bits");
    let html = r.text().await.expect("html");
    let scripts: Vec<&str> = html.split("<script").skip(1).collect();
    assert!(!scripts.is_empty(), "the page hydrates with scripts");
    for script in scripts {
        let tag = &script[..script.find('>').expect("tag end")];
        assert!(tag.contains(&format!("nonce=\"{nonce}\"")), "<script{tag}>");
    }
    // A fresh nonce per response, and the headers on the API as well.
    let again = browser.get("/login").await;
    let csp_again = again.headers()["content-security-policy"]
        .to_str()
        .expect("csp");
    assert_ne!(csp_again, csp);
    let health = app
        .client
        .get(app.url("/healthz"))
        .send()
        .await
        .expect("healthz");
    assert_eq!(health.headers()["x-content-type-options"], "nosniff");
    // The machines' paths serve no scripts: their policy allows none, and needs no nonce.
    let machine_csp = health.headers()["content-security-policy"]
        .to_str()
        .expect("csp");
    assert!(machine_csp.contains("script-src 'none'"), "{machine_csp}");
    assert!(
        machine_csp.contains("frame-ancestors 'none'"),
        "{machine_csp}"
    );
    assert!(!machine_csp.contains("nonce-"), "{machine_csp}");
}

async fn hsts_is_sent_only_when_cookies_are_secure(backend: &str) {
    let app = TestApp::spawn_configured(backend, |s| s.secure_cookies = true).await;
    let r = app.browser().get("/login").await;
    let hsts = r.headers()["strict-transport-security"]
        .to_str()
        .expect("hsts");
    assert!(hsts.starts_with("max-age="), "{hsts}");
    let cookie = r.headers()["set-cookie"].to_str().expect("cookie");
    assert!(cookie.contains("Secure"), "{cookie}");
}

async fn anonymous_page_views_write_no_session_row(backend: &str) {
    let app = TestApp::spawn(backend).await;
    app.user("rev", Role::Reviewer).await;
    let count = format!("select count(*) from {}", sessions_table(&app));
    let browser = app.browser();
    for path in [
        "/",
        "/login",
        "/runs",
        "/audit",
        "/proposals/nope",
        "/no/such/page",
    ] {
        let status = browser.get(path).await.status();
        assert!(status.is_success() || status.is_redirection() || status == StatusCode::NOT_FOUND);
    }
    browser.csrf("/login").await;
    let r = browser.login("rev", "not the password at all").await;
    assert_eq!(location(&r), REFUSED);
    assert_eq!(
        app.count(&count).await,
        0,
        "nobody signed in, nothing stored"
    );
    assert_eq!(location(&browser.login("rev", PASSWORD).await), "/");
    assert_eq!(app.count(&count).await, 1);
}

async fn the_sign_in_form_is_bound_to_its_own_browser(backend: &str) {
    let app = TestApp::spawn(backend).await;
    app.user("rev", Role::Reviewer).await;
    let (victim, attacker) = (app.browser(), app.browser());
    let r = victim.get("/login").await;
    let cookie = r.headers()["set-cookie"]
        .to_str()
        .expect("cookie")
        .to_owned();
    assert!(cookie.starts_with("countersign_login_csrf="), "{cookie}");
    assert!(
        cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict"),
        "{cookie}"
    );
    // The attacker's own valid token does not fit the victim's cookie.
    let forged = attacker.csrf("/login").await;
    let r = victim
        .post_form(
            "/fn/login",
            "/login",
            &[
                ("csrf_token", &forged),
                ("username", "rev"),
                ("password", PASSWORD),
            ],
        )
        .await;
    assert_eq!(location(&r), "/login?error=csrf");
    assert_eq!(location(&victim.login("rev", PASSWORD).await), "/");
}

async fn the_sixth_attempt_on_an_account_is_throttled_even_with_the_right_password(backend: &str) {
    let app = TestApp::spawn(backend).await;
    app.user("rev", Role::Reviewer).await;
    app.user("other", Role::Reviewer).await;
    let browser = app.browser();
    for _ in 0..5 {
        assert_eq!(
            location(&browser.login("rev", "wrong wrong wrong").await),
            REFUSED
        );
    }
    let hashed = app.services.hashing().work_done();
    assert_eq!(location(&browser.login("rev", PASSWORD).await), THROTTLED);
    assert_eq!(location(&browser.login("REV ", PASSWORD).await), THROTTLED);
    assert_eq!(
        app.services.hashing().work_done(),
        hashed,
        "no argon2 while throttled"
    );
    let throttled: Vec<Value> = trail_of(&app, "rev")
        .await
        .into_iter()
        .filter(|(kind, _)| kind == "auth.sign_in_throttled")
        .map(|(_, d)| d)
        .collect();
    // Both were refused; the second typed no account's exact name, so only the first is
    // recorded against `rev`.
    assert_eq!(throttled.len(), 1);
    assert_eq!(throttled[0]["scope"], "account");
    assert!(throttled[0]["retry_after_secs"].as_i64().expect("secs") <= 30);
    // The address is not throttled: someone else signs in from it.
    assert_eq!(location(&app.browser().login("other", PASSWORD).await), "/");
    // After the wait, the right password works and the count starts again.
    app.clock.advance(time::Duration::seconds(31));
    assert_eq!(location(&browser.login("rev", PASSWORD).await), "/");
    let later = app.browser();
    assert_eq!(
        location(&later.login("rev", "wrong wrong wrong").await),
        REFUSED
    );
    assert_eq!(location(&later.login("rev", PASSWORD).await), "/");
}

async fn many_failures_from_one_address_throttle_every_account_there(backend: &str) {
    let app = TestApp::spawn_configured(backend, |s| {
        s.trusted_proxies = vec!["127.0.0.1".parse().expect("ip")];
    })
    .await;
    app.user("rev", Role::Reviewer).await;
    let browser = app.browser();
    for i in 0..20 {
        let name = format!("guess{i}");
        let to = login_from(
            &browser,
            &app.base,
            "203.0.113.7",
            &name,
            "wrong wrong wrong",
        )
        .await;
        assert_eq!(to, REFUSED);
    }
    let hashed = app.services.hashing().work_done();
    let to = login_from(&browser, &app.base, "203.0.113.7", "rev", PASSWORD).await;
    assert_eq!(to, THROTTLED);
    assert_eq!(app.services.hashing().work_done(), hashed);
    let (kind, details) = trail_of(&app, "rev").await.pop().expect("an event");
    assert_eq!(kind, "auth.sign_in_throttled");
    assert_eq!(details["scope"], "address");
    // Another address behind the same proxy is not.
    let to = login_from(&app.browser(), &app.base, "203.0.113.8", "rev", PASSWORD).await;
    assert_eq!(to, "/");
}

async fn forwarded_addresses_are_believed_only_from_trusted_proxies(backend: &str) {
    // No trusted proxy: a client cannot escape its address's count by claiming others.
    let app = TestApp::spawn(backend).await;
    app.user("rev", Role::Reviewer).await;
    let browser = app.browser();
    for i in 0..20 {
        let (name, from) = (format!("guess{i}"), format!("198.51.100.{i}"));
        let to = login_from(&browser, &app.base, &from, &name, "wrong wrong wrong").await;
        assert_eq!(to, REFUSED);
    }
    let to = login_from(&browser, &app.base, "198.51.100.99", "rev", PASSWORD).await;
    assert_eq!(to, THROTTLED);
}

async fn unknown_users_and_wrong_passwords_get_the_same_answer_and_the_same_work(backend: &str) {
    let app = TestApp::spawn(backend).await;
    app.user("rev", Role::Reviewer).await;
    let browser = app.browser();
    browser.csrf("/login").await;
    let answer = |r: reqwest::Response| (r.status(), location(&r));
    let before = app.services.hashing().work_done();
    let wrong = answer(browser.login("rev", "not the password at all").await);
    let after_wrong = app.services.hashing().work_done();
    let unknown = answer(browser.login("nobody", "not the password at all").await);
    let after_unknown = app.services.hashing().work_done();
    assert_eq!(wrong, unknown);
    assert_eq!(wrong, (StatusCode::FOUND, REFUSED.to_owned()));
    // Each refusal ran exactly one argon2 verification (a dummy one for the unknown name).
    assert_eq!((after_wrong - before, after_unknown - after_wrong), (1, 1));
    app.services
        .disable_user(&Principal::Operator, "rev")
        .await
        .expect("disable");
    let disabled = answer(browser.login("rev", PASSWORD).await);
    assert_eq!(disabled, unknown);
    assert_eq!(app.services.hashing().work_done() - after_unknown, 1);
}

async fn over_long_passwords_are_refused_without_hashing(backend: &str) {
    let app = TestApp::spawn(backend).await;
    app.user("rev", Role::Reviewer).await;
    let browser = app.browser();
    browser.csrf("/login").await;
    let before = app.services.hashing().work_done();
    let long = "p".repeat(1025);
    assert_eq!(location(&browser.login("rev", &long).await), REFUSED);
    assert_eq!(app.services.hashing().work_done(), before);
    let (kind, details) = trail_of(&app, "rev").await.pop().expect("an event");
    assert_eq!(kind, "auth.sign_in_failed");
    assert_eq!(details["reason"], "too_long");
}

/// Signs `name` in on a fresh browser and checks the queue opens.
async fn signed_in(app: &TestApp, name: &str, password: &str) -> Browser {
    let browser = app.browser();
    assert_eq!(location(&browser.login(name, password).await), "/");
    assert_eq!(browser.get("/").await.status(), StatusCode::OK);
    browser
}

/// The reasons recorded for `name`'s ended sessions.
async fn ended(app: &TestApp, name: &str) -> Vec<String> {
    trail_of(app, name)
        .await
        .into_iter()
        .filter(|(kind, _)| kind == "auth.session_ended")
        .map(|(_, d)| d["reason"].as_str().unwrap_or_default().to_owned())
        .collect()
}

async fn disabling_an_account_ends_its_open_sessions(backend: &str) {
    let app = TestApp::spawn(backend).await;
    app.user("rev", Role::Reviewer).await;
    let browser = signed_in(&app, "rev", PASSWORD).await;
    app.services
        .disable_user(&Principal::Operator, "rev")
        .await
        .expect("disable");
    assert_eq!(location(&browser.get("/").await), "/login");
    assert_eq!(ended(&app, "rev").await, ["disabled"]);
    let count = format!("select count(*) from {}", sessions_table(&app));
    assert_eq!(
        app.count(&count).await,
        0,
        "the ended session's row is gone"
    );
}

/// A session's id is its cookie's secret: the sessions table holds its hash, so reading the
/// database signs nobody in; the cookie still does.
async fn the_database_keeps_a_sessions_hash_never_its_id(backend: &str) {
    let app = TestApp::spawn(backend).await;
    app.user("rev", Role::Reviewer).await;
    let browser = app.browser();
    let csrf = browser.csrf("/login").await;
    let r = browser
        .client
        .post(app.url("/fn/login"))
        .header("accept", "text/html")
        .form(&[
            ("csrf_token", csrf.as_str()),
            ("username", "rev"),
            ("password", PASSWORD),
        ])
        .send()
        .await
        .expect("request");
    assert_eq!(location(&r), "/");
    let id = (r.headers().get_all("set-cookie").iter())
        .filter_map(|v| v.to_str().ok())
        .find_map(|c| c.strip_prefix("countersign_session="))
        .and_then(|c| c.split(';').next())
        .expect("a session cookie")
        .to_owned();
    assert!(
        id.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_'),
        "{id}"
    );
    let table = sessions_table(&app);
    let rows = format!("select count(*) from {table}");
    assert_eq!(app.count(&rows).await, 1, "the signed-in session's row");
    let by_id = format!("select count(*) from {table} where id = '{id}'");
    assert_eq!(app.count(&by_id).await, 0, "no row is keyed by the cookie");
    let r = browser.get("/").await;
    assert_eq!(r.status(), StatusCode::OK, "the cookie signs in");
    let html = r.text().await.expect("html");
    assert!(html.contains("rev"), "as rev");
}

async fn a_password_reset_signs_the_account_out_everywhere(backend: &str) {
    let app = TestApp::spawn(backend).await;
    app.user("rev", Role::Reviewer).await;
    app.user("other", Role::Reviewer).await;
    let (laptop, phone) = (
        signed_in(&app, "rev", PASSWORD).await,
        signed_in(&app, "rev", PASSWORD).await,
    );
    let bystander = signed_in(&app, "other", PASSWORD).await;
    let new_password = "a brand new passphrase";
    app.services
        .reset_password(&Principal::Operator, "rev", new_password.into())
        .await
        .expect("reset");
    assert_eq!(location(&laptop.get("/").await), "/login");
    assert_eq!(location(&phone.get("/").await), "/login");
    assert_eq!(bystander.get("/").await.status(), StatusCode::OK);
    assert_eq!(ended(&app, "rev").await, ["signed_out_everywhere"; 2]);
    let resets = app
        .count("select count(*) from audit_events where action = 'user.password_reset'")
        .await;
    assert_eq!(resets, 1);
    assert_eq!(
        location(&app.browser().login("rev", PASSWORD).await),
        REFUSED
    );
    signed_in(&app, "rev", new_password).await;
}

/// The stored expiry of the only session, as text.
async fn stored_expiry(app: &TestApp) -> String {
    let sql = format!(
        "select cast(expiry_date as text) from {}",
        sessions_table(app)
    );
    one_text(app, &sql).await
}

/// The one text value `sql` reads.
async fn one_text(app: &TestApp, sql: &str) -> String {
    if app.db_url.starts_with("sqlite:") {
        let mut c = <sqlx::SqliteConnection as sqlx::Connection>::connect(&app.db_url)
            .await
            .expect("connect");
        sqlx::query_scalar(sql)
            .fetch_one(&mut c)
            .await
            .expect("a value")
    } else {
        let mut c = <sqlx::PgConnection as sqlx::Connection>::connect(&app.db_url)
            .await
            .expect("connect");
        sqlx::query_scalar(sql)
            .fetch_one(&mut c)
            .await
            .expect("a value")
    }
}

/// Counts every write of a session row from now on ([`session_writes`]).
async fn count_session_writes(app: &TestApp) {
    let table = sessions_table(app);
    app.exec("create table session_writes (n integer)").await;
    let statements: Vec<String> = if app.db_url.starts_with("sqlite:") {
        ["insert", "update"]
            .iter()
            .map(|on| {
                format!(
                    "create trigger count_{on} after {on} on {table} \
                     begin insert into session_writes values (1); end"
                )
            })
            .collect()
    } else {
        vec![
            "create function count_session_write() returns trigger language plpgsql as $$ \
             begin insert into session_writes values (1); return null; end $$"
                .into(),
            format!(
                "create trigger count_writes after insert or update on {table} \
                 for each row execute function count_session_write()"
            ),
        ]
    };
    for sql in statements {
        app.exec(&sql).await;
    }
}

async fn session_writes(app: &TestApp) -> String {
    one_text(app, "select cast(count(*) as text) from session_writes").await
}

/// A request that changes a session writes it once. The pages save it themselves (so that a
/// store that fails is answered with words); the session layer's save of the same record after
/// it writes nothing.
async fn a_changed_session_is_written_once(backend: &str) {
    let app = TestApp::spawn_with_policy(backend, crate::policy_texts::BEFORE).await;
    app.user("rev", Role::Admin).await;
    count_session_writes(&app).await;
    let browser = app.browser();
    assert_eq!(location(&browser.login("rev", PASSWORD).await), "/");
    assert_eq!(session_writes(&app).await, "1", "signing in");
    assert_eq!(browser.get("/").await.status(), StatusCode::OK);
    assert_eq!(
        session_writes(&app).await,
        "1",
        "a page read within the minute"
    );
    // Past the minute, a read notes the session's use: one write.
    app.clock.advance(time::Duration::minutes(2));
    assert_eq!(browser.get("/").await.status(), StatusCode::OK);
    assert_eq!(session_writes(&app).await, "2", "a use noted");
    // A form that keeps lines for the next page changes the session: one write; the page
    // that shows them takes them out of it: one more; the page again: none.
    let csrf = browser.csrf("/policy").await;
    let invalid = "[tools.\"crm.*\"]\nrisk = \"extreme\"\n";
    let r = browser
        .post_form(
            "/fn/propose_policy",
            "/policy",
            &[
                ("csrf_token", &csrf),
                ("text", invalid),
                ("reason", "try"),
                ("since", "7d"),
            ],
        )
        .await;
    let to = location(&r);
    assert_eq!(to, "/policy?error=policy_invalid#propose");
    assert_eq!(session_writes(&app).await, "3", "lines kept");
    let page = browser.get(&to).await.text().await.expect("page");
    assert!(
        page.contains("data-testid=\"policy-errors\""),
        "the lines shown"
    );
    assert_eq!(session_writes(&app).await, "4", "lines taken");
    let page = browser.get(&to).await.text().await.expect("page");
    assert!(!page.contains("data-testid=\"policy-errors\""), "once");
    assert_eq!(session_writes(&app).await, "4", "nothing to take");
    // Signing out deletes the session: it writes none.
    let csrf = browser.csrf("/").await;
    let before = session_writes(&app).await;
    let r = browser
        .post_form("/fn/logout", "/", &[("csrf_token", &csrf)])
        .await;
    assert_eq!(location(&r), "/login?notice=signed_out");
    assert_eq!(location(&browser.get("/").await), "/login", "signed out");
    assert_eq!(
        session_writes(&app).await,
        before,
        "signing out deletes, never writes"
    );
}

async fn idle_sessions_end_and_activity_keeps_them_alive(backend: &str) {
    let app = TestApp::spawn(backend).await;
    app.user("rev", Role::Reviewer).await;
    let browser = signed_in(&app, "rev", PASSWORD).await;
    let first = stored_expiry(&app).await;
    // The session's cookie in an answer, if it carries one.
    let cookie = |r: &reqwest::Response| {
        (r.headers().get_all("set-cookie").iter())
            .filter_map(|v| v.to_str().ok())
            .find(|v| v.starts_with("countersign_session="))
            .map(str::to_owned)
    };
    // Used within the minute: nothing is written, and no cookie is sent.
    let r = browser.get("/").await;
    assert_eq!(r.status(), StatusCode::OK);
    assert_eq!(cookie(&r), None);
    assert_eq!(stored_expiry(&app).await, first);
    // Used every 20 minutes for 40 (past the 30-minute idle limit): it lives, each use saved
    // it again, moving its stored expiry on, and sent the browser its cookie again, good for
    // the idle limit from then (the browser's copy would otherwise lapse 30 minutes after
    // sign-in).
    for _ in 0..2 {
        app.clock.advance(time::Duration::minutes(20));
        let r = browser.get("/").await;
        assert_eq!(r.status(), StatusCode::OK);
        let sent = cookie(&r).expect("the session's cookie sent again");
        assert!(sent.contains("Max-Age=1800"), "{sent}");
        assert!(
            sent.contains("HttpOnly") && sent.contains("SameSite=Lax"),
            "{sent}"
        );
    }
    assert_ne!(stored_expiry(&app).await, first);
    app.clock.advance(time::Duration::minutes(31));
    assert_eq!(location(&browser.get("/").await), "/login");
    assert_eq!(ended(&app, "rev").await, ["idle"]);
}

async fn sessions_end_after_the_absolute_limit_however_active(backend: &str) {
    let app = TestApp::spawn_configured(backend, |s| {
        s.sessions.lifetime = time::Duration::hours(2);
    })
    .await;
    app.user("rev", Role::Reviewer).await;
    let browser = signed_in(&app, "rev", PASSWORD).await;
    for _ in 0..5 {
        app.clock.advance(time::Duration::minutes(20));
        assert_eq!(browser.get("/").await.status(), StatusCode::OK);
    }
    app.clock.advance(time::Duration::minutes(20));
    assert_eq!(location(&browser.get("/").await), "/login");
    assert_eq!(ended(&app, "rev").await, ["lifetime"]);
}

/// Makes the sessions table refuse every write (`refuse`) or take them again, as a full disk
/// does: PostgreSQL's own `disk_full` error, SQLite's words for it.
async fn sessions_refuse_writes(app: &TestApp, refuse: bool) {
    let table = sessions_table(app);
    let statements: Vec<String> = match (app.db_url.starts_with("sqlite:"), refuse) {
        (true, true) => ["insert", "update"]
            .iter()
            .map(|on| {
                format!(
                    "create trigger refuse_{on} before {on} on {table} \
                     begin select raise(abort, 'database or disk is full'); end"
                )
            })
            .collect(),
        (true, false) => vec![
            "drop trigger refuse_insert".into(),
            "drop trigger refuse_update".into(),
        ],
        (false, true) => vec![
            "create function refuse_writes() returns trigger language plpgsql as $$ begin \
             raise exception 'could not extend file' using errcode = 'disk_full'; end $$"
                .into(),
            format!(
                "create trigger refuse_writes before insert or update on {table} \
                 for each row execute function refuse_writes()"
            ),
        ],
        (false, false) => vec![format!("drop trigger refuse_writes on {table}")],
    };
    for sql in statements {
        app.exec(&sql).await;
    }
}

/// A session store that fails is never answered `500`. While it cannot take a write (its
/// database's disk full), signing in is answered `503 unavailable` with words, and a
/// signed-in person's pages go on being served while their use cannot be noted; once writes
/// are taken again, sign-in works and a use is noted again, moving the idle limit on. While
/// it cannot even be read, pages and their event streams answer `503`.
async fn a_session_store_that_fails_is_answered_503_never_500(backend: &str) {
    let app = TestApp::spawn(backend).await;
    app.user("rev", Role::Reviewer).await;
    app.user("rev2", Role::Reviewer).await;
    let browser = signed_in(&app, "rev", PASSWORD).await;
    sessions_refuse_writes(&app, true).await;

    let late = app.browser();
    let r = late.login("rev2", PASSWORD).await;
    assert_eq!(r.status(), StatusCode::SERVICE_UNAVAILABLE);
    let page = r.text().await.expect("a page");
    assert!(page.contains("the database cannot take this now"), "{page}");
    assert!(
        page.contains("<a href=\"/login\">"),
        "back to the form's page: {page}"
    );
    assert_eq!(location(&late.get("/").await), "/login", "not signed in");

    // Past the minute, each page read would note the session's use: it cannot, and the page
    // is served all the same.
    let first = stored_expiry(&app).await;
    for _ in 0..2 {
        app.clock.advance(time::Duration::minutes(2));
        let r = browser.get("/").await;
        assert_eq!(r.status(), StatusCode::OK);
        let page = r.text().await.expect("page");
        assert!(page.contains("data-testid=\"logout\""), "still signed in");
    }
    assert_eq!(stored_expiry(&app).await, first, "nothing was written");

    sessions_refuse_writes(&app, false).await;
    // Four minutes after sign-in: this read notes the use, so 29 minutes on the session is
    // still within its 30-minute idle limit.
    assert_eq!(browser.get("/").await.status(), StatusCode::OK);
    assert_ne!(stored_expiry(&app).await, first, "the use was noted");
    app.clock.advance(time::Duration::minutes(29));
    assert_eq!(browser.get("/").await.status(), StatusCode::OK);
    assert_eq!(location(&late.login("rev2", PASSWORD).await), "/");

    // A session that cannot even be read: pages and their streams answer 503.
    let (aside, back) = match app.db_url.starts_with("sqlite:") {
        true => (
            "alter table tower_sessions rename to sessions_aside",
            "alter table sessions_aside rename to tower_sessions",
        ),
        false => (
            "alter table tower_sessions.session rename to session_aside",
            "alter table tower_sessions.session_aside rename to session",
        ),
    };
    app.exec(aside).await;
    let one = format!("/events/proposals/{}", uuid::Uuid::new_v4());
    for path in ["/", "/events/desk", &one] {
        let r = browser.get(path).await;
        assert_eq!(r.status(), StatusCode::SERVICE_UNAVAILABLE, "{path}");
    }
    app.exec(back).await;
    assert_eq!(browser.get("/events/desk").await.status(), StatusCode::OK);
}

/// A plain HTML form whose change fails (the trail cannot take its row: PostgreSQL's disk
/// full, which is `unavailable`; on SQLite a refusal the server cannot place, which is its own
/// failure) sends the browser back to the page it came from, its other parameters kept, with
/// words the page shows; the proposal is unchanged. (`leptos_axum` alone sent it back with the
/// error in parameters no page reads: the person was told nothing.)
async fn a_form_whose_change_fails_sends_its_browser_back_with_words(backend: &str) {
    let app = TestApp::spawn(backend).await;
    app.user("rev", Role::Reviewer).await;
    let agent = app.agent_token("a1").await;
    let id = app.propose_ok(&agent, "a1").await;
    let browser = signed_in(&app, "rev", PASSWORD).await;
    let page = format!("/proposals/{id}");
    let html = browser.page(&page).await;
    let confirm = crate::common::browser::confirm_name(&html).unwrap_or_default();
    let csrf = browser.csrf(&page).await;
    let sqlite = app.db_url.starts_with("sqlite:");
    let refuse = match sqlite {
        true => "create trigger refuse before insert on audit_events \
                 begin select raise(abort, 'refused by the test'); end"
            .to_owned(),
        false => {
            app.exec(
                "create function refuse() returns trigger language plpgsql as $$ begin \
                 raise exception 'could not extend file' using errcode = 'disk_full'; end $$",
            )
            .await;
            "create trigger refuse before insert on audit_events \
             for each row execute function refuse()"
                .to_owned()
        }
    };
    app.exec(&refuse).await;
    let from = format!("{page}?reveal=1&error=csrf");
    let form = [
        ("csrf_token", csrf.as_str()),
        ("id", id.as_str()),
        ("verdict", "approved"),
        ("confirm", confirm.as_str()),
    ];
    let r = browser.post_form("/fn/decide_proposal", &from, &form).await;
    let (code, words) = match sqlite {
        true => ("server_failed", "Something went wrong on the server"),
        false => ("unavailable", "The database cannot take this now"),
    };
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    assert_eq!(location(&r), format!("{page}?reveal=1&error={code}"));
    app.exec(match sqlite {
        true => "drop trigger refuse",
        false => "drop trigger refuse on audit_events",
    })
    .await;
    let shown = crate::common::browser::text_of(&browser.page(&location(&r)).await);
    assert!(shown.contains(words), "{shown}");
    let (_, polled) = app.poll(&agent, &id).await;
    assert_eq!(polled["proposal"]["status"], "pending");
}

/// Reads what the server sends until it closes the connection; panics if it does not close
/// within `bound`.
async fn read_until_closed(stream: &mut TcpStream, bound: Duration) -> String {
    let mut answer = Vec::new();
    let read = tokio::time::timeout(bound, stream.read_to_end(&mut answer)).await;
    assert!(
        read.is_ok(),
        "the server kept the connection open past {bound:?}"
    );
    String::from_utf8_lossy(&answer).into_owned()
}

fn host_port(app: &TestApp) -> String {
    app.base.trim_start_matches("http://").to_owned()
}

async fn a_client_that_never_finishes_its_headers_is_disconnected(backend: &str) {
    let app = TestApp::spawn_configured(backend, |s| {
        s.limits.header_timeout = Duration::from_millis(500);
    })
    .await;
    let mut slow = TcpStream::connect(host_port(&app)).await.expect("connect");
    slow.write_all(b"GET /login HTTP/1.1\r\nHost: countersign\r\n")
        .await
        .expect("write");
    let started = std::time::Instant::now();
    let answer = read_until_closed(&mut slow, Duration::from_secs(10)).await;
    assert!(!answer.contains(" 200 "), "{answer}");
    assert!(started.elapsed() >= Duration::from_millis(400));
}

async fn a_body_that_never_arrives_does_not_hold_the_connection(backend: &str) {
    let app = TestApp::spawn_configured(backend, |s| {
        s.limits.body_timeout = Duration::from_millis(500);
    })
    .await;
    let token = app.agent_token("a1").await;
    let mut slow = TcpStream::connect(host_port(&app)).await.expect("connect");
    let head = format!(
        "POST /api/v1/proposals HTTP/1.1\r\nHost: countersign\r\nAuthorization: Bearer {token}\r\n\
         Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n{{\"proposal_id\":"
    );
    slow.write_all(head.as_bytes()).await.expect("write");
    let answer = read_until_closed(&mut slow, Duration::from_secs(10)).await;
    assert!(answer.starts_with("HTTP/1.1 4"), "{answer}");
    assert_eq!(
        app.count("select count(*) from proposals").await,
        0,
        "nothing was submitted"
    );
}

async fn the_connection_cap_holds_extra_clients_until_one_leaves(backend: &str) {
    let app = TestApp::spawn_configured(backend, |s| s.limits.max_connections = 2).await;
    let first = TcpStream::connect(host_port(&app)).await.expect("connect");
    let _second = TcpStream::connect(host_port(&app)).await.expect("connect");
    let mut third = TcpStream::connect(host_port(&app)).await.expect("connect");
    third
        .write_all(b"GET /healthz HTTP/1.1\r\nHost: countersign\r\nConnection: close\r\n\r\n")
        .await
        .expect("write");
    let mut byte = [0u8; 1];
    let waited = tokio::time::timeout(Duration::from_millis(300), third.read(&mut byte)).await;
    assert!(
        waited.is_err(),
        "a third connection is not served while two are open"
    );
    drop(first);
    let answer = read_until_closed(&mut third, Duration::from_secs(10)).await;
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
}

/// Shutdown stops accepting and lets the request in flight finish; `serve` returns after it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_answers_the_request_in_flight_then_stops() {
    use std::sync::Arc;
    use tokio::sync::{Notify, oneshot};

    let (entered, release) = (Arc::new(Notify::new()), Arc::new(Notify::new()));
    let slow = {
        let (entered, release) = (entered.clone(), release.clone());
        move || async move {
            entered.notify_one();
            release.notified().await;
            "done"
        }
    };
    let router = axum::Router::new().route("/slow", axum::routing::get(slow));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    let (stop, stopped) = oneshot::channel::<()>();
    let limits = countersign::config::ConnectionLimits::default();
    let mut server = tokio::spawn(countersign::serve::serve(listener, router, limits, async {
        let _ = stopped.await;
    }));
    let request = tokio::spawn(reqwest::get(format!("http://{addr}/slow")));
    entered.notified().await;
    stop.send(()).expect("stop");
    let early = tokio::time::timeout(Duration::from_millis(200), &mut server).await;
    assert!(early.is_err(), "serve waits for the request in flight");
    release.notify_one();
    let answer = request.await.expect("join").expect("answered");
    assert_eq!(answer.status(), StatusCode::OK);
    assert_eq!(answer.text().await.expect("body"), "done");
    tokio::time::timeout(Duration::from_secs(5), server)
        .await
        .expect("serve returns")
        .expect("join")
        .expect("served");
    assert!(
        TcpStream::connect(addr).await.is_err(),
        "no longer listening"
    );
}

/// A request that never ends (an event stream whose client stays) does not hold a shutdown
/// past the drain limit: `serve` returns, and the connection is cut.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_cuts_what_is_still_open_at_the_drain_limit() {
    use tokio::sync::oneshot;

    let endless = || async {
        let forever = futures_util::stream::pending::<Result<axum::body::Bytes, std::io::Error>>();
        axum::body::Body::from_stream(forever)
    };
    let router = axum::Router::new().route("/stream", axum::routing::get(endless));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    let (stop, stopped) = oneshot::channel::<()>();
    let limits = countersign::config::ConnectionLimits {
        drain_limit: Duration::from_millis(300),
        ..Default::default()
    };
    let server = tokio::spawn(countersign::serve::serve(listener, router, limits, async {
        let _ = stopped.await;
    }));
    let answer = reqwest::get(format!("http://{addr}/stream"))
        .await
        .expect("headers");
    assert_eq!(answer.status(), StatusCode::OK);
    stop.send(()).expect("stop");
    tokio::time::timeout(Duration::from_secs(10), server)
        .await
        .expect("serve returns at the drain limit")
        .expect("join")
        .expect("served");
}
