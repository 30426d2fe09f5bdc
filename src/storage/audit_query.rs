//! Reads of the audit trail for the compliance officer's pages and exports: a [`Selection`]
//! (kind, actor, facets, time range) walked by seq with keyset cursors, the trail of one
//! proposal and its command, and a selection's rows with each row's previous hash for an
//! export bundle. Appending lives in [`super::audit`]; nothing here writes.
//!
//! ## Why a page stays fast on a long trail
//!
//! Every walk goes by `seq` (newest first or oldest first) from a cursor, and stops after a
//! page. One equality filter walks its own `(column, seq)` index backwards; none walks the
//! primary key. A time range never scans the `at` index: [`seq_before_time`] and
//! [`seq_from_time`] turn its ends into seq bounds (one index probe each) and the walk stays
//! within them, checking `at` exactly as it goes. When a filter cannot be served by the index
//! walked (a second facet, or the time check near the range's ends), a page first measures
//! how far a fixed number of index entries reaches ([`scan_edge`]) and then looks only there,
//! so a page costs the same whether its filters match often or never; a page that finds
//! fewer matches says how far it looked, and the next one continues from there.
//!
//! On SQLite the walk is pinned to its index (`indexed by`, `not indexed`): without
//! statistics the planner may otherwise sort a whole time range. PostgreSQL plans by its own
//! statistics.

use serde_json::Value;
use sqlx::types::Json;
use time::OffsetDateTime;
use uuid::Uuid;

use super::conn::{Conn, on};
use super::error::Result;
use super::statement::{Arg, Statement, fetch_all};
use crate::audit::chain::ChainedEvent;
// The selection and the events read are the trail's own types; re-exported for the service,
// which names them here.
pub use crate::audit::trail::{Facets, Selection, TrailEvent};

/// A column a selection can require a value of, with the index that walks it in seq order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Column {
    Tool,
    Agent,
    Actor,
    Domain,
    Kind,
    Decision,
    Risk,
}

impl Column {
    fn name(self) -> &'static str {
        match self {
            Column::Tool => "tool",
            Column::Agent => "agent",
            Column::Actor => "actor",
            Column::Domain => "domain",
            Column::Kind => "action",
            Column::Decision => "decision",
            Column::Risk => "risk",
        }
    }

    fn index(self) -> &'static str {
        match self {
            Column::Tool => "audit_events_by_tool",
            Column::Agent => "audit_events_by_agent",
            Column::Actor => "audit_events_by_actor",
            Column::Domain => "audit_events_by_domain",
            Column::Kind => "audit_events_by_kind",
            Column::Decision => "audit_events_by_decision",
            Column::Risk => "audit_events_by_risk",
        }
    }
}

// How storage walks a selection; what it means is beside its type ([`crate::audit::trail`]).
impl Selection {
    /// The equality filters, most selective first (the first one drives the walk).
    fn equalities(&self) -> Vec<(Column, &str)> {
        [
            (Column::Tool, &self.tool),
            (Column::Agent, &self.agent),
            (Column::Actor, &self.actor),
            (Column::Domain, &self.domain),
            (Column::Kind, &self.kind),
            (Column::Decision, &self.decision),
            (Column::Risk, &self.risk),
        ]
        .into_iter()
        .filter_map(|(c, v)| v.as_deref().map(|v| (c, v)))
        .collect()
    }

    /// Whether the index walked answers every filter by itself (no residual check).
    pub fn is_exact_walk(&self) -> bool {
        self.equalities().len() <= 1 && self.from.is_none() && self.until.is_none()
    }

    /// Whether the selection filters by anything other than time: its rows are then
    /// generally not one contiguous stretch of the chain.
    pub fn filters_rows(&self) -> bool {
        !self.equalities().is_empty()
    }
}

/// Which way a walk goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Walk {
    /// Newest first: seq descending.
    Older,
    /// Oldest first: seq ascending.
    Newer,
}

/// Seqs strictly between `after` and `before` (`None`: no upper end).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SeqRange {
    /// Exclusive lower end (0: from the start).
    pub after: i64,
    /// Exclusive upper end.
    pub before: Option<i64>,
}

impl SeqRange {
    /// Whether the range holds no seq at all.
    pub fn is_empty(&self) -> bool {
        self.before.is_some_and(|b| b <= self.after + 1)
    }
}

