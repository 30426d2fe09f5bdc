//! The fault harness in CI (issue 44): `scripts/faults` drives the ledger-checked load
//! generator (`examples/loadgen`) through HAProxy against three instances on one PostgreSQL
//! (its own PostgreSQL cluster with a synchronous standby, `scripts/cluster` with
//! `CLUSTER_STANDBY=1`), kills a random instance with SIGKILL at a random moment 30 times and
//! restarts it, stops the database twice (fast, then immediate shutdown; the balancer answers
//! `503 unavailable` meanwhile) and starts it again, kills the primary and promotes the standby
//! (the instances reach it through deploy/haproxy-postgres.cfg), slows and then cuts one
//! instance's network (a namespace of its own, `CLUSTER_NETNS=1`) and heals it. While the
//! database is down every instance, asked directly, answers `503 unavailable`; after each
//! outage, network fault and the failover the script proves recovery and a write acknowledged
//! through the balancer (a probe, in a ledger of its own), or fails. Then it checks both ledgers
//! against the database: nothing acknowledged missing, every idempotency key naming one
//! proposal, no command run twice, every status change in the trail, every status the agent's
//! event stream told and its webhook delivered one its proposal had, every delivery marked
//! delivered received, the trail verifying. Before the outages, slow clients (headers and
//! bodies a byte a second) and a flood of bad tokens run under the mix: every slow client is cut
//! within its timeout and the flood is answered 401/429 only. And on the SQLite default, the
//! disk fills up under the same mix (a small tmpfs of its own; the test mounts it, so it runs
//! as root, as CI does here), and the checker reads that run's ledger too.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

mod common;

/// The load generator `cargo test` built beside this test (examples are built with the tests).
fn loadgen() -> PathBuf {
    let exe = std::env::current_exe().expect("test path");
    let profile_dir = exe
        .parent()
        .and_then(Path::parent)
        .expect("target/<profile>/deps");
    let loadgen = profile_dir.join("examples").join("loadgen");
    assert!(
        loadgen.is_file(),
        "{} is missing: `cargo test` builds it, or `cargo build --example loadgen`",
        loadgen.display()
    );
    loadgen
}

/// `loadgen check` of `ledgers` against `db`.
fn check(ledgers: &[&Path], db: &str) -> std::process::Output {
    let mut check = Command::new(loadgen());
    check.arg("check");
    for ledger in ledgers {
        check.arg("--ledger").arg(ledger);
    }
    check
        .args(["--database-url", db])
        .output()
        .expect("check runs")
}

#[test]
fn thirty_kills_outages_a_failover_and_a_cut_lose_nothing_and_run_nothing_twice() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = tempfile::tempdir().expect("dir");
    let out = Command::new(root.join("scripts/faults"))
        .env("KILLS", "30")
        .env("PG_RESTARTS", "2")
        .env("CLUSTER_STANDBY", "1")
        .env("PG_FAILOVER", "1")
        .env("CLUSTER_NETNS", "1")
        .env("NET_FAULTS", "1")
        .env("BIN", env!("CARGO_BIN_EXE_countersign"))
        .env("LOADGEN", loadgen())
        .env("CLUSTER_DIR", dir.path())
        .env("CLUSTER_PORT", common::free_ports().to_string())
        .env_remove("CLUSTER_DATABASE_URL")
        .env_remove("RUST_LOG")
        .output()
        .expect("scripts/faults runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let report = format!("{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "scripts/faults failed:\n{report}");
    // The figures, for `-- --nocapture`.
    println!("{stdout}");
    for line in [
        "kills        30",
        "database outage (fast shutdown): 503 unavailable from 3 of 3 instances directly",
        "database outage (immediate shutdown): 503 unavailable from 3 of 3 instances directly",
        "primary killed, standby promoted",
        "network faults 1",
        "write probes 4 acknowledged through the balancer",
        "ledgers      2 ",
        "missing      0",
        "duplicates   0",
        "double runs  0",
        "trail gaps   0",
        "never had    0",
        "not received 0 ",
        "slow clients 100 cut of 100",
        "answered 401/429 only",
        "good reads   before:",
        "ledger check: ok",
    ] {
        assert!(stdout.contains(line), "`{line}` in:\n{report}");
    }
    for fault in [
        "database outage (fast shutdown)",
        "database outage (immediate shutdown)",
        "network faults 1",
    ] {
        assert!(
            (stdout.lines()).any(|l| l.starts_with(fault) && l.contains(", a write acknowledged")),
            "a write acknowledged after `{fault}` in:\n{report}"
        );
    }
    assert!(
        stdout.contains("writes again") && stdout.contains(", a submission acknowledged"),
        "a submission acknowledged after the failover in:\n{report}"
    );
    let acked = |op: &str| -> usize {
        let prefix = format!("acknowledged {op:<8} ");
        (stdout.lines())
            .find_map(|l| l.strip_prefix(&prefix))
            .and_then(|n| n.trim().parse().ok())
            .unwrap_or(0)
    };
    for op in [
        "submit",
        "decide",
        "lease",
        "report",
        "check",
        "seen",
        "delivered",
    ] {
        assert!(acked(op) > 0, "some {op} acknowledged:\n{report}");
    }
    // The checker passed after each fault too, while the mix ran on.
    for fault in [
        "checked after 30 kills: ok",
        "checked after the slow clients and bad tokens: ok",
        "checked after database outage 1 (fast): ok",
        "checked after database outage 2 (immediate): ok",
        "checked after network fault 1: ok",
        "checked after the failover: ok",
    ] {
        assert!(stdout.contains(fault), "`{fault}` in:\n{report}");
    }
}

