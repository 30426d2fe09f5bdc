//! `loadgen check`: the ledgers against the database, after a run.
//!
//! - Every acknowledged submission's proposal exists; every acknowledged decision's proposal
//!   left `pending` the way it was decided (a rejection's is `rejected`; an approval is
//!   recorded for each approval); every acknowledged lease's command exists and was leased at
//!   least as often as the ledger acknowledged its leases; every acknowledged success's
//!   command is `succeeded`; every acknowledged failure is in the trail (`command.failed` on
//!   that command, as often as the ledger acknowledged one, whether the retry rules queued it
//!   again or ended it `failed`); every acknowledged pre-tool-check's decision is in the trail
//!   (by its `check_id`).
//! - Every idempotency key's acknowledged answers (the first, a resubmission's, a resend's
//!   after a lost answer) name one proposal, and the database holds exactly that one for the
//!   key. The load generator's keys are random, so a key names one proposal whichever agent
//!   sent it.
//! - No command ran more often than once plus the failures that queued it again: those the
//!   trail records (`command.failed` to `queued`, a failure with nothing done under the retry
//!   rules), or the acknowledged failures if the ledger has more. A double run is one beyond
//!   that. (A failure report the server committed but whose answer a kill cut off is in the
//!   trail, not in the ledger, and its retry is allowed.)
//! - Every proposal's and command's status changes are in the trail: the first its creation
//!   (from nothing), each later one starting where the one before ended, the last ending at
//!   the status stored.
//! - Every status an event stream told (`seen`) or a webhook delivery named (`delivered`) is
//!   one its proposal really had: the stored one, or one its trail's status changes went from
//!   or to (the first is the creation, `pending`). Any other is `never had`.
//! - Every delivery the database marks `delivered` was received (the ledger has its id: the
//!   receiver records a delivery before it answers `200`); one that was not is `not received`.
//!   At least once: a delivery received more than once is fine.
//! - The trail's hash chain verifies.
//!
//! Several ledgers (`--ledger`, repeated: the run's and `scripts/faults`' probes) are checked
//! as one.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::path::PathBuf;
use std::sync::Arc;

use countersign::domain::principal::Principal;
use sqlx::{PgPool, SqlitePool};
use uuid::Uuid;

use crate::ledger::{self, Entry};

/// `loadgen check`.
#[derive(clap::Args)]
pub struct CheckArgs {
    /// A ledger to check; repeat it for several (a run's and its probes'), checked as one.
    #[arg(long, required = true)]
    ledger: Vec<PathBuf>,
    /// The database the run's Countersign used.
    #[arg(long, env = "COUNTERSIGN_DATABASE_URL")]
    database_url: String,
    /// Check while the run goes on (after each fault): the ledgers as written so far against
    /// one snapshot of the database read after them. Every check holds then but `not
    /// received` (a delivery marked after the ledgers were read), which waits for the end.
    #[arg(long)]
    during: bool,
}

/// The rows the checks read.
#[derive(Default)]
struct Stored {
    proposals: HashMap<Uuid, String>,
    /// The proposals stored under each idempotency key.
    keys: HashMap<String, Vec<Uuid>>,
    approvals: HashSet<Uuid>,
    commands: HashMap<Uuid, (String, i32)>,
    /// `(subject type, subject id, before, after)` of every status change, in trail order.
    changes: Vec<(String, String, Option<String>, String)>,
    /// How often the trail records each command's failure queuing it again, by command id.
    requeued: HashMap<String, usize>,
    /// How often the trail records each command's failure (`command.failed`, whatever
    /// followed), by command id.
    failures: HashMap<String, usize>,
    /// The webhook deliveries marked `delivered`.
    delivered: Vec<Uuid>,
    /// The pre-tool-checks the trail records, by `check_id`.
    checks: HashSet<String>,
}

const PROPOSALS: &str = "select id, status, idempotency_key from proposals";
const APPROVALS: &str = "select distinct proposal_id from approvals";
const COMMANDS: &str = "select id, status, attempts from commands";
const CHANGES: &str = "select subject_type, subject_id, before_status, after_status \
                       from audit_events where subject_type in ('proposal', 'command') \
                       and after_status is not null order by seq";
