//! The server's side of the compliance pages: the [`Ledger`] port over the trail's use cases.
//! Every method checks that the viewer's role may audit ([`Role::can_audit`]). The last
//! on-demand verification is kept in memory for the trail page; verifying records nothing.
//! Times travel as [`app::time::Moment`]s seen from when the page renders.

use std::sync::{Arc, Mutex};

use app::dto::{
    AppError, AuditEventView, AuditPage, AuditQuery, ChartsView, CheckpointView, LatencyView,
    TallyView, TimelineView, TrailStatus, VerificationView, Viewer,
};
use app::ports::Ledger;
use app::time::Moment;
use async_trait::async_trait;
use serde_json::Value;
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;
use uuid::Uuid;

use super::filters::{cursor, selection};
use super::{Flagged, internal, moment, role_of};
use crate::audit::chain::ChainedEvent;
use crate::audit::trail::TrailEvent;
use crate::domain::principal::Principal;
use crate::service::{Charts, Cursor, ProposalTimeline, Services, Tally, Verified, VerifyError};

/// Details keys shown at most per row, and characters per value.
const MAX_DETAILS: usize = 12;
const MAX_VALUE: usize = 64;

/// The compliance officer's ledger over the use cases.
pub struct AuditLedger {
    services: Services,
    last_verification: Mutex<Option<LastVerification>>,
    /// One verification at a time: a second request waits for the first and runs after it.
    verifying: tokio::sync::Mutex<()>,
}

/// The last verification and the instant it ran: its view's `at` is set from that instant
/// each time the page renders, so it does not say "just now" forever.
#[derive(Clone)]
struct LastVerification {
    at: OffsetDateTime,
    view: VerificationView,
}

impl LastVerification {
    fn seen_at(self, now: OffsetDateTime) -> VerificationView {
        VerificationView {
            at: moment(self.at, now),
            ..self.view
        }
    }
}

impl AuditLedger {
    /// A ledger over the use cases.
    pub fn new(services: Services) -> Arc<Self> {
        Arc::new(Self {
            services,
            last_verification: Mutex::new(None),
            verifying: tokio::sync::Mutex::new(()),
        })
    }

    fn last_verification(&self) -> Option<LastVerification> {
        self.last_verification
            .lock()
            .map(|v| v.clone())
            .unwrap_or_else(|poisoned| poisoned.into_inner().clone())
    }

    async fn status(&self, who: &Principal, now: OffsetDateTime) -> Result<TrailStatus, AppError> {
        let state = self.services.chain_state(who).await.map_err(internal)?;
        Ok(TrailStatus {
            head_seq: state.head.seq,
            head_hash: state.head.hash,
            checkpoint: state.checkpoint.map(|c| CheckpointView {
                seq: c.seq,
                // What was signed is a string; one that does not parse shows no time.
                at: OffsetDateTime::parse(&c.at, &Rfc3339)
                    .ok()
                    .map(|t| moment(t, now)),
                public_key: c.public_key,
            }),
            verification: self.last_verification().map(|v| v.seen_at(now)),
        })
    }
}

/// Compliance officers and admins only.
pub fn may_audit(viewer: &Viewer) -> Result<(), AppError> {
    if role_of(viewer).can_audit() {
        Ok(())
    } else {
        Err(AppError::Forbidden(
            "Only compliance officers and admins may read the whole audit trail.".into(),
        ))
    }
}

#[async_trait]
impl Ledger for AuditLedger {
    async fn trail(&self, viewer: &Viewer, query: &AuditQuery) -> Result<AuditPage, AppError> {
        may_audit(viewer)?;
        let sel = selection(query)?;
        let cursor = cursor(query, Cursor::Newest)?;
        let who = super::principal(&self.services, viewer).await?;
        let page = (self.services.trail_page(&who, &sel, cursor).await).map_err(internal)?;
        let now = self.services.now();
        Ok(AuditPage {
            events: page
                .events
                .into_iter()
                .map(|e| event_view(e, now))
                .collect(),
            older: page.older,
            newer: page.newer,
            searched_to: page.searched_to,
            status: self.status(&who, now).await?,
        })
    }

