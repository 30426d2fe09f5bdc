//! The hash-chained audit trail, on both backends: a 10,000-event chain verifies; on 10,000-event
//! chains every kind of tampering is detected with the first bad seq named (by `countersign audit verify`, the
//! operator's tool); signed and kept checkpoints catch a recomputed chain and a cut tail; an
//! export bundle verifies offline and fails after a one-byte edit; two instances writing to one
//! PostgreSQL at once leave one valid chain; verification reads one snapshot while writers
//! append; a facet column that is not the copy of its `details` key is named.

mod common;

use countersign::domain::principal::Principal;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use assert_cmd::Command;
use countersign::audit::chain::ChainError;
use countersign::audit::checkpoint::CheckpointKey;
use countersign::audit::{Actor, AuditEvent, ProposalInputRejected};
use countersign::domain::policy::model::Policy;
use countersign::service::{Services, Trust, VerifyError, verify_bundle};
use countersign::storage;

struct Db {
    services: Services,
    url: String,
    _dir: Option<tempfile::TempDir>,
}

async fn db(backend: &str) -> Db {
    let (services, url, dir) = common::fresh_services(backend).await;
    Db {
        services,
        url,
        _dir: dir,
    }
}

fn event(n: usize) -> AuditEvent {
    AuditEvent::ProposalInputRejected(ProposalInputRejected {
        agent: format!("agent-{}", n % 7),
        fields: vec![format!("parameters.f{n}")],
    })
}

/// Appends `n` events in batches, as concurrent requests would.
async fn fill(services: &Services, n: usize) {
    let now = services.now();
    for chunk in (0..n).collect::<Vec<_>>().chunks(1_000) {
        let events = chunk
            .iter()
            .map(|i| (now, Actor::agent("agent-a"), event(*i)))
            .collect();
        services.store().record(events).await.expect("record");
    }
}

/// Runs one SQL statement as someone with write access to the database (triggers off where
/// the statement needs them off: a tamperer can drop them).
async fn tamper(db: &Db, sql: &str) {
    if db.url.starts_with("sqlite:") {
        let mut c = <sqlx::SqliteConnection as sqlx::Connection>::connect(&db.url)
            .await
            .expect("connect");
        for t in [
            "audit_events_no_update",
            "audit_events_no_delete",
            "audit_checkpoints_no_update",
            "audit_checkpoints_no_delete",
        ] {
            sqlx::query(&format!("drop trigger if exists {t}"))
                .execute(&mut c)
                .await
                .expect("drop trigger");
        }
        sqlx::raw_sql(sql).execute(&mut c).await.expect("tamper");
    } else {
        let mut c = <sqlx::PgConnection as sqlx::Connection>::connect(&db.url)
            .await
            .expect("connect");
        sqlx::raw_sql(
            "alter table audit_events disable trigger user; \
             alter table audit_checkpoints disable trigger user",
        )
        .execute(&mut c)
        .await
        .expect("disable triggers");
        sqlx::raw_sql(sql).execute(&mut c).await.expect("tamper");
    }
}

fn cli(db_url: &str) -> Command {
    let mut cmd = Command::cargo_bin("countersign").expect("binary");
    cmd.env("COUNTERSIGN_DATABASE_URL", db_url)
        .env_remove("RUST_LOG");
    cmd
}

/// `countersign audit verify`: `Ok(stdout)` on success, `Err(stderr)` otherwise.
fn verify_cli(db_url: &str, extra: &[&str]) -> Result<String, String> {
    let out = cli(db_url)
        .args(["audit", "verify"])
        .args(extra)
        .output()
        .expect("run");
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).into_owned())
    }
}

async fn first_bad(db: &Db) -> i64 {
    match db.services.verify_trail(&Principal::Operator, None).await {
        Err(VerifyError::Chain(e)) => e.seq(),
        Err(VerifyError::HeadMismatch(seq)) => seq,
        other => panic!("expected a broken chain, got {other:?}"),
    }
}

