//! `loadgen check`: the ledger against the database, after a run.
//!
//! - Every acknowledged submission's proposal exists; every acknowledged decision's proposal
//!   left `pending` (an approval is recorded for each approval); every acknowledged lease's
//!   command exists and was leased; every acknowledged success's command is `succeeded`.
//! - No command ran more often than once plus the failures that queued it again: those the
//!   trail records (`command.failed` to `queued`, a failure with nothing done under the retry
//!   rules), or the acknowledged failures if the ledger has more. A double run is one beyond
//!   that. (A failure report the server committed but whose answer a kill cut off is in the
//!   trail, not in the ledger, and its retry is allowed.)
//! - Every proposal's and command's status changes are in the trail, each starting where the
//!   one before ended, the last ending at the status stored.
//! - The trail's hash chain verifies.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::Arc;

use countersign::domain::principal::Principal;
use sqlx::{PgPool, SqlitePool};
use uuid::Uuid;

use crate::ledger::{self, Entry};

/// `loadgen check`.
#[derive(clap::Args)]
pub struct CheckArgs {
    /// The ledger a run wrote.
    #[arg(long)]
    ledger: PathBuf,
    /// The database the run's Countersign used.
    #[arg(long, env = "COUNTERSIGN_DATABASE_URL")]
    database_url: String,
}

/// The rows the checks read.
struct Stored {
    proposals: HashMap<Uuid, String>,
    approvals: HashSet<Uuid>,
    commands: HashMap<Uuid, (String, i32)>,
    /// `(subject type, subject id, before, after)` of every status change, in trail order.
    changes: Vec<(String, String, Option<String>, String)>,
    /// How often the trail records each command's failure queuing it again, by command id.
    requeued: HashMap<String, usize>,
}

const PROPOSALS: &str = "select id, status from proposals";
const APPROVALS: &str = "select distinct proposal_id from approvals";
const COMMANDS: &str = "select id, status, attempts from commands";
const CHANGES: &str = "select subject_type, subject_id, before_status, after_status \
                       from audit_events where subject_type in ('proposal', 'command') \
                       and after_status is not null order by seq";
const REQUEUED: &str = "select subject_id from audit_events where action = 'command.failed' \
                        and after_status = 'queued'";

async fn stored(url: &str) -> Result<Stored, sqlx::Error> {
    macro_rules! read {
        ($pool:expr) => {{
            let pool = $pool;
            let proposals: Vec<(Uuid, String)> = sqlx::query_as(PROPOSALS).fetch_all(&pool).await?;
            let approvals: Vec<(Uuid,)> = sqlx::query_as(APPROVALS).fetch_all(&pool).await?;
            let commands: Vec<(Uuid, String, i32)> =
                sqlx::query_as(COMMANDS).fetch_all(&pool).await?;
            let changes = sqlx::query_as(CHANGES).fetch_all(&pool).await?;
            let requeued: Vec<(String,)> = sqlx::query_as(REQUEUED).fetch_all(&pool).await?;
            Stored {
                proposals: proposals.into_iter().collect(),
                approvals: approvals.into_iter().map(|(id,)| id).collect(),
                commands: commands
                    .into_iter()
                    .map(|(id, status, attempts)| (id, (status, attempts)))
                    .collect(),
                changes,
                requeued: counted(requeued.into_iter().map(|(id,)| id)),
            }
        }};
    }
    Ok(if url.starts_with("sqlite:") {
        read!(SqlitePool::connect(url).await?)
    } else {
        read!(PgPool::connect(url).await?)
    })
}

/// How often each key occurs.
fn counted<K: Eq + std::hash::Hash>(keys: impl IntoIterator<Item = K>) -> HashMap<K, usize> {
    keys.into_iter().fold(HashMap::new(), |mut n, key| {
        *n.entry(key).or_default() += 1;
        n
    })
}

/// What the ledger says was acknowledged, and what the checks found.
#[derive(Default)]
struct Findings {
    acked: HashMap<&'static str, usize>,
    missing: Vec<String>,
    double_runs: usize,
    trail: Vec<String>,
}

pub async fn check(args: CheckArgs) -> Result<(), String> {
    let entries = ledger::read(&args.ledger)?;
    let db = stored(&args.database_url)
        .await
        .map_err(|e| format!("reading {}: {e}", args.database_url))?;
    let mut f = Findings::default();
    acknowledged(&entries, &db, &mut f);
    runs(&entries, &db, &mut f);
    trail(&db, &mut f);
    let verified = verify(&args.database_url).await;
    let mut acked: Vec<_> = f.acked.iter().collect();
    acked.sort();
    for (op, n) in acked {
        println!("acknowledged {op:<8} {n}");
    }
    println!("missing      {}", f.missing.len());
    println!("double runs  {}", f.double_runs);
    println!("trail gaps   {}", f.trail.len());
    println!("audit verify {}", verified.as_deref().unwrap_or_else(|e| e));
    for m in f.missing.iter().chain(&f.trail).take(20) {
        println!("  {m}");
    }
    if f.missing.is_empty() && f.double_runs == 0 && f.trail.is_empty() && verified.is_ok() {
        println!("ledger check: ok");
        Ok(())
    } else {
        Err("ledger check failed".into())
    }
}

