//! PostgreSQL least privilege, end to end: the owner migrates and grants a serving role
//! (`countersign migrate --grant-to`); the real server runs as that role and writes (a token, a
//! proposal, the trail, its checkpoints) without running any DDL; and PostgreSQL refuses that
//! role every way of getting rid of the trail's guard — delete, update, truncate, dropping or
//! disabling the triggers — and any change to the schema. Before the owner has migrated, the
//! role is told to ask the owner.
//!
//! Needs a PostgreSQL superuser at `COUNTERSIGN_TEST_PG_URL` (default
//! `postgres://postgres@127.0.0.1:5432`) that lets the created role log in without a password
//! (trust authentication, as in development and CI).

mod common;

use sqlx::{Connection, PgConnection};
use uuid::Uuid;

/// A database and a role made for this test, dropped at the end whatever happens.
struct Scratch {
    base: String,
    database: String,
    role: String,
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let statements = [
            format!("drop database if exists {} with (force)", self.database),
            format!("drop role if exists {}", self.role),
        ];
        let base = self.base.clone();
        // Drop runs inside the test's runtime: clean up on a thread with a runtime of its own.
        let cleanup = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("runtime");
            runtime.block_on(async {
                for sql in &statements {
                    let _ = try_admin(&base, sql).await;
                }
            });
        });
        let _ = cleanup.join();
    }
}

async fn try_admin(base: &str, sql: &str) -> Result<(), sqlx::Error> {
    let mut c = PgConnection::connect(&format!("{base}/postgres")).await?;
    sqlx::raw_sql(sql).execute(&mut c).await.map(|_| ())
}

/// Runs `sql` as the superuser, on the server's `postgres` database.
async fn admin(base: &str, sql: &str) {
    try_admin(base, sql)
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"));
}

/// `url` (`postgres://[user@]host…`) with `user` in place of its user.
fn as_user(url: &str, user: &str) -> String {
    let (scheme, rest) = url.split_once("://").expect("a URL");
    let host = rest.rsplit_once('@').map_or(rest, |(_, host)| host);
    format!("{scheme}://{user}@{host}")
}

/// A `countersign` command expected to fail; its stderr.
fn run_err(db: &str, args: &[&str]) -> String {
    let out = common::countersign(db).args(args).output().expect("run");
    assert!(!out.status.success(), "countersign {args:?} succeeded");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Submits a proposal through the real server's API.
async fn submit(base: &str, token: &str) {
    let response = reqwest::Client::new()
        .post(format!("{base}/api/v1/proposals"))
        .bearer_auth(token)
        .json(&common::proposal_body("agent-a"))
        .send()
        .await
        .expect("submit");
    assert_eq!(
        response.status(),
        201,
        "{}",
        response.text().await.unwrap_or_default()
    );
}

/// What the serving role must never be able to do.
const REFUSED: &[&str] = &[
    "delete from audit_events",
    "update audit_events set actor = 'mallory'",
    "truncate audit_events",
    "drop trigger audit_events_no_update on audit_events",
    "drop trigger audit_events_no_truncate on audit_events",
    "alter table audit_events disable trigger all",
    "alter table audit_events disable trigger user",
    "drop table audit_events",
    "delete from audit_checkpoints",
    "create table sneaky (id integer)",
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_serving_role_writes_the_trail_but_cannot_remove_its_guard() {
    let base = common::pg_base();
    let id = Uuid::new_v4().simple();
    let scratch = Scratch {
        base: base.clone(),
        database: format!("cs_test_{id}"),
        role: format!("cs_test_app_{id}"),
    };
    let role = scratch.role.as_str();
    let owner_url = format!("{base}/{}", scratch.database);
    let role_url = format!("{}/{}", as_user(&base, role), scratch.database);
    admin(&base, &format!("create role {role} login")).await;
    admin(&base, &format!("create database {}", scratch.database)).await;

    // Before the owner migrates, the role may not, and is told who may.
    let err = run_err(&role_url, &["audit", "verify"]);
    assert!(
        err.contains("not current") && err.contains("countersign migrate") && err.contains("owner"),
        "{err}"
    );

    common::run_ok(&owner_url, &["migrate", "--grant-to", role], None);
    // Granting again (after an upgrade) is harmless; granting to the owner is refused.
    common::run_ok(&owner_url, &["migrate", "--grant-to", role], None);
    let err = run_err(&owner_url, &["migrate", "--grant-to", "postgres"]);
    assert!(err.contains("superuser") || err.contains("owns"), "{err}");

    // The real server, as the role: starts without DDL, and writes.
    let token = common::run_ok(&role_url, &["token", "create", "--agent", "agent-a"], None);
    let dir = tempfile::tempdir().expect("dir");
    let mut served = common::serve(&role_url, &dir.path().join("audit.key"), "info");
    submit(&served.base, token.trim()).await;
    submit(&served.base, token.trim()).await;
    served.child.kill().expect("stop the server");
    served.child.wait().expect("server stopped");
    let out = common::run_ok(&role_url, &["audit", "verify"], None);
    assert!(out.starts_with("ok: "), "{out}");
    let mut c = PgConnection::connect(&role_url)
        .await
        .expect("connect as the role");
    let (events,): (i64,) = sqlx::query_as("select count(*) from audit_events")
        .fetch_one(&mut c)
        .await
        .expect("count");
    // The bootstrap account, the token and two submissions at least.
    assert!(events >= 4, "{events} events");

    for sql in REFUSED {
        match sqlx::raw_sql(sql).execute(&mut c).await {
            Err(sqlx::Error::Database(e)) => {
                assert_eq!(e.code().as_deref(), Some("42501"), "{sql}: {e}")
            }
            other => {
                panic!("`{sql}` as the serving role: expected permission denied, got {other:?}")
            }
        }
    }
    // Every table of the app is granted (a table added without its grant shows here first).
    let ungranted: Vec<(String,)> = sqlx::query_as(
        "select c.relname::text from pg_class c join pg_namespace n on n.oid = c.relnamespace \
         where n.nspname = 'public' and c.relkind = 'r' and not has_table_privilege(c.oid, 'select')",
    )
    .fetch_all(&mut c)
    .await
    .expect("tables");
    assert!(
        ungranted.is_empty(),
        "not granted to the serving role: {ungranted:?}"
    );
    c.close().await.expect("close");
    drop(scratch);
}