    async fn timeline(
        &self,
        viewer: &Viewer,
        id: &str,
        before: Option<&str>,
        after: Option<&str>,
    ) -> Result<TimelineView, AppError> {
        may_audit(viewer)?;
        let id = Uuid::parse_str(id.trim()).map_err(|_| AppError::NotFound)?;
        let cursor = cursor(
            &AuditQuery {
                before: before.map(str::to_owned),
                after: after.map(str::to_owned),
                ..AuditQuery::default()
            },
            Cursor::Oldest,
        )?;
        let s = &self.services;
        let who = super::principal(s, viewer).await?;
        let ProposalTimeline {
            proposal: p,
            command,
            trail: page,
            submitted,
        } = (s.proposal_timeline(&who, id, cursor).await)
            .map_err(internal)?
            .ok_or(AppError::NotFound)?;
        let detail = |key: &str| {
            submitted
                .as_ref()
                .and_then(|e| e.event.details.get(key))
                .and_then(Value::as_str)
                .map(str::to_owned)
        };
        let routing = detail("decision").map(|route| match detail("rule") {
            Some(rule) => format!("{route} by rule {rule}"),
            None => route,
        });
        let now = s.now();
        Ok(TimelineView {
            id: id.to_string(),
            agent: p.agent,
            tool: p.contract.tool.name,
            domain: p.contract.domain,
            status: p.status.as_str().into(),
            submitted_at: moment(p.created_at, now),
            policy_version: detail("policy_version"),
            routing,
            decided: (p.review.as_ref())
                .map(|r| format!("{} by {}", r.verdict.as_str(), r.decided_by)),
            decided_at: p.review.as_ref().map(|r| moment(r.decided_at, now)),
            command_id: command.map(|c| c.id.to_string()),
            events: (page.events.into_iter().rev())
                .map(|e| event_view(e, now))
                .collect(),
            earlier: page.older,
            later: page.newer,
        })
    }

    async fn charts(&self, viewer: &Viewer) -> Result<ChartsView, AppError> {
        may_audit(viewer)?;
        let who = super::principal(&self.services, viewer).await?;
        let charts = self.services.charts(&who).await.map_err(internal)?;
        Ok(charts_view(charts))
    }

    async fn insights(
        &self,
        viewer: &Viewer,
        days: i64,
    ) -> Result<app::dto::InsightsView, AppError> {
        let who = super::principal(&self.services, viewer).await?;
        match self.services.insights(&who, days).await {
            Ok(i) => Ok(insights_view(i, days)),
            Err(crate::service::ServiceError::Denied(_)) => Err(AppError::Forbidden(
                "Only compliance officers and admins see decision insights.".into(),
            )),
            Err(e) => Err(internal(e)),
        }
    }

    async fn verify(&self, viewer: &Viewer) -> Result<(), AppError> {
        may_audit(viewer)?;
        let _one_at_a_time = self.verifying.lock().await;
        let who = super::principal(&self.services, viewer).await?;
        let outcome = self.services.verify_trail(&who, None).await;
        let at = self.services.now();
        let view = verification_view(outcome, moment(at, at), &viewer.username)?;
        let last = Some(LastVerification { at, view });
        match self.last_verification.lock() {
            Ok(mut kept) => *kept = last,
            Err(poisoned) => *poisoned.into_inner() = last,
        }
        Ok(())
    }
}

