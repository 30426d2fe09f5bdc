//! The load generator with a ledger (issue 44), and its checker.
//!
//! `run` drives a realistic mix over HTTP against one Countersign (or a balancer in front of
//! several): agents submitting proposals (each with its idempotency key, some sent twice, every
//! unanswered one sent again) and pre-tool-checks and waiting on their proposals (`?wait=`);
//! reviewers signing in and deciding through the pages' forms (`/fn/decide_proposal`, with
//! their CSRF tokens); executors leasing, heartbeating, completing, and sometimes failing
//! (`side_effect: "none"`, so the queue may run the command again). It prints throughput and
//! latency percentiles per operation, and writes a ledger (JSON lines) of every acknowledged
//! answer (a submission's with its idempotency key), and of every run an executor started.
//!
//! Beside them watchers keep the agent's event stream (`GET /api/v1/events`) open and record
//! every status it tells, and (with `--webhook-listen`) a receiver verifies the agent's webhook
//! deliveries' signatures and records each one.
//!
//! `probe` submits one proposal with a key of its own until it is acknowledged (or fails after
//! `--within` seconds) and appends the answer to a ledger: proof that writes are acknowledged
//! again after a fault.
//!
//! `slow` trickles headers and bodies a byte a second straight at the instances and floods the
//! balancer with bad tokens, timing when each slow client is cut, beside a good client's reads.
//!
//! `check` reads one or more ledgers (`--ledger`, repeated) and the database after a run and
//! proves: no acknowledged submission, decision, lease or report is missing (a rejection left
//! its proposal `rejected`, an acknowledged failure is in the trail); every idempotency key's
//! answers name one proposal, the only one stored for it; no command ran more often than its
//! failures allowed; every proposal's and command's status changes are in the trail, in order,
//! ending at the status stored; every status an event stream or a webhook told is one its
//! proposal really had; every delivery the database marks delivered was received; and the
//! trail verifies.
//!
//! ```sh
//! cargo run --release --example loadgen -- run --url http://127.0.0.1:8080 \
//!   --agent-token "$AGENT" --executor-token "$EXECUTOR" --reviewer rita --seconds 30 \
//!   --ledger ledger.jsonl          # the reviewer's password in LOADGEN_PASSWORD
//! LOADGEN_AGENT_TOKEN="$AGENT" cargo run --release --example loadgen -- probe \
//!   --url http://127.0.0.1:8080 --within 30 --ledger probes.jsonl
//! cargo run --release --example loadgen -- check --ledger ledger.jsonl --ledger probes.jsonl \
//!   --database-url postgres://postgres@127.0.0.1:5432/countersign_cluster
//! ```
//!
//! `scripts/faults` runs it against `scripts/cluster` while killing instances.

mod check;
mod events;
mod ledger;
mod mix;
mod slow;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(about = "Countersign's load generator with a ledger, and its checker")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Drive the mix and write the ledger.
    Run(mix::RunArgs),
    /// Check ledgers against the database.
    Check(check::CheckArgs),
    /// Submit one proposal until it is acknowledged, and append the answer to a ledger.
    Probe(mix::ProbeArgs),
    /// Slow clients at the instances and a flood of bad tokens, beside a good client's reads.
    Slow(slow::SlowArgs),
}

#[tokio::main]
async fn main() -> ExitCode {
    let outcome = match Cli::parse().command {
        Command::Run(args) => mix::run(args).await,
        Command::Check(args) => check::check(args).await,
        Command::Probe(args) => mix::probe(args).await,
        Command::Slow(args) => slow::slow(args).await,
    };
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("loadgen: {e}");
            ExitCode::FAILURE
        }
    }
}
