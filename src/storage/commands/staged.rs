//! A writer group's leases and successful reports, several to a statement: the executor
//! queue's two commonest writes, made together as the writer inserts a group's proposals
//! ([`super::super::writer`]). On PostgreSQL, where every statement is a round trip on the
//! writer's serial path, a group of leases is one statement per executor filter and a group of
//! successful reports is one statement; SQLite (a statement is a call into the library) runs
//! them one by one, with the same outcomes.
//!
//! Each change later takes what became of its own lease or report ([`StagedClaims::take`],
//! [`StagedSettles::take`]); the outcomes are those of running the changes one after another
//! in the order given.

use std::sync::Arc;

use sqlx::PgConnection;
use sqlx::types::Json;
use time::OffsetDateTime;

use super::super::Result;
use super::super::db::Conn;
use super::succeeded::{ProposalSeen, Settled, Success};
use super::{Claimed, CommandRecord, LeaseAsk, WithApproval};
use crate::domain::command::CommandStatus;
use crate::domain::lifecycle::ProposalStatus;

/// What a writer made up front for its group's changes: for each change's input (an ask, a
/// report), its outcome, until the change takes it.
pub struct Staged<I, O> {
    rows: Vec<(Arc<I>, Option<O>)>,
    made: usize,
}

impl<I, O> Staged<I, O> {
    fn new(rows: Vec<(Arc<I>, Option<O>)>) -> Self {
        let made = rows.len();
        Self { rows, made }
    }

    /// How many were made together.
    pub fn count(&self) -> usize {
        self.made
    }

    /// Whether `input` (the very one) was made here and not yet taken.
    pub fn holds(&self, input: &Arc<I>) -> bool {
        self.rows.iter().any(|(i, _)| Arc::ptr_eq(i, input))
    }

    /// What became of `input` (the very one, not one equal to it), once: `Some(Some(_))` what
    /// it got, `Some(None)` nothing (no command it may run was queued; a report that did not
    /// hold, whose change must find out why); `None` if it was not among those staged (or was
    /// taken already), and the change makes its own.
    pub fn take(&mut self, input: &Arc<I>) -> Option<Option<O>> {
        let at = self.rows.iter().position(|(i, _)| Arc::ptr_eq(i, input))?;
        Some(self.rows.swap_remove(at).1)
    }
}

/// The leases a writer took for its group's changes ([`claim_staged`]).
pub type StagedClaims = Staged<LeaseAsk, Claimed>;

/// What a settled success report answers: the command and what was seen of its proposal.
pub type SettledSuccess = (CommandRecord, Option<ProposalSeen>);

/// The success reports a writer settled for its group's changes ([`settle_staged`]).
pub type StagedSettles = Staged<Success, SettledSuccess>;

/// Leases for `asks`, in order: each the oldest command it may run that an earlier ask did
/// not take (as [`super::claim_next`] one after another). On PostgreSQL, one statement for
/// each run of consecutive asks with the same filter ([`LeaseAsk::same_filter`]).
pub async fn claim_staged(conn: Conn<'_>, asks: &[Arc<LeaseAsk>]) -> Result<StagedClaims> {
    let mut rows = Vec::with_capacity(asks.len());
    let conn = match conn {
        Conn::Postgres(c) => c,
        mut sqlite @ Conn::Sqlite(_) => {
            for ask in asks {
                let claimed = super::claim_next(sqlite.reborrow(), ask).await?;
                rows.push((Arc::clone(ask), claimed));
            }
            return Ok(StagedClaims::new(rows));
        }
    };
    let mut start = 0;
    while start < asks.len() {
        let run = asks[start..]
            .iter()
            .take_while(|a| a.same_filter(&asks[start]))
            .count();
        let chunk = &asks[start..start + run];
        let mut claimed = pg_claim(conn, &chunk.iter().map(|a| &**a).collect::<Vec<_>>()).await?;
        rows.extend(chunk.iter().map(|ask| {
            let at = claimed
                .iter()
                .position(|c| c.0 == ask.lease_token_hash)
                .map(|at| claimed.swap_remove(at).1);
            (Arc::clone(ask), at)
        }));
        start += run;
    }
    Ok(StagedClaims::new(rows))
}

/// PostgreSQL: leases for `asks` (one filter: the first's) in one statement: the oldest
/// commands they may run, locked (skipping those another instance holds), numbered in queue
/// order and matched to the asks in their order. Answers each lease's token hash and what it
/// claimed.
pub(super) async fn pg_claim(
    conn: &mut PgConnection,
    asks: &[&LeaseAsk],
) -> Result<Vec<(String, Claimed)>> {
    let Some(first) = asks.first() else {
        return Ok(Vec::new());
    };
    let sql = concat!(
        "with asks as (select * from unnest($2::text[], $3::timestamptz[], $8::timestamptz[]) \
         with ordinality as a(a_hash, a_expires, a_now, a_n)), \
         picked as (select c.seq from commands c where ",
        pg_claimable!(),
        " order by c.seq limit $9 for update skip locked), \
         numbered as (select seq as p_seq, row_number() over (order by seq) as p_n from picked) \
         update commands set status = 'leased', attempts = attempts + 1, leased_by = $1, \
         lease_token_hash = asks.a_hash, lease_expires_at = asks.a_expires, \
         run_deadline = null, updated_at = asks.a_now \
         from numbered join asks on asks.a_n = numbered.p_n \
         where commands.seq = numbered.p_seq returning ",
        cols!(),
        pg_approved!()
    );
    let hashes: Vec<&str> = asks.iter().map(|a| a.lease_token_hash.as_str()).collect();
    let expires: Vec<OffsetDateTime> = asks.iter().map(|a| a.expires_at).collect();
    let nows: Vec<OffsetDateTime> = asks.iter().map(|a| a.now).collect();
    // A command is claimable for the group if it is for each ask: available by the earliest
    // ask's time, its window still open at the latest's. (The asks' times differ by the
    // moments between their requests: a command whose window closes in between is left to
    // expire, as it would for the later asks, rather than leased after its window.)
    let earliest = nows.iter().min().copied().unwrap_or(first.now);
    let latest = nows.iter().max().copied().unwrap_or(first.now);
    let rows: Vec<WithApproval> = sqlx::query_as(sql)
        .bind(&first.executor)
        .bind(&hashes)
        .bind(&expires)
        .bind(earliest)
        .bind(first.scope.as_ref().map(Json))
        .bind(first.wanted.as_ref().map(Json))
        .bind(latest)
        .bind(&nows)
        .bind(i64::try_from(asks.len()).unwrap_or(i64::MAX))
        .fetch_all(conn)
        .await?;
    rows.into_iter()
        .map(|r| {
            let hash = r.row.lease_token_hash.clone().unwrap_or_default();
            Ok((hash, r.into_claimed()?))
        })
        .collect()
}