#[derive(sqlx::FromRow)]
struct TrailRow {
    seq: i64,
    id: Uuid,
    at: OffsetDateTime,
    actor_kind: String,
    actor: String,
    action: String,
    subject_type: String,
    subject_id: String,
    before_status: Option<String>,
    after_status: Option<String>,
    details: Json<Value>,
    hash: Option<String>,
    agent: Option<String>,
    tool: Option<String>,
    domain: Option<String>,
    risk: Option<String>,
    decision: Option<String>,
    prev_hash: Option<String>,
}

impl TrailRow {
    fn into_event(self) -> TrailEvent {
        TrailEvent {
            event: ChainedEvent {
                seq: self.seq,
                id: self.id,
                at: self.at,
                actor_kind: self.actor_kind,
                actor: self.actor,
                kind: self.action,
                subject_type: self.subject_type,
                subject_id: self.subject_id,
                before_status: self.before_status,
                after_status: self.after_status,
                details: self.details.0,
                hash: self.hash.unwrap_or_default(),
            },
            facets: Facets {
                agent: self.agent,
                tool: self.tool,
                domain: self.domain,
                risk: self.risk,
                decision: self.decision,
            },
            prev_hash: self.prev_hash,
        }
    }
}

/// Columns of a [`TrailRow`] without `prev_hash`, qualified by the alias `e`.
const COLUMNS: &str = "e.seq, e.id, e.at, e.actor_kind, e.actor, e.action, e.subject_type, \
                       e.subject_id, e.before_status, e.after_status, e.details, e.hash, e.agent, \
                       e.tool, e.domain, e.risk, e.decision";

/// A time bound as SQLite's stored text compares it. Trail times are stored as RFC 3339 in
/// UTC with the fraction trimmed (`…:05Z`, `…:05.25Z`), so a bound is cut to whole seconds
/// and written with an explicit `.000000`: every stored time at or after that second then
/// compares greater or equal, every earlier one smaller.
pub(crate) fn time_bound(t: OffsetDateTime, round_up: bool) -> String {
    let t = t.to_offset(time::UtcOffset::UTC);
    let whole = t.replace_nanosecond(0).unwrap_or(t);
    let t = if round_up && whole != t {
        whole + time::Duration::SECOND
    } else {
        whole
    };
    let format =
        time::macros::format_description!("[year]-[month]-[day]T[hour]:[minute]:[second].000000Z");
    t.format(&format).unwrap_or_default()
}

fn is_sqlite(conn: &Conn<'_>) -> bool {
    matches!(conn, Conn::Sqlite(_))
}

/// `from audit_events as e [indexed by …]`: the walk pinned to its index on SQLite.
fn from_clause(stmt: &mut Statement, sqlite: bool, driving: Option<Column>) {
    stmt.push(" from audit_events as e");
    if sqlite {
        match driving {
            Some(c) => stmt.push(" indexed by ").push(c.index()),
            None => stmt.push(" not indexed"),
        };
    }
}

/// The driving filter and the seq range: what the walked index answers by itself.
fn driving_clause(stmt: &mut Statement, driving: Option<(Column, &str)>, range: SeqRange) {
    stmt.push(" where e.seq > ").bind(Arg::Int(range.after));
    if let Some(before) = range.before {
        stmt.push(" and e.seq < ").bind(Arg::Int(before));
    }
    if let Some((c, v)) = driving {
        stmt.push(" and e.")
            .push(c.name())
            .push(" = ")
            .bind(Arg::Text(v.to_owned()));
    }
}

/// Every other filter, checked row by row on the walk.
fn residual_clause(stmt: &mut Statement, sqlite: bool, sel: &Selection) {
    for (c, v) in sel.equalities().into_iter().skip(1) {
        stmt.push(" and e.")
            .push(c.name())
            .push(" = ")
            .bind(Arg::Text(v.to_owned()));
    }
    let cast = if sqlite { "" } else { "::timestamptz" };
    if let Some(from) = sel.from {
        stmt.push(" and e.at >= ")
            .bind(Arg::Text(time_bound(from, false)))
            .push(cast);
    }
    if let Some(until) = sel.until {
        stmt.push(" and e.at < ")
            .bind(Arg::Text(time_bound(until, true)))
            .push(cast);
    }
}

fn order_clause(stmt: &mut Statement, walk: Walk, limit: i64) {
    stmt.push(match walk {
        Walk::Older => " order by e.seq desc limit ",
        Walk::Newer => " order by e.seq asc limit ",
    })
    .bind(Arg::Int(limit));
}