async fn a_long_chain_verifies_and_every_edit_is_named(backend: &str) {
    let db = db(backend).await;
    fill(&db.services, 10_000).await;
    let ok = db
        .services
        .verify_trail(&Principal::Operator, None)
        .await
        .expect("verifies");
    assert_eq!((ok.count, ok.head.seq), (10_000, 10_000));
    let out = verify_cli(&db.url, &[]).expect("cli verifies");
    assert!(out.contains("10000 events"), "{out}");

    // One changed byte in one row.
    tamper(
        &db,
        "update audit_events set actor = 'agent-b' where seq = 4321",
    )
    .await;
    assert_eq!(first_bad(&db).await, 4321);
    let err = verify_cli(&db.url, &[]).expect_err("cli fails");
    assert!(err.contains("seq 4321"), "{err}");
}

async fn deleted_reordered_and_inserted_rows_are_named(backend: &str) {
    let db = db(backend).await;
    fill(&db.services, 10_000).await;
    tamper(&db, "delete from audit_events where seq = 6120").await;
    assert_eq!(first_bad(&db).await, 6120);

    let db = self::db(backend).await;
    fill(&db.services, 10_000).await;
    tamper(
        &db,
        "update audit_events set seq = -1 where seq = 7050; \
         update audit_events set seq = 7050 where seq = 7051; \
         update audit_events set seq = 7051 where seq = -1",
    )
    .await;
    assert_eq!(first_bad(&db).await, 7050);

    let db = self::db(backend).await;
    fill(&db.services, 10_000).await;
    // An inserted row: row 10 copied in as a new last row (the head record still says 10,000).
    let new_id = if backend == "sqlite" {
        "randomblob(16)"
    } else {
        "gen_random_uuid()"
    };
    tamper(
        &db,
        &format!(
            "insert into audit_events (seq, id, at, actor_kind, actor, action, subject_type, \
             subject_id, before_status, after_status, details, hash) \
             select 10001, {new_id}, at, actor_kind, actor, action, subject_type, subject_id, \
             before_status, after_status, details, hash from audit_events where seq = 10"
        ),
    )
    .await;
    assert_eq!(first_bad(&db).await, 10_001);
}