/// A verification's outcome as the trail page shows it. Failing to read is an error, not a
/// verdict on the chain.
fn verification_view(
    outcome: Result<Verified, VerifyError>,
    at: Moment,
    by: &str,
) -> Result<VerificationView, AppError> {
    let failed = |first_bad_seq: Option<i64>, message: String| VerificationView {
        at,
        by: by.to_owned(),
        ok: false,
        count: 0,
        head_seq: 0,
        head_hash: String::new(),
        first_bad_seq,
        message,
    };
    Ok(match outcome {
        Ok(v) => VerificationView {
            at,
            by: by.to_owned(),
            ok: true,
            count: v.count,
            head_seq: v.head.seq,
            head_hash: v.head.hash,
            first_bad_seq: None,
            message: format!("{} signed checkpoints checked", v.checkpoints),
        },
        Err(VerifyError::Chain(e)) => failed(Some(e.seq()), e.to_string()),
        Err(
            e @ (VerifyError::BadCheckpoint(seq)
            | VerifyError::UntrustedCheckpoint(seq)
            | VerifyError::HeadMismatch(seq)),
        ) => failed(Some(seq), e.to_string()),
        Err(e @ VerifyError::NoTrustedCheckpoint) => failed(None, e.to_string()),
        Err(VerifyError::Service(e)) => return Err(internal(e)),
    })
}

/// One trail row as the pages show it, for a page rendered at `now`.
pub fn event_view(e: TrailEvent, now: OffsetDateTime) -> AuditEventView {
    let TrailEvent { event, facets, .. } = e;
    let timeline = timeline_of(&event);
    // Names in the trail come from outside too (a username typed at sign-in, an agent's model
    // name): shown as every page shows agent-written text, hidden characters escaped.
    let mut shown = Flagged::default();
    let facets = [
        ("agent", facets.agent),
        ("tool", facets.tool),
        ("domain", facets.domain),
        ("risk", facets.risk),
        ("decision", facets.decision),
    ]
    .into_iter()
    .filter_map(|(k, v)| v.map(|v| (k.to_owned(), shown.text(&v))))
    .collect();
    let details = (compact_details(&event.details).into_iter())
        .map(|(k, v)| (shown.text(&k), shown.text(&v)))
        .collect();
    AuditEventView {
        seq: event.seq,
        at: moment(event.at, now),
        actor: shown.text(&format!("{}:{}", event.actor_kind, event.actor)),
        subject: shown.text(&format!("{}:{}", event.subject_type, event.subject_id)),
        timeline,
        change: match (&event.before_status, &event.after_status) {
            (Some(b), Some(a)) => format!("{b} → {a}"),
            (None, Some(a)) => format!("→ {a}"),
            (Some(b), None) => format!("{b} →"),
            (None, None) => String::new(),
        },
        facets,
        details,
        kind: event.kind,
        hidden: shown.hidden,
    }
}

/// The timeline a proposal's or a command's event belongs to.
fn timeline_of(e: &ChainedEvent) -> Option<String> {
    let proposal = match e.subject_type.as_str() {
        "proposal" => Some(e.subject_id.as_str()),
        "command" => e.details.get("proposal_id").and_then(Value::as_str),
        _ => None,
    }?;
    Uuid::parse_str(proposal)
        .ok()
        .map(|id| format!("/audit/proposals/{id}"))
}

/// The details other than the facets, one `(key, value)` per top-level key, values cut short
/// and times to the second (`2026-11-26 10:03:12 UTC`; the export keeps them whole). The
/// details are audit-safe already (names, hashes, counts); this only keeps rows compact.
pub fn compact_details(details: &Value) -> Vec<(String, String)> {
    use crate::audit::chain::FACETS;
    let Some(map) = details.as_object() else {
        return Vec::new();
    };
    let mut out: Vec<(String, String)> = map
        .iter()
        .filter(|(k, _)| !FACETS.contains(&k.as_str()))
        .take(MAX_DETAILS)
        .map(|(k, v)| (k.clone(), cut(&compact_value(v))))
        .collect();
    let shown = map.keys().filter(|k| !FACETS.contains(&k.as_str())).count();
    if shown > MAX_DETAILS {
        out.push(("…".into(), format!("{} more", shown - MAX_DETAILS)));
    }
    out
}

fn compact_value(v: &Value) -> String {
    match v {
        Value::String(s) => match OffsetDateTime::parse(s, &Rfc3339) {
            Ok(t) => moment(t, t).exact(),
            Err(_) => s.clone(),
        },
        Value::Array(items) => items
            .iter()
            .map(compact_value)
            .collect::<Vec<_>>()
            .join(", "),
        Value::Object(_) => v.to_string(),
        other => other.to_string(),
    }
}

