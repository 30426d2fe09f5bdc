//! Proposals and their approvals: rows and statements.

use std::collections::HashMap;
use std::sync::Arc;

use serde_json::value::RawValue;
use sqlx::types::Json;
use time::OffsetDateTime;
use uuid::Uuid;

use super::conn::{Conn, on};
use super::direct::raw::{self, Cols};
use super::error::{Result, StorageError, parse};
use crate::domain::contract::proposal::ToolProposal;
use crate::domain::contract::vocab::AuthorizationState;
use crate::domain::lifecycle::{ProposalStatus, ReviewVerdict};
use crate::domain::routing::proposal::ProposalDecision as Routing;

// The records are the domain's; re-exported for the service, which names them here.
pub use crate::domain::record::{Erasure, ProposalRecord, Review};

/// A proposal row to insert, built before the write: its JSON columns are serialized here, on
/// the submitting request's own task, not on the one writer's serial path.
#[derive(Debug)]
pub struct NewProposal {
    id: Uuid,
    agent: String,
    idempotency_key: String,
    token: Option<Uuid>,
    status: ProposalStatus,
    authorization_state: AuthorizationState,
    request_hash: String,
    risk_level: &'static str,
    risk_rank: i64,
    tool_name: String,
    domain: String,
    route: &'static str,
    routing: Box<RawValue>,
    contract: Box<RawValue>,
    gdpr: bool,
    hipaa: bool,
    supersedes: Option<Uuid>,
    created_at: OffsetDateTime,
    expires_at: Option<OffsetDateTime>,
}

/// What a proposal row to insert is made of (see [`NewProposal::new`]).
pub struct ProposalParts<'a> {
    /// The authenticated agent.
    pub agent: &'a str,
    /// The token it presented (its webhook hears of the proposal's changes).
    pub token: Option<Uuid>,
    /// Status it starts in.
    pub status: ProposalStatus,
    /// Effective authorization.
    pub authorization_state: AuthorizationState,
    /// Request hash.
    pub request_hash: &'a str,
    /// Routing.
    pub routing: &'a Routing,
    /// Contract.
    pub contract: &'a ToolProposal,
    /// Arrival time.
    pub now: OffsetDateTime,
    /// When it expires if still pending.
    pub expires_at: Option<OffsetDateTime>,
}

impl NewProposal {
    /// The row for `parts`, its routing and contract serialized as they will be stored.
    pub fn new(parts: &ProposalParts<'_>) -> Result<Self> {
        let c = parts.contract;
        Ok(Self {
            id: c.proposal_id,
            agent: parts.agent.to_owned(),
            idempotency_key: c.idempotency_key.clone(),
            token: parts.token,
            status: parts.status,
            authorization_state: parts.authorization_state,
            request_hash: parts.request_hash.to_owned(),
            risk_level: c.risk_level.as_str(),
            risk_rank: c.risk_level.rank(),
            tool_name: c.tool.name.clone(),
            domain: c.domain.clone(),
            route: parts.routing.route.as_str(),
            routing: raw_json(parts.routing)?,
            contract: raw_json(c)?,
            gdpr: c.compliance_context.gdpr,
            hipaa: c.compliance_context.hipaa,
            supersedes: c.supersedes,
            created_at: to_micros(parts.now),
            expires_at: parts.expires_at.map(to_micros),
        })
    }

    /// Whether `other` names this row's id or its agent's idempotency key: of two such rows,
    /// the second to be inserted finds the first's taken.
    pub fn collides_with(&self, other: &Self) -> bool {
        self.id == other.id
            || (self.agent == other.agent && self.idempotency_key == other.idempotency_key)
    }

    /// The record of this row once inserted at `seq` (`routing` and `contract` are what it
    /// was made of).
    pub fn record(&self, seq: i64, routing: &Routing, contract: &ToolProposal) -> ProposalRecord {
        ProposalRecord {
            seq,
            id: self.id,
            agent: self.agent.clone(),
            status: self.status,
            authorization_state: self.authorization_state,
            request_hash: self.request_hash.clone(),
            routing: routing.clone(),
            contract: contract.clone(),
            created_at: self.created_at,
            updated_at: self.created_at,
            expires_at: self.expires_at,
            review: None,
            erasure: None,
        }
    }
}