async fn signed_and_kept_checkpoints_catch_rewrites_and_cut_tails(backend: &str) {
    let db = db(backend).await;
    let dir = tempfile::tempdir().expect("dir");
    let key = CheckpointKey::load_or_create(&dir.path().join("audit.key")).expect("key");
    fill(&db.services, 9_950).await;
    let signed = db
        .services
        .sign_checkpoint(&Principal::Operator, &key)
        .await
        .expect("sign")
        .expect("new");
    assert_eq!(signed.seq, 9_950);
    fill(&db.services, 50).await;
    // The operator keeps the head printed by `countersign audit checkpoint`.
    let out = cli(&db.url)
        .args(["audit", "checkpoint", "--audit-key"])
        .arg(dir.path().join("audit.key"))
        .output()
        .expect("run");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let kept_path = dir.path().join("kept.json");
    std::fs::write(&kept_path, &out.stdout).expect("keep");
    let kept = kept_path.to_str().expect("utf-8");
    assert!(verify_cli(&db.url, &["--checkpoint", kept]).is_ok());
    let public = key.public_key();
    let other = CheckpointKey::load_or_create(&dir.path().join("other.key")).expect("key");
    // The server's key vouches, also listed beside an earlier one; an unrelated key alone not.
    assert!(verify_cli(&db.url, &["--public-key", &public]).is_ok());
    let both = format!("{},{public}", other.public_key());
    assert!(verify_cli(&db.url, &["--public-key", &both]).is_ok());
    let err = verify_cli(&db.url, &["--public-key", &other.public_key()]).expect_err("other");
    assert!(err.contains("not trusted"), "{err}");
    // `audit checkpoint` with a key that is not the last signer's (a wrong path) refuses.
    let wrong = cli(&db.url)
        .args(["audit", "checkpoint", "--audit-key"])
        .arg(dir.path().join("wrong.key"))
        .output()
        .expect("run");
    assert!(!wrong.status.success());
    let said = String::from_utf8_lossy(&wrong.stderr);
    assert!(said.contains("not the key that signed"), "{said}");

    // Rewrite row 7 and recompute every hash after it, as someone who read the code would.
    let rows = recompute_from(&db, 7).await;
    assert_eq!(rows, 9_994);
    let err = verify_cli(&db.url, &[]).expect_err("signed checkpoint catches the rewrite");
    assert!(err.contains("seq 9950"), "{err}");

    // The rewriter also replaces the server's checkpoints with one signed by a key of its own.
    let mallory = CheckpointKey::load_or_create(&dir.path().join("mallory.key")).expect("key");
    tamper(&db, "delete from audit_checkpoints").await;
    let forged = db
        .services
        .sign_checkpoint(&Principal::Operator, &mallory)
        .await
        .expect("sign")
        .expect("new");
    assert_eq!(forged.seq, 10_000);
    assert!(
        verify_cli(&db.url, &[]).is_ok(),
        "trusting no key, any signature that holds vouches"
    );
    // The server's public key, kept outside the database, refuses the forged checkpoint; so
    // does the server itself, which knows its key, and so does a kept checkpoint's key.
    let err = verify_cli(&db.url, &["--public-key", &public]).expect_err("forged checkpoint");
    assert!(
        err.contains("seq 10000") && err.contains("not trusted"),
        "{err}"
    );
    // As the server trusts: its key, no checkpoint required.
    let server = db.services.clone().with_checkpoint_trust(Trust {
        keys: vec![public.clone()],
        require_one: false,
    });
    match server.verify_trail(&Principal::Operator, None).await {
        Err(VerifyError::UntrustedCheckpoint(10_000)) => {}
        other => panic!("expected the forged checkpoint named, got {other:?}"),
    }
    let err = verify_cli(&db.url, &["--checkpoint", kept]).expect_err("kept checkpoint's key");
    assert!(err.contains("seq 10000"), "{err}");
    let err = verify_cli(&db.url, &["--public-key", "not-a-key"]).expect_err("bad key");
    assert!(err.contains("64 hex characters"), "{err}");
    // Or the rewriter leaves no checkpoint at all: nothing signed with the trusted key vouches.
    tamper(&db, "delete from audit_checkpoints").await;
    let err = verify_cli(&db.url, &["--public-key", &public]).expect_err("no checkpoint");
    assert!(
        err.contains("no checkpoint signed with a trusted key"),
        "{err}"
    );
    // The server does not require one (a new trail has none yet); what it has must be its own.
    assert!(
        server
            .verify_trail(&Principal::Operator, None)
            .await
            .is_ok()
    );

    // A cut tail: the last 20 rows deleted and the head record moved back.
    let db = self::db(backend).await;
    fill(&db.services, 10_000).await;
    let key2 = CheckpointKey::load_or_create(&dir.path().join("audit2.key")).expect("key");
    let cp = db
        .services
        .sign_checkpoint(&Principal::Operator, &key2)
        .await
        .expect("sign")
        .expect("new");
    std::fs::write(&kept_path, serde_json::to_string(&cp).expect("json")).expect("keep");
    let head_9980: String = hash_at(&db, 9_980).await;
    tamper(
        &db,
        &format!(
            "delete from audit_checkpoints; delete from audit_events where seq > 9980; \
             update audit_chain set seq = 9980, hash = '{head_9980}'"
        ),
    )
    .await;
    assert!(
        verify_cli(&db.url, &[]).is_ok(),
        "without a kept checkpoint it looks whole"
    );
    let err = verify_cli(&db.url, &["--checkpoint", kept]).expect_err("kept checkpoint");
    assert!(
        err.contains("ends at seq 9980") && err.contains("10000"),
        "{err}"
    );
}

async fn hash_at(db: &Db, seq: i64) -> String {
    let mut read = db.services.store().read().await.expect("read");
    storage::audit::hash_at(read.conn(), seq)
        .await
        .expect("hash")
        .expect("row")
}