/// Settles `reports` in success, in order, each as [`super::settle_succeeded`] would. A report
/// on a command an earlier one names is left out (its change settles it itself, after: it
/// finds the command settled, or still held if the earlier one did not hold). On PostgreSQL
/// one statement, which also moves each settled action's proposal.
pub async fn settle_staged(conn: Conn<'_>, reports: &[Arc<Success>]) -> Result<StagedSettles> {
    let mut firsts: Vec<Arc<Success>> = Vec::with_capacity(reports.len());
    for report in reports {
        if !firsts.iter().any(|earlier| earlier.id == report.id) {
            firsts.push(Arc::clone(report));
        }
    }
    let reports = &firsts[..];
    let mut rows = Vec::with_capacity(reports.len());
    let conn = match conn {
        Conn::Postgres(c) => c,
        mut sqlite @ Conn::Sqlite(_) => {
            for report in reports {
                let settled = super::settle_succeeded(sqlite.reborrow(), report).await?;
                rows.push((Arc::clone(report), settled));
            }
            return Ok(StagedSettles::new(rows));
        }
    };
    let mut settled = pg_settle(conn, &reports.iter().map(|r| &**r).collect::<Vec<_>>()).await?;
    rows.extend(reports.iter().map(|report| {
        let at = settled
            .iter()
            .position(|(c, _)| c.id == report.id)
            .map(|at| settled.swap_remove(at));
        (Arc::clone(report), at)
    }));
    Ok(StagedSettles::new(rows))
}

/// PostgreSQL: settles `reports` (no two for one command) in one statement: each command the
/// reporting executor holds under the token it presented, if it may run (a rollback, or an
/// action whose proposal is still executable), moving each such action's proposal to
/// `succeeded` from the status the statement read (one another instance moved meanwhile is
/// left to [`crate::storage::proposals::move_status`]).
pub(super) async fn pg_settle(
    conn: &mut PgConnection,
    reports: &[&Success],
) -> Result<Vec<SettledSuccess>> {
    let sql = concat!(
        "with r as (select * from unnest($1::uuid[], $2::jsonb[], $3::text[], $4::text[], \
         $5::timestamptz[]) as r(r_id, r_result, r_hash, r_executor, r_now)), \
         s as (update commands set status = $6, result = r.r_result, error = null, \
         interruption = null, side_effect = null, available_at = r.r_now, \
         completed_at = r.r_now, updated_at = r.r_now, lease_token_hash = null \
         from r where commands.id = r.r_id and commands.status = 'leased' \
         and commands.lease_token_hash = r.r_hash and commands.leased_by = r.r_executor \
         and (commands.kind <> 'action' or (select p.status from proposals p \
         where p.id = commands.proposal_id) in ($7, $8)) returning ",
        cols!(),
        ", (select p.status from proposals p where p.id = commands.proposal_id) \
         as proposal_status, r.r_now), \
         m as (update proposals p set status = $9, updated_at = s.r_now from s \
         where p.id = s.proposal_id and s.kind = 'action' and p.status = s.proposal_status \
         and p.status <> $9 returning p.id) \
         select s.*, exists (select 1 from m where m.id = s.proposal_id and s.kind = 'action') \
         as proposal_moved \
         from s"
    );
    let ids: Vec<_> = reports.iter().map(|r| r.id).collect();
    let results: Vec<Json<&serde_json::Value>> = reports.iter().map(|r| Json(&r.result)).collect();
    let hashes: Vec<&str> = reports
        .iter()
        .map(|r| r.lease_token_hash.as_str())
        .collect();
    let executors: Vec<&str> = reports.iter().map(|r| r.executor.as_str()).collect();
    let nows: Vec<OffsetDateTime> = reports.iter().map(|r| r.now).collect();
    let [first, second] = ProposalStatus::EXECUTABLE;
    let rows: Vec<Settled> = sqlx::query_as(sql)
        .bind(&ids)
        .bind(&results)
        .bind(&hashes)
        .bind(&executors)
        .bind(&nows)
        .bind(CommandStatus::Succeeded.as_str())
        .bind(first.as_str())
        .bind(second.as_str())
        .bind(ProposalStatus::Succeeded.as_str())
        .fetch_all(conn)
        .await?;
    rows.into_iter().map(Settled::into_parts).collect()
}
