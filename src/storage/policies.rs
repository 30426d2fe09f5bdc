//! The policy's rows: its versions (by version), the one active version, the history of
//! activations, the requests to activate one and their shadow runs' differences; and the
//! recorded decisions a backtest replays, a page at a time in arrival order.
//!
//! Activating commits the active row, its history row and its audit events together, and on
//! PostgreSQL `NOTIFY countersign_policy, '<version>'` at that commit: every instance sharing
//! the database loads the new version as soon as it hears ([`notify_policy`]).

use time::OffsetDateTime;
use uuid::Uuid;

use super::conn::{Conn, on};
use super::error::{Result, StorageError, parse};
pub use crate::domain::policy_change::{
    Activation, ActivationRecord, ChangeRecord, ChangeStatus, VersionRecord,
};

/// The channel instances hear activations on (PostgreSQL).
pub const POLICY_CHANNEL: &str = "countersign_policy";

#[derive(sqlx::FromRow)]
struct VersionRow {
    version: String,
    text: String,
    source: String,
    loaded_by: String,
    loaded_at: OffsetDateTime,
}

/// Stores a version; `false` when it is stored already (its first loading stands).
pub async fn insert_version(conn: Conn<'_>, v: &VersionRecord) -> Result<bool> {
    let sql = "insert into policy_versions (version, text, source, loaded_by, loaded_at) \
               values ($1, $2, $3, $4, $5) on conflict (version) do nothing";
    let n = on!(conn, |c| sqlx::query(sql)
        .bind(&v.version)
        .bind(&v.text)
        .bind(&v.source)
        .bind(&v.loaded_by)
        .bind(v.loaded_at)
        .execute(c)
        .await
        .map(|r| r.rows_affected()))?;
    Ok(n == 1)
}

/// A stored version.
pub async fn version(conn: Conn<'_>, version: &str) -> Result<Option<VersionRecord>> {
    let sql = "select version, text, source, loaded_by, loaded_at from policy_versions \
               where version = $1";
    let row: Option<VersionRow> = on!(conn, |c| sqlx::query_as(sql)
        .bind(version)
        .fetch_optional(c)
        .await)?;
    Ok(row.map(|r| VersionRecord {
        version: r.version,
        text: r.text,
        source: r.source,
        loaded_by: r.loaded_by,
        loaded_at: r.loaded_at,
    }))
}

/// The active version, when a server has started on this database.
pub async fn active(conn: Conn<'_>) -> Result<Option<String>> {
    let sql = "select version from policy_active where id = 1";
    Ok(on!(conn, |c| sqlx::query_scalar(sql)
        .fetch_optional(c)
        .await)?)
}

/// Makes `a.version` the active version and adds `a` to the history (its `seq` is assigned);
/// the version replaced, as read in this transaction.
pub async fn activate(mut conn: Conn<'_>, a: &ActivationRecord) -> Result<Option<String>> {
    let previous = active(conn.reborrow()).await?;
    let sql = "insert into policy_active (id, version, since) values (1, $1, $2) \
               on conflict (id) do update set version = excluded.version, since = excluded.since";
    on!(conn.reborrow(), |c| sqlx::query(sql)
        .bind(&a.version)
        .bind(a.activated_at)
        .execute(c)
        .await
        .map(|_| ()))?;
    // A break-glass activation waits to be told (`told_at`, [`super::notifications`]).
    let told_at = (a.how != Activation::BreakGlass).then_some(a.activated_at);
    let sql = "insert into policy_activations (version, previous, activated_at, how, \
               proposed_by, approved_by, reason, change_id, told_at) \
               values ($1, $2, $3, $4, $5, $6, $7, $8, $9)";
    on!(conn, |c| sqlx::query(sql)
        .bind(&a.version)
        .bind(&previous)
        .bind(a.activated_at)
        .bind(a.how.as_str())
        .bind(&a.proposed_by)
        .bind(&a.approved_by)
        .bind(&a.reason)
        .bind(a.change_id)
        .bind(told_at)
        .execute(c)
        .await
        .map(|_| ()))?;
    Ok(previous)
}