/// Changes row `seq`'s actor and recomputes the chain from there; returns rows rewritten.
async fn recompute_from(db: &Db, seq: i64) -> usize {
    let mut read = db.services.store().read().await.expect("read");
    let rows = storage::audit_walk::chain_page(read.conn(), 0, 100_000)
        .await
        .expect("rows");
    drop(read);
    let mut prev = rows[(seq - 2) as usize].hash.clone();
    let mut sql = String::new();
    let mut n = 0;
    for stored in rows.into_iter().skip((seq - 1) as usize) {
        let mut row = stored.to_event().expect("details are JSON");
        if row.seq == seq {
            row.actor = "mallory".into();
            sql.push_str(&format!(
                "update audit_events set actor = 'mallory' where seq = {seq};"
            ));
        }
        row.hash = row.link_hash(&prev).expect("canonical");
        prev = row.hash.clone();
        sql.push_str(&format!(
            "update audit_events set hash = '{}' where seq = {};",
            row.hash, row.seq
        ));
        n += 1;
    }
    sql.push_str(&format!("update audit_chain set hash = '{prev}';"));
    tamper(db, &sql).await;
    n
}

async fn an_export_verifies_offline_and_fails_after_one_byte(backend: &str) {
    let db = db(backend).await;
    let dir = tempfile::tempdir().expect("dir");
    let key = CheckpointKey::load_or_create(&dir.path().join("audit.key")).expect("key");
    fill(&db.services, 500).await;
    db.services
        .sign_checkpoint(&Principal::Operator, &key)
        .await
        .expect("sign");
    let out = dir.path().join("bundle");
    let bundle = out.to_str().expect("utf-8");
    common::run_ok(&db.url, &["audit", "export", "--out", bundle], None);
    let (manifest, head) = verify_bundle(&out, None, &Trust::default()).expect("bundle verifies");
    assert_eq!((manifest.count, head.seq), (500, 500));
    assert!(manifest.checkpoint.is_some() && manifest.public_key.is_some());
    // The bundle's checkpoint counts only under the key the verifier trusts.
    verify_bundle(&out, None, &Trust::keys(vec![key.public_key()])).expect("the server's key");
    let other = CheckpointKey::load_or_create(&dir.path().join("other.key")).expect("key");
    assert!(verify_bundle(&out, None, &Trust::keys(vec![other.public_key()])).is_err());
    // Offline: a database URL that does not exist is never opened.
    let ok = cli("postgres://nobody@127.0.0.1:1/none")
        .args(["audit", "verify", "--bundle"])
        .arg(&out)
        .output()
        .expect("run");
    assert!(
        ok.status.success(),
        "{}",
        String::from_utf8_lossy(&ok.stderr)
    );

    let events = out.join("events.jsonl");
    let mut bytes = std::fs::read(&events).expect("read");
    let at = bytes.len() / 2;
    bytes[at] = if bytes[at] == b'a' { b'b' } else { b'a' };
    std::fs::write(&events, bytes).expect("write");
    let bad = cli("postgres://nobody@127.0.0.1:1/none")
        .args(["audit", "verify", "--bundle"])
        .arg(&out)
        .output()
        .expect("run");
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("events.jsonl"));
}

/// A database URL never opened: bundles verify offline.
const OFFLINE: &str = "postgres://nobody@127.0.0.1:1/none";

/// `countersign audit checkpoint --audit-key KEY`, kept in `file` as an operator keeps it; its
/// seq.
fn keep_checkpoint(db: &Db, key: &std::path::Path, file: &std::path::Path) -> i64 {
    let key = key.to_str().expect("utf-8");
    let out = common::run_ok(&db.url, &["audit", "checkpoint", "--audit-key", key], None);
    std::fs::write(file, &out).expect("keep");
    let cp: serde_json::Value = serde_json::from_str(&out).expect("JSON");
    cp["seq"].as_i64().expect("seq")
}

