//! The server's side of the UI's ports: the reviewer's desk over the use cases in
//! [`crate::service`]. Every method checks the viewer's role again (deny by default); the
//! decision rules and their atomic application live in the service. Reads here never write:
//! a pending proposal whose time ran out is shown expired until the sweep records it.

pub mod export;
pub mod filters;
pub mod ledger;
pub mod runs;

use std::sync::Arc;

use app::dto::{
    self, AppError, AuditView, BlockerView, ExecutionView, Notice, ProposalView, QueueItem,
    ReviewView, SecurityEvent, Viewer,
};
use app::ports::{DecideOutcome, Desk};
use async_trait::async_trait;
use serde_json::Value;
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;
use uuid::Uuid;

use crate::audit::{self as trail, Actor, AuditEvent};
use crate::domain::erasure::ErasureError;
use crate::domain::lifecycle::{
    self, DecisionError, ProposalStatus, ReviewVerdict, check_decision,
};
use crate::domain::principal::Role;
use crate::service::{
    Conflict, Cursor, Decided, QUEUE_LIMIT, Reviewer, ServiceError, Services, TrailPage,
};
use crate::storage::audit_query::TrailEvent;
use crate::storage::commands::CommandRecord;
use crate::storage::proposals::{ProposalRecord, Review};

/// The reviewer's desk. Its methods receive a viewer the server functions have just checked
/// against the stored account ([`Desk::revalidate`]); they check the role for each operation.
pub struct ReviewDesk {
    services: Services,
}

impl ReviewDesk {
    /// A desk over the use cases.
    pub fn new(services: Services) -> Arc<Self> {
        Arc::new(Self { services })
    }
}

impl From<Role> for dto::Role {
    fn from(role: Role) -> Self {
        match role {
            Role::Admin => dto::Role::Admin,
            Role::Reviewer => dto::Role::Reviewer,
            Role::Compliance => dto::Role::Compliance,
        }
    }
}

fn role_of(viewer: &Viewer) -> Role {
    match viewer.role {
        dto::Role::Admin => Role::Admin,
        dto::Role::Reviewer => Role::Reviewer,
        dto::Role::Compliance => Role::Compliance,
    }
}

fn internal(e: ServiceError) -> AppError {
    match e {
        ServiceError::NotFound => AppError::NotFound,
        other => {
            tracing::error!(error = %other, "service failed");
            AppError::Internal
        }
    }
}

fn may_view(viewer: &Viewer) -> Result<Role, AppError> {
    let role = role_of(viewer);
    if role.can_view_proposals() {
        Ok(role)
    } else {
        Err(AppError::Forbidden(
            "your role may not view proposals".into(),
        ))
    }
}

fn rfc3339(t: OffsetDateTime) -> String {
    t.format(&Rfc3339).unwrap_or_default()
}

/// "12 s", "4 min", "3 h", "2 d".
pub fn age(since: OffsetDateTime, now: OffsetDateTime) -> String {
    let secs = (now - since).whole_seconds().max(0);
    match secs {
        0..60 => format!("{secs} s"),
        60..3_600 => format!("{} min", secs / 60),
        3_600..86_400 => format!("{} h", secs / 3_600),
        _ => format!("{} d", secs / 86_400),
    }
}

fn rollback_words(p: &ProposalRecord) -> String {
    let c = &p.contract;
    match (&c.rollback_plan, c.rollback_supported) {
        (Some(plan), true) => format!("supported ({})", plan.kind),
        (Some(plan), false) => format!("not supported (plan: {})", plan.kind),
        (None, true) => "supported".into(),
        (None, false) => "not supported".into(),
    }
}

fn targets(p: &ProposalRecord) -> Vec<String> {
    p.contract
        .target_refs
        .iter()
        .map(|t| format!("{}:{}", t.kind, t.id))
        .collect()
}

/// `key=…` for every parameter, cut to `max` characters.
fn keys_only(params: &serde_json::Map<String, Value>, max: usize) -> String {
    let masked: serde_json::Map<String, Value> = params
        .keys()
        .map(|k| (k.clone(), Value::String("…".into())))
        .collect();
    preview(&masked, max)
}