/// Tells every instance listening on PostgreSQL that `version` is now active (at commit).
pub async fn notify_policy(conn: Conn<'_>, version: &str) -> Result<()> {
    if let Conn::Postgres(c) = conn {
        sqlx::query("select pg_notify($1, $2)")
            .bind(POLICY_CHANNEL)
            .bind(version)
            .execute(c)
            .await?;
    }
    Ok(())
}

#[derive(sqlx::FromRow)]
struct ActivationRow {
    seq: i64,
    version: String,
    previous: Option<String>,
    activated_at: OffsetDateTime,
    how: String,
    proposed_by: String,
    approved_by: Option<String>,
    reason: Option<String>,
    change_id: Option<Uuid>,
}

/// The last `limit` activations, newest first.
pub async fn history(conn: Conn<'_>, limit: i64) -> Result<Vec<ActivationRecord>> {
    let sql = "select seq, version, previous, activated_at, how, proposed_by, approved_by, \
               reason, change_id from policy_activations order by seq desc limit $1";
    let rows: Vec<ActivationRow> =
        on!(conn, |c| sqlx::query_as(sql).bind(limit).fetch_all(c).await)?;
    rows.into_iter().map(ActivationRow::record).collect()
}

/// Activation `seq`, if there is one.
pub async fn activation(conn: Conn<'_>, seq: i64) -> Result<Option<ActivationRecord>> {
    let sql = "select seq, version, previous, activated_at, how, proposed_by, approved_by, \
               reason, change_id from policy_activations where seq = $1";
    let row: Option<ActivationRow> = on!(conn, |c| sqlx::query_as(sql)
        .bind(seq)
        .fetch_optional(c)
        .await)?;
    row.map(ActivationRow::record).transpose()
}

impl ActivationRow {
    fn record(self) -> Result<ActivationRecord> {
        Ok(ActivationRecord {
            seq: self.seq,
            how: parse("activation", &self.how, Activation::parse)?,
            version: self.version,
            previous: self.previous,
            activated_at: self.activated_at,
            proposed_by: self.proposed_by,
            approved_by: self.approved_by,
            reason: self.reason,
            change_id: self.change_id,
        })
    }
}

#[derive(sqlx::FromRow)]
struct ChangeRow {
    id: Uuid,
    version: String,
    base: String,
    proposed_by: String,
    proposed_at: OffsetDateTime,
    reason: String,
    status: String,
    decided_by: Option<String>,
    decided_at: Option<OffsetDateTime>,
    decision_reason: Option<String>,
    backtest: Option<String>,
    loosening: bool,
    shadow_until: Option<OffsetDateTime>,
    shadowed: i64,
}

const CHANGE_COLUMNS: &str = "id, version, base, proposed_by, proposed_at, reason, status, \
     decided_by, decided_at, decision_reason, backtest, loosening, shadow_until, shadowed";

impl TryFrom<ChangeRow> for ChangeRecord {
    type Error = StorageError;

    fn try_from(r: ChangeRow) -> Result<Self> {
        let backtest = match r.backtest {
            Some(b) => Some(
                serde_json::from_str(&b)
                    .map_err(|_| StorageError::Corrupt("policy_changes.backtest".into()))?,
            ),
            None => None,
        };
        Ok(ChangeRecord {
            id: r.id,
            status: parse("change status", &r.status, ChangeStatus::parse)?,
            version: r.version,
            base: r.base,
            proposed_by: r.proposed_by,
            proposed_at: r.proposed_at,
            reason: r.reason,
            decided_by: r.decided_by,
            decided_at: r.decided_at,
            decision_reason: r.decision_reason,
            backtest,
            loosening: r.loosening,
            shadow_until: r.shadow_until,
            shadowed: r.shadowed,
        })
    }
}

