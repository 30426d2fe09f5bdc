//! A writer group's leases and successful reports, several to a statement: the executor
//! queue's two commonest writes, made together as the writer inserts a group's proposals
//! ([`super::super::writer`]). On PostgreSQL, where every statement is a round trip on the
//! writer's serial path, a group's successful reports and its leases are one statement
//! ([`settle_and_claim_staged`]; one more for each further executor filter among the leases).
//! On SQLite, whose statements are each two thread hand-offs on that path (sqlx runs the
//! connection on a thread of its own), the reports are two statements (their settles, then
//! their proposals' moves) and the leases one per filter ([`sqlite`]).
//!
//! Each change later takes what became of its own lease or report ([`StagedClaims::take`],
//! [`StagedSettles::take`]); the outcomes are those of running the changes one after another
//! in the order given.

use std::sync::Arc;

use sqlx::PgConnection;
use sqlx::types::Json;
use time::OffsetDateTime;
use uuid::Uuid;

/// Both backends: the update that settles each reported command (rows `r`: `r_id`, `r_result`,
/// `r_hash`, `r_executor`, `r_now`) the reporting executor holds under the token it presented,
/// if it may run (a rollback, or an action whose proposal is `$first` or `$second`: still
/// executable), to `$status`; returning the row and its proposal's status.
macro_rules! settle_update {
    ($status:literal, $first:literal, $second:literal) => {
        concat!(
            "update commands set status = ",
            $status,
            ", result = r.r_result, error = null, \
             interruption = null, side_effect = null, available_at = r.r_now, \
             completed_at = r.r_now, updated_at = r.r_now, lease_token_hash = null \
             from r where commands.id = r.r_id and commands.status = 'leased' \
             and commands.lease_token_hash = r.r_hash and commands.leased_by = r.r_executor \
             and (commands.kind <> 'action' or (select p.status from proposals p \
             where p.id = commands.proposal_id) in (",
            $first,
            ", ",
            $second,
            ")) returning ",
            cols!(),
            ", (select p.status from proposals p where p.id = commands.proposal_id) \
             as proposal_status"
        )
    };
}

/// Both backends: the update that leases each picked command (rows `numbered`: `p_seq`, `p_n`)
/// to executor `$1` under the ask of its number (rows `asks`: `a_n`, `a_hash`, `a_expires`,
/// `a_now`), returning the row.
macro_rules! claim_update {
    () => {
        concat!(
            "update commands set status = 'leased', attempts = attempts + 1, leased_by = $1, \
             lease_token_hash = asks.a_hash, lease_expires_at = asks.a_expires, \
             run_deadline = null, updated_at = asks.a_now \
             from numbered join asks on asks.a_n = numbered.p_n \
             where commands.seq = numbered.p_seq returning ",
            cols!()
        )
    };
}

mod sqlite;

use super::ask::{Claimed, LeaseAsk, SettledSuccess, Success};
use super::row::{Settled, WithApproval, into_claim};
use crate::domain::command::CommandStatus;
use crate::domain::lifecycle::ProposalStatus;
use crate::storage::conn::Conn;
use crate::storage::error::Result;

/// What a writer made up front for its group's changes: for each change's input (an ask, a
/// report), its outcome, until the change takes it.
pub struct Staged<I, O> {
    rows: Vec<(Arc<I>, Option<O>)>,
    made: usize,
    statements: usize,
}

impl<I, O> Staged<I, O> {
    fn new(rows: Vec<(Arc<I>, Option<O>)>, statements: usize) -> Self {
        let made = rows.len();
        Self {
            rows,
            made,
            statements,
        }
    }

    /// How many were made together.
    pub fn count(&self) -> usize {
        self.made
    }

    /// In how many statements (one that also made the other kind counted on the reports' side).
    pub fn statements(&self) -> usize {
        self.statements
    }

    /// Whether `input` (the very one) was made here and not yet taken.
    pub fn holds(&self, input: &Arc<I>) -> bool {
        self.rows.iter().any(|(i, _)| Arc::ptr_eq(i, input))
    }