/// One line of `key=value` pairs, cut to `max` characters.
fn preview(params: &serde_json::Map<String, Value>, max: usize) -> String {
    let line = params
        .iter()
        .map(|(k, v)| match v {
            Value::String(s) => format!("{k}={s}"),
            other => format!("{k}={other}"),
        })
        .collect::<Vec<_>>()
        .join(", ");
    if line.chars().count() > max {
        let cut: String = line.chars().take(max).collect();
        format!("{cut}…")
    } else if line.is_empty() {
        "(no parameters)".into()
    } else {
        line
    }
}

fn queue_item(p: ProposalRecord, now: OffsetDateTime) -> QueueItem {
    let c = &p.contract;
    QueueItem {
        id: p.id.to_string(),
        summary: c.intent.summary.clone(),
        tool: format!("{} {}", c.tool.name, c.tool.version),
        targets: targets(&p),
        affected: if c.compliance_context.gdpr || c.compliance_context.hipaa {
            // Personal or health data: the queue names the fields; the values are shown only
            // on the proposal page, to the reviewer who opens it to decide.
            keys_only(&c.parameters, 120)
        } else {
            preview(&c.parameters, 120)
        },
        rollback: rollback_words(&p),
        risk: c.risk_level.as_str().into(),
        age: age(p.created_at, now),
        proposed_by: p.agent.clone(),
        route: p.routing.route.as_str().into(),
    }
}

/// GDPR/HIPAA flags and the seed 003 classification, as label/value pairs.
fn compliance_and_classification(p: &ProposalRecord) -> (Vec<String>, Vec<(String, String)>) {
    let c = &p.contract;
    let mut compliance = Vec::new();
    if c.compliance_context.gdpr {
        compliance.push("GDPR (personal data)".to_owned());
    }
    if c.compliance_context.hipaa {
        compliance.push("HIPAA (health data)".to_owned());
    }
    let mut classification = Vec::new();
    if let Some(cat) = c.tool_category {
        classification.push(("Tool category".to_owned(), cat.as_str().to_owned()));
    }
    if let Some(d) = c.risk_domain {
        classification.push(("Risk domain".to_owned(), d.as_str().to_owned()));
    }
    if !c.evidence_refs.is_empty() {
        classification.push((
            "Evidence refs".to_owned(),
            c.evidence_refs.len().to_string(),
        ));
    }
    classification.push((
        "Agent says approval required".to_owned(),
        c.approval_required.to_string(),
    ));
    (compliance, classification)
}

fn audit_view(a: TrailEvent) -> AuditView {
    let a = a.event;
    AuditView {
        at: rfc3339(a.at),
        actor: format!("{}:{}", a.actor_kind, a.actor),
        action: a.kind,
        change: match (a.before_status, a.after_status) {
            (Some(b), Some(a)) => format!("{b} → {a}"),
            (None, Some(a)) => format!("→ {a}"),
            _ => String::new(),
        },
    }
}

fn review_view(r: Review) -> ReviewView {
    ReviewView {
        verdict: r.verdict.as_str().into(),
        decided_by: r.decided_by,
        decided_at: rfc3339(r.decided_at),
        reason: r.reason,
    }
}

fn execution_view(x: CommandRecord) -> ExecutionView {
    ExecutionView {
        command_id: x.id.to_string(),
        status: x.status.as_str().into(),
        attempts: x.attempts,
        leased_by: x.leased_by,
    }
}

/// Whether this viewer may decide now, and if not, why (for open proposals only).
struct Standing {
    status: ProposalStatus,
    can_decide: bool,
    cannot: Option<String>,
    approve_blocked: Option<String>,
}

fn standing(
    p: &ProposalRecord,
    viewer: &Viewer,
    role: Role,
    approvals: &[(String, OffsetDateTime)],
    now: OffsetDateTime,
) -> Standing {
    let status = lifecycle::status_at(p.status, p.expires_at, now);
    let check = check_decision(
        status,
        &p.agent,
        &viewer.username,
        role,
        ReviewVerdict::Approved,
        None,
    );
    let (can_decide, cannot) = match check {
        Ok(_) => (true, None),
        Err(DecisionError::AlreadyDecided(_)) => (false, None),
        Err(e) => (false, Some(e.to_string())),
    };
    let approve_blocked = (can_decide && approvals.iter().any(|(who, _)| *who == viewer.username))
        .then(|| {
            let more = usize::from(p.routing.required_approvals).saturating_sub(approvals.len());
            format!("You approved. {more} more approval(s) from other reviewers are needed.")
        });
    Standing {
        status,
        can_decide,
        cannot: if status.is_open() { cannot } else { None },
        approve_blocked,
    }
}