/// A bundle whose tail was cut: with its manifest left as exported, the changed file is
/// named; with the manifest made to match (count, last seq, file hash, its checkpoint
/// dropped) it looks whole on its own, and only a kept checkpoint past its end catches the
/// cut. A kept checkpoint the cut bundle still reaches passes.
async fn a_bundle_with_a_cut_tail_fails_against_a_later_kept_checkpoint(backend: &str) {
    use sha2::Digest;
    let db = db(backend).await;
    let dir = tempfile::tempdir().expect("dir");
    let key = dir.path().join("audit.key");
    let (early, late) = (dir.path().join("early.json"), dir.path().join("late.json"));
    fill(&db.services, 480).await;
    assert_eq!(keep_checkpoint(&db, &key, &early), 480);
    fill(&db.services, 20).await;
    assert_eq!(keep_checkpoint(&db, &key, &late), 500);
    let out = dir.path().join("bundle");
    let bundle = out.to_str().expect("utf-8");
    common::run_ok(&db.url, &["audit", "export", "--out", bundle], None);
    let (early, late) = (
        early.to_str().expect("utf-8"),
        late.to_str().expect("utf-8"),
    );
    let whole = verify_cli(OFFLINE, &["--bundle", bundle, "--checkpoint", late]);
    assert!(
        whole.as_deref().is_ok_and(|s| s.contains("seq 1..500")),
        "{whole:?}"
    );

    // The last 20 rows cut from events.jsonl, the manifest left as it was.
    let events = out.join("events.jsonl");
    let text = std::fs::read_to_string(&events).expect("events");
    let kept_lines: Vec<&str> = text.lines().take(480).collect();
    assert_eq!(text.lines().count(), 500);
    std::fs::write(&events, kept_lines.join("\n") + "\n").expect("cut");
    let err = verify_cli(OFFLINE, &["--bundle", bundle]).expect_err("file changed");
    assert!(err.contains("events.jsonl"), "{err}");

    // The manifest made to match the cut file; its own checkpoint (seq 500) still names the cut.
    let manifest_path = out.join("manifest.json");
    let mut manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&manifest_path).expect("manifest"))
            .expect("JSON");
    assert_eq!(manifest["checkpoint"]["seq"], 500);
    manifest["count"] = 480.into();
    manifest["last_seq"] = 480.into();
    let digest = hex::encode(sha2::Sha256::digest(std::fs::read(&events).expect("read")));
    manifest["files"]["events.jsonl"] = digest.into();
    let write = |m: &serde_json::Value| {
        std::fs::write(
            &manifest_path,
            serde_json::to_string_pretty(m).expect("json"),
        )
        .expect("write manifest")
    };
    write(&manifest);
    let err = verify_cli(OFFLINE, &["--bundle", bundle]).expect_err("manifest checkpoint");
    assert!(err.contains("ends at seq 480"), "{err}");

    // Its checkpoint dropped too: on its own the cut bundle looks whole.
    manifest["checkpoint"] = serde_json::Value::Null;
    write(&manifest);
    let alone = verify_cli(OFFLINE, &["--bundle", bundle]);
    assert!(
        alone.as_deref().is_ok_and(|s| s.contains("seq 1..480")),
        "{alone:?}"
    );
    // A kept checkpoint at a later seq than the bundle holds names the cut ...
    let err = verify_cli(OFFLINE, &["--bundle", bundle, "--checkpoint", late])
        .expect_err("kept checkpoint past the end");
    assert!(
        err.contains("ends at seq 480") && err.contains("covers seq 500"),
        "{err}"
    );
    // ... and the kept checkpoint at the bundle's own end passes.
    let matching = verify_cli(OFFLINE, &["--bundle", bundle, "--checkpoint", early]);
    assert!(
        matching.as_deref().is_ok_and(|s| s.contains("seq 1..480")),
        "{matching:?}"
    );
}