/// `value` serialized as JSON text, kept as it is (a [`NewProposal`]'s JSON columns, serialized
/// once, as they are stored); a failure is what binding it would have answered.
fn raw_json<T: serde::Serialize>(value: &T) -> Result<Box<RawValue>> {
    serde_json::value::to_raw_value(value)
        .map_err(|e| StorageError::Database(sqlx::Error::Encode(e.into())))
}

/// The proposal rows a writer inserted for its group's changes ([`insert_staged`]), and
/// what became of each.
pub struct Staged {
    rows: Vec<(Arc<NewProposal>, Option<i64>)>,
}

impl Staged {
    /// How many rows were handed to the database together.
    pub fn count(&self) -> usize {
        self.rows.len()
    }

    /// What became of `row` (the very row, not one equal to it): `Some(Some(seq))` inserted,
    /// `Some(None)` its id or key was taken; `None` if it was not among those staged.
    pub fn outcome(&self, row: &Arc<NewProposal>) -> Option<Option<i64>> {
        self.rows
            .iter()
            .find(|(staged, _)| Arc::ptr_eq(staged, row))
            .map(|(_, seq)| *seq)
    }
}

/// A decision to write onto a claimed proposal.
pub struct DecisionRow<'a> {
    /// The proposal.
    pub id: Uuid,
    /// Its new status.
    pub status: ProposalStatus,
    /// Its new authorization, if the decision raises it.
    pub authorization_state: Option<AuthorizationState>,
    /// Approved or rejected.
    pub verdict: ReviewVerdict,
    /// Reviewer.
    pub reviewer: &'a str,
    /// Reason.
    pub reason: Option<&'a str>,
    /// The reviewer's edit (JSON of [`crate::domain::review::edit::Edited`]), if they edited.
    pub edit: Option<&'a str>,
    /// When.
    pub now: OffsetDateTime,
}

#[derive(sqlx::FromRow)]
pub(super) struct ProposalRow {
    seq: i64,
    id: Uuid,
    agent: String,
    status: String,
    authorization_state: String,
    request_hash: String,
    routing: Json<Routing>,
    contract: Json<ToolProposal>,
    created_at: OffsetDateTime,
    updated_at: OffsetDateTime,
    expires_at: Option<OffsetDateTime>,
    decision: Option<String>,
    decided_by: Option<String>,
    decided_at: Option<OffsetDateTime>,
    decision_reason: Option<String>,
    decision_edit: Option<String>,
    erased_at: Option<OffsetDateTime>,
    erased_by: Option<String>,
    erasure_reason: Option<String>,
}

impl ProposalRow {
    /// The row as a direct read stepped it (see [`super::direct`]).
    fn from_direct(c: &Cols<'_, '_>) -> Result<Self> {
        Ok(Self {
            seq: c.int("seq")?,
            id: c.uuid("id")?,
            agent: c.text("agent")?,
            status: c.text("status")?,
            authorization_state: c.text("authorization_state")?,
            request_hash: c.text("request_hash")?,
            routing: Json(c.json("routing")?),
            contract: Json(c.json("contract")?),
            created_at: c.time("created_at")?,
            updated_at: c.time("updated_at")?,
            expires_at: c.opt_time("expires_at")?,
            decision: c.opt_text("decision")?,
            decided_by: c.opt_text("decided_by")?,
            decided_at: c.opt_time("decided_at")?,
            decision_reason: c.opt_text("decision_reason")?,
            decision_edit: c.opt_text("decision_edit")?,
            erased_at: c.opt_time("erased_at")?,
            erased_by: c.opt_text("erased_by")?,
            erasure_reason: c.opt_text("erasure_reason")?,
        })
    }

