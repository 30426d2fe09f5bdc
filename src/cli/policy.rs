//! `countersign policy`: validate a file and try it out (`check`, `explain`), and the policy's
//! life in the database: `propose` a candidate (backtested, then approved by a second admin on
//! `/policy`), `backtest` a file against recorded decisions, `activate` a stored version alone
//! (break-glass: marked on the trail), and the `history` of activations.

use std::path::PathBuf;

use clap::Subcommand;

use super::{Database, parse_secs, services};
use crate::domain::policy_change::backtest::Report;
use crate::domain::policy_change::explain::explain;
use crate::domain::principal::Principal;

#[derive(Debug, Subcommand)]
pub(crate) enum PolicyCommand {
    /// Validate a policy file; print its version, or every error with its line.
    Check {
        /// The policy file.
        file: PathBuf,
    },
    /// Route one AANA event or tool proposal (JSON file) under a policy and print the decision
    /// with the rule that produced it.
    Explain {
        /// The policy file.
        file: PathBuf,
        /// An AANA v1 event (`tool_name`, …) or a seed 004 tool proposal (`proposal_id`, …).
        event: PathBuf,
    },
    /// Replay the decisions recorded since `--since` under a candidate file: how many would
    /// now route differently, from → to, by tool and agent, with examples.
    Backtest {
        #[command(flatten)]
        db: Database,
        /// The candidate policy file.
        file: PathBuf,
        /// How far back (`30d`, `12h`).
        #[arg(long, default_value = "30d", value_parser = parse_secs)]
        since: std::time::Duration,
        /// Print the whole report as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Propose a candidate: validated, stored, backtested; it becomes active when an admin
    /// approves it on `/policy`. Prints the request's id and the backtest's summary.
    Propose {
        #[command(flatten)]
        db: Database,
        /// The candidate policy file.
        file: PathBuf,
        /// Why (shown to the approving admin).
        #[arg(long)]
        reason: String,
        /// How far back the backtest replays (`30d`, `12h`).
        #[arg(long, default_value = "30d", value_parser = parse_secs)]
        since: std::time::Duration,
    },
    /// Run a pending change's version in shadow: every new decision is also routed under it
    /// (never answered from it), its differences listed on its page.
    Shadow {
        #[command(flatten)]
        db: Database,
        /// The change's id (as `policy propose` printed it).
        id: uuid::Uuid,
        /// For how long (`1h`, `7d`; at most 30 days).
        #[arg(long = "for", value_parser = parse_secs, conflicts_with = "stop", required_unless_present = "stop")]
        duration: Option<std::time::Duration>,
        /// Stop its shadow run.
        #[arg(long)]
        stop: bool,
    },
    /// Break-glass: activate a stored version alone, now, on every instance (marked on the
    /// trail as such). For the day the pages are down.
    Activate {
        #[command(flatten)]
        db: Database,
        /// The version (`sha256:…`, as `policy history` and `/policy` show it).
        version: String,
        /// Why (recorded).
        #[arg(long)]
        reason: String,
    },
    /// The activations, newest first: version, when, how, who proposed and approved it.
    History {
        #[command(flatten)]
        db: Database,
    },
}

pub(crate) async fn run(command: PolicyCommand) -> Result<(), String> {
    let cli = Principal::Operator;
    let ago = |d: std::time::Duration| {
        time::OffsetDateTime::now_utc()
            - time::Duration::try_from(d).unwrap_or(time::Duration::ZERO)
    };
    match command {
        PolicyCommand::Check { file } => check(&file),
        PolicyCommand::Explain { file, event } => explain_file(&file, &event),
        PolicyCommand::Backtest {
            db,
            file,
            since,
            json,
        } => {
            let text = read(&file)?;
            let s = live_services(&db).await?;
            let report = s
                .backtest_policy(&cli, &text, ago(since))
                .await
                .map_err(|e| change_error(&file, e))?;
            if json {
                let out = serde_json::to_string_pretty(&report).map_err(|e| e.to_string())?;
                println!("{out}");
            } else {
                print_report(&report);
            }
            Ok(())
        }
        PolicyCommand::Propose {
            db,
            file,
            reason,
            since,
        } => {
            let text = read(&file)?;
            let s = live_services(&db).await?;
            let change = s
                .propose_policy(&cli, &text, &reason, ago(since))
                .await
                .map_err(|e| change_error(&file, e))?;
            println!("{}", change.id);
            eprintln!("proposed {} (active: {})", change.version, change.base);
            if let Some(r) = &change.backtest {
                print_summary(r);
            }
            eprintln!("an admin approves it on /policy/changes/{}", change.id);
            Ok(())
        }
        PolicyCommand::Activate {
            db,
            version,
            reason,
        } => {
            let s = live_services(&db).await?;
            let a = s
                .activate_policy(&cli, &version, &reason)
                .await
                .map_err(|e| e.to_string())?;
            eprintln!(
                "BREAK-GLASS: {} is active on every instance (was {}); recorded as policy.activated",
                a.version,
                a.previous.as_deref().unwrap_or("none")
            );
            Ok(())
        }
        PolicyCommand::Shadow {
            db,
            id,
            duration,
            stop: _,
        } => shadow(&live_services(&db).await?, id, duration).await,
        PolicyCommand::History { db } => history(&live_services(&db).await?).await,
    }
}

/// `shadow`: runs change `id` in shadow for `duration`, or stops its run.
async fn shadow(
    s: &crate::service::Services,
    id: uuid::Uuid,
    duration: Option<std::time::Duration>,
) -> Result<(), String> {
    let duration = duration.map(|d| time::Duration::try_from(d).unwrap_or(time::Duration::ZERO));
    (s.shadow_policy(&Principal::Operator, id, duration).await).map_err(|e| e.to_string())?;
    match duration {
        Some(d) => eprintln!("{id} runs in shadow for {d} on every instance"),
        None => eprintln!("{id} no longer runs in shadow"),
    }
    Ok(())
}

/// `history`: every activation, newest first.
async fn history(s: &crate::service::Services) -> Result<(), String> {
    let history = (s.policy_history(&Principal::Operator, 100).await).map_err(|e| e.to_string())?;
    for a in history {
        println!(
            "{}\t{}\t{}\tby {}{}",
            a.activated_at
                .format(&time::format_description::well_known::Rfc3339)
                .unwrap_or_default(),
            a.version,
            a.how,
            a.proposed_by,
            a.approved_by
                .map(|b| format!(", approved by {b}"))
                .unwrap_or_default()
        );
    }
    Ok(())
}

/// The use cases over `db` under its active policy.
async fn live_services(db: &Database) -> Result<crate::service::Services, String> {
    let s = services(&db.database_url).await?;
    s.follow_policy().await.map_err(|e| e.to_string())?;
    Ok(s)
}

fn read(file: &std::path::Path) -> Result<String, String> {
    std::fs::read_to_string(file).map_err(|e| format!("{}: {e}", file.display()))
}

fn change_error(file: &std::path::Path, e: crate::service::PolicyChangeError) -> String {
    match e {
        crate::service::PolicyChangeError::Invalid(errors) => invalid(file, &errors),
        other => other.to_string(),
    }
}

/// Compiler-style `FILE:LINE:COLUMN: field: message`, one per line.
fn invalid(file: &std::path::Path, errors: &[crate::domain::policy::model::PolicyError]) -> String {
    let lines: Vec<String> = errors
        .iter()
        .map(|e| match (e.line, e.column) {
            (Some(l), Some(c)) => format!("{}:{l}:{c}: {}: {}", file.display(), e.path, e.message),
            _ => format!("{}: {}: {}", file.display(), e.path, e.message),
        })
        .collect();
    format!(
        "{} is not a valid policy:\n{}",
        file.display(),
        lines.join("\n")
    )
}

/// The backtest's summary (standard error) and its differences (standard output).
fn print_report(r: &Report) {
    print_summary(r);
    for t in &r.transitions {
        println!(
            "{}\t{} → {}\t{}\t{}\t{}",
            t.kind, t.from, t.to, t.tool, t.agent, t.count
        );
        for e in &t.examples {
            println!(
                "\t{}\twas {} ({}; {})\tnow {} ({}; {})",
                e.subject,
                e.was.route,
                e.was.rule,
                e.was.blockers.join(","),
                e.now.route,
                e.now.rule,
                e.now.blockers.join(",")
            );
        }
    }
}

/// The backtest's counts and its from → to table, on standard error.
fn print_summary(r: &Report) {
    eprintln!(
        "backtest of {}: {} decisions, {} replayed, {} would route differently, {} not \
         replayable ({} erased, {} recorded without inputs)",
        r.candidate,
        r.considered,
        r.replayed,
        r.changed,
        r.erased + r.unrecorded,
        r.erased,
        r.unrecorded
    );
    for (from, to, n) in r.by_route() {
        let mark = if to == crate::domain::contract::vocab::Route::Accept {
            "  (loosens)"
        } else {
            ""
        };
        eprintln!("  {from} → {to}: {n}{mark}");
    }
}

/// `check`: validates `file`, printing its version.
fn check(file: &std::path::Path) -> Result<(), String> {
    let policy = load_policy(file)?;
    println!("{}", policy.version());
    eprintln!(
        "{}: valid, {} tool rules, {} agents",
        file.display(),
        policy.tools().len(),
        policy.agents().len()
    );
    Ok(())
}

/// `explain`: what the policy in `file` decides of the event or proposal in `event`.
fn explain_file(file: &std::path::Path, event: &std::path::Path) -> Result<(), String> {
    let policy = load_policy(file)?;
    let text = read(event)?;
    let value: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| format!("{}: not JSON: {e}", event.display()))?;
    let explained = explain(&value, &policy).map_err(|errors| {
        let lines: Vec<String> = errors.iter().map(|e| format!("  {e}")).collect();
        format!(
            "{} is not a valid event or proposal:\n{}",
            event.display(),
            lines.join("\n")
        )
    })?;
    let out = serde_json::to_string_pretty(&explained.decision).map_err(|e| e.to_string())?;
    println!("{out}");
    eprintln!("route {} by rule: {}", explained.route, explained.rule);
    Ok(())
}

fn load_policy(file: &std::path::Path) -> Result<crate::domain::Policy, String> {
    let text = read(file)?;
    crate::domain::Policy::from_toml_str(&text).map_err(|errors| invalid(file, &errors))
}