/// Stores a new request to activate a version.
pub async fn insert_change(conn: Conn<'_>, c: &ChangeRecord) -> Result<()> {
    let sql = format!(
        "insert into policy_changes ({CHANGE_COLUMNS}) \
         values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)"
    );
    let backtest = match &c.backtest {
        Some(b) => {
            Some(serde_json::to_string(b).map_err(|e| StorageError::Corrupt(e.to_string()))?)
        }
        None => None,
    };
    on!(conn, |db| sqlx::query(&sql)
        .bind(c.id)
        .bind(&c.version)
        .bind(&c.base)
        .bind(&c.proposed_by)
        .bind(c.proposed_at)
        .bind(&c.reason)
        .bind(c.status.as_str())
        .bind(&c.decided_by)
        .bind(c.decided_at)
        .bind(&c.decision_reason)
        .bind(&backtest)
        .bind(c.loosening)
        .bind(c.shadow_until)
        .bind(c.shadowed)
        .execute(db)
        .await
        .map(|_| ()))?;
    Ok(())
}

/// A request by id.
pub async fn change(conn: Conn<'_>, id: Uuid) -> Result<Option<ChangeRecord>> {
    let sql = format!("select {CHANGE_COLUMNS} from policy_changes where id = $1");
    let row: Option<ChangeRow> = on!(conn, |c| sqlx::query_as(&sql)
        .bind(id)
        .fetch_optional(c)
        .await)?;
    row.map(TryInto::try_into).transpose()
}

/// The pending requests, oldest first, then the last `limit` decided ones, newest first.
pub async fn changes(mut conn: Conn<'_>, limit: i64) -> Result<Vec<ChangeRecord>> {
    let pending = format!(
        "select {CHANGE_COLUMNS} from policy_changes where status = 'pending' \
         order by proposed_at, id"
    );
    let decided = format!(
        "select {CHANGE_COLUMNS} from policy_changes where status <> 'pending' \
         order by decided_at desc, id limit $1"
    );
    let mut rows: Vec<ChangeRow> = on!(conn.reborrow(), |c| sqlx::query_as(&pending)
        .fetch_all(c)
        .await)?;
    let more: Vec<ChangeRow> = on!(conn, |c| sqlx::query_as(&decided)
        .bind(limit)
        .fetch_all(c)
        .await)?;
    rows.extend(more);
    rows.into_iter().map(TryInto::try_into).collect()
}

/// Settles pending request `id`: `false` when it is no longer pending (someone else settled
/// it first, on any instance).
pub async fn settle(
    conn: Conn<'_>,
    id: Uuid,
    status: ChangeStatus,
    by: &str,
    at: OffsetDateTime,
    reason: Option<&str>,
) -> Result<bool> {
    let sql = "update policy_changes set status = $2, decided_by = $3, decided_at = $4, \
               decision_reason = $5, shadow_until = null where id = $1 and status = 'pending'";
    let n = on!(conn, |c| sqlx::query(sql)
        .bind(id)
        .bind(status.as_str())
        .bind(by)
        .bind(at)
        .bind(reason)
        .execute(c)
        .await
        .map(|r| r.rows_affected()))?;
    Ok(n == 1)
}

/// A recorded proposal, as a backtest replays it.
#[derive(sqlx::FromRow)]
pub struct ProposalDecisionRow {
    /// Arrival order.
    pub seq: i64,
    /// Its id.
    pub id: Uuid,
    /// When it arrived (and was routed).
    pub created_at: OffsetDateTime,
    /// The agent.
    pub agent: String,
    /// The tool.
    pub tool_name: String,
    /// Its routing (JSON).
    pub routing: String,
    /// Its stored request (JSON).
    pub contract: String,
    /// When its personal data was erased.
    pub erased_at: Option<OffsetDateTime>,
}