    fn into_record(self) -> Result<ProposalRecord> {
        let review = match (self.decision, self.decided_by, self.decided_at) {
            (Some(d), Some(by), Some(at)) => Some(Review {
                verdict: parse("decision", &d, ReviewVerdict::parse)?,
                decided_by: by,
                decided_at: at,
                reason: self.decision_reason,
                edited: (self.decision_edit.as_deref())
                    .map(serde_json::from_str)
                    .transpose()
                    .map_err(|_| StorageError::Corrupt("proposals.decision_edit".into()))?,
            }),
            _ => None,
        };
        let erasure = match (self.erased_by, self.erased_at) {
            (Some(by), Some(at)) => Some(Erasure {
                by,
                at,
                reason: self.erasure_reason.unwrap_or_default(),
            }),
            _ => None,
        };
        Ok(ProposalRecord {
            seq: self.seq,
            id: self.id,
            agent: self.agent,
            status: parse("proposal status", &self.status, ProposalStatus::parse)?,
            authorization_state: parse(
                "authorization state",
                &self.authorization_state,
                AuthorizationState::parse,
            )?,
            request_hash: self.request_hash,
            routing: self.routing.0,
            contract: self.contract.0,
            created_at: self.created_at,
            updated_at: self.updated_at,
            expires_at: self.expires_at,
            review,
            erasure,
        })
    }
}

pub(super) fn records(rows: Vec<ProposalRow>) -> Result<Vec<ProposalRecord>> {
    rows.into_iter().map(ProposalRow::into_record).collect()
}

fn record(row: Option<ProposalRow>) -> Result<Option<ProposalRecord>> {
    row.map(ProposalRow::into_record).transpose()
}

macro_rules! cols {
    () => {
        "seq, id, agent, status, authorization_state, request_hash, routing, contract, \
         created_at, updated_at, expires_at, decision, decided_by, decided_at, decision_reason, \
         decision_edit, erased_at, erased_by, erasure_reason"
    };
}

/// The columns of a [`ProposalRow`], for statements built elsewhere.
pub(super) const COLUMNS: &str = cols!();

const INSERT: &str = "insert into proposals (id, agent, idempotency_key, request_hash, status, \
                      authorization_state, risk_level, tool_name, domain, route, routing, \
                      contract, created_at, updated_at, expires_at, risk_rank, gdpr, hipaa, \
                      supersedes, token_id) ";

/// Binds `p`'s values in [`INSERT`]'s column order.
macro_rules! bind_new_proposal {
    ($b:expr, $p:expr) => {{
        let p: &NewProposal = $p;
        $b.push_bind(p.id)
            .push_bind(p.agent.as_str())
            .push_bind(p.idempotency_key.as_str())
            .push_bind(p.request_hash.as_str())
            .push_bind(p.status.as_str())
            .push_bind(p.authorization_state.as_str())
            .push_bind(p.risk_level)
            .push_bind(p.tool_name.as_str())
            .push_bind(p.domain.as_str())
            .push_bind(p.route)
            .push_bind(Json(p.routing.as_ref()))
            .push_bind(Json(p.contract.as_ref()))
            .push_bind(p.created_at)
            .push_bind(p.created_at)
            .push_bind(p.expires_at)
            .push_bind(p.risk_rank)
            .push_bind(p.gdpr)
            .push_bind(p.hipaa)
            .push_bind(p.supersedes)
            .push_bind(p.token);
    }};
}

/// Inserts a proposal; answers its `seq`, or `None` if its id or its (agent, idempotency key)
/// is already taken, or it is a gateway call already open. Only `seq` comes back: the record
/// is built from what was written ([`NewProposal::record`]), so the one writer does not parse
/// the contract's JSON back out of the row it just wrote.
pub async fn insert(conn: Conn<'_>, p: &NewProposal) -> Result<Option<i64>> {
    let row: Option<(i64,)> = on!(conn, |c| {
        let mut q = sqlx::QueryBuilder::new(INSERT);
        q.push_values([p], |mut b, p| bind_new_proposal!(b, p));
        q.push(" on conflict do nothing returning seq");
        q.build_query_as().fetch_optional(c).await
    })?;
    Ok(row.map(|(seq,)| seq))
}