fn acknowledged(entries: &[Entry], db: &Stored, f: &mut Findings) {
    for e in entries {
        let (op, fault) = match e {
            Entry::Submit { proposal, .. } => (
                "submit",
                (!db.proposals.contains_key(proposal))
                    .then(|| format!("submitted proposal {proposal} is missing")),
            ),
            Entry::Decide { proposal, verdict } => {
                let status = db.proposals.get(proposal).map(String::as_str);
                let lost = match status {
                    None | Some("pending") => true,
                    Some(_) => verdict == "approved" && !db.approvals.contains(proposal),
                };
                (
                    "decide",
                    lost.then(|| {
                        format!("decision {verdict} on {proposal} is missing ({status:?})")
                    }),
                )
            }
            Entry::Lease { command, .. } => (
                "lease",
                match db.commands.get(command) {
                    Some((_, attempts)) if *attempts >= 1 => None,
                    other => Some(format!("leased command {command} is missing ({other:?})")),
                },
            ),
            Entry::Run { .. } => ("run", None),
            Entry::Report { command, outcome } => (
                "report",
                match (db.commands.get(command), outcome.as_str()) {
                    (Some((status, _)), "succeeded") if status == "succeeded" => None,
                    (Some(_), "failed") => None,
                    (other, _) => Some(format!(
                        "report {outcome} on command {command} is missing ({other:?})"
                    )),
                },
            ),
        };
        *f.acked.entry(op).or_default() += 1;
        f.missing.extend(fault);
    }
}

fn runs(entries: &[Entry], db: &Stored, f: &mut Findings) {
    let mut ran: HashMap<Uuid, usize> = HashMap::new();
    let mut failed: HashMap<Uuid, usize> = HashMap::new();
    for e in entries {
        match e {
            Entry::Run { command } => *ran.entry(*command).or_default() += 1,
            Entry::Report { command, outcome } if outcome == "failed" => {
                *failed.entry(*command).or_default() += 1;
            }
            _ => {}
        }
    }
    for (command, n) in ran {
        let acked = failed.get(&command).copied().unwrap_or(0);
        let recorded = db.requeued.get(&command.to_string()).copied().unwrap_or(0);
        let allowed = 1 + acked.max(recorded);
        f.double_runs += n.saturating_sub(allowed);
    }
}

fn trail(db: &Stored, f: &mut Findings) {
    let mut last: HashMap<(&str, &str), &str> = HashMap::new();
    for (kind, id, before, after) in &db.changes {
        let key = (kind.as_str(), id.as_str());
        let previous = last.get(&key).copied();
        if let (Some(p), Some(b)) = (previous, before.as_deref())
            && p != b
        {
            f.trail.push(format!(
                "{kind} {id}: the trail goes {p} then starts from {b}"
            ));
        }
        last.insert(key, after.as_str());
    }
    let stored = (db.proposals.iter().map(|(id, s)| ("proposal", id, s)))
        .chain(db.commands.iter().map(|(id, (s, _))| ("command", id, s)));
    for (kind, id, status) in stored {
        let id = id.to_string();
        match last.get(&(kind, id.as_str())) {
            Some(&s) if s == status => {}
            other => f.trail.push(format!(
                "{kind} {id} is {status}, its last change in the trail {other:?}"
            )),
        }
    }
}

/// `audit verify` of the whole trail, as the CLI runs it.
async fn verify(url: &str) -> Result<String, String> {
    let (store, _) = countersign::storage::connect(url)
        .await
        .map_err(|e| format!("failed: {e}"))?;
    let policy = Arc::new(countersign::domain::Policy::builtin());
    let services = countersign::service::Services::new(store, policy);
    let verified = services
        .verify_trail(&Principal::Operator, None)
        .await
        .map_err(|e| format!("failed: {e}"))?;
    Ok(format!("ok: {} events", verified.count))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stored(requeued: &[Uuid]) -> Stored {
        Stored {
            proposals: HashMap::new(),
            approvals: HashSet::new(),
            commands: HashMap::new(),
            changes: Vec::new(),
            requeued: counted(requeued.iter().map(Uuid::to_string)),
        }
    }

    fn double_runs(entries: &[Entry], db: &Stored) -> usize {
        let mut f = Findings::default();
        runs(entries, db, &mut f);
        f.double_runs
    }

    #[test]
    fn a_retry_is_allowed_by_a_failure_the_trail_records_or_the_ledger_acknowledged() {
        let command = Uuid::new_v4();
        let run = || Entry::Run { command };
        let failed = Entry::Report {
            command,
            outcome: "failed".into(),
        };
        assert_eq!(double_runs(&[run()], &stored(&[])), 0, "one run");
        assert_eq!(
            double_runs(&[run(), run()], &stored(&[])),
            1,
            "run again with no failure recorded anywhere"
        );
        assert_eq!(
            double_runs(&[run(), run()], &stored(&[command])),
            0,
            "a failure the server committed, its answer cut off by a kill"
        );
        assert_eq!(
            double_runs(&[run(), failed, run()], &stored(&[])),
            0,
            "an acknowledged failure"
        );
        assert_eq!(
            double_runs(&[run(), run(), run()], &stored(&[command])),
            1,
            "one failure allows one more run, not two"
        );
    }
}