/// Up to `limit` proposals after `after_seq` that arrived at `since` or later, in order.
pub async fn proposals_page(
    conn: Conn<'_>,
    since: OffsetDateTime,
    after_seq: i64,
    limit: i64,
) -> Result<Vec<ProposalDecisionRow>> {
    let sql = conn.pick(
        "select seq, id, created_at, agent, tool_name, routing, contract, erased_at \
         from proposals where seq > $1 and created_at >= $2 order by seq limit $3",
        "select seq, id, created_at, agent, tool_name, routing::text as routing, \
         contract::text as contract, erased_at \
         from proposals where seq > $1 and created_at >= $2 order by seq limit $3",
    );
    Ok(on!(conn, |c| sqlx::query_as(sql)
        .bind(after_seq)
        .bind(since)
        .bind(limit)
        .fetch_all(c)
        .await)?)
}

/// A recorded pre-tool-check, as a backtest replays it.
#[derive(sqlx::FromRow)]
pub struct CheckDecisionRow {
    /// Its audit seq.
    pub seq: i64,
    /// When it was answered.
    pub at: OffsetDateTime,
    /// The asking agent.
    pub actor: String,
    /// The event's details (JSON): decision, rule, blockers, inputs.
    pub details: String,
}

/// Up to `limit` pre-tool-checks answered after audit seq `after_seq` and at `since` or later,
/// in order.
pub async fn checks_page(
    conn: Conn<'_>,
    since: OffsetDateTime,
    after_seq: i64,
    limit: i64,
) -> Result<Vec<CheckDecisionRow>> {
    let sql = conn.pick(
        "select seq, at, actor, details from audit_events \
         where action = 'pre_tool_check.decided' and seq > $1 and at >= $2 order by seq limit $3",
        "select seq, at, actor, details::text as details from audit_events \
         where action = 'pre_tool_check.decided' and seq > $1 and at >= $2 order by seq limit $3",
    );
    Ok(on!(conn, |c| sqlx::query_as(sql)
        .bind(after_seq)
        .bind(since)
        .bind(limit)
        .fetch_all(c)
        .await)?)
}

/// The requests in a shadow run at `now`: id, version.
pub async fn shadowing(conn: Conn<'_>, now: OffsetDateTime) -> Result<Vec<(Uuid, String)>> {
    let sql = "select id, version from policy_changes \
               where status = 'pending' and shadow_until > $1 order by proposed_at, id";
    Ok(on!(conn, |c| sqlx::query_as(sql)
        .bind(now)
        .fetch_all(c)
        .await)?)
}

/// Runs pending request `id` in shadow until `until` (`None` stops it); `false` when it is not
/// pending.
pub async fn set_shadow(conn: Conn<'_>, id: Uuid, until: Option<OffsetDateTime>) -> Result<bool> {
    let sql = "update policy_changes set shadow_until = $2 where id = $1 and status = 'pending'";
    let n = on!(conn, |c| sqlx::query(sql)
        .bind(id)
        .bind(until)
        .execute(c)
        .await
        .map(|r| r.rows_affected()))?;
    Ok(n == 1)
}

/// One difference a shadow run saw.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct ShadowDifference {
    /// The request whose version it ran under.
    pub change_id: Uuid,
    /// When.
    pub at: OffsetDateTime,
    /// `proposal` or `pre_tool_check`.
    pub kind: String,
    /// The proposal's id or the check's id.
    pub subject: String,
    /// The tool.
    pub tool: String,
    /// The agent.
    pub agent: String,
    /// Route under the active version.
    pub from_route: String,
    /// Its rule.
    pub from_rule: String,
    /// Route under the candidate.
    pub to_route: String,
    /// Its rule.
    pub to_rule: String,
    /// Blocker codes under the active version (JSON array).
    pub from_blockers: String,
    /// Blocker codes under the candidate (JSON array).
    pub to_blockers: String,
}