const REQUEUED: &str = "select subject_id from audit_events where action = 'command.failed' \
                        and after_status = 'queued'";
const DELIVERED: &str = "select id from webhook_deliveries where state = 'delivered'";
const CHECKS: &str = "select subject_id from audit_events where subject_type = 'pre_tool_check'";
const FAILURES: &str = "select subject_id from audit_events where action = 'command.failed' \
                        and subject_type = 'command'";

/// The rows the checks read, all from one snapshot of the database (one read-only
/// transaction), so that a check made while the run goes on sees each status change with its
/// trail event or neither.
async fn stored(url: &str) -> Result<Stored, sqlx::Error> {
    macro_rules! read {
        ($pool:expr, $snapshot:expr) => {{
            let pool = $pool;
            let mut tx = pool.begin().await?;
            if let Some(snapshot) = $snapshot {
                sqlx::query(snapshot).execute(&mut *tx).await?;
            }
            let proposals: Vec<(Uuid, String, String)> =
                sqlx::query_as(PROPOSALS).fetch_all(&mut *tx).await?;
            let approvals: Vec<(Uuid,)> = sqlx::query_as(APPROVALS).fetch_all(&mut *tx).await?;
            let commands: Vec<(Uuid, String, i32)> =
                sqlx::query_as(COMMANDS).fetch_all(&mut *tx).await?;
            let changes = sqlx::query_as(CHANGES).fetch_all(&mut *tx).await?;
            let requeued: Vec<(String,)> = sqlx::query_as(REQUEUED).fetch_all(&mut *tx).await?;
            let failures: Vec<(String,)> = sqlx::query_as(FAILURES).fetch_all(&mut *tx).await?;
            let delivered: Vec<(Uuid,)> = sqlx::query_as(DELIVERED).fetch_all(&mut *tx).await?;
            let checks: Vec<(String,)> = sqlx::query_as(CHECKS).fetch_all(&mut *tx).await?;
            tx.rollback().await?;
            Stored {
                keys: by_key(&proposals),
                proposals: (proposals.into_iter())
                    .map(|(id, status, _)| (id, status))
                    .collect(),
                approvals: approvals.into_iter().map(|(id,)| id).collect(),
                commands: commands
                    .into_iter()
                    .map(|(id, status, attempts)| (id, (status, attempts)))
                    .collect(),
                changes,
                requeued: counted(requeued.into_iter().map(|(id,)| id)),
                failures: counted(failures.into_iter().map(|(id,)| id)),
                delivered: delivered.into_iter().map(|(id,)| id).collect(),
                checks: checks.into_iter().map(|(id,)| id).collect(),
            }
        }};
    }
    Ok(if url.starts_with("sqlite:") {
        // A read transaction on SQLite's write-ahead log is a snapshot.
        read!(SqlitePool::connect(url).await?, None::<&str>)
    } else {
        let snapshot = "set transaction isolation level repeatable read, read only";
        read!(PgPool::connect(url).await?, Some(snapshot))
    })
}