async fn two_instances_on_one_database_write_one_chain(backend: &str) {
    let first = db(backend).await;
    let (store, _) = storage::connect(&first.url).await.expect("second instance");
    let second = Services::new(store, Arc::new(Policy::builtin()));
    let mut writers = Vec::new();
    for services in [first.services.clone(), second.clone()] {
        for _ in 0..8 {
            let services = services.clone();
            writers.push(tokio::spawn(async move {
                for i in 0..25 {
                    let e = (services.now(), Actor::agent("agent-a"), event(i));
                    services.store().record(vec![e]).await.expect("record");
                }
            }));
        }
    }
    for w in writers {
        w.await.expect("writer");
    }
    let ok = first
        .services
        .verify_trail(&Principal::Operator, None)
        .await
        .expect("one valid chain");
    assert_eq!(ok.head.seq, 400);
}

/// Issue 8: two `countersign serve` processes on one PostgreSQL database, each taking
/// proposals and pre-tool-checks from eight agents at once, leave one chain that
/// `audit verify` accepts, holding every answered request.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_servers_on_one_postgres_write_one_chain() {
    let (url, _) = common::fresh_database("postgres");
    common::run_ok(&url, &["migrate"], None);
    let token = common::run_ok(&url, &["token", "create", "--agent", "agent-a"], None);
    let token = token.trim().to_owned();
    let keys = tempfile::tempdir().expect("key dir");
    let servers = [
        common::serve(&url, &keys.path().join("one.key"), "info"),
        common::serve(&url, &keys.path().join("two.key"), "info"),
    ];
    let client = reqwest::Client::new();
    let mut agents = tokio::task::JoinSet::new();
    for (n, server) in servers.iter().enumerate() {
        for i in 0..8 {
            let (client, base, token) = (client.clone(), server.base.clone(), token.clone());
            let checks = (n + i) % 2 == 1;
            agents.spawn(async move {
                let mut answered = Vec::new();
                for _ in 0..30 {
                    let (path, body) = if checks {
                        ("pre-tool-check", common::check_body())
                    } else {
                        ("proposals", common::proposal_body("agent-a"))
                    };
                    let r = client
                        .post(format!("{base}/api/v1/{path}"))
                        .bearer_auth(&token)
                        .json(&body)
                        .send()
                        .await
                        .expect("answered");
                    assert!(r.status().is_success(), "{path}: {}", r.status());
                    let answer: serde_json::Value = r.json().await.expect("JSON");
                    let id = if checks {
                        answer["check_id"].clone()
                    } else {
                        body["proposal_id"].clone()
                    };
                    answered.push(id.as_str().expect("id").to_owned());
                }
                answered
            });
        }
    }
    let mut answered = Vec::new();
    while let Some(ids) = agents.join_next().await {
        answered.extend(ids.expect("agent"));
    }
    for mut server in servers {
        server.child.kill().expect("stop");
        server.child.wait().expect("reaped");
    }
    assert_eq!(answered.len(), 480);
    let listed = answered
        .iter()
        .map(|id| format!("'{id}'"))
        .collect::<Vec<_>>()
        .join(",");
    let subjects = common::count(
        &url,
        &format!(
            "select count(distinct subject_id) from audit_events \
             where action in ('pre_tool_check.decided', 'proposal.submitted') \
             and subject_id in ({listed})"
        ),
    )
    .await;
    assert_eq!(subjects, 480, "an answered request has no event");
    let said = common::run_ok(&url, &["audit", "verify"], None);
    let events = common::count(&url, "select count(*) from audit_events").await;
    assert!(said.contains(&format!("ok: {events} events")), "{said}");
}

/// Each writer remembers the head it last committed; when the other instance has moved it
/// since, its next group must link after the head in the database, not the one it remembers.
async fn a_writer_links_after_a_head_another_instance_moved(backend: &str) {
    let first = db(backend).await;
    let (store, _) = storage::connect(&first.url).await.expect("second instance");
    let second = Services::new(store, Arc::new(Policy::builtin()));
    for i in 0..6 {
        let services = if i % 2 == 0 { &first.services } else { &second };
        let events = (0..3)
            .map(|j| (services.now(), Actor::agent("agent-a"), event(i * 3 + j)))
            .collect();
        services.store().record(events).await.expect("record");
    }
    let ok = first
        .services
        .verify_trail(&Principal::Operator, None)
        .await
        .expect("one valid chain");
    assert_eq!(ok.head.seq, 18);
    assert_eq!(head_seq(&first).await, 18);
}