/// Inserts several proposals at once (a few statements of many rows, as the trail's rows are
/// inserted), none of which names another's id or idempotency key; each whose id or key was
/// already taken, or that is a gateway call already open (`proposals_open_gateway_call`, which
/// two rows of one statement can meet), is skipped, as [`insert`] would.
pub async fn insert_staged(mut conn: Conn<'_>, rows: &[Arc<NewProposal>]) -> Result<Staged> {
    let mut inserted: HashMap<Uuid, i64> = HashMap::with_capacity(rows.len());
    let mut start = 0;
    while start < rows.len() {
        let end = start + super::chunk::chunk_len(rows.len() - start);
        let chunk = &rows[start..end];
        let got: Vec<(Uuid, i64)> = on!(conn.reborrow(), |c| {
            let mut q = sqlx::QueryBuilder::new(INSERT);
            q.push_values(chunk, |mut b, p| bind_new_proposal!(b, p));
            q.push(" on conflict do nothing returning id, seq");
            q.build_query_as().fetch_all(c).await
        })?;
        inserted.extend(got);
        start = end;
    }
    let rows = rows
        .iter()
        .map(|row| (Arc::clone(row), inserted.get(&row.id).copied()))
        .collect();
    Ok(Staged { rows })
}

/// A time as both databases keep it: whole microseconds, UTC.
fn to_micros(t: OffsetDateTime) -> OffsetDateTime {
    let t = t.to_offset(time::UtcOffset::UTC);
    t.replace_nanosecond(t.nanosecond() / 1_000 * 1_000)
        .unwrap_or(t)
}

/// The proposal an agent submitted under an idempotency key.
pub async fn by_agent_key(
    conn: Conn<'_>,
    agent: &str,
    key: &str,
) -> Result<Option<ProposalRecord>> {
    let sql = concat!(
        "select ",
        cols!(),
        " from proposals where agent = $1 and idempotency_key = $2"
    );
    let row: Option<ProposalRow> = on!(conn, |c| sqlx::query_as(sql)
        .bind(agent)
        .bind(key)
        .fetch_optional(c)
        .await)?;
    record(row)
}

/// A proposal by id, read on this thread (SQLite; see [`super::direct`]).
pub(super) fn by_id_direct(db: &rusqlite::Connection, id: Uuid) -> Result<Option<ProposalRecord>> {
    raw::one(db, BY_ID, id, |c| {
        ProposalRow::from_direct(c)?.into_record()
    })
}

const BY_ID: &str = concat!("select ", cols!(), " from proposals where id = $1");

/// A proposal by id.
pub async fn by_id(conn: Conn<'_>, id: Uuid) -> Result<Option<ProposalRecord>> {
    let row: Option<ProposalRow> = on!(conn, |c| sqlx::query_as(BY_ID)
        .bind(id)
        .fetch_optional(c)
        .await)?;
    record(row)
}

// After `cols!`, which they use.
pub mod open_call;
pub mod with_command;

/// The proposals among `ids` that exist, in no particular order (one statement).
pub async fn by_ids(conn: Conn<'_>, ids: &[Uuid]) -> Result<Vec<ProposalRecord>> {
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    let rows: Vec<ProposalRow> = on!(conn, |c| {
        let mut q =
            sqlx::QueryBuilder::new(concat!("select ", cols!(), " from proposals where id in ("));
        let mut list = q.separated(", ");
        for id in ids {
            list.push_bind(*id);
        }
        list.push_unseparated(")");
        q.build_query_as().fetch_all(c).await
    })?;
    records(rows)
}

/// Proposals in `status`, oldest first.
pub async fn by_status(
    conn: Conn<'_>,
    status: ProposalStatus,
    limit: i64,
) -> Result<Vec<ProposalRecord>> {
    let sql = concat!(
        "select ",
        cols!(),
        " from proposals where status = $1 order by seq limit $2"
    );
    let rows: Vec<ProposalRow> = on!(conn, |c| sqlx::query_as(sql)
        .bind(status.as_str())
        .bind(limit)
        .fetch_all(c)
        .await)?;
    records(rows)
}