/// Everything the detail page shows about one proposal.
struct Detail {
    p: ProposalRecord,
    command: Option<CommandRecord>,
    approvals: Vec<(String, OffsetDateTime)>,
    audit: TrailPage,
    standing: Standing,
    can_erase: bool,
    now: OffsetDateTime,
}

impl Detail {
    fn into_view(self) -> ProposalView {
        let Detail {
            p,
            command,
            approvals,
            audit,
            standing,
            can_erase,
            now,
        } = self;
        let erased = p
            .erasure
            .as_ref()
            .map(|e| format!("Erased by {} at {}: {}", e.by, rfc3339(e.at), e.reason));
        let (compliance, classification) = compliance_and_classification(&p);
        let rollback = rollback_words(&p);
        let targets = targets(&p);
        let c = p.contract;
        let r = p.routing;
        ProposalView {
            id: p.id.to_string(),
            status: standing.status.as_str().into(),
            authorization_state: p.authorization_state.as_str().into(),
            declared_authorization: c.authorization_state.map(|a| a.as_str().into()),
            summary: c.intent.summary,
            reasoning: c.intent.reasoning,
            tool: c.tool.name,
            tool_version: c.tool.version,
            proposed_by: p.agent,
            domain: c.domain,
            created_at: rfc3339(p.created_at),
            age: age(p.created_at, now),
            expires_at: p.expires_at.map(rfc3339),
            risk_level: c.risk_level.as_str().into(),
            blast_radius: c.blast_radius.map(|b| b.as_str().into()),
            rollback,
            rollback_plan: c
                .rollback_plan
                .as_ref()
                .and_then(|plan| serde_json::to_string_pretty(plan).ok()),
            targets,
            parameters: serde_json::to_string_pretty(&c.parameters).unwrap_or_default(),
            compliance,
            classification,
            route: r.route.as_str().into(),
            effective_risk: r.effective_risk.as_str().into(),
            required_approvals: r.required_approvals,
            category: r.category.as_str().into(),
            rule: r.rule,
            policy_version: r.policy_version,
            blockers: r
                .blockers
                .into_iter()
                .map(|b| BlockerView {
                    code: b.code.as_str().into(),
                    message: b.message,
                })
                .collect(),
            reasons: r.reasons,
            request_hash: p.request_hash,
            idempotency_key: c.idempotency_key,
            review: p.review.map(review_view),
            execution: command.map(execution_view),
            audit_older: audit.older,
            audit_newer: audit.newer,
            audit: audit.events.into_iter().map(audit_view).collect(),
            approve_blocked: standing.approve_blocked,
            approvals: approvals
                .iter()
                .map(|(who, at)| format!("{who} at {}", rfc3339(*at)))
                .collect(),
            can_decide: standing.can_decide,
            cannot_decide_because: standing.cannot,
            can_erase: can_erase && erased.is_none() && !standing.status.is_open(),
            erased,
        }
    }
}

/// The notice a refused or conflicting decision shows.
fn refusal(e: &ServiceError) -> Option<Notice> {
    Some(match e {
        ServiceError::Refused(DecisionError::RoleMayNotDecide) => Notice::Role,
        ServiceError::Refused(DecisionError::OwnProposal) => Notice::OwnProposal,
        ServiceError::Refused(DecisionError::AlreadyDecided(ProposalStatus::Expired))
        | ServiceError::Conflict(Conflict::AlreadyDecided(ProposalStatus::Expired)) => {
            Notice::Expired
        }
        ServiceError::Refused(DecisionError::AlreadyDecided(_))
        | ServiceError::Conflict(Conflict::AlreadyDecided(_)) => Notice::AlreadyDecided,
        ServiceError::Refused(DecisionError::ReasonRequired) => Notice::ReasonRequired,
        ServiceError::Conflict(Conflict::AlreadyApproved) => Notice::AlreadyApproved,
        _ => return None,
    })
}

#[async_trait]
impl Desk for ReviewDesk {
    async fn authenticate(&self, username: &str, password: &str) -> Result<Viewer, AppError> {
        match self
            .services
            .authenticate(username, password)
            .await
            .map_err(internal)?
        {
            Some(u) => {
                tracing::info!(user = %u.username, "signed in");
                Ok(Viewer {
                    username: u.username,
                    role: u.role.into(),
                    can_decide: u.role.can_decide(),
                })
            }
            None => {
                // What was typed may be a password pasted into the wrong box: log it only if
                // it could be a username at all.
                let shown = crate::domain::principal::parse_name(username)
                    .unwrap_or_else(|_| "<not a username>".into());
                tracing::info!(user = %shown, "sign-in refused");
                Err(AppError::Unauthenticated)
            }
        }
    }