/// The head as the database records it now.
async fn head_seq(db: &Db) -> i64 {
    let mut read = db.services.store().read().await.expect("read");
    storage::audit::head(read.conn()).await.expect("head").0.seq
}

/// Verifications that must each have overlapped appends before the test is convincing.
const OVERLAPPING: usize = 5;

async fn verify_reads_one_snapshot_while_writers_append(backend: &str) {
    let db = db(backend).await;
    // More rows than one page, so a walk spans several statements.
    fill(&db.services, 25_000).await;
    let stop = Arc::new(AtomicBool::new(false));
    let writers: Vec<_> = (0..4)
        .map(|w| {
            let (services, stop) = (db.services.clone(), stop.clone());
            tokio::spawn(async move {
                let mut written = 0;
                while !stop.load(Ordering::Relaxed) {
                    let e = (services.now(), Actor::agent("agent-w"), event(w + written));
                    services.store().record(vec![e]).await.expect("record");
                    written += 1;
                }
                written
            })
        })
        .collect();
    let (mut overlapped, mut last) = (0, 0);
    for _ in 0..100 {
        let before = head_seq(&db).await;
        let ok = db
            .services
            .verify_trail(&Principal::Operator, None)
            .await
            .unwrap_or_else(|e| panic!("verification under load failed: {e}"));
        let after = head_seq(&db).await;
        // The head it reports is the head of the rows it read, somewhere in the walk's time.
        assert_eq!(ok.count, ok.head.seq, "{ok:?}");
        assert_eq!(hash_at(&db, ok.head.seq).await, ok.head.hash);
        assert!(before <= ok.head.seq && ok.head.seq <= after && last <= ok.head.seq);
        last = ok.head.seq;
        overlapped += usize::from(before < after);
        if overlapped == OVERLAPPING {
            break;
        }
    }
    stop.store(true, Ordering::Relaxed);
    let mut written = 0;
    for w in writers {
        written += w.await.expect("writer");
    }
    assert_eq!(
        overlapped, OVERLAPPING,
        "the writers never overlapped a walk"
    );
    let ok = db
        .services
        .verify_trail(&Principal::Operator, None)
        .await
        .expect("verifies");
    assert_eq!(ok.head.seq, 25_000 + written as i64);
}

async fn a_facet_that_differs_from_its_details_is_named(backend: &str) {
    let db = db(backend).await;
    fill(&db.services, 300).await;
    db.services
        .verify_trail(&Principal::Operator, None)
        .await
        .expect("verifies");

    // A facet set where `details` has no such key.
    tamper(
        &db,
        "update audit_events set tool = 'crm.delete' where seq = 120",
    )
    .await;
    let named = |seq, facet| Err(ChainError::Facet { seq, facet });
    let facet_error = |r: Result<_, VerifyError>| match r {
        Err(VerifyError::Chain(e)) => Err(e),
        Ok(v) => Ok(v),
        Err(other) => panic!("expected a chain error, got {other:?}"),
    };
    assert_eq!(
        facet_error(db.services.verify_trail(&Principal::Operator, None).await).map(|v| v.count),
        named(120, "tool")
    );
    // A facet changed from its key, earlier in the trail.
    tamper(
        &db,
        "update audit_events set agent = 'agent-x' where seq = 77",
    )
    .await;
    assert_eq!(
        facet_error(db.services.verify_trail(&Principal::Operator, None).await).map(|v| v.count),
        named(77, "agent")
    );
    let err = verify_cli(&db.url, &[]).expect_err("cli fails");
    assert!(
        err.contains("seq 77: facet `agent` does not match the row's details"),
        "{err}"
    );
}