/// The seq of the last row, by time, written before `t`, if any.
pub async fn seq_before_time(conn: Conn<'_>, t: OffsetDateTime) -> Result<Option<i64>> {
    let sql = conn.pick(
        "select seq from audit_events indexed by audit_events_by_time \
         where at < $1 order by at desc limit 1",
        "select seq from audit_events where at < $1::timestamptz order by at desc limit 1",
    );
    let row: Option<(i64,)> = on!(conn, |c| sqlx::query_as(sql)
        .bind(time_bound(t, false))
        .fetch_optional(c)
        .await)?;
    Ok(row.map(|(s,)| s))
}

/// The seq of the first row, by time, written at or after `t`, if any.
pub async fn seq_from_time(conn: Conn<'_>, t: OffsetDateTime) -> Result<Option<i64>> {
    let sql = conn.pick(
        "select seq from audit_events indexed by audit_events_by_time \
         where at >= $1 order by at asc limit 1",
        "select seq from audit_events where at >= $1::timestamptz order by at asc limit 1",
    );
    let row: Option<(i64,)> = on!(conn, |c| sqlx::query_as(sql)
        .bind(time_bound(t, true))
        .fetch_optional(c)
        .await)?;
    Ok(row.map(|(s,)| s))
}

/// How far `budget` entries of the index that drives `sel` reach from the start of `range`
/// in the direction of `walk`: the number of entries (at most `budget`) and the farthest seq.
pub async fn scan_edge(
    conn: Conn<'_>,
    sel: &Selection,
    range: SeqRange,
    walk: Walk,
    budget: i64,
) -> Result<(i64, Option<i64>)> {
    let sqlite = is_sqlite(&conn);
    let driving = sel.equalities().into_iter().next();
    let mut stmt = Statement::default();
    stmt.push(match walk {
        Walk::Older => "select count(*), min(s.seq) from (select e.seq",
        Walk::Newer => "select count(*), max(s.seq) from (select e.seq",
    });
    from_clause(&mut stmt, sqlite, driving.map(|(c, _)| c));
    driving_clause(&mut stmt, driving, range);
    order_clause(&mut stmt, walk, budget);
    stmt.push(") as s");
    let rows: Vec<(i64, Option<i64>)> = fetch_all!(conn, (i64, Option<i64>), stmt)?;
    Ok(rows.into_iter().next().unwrap_or((0, None)))
}

/// Up to `limit` rows of `sel` within `range`, in the order of `walk`.
pub async fn page(
    conn: Conn<'_>,
    sel: &Selection,
    range: SeqRange,
    walk: Walk,
    limit: i64,
) -> Result<Vec<TrailEvent>> {
    let sqlite = is_sqlite(&conn);
    let driving = sel.equalities().into_iter().next();
    let mut stmt = Statement::default();
    stmt.push("select ")
        .push(COLUMNS)
        .push(", null as prev_hash");
    from_clause(&mut stmt, sqlite, driving.map(|(c, _)| c));
    driving_clause(&mut stmt, driving, range);
    residual_clause(&mut stmt, sqlite, sel);
    order_clause(&mut stmt, walk, limit);
    let rows: Vec<TrailRow> = fetch_all!(conn, TrailRow, stmt)?;
    Ok(rows.into_iter().map(TrailRow::into_event).collect())
}

/// Up to `limit` rows of `sel` within `range`, oldest first, each with the hash of the row
/// before it in the chain (for export bundles).
pub async fn export_page(
    conn: Conn<'_>,
    sel: &Selection,
    range: SeqRange,
    limit: i64,
) -> Result<Vec<TrailEvent>> {
    let sqlite = is_sqlite(&conn);
    let driving = sel.equalities().into_iter().next();
    let mut stmt = Statement::default();
    stmt.push("select ")
        .push(COLUMNS)
        .push(", (select p.hash from audit_events as p where p.seq = e.seq - 1) as prev_hash");
    from_clause(&mut stmt, sqlite, driving.map(|(c, _)| c));
    driving_clause(&mut stmt, driving, range);
    residual_clause(&mut stmt, sqlite, sel);
    order_clause(&mut stmt, Walk::Newer, limit);
    let rows: Vec<TrailRow> = fetch_all!(conn, TrailRow, stmt)?;
    Ok(rows.into_iter().map(TrailRow::into_event).collect())
}

