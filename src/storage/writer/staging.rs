//! Staging: the first statement of a group's changes, run up front for all of them
//! ([`super::Upfront`]): a group's proposal rows, success reports and leases in a few
//! statements instead of one each.

use std::sync::Arc;

use super::tx::{Held, Job, Tx};
use crate::storage::commands::{self, LeaseAsk, Success};
use crate::storage::error::Result;
use crate::storage::proposals;

/// Runs the first statement of a group's changes up front ([`super::Upfront`]), several to a
/// statement, so a group makes a few round trips to the database instead of one per change;
/// each change then finds what became of its own ([`Tx::staged_proposal`],
/// [`Tx::staged_claim`], [`Tx::staged_success`]). Only for a group run straight (no
/// savepoints), where a failure rolls everything back, staged rows included. The outcomes are
/// those of the changes run one after another, the staged ones first ([`super::run_straight`]):
/// proposal rows ([`rows_to_stage`]), then success reports (but a second report on one
/// command, left to its own change), then leases, in the order handed over, and last the
/// leases asked for with reports that settled ([`stage_claims_after`]). On
/// PostgreSQL a group with both reports and leases settles and leases in one statement, even
/// one of each (executors that lease, then report: each group holds some executors' reports
/// and others' next leases), and so does a group whose reports ask for their next commands
/// and that has no other lease, even for one report (executors that report with `next`: the
/// leases for the reports that settle); otherwise, alone, a lease or a report is its change's
/// own statement anyway. A
/// lease staged so runs before the group's changes that are not staged (as a group's leases
/// always did when there were two): one handed over after a submission that queues a command,
/// or a failure that queues one again, does not see that command and leases the next (or none;
/// the queue's wake-up then calls its executor back).
pub(super) async fn stage(tx: &mut Tx, batch: &[Box<dyn Job>]) -> Result<()> {
    let rows = rows_to_stage(batch);
    if rows.len() > 1 {
        tx.staged.proposals = Some(proposals::insert_staged(tx.conn(), &rows).await?);
    }
    let reports: Vec<Arc<Success>> = (batch.iter())
        .filter_map(|job| job.upfront()?.success().cloned())
        .collect();
    let asks: Vec<Arc<LeaseAsk>> = (batch.iter())
        .filter_map(|job| job.upfront()?.claim().cloned())
        .collect();
    if matches!(tx.held, Held::Postgres(_)) && !reports.is_empty() && !asks.is_empty() {
        // One statement for both on PostgreSQL, a round trip fewer (even for one of each).
        let (settles, claims) =
            commands::settle_and_claim_staged(tx.conn(), &reports, &asks).await?;
        tx.staged.settles = Some(settles);
        tx.staged.claims = Some(claims);
        tx.staged.together = true;
        return stage_claims_after(tx, batch).await;
    }
    let after: Vec<(Arc<Success>, Arc<LeaseAsk>)> = (batch.iter())
        .filter_map(|job| job.upfront()?.claim_after())
        .map(|(report, ask)| (Arc::clone(report), Arc::clone(ask)))
        .collect();
    if matches!(tx.held, Held::Postgres(_)) && asks.is_empty() && !after.is_empty() {
        // Reports asking for their executors' next commands: one statement for both on
        // PostgreSQL, even for one report.
        let (settles, claims) =
            commands::settle_then_claim_staged(tx.conn(), &reports, &after).await?;
        tx.staged.settles = Some(settles);
        tx.staged.claims = claims;
        tx.staged.together = true;
        return stage_claims_after(tx, batch).await;
    }
    if reports.len() > 1 {
        tx.staged.settles = Some(commands::settle_staged(tx.conn(), &reports).await?);
    }
    if asks.len() > 1 {
        tx.staged.claims = Some(commands::claim_staged(tx.conn(), &asks).await?);
    }
    stage_claims_after(tx, batch).await
}

/// The leases asked for with success reports ([`super::Upfront::SuccessThenClaim`]), in one
/// more statement once the group's reports are settled (one for each run of asks with the same
/// executor and tools, as [`commands::claim_staged`]): each only if the writer settled its
/// report, and not already made with the reports ([`commands::settle_then_claim_staged`]). A
/// lease whose report it did not settle (none staged, or the report did not hold) is left to
/// its change, which leases only if its report, made there, is taken.
async fn stage_claims_after(tx: &mut Tx, batch: &[Box<dyn Job>]) -> Result<()> {
    let Some(settles) = tx.staged.settles.as_ref() else {
        return Ok(());
    };
    let staged = tx.staged.claims.as_ref();
    let asks: Vec<Arc<LeaseAsk>> = (batch.iter())
        .filter_map(|job| job.upfront()?.claim_after())
        .filter(|(report, ask)| {
            settles.settled(report) && !staged.is_some_and(|claims| claims.holds(ask))
        })
        .map(|(_, ask)| Arc::clone(ask))
        .collect();
    if asks.is_empty() {
        return Ok(());
    }
    let claims = commands::claim_staged(tx.conn(), &asks).await?;
    match tx.staged.claims.as_mut() {
        Some(staged) => staged.extend(claims),
        None => tx.staged.claims = Some(claims),
    }
    Ok(())
}

/// The proposal rows of `batch` to insert up front: each change's, but one naming an id or
/// idempotency key an earlier one names (such a row is inserted by its own change, when it
/// runs: after the staged rows, so its `seq` is later than theirs).
fn rows_to_stage(batch: &[Box<dyn Job>]) -> Vec<Arc<proposals::NewProposal>> {
    // Compared with every earlier row, staged or not: a row that collides only with one left
    // to insert itself must wait for it too, or it could take a key that row would have got.
    let earlier: Vec<&Arc<proposals::NewProposal>> = (batch.iter())
        .filter_map(|job| job.upfront()?.proposal())
        .collect();
    earlier
        .iter()
        .enumerate()
        .filter(|(i, row)| !earlier[..*i].iter().any(|e| e.collides_with(row)))
        .map(|(_, row)| Arc::clone(row))
        .collect()
}