fn cut(s: &str) -> String {
    if s.chars().count() > MAX_VALUE {
        let head: String = s.chars().take(MAX_VALUE).collect();
        format!("{head}…")
    } else {
        s.to_owned()
    }
}

fn tally_view(t: Tally) -> TallyView {
    TallyView {
        name: t.name,
        approved: t.approved,
        rejected: t.rejected,
    }
}

fn charts_view(c: Charts) -> ChartsView {
    ChartsView {
        days: c.days.iter().map(|d| d.day.clone()).collect(),
        approved: c.days.iter().map(|d| d.approved).collect(),
        rejected: c.days.iter().map(|d| d.rejected).collect(),
        expired: c.days.iter().map(|d| d.expired).collect(),
        queue_depth: c.queue_depth,
        latency: c
            .time_to_decision
            .into_iter()
            .map(|l| LatencyView {
                domain: l.domain,
                count: l.count as i64,
                p50: l.p50,
                p90: l.p90,
                p99: l.p99,
            })
            .collect(),
        tools: c.tool_rejections.into_iter().map(tally_view).collect(),
        reviewers: c.reviewer_load.into_iter().map(tally_view).collect(),
        truncated: c.truncated,
    }
}

/// The insights as the page shows them: whole seconds, the window's start in words.
fn insights_view(i: crate::service::Insights, days: i64) -> app::dto::InsightsView {
    let secs = |v: Option<i64>| v;
    let row = |d: &crate::domain::record::DecisionGroup| app::dto::InsightRow {
        name: d.name.clone(),
        decisions: d.decisions,
        approved: d.approved,
        p50: secs(d.p50),
        p90: secs(d.p90),
        fast: d.fast,
        grants: 0,
        grant_uses: 0,
        break_glass: 0,
        expired: 0,
    };
    let format = time::macros::format_description!("[year]-[month]-[day] [hour]:[minute]");
    app::dto::InsightsView {
        days,
        from: i.from.format(&format).unwrap_or_default(),
        reviewers: (i.reviewers.iter())
            .map(|r| app::dto::InsightRow {
                grants: r.grants,
                grant_uses: r.grant_uses,
                break_glass: r.break_glass,
                ..row(&r.decisions)
            })
            .collect(),
        domains: (i.domains.iter())
            .map(|d| app::dto::InsightRow {
                expired: d.expired,
                ..row(&d.decisions)
            })
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn details_leave_out_the_facets_and_stay_short() {
        let d = json!({
            "tool": "crm.update",
            "rule": "x".repeat(100),
            "blockers": ["a", "b"],
            "intent": {"summary": {"len": 12, "hash": "ab"}},
            "execute_by": "2026-11-26T10:03:12.123456789Z",
        });
        let shown = compact_details(&d);
        let keys: Vec<_> = shown.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(keys, vec!["blockers", "execute_by", "intent", "rule"]);
        assert_eq!(shown[0].1, "a, b");
        assert_eq!(shown[1].1, "2026-11-26 10:03:12 UTC", "times to the second");
        assert!(shown[3].1.ends_with('…'));
        assert_eq!(shown[3].1.chars().count(), MAX_VALUE + 1);
    }

    #[test]
    fn commands_link_to_their_proposal() {
        let id = Uuid::now_v7();
        let e = ChainedEvent {
            seq: 1,
            id,
            at: time::OffsetDateTime::UNIX_EPOCH,
            actor_kind: "executor".into(),
            actor: "x".into(),
            kind: "command.leased".into(),
            subject_type: "command".into(),
            subject_id: Uuid::now_v7().to_string(),
            before_status: None,
            after_status: None,
            details: json!({"proposal_id": id}),
            hash: String::new(),
        };
        assert_eq!(timeline_of(&e), Some(format!("/audit/proposals/{id}")));
    }
}