/// The proposals stored under each idempotency key, from `(id, status, key)` rows.
fn by_key(proposals: &[(Uuid, String, String)]) -> HashMap<String, Vec<Uuid>> {
    proposals
        .iter()
        .fold(HashMap::new(), |mut keys, (id, _, key)| {
            keys.entry(key.clone()).or_insert_with(Vec::new).push(*id);
            keys
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
    duplicates: Vec<String>,
    double_runs: usize,
    trail: Vec<String>,
    /// Statuses a stream or a webhook told that their proposals never had.
    never_had: Vec<String>,
    /// Deliveries marked delivered that the receiver never recorded.
    not_received: Vec<String>,
}

pub async fn check(args: CheckArgs) -> Result<(), String> {
    let mut entries = Vec::new();
    for path in &args.ledger {
        entries.extend(ledger::read(path, args.during)?);
    }
    let db = stored(&args.database_url)
        .await
        .map_err(|e| format!("reading {}: {e}", args.database_url))?;
    let mut f = Findings::default();
    acknowledged(&entries, &db, &mut f);
    idempotency(&entries, &db, &mut f);
    runs(&entries, &db, &mut f);
    trail(&db, &mut f);
    told(&entries, &db, &mut f);
    if !args.during {
        received(&entries, &db, &mut f);
    }
    let verified = verify(&args.database_url).await;
    println!(
        "ledgers      {} ({} entries)",
        args.ledger.len(),
        entries.len()
    );
    let mut acked: Vec<_> = f.acked.iter().collect();
    acked.sort();
    for (op, n) in acked {
        println!("acknowledged {op:<8} {n}");
    }
    println!("missing      {}", f.missing.len());
    println!("duplicates   {}", f.duplicates.len());
    println!("double runs  {}", f.double_runs);
    println!("trail gaps   {}", f.trail.len());
    println!("never had    {}", f.never_had.len());
    match args.during {
        true => println!("not received (checked at the end)"),
        false => println!(
            "not received {} (of {} delivered)",
            f.not_received.len(),
            db.delivered.len()
        ),
    }
    println!("audit verify {}", verified.as_deref().unwrap_or_else(|e| e));
    let found = (f.missing.iter()).chain(&f.duplicates).chain(&f.trail);
    for m in found.chain(&f.never_had).chain(&f.not_received).take(20) {
        println!("  {m}");
    }
    let clean = f.missing.is_empty() && f.duplicates.is_empty() && f.trail.is_empty();
    let clean = clean && f.never_had.is_empty() && f.not_received.is_empty();
    if clean && f.double_runs == 0 && verified.is_ok() {
        println!(
            "ledger check: ok ({} entries: missing 0, duplicates 0, double runs 0, trail gaps 0, \
             never had 0)",
            entries.len()
        );
        Ok(())
    } else {
        Err("ledger check failed".into())
    }
}

/// Each acknowledged answer the database does not bear out goes in `missing`.
fn acknowledged(entries: &[Entry], db: &Stored, f: &mut Findings) {
    let mut failures: HashMap<Uuid, usize> = HashMap::new();
    // Each acknowledged lease is one of the command's attempts: the stored count holds them all.
    let mut leases: HashMap<Uuid, i32> = HashMap::new();
    for e in entries {
        if let Entry::Lease { command, .. } = e {
            *leases.entry(*command).or_default() += 1;
        }
    }
    for e in entries {
        let (op, fault) = match e {
            Entry::Submit { proposal, .. } => (
                "submit",
                (!db.proposals.contains_key(proposal))
                    .then(|| format!("submitted proposal {proposal} is missing")),
            ),
            Entry::Decide { proposal, verdict } => ("decide", decided(*proposal, verdict, db)),
            Entry::Lease { command, .. } => (
                "lease",
                match (db.commands.get(command), leases[command]) {
                    (Some((_, attempts)), acked) if *attempts >= acked => None,
                    (other, acked) => Some(format!(
                        "leased command {command} is missing ({other:?}; {acked} leases \
                         acknowledged)"
                    )),
                },
            ),
            Entry::Run { .. } => ("run", None),
            Entry::Seen { .. } => ("seen", None),
            Entry::Delivered { .. } => ("delivered", None),
            Entry::Check { check } => (
                "check",
                (!db.checks.contains(&check.to_string()))
                    .then(|| format!("pre-tool-check {check} is not in the trail")),
            ),
            Entry::Report { command, outcome } => {
                let nth = failures.entry(*command).or_default();
                if outcome == "failed" {
                    *nth += 1;
                }
                ("report", reported(*command, outcome, *nth, db))
            }
        };
        *f.acked.entry(op).or_default() += 1;
        f.missing.extend(fault);
    }
}

/// Why an acknowledged decision is missing, if it is: its proposal must have left `pending`
/// the way it was decided. A rejection's is `rejected` (it stays so); an approval's has its
/// approval recorded (its status moves on as its command runs).
fn decided(proposal: Uuid, verdict: &str, db: &Stored) -> Option<String> {
    let status = db.proposals.get(&proposal).map(String::as_str);
    let kept = match (status, verdict) {
        (None | Some("pending"), _) => false,
        (Some(status), "rejected") => status == "rejected",
        (Some(_), "approved") => db.approvals.contains(&proposal),
        (Some(_), _) => false,
    };
    (!kept).then(|| format!("decision {verdict} on {proposal} is missing ({status:?})"))
}

/// Why an acknowledged report is missing, if it is: a success's command is `succeeded`; the
/// `nth` acknowledged failure of a command needs `nth` failures of it in the trail
/// (`command.failed`, queued again or ended `failed` under the retry rules: a lease reports
/// once, so each acknowledged failure is a failure event of its own).
fn reported(command: Uuid, outcome: &str, nth: usize, db: &Stored) -> Option<String> {
    let stored = db.commands.get(&command);
    let recorded = db.failures.get(&command.to_string()).copied().unwrap_or(0);
    let kept = match (stored, outcome) {
        (Some((status, _)), "succeeded") => status == "succeeded",
        (Some(_), "failed") => recorded >= nth,
        _ => false,
    };
    (!kept).then(|| {
        format!(
            "report {outcome} on command {command} is missing ({stored:?}, \
             {recorded} failures in the trail)"
        )
    })
}

/// Each idempotency key whose acknowledged answers name more than one proposal, or whose one
/// proposal is not the only one the database holds for the key, goes in `duplicates`. (A key
/// answered with one proposal that is missing altogether is already counted missing.)
fn idempotency(entries: &[Entry], db: &Stored, f: &mut Findings) {
    let mut answered: BTreeMap<&str, BTreeSet<Uuid>> = BTreeMap::new();
    for e in entries {
        if let Entry::Submit {
            proposal,
            key: Some(key),
            ..
        } = e
        {
            answered.entry(key.as_str()).or_default().insert(*proposal);
        }
    }
    for (key, ids) in answered {
        let stored = db.keys.get(key).map(Vec::as_slice).unwrap_or_default();
        let lost = stored.is_empty() && ids.iter().all(|id| !db.proposals.contains_key(id));
        // One answer, and the key holds that proposal alone (or it is lost, counted missing).
        if ids.len() == 1 && (lost || ids.iter().eq(stored)) {
            continue;
        }
        f.duplicates.push(format!(
            "key {key} was answered with {ids:?}, and holds {stored:?}"
        ));
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
        // A subject's first change is its creation (from nothing); every later one starts
        // where the one before it ended. (An approved rollback's `command.queued` restates,
        // from nothing, the `queued` its approval moved it to.)
        match (last.get(&key).copied(), before.as_deref()) {
            (Some(p), Some(b)) if p != b => f.trail.push(format!(
                "{kind} {id}: the trail goes {p} then starts from {b}"
            )),
            (Some(p), None) if p != after => f.trail.push(format!(
                "{kind} {id}: the trail goes {p} then begins again from nothing"
            )),
            (None, Some(b)) => f.trail.push(format!(
                "{kind} {id}: its first change in the trail starts from {b}: its creation is \
                 missing"
            )),
            _ => {}
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

/// Each status a stream told or a delivery named that its proposal never had (neither stored
/// nor in its trail's changes, from or to) goes in `never_had`.
fn told(entries: &[Entry], db: &Stored, f: &mut Findings) {
    let mut had: HashMap<&str, HashSet<&str>> = HashMap::new();
    for (kind, id, before, after) in &db.changes {
        if kind == "proposal" {
            let statuses = had.entry(id.as_str()).or_default();
            statuses.extend(before.as_deref());
            statuses.insert(after.as_str());
        }
    }
    for e in entries {
        let (how, proposal, status) = match e {
            Entry::Seen { proposal, status } => ("a stream told", proposal, status),
            Entry::Delivered {
                proposal, status, ..
            } => ("a webhook delivered", proposal, status),
            _ => continue,
        };
        let id = proposal.to_string();
        let stored = db.proposals.get(proposal);
        let real = stored == Some(status)
            || had
                .get(id.as_str())
                .is_some_and(|s| s.contains(status.as_str()));
        if !real {
            f.never_had.push(format!(
                "{how} {status} of proposal {proposal}, which never had it (now {stored:?})"
            ));
        }
    }
}

/// Each delivery the database marks delivered whose id the ledger lacks goes in
/// `not_received`.
fn received(entries: &[Entry], db: &Stored, f: &mut Findings) {
    let got: HashSet<Uuid> = (entries.iter())
        .filter_map(|e| match e {
            Entry::Delivered { delivery, .. } => Some(*delivery),
            _ => None,
        })
        .collect();
    for id in db.delivered.iter().filter(|id| !got.contains(id)) {
        f.not_received
            .push(format!("delivery {id} is marked delivered, never received"));
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
            requeued: counted(requeued.iter().map(Uuid::to_string)),
            ..Stored::default()
        }
    }

    fn double_runs(entries: &[Entry], db: &Stored) -> usize {
        let mut f = Findings::default();
        runs(entries, db, &mut f);
        f.double_runs
    }

    fn missing(entries: &[Entry], db: &Stored) -> Vec<String> {
        let mut f = Findings::default();
        acknowledged(entries, db, &mut f);
        f.missing
    }

    fn duplicates(entries: &[Entry], db: &Stored) -> Vec<String> {
        let mut f = Findings::default();
        idempotency(entries, db, &mut f);
        f.duplicates
    }

    fn gaps(db: &Stored) -> Vec<String> {
        let mut f = Findings::default();
        trail(db, &mut f);
        f.trail
    }

    fn change(kind: &str, id: Uuid, before: Option<&str>, after: &str) -> Change {
        (
            kind.into(),
            id.to_string(),
            before.map(str::to_owned),
            after.into(),
        )
    }

    type Change = (String, String, Option<String>, String);

    fn submit(proposal: Uuid, key: &str) -> Entry {
        Entry::Submit {
            proposal,
            status: "pending".into(),
            key: Some(key.into()),
        }
    }

    fn report(command: Uuid, outcome: &str) -> Entry {
        Entry::Report {
            command,
            outcome: outcome.into(),
        }
    }

    #[test]
    fn a_retry_is_allowed_by_a_failure_the_trail_records_or_the_ledger_acknowledged() {
        let command = Uuid::new_v4();
        let run = || Entry::Run { command };
        let failed = report(command, "failed");
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

    #[test]
    fn a_trail_that_skips_a_change_or_ends_elsewhere_than_the_row_is_a_gap() {
        let (p, c) = (Uuid::new_v4(), Uuid::new_v4());
        let whole = Stored {
            proposals: HashMap::from([(p, "approved".into())]),
            commands: HashMap::from([(c, ("queued".into(), 0))]),
            changes: vec![
                change("proposal", p, None, "pending"),
                change("proposal", p, Some("pending"), "approved"),
                change("command", c, None, "queued"),
            ],
            ..Stored::default()
        };
        assert!(gaps(&whole).is_empty(), "{:?}", gaps(&whole));
        let skipped = Stored {
            changes: vec![
                change("proposal", p, None, "pending"),
                change("proposal", p, Some("rejected"), "approved"),
                change("command", c, None, "queued"),
            ],
            ..Stored::default()
        };
        let skipped = Stored {
            proposals: whole.proposals.clone(),
            commands: whole.commands.clone(),
            ..skipped
        };
        let found = gaps(&skipped);
        assert_eq!(found.len(), 1, "a change missing between two: {found:?}");
        assert!(
            found[0].contains("goes pending then starts from rejected"),
            "{found:?}"
        );
        let uncreated = Stored {
            proposals: whole.proposals.clone(),
            commands: whole.commands.clone(),
            changes: vec![
                change("proposal", p, Some("pending"), "approved"),
                change("command", c, None, "queued"),
                change("command", c, None, "queued"),
                change("command", c, Some("queued"), "leased"),
                change("command", c, None, "queued"),
            ],
            ..Stored::default()
        };
        let found = gaps(&uncreated);
        assert_eq!(found.len(), 2, "{found:?}");
        assert!(found[0].contains("its creation is missing"), "{found:?}");
        assert!(found[1].contains("begins again from nothing"), "{found:?}");
        let elsewhere = Stored {
            commands: HashMap::from([(c, ("leased".into(), 1))]),
            ..whole
        };
        let found = gaps(&elsewhere);
        assert_eq!(found.len(), 1, "the last change missing: {found:?}");
        assert!(
            found[0].contains(&format!("command {c} is leased")),
            "{found:?}"
        );
    }

    #[test]
    fn a_decision_the_proposal_does_not_bear_out_is_missing() {
        let p = Uuid::new_v4();
        let decide = |verdict: &str| Entry::Decide {
            proposal: p,
            verdict: verdict.into(),
        };
        let db = |status: &str, approved: bool| Stored {
            proposals: HashMap::from([(p, status.into())]),
            approvals: if approved {
                HashSet::from([p])
            } else {
                HashSet::new()
            },
            ..Stored::default()
        };
        assert!(missing(&[decide("approved")], &db("succeeded", true)).is_empty());
        assert!(missing(&[decide("rejected")], &db("rejected", false)).is_empty());
        for (verdict, db, why) in [
            ("approved", Stored::default(), "no proposal"),
            ("approved", db("pending", false), "still pending"),
            ("approved", db("approved", false), "no approval recorded"),
            ("rejected", db("approved", true), "approved, not rejected"),
            ("rejected", db("expired", false), "expired, not rejected"),
        ] {
            let found = missing(&[decide(verdict)], &db);
            assert_eq!(found.len(), 1, "{why}: {found:?}");
            assert!(
                found[0].starts_with(&format!("decision {verdict} on {p}")),
                "{found:?}"
            );
        }
    }

    #[test]
    fn a_lease_of_a_command_never_leased_is_missing() {
        let c = Uuid::new_v4();
        let lease = [Entry::Lease {
            command: c,
            proposal: Uuid::new_v4(),
        }];
        let db = |attempts: i32| Stored {
            commands: HashMap::from([(c, ("leased".into(), attempts))]),
            ..Stored::default()
        };
        assert!(missing(&lease, &db(1)).is_empty());
        let twice = [lease[0].clone(), lease[0].clone()];
        assert!(missing(&twice, &db(2)).is_empty());
        assert_eq!(missing(&twice, &db(1)).len(), 2, "a lease the count lost");
        for (db, why) in [(Stored::default(), "no command"), (db(0), "never leased")] {
            let found = missing(&lease, &db);
            assert_eq!(found.len(), 1, "{why}: {found:?}");
            assert!(
                found[0].starts_with(&format!("leased command {c}")),
                "{found:?}"
            );
        }
    }

    #[test]
    fn a_failure_report_the_trail_does_not_record_is_missing() {
        let c = Uuid::new_v4();
        let db = |status: &str, failures: usize| Stored {
            commands: HashMap::from([(c, (status.into(), 2))]),
            failures: counted(std::iter::repeat_n(c.to_string(), failures)),
            ..Stored::default()
        };
        let failed = || report(c, "failed");
        assert!(
            missing(&[failed()], &db("queued", 1)).is_empty(),
            "queued again"
        );
        assert!(
            missing(&[failed()], &db("failed", 1)).is_empty(),
            "ended failed"
        );
        assert!(
            missing(&[failed(), failed()], &db("failed", 2)).is_empty(),
            "two failures, two events"
        );
        for (entries, db, why) in [
            (vec![failed()], db("queued", 0), "no failure in the trail"),
            (
                vec![failed(), failed()],
                db("failed", 1),
                "two acknowledged, one recorded",
            ),
            (vec![failed()], Stored::default(), "no command"),
            (
                vec![report(c, "succeeded")],
                db("failed", 1),
                "a success stored as a failure",
            ),
        ] {
            let found = missing(&entries, &db);
            assert_eq!(found.len(), 1, "{why}: {found:?}");
            assert!(found[0].starts_with("report "), "{found:?}");
        }
    }

    #[test]
    fn a_key_answered_with_two_proposals_or_stored_twice_is_a_duplicate() {
        let (p, q) = (Uuid::new_v4(), Uuid::new_v4());
        let db = |keys: &[(&str, Uuid)]| Stored {
            proposals: HashMap::from([(p, "pending".into()), (q, "pending".into())]),
            keys: keys.iter().fold(HashMap::new(), |mut m, (k, id)| {
                m.entry((*k).to_owned()).or_insert_with(Vec::new).push(*id);
                m
            }),
            ..Stored::default()
        };
        let once = db(&[("k", p), ("l", q)]);
        assert!(duplicates(&[submit(p, "k"), submit(p, "k")], &once).is_empty());
        let old = Entry::Submit {
            proposal: p,
            status: "pending".into(),
            key: None,
        };
        assert!(duplicates(&[old], &db(&[])).is_empty(), "an older ledger");
        assert!(
            duplicates(&[submit(Uuid::new_v4(), "m")], &once).is_empty(),
            "missing, counted there"
        );
        for (entries, db, why) in [
            (
                vec![submit(p, "k"), submit(q, "k")],
                once,
                "answered with two",
            ),
            (
                vec![submit(p, "k")],
                db(&[("k", p), ("k", q)]),
                "stored twice",
            ),
            (
                vec![submit(p, "k")],
                db(&[("k", q), ("l", p)]),
                "another stored",
            ),
        ] {
            let found = duplicates(&entries, &db);
            assert_eq!(found.len(), 1, "{why}: {found:?}");
            assert!(found[0].starts_with("key k "), "{found:?}");
        }
    }
    fn never_had(entries: &[Entry], db: &Stored) -> Vec<String> {
        let mut f = Findings::default();
        told(entries, db, &mut f);
        f.never_had
    }

    #[test]
    fn a_status_told_that_the_proposal_never_had_is_found() {
        let p = Uuid::new_v4();
        let db = Stored {
            proposals: HashMap::from([(p, "succeeded".into())]),
            changes: vec![
                change("proposal", p, Some("pending"), "approved"),
                change("proposal", p, Some("approved"), "succeeded"),
            ],
            ..Stored::default()
        };
        let seen = |status: &str| Entry::Seen {
            proposal: p,
            status: status.into(),
        };
        let delivered = |status: &str| Entry::Delivered {
            delivery: Uuid::new_v4(),
            proposal: p,
            status: status.into(),
        };
        let real = [seen("pending"), seen("approved"), delivered("succeeded")];
        assert!(
            never_had(&real, &db).is_empty(),
            "{:?}",
            never_had(&real, &db)
        );
        for (entry, why) in [
            (seen("rejected"), "a stream told a status it never had"),
            (delivered("failed"), "a webhook named a status it never had"),
            (
                Entry::Seen {
                    proposal: Uuid::new_v4(),
                    status: "pending".into(),
                },
                "a proposal that does not exist",
            ),
        ] {
            let found = never_had(&[entry], &db);
            assert_eq!(found.len(), 1, "{why}: {found:?}");
            assert!(found[0].contains("which never had it"), "{found:?}");
        }
    }

    #[test]
    fn a_delivery_marked_delivered_but_never_received_is_found() {
        let (d, e, p) = (Uuid::new_v4(), Uuid::new_v4(), Uuid::new_v4());
        let db = Stored {
            delivered: vec![d, e],
            ..Stored::default()
        };
        let got = |delivery| Entry::Delivered {
            delivery,
            proposal: p,
            status: "approved".into(),
        };
        let not_received = |entries: &[Entry]| {
            let mut f = Findings::default();
            received(entries, &db, &mut f);
            f.not_received
        };
        assert!(
            not_received(&[got(d), got(e), got(e)]).is_empty(),
            "at least once"
        );
        let found = not_received(&[got(d), got(Uuid::new_v4())]);
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(found[0].starts_with(&format!("delivery {e} ")), "{found:?}");
    }
}