    /// Whether `input` (the very one) was made here, not yet taken, and got something (a
    /// report that settled, a lease that claimed a command).
    pub fn settled(&self, input: &Arc<I>) -> bool {
        (self.rows.iter()).any(|(i, o)| Arc::ptr_eq(i, input) && o.is_some())
    }

    /// Whether something made here for an input was never taken (a command leased or
    /// settled up front that no change answered for, which must never be committed).
    pub fn left_over(&self) -> bool {
        self.rows.iter().any(|(_, o)| o.is_some())
    }

    /// Adds what a later statement made for other inputs.
    pub fn extend(&mut self, other: Self) {
        self.made += other.made;
        self.statements += other.statements;
        self.rows.extend(other.rows);
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

/// The leases a writer took for its group's changes ([`claim_staged`],
/// [`settle_and_claim_staged`], [`settle_then_claim_staged`]).
pub type StagedClaims = Staged<LeaseAsk, Claimed>;

/// The success reports a writer settled for its group's changes ([`settle_staged`],
/// [`settle_and_claim_staged`], [`settle_then_claim_staged`]).
pub type StagedSettles = Staged<Success, SettledSuccess>;

/// Leases for `asks`, in order: each the oldest command it may run that an earlier ask did
/// not take (as [`super::claim_next`] one after another): one statement for each run of
/// consecutive asks with the same filter ([`LeaseAsk::same_filter`]).
pub async fn claim_staged(conn: Conn<'_>, asks: &[Arc<LeaseAsk>]) -> Result<StagedClaims> {
    let mut rows = Vec::with_capacity(asks.len());
    let statements = claim_runs(conn, asks, None, &mut rows).await?;
    Ok(StagedClaims::new(rows, statements))
}

/// Leases for `asks` (one filter: the first's) in one statement, on either backend
/// ([`pg_claim`], [`sqlite::claim`]): each lease's token hash and what it claimed.
pub(super) async fn claim(conn: Conn<'_>, asks: &[&LeaseAsk]) -> Result<Vec<(String, Claimed)>> {
    match conn {
        Conn::Postgres(c) => pg_claim(c, asks).await,
        Conn::Sqlite(c) => sqlite::claim(c, asks).await,
    }
}

/// The length of the run of asks at the start of `asks` that one statement claims for.
/// (Items that carry an ask: `ask` finds it.)
fn first_run<T>(items: &[T], ask: impl Fn(&T) -> &LeaseAsk) -> usize {
    let Some(first) = items.first() else {
        return 0;
    };
    (items.iter())
        .take_while(|item| ask(item).same_filter(ask(first)))
        .count()
}

/// Matches the leases of `chunk` (one run) to what a statement `claimed` (by token hash) and
/// adds them to `rows` in order; an ask with none got nothing.
fn match_claims(
    chunk: &[Arc<LeaseAsk>],
    mut claimed: Vec<(String, Claimed)>,
    rows: &mut Vec<(Arc<LeaseAsk>, Option<Claimed>)>,
) {
    rows.extend(chunk.iter().map(|ask| {
        let at = claimed
            .iter()
            .position(|c| c.0 == ask.lease_token_hash)
            .map(|at| claimed.swap_remove(at).1);
        (Arc::clone(ask), at)
    }));
}

/// Claims for `asks` one run at a time ([`first_run`]), adding each ask's lease to `rows` in
/// order; `made` is what a statement already made claimed for the first run. Answers how many
/// statements it ran.
async fn claim_runs(
    mut conn: Conn<'_>,
    asks: &[Arc<LeaseAsk>],
    mut made: Option<Vec<(String, Claimed)>>,
    rows: &mut Vec<(Arc<LeaseAsk>, Option<Claimed>)>,
) -> Result<usize> {
    let (mut start, mut statements) = (0, 0);
    while start < asks.len() {
        let chunk = &asks[start..start + first_run(&asks[start..], |a| &**a)];
        let claimed = match made.take() {
            Some(claimed) => claimed,
            None => {
                statements += 1;
                let run: Vec<&LeaseAsk> = chunk.iter().map(|a| &**a).collect();
                claim(conn.reborrow(), &run).await?
            }
        };
        match_claims(chunk, claimed, rows);
        start += chunk.len();
    }
    Ok(statements)
}

/// PostgreSQL: a statement's query, its rows as `T`.
type PgQuery<'q, T> = sqlx::query::QueryAs<'q, sqlx::Postgres, T, sqlx::postgres::PgArguments>;

/// PostgreSQL, the leases' part of a statement (`$1`–`$9`, bound by [`bind_claim`]): the asks
/// numbered in order, then [`pg_pick`] for as many.
macro_rules! pg_claim_ctes {
    () => {
        concat!(
            "asks as (select * from unnest($2::text[], $3::timestamptz[], $8::timestamptz[]) \
             with ordinality as a(a_hash, a_expires, a_now, a_n)), ",
            pg_pick!("$9")
        )
    };
}

/// PostgreSQL, the leases asked with reports, after the reports' part of a statement
/// ([`pg_settle_ctes`]; `$1`–`$9`, bound by [`bind_asks`] and the reports' command ids): the
/// asks whose report `s` settled, numbered in order, then [`pg_pick`] for as many.
macro_rules! pg_claim_after_ctes {
    () => {
        concat!(
            "after_asks as (select * from unnest($2::text[], $3::timestamptz[], \
             $8::timestamptz[], $9::uuid[]) \
             with ordinality as x(a_hash, a_expires, a_now, a_report, a_order)), \
             asks as (select a_hash, a_expires, a_now, \
             row_number() over (order by a_order) as a_n from after_asks \
             where a_report in (select id from s)), ",
            pg_pick!("(select count(*) from asks)")
        )
    };
}

/// PostgreSQL: the oldest `$limit` commands the asks may run ([`pg_claimable`]), locked
/// (skipping those another instance holds) and numbered in queue order.
macro_rules! pg_pick {
    ($limit:literal) => {
        concat!(
            "picked as (select c.seq from commands c where ",
            pg_claimable!(),
            " order by c.seq limit ",
            $limit,
            " for update skip locked), \
             numbered as (select seq as p_seq, row_number() over (order by seq) as p_n \
             from picked)"
        )
    };
}

/// PostgreSQL, the leases' update after [`pg_claim_ctes`]: each picked command leased to the
/// ask of its number, returned with the hash of its spec as approved.
macro_rules! pg_claim_update {
    () => {
        concat!(claim_update!(), pg_approved!())
    };
}

/// Binds the leases' parameters (`$1`–`$9` of [`pg_claim_ctes`], after any bound before) for
/// `asks`, one filter: the first's.
fn bind_claim<'q, T>(query: PgQuery<'q, T>, asks: &[&'q LeaseAsk]) -> PgQuery<'q, T> {
    bind_asks(query, asks).bind(i64::try_from(asks.len()).unwrap_or(i64::MAX))
}

/// Binds the asks' parameters (`$1`–`$8` of [`pg_claim_ctes`] and [`pg_claim_after_ctes`],
/// after any bound before) for `asks`, one filter: the first's.
fn bind_asks<'q, T>(query: PgQuery<'q, T>, asks: &[&'q LeaseAsk]) -> PgQuery<'q, T> {
    // Callers make no statement for no asks (one made would fail for want of parameters).
    let Some(&first) = asks.first() else {
        return query;
    };
    let hashes: Vec<&str> = asks.iter().map(|a| a.lease_token_hash.as_str()).collect();
    let expires: Vec<OffsetDateTime> = asks.iter().map(|a| a.expires_at).collect();
    let nows: Vec<OffsetDateTime> = asks.iter().map(|a| a.now).collect();
    // A command is claimable for the group if it is for each ask: available by the earliest
    // ask's time, its window still open at the latest's. (The asks' times differ by the
    // moments between their requests: a command whose window closes in between is left to
    // expire, as it would for the later asks, rather than leased after its window.)
    let earliest = nows.iter().min().copied().unwrap_or(first.now);
    let latest = nows.iter().max().copied().unwrap_or(first.now);
    query
        .bind(&first.executor)
        .bind(hashes)
        .bind(expires)
        .bind(earliest)
        .bind(first.scope.as_ref().map(Json))
        .bind(first.wanted.as_ref().map(Json))
        .bind(latest)
        .bind(nows)
}

/// PostgreSQL: leases for `asks` (one filter: the first's) in one statement: the oldest
/// commands they may run, locked (skipping those another instance holds), numbered in queue
/// order and matched to the asks in their order. Answers each lease's token hash and what it
/// claimed.
pub(super) async fn pg_claim(
    conn: &mut PgConnection,
    asks: &[&LeaseAsk],
) -> Result<Vec<(String, Claimed)>> {
    if asks.is_empty() {
        return Ok(Vec::new());
    }
    let sql = concat!("with ", pg_claim_ctes!(), " ", pg_claim_update!());
    let rows: Vec<WithApproval> = bind_claim(sqlx::query_as(sql), asks)
        .fetch_all(conn)
        .await?;
    rows.into_iter().map(into_claim).collect()
}

/// Leases queued command `id` alone for `ask`, if the ask may lease it now (the same rule as
/// [`claim`]): an accepted gateway call, leased to the built-in executor in the transaction
/// that queues it. What it claimed, with the approval its committed `command.queued` event
/// records (none yet for a command queued in this transaction).
pub async fn claim_queued(conn: Conn<'_>, id: Uuid, ask: &LeaseAsk) -> Result<Option<Claimed>> {
    let row: Option<WithApproval> = match conn {
        Conn::Postgres(c) => {
            let sql = concat!(
                "with asks as (select 1::bigint as a_n, $2::text as a_hash, \
                 $3::timestamptz as a_expires, $4::timestamptz as a_now), \
                 picked as (select c.seq from commands c where c.id = $8 and ",
                pg_claimable!(),
                " for update), numbered as (select seq as p_seq, 1::bigint as p_n from picked) ",
                pg_claim_update!()
            );
            bind_one(sqlx::query_as(sql), id, ask)
                .fetch_optional(c)
                .await?
        }
        Conn::Sqlite(c) => sqlite::claim_queued(c, id, ask).await?,
    };
    row.map(WithApproval::into_claimed).transpose()
}

/// Binds one ask's parameters for [`claim_queued`]: `$1` executor, `$2` token hash, `$3` lease
/// end, `$4` and `$7` now, `$5` scope, `$6` tools asked for, `$8` the command.
fn bind_one<'q, T>(query: PgQuery<'q, T>, id: Uuid, ask: &'q LeaseAsk) -> PgQuery<'q, T> {
    query
        .bind(&ask.executor)
        .bind(&ask.lease_token_hash)
        .bind(ask.expires_at)
        .bind(ask.now)
        .bind(ask.scope.as_ref().map(Json))
        .bind(ask.wanted.as_ref().map(Json))
        .bind(ask.now)
        .bind(id)
}

/// The reports to settle together: each but one on a command an earlier one names (its
/// change settles it itself, after: it finds the command settled, or still held if the
/// earlier one did not hold).
fn first_reports(reports: &[Arc<Success>]) -> Vec<Arc<Success>> {
    let mut firsts: Vec<Arc<Success>> = Vec::with_capacity(reports.len());
    for report in reports {
        if !firsts.iter().any(|earlier| earlier.id == report.id) {
            firsts.push(Arc::clone(report));
        }
    }
    firsts
}

/// Matches each of `reports` to what `statements` statements `settled` (by command id).
fn match_settles(
    reports: &[Arc<Success>],
    mut settled: Vec<SettledSuccess>,
    statements: usize,
) -> StagedSettles {
    StagedSettles::new(
        reports
            .iter()
            .map(|report| {
                let at = settled
                    .iter()
                    .position(|(c, _)| c.id == report.id)
                    .map(|at| settled.swap_remove(at));
                (Arc::clone(report), at)
            })
            .collect(),
        statements,
    )
}

/// Settles `reports` in success, in order, each as [`super::settle_succeeded`] would, and moves
/// each settled action's proposal to `succeeded`. A report on a command an earlier one names
/// is left out ([`first_reports`]). One statement on PostgreSQL, two on SQLite.
pub async fn settle_staged(conn: Conn<'_>, reports: &[Arc<Success>]) -> Result<StagedSettles> {
    let reports = first_reports(reports);
    let (settled, statements) =
        settle(conn, &reports.iter().map(|r| &**r).collect::<Vec<_>>()).await?;
    Ok(match_settles(&reports, settled, statements))
}

/// Settles `reports` (no two for one command) in success and moves each settled action's
/// proposal, on either backend ([`pg_settle`], [`sqlite::settle`]); answers them and how many
/// statements it ran.
pub(super) async fn settle(
    conn: Conn<'_>,
    reports: &[&Success],
) -> Result<(Vec<SettledSuccess>, usize)> {
    match conn {
        Conn::Postgres(c) => Ok((pg_settle(c, reports).await?, 1)),
        Conn::Sqlite(c) => sqlite::settle(c, reports).await,
    }
}

/// Settles `reports` in success and leases for `asks`, as [`settle_staged`] then
/// [`claim_staged`] would. On PostgreSQL the reports and the first run of leases are one
/// statement (the rest of the leases one more each run): the two touch no row in common (a
/// report settles a leased command, a lease claims a queued one: a command a report settles
/// is claimable neither before nor after it, the lease reads no proposal, and the report
/// reads no command a lease may claim), so one statement seeing neither's writes has the
/// outcomes of the two made one after the other. A group of leases and reports, the
/// executors' steady state, so makes one round trip fewer.
pub async fn settle_and_claim_staged(
    conn: Conn<'_>,
    reports: &[Arc<Success>],
    asks: &[Arc<LeaseAsk>],
) -> Result<(StagedSettles, StagedClaims)> {
    let conn = match conn {
        Conn::Postgres(c) if !reports.is_empty() && !asks.is_empty() => c,
        mut other => {
            let settles = settle_staged(other.reborrow(), reports).await?;
            return Ok((settles, claim_staged(other, asks).await?));
        }
    };
    let reports = first_reports(reports);
    let run: Vec<&LeaseAsk> = asks[..first_run(asks, |a| &**a)]
        .iter()
        .map(|a| &**a)
        .collect();
    let (settled, claimed) = pg_settle_and_claim(
        conn,
        &reports.iter().map(|r| &**r).collect::<Vec<_>>(),
        &run,
    )
    .await?;
    let mut rows = Vec::with_capacity(asks.len());
    let more = claim_runs(Conn::Postgres(conn), asks, Some(claimed), &mut rows).await?;
    // The statement that settled and leased counts on the reports' side.
    Ok((
        match_settles(&reports, settled, 1),
        StagedClaims::new(rows, more),
    ))
}

/// Settles `reports` in success, as [`settle_staged`] does, and leases for the asks made with
/// them (`after`: each with its report, the very one), each only if its report settles. On
/// PostgreSQL the reports and the first run of those leases are one statement; the leases left
/// (other runs, or SQLite's) are for the caller to make once it knows which reports settled.
pub async fn settle_then_claim_staged(
    conn: Conn<'_>,
    reports: &[Arc<Success>],
    after: &[(Arc<Success>, Arc<LeaseAsk>)],
) -> Result<(StagedSettles, Option<StagedClaims>)> {
    let firsts = first_reports(reports);
    // The asks made with reports settled here, and of those the first run (one filter).
    let after: Vec<&(Arc<Success>, Arc<LeaseAsk>)> = (after.iter())
        .filter(|(report, _)| firsts.iter().any(|r| Arc::ptr_eq(r, report)))
        .collect();
    let run = &after[..first_run(&after, |(_, ask)| &**ask)];
    let conn = match conn {
        Conn::Postgres(c) if !run.is_empty() => c,
        // No ask but with a report left to its own change (a second on one command), or SQLite.
        other => return Ok((settle_staged(other, reports).await?, None)),
    };
    let reports = firsts;
    let refs: Vec<&Success> = reports.iter().map(|r| &**r).collect();
    let pairs: Vec<(&Success, &LeaseAsk)> = run.iter().map(|(r, a)| (&**r, &**a)).collect();
    let (settled, claimed) = pg_settle_then_claim(conn, &refs, &pairs).await?;
    // The asks the statement leased for: those whose report settled, in order.
    let asked: Vec<Arc<LeaseAsk>> = (run.iter())
        .filter(|(report, _)| settled.iter().any(|(c, _)| c.id == report.id))
        .map(|(_, ask)| Arc::clone(ask))
        .collect();
    let mut rows = Vec::with_capacity(asked.len());
    match_claims(&asked, claimed, &mut rows);
    // The one statement counts on the reports' side.
    Ok((
        match_settles(&reports, settled, 1),
        Some(StagedClaims::new(rows, 0)),
    ))
}

/// PostgreSQL, the reports' part of a statement (`$1`–`$9`, bound by [`bind_settle`]): `s`
/// settles each command the reporting executor holds under the token it presented, if it may
/// run (a rollback, or an action whose proposal is still executable), and `m` moves each such
/// action's proposal to `succeeded` from the status `s` read (one another instance moved
/// meanwhile is left to [`crate::storage::proposals::move_status`]).
macro_rules! pg_settle_ctes {
    () => {
        concat!(
            "r as (select * from unnest($1::uuid[], $2::jsonb[], $3::text[], $4::text[], \
             $5::timestamptz[]) as r(r_id, r_result, r_hash, r_executor, r_now)), \
             s as (",
            settle_update!("$6", "$7", "$8"),
            ", r.r_now), \
             m as (update proposals p set status = $9, updated_at = s.r_now from s \
             where p.id = s.proposal_id and s.kind = 'action' and p.status = s.proposal_status \
             and p.status <> $9 returning p.id)"
        )
    };
}

/// Whether `m` ([`pg_settle_ctes`]) moved the proposal of the settled row of `s`.
macro_rules! pg_settle_moved {
    () => {
        "exists (select 1 from m where m.id = s.proposal_id and s.kind = 'action') \
         as proposal_moved"
    };
}

/// How many parameters the reports' part of a statement takes ([`pg_settle_ctes`],
/// [`bind_settle`]): a statement with leases after it numbers theirs from the next.
const SETTLE_PARAMETERS: usize = 9;

/// Binds the reports' parameters (`$1`–`$9` of [`pg_settle_ctes`]) for `reports`.
fn bind_settle<'q, T>(query: PgQuery<'q, T>, reports: &[&'q Success]) -> PgQuery<'q, T> {
    let ids: Vec<_> = reports.iter().map(|r| r.id).collect();
    let results: Vec<Json<&serde_json::Value>> = reports.iter().map(|r| Json(&r.result)).collect();
    let hashes: Vec<&str> = (reports.iter())
        .map(|r| r.lease_token_hash.as_str())
        .collect();
    let executors: Vec<&str> = reports.iter().map(|r| r.executor.as_str()).collect();
    let nows: Vec<OffsetDateTime> = reports.iter().map(|r| r.now).collect();
    let [first, second] = ProposalStatus::EXECUTABLE;
    query
        .bind(ids)
        .bind(results)
        .bind(hashes)
        .bind(executors)
        .bind(nows)
        .bind(CommandStatus::Succeeded.as_str())
        .bind(first.as_str())
        .bind(second.as_str())
        .bind(ProposalStatus::Succeeded.as_str())
}

/// PostgreSQL: settles `reports` (no two for one command) in one statement
/// ([`pg_settle_ctes`]), moving each settled action's proposal to `succeeded`.
pub(super) async fn pg_settle(
    conn: &mut PgConnection,
    reports: &[&Success],
) -> Result<Vec<SettledSuccess>> {
    let sql = concat!(
        "with ",
        pg_settle_ctes!(),
        " select s.*, ",
        pg_settle_moved!(),
        " from s"
    );
    let rows: Vec<Settled> = bind_settle(sqlx::query_as(sql), reports)
        .fetch_all(conn)
        .await?;
    rows.into_iter().map(Settled::into_parts).collect()
}

/// What a statement that settles and leases made: the reports settled, and each lease's token
/// hash with what it claimed.
type SettledAndLeased = (Vec<SettledSuccess>, Vec<(String, Claimed)>);

/// A row of [`pg_settle_and_claim`]'s statement: a settled command or a leased one.
#[derive(sqlx::FromRow)]
struct SettledOrLeased {
    leased: bool,
    #[sqlx(flatten)]
    settled: Settled,
    approved_spec_sha256: Option<String>,
}

/// PostgreSQL: [`pg_settle`] for `reports` and [`pg_claim`] for `asks` (one run) in one
/// statement, the leases' parameters numbered after the reports' (`$10`–`$18`).
async fn pg_settle_and_claim(
    conn: &mut PgConnection,
    reports: &[&Success],
    asks: &[&LeaseAsk],
) -> Result<SettledAndLeased> {
    static SQL: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    let sql = SQL.get_or_init(|| {
        pg_settled_and_leased(&renumber(
            concat!(pg_claim_ctes!(), ", l as (", pg_claim_update!(), ")"),
            SETTLE_PARAMETERS,
        ))
    });
    let query = bind_claim(bind_settle(sqlx::query_as(sql.as_str()), reports), asks);
    split_settled_and_leased(query.fetch_all(conn).await?)
}

/// The statement's `select` after the reports' part and a leases' part ending in `l`: the
/// settled rows of `s`, then the leased rows of `l` ([`split_settled_and_leased`]).
fn pg_settled_and_leased(ctes: &str) -> String {
    format!(
        "with {settle}, {ctes} \
         select false as leased, {cols}, proposal_status, {moved}, \
         null::text as approved_spec_sha256 from s \
         union all \
         select true, {cols}, null, false, approved_spec_sha256 from l",
        settle = pg_settle_ctes!(),
        cols = cols!(),
        moved = pg_settle_moved!(),
    )
}

/// PostgreSQL: [`pg_settle`] for `reports` and, in the same statement, leases for `after`
/// (one run of asks, each asked with the report beside it): an ask only if its report
/// settles, the oldest commands to the first such ([`pg_claim_after_ctes`]). Executors that
/// report and ask for their next command so make one statement for both.
async fn pg_settle_then_claim(
    conn: &mut PgConnection,
    reports: &[&Success],
    after: &[(&Success, &LeaseAsk)],
) -> Result<SettledAndLeased> {
    static SQL: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    let sql = SQL.get_or_init(|| {
        pg_settled_and_leased(&renumber(
            concat!(pg_claim_after_ctes!(), ", l as (", pg_claim_update!(), ")"),
            SETTLE_PARAMETERS,
        ))
    });
    let asks: Vec<&LeaseAsk> = after.iter().map(|(_, ask)| *ask).collect();
    let ids: Vec<uuid::Uuid> = after.iter().map(|(report, _)| report.id).collect();
    let query = bind_asks(bind_settle(sqlx::query_as(sql.as_str()), reports), &asks).bind(ids);
    split_settled_and_leased(query.fetch_all(conn).await?)
}

/// The rows of a statement that settles and leases, as the settled and the leased.
fn split_settled_and_leased(rows: Vec<SettledOrLeased>) -> Result<SettledAndLeased> {
    let (mut settled, mut claimed) = (Vec::new(), Vec::new());
    for row in rows {
        if row.leased {
            claimed.push(into_claim(WithApproval {
                row: row.settled.into_row(),
                approved_spec_sha256: row.approved_spec_sha256,
            })?);
        } else {
            settled.push(row.settled.into_parts()?);
        }
    }
    Ok((settled, claimed))
}

/// `sql` with each parameter `$n` numbered `$n + by`.
fn renumber(sql: &str, by: usize) -> String {
    let mut out = String::with_capacity(sql.len() + 16);
    let mut rest = sql;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..=at]);
        rest = &rest[at + 1..];
        let digits = rest.len() - rest.trim_start_matches(|c: char| c.is_ascii_digit()).len();
        match rest[..digits].parse::<usize>() {
            Ok(n) => out.push_str(&(n + by).to_string()),
            Err(_) => out.push_str(&rest[..digits]),
        }
        rest = &rest[digits..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::renumber;

    #[test]
    fn renumber_shifts_every_parameter_and_nothing_else() {
        assert_eq!(
            renumber("a = $1 and b = $10 and c like '%$' || $9", 9),
            "a = $10 and b = $19 and c like '%$' || $18"
        );
    }
}
