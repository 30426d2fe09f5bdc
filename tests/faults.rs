//! The fault harness in CI (issue 44): `scripts/faults` drives the ledger-checked load
//! generator (`examples/loadgen`) through HAProxy against three instances on one PostgreSQL
//! (its own PostgreSQL cluster, `scripts/cluster` with `CLUSTER_PRIVATE_PG=1`), kills a random
//! instance with SIGKILL at a random moment 30 times and restarts it, stops the database twice
//! (fast, then immediate shutdown; the balancer answers `503 unavailable` meanwhile) and starts
//! it again, then checks the ledger against the database: nothing acknowledged missing, no
//! command run twice, every status change in the trail, the trail verifying.

use std::path::{Path, PathBuf};
use std::process::Command;

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

#[test]
fn thirty_kills_and_two_database_outages_lose_nothing_and_run_nothing_twice() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = tempfile::tempdir().expect("dir");
    let out = Command::new(root.join("scripts/faults"))
        .env("KILLS", "30")
        .env("PG_RESTARTS", "2")
        .env("CLUSTER_PRIVATE_PG", "1")
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
    for line in [
        "kills        30",
        "database outage (fast shutdown)",
        "database outage (immediate shutdown)",
        "missing      0",
        "double runs  0",
        "trail gaps   0",
        "ledger check: ok",
    ] {
        assert!(stdout.contains(line), "`{line}` in:\n{report}");
    }
    let acked = |op: &str| -> usize {
        let prefix = format!("acknowledged {op:<8} ");
        (stdout.lines())
            .find_map(|l| l.strip_prefix(&prefix))
            .and_then(|n| n.trim().parse().ok())
            .unwrap_or(0)
    };
    for op in ["submit", "decide", "lease", "report"] {
        assert!(acked(op) > 0, "some {op} acknowledged:\n{report}");
    }
}

/// The checker fails a ledger the database does not bear out: a submission it never stored,
/// a command run twice without a failure between, and says which.
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
    ];
    std::fs::write(&ledger, lines.join("\n")).expect("ledger");
    let out = Command::new(loadgen())
        .args(["check", "--ledger"])
        .arg(&ledger)
        .args(["--database-url", &db])
        .output()
        .expect("check");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(!out.status.success(), "{stdout}");
    assert!(stdout.contains("missing      1"), "{stdout}");
    assert!(stdout.contains("double runs  1"), "{stdout}");
    assert!(
        stdout.contains(&format!("submitted proposal {proposal} is missing")),
        "{stdout}"
    );
}