/// Pending proposals whose time has not run out at `now`, oldest first.
pub async fn pending_live(
    conn: Conn<'_>,
    now: OffsetDateTime,
    limit: i64,
) -> Result<Vec<ProposalRecord>> {
    let sql = conn.pick(
        concat!(
            "select ",
            cols!(),
            " from proposals where status = 'pending' and \
             (expires_at is null or julianday(expires_at) > julianday($1)) order by seq limit $2"
        ),
        concat!(
            "select ",
            cols!(),
            " from proposals where status = 'pending' and \
             (expires_at is null or expires_at > $1) order by seq limit $2"
        ),
    );
    let rows: Vec<ProposalRow> = on!(conn, |c| sqlx::query_as(sql)
        .bind(now)
        .bind(limit)
        .fetch_all(c)
        .await)?;
    records(rows)
}

/// Claims a pending proposal whose time has not run out (a row lock on PostgreSQL; SQLite has
/// one writer): concurrent reviewers queue up here and see each other's outcome.
pub async fn claim_pending(
    conn: Conn<'_>,
    id: Uuid,
    now: OffsetDateTime,
) -> Result<Option<ProposalRecord>> {
    let sql = conn.pick(
        concat!(
            "update proposals set updated_at = $1 where id = $2 and status = 'pending' and \
             (expires_at is null or julianday(expires_at) > julianday($1)) returning ",
            cols!()
        ),
        concat!(
            "update proposals set updated_at = $1 where id = $2 and status = 'pending' and \
             (expires_at is null or expires_at > $1) returning ",
            cols!()
        ),
    );
    let row: Option<ProposalRow> = on!(conn, |c| sqlx::query_as(sql)
        .bind(now)
        .bind(id)
        .fetch_optional(c)
        .await)?;
    record(row)
}

/// Writes a reviewer's final decision onto a claimed proposal.
pub async fn record_decision(conn: Conn<'_>, d: &DecisionRow<'_>) -> Result<ProposalRecord> {
    let sql = concat!(
        "update proposals set status = $1, authorization_state = coalesce($2, authorization_state), \
         decision = $3, decided_by = $4, decided_at = $5, decision_reason = $6, updated_at = $5, \
         decision_edit = $8 where id = $7 returning ",
        cols!()
    );
    let row: ProposalRow = on!(conn, |c| sqlx::query_as(sql)
        .bind(d.status.as_str())
        .bind(d.authorization_state.map(AuthorizationState::as_str))
        .bind(d.verdict.as_str())
        .bind(d.reviewer)
        .bind(d.now)
        .bind(d.reason)
        .bind(d.id)
        .bind(d.edit)
        .fetch_one(c)
        .await)?;
    row.into_record()
}

/// Marks proposal `id` expired if it is pending and its time ran out at `now`; it, if so.
pub async fn expire_one_due(
    conn: Conn<'_>,
    id: Uuid,
    now: OffsetDateTime,
) -> Result<Vec<ProposalRecord>> {
    let sql = conn.pick(
        concat!(
            "update proposals set status = 'expired', updated_at = $1 where id = $2 \
             and status = 'pending' and julianday(expires_at) <= julianday($1) returning ",
            cols!()
        ),
        concat!(
            "update proposals set status = 'expired', updated_at = $1 where id = $2 \
             and status = 'pending' and expires_at <= $1 returning ",
            cols!()
        ),
    );
    let rows: Vec<ProposalRow> = on!(conn, |c| sqlx::query_as(sql)
        .bind(now)
        .bind(id)
        .fetch_all(c)
        .await)?;
    records(rows)
}