    async fn revalidate(&self, viewer: &Viewer) -> Result<bool, AppError> {
        let user = self
            .services
            .user(&viewer.username)
            .await
            .map_err(internal)?;
        Ok(user.is_some_and(|u| !u.disabled && dto::Role::from(u.role) == viewer.role))
    }

    async fn queue(&self, viewer: &Viewer) -> Result<Vec<QueueItem>, AppError> {
        may_view(viewer)?;
        let now = self.services.now();
        let pending = self.services.pending(QUEUE_LIMIT).await.map_err(internal)?;
        Ok(pending.into_iter().map(|p| queue_item(p, now)).collect())
    }

    async fn proposal(
        &self,
        viewer: &Viewer,
        id: &str,
        trail_before: Option<i64>,
    ) -> Result<ProposalView, AppError> {
        let role = may_view(viewer)?;
        let id = Uuid::parse_str(id).map_err(|_| AppError::NotFound)?;
        let s = &self.services;
        let p = s
            .proposal(id)
            .await
            .map_err(internal)?
            .ok_or(AppError::NotFound)?;
        let command = s.command_for_proposal(id).await.map_err(internal)?;
        let approvals = s.approvals(id).await.map_err(internal)?;
        // The most recent events of the proposal and its command, a page at a time.
        let cursor = trail_before.map_or(Cursor::Newest, Cursor::Before);
        let audit = s
            .proposal_trail(id, command.as_ref().map(|c| c.id), cursor)
            .await
            .map_err(internal)?;
        let now = s.now();
        let standing = standing(&p, viewer, role, &approvals, now);
        s.record_view(&Actor::user(&viewer.username), &p)
            .await
            .map_err(internal)?;
        Ok(Detail {
            p,
            command,
            approvals,
            audit,
            standing,
            can_erase: role == Role::Admin,
            now,
        }
        .into_view())
    }

    async fn erase(
        &self,
        viewer: &Viewer,
        id: &str,
        reason: &str,
    ) -> Result<DecideOutcome, AppError> {
        self.erase_as_admin(viewer, id, reason).await
    }

    async fn security(
        &self,
        viewer: Option<&Viewer>,
        event: SecurityEvent,
    ) -> Result<(), AppError> {
        let (actor, event) = security_event(viewer, event);
        self.services
            .record_security(&actor, event)
            .await
            .map_err(internal)
    }

    async fn runs(&self, viewer: &Viewer) -> Result<dto::RunsView, AppError> {
        runs::runs(&self.services, viewer).await
    }

    async fn resolve(
        &self,
        viewer: &Viewer,
        id: &str,
        resolution: &str,
        reason: &str,
    ) -> Result<DecideOutcome, AppError> {
        runs::resolve(&self.services, viewer, id, resolution, reason).await
    }

    async fn decide_rollback(
        &self,
        viewer: &Viewer,
        id: &str,
        verdict: &str,
        reason: Option<&str>,
    ) -> Result<DecideOutcome, AppError> {
        runs::decide_rollback(&self.services, viewer, id, verdict, reason).await
    }

    async fn switch_tool(
        &self,
        viewer: &Viewer,
        pattern: &str,
        action: &str,
    ) -> Result<DecideOutcome, AppError> {
        match runs::switch_tool(&self.services, viewer, pattern, action).await? {
            Some(outcome) => Ok(outcome),
            None => {
                self.security(Some(viewer), SecurityEvent::AccessDenied(runs::PAUSE_PAGE))
                    .await?;
                Ok(DecideOutcome::Refused(Notice::PauseRole))
            }
        }
    }