/// The checker fails ledgers the database does not bear out: a submission it never stored, a
/// command run twice without a failure between, an idempotency key (in a second ledger, as
/// `scripts/faults`' probes are) answered with two proposals, a status an event stream told of
/// a proposal that never had it, and says which.
#[test]
fn the_checker_finds_what_is_missing_and_what_ran_twice() {
    let dir = tempfile::tempdir().expect("dir");
    let db = format!("sqlite://{}/countersign.db", dir.path().display());
    let migrated = Command::new(env!("CARGO_BIN_EXE_countersign"))
        .args(["migrate", "--database-url", &db])
        .output()
        .expect("migrate");
    assert!(migrated.status.success());
    let (proposal, command) = (uuid::Uuid::new_v4(), uuid::Uuid::new_v4());
    let ledger = dir.path().join("ledger.jsonl");
    let lines = [
        format!(r#"{{"op":"submit","proposal":"{proposal}","status":"pending"}}"#),
        format!(r#"{{"op":"run","command":"{command}"}}"#),
        format!(r#"{{"op":"run","command":"{command}"}}"#),
        format!(r#"{{"op":"seen","proposal":"{proposal}","status":"approved"}}"#),
    ];
    std::fs::write(&ledger, lines.join("\n")).expect("ledger");
    let (first, second) = (uuid::Uuid::new_v4(), uuid::Uuid::new_v4());
    let probes = dir.path().join("probes.jsonl");
    let lines = [first, second]
        .map(|p| format!(r#"{{"op":"submit","proposal":"{p}","status":"pending","key":"k-1"}}"#));
    std::fs::write(&probes, lines.join("\n")).expect("probes");
    let out = check(&[&ledger, &probes], &db);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(!out.status.success(), "{stdout}");
    assert!(stdout.contains("ledgers      2 (6 entries)"), "{stdout}");
    assert!(stdout.contains("never had    1"), "{stdout}");
    assert!(stdout.contains("not received 0 "), "{stdout}");
    assert!(stdout.contains("missing      3"), "{stdout}");
    assert!(stdout.contains("duplicates   1"), "{stdout}");
    assert!(stdout.contains("double runs  1"), "{stdout}");
    assert!(stdout.contains("key k-1 was answered with"), "{stdout}");
    assert!(
        stdout.contains(&format!("submitted proposal {proposal} is missing")),
        "{stdout}"
    );
}

/// A small filesystem of its own (tmpfs), unmounted when dropped.
struct SmallDisk(PathBuf);

impl SmallDisk {
    fn mount(at: &Path, size: &str) -> Self {
        std::fs::create_dir_all(at).expect("mount point");
        let status = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(at)
            .status()
            .expect("mount runs");
        assert!(status.success(), "mounting a {size} tmpfs (needs root)");
        Self(at.to_owned())
    }

    fn grow(&self, size: &str) {
        let status = Command::new("mount")
            .args(["-o", &format!("remount,size={size}")])
            .arg(&self.0)
            .status()
            .expect("mount runs");
        assert!(status.success(), "growing the tmpfs to {size}");
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.0).status();
    }
}

/// On the SQLite default, the disk fills up while the mix runs (agents submitting, checking and
/// waiting; reviewers deciding through the pages; executors leasing and reporting; the agent's
/// event stream and webhook): writes are answered `503 unavailable` (never a 500, never a
/// half-written row) while reads go on; once there is room again writes are acknowledged
/// again by themselves; after a SIGKILL the file is sound and the checker finds every
/// acknowledged answer in it, nothing run twice, every status change in the trail, and the
/// trail verifying.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_disk_under_the_mix_answers_503_loses_nothing_and_writes_resume() {
    let dir = tempfile::tempdir().expect("dir");
    let disk = SmallDisk::mount(&dir.path().join("small"), "10m");
    let db = format!("sqlite://{}/countersign.db", disk.0.display());
    common::run_ok(&db, &["migrate"], None);
    let hook = std::net::TcpListener::bind("127.0.0.1:0").expect("a free port");
    let hook_at = hook.local_addr().expect("addr");
    drop(hook);
    let hook_url = format!("http://{hook_at}/countersign");
    let created = common::run_ok(
        &db,
        &[
            "token",
            "create",
            "--agent",
            "agent-a",
            "--webhook",
            &hook_url,
        ],
        None,
    );
    let (agent, hook_secret) = created.trim().split_once('\n').expect("token and secret");
    let executor = common::executor_token(&db, "runner");
    let password = format!("disk-full-{}", uuid::Uuid::new_v4().simple());
    common::add_reviewer(&db, "rita", &password);
    let mut served = common::serve(&db, &dir.path().join("audit.key"), "info");
    let client = reqwest::Client::new();
    let submit = || {
        client
            .post(format!("{}/api/v1/proposals", served.base))
            .bearer_auth(agent)
            .json(&common::proposal_body("agent-a"))
            .send()
    };
    let first = submit().await.expect("answered");
    assert_eq!(first.status(), 201);
    let first: Value = first.json().await.expect("json");
    let first = first["proposal"]["id"].as_str().expect("id").to_owned();

    let (ledger, probes) = (
        dir.path().join("ledger.jsonl"),
        dir.path().join("probes.jsonl"),
    );
    let mix_out = std::fs::File::create(dir.path().join("loadgen.out")).expect("out");
    let started = std::time::Instant::now();
    let mut mix = tokio::process::Command::new(loadgen())
        .args([
            "run",
            "--url",
            &served.base,
            "--reviewer",
            "rita",
            "--seconds",
            "45",
        ])
        .arg("--ledger")
        .arg(&ledger)
        .arg("--webhook-listen")
        .arg(hook_at.to_string())
        .env("LOADGEN_AGENT_TOKEN", agent)
        .env("LOADGEN_EXECUTOR_TOKEN", executor.trim())
        .env("LOADGEN_PASSWORD", &password)
        .env("LOADGEN_WEBHOOK_SECRET", hook_secret)
        .stdout(mix_out)
        .kill_on_drop(true)
        .spawn()
        .expect("loadgen runs");

    // The mix fills the 10 MiB (the write-ahead log grows until a rewind, 256 MiB away).
    let wait = |needle: &str, n: usize| {
        tokio::task::block_in_place(|| {
            served.wait_for_lines(needle, n, std::time::Duration::from_secs(60))
        })
    };
    assert!(
        wait("database or disk is full", 1) >= 1,
        "the disk never filled under the mix"
    );
    let filled = started.elapsed();
    // The disk stays full until the mix's requests have been answered `503` two hundred times
    // (each request answered so is logged).
    let unavailable = r#""message":"the database is not answering""#;
    let refused = wait(unavailable, 200);
    assert!(
        refused >= 200,
        "{refused} requests answered 503 while the disk was full"
    );
    let mut fitted = 0;
    let answer = loop {
        let r = submit().await.expect("answered");
        let status = r.status().as_u16();
        let body: Value = r.json().await.expect("json");
        match status {
            // A group small enough for the space a failed one left.
            201 if fitted < 100 => fitted += 1,
            503 => break body,
            other => panic!("{other} while the disk was full ({fitted} fitted): {body}"),
        }
    };
    assert_eq!(answer["error"]["code"], "unavailable", "{answer}");
    let read = client
        .get(format!("{}/api/v1/proposals/{first}", served.base))
        .bearer_auth(agent)
        .send()
        .await
        .expect("answered");
    assert_eq!(read.status(), 200, "reads go on while the disk is full");
    // Signing in writes (its audit row, the session): refused with words, or taken if it
    // fits the space a failed group left, never a 500.
    let signing_in = common::browser::Browser::new(&served.base)
        .login("rita", &password)
        .await;
    let status = signing_in.status().as_u16();
    let said = signing_in.text().await.expect("body");
    assert!(
        (300..400).contains(&status)
            || (status == 503 && said.contains("the database cannot take this now")),
        "signing in while the disk was full: {status} {said}"
    );

    disk.grow("256m");
    let room = std::time::Instant::now();
    let full_for = room.duration_since(started) - filled;
    let probe = tokio::process::Command::new(loadgen())
        .args(["probe", "--url", &served.base, "--within", "30", "--ledger"])
        .arg(&probes)
        .env("LOADGEN_AGENT_TOKEN", agent)
        .output()
        .await
        .expect("probe runs");
    let resumed = room.elapsed();
    assert!(
        probe.status.success(),
        "writes did not resume: {}",
        String::from_utf8_lossy(&probe.stderr)
    );
    assert!(
        mix.try_wait().expect("mix").is_none(),
        "the mix ended before space returned (the disk filled after {filled:?})"
    );
    let ran = tokio::time::timeout(std::time::Duration::from_secs(120), mix.wait())
        .await
        .expect("the mix ends within its 45 s and its last requests")
        .expect("mix ends");
    let figures = std::fs::read_to_string(dir.path().join("loadgen.out")).expect("figures");
    assert!(ran.success(), "the load generator failed:\n{figures}");
    served.child.kill().expect("SIGKILL");
    served.child.wait().expect("exited");

    let log = served.log.lock().expect("log").join("\n");
    // A 500 from the API (`storage failed`), the pages (`service failed`) or the session
    // layer (`failed to save session`).
    for never in [
        "storage failed",
        "service failed",
        "failed to save session",
        "panicked",
    ] {
        assert!(
            !log.contains(never),
            "`{never}` in the server's log:\n{log}"
        );
    }
    assert_eq!(common::text(&db, "pragma integrity_check").await, "ok");
    let check = check(&[&ledger, &probes], &db);
    let checked = String::from_utf8_lossy(&check.stdout);
    assert!(check.status.success(), "{figures}\n{checked}");
    assert!(checked.contains("ledger check: ok"), "{checked}");
    let acked = |op: &str| -> usize {
        let prefix = format!("{op:<12} ");
        (figures.lines())
            .find_map(|l| l.strip_prefix(&prefix))
            .and_then(|rest| rest.split_whitespace().next()?.parse().ok())
            .unwrap_or(0)
    };
    for op in ["submit", "decide", "lease", "report", "check"] {
        assert!(acked(op) > 0, "some {op} acknowledged:\n{figures}");
    }
    assert!(
        common::count(&db, "select count(*) from proposals").await > 1,
        "proposals stored"
    );
    common::run_ok(&db, &["audit", "verify"], None);
    // The figures, for `-- --nocapture`.
    let refused = log.lines().filter(|l| l.contains(unavailable)).count();
    println!(
        "disk full after {filled:.1?} of the mix, for {full_for:.1?}: {refused} requests answered \
         503; a write acknowledged {resumed:.0?} after space returned\n{figures}\n{checked}"
    );
}