/// How many of a shadow run's differences went from one route to another, for one tool and
/// agent.
#[derive(Debug, Clone, PartialEq, Eq, Hash, sqlx::FromRow)]
pub struct ShadowTransition {
    /// `proposal` or `pre_tool_check`.
    pub kind: String,
    /// Route under the active version.
    pub from_route: String,
    /// Route under the candidate.
    pub to_route: String,
    /// The tool.
    pub tool: String,
    /// The agent.
    pub agent: String,
    /// How many.
    pub count: i64,
}

/// Counts `shadowed` more decisions routed in `id`'s shadow run and `transitions` more
/// differences (added to what is counted), and keeps `examples`.
pub async fn record_shadow(
    mut conn: Conn<'_>,
    id: Uuid,
    shadowed: i64,
    transitions: &[ShadowTransition],
    examples: &[ShadowDifference],
) -> Result<()> {
    let sql = "update policy_changes set shadowed = shadowed + $2 where id = $1";
    on!(conn.reborrow(), |c| sqlx::query(sql)
        .bind(id)
        .bind(shadowed)
        .execute(c)
        .await
        .map(|_| ()))?;
    let sql = "insert into policy_shadow_transitions (change_id, kind, from_route, to_route, \
               tool, agent, count) values ($1, $2, $3, $4, $5, $6, $7) \
               on conflict (change_id, kind, from_route, to_route, tool, agent) \
               do update set count = policy_shadow_transitions.count + excluded.count";
    for t in transitions {
        on!(conn.reborrow(), |c| sqlx::query(sql)
            .bind(id)
            .bind(&t.kind)
            .bind(&t.from_route)
            .bind(&t.to_route)
            .bind(&t.tool)
            .bind(&t.agent)
            .bind(t.count)
            .execute(c)
            .await
            .map(|_| ()))?;
    }
    let sql = "insert into policy_shadow_differences (change_id, at, kind, subject, tool, agent, \
               from_route, from_rule, to_route, to_rule, from_blockers, to_blockers) \
               values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)";
    for d in examples {
        on!(conn.reborrow(), |c| sqlx::query(sql)
            .bind(d.change_id)
            .bind(d.at)
            .bind(&d.kind)
            .bind(&d.subject)
            .bind(&d.tool)
            .bind(&d.agent)
            .bind(&d.from_route)
            .bind(&d.from_rule)
            .bind(&d.to_route)
            .bind(&d.to_rule)
            .bind(&d.from_blockers)
            .bind(&d.to_blockers)
            .execute(c)
            .await
            .map(|_| ()))?;
    }
    Ok(())
}

/// `id`'s shadow run's differences by route change, tool and agent, most frequent first.
pub async fn shadow_transitions(conn: Conn<'_>, id: Uuid) -> Result<Vec<ShadowTransition>> {
    let sql = "select kind, from_route, to_route, tool, agent, count \
               from policy_shadow_transitions where change_id = $1 \
               order by count desc, kind, from_route, to_route, tool, agent limit 500";
    Ok(on!(conn, |c| sqlx::query_as(sql)
        .bind(id)
        .fetch_all(c)
        .await)?)
}

/// The last `limit` examples of differences `id`'s shadow run kept, newest first, and how
/// many differences it counted.
pub async fn shadow_differences(
    mut conn: Conn<'_>,
    id: Uuid,
    limit: i64,
) -> Result<(Vec<ShadowDifference>, i64)> {
    let sql = "select change_id, at, kind, subject, tool, agent, from_route, from_rule, \
               to_route, to_rule, from_blockers, to_blockers from policy_shadow_differences \
               where change_id = $1 order by seq desc limit $2";
    let rows = on!(conn.reborrow(), |c| sqlx::query_as(sql)
        .bind(id)
        .bind(limit)
        .fetch_all(c)
        .await)?;
    let count = "select cast(coalesce(sum(count), 0) as bigint) from policy_shadow_transitions \
                 where change_id = $1";
    let n: i64 = on!(conn, |c| sqlx::query_scalar(count)
        .bind(id)
        .fetch_one(c)
        .await)?;
    Ok((rows, n))
}