    async fn decide(
        &self,
        viewer: &Viewer,
        id: &str,
        verdict: &str,
        reason: Option<&str>,
    ) -> Result<DecideOutcome, AppError> {
        let Some(verdict) = ReviewVerdict::parse(verdict) else {
            return Ok(DecideOutcome::Refused(Notice::BadVerdict));
        };
        let id = Uuid::parse_str(id).map_err(|_| AppError::NotFound)?;
        let reviewer = Reviewer {
            username: viewer.username.clone(),
            role: role_of(viewer),
        };
        match self.services.decide(&reviewer, id, verdict, reason).await {
            Ok(Decided::ApprovalRecorded(_)) => {
                Ok(DecideOutcome::Decided(Notice::ApprovalRecorded))
            }
            Ok(Decided::Final(_)) => Ok(DecideOutcome::Decided(match verdict {
                ReviewVerdict::Approved => Notice::Approved,
                ReviewVerdict::Rejected => Notice::Rejected,
            })),
            Err(e) => match refusal(&e) {
                Some(notice) => Ok(DecideOutcome::Refused(notice)),
                None => Err(internal(e)),
            },
        }
    }
}

impl ReviewDesk {
    async fn erase_as_admin(
        &self,
        viewer: &Viewer,
        id: &str,
        reason: &str,
    ) -> Result<DecideOutcome, AppError> {
        if role_of(viewer) != Role::Admin {
            self.security(Some(viewer), SecurityEvent::AccessDenied(dto::Page::Erase))
                .await?;
            return Ok(DecideOutcome::Refused(Notice::EraseRole));
        }
        let id = Uuid::parse_str(id).map_err(|_| AppError::NotFound)?;
        let actor = Actor::user(&viewer.username);
        match self.services.erase_proposal(&actor, id, reason).await {
            Ok(_) => Ok(DecideOutcome::Decided(Notice::Erased)),
            Err(ServiceError::Erasure(e)) => Ok(DecideOutcome::Refused(match e {
                ErasureError::Pending => Notice::ErasePending,
                ErasureError::CommandOpen(_) => Notice::EraseCommandOpen,
                ErasureError::AlreadyErased => Notice::AlreadyErased,
                ErasureError::ReasonRequired => Notice::EraseReasonRequired,
            })),
            Err(e) => Err(internal(e)),
        }
    }
}

/// The audit event of a security event the pages report.
fn security_event(viewer: Option<&Viewer>, event: SecurityEvent) -> (Actor, AuditEvent) {
    let actor = viewer.map_or_else(|| Actor::system("web"), |v| Actor::user(&v.username));
    let event = match event {
        SecurityEvent::SignedOut => AuditEvent::SignedOut(trail::SignedOut {
            username: actor.name.clone(),
        }),
        SecurityEvent::CsrfRejected(form) => AuditEvent::CsrfRejected(trail::CsrfRejected {
            form: match form {
                dto::Form::Login => "login",
                dto::Form::Logout => "logout",
                dto::Form::Decide => "decide",
                dto::Form::Erase => "erase",
                dto::Form::Verify => "verify",
                dto::Form::Resolve => "resolve",
                dto::Form::Rollback => "rollback",
                dto::Form::ToolSwitch => "tool_switch",
            },
            signed_in: viewer.is_some(),
        }),
        SecurityEvent::AccessDenied(page) => AuditEvent::AccessDenied(trail::AccessDenied {
            page: match page {
                dto::Page::Audit => "/audit",
                dto::Page::AuditCharts => "/audit/charts",
                dto::Page::AuditTimeline => "/audit/proposals",
                dto::Page::AuditExport => "/audit/export",
                dto::Page::AuditVerify => "/audit/verify",
                dto::Page::Erase => "erase",
                dto::Page::ToolSwitch => "tool_switch",
            },
            role: viewer.map(role_of),
        }),
    };
    (actor, event)
}

#[cfg(test)]
mod tests {
    use super::*;
    use time::Duration;

    #[test]
    fn ages_read_naturally() {
        let now = OffsetDateTime::now_utc();
        assert_eq!(age(now - Duration::seconds(5), now), "5 s");
        assert_eq!(age(now - Duration::minutes(4), now), "4 min");
        assert_eq!(age(now - Duration::hours(3), now), "3 h");
        assert_eq!(age(now - Duration::days(2), now), "2 d");
        assert_eq!(age(now + Duration::seconds(5), now), "0 s");
    }

    #[test]
    fn previews_are_cut() {
        let mut m = serde_json::Map::new();
        m.insert("email".into(), Value::String("a@example.com".into()));
        m.insert("n".into(), Value::from(3));
        assert_eq!(preview(&m, 100), "email=a@example.com, n=3");
        assert_eq!(preview(&m, 5), "email…");
        assert_eq!(preview(&serde_json::Map::new(), 5), "(no parameters)");
        assert_eq!(keys_only(&m, 100), "email=…, n=…");
    }
}