/// Up to `limit` rows about any of `subjects` (`(type, id)`, at most two: a proposal and its
/// command) within `range`, in the order of `walk`. Each subject walks its own index range.
pub async fn subjects_page(
    conn: Conn<'_>,
    subjects: &[(&str, &str)],
    range: SeqRange,
    walk: Walk,
    limit: i64,
) -> Result<Vec<TrailEvent>> {
    let mut stmt = Statement::default();
    for (n, (subject_type, subject_id)) in subjects.iter().enumerate() {
        if n > 0 {
            stmt.push(" union all ");
        }
        stmt.push("select * from (select ")
            .push(COLUMNS)
            .push(", null as prev_hash from audit_events as e where e.subject_type = ")
            .bind(Arg::Text((*subject_type).to_owned()))
            .push(" and e.subject_id = ")
            .bind(Arg::Text((*subject_id).to_owned()))
            .push(" and e.seq > ")
            .bind(Arg::Int(range.after));
        if let Some(before) = range.before {
            stmt.push(" and e.seq < ").bind(Arg::Int(before));
        }
        order_clause(&mut stmt, walk, limit);
        stmt.push(&format!(") as s{n}"));
    }
    stmt.push(match walk {
        Walk::Older => " order by seq desc limit ",
        Walk::Newer => " order by seq asc limit ",
    })
    .bind(Arg::Int(limit));
    if subjects.is_empty() {
        return Ok(Vec::new());
    }
    let rows: Vec<TrailRow> = fetch_all!(conn, TrailRow, stmt)?;
    Ok(rows.into_iter().map(TrailRow::into_event).collect())
}

/// The first event of `kind` about a subject (e.g. a proposal's `proposal.submitted`).
pub async fn first_of_kind(
    conn: Conn<'_>,
    subject_type: &str,
    subject_id: &str,
    kind: &str,
) -> Result<Option<TrailEvent>> {
    let sql = format!(
        "select {COLUMNS}, null as prev_hash from audit_events as e \
         where e.subject_type = $1 and e.subject_id = $2 and e.action = $3 \
         order by e.seq limit 1"
    );
    let row: Option<TrailRow> = on!(conn, |c| sqlx::query_as(&sql)
        .bind(subject_type)
        .bind(subject_id)
        .bind(kind)
        .fetch_optional(c)
        .await)?;
    Ok(row.map(TrailRow::into_event))
}

#[cfg(test)]
mod tests {
    use super::*;
    use time::macros::datetime;

    #[test]
    fn time_bounds_are_whole_seconds_with_an_explicit_fraction() {
        let t = datetime!(2026-11-23 12:00:05.25 UTC);
        assert_eq!(time_bound(t, false), "2026-11-23T12:00:05.000000Z");
        assert_eq!(time_bound(t, true), "2026-11-23T12:00:06.000000Z");
        let whole = datetime!(2026-11-23 12:00:05 UTC);
        assert_eq!(time_bound(whole, true), "2026-11-23T12:00:05.000000Z");
        // Stored times compare the right way round against a bound, fraction or not.
        let bound = time_bound(whole, false);
        assert!("2026-11-23T12:00:05Z" >= bound.as_str());
        assert!("2026-11-23T12:00:05.5Z" >= bound.as_str());
        assert!("2026-11-23T12:00:04.999999Z" < bound.as_str());
    }

    #[test]
    fn the_most_selective_filter_drives_and_the_rest_are_residual() {
        let sel = Selection {
            risk: Some("high".into()),
            tool: Some("crm.update".into()),
            ..Selection::default()
        };
        assert_eq!(
            sel.equalities(),
            vec![(Column::Tool, "crm.update"), (Column::Risk, "high")]
        );
        assert!(!sel.is_exact_walk());
        let one = Selection {
            kind: Some("proposal.approved".into()),
            ..Selection::default()
        };
        assert!(one.is_exact_walk());
        assert!(one.filters_rows());
        let timed = Selection {
            from: Some(datetime!(2026-11-23 0:00 UTC)),
            ..Selection::default()
        };
        assert!(!timed.is_exact_walk());
        assert!(!timed.filters_rows());
    }

    #[test]
    fn statements_number_their_placeholders_in_order() {
        let sel = Selection {
            tool: Some("t".into()),
            decision: Some("rejected".into()),
            from: Some(datetime!(2026-11-23 0:00 UTC)),
            ..Selection::default()
        };
        let mut stmt = Statement::default();
        stmt.push("select 1");
        from_clause(&mut stmt, true, Some(Column::Tool));
        driving_clause(
            &mut stmt,
            Some((Column::Tool, "t")),
            SeqRange {
                after: 0,
                before: Some(10),
            },
        );
        residual_clause(&mut stmt, true, &sel);
        order_clause(&mut stmt, Walk::Older, 51);
        assert_eq!(
            stmt.sql,
            "select 1 from audit_events as e indexed by audit_events_by_tool where e.seq > $1 \
             and e.seq < $2 and e.tool = $3 and e.decision = $4 and e.at >= $5 \
             order by e.seq desc limit $6"
        );
        assert_eq!(stmt.args.len(), 6);
    }
}
