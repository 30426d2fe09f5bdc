//! The server's side of the UI's ports: the reviewer's desk over the use cases in
//! [`crate::service`]. Every method checks the viewer's role again (deny by default); the
//! decision rules and their atomic application live in the service. Reads here never write:
//! a pending proposal whose time ran out is shown expired until the sweep records it.

pub mod admin;
pub mod body_limit;
pub mod edits;
pub mod export;
pub mod filters;
pub mod fn_status;
mod grants;
pub mod ledger;
pub mod live;
pub mod oidc;
mod passkeys;
pub mod plain;
pub mod policy;
mod proposal;
pub mod queue;
pub mod runs;
pub mod security;
pub mod session;
mod sheet;
pub mod slack;

use std::sync::Arc;

use app::dto::{
    self, AppError, BatchOutcome, Notice, ProposalView, QueueParams, QueueView, SecurityEvent,
    Viewer,
};
use app::ports::{ClientAddr, DecideOutcome, Desk, SignInOutcome};
use app::time::Moment;
use async_trait::async_trait;
use serde_json::Value;
use time::OffsetDateTime;
use uuid::Uuid;

use crate::audit::{self as trail, Actor, AuditEvent};
use crate::domain::erasure::ErasureError;
use crate::domain::lifecycle::{DecisionError, ProposalStatus, ReviewVerdict};
use crate::domain::principal::Principal;
use crate::domain::principal::Role;
use crate::domain::review::text::{hidden_in_json, visible};
use crate::service::{Conflict, Decided, ServiceError, Services, SignIn};
use crate::storage::proposals::ProposalRecord;

/// The reviewer's desk. Its methods receive a viewer the server functions have just checked
/// against the stored account (the session port, [`session`]); they check the role for each
/// operation. It serves app's [`Desk`] here, and its smaller ports beside the functions they
/// call: [`app::ports::AccountDesk`] in `passkeys`, [`app::ports::GrantsDesk`] in `grants`,
/// [`app::ports::RunsDesk`] in `runs`.
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

pub(crate) fn role_of(viewer: &Viewer) -> Role {
    match viewer.role {
        dto::Role::Admin => Role::Admin,
        dto::Role::Reviewer => Role::Reviewer,
        dto::Role::Compliance => Role::Compliance,
    }
}

/// The person behind `viewer`, with the domains their account is limited to: what every use
/// case is asked as.
pub(crate) async fn principal(services: &Services, viewer: &Viewer) -> Result<Principal, AppError> {
    services
        .person(&viewer.username, role_of(viewer))
        .await
        .map_err(internal)
}

