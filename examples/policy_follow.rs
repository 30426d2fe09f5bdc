//! How soon a policy activated on one instance governs another: two Countersign instances on
//! one database (each with its own listener, follower and shadow worker, as `serve` runs them),
//! then ROUNDS activations, each proposed by one admin and approved by another on the first
//! instance, timed from the approval's call to the moment the second instance swaps the new
//! version in. For `scripts/bench-policy-follow`.
//!
//! ```sh
//! cargo run --release --example policy_follow -- postgres://postgres@127.0.0.1:5432/cs_follow 50
//! ```

use std::time::{Duration, Instant};

use countersign::config::Settings;
use countersign::domain::principal::{Principal, Role};
use countersign::service::Services;
use countersign::startup::Application;

/// Two policies the rounds alternate between.
const POLICIES: [&str; 2] = [
    "[policy]\nname = \"even\"\n[defaults]\nexpiry = \"24h\"\n",
    "[policy]\nname = \"odd\"\n[defaults]\nexpiry = \"12h\"\n",
];

#[tokio::main]
async fn main() -> Result<(), String> {
    let mut args = std::env::args().skip(1);
    let usage = "usage: policy_follow DATABASE_URL ROUNDS";
    let url = args.next().ok_or(usage)?;
    let rounds: usize = (args.next().ok_or(usage)?.parse()).map_err(|e| format!("ROUNDS: {e}"))?;
    let first = instance(&url).await?;
    let second = instance(&url).await?;
    let (alice, bob) = (
        Principal::person("alice", Role::Admin),
        Principal::person("bob", Role::Admin),
    );
    let since = time::OffsetDateTime::now_utc();
    let mut took = Vec::with_capacity(rounds);
    for round in 0..rounds {
        let text = format!(
            "{}# round {round}\n[tools.\"round.{round}\"]\ncategory = \"C\"\n",
            POLICIES[round % 2]
        );
        let change = first
            .propose_policy(&alice, &text, "follow benchmark", since)
            .await
            .map_err(|e| e.to_string())?;
        let mut swaps = second.policy_changes();
        let start = Instant::now();
        first
            .approve_policy(&bob, change.id, None)
            .await
            .map_err(|e| e.to_string())?;
        while second.policy().version() != change.version {
            tokio::time::timeout(Duration::from_secs(5), swaps.changed())
                .await
                .map_err(|_| format!("round {round}: not followed within 5 s"))?
                .map_err(|e| e.to_string())?;
        }
        took.push(start.elapsed());
    }
    took.sort();
    let at = |q: f64| took[((took.len() as f64 * q).ceil() as usize).clamp(1, took.len()) - 1];
    println!(
        "{rounds} activations approved on one instance, in force on the other: p50 {:.1?}, p99 {:.1?}, max {:.1?}",
        at(0.5),
        at(0.99),
        took[took.len() - 1]
    );
    Ok(())
}

/// An instance on `url`, serving on a free port, its tasks running.
async fn instance(url: &str) -> Result<Services, String> {
    let mut settings = Settings::for_database(url);
    settings.bind = Some("127.0.0.1:0".parse().map_err(|e| format!("{e}"))?);
    let app = Application::build(settings)
        .await
        .map_err(|e| e.to_string())?;
    let services = app.services().clone();
    tokio::spawn(app.run_forever());
    Ok(services)
}