/// Marks up to `limit` pending proposals whose time ran out at `now` expired, the longest
/// overdue first, and returns them (`proposals_expiring` on SQLite, `queue_by_expiry` on
/// PostgreSQL, find them without reading the rest of the queue).
pub async fn expire_due(
    conn: Conn<'_>,
    now: OffsetDateTime,
    limit: i64,
) -> Result<Vec<ProposalRecord>> {
    let sql = conn.pick(
        concat!(
            "update proposals set status = 'expired', updated_at = $1 where seq in \
             (select seq from proposals indexed by proposals_expiring where status = 'pending' \
             and julianday(expires_at) <= julianday($1) order by julianday(expires_at) limit $2) \
             returning ",
            cols!()
        ),
        concat!(
            "update proposals set status = 'expired', updated_at = $1 where seq in \
             (select seq from proposals where status = 'pending' and expires_at <= $1 \
             order by expires_at limit $2) and status = 'pending' returning ",
            cols!()
        ),
    );
    let rows: Vec<ProposalRow> = on!(conn, |c| sqlx::query_as(sql)
        .bind(now)
        .bind(limit)
        .fetch_all(c)
        .await)?;
    records(rows)
}

/// Marks agent `agent`'s proposal `id` withdrawn if it is still pending at `now` (not past its
/// expiry): the proposal as withdrawn, or `None`.
pub async fn withdraw(
    conn: Conn<'_>,
    id: Uuid,
    agent: &str,
    now: OffsetDateTime,
) -> Result<Option<ProposalRecord>> {
    let sql = conn.pick(
        concat!(
            "update proposals set status = 'withdrawn', updated_at = $3 where id = $1 \
             and agent = $2 and status = 'pending' \
             and (expires_at is null or julianday(expires_at) > julianday($3)) returning ",
            cols!()
        ),
        concat!(
            "update proposals set status = 'withdrawn', updated_at = $3 where id = $1 \
             and agent = $2 and status = 'pending' \
             and (expires_at is null or expires_at > $3) returning ",
            cols!()
        ),
    );
    let row: Option<ProposalRow> = on!(conn, |c| sqlx::query_as(sql)
        .bind(id)
        .bind(agent)
        .bind(now)
        .fetch_optional(c)
        .await)?;
    row.map(ProposalRow::into_record).transpose()
}

/// A proposal's status.
pub async fn status_of(conn: Conn<'_>, id: Uuid) -> Result<Option<ProposalStatus>> {
    let sql = "select status from proposals where id = $1";
    let status: Option<(String,)> = on!(conn, |c| sqlx::query_as(sql)
        .bind(id)
        .fetch_optional(c)
        .await)?;
    status
        .map(|(s,)| parse("proposal status", &s, ProposalStatus::parse))
        .transpose()
}

/// Sets a proposal's status.
pub async fn set_status(
    conn: Conn<'_>,
    id: Uuid,
    status: ProposalStatus,
    now: OffsetDateTime,
) -> Result<()> {
    let sql = "update proposals set status = $1, updated_at = $2 where id = $3";
    on!(conn, |c| sqlx::query(sql)
        .bind(status.as_str())
        .bind(now)
        .bind(id)
        .execute(c)
        .await
        .map(|_| ()))?;
    Ok(())
}

/// Moves a proposal from `from` to `to` if it is still at `from`; `false` if it was not (it
/// moved since it was read, or is gone).
pub async fn move_status_from(
    conn: Conn<'_>,
    id: Uuid,
    from: ProposalStatus,
    to: ProposalStatus,
    now: OffsetDateTime,
) -> Result<bool> {
    let sql = "update proposals set status = $1, updated_at = $2 where id = $3 and status = $4";
    let moved = on!(conn, |c| sqlx::query(sql)
        .bind(to.as_str())
        .bind(now)
        .bind(id)
        .bind(from.as_str())
        .execute(c)
        .await
        .map(|r| r.rows_affected()))?;
    Ok(moved == 1)
}