fn internal(e: ServiceError) -> AppError {
    match e {
        ServiceError::NotFound => AppError::NotFound,
        ServiceError::Denied(denied) => AppError::Forbidden(denied.to_string()),
        ServiceError::Storage(e) if e.is_unavailable() => {
            tracing::warn!(error = %e, "the database is not answering");
            AppError::Unavailable
        }
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

/// `t` as the pages show it (`<When at=…/>`): seen from `now`, the time the page renders.
fn moment(t: OffsetDateTime, now: OffsetDateTime) -> Moment {
    Moment::new(t.unix_timestamp(), now.unix_timestamp())
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

/// Agent-written text for a list or card (the queue, `/runs`, the agent's record, the trail):
/// each string made visible as the proposal page shows it ([`visible`]: every hidden character
/// as `⟦U+…⟧`), their hidden characters counted for the row's flag.
#[derive(Debug, Default)]
struct Flagged {
    /// Hidden characters in everything shown so far.
    hidden: usize,
}

impl Flagged {
    /// `s` made visible; its hidden characters counted.
    fn text(&mut self, s: &str) -> String {
        let v = visible(s);
        self.hidden += v.hidden;
        v.text
    }

    /// A preview `line` of `params` made visible; the hidden characters of every parameter
    /// key and value counted, the ones the preview cut off or withholds too.
    fn parameters(&mut self, line: &str, params: &serde_json::Map<String, Value>) -> String {
        self.hidden += (params.iter())
            .map(|(k, v)| visible(k).hidden + hidden_in_json(v))
            .sum::<usize>();
        visible(line).text
    }
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

/// The notice a refused or conflicting decision shows.
fn refusal(e: &ServiceError) -> Option<Notice> {
    Some(match e {
        ServiceError::Refused(DecisionError::RoleMayNotDecide) => Notice::Role,
        ServiceError::Refused(DecisionError::OwnProposal) => Notice::OwnProposal,
        ServiceError::Refused(DecisionError::OperatesAgent) => Notice::OperatesAgent,
        ServiceError::Refused(DecisionError::AlreadyDecided(ProposalStatus::Expired))
        | ServiceError::Conflict(Conflict::AlreadyDecided(ProposalStatus::Expired)) => {
            Notice::Expired
        }
        ServiceError::Refused(DecisionError::AlreadyDecided(_))
        | ServiceError::Conflict(Conflict::AlreadyDecided(_)) => Notice::AlreadyDecided,
        ServiceError::Refused(DecisionError::ReasonRequired) => Notice::ReasonRequired,
        ServiceError::Conflict(Conflict::AlreadyApproved) => Notice::AlreadyApproved,
        ServiceError::Refused(DecisionError::Unconfirmed(e)) => proposal::unconfirmed(e),
        ServiceError::Forbidden { code, .. } => passkeys::refusal(code)?,
        _ => return None,
    })
}

#[async_trait]
impl Desk for ReviewDesk {
    async fn authenticate(
        &self,
        username: &str,
        password: &str,
        client: ClientAddr,
    ) -> Result<SignInOutcome, AppError> {
        // What was typed may be a password pasted into the wrong box: log it only if it could
        // be a username at all.
        let shown = || {
            crate::domain::principal::parse_name(username)
                .unwrap_or_else(|_| "<not a username>".into())
        };
        match self
            .services
            .sign_in(username, password, client.0)
            .await
            .map_err(internal)?
        {
            SignIn::SignedIn(u) => {
                tracing::info!(user = %u.username, "signed in");
                Ok(match u.role {
                    Some(role) => SignInOutcome::SignedIn(Viewer {
                        username: u.username,
                        role: role.into(),
                        can_decide: role.can_decide(),
                    }),
                    None => SignInOutcome::AwaitingRole(u.username),
                })
            }
            SignIn::Refused => {
                tracing::info!(user = %shown(), "sign-in refused");
                Ok(SignInOutcome::Refused)
            }
            SignIn::Throttled { retry_after } => {
                tracing::warn!(
                    user = %shown(),
                    retry_after_secs = retry_after.whole_seconds(),
                    "sign-in throttled"
                );
                Ok(SignInOutcome::Throttled)
            }
        }
    }

    async fn queue(&self, viewer: &Viewer, params: QueueParams) -> Result<QueueView, AppError> {
        may_view(viewer)?;
        let q = queue::parse(&params)?;
        let who = principal(&self.services, viewer).await?;
        queue::page(&self.services, &who, &q).await
    }

    async fn proposal(
        &self,
        viewer: &Viewer,
        id: &str,
        trail_before: Option<i64>,
        reveal: bool,
    ) -> Result<ProposalView, AppError> {
        proposal::proposal(&self.services, viewer, id, trail_before, reveal).await
    }

    async fn reveal(&self, viewer: &Viewer, id: &str) -> Result<DecideOutcome, AppError> {
        proposal::reveal(&self.services, viewer, id).await
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

    async fn approve_and_grant(
        &self,
        viewer: &Viewer,
        id: &str,
        confirmation: Option<&str>,
        form: &dto::GrantForm,
    ) -> Result<DecideOutcome, AppError> {
        grants::approve_and_grant(&self.services, viewer, id, confirmation, form).await
    }

    async fn break_glass(
        &self,
        viewer: &Viewer,
        id: &str,
        justification: &str,
        confirmation: Option<&str>,
        passkey: Option<&str>,
    ) -> Result<DecideOutcome, AppError> {
        let id = Uuid::parse_str(id).map_err(|_| AppError::NotFound)?;
        let who = principal(&self.services, viewer).await?;
        let proof = crate::service::Proof {
            typed: confirmation,
            passkey,
        };
        let broke = (self.services)
            .break_glass(&who, id, justification, proof)
            .await;
        let e = match broke {
            Ok(_) => return Ok(DecideOutcome::Decided(Notice::BrokeGlass)),
            Err(e) => e,
        };
        match (refusal(&e), e) {
            (Some(notice), _) => Ok(DecideOutcome::Refused(notice)),
            (None, ServiceError::Invalid(_)) => {
                Ok(DecideOutcome::Refused(Notice::BreakGlassJustification))
            }
            (None, ServiceError::Forbidden { .. }) => {
                Ok(DecideOutcome::Refused(Notice::BreakGlassRefused))
            }
            (None, ServiceError::Denied(_)) => Ok(DecideOutcome::Refused(Notice::Role)),
            (None, e) => Err(internal(e)),
        }
    }

    async fn edit_and_approve(
        &self,
        viewer: &Viewer,
        id: &str,
        confirmation: Option<&str>,
        fields: &[(String, String)],
    ) -> Result<DecideOutcome, AppError> {
        edits::edit_and_approve(&self.services, viewer, id, confirmation, fields).await
    }

    async fn decide_batch(
        &self,
        viewer: &Viewer,
        ids: &[String],
        verdict: &str,
        reason: Option<&str>,
    ) -> Result<Result<BatchOutcome, Notice>, AppError> {
        let parsed = ReviewVerdict::parse(verdict)
            .filter(|v| matches!(v, ReviewVerdict::Approved | ReviewVerdict::Rejected));
        let Some(verdict) = parsed else {
            return Ok(Err(Notice::BadVerdict));
        };
        // An id that does not parse names no proposal this viewer may see.
        let ids: Vec<Uuid> = (ids.iter())
            .filter_map(|id| Uuid::parse_str(id.trim()).ok())
            .collect();
        let who = principal(&self.services, viewer).await?;
        let outcomes = match self
            .services
            .decide_batch(&who, &ids, verdict, reason)
            .await
        {
            Ok(outcomes) => outcomes,
            Err(ServiceError::Invalid(_)) => return Ok(Err(Notice::BatchSize)),
            Err(ServiceError::Denied(_)) => return Ok(Err(Notice::Role)),
            Err(e) => return Err(internal(e)),
        };
        let mut outcome = BatchOutcome {
            verdict: verdict.as_str().to_owned(),
            decided: 0,
            refused: Vec::new(),
        };
        for (id, decided) in outcomes {
            match decided {
                Ok(_) => outcome.decided += 1,
                Err(ServiceError::NotFound) => {
                    outcome.refused.push((id.to_string(), Notice::NotFound))
                }
                Err(ServiceError::Refused(DecisionError::NotBatchable(_))) => {
                    outcome.refused.push((id.to_string(), Notice::NotBatchable));
                }
                Err(e) => match refusal(&e) {
                    Some(notice) => outcome.refused.push((id.to_string(), notice)),
                    None => return Err(internal(e)),
                },
            }
        }
        Ok(Ok(outcome))
    }

    async fn decide(
        &self,
        viewer: &Viewer,
        id: &str,
        verdict: &str,
        reason: Option<&str>,
        confirmation: Option<&str>,
        passkey: Option<&str>,
    ) -> Result<DecideOutcome, AppError> {
        let Some(verdict) = ReviewVerdict::parse(verdict) else {
            return Ok(DecideOutcome::Refused(Notice::BadVerdict));
        };
        let id = Uuid::parse_str(id).map_err(|_| AppError::NotFound)?;
        let who = principal(&self.services, viewer).await?;
        let proof = crate::service::Proof {
            typed: confirmation,
            passkey,
        };
        let decided = self
            .services
            .decide_confirmed(&who, id, verdict, reason, proof)
            .await;
        match decided {
            Ok(Decided::ApprovalRecorded(_)) => {
                Ok(DecideOutcome::Decided(Notice::ApprovalRecorded))
            }
            Ok(Decided::Final(_)) => Ok(DecideOutcome::Decided(match verdict {
                ReviewVerdict::Approved => Notice::Approved,
                ReviewVerdict::Rejected => Notice::Rejected,
                ReviewVerdict::ChangesRequested => Notice::ChangesRequested,
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
        let id = Uuid::parse_str(id).map_err(|_| AppError::NotFound)?;
        let who = principal(&self.services, viewer).await?;
        match self.services.erase_proposal(&who, id, reason).await {
            Ok(_) => Ok(DecideOutcome::Decided(Notice::Erased)),
            Err(ServiceError::Denied(_)) => {
                self.security(Some(viewer), SecurityEvent::AccessDenied(dto::Page::Erase))
                    .await?;
                Ok(DecideOutcome::Refused(Notice::EraseRole))
            }
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
    let actor = match (&event, viewer) {
        (SecurityEvent::SignedOutWithoutRole(username), _) => Actor::user(username),
        (_, Some(v)) => Actor::user(&v.username),
        (_, None) => Actor::system("web"),
    };
    let event = match event {
        SecurityEvent::SignedOut | SecurityEvent::SignedOutWithoutRole(_) => {
            AuditEvent::SignedOut(trail::SignedOut {
                username: actor.name.clone(),
            })
        }
        SecurityEvent::CsrfRejected(form) => AuditEvent::CsrfRejected(trail::CsrfRejected {
            form: match form {
                dto::Form::Login => "login",
                dto::Form::Logout => "logout",
                dto::Form::Decide => "decide",
                dto::Form::Erase => "erase",
                dto::Form::Verify => "verify",
                dto::Form::Export => "export",
                dto::Form::Resolve => "resolve",
                dto::Form::Rollback => "rollback",
                dto::Form::ToolSwitch => "tool_switch",
                dto::Form::Reveal => "reveal",
                dto::Form::Admin => "admin",
                dto::Form::Passkey => "passkey",
            },
            signed_in: viewer.is_some(),
        }),
        SecurityEvent::AccessDenied(page) => AuditEvent::AccessDenied(trail::AccessDenied {
            page: match page {
                dto::Page::Audit => "/audit",
                dto::Page::AuditCharts => "/audit/charts",
                dto::Page::Insights => "/insights",
                dto::Page::AuditTimeline => "/audit/proposals",
                dto::Page::AuditExport => "/audit/export",
                dto::Page::AuditVerify => "/audit/verify",
                dto::Page::Erase => "erase",
                dto::Page::ToolSwitch => "tool_switch",
                dto::Page::Admin => "/admin",
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