macro_rules! on_both_backends {
    ($($case:ident),* $(,)?) => {
        mod sqlite {
            $(#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $case() { super::$case("sqlite").await })*
        }
        mod postgres {
            $(#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $case() { super::$case("postgres").await })*
        }
    };
}

/// Details are kept as the canonical text the hash covers (PostgreSQL's column is `json`, kept as
/// written), so verify reads them as they are; a row printed otherwise (as `jsonb` printed rows
/// before) still verifies, and a change inside such a row is still named.
async fn details_are_kept_as_their_canonical_text(backend: &str) {
    let db = db(backend).await;
    fill(&db.services, 20).await;
    let spaced = "select count(*) from audit_events where cast(details as text) like '%\": %' \
                  or cast(details as text) like '%, \"%'";
    assert_eq!(count(&db, spaced).await, 0);
    let first = "select count(*) from audit_events where seq = 1 and \
                 cast(details as text) = '{\"agent\":\"agent-0\",\"fields\":[\"parameters.f0\"]}'";
    assert_eq!(count(&db, first).await, 1);

    // Row 7 printed the other way (spaces, as `jsonb` prints): the same JSON, still valid.
    let respace = if backend == "postgres" {
        "update audit_events set details = (details::jsonb)::text::json where seq = 7"
    } else {
        "update audit_events set details = replace(replace(details, '\":', '\": '), ',\"', ', \"') \
         where seq = 7"
    };
    tamper(&db, respace).await;
    assert_eq!(count(&db, spaced).await, 1);
    let ok = db
        .services
        .verify_trail(&Principal::Operator, None)
        .await
        .expect("still verifies");
    assert_eq!(ok.count, 20);
    // A change inside the spaced row is named.
    let edit = if backend == "postgres" {
        "update audit_events set details = replace(details::text, 'agent-6', 'agent-9')::json \
         where seq = 7"
    } else {
        "update audit_events set details = replace(details, 'agent-6', 'agent-9') where seq = 7"
    };
    tamper(&db, edit).await;
    assert_eq!(first_bad(&db).await, 7);
}

/// A clock stopped at one moment.
struct Stopped(time::OffsetDateTime);

impl countersign::service::Clock for Stopped {
    fn now(&self) -> time::OffsetDateTime {
        self.0
    }
}

/// A checkpoint whose time has no RFC 3339 form (a clock before year 0) is refused and nothing
/// is stored: never a signature over an empty time.
async fn a_checkpoint_that_cannot_be_written_is_an_error(backend: &str) {
    let db = db(backend).await;
    let dir = tempfile::tempdir().expect("dir");
    let key = CheckpointKey::load_or_create(&dir.path().join("audit.key")).expect("key");
    fill(&db.services, 3).await;
    let before_year_0 = time::OffsetDateTime::UNIX_EPOCH
        .replace_year(-1)
        .expect("year");
    let skewed = Services::with_clock(
        db.services.store().clone(),
        Arc::new(Policy::builtin()),
        Arc::new(Stopped(before_year_0)),
    );
    assert!(
        skewed
            .sign_checkpoint(&Principal::Operator, &key)
            .await
            .is_err()
    );
    let stored = "select count(*) from audit_checkpoints";
    assert_eq!(count(&db, stored).await, 0);
    let signed = db
        .services
        .sign_checkpoint(&Principal::Operator, &key)
        .await
        .expect("sign");
    assert!(signed.is_some_and(|cp| cp.signature_holds() && !cp.at.is_empty()));
    assert_eq!(count(&db, stored).await, 1);
}

/// A count straight from the database.
async fn count(db: &Db, sql: &str) -> i64 {
    common::count(&db.url, sql).await
}

on_both_backends!(
    details_are_kept_as_their_canonical_text,
    a_long_chain_verifies_and_every_edit_is_named,
    deleted_reordered_and_inserted_rows_are_named,
    signed_and_kept_checkpoints_catch_rewrites_and_cut_tails,
    an_export_verifies_offline_and_fails_after_one_byte,
    a_bundle_with_a_cut_tail_fails_against_a_later_kept_checkpoint,
    two_instances_on_one_database_write_one_chain,
    a_writer_links_after_a_head_another_instance_moved,
    verify_reads_one_snapshot_while_writers_append,
    a_facet_that_differs_from_its_details_is_named,
    a_checkpoint_that_cannot_be_written_is_an_error,
);