/// Moves a proposal to `status` unless it is there already; answers the status it moved from
/// (`None`: already there, or no such proposal). One statement on PostgreSQL, which reads the
/// old status under the row lock it updates with; two on SQLite, whose one writer already
/// holds the database's write lock.
pub async fn move_status(
    conn: Conn<'_>,
    id: Uuid,
    status: ProposalStatus,
    now: OffsetDateTime,
) -> Result<Option<ProposalStatus>> {
    let before = match conn {
        Conn::Sqlite(c) => {
            let Some(before) = status_of(Conn::Sqlite(&mut *c), id).await? else {
                return Ok(None);
            };
            if before == status {
                return Ok(None);
            }
            set_status(Conn::Sqlite(c), id, status, now).await?;
            return Ok(Some(before));
        }
        Conn::Postgres(c) => {
            let sql = "update proposals p set status = $1, updated_at = $2 \
                       from (select id, status from proposals where id = $3 for update) old \
                       where p.id = old.id and old.status <> $1 returning old.status";
            let row: Option<(String,)> = sqlx::query_as(sql)
                .bind(status.as_str())
                .bind(now)
                .bind(id)
                .fetch_optional(c)
                .await?;
            row
        }
    };
    before
        .map(|(s,)| parse("proposal status", &s, ProposalStatus::parse))
        .transpose()
}

/// Records one reviewer's approval; `false` if they had already approved.
pub async fn insert_approval(
    conn: Conn<'_>,
    id: Uuid,
    reviewer: &str,
    now: OffsetDateTime,
) -> Result<bool> {
    let sql = "insert into approvals (proposal_id, reviewer, at) values ($1, $2, $3) \
               on conflict do nothing";
    let added = on!(conn, |c| sqlx::query(sql)
        .bind(id)
        .bind(reviewer)
        .bind(now)
        .execute(c)
        .await
        .map(|r| r.rows_affected()))?;
    Ok(added > 0)
}

/// How many reviewers have approved a proposal.
pub async fn count_approvals(conn: Conn<'_>, id: Uuid) -> Result<i64> {
    let sql = "select count(*) from approvals where proposal_id = $1";
    let (n,): (i64,) = on!(conn, |c| sqlx::query_as(sql).bind(id).fetch_one(c).await)?;
    Ok(n)
}

/// Who has approved a proposal so far, in order.
pub async fn approvals(conn: Conn<'_>, id: Uuid) -> Result<Vec<(String, OffsetDateTime)>> {
    let sql = "select reviewer, at from approvals where proposal_id = $1 order by at, reviewer";
    Ok(on!(conn, |c| sqlx::query_as(sql)
        .bind(id)
        .fetch_all(c)
        .await)?)
}

/// What an erasure writes onto a proposal.
pub struct ErasureRow<'a> {
    /// The proposal.
    pub id: Uuid,
    /// The status the erasure was decided on ([`crate::domain::erasure::check`]).
    pub status: ProposalStatus,
    /// Its contract with personal data values erased.
    pub contract: &'a ToolProposal,
    /// A reviewer's edit with its values erased (JSON), if the decision edited.
    pub edit: Option<&'a str>,
    /// Who.
    pub by: &'a str,
    /// Why.
    pub reason: &'a str,
    /// When.
    pub now: OffsetDateTime,
}

/// Writes an erasure onto a proposal not erased before and still in the status the erasure
/// was decided on; `None` if it was erased or moved since, or does not exist.
pub async fn erase(conn: Conn<'_>, e: &ErasureRow<'_>) -> Result<Option<ProposalRecord>> {
    let sql = concat!(
        "update proposals set contract = $1, erased_at = $2, erased_by = $3, \
         erasure_reason = $4, updated_at = $2, \
         decision_reason = case when decision_reason is null then null else '[erased]' end, \
         decision_edit = $7 where id = $5 and erased_at is null and status = $6 returning ",
        cols!()
    );
    let row: Option<ProposalRow> = on!(conn, |c| sqlx::query_as(sql)
        .bind(Json(e.contract))
        .bind(e.now)
        .bind(e.by)
        .bind(e.reason)
        .bind(e.id)
        .bind(e.status.as_str())
        .bind(e.edit)
        .fetch_optional(c)
        .await)?;
    record(row)
}

/// The proposals that revise `id` (name it in `supersedes`), oldest first.
pub async fn revisions_of(conn: Conn<'_>, id: Uuid) -> Result<Vec<Uuid>> {
    let sql = "select id from proposals where supersedes = $1 order by seq";
    let rows: Vec<(Uuid,)> = on!(conn, |c| sqlx::query_as(sql).bind(id).fetch_all(c).await)?;
    Ok(rows.into_iter().map(|(id,)| id).collect())
}
