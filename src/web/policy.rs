//! The server's side of the policy pages: the [`PolicyDesk`] port over the policy's use cases
//! (`service::policy`, `policy_pages`, `shadow`, `policy_playground`). Admins and compliance
//! officers read; admins propose, approve, refuse and run candidates in shadow. A role the
//! table refuses is recorded (`access.denied` to `/policy`) and shown a 403 page or a refusal
//! notice. The rules are the services'; this only translates.

use std::collections::HashMap;
use std::sync::Arc;

use app::dto::{
    ActivationView, AppError, BacktestView, ChangeItem, DiffLine, ExampleView, ExplainView, Notice,
    OutcomeView, PlaygroundView, PolicyChangeView, PolicyVersionView, PolicyView, RouteRow,
    ShadowItem, ShadowView, TransitionView, Viewer,
};
use app::ports::DecideOutcome;
use app::ports::policy::{PolicyDesk, Proposed};
use async_trait::async_trait;
use time::{Duration, OffsetDateTime};
use uuid::Uuid;

use super::{internal, moment, principal, role_of};
use crate::audit::{AccessDenied, Actor, AuditEvent};
use crate::domain::access::{UseCase, authorize};
use crate::domain::policy_change::backtest::{DecisionKind, Outcome, Report};
use crate::domain::policy_change::diff::{self, LineKind};
use crate::domain::policy_change::{ActivationRecord, ChangeRecord, ChangeStatus, VersionRecord};
use crate::domain::principal::Principal;
use crate::domain::review::text::visible;
use crate::service::{
    ChangePage, Explanation, MAX_PLAYGROUND_INPUT, PolicyChangeError, PolicyOverview, ServiceError,
    Services,
};

/// The policy pages over the use cases.
pub struct PolicyPages {
    services: Services,
}

impl PolicyPages {
    /// The policy pages' port over the use cases.
    pub fn new(services: Services) -> Arc<Self> {
        Arc::new(Self { services })
    }

    /// Records that `who` (signed in as `viewer`) was refused the policy pages.
    async fn record_denied(&self, viewer: &Viewer, who: &Principal) -> Result<(), AppError> {
        let event = AuditEvent::AccessDenied(AccessDenied {
            page: "/policy",
            role: Some(role_of(viewer)),
        });
        self.services
            .record_security(&Actor::of(who), event)
            .await
            .map_err(internal)
    }

    /// The principal behind `viewer` when the table lets them read the policy; otherwise
    /// records `access.denied` and answers `Forbidden`. The services check again.
    async fn reader(&self, viewer: &Viewer) -> Result<Principal, AppError> {
        let who = principal(&self.services, viewer).await?;
        if authorize(&who, UseCase::ViewPolicy).is_ok() {
            return Ok(who);
        }
        self.record_denied(viewer, &who).await?;
        Err(AppError::Forbidden(
            "only admins and compliance officers may see the policy".into(),
        ))
    }

    /// The notice a refused change shows; a role the table refuses is recorded first. An
    /// invalid policy is `Err` with its lines.
    async fn refusal(
        &self,
        viewer: &Viewer,
        who: &Principal,
        e: PolicyChangeError,
    ) -> Result<Result<Notice, Vec<String>>, AppError> {
        let notice = match e {
            PolicyChangeError::Invalid(errors) => {
                return Ok(Err(errors.iter().map(ToString::to_string).collect()));
            }
            PolicyChangeError::Refused { code, message } => match rule_notice(code) {
                Some(n) => n,
                None => return Err(AppError::Invalid(message)),
            },
            PolicyChangeError::Service(ServiceError::Denied(_)) => {
                self.record_denied(viewer, who).await?;
                Notice::PolicyRole
            }
            PolicyChangeError::Service(ServiceError::NotFound) => Notice::PolicyNotFound,
            PolicyChangeError::Service(e) => return Err(internal(e)),
        };
        Ok(Ok(notice))
    }

    /// What proposing came to.
    async fn proposed(
        &self,
        viewer: &Viewer,
        who: &Principal,
        result: Result<ChangeRecord, PolicyChangeError>,
    ) -> Result<Proposed, AppError> {
        match result {
            Ok(change) => Ok(Proposed::Opened(change.id.to_string())),
            Err(e) => Ok(match self.refusal(viewer, who, e).await? {
                Ok(notice) => Proposed::Refused(notice),
                Err(lines) => Proposed::Invalid(lines),
            }),
        }
    }

    /// What a change to request `id` came to: `done` when it was made.
    async fn decided(
        &self,
        viewer: &Viewer,
        who: &Principal,
        result: Result<(), PolicyChangeError>,
        done: Notice,
    ) -> Result<DecideOutcome, AppError> {
        match result {
            Ok(()) => Ok(DecideOutcome::Decided(done)),
            Err(e) => match self.refusal(viewer, who, e).await? {
                Ok(notice) => Ok(DecideOutcome::Refused(notice)),
                Err(lines) => {
                    tracing::error!(
                        errors = lines.len(),
                        "a stored policy version no longer loads"
                    );
                    Err(AppError::Internal)
                }
            },
        }
    }

    /// The stored versions the history names (each activation's and the one before it).
    async fn texts(
        &self,
        who: &Principal,
        history: &[ActivationRecord],
    ) -> Result<HashMap<String, VersionRecord>, AppError> {
        let mut texts = HashMap::new();
        for version in (history.iter()).flat_map(|a| [Some(&a.version), a.previous.as_ref()]) {
            let Some(version) = version else { continue };
            if texts.contains_key(version) {
                continue;
            }
            let stored = (self.services.policy_version(who, version).await).map_err(internal)?;
            if let Some(stored) = stored {
                texts.insert(version.clone(), stored);
            }
        }
        Ok(texts)
    }
}

/// The notice of a rule that refused a change.
fn rule_notice(code: &str) -> Option<Notice> {
    Some(match code {
        "own_change" => Notice::PolicyOwnChange,
        "not_pending" => Notice::PolicyNotPending,
        "already_active" => Notice::PolicyAlreadyActive,
        "no_such_version" => Notice::PolicyNoSuchVersion,
        "reason_required" => Notice::PolicyReasonRequired,
        "reason_too_long" => Notice::PolicyReasonTooLong,
        "too_large" => Notice::PolicyTooLarge,
        _ => return None,
    })
}

/// The backtest periods the page offers.
fn since_of(choice: &str) -> Option<Duration> {
    match choice.trim() {
        "7d" => Some(Duration::days(7)),
        "30d" => Some(Duration::days(30)),
        "90d" => Some(Duration::days(90)),
        _ => None,
    }
}

/// The shadow runs' lengths the page offers.
fn shadow_of(choice: &str) -> Option<Duration> {
    match choice.trim() {
        "1h" => Some(Duration::hours(1)),
        "24h" => Some(Duration::hours(24)),
        "7d" => Some(Duration::days(7)),
        _ => None,
    }
}

fn diff_lines(diff: &str) -> Vec<DiffLine> {
    diff.lines()
        .map(|line| DiffLine {
            kind: match diff::line_kind(line) {
                LineKind::Header => "header",
                LineKind::Added => "added",
                LineKind::Removed => "removed",
                LineKind::Context => "context",
            }
            .into(),
            text: line.to_owned(),
        })
        .collect()
}

fn version_view(v: &VersionRecord) -> PolicyVersionView {
    PolicyVersionView {
        version: v.version.clone(),
        text: v.text.clone(),
        builtin: v.source == "builtin",
    }
}

fn change_item(c: &ChangeRecord, now: OffsetDateTime) -> ChangeItem {
    ChangeItem {
        id: c.id.to_string(),
        version: c.version.clone(),
        base: c.base.clone(),
        status: c.status.as_str().into(),
        proposed_by: c.proposed_by.clone(),
        proposed_at: moment(c.proposed_at, now),
        reason: visible(&c.reason).text,
        loosening: c.loosening,
    }
}

/// Each activation with its diff against the one before it (its `previous`, or the next older
/// entry).
fn activations(
    history: &[ActivationRecord],
    texts: &HashMap<String, VersionRecord>,
    now: OffsetDateTime,
) -> Vec<ActivationView> {
    let text = |v: &str| texts.get(v).map_or("", |r| r.text.as_str());
    history
        .iter()
        .enumerate()
        .map(|(i, a)| {
            let previous =
                (a.previous.clone()).or_else(|| history.get(i + 1).map(|p| p.version.clone()));
            let diff = previous.as_deref().map_or(String::new(), |p| {
                diff::unified(p, text(p), &a.version, text(&a.version))
            });
            ActivationView {
                seq: a.seq,
                version: a.version.clone(),
                previous,
                activated_at: moment(a.activated_at, now),
                how: a.how.as_str().into(),
                proposed_by: a.proposed_by.clone(),
                approved_by: a.approved_by.clone(),
                reason: a.reason.as_deref().map(|r| visible(r).text),
                change_id: a.change_id.map(|id| id.to_string()),
                diff: diff_lines(&diff),
                builtin: texts.get(&a.version).is_some_and(|r| r.source == "builtin"),
            }
        })
        .collect()
}

fn overview_view(
    o: PolicyOverview,
    texts: &HashMap<String, VersionRecord>,
    can_propose: bool,
    now: OffsetDateTime,
) -> PolicyView {
    let history = activations(&o.history, texts, now);
    let active = o.active.as_ref().map(version_view);
    let activation = (history.first())
        .filter(|a| active.as_ref().is_some_and(|v| v.version == a.version))
        .cloned();
    let (pending, decided): (Vec<_>, Vec<_>) =
        (o.changes.iter()).partition(|c| c.status == ChangeStatus::Pending);
    PolicyView {
        active,
        activation,
        pending: pending.into_iter().map(|c| change_item(c, now)).collect(),
        decided: decided.into_iter().map(|c| change_item(c, now)).collect(),
        history,
        can_propose,
        errors: Vec::new(),
    }
}

fn outcome_view(o: &Outcome) -> OutcomeView {
    OutcomeView {
        route: o.route.as_str().into(),
        rule: o.rule.clone(),
        blockers: o.blockers.clone(),
    }
}

/// A proposal's page, for a subject that is a proposal.
fn subject_link(kind: &str, subject: &str) -> Option<String> {
    let id = (kind == DecisionKind::Proposal.as_str())
        .then(|| Uuid::parse_str(subject).ok())
        .flatten()?;
    Some(format!("/proposals/{id}"))
}

fn backtest_view(r: &Report, now: OffsetDateTime) -> BacktestView {
    let transitions = (r.transitions.iter())
        .map(|t| TransitionView {
            kind: t.kind.as_str().into(),
            from: t.from.as_str().into(),
            to: t.to.as_str().into(),
            tool: visible(&t.tool).text,
            agent: visible(&t.agent).text,
            count: t.count,
            examples: (t.examples.iter())
                .map(|d| ExampleView {
                    kind: d.kind.as_str().into(),
                    subject: visible(&d.subject).text,
                    link: subject_link(d.kind.as_str(), &d.subject),
                    at: moment(d.at, now),
                    was: outcome_view(&d.was),
                    now: outcome_view(&d.now),
                })
                .collect(),
        })
        .collect();
    BacktestView {
        considered: r.considered,
        replayed: r.replayed,
        changed: r.changed,
        erased: r.erased,
        unrecorded: r.unrecorded,
        by_route: (r.by_route().into_iter())
            .map(|(from, to, count)| RouteRow {
                from: from.as_str().into(),
                to: to.as_str().into(),
                count,
            })
            .collect(),
        transitions,
    }
}

fn shadow_view(page: &ChangePage, now: OffsetDateTime) -> ShadowView {
    let listed = (page.shadow.iter())
        .map(|d| ShadowItem {
            at: moment(d.at, now),
            kind: d.kind.clone(),
            subject: visible(&d.subject).text,
            link: subject_link(&d.kind, &d.subject),
            tool: visible(&d.tool).text,
            agent: visible(&d.agent).text,
            from_route: d.from_route.clone(),
            from_rule: d.from_rule.clone(),
            to_route: d.to_route.clone(),
            to_rule: d.to_rule.clone(),
            from_blockers: d.from_blockers.clone(),
            to_blockers: d.to_blockers.clone(),
        })
        .collect();
    let until = page.change.shadow_until;
    ShadowView {
        until: until.map(|u| moment(u, now)),
        running: until.is_some_and(|u| u > now),
        shadowed: page.change.shadowed,
        differences: page.shadow_differences,
        transitions: (page.shadow_transitions.iter())
            .map(|t| {
                (
                    t.kind.clone(),
                    t.from_route.clone(),
                    t.to_route.clone(),
                    visible(&t.tool).text,
                    visible(&t.agent).text,
                    t.count,
                )
            })
            .collect(),
        listed,
    }
}

fn change_view(page: ChangePage, who: &Principal, now: OffsetDateTime) -> PolicyChangeView {
    let c = &page.change;
    let pending = c.status == ChangeStatus::Pending;
    let admin = authorize(who, UseCase::ApprovePolicy).is_ok();
    let own = c.proposed_by == who.name();
    PolicyChangeView {
        change: change_item(c, now),
        decided_by: c.decided_by.clone(),
        decided_at: c.decided_at.map(|t| moment(t, now)),
        decision_reason: c.decision_reason.as_deref().map(|r| visible(r).text),
        active_version: page.active.as_ref().map(|a| a.version.clone()),
        candidate_builtin: page.candidate.source == "builtin",
        diff: diff_lines(&page.diff),
        backtest: c.backtest.as_ref().map(|r| backtest_view(r, now)),
        shadow: shadow_view(&page, now),
        can_answer: admin && pending && !own,
        own: own && pending,
        can_shadow: pending && authorize(who, UseCase::ProposePolicy).is_ok(),
    }
}

fn explain_view(e: Explanation) -> ExplainView {
    match e {
        Ok(x) => ExplainView::Decided {
            route: x.route,
            rule: x.rule,
            blockers: x.blockers,
            policy_version: x.policy_version,
        },
        Err(errors) => ExplainView::Contract(
            (errors.into_iter())
                .map(|f| (visible(&f.field).text, visible(&f.message).text))
                .collect(),
        ),
    }
}

fn playground_error(why: impl Into<String>) -> PlaygroundView {
    PlaygroundView {
        error: Some(why.into()),
        active: None,
        candidate: None,
    }
}

#[async_trait]
impl PolicyDesk for PolicyPages {
    async fn overview(&self, viewer: &Viewer) -> Result<PolicyView, AppError> {
        let who = self.reader(viewer).await?;
        let o = (self.services.policy_overview(&who).await).map_err(internal)?;
        let texts = self.texts(&who, &o.history).await?;
        let can_propose = authorize(&who, UseCase::ProposePolicy).is_ok();
        Ok(overview_view(o, &texts, can_propose, self.services.now()))
    }

    async fn change(&self, viewer: &Viewer, id: &str) -> Result<PolicyChangeView, AppError> {
        let who = self.reader(viewer).await?;
        let id = Uuid::parse_str(id.trim()).map_err(|_| AppError::NotFound)?;
        let page = (self.services.policy_change(&who, id).await)
            .map_err(internal)?
            .ok_or(AppError::NotFound)?;
        Ok(change_view(page, &who, self.services.now()))
    }

    async fn playground(
        &self,
        viewer: &Viewer,
        input: &str,
        candidate: Option<&str>,
    ) -> Result<PlaygroundView, AppError> {
        let who = self.reader(viewer).await?;
        if input.len() > MAX_PLAYGROUND_INPUT {
            return Ok(playground_error(format!(
                "The input is too large: at most {} KiB of JSON.",
                MAX_PLAYGROUND_INPUT / 1024
            )));
        }
        let value: serde_json::Value = match serde_json::from_str(input) {
            Ok(v) => v,
            Err(e) => return Ok(playground_error(format!("That is not valid JSON: {e}."))),
        };
        match (self.services)
            .policy_playground(&who, &value, candidate)
            .await
        {
            Ok((active, under)) => Ok(PlaygroundView {
                error: None,
                active: Some(explain_view(active)),
                candidate: under.map(explain_view),
            }),
            Err(ServiceError::NotFound) => Ok(playground_error(
                "No stored version of the policy has that name.",
            )),
            Err(ServiceError::Invalid(_)) => Ok(playground_error(
                "That stored version no longer loads as a policy.",
            )),
            Err(e) => Err(internal(e)),
        }
    }

    async fn propose(
        &self,
        viewer: &Viewer,
        text: &str,
        reason: &str,
        since: &str,
    ) -> Result<Proposed, AppError> {
        let Some(since) = since_of(since) else {
            return Ok(Proposed::Refused(Notice::PolicyChoice));
        };
        let who = principal(&self.services, viewer).await?;
        let since = self.services.now() - since;
        let proposed = (self.services)
            .propose_policy(&who, text, reason, since)
            .await;
        self.proposed(viewer, &who, proposed).await
    }

    async fn propose_return(
        &self,
        viewer: &Viewer,
        version: &str,
        reason: &str,
    ) -> Result<Proposed, AppError> {
        let who = principal(&self.services, viewer).await?;
        let since = self.services.now() - Duration::days(30);
        let proposed = (self.services)
            .propose_return(&who, version.trim(), reason, since)
            .await;
        self.proposed(viewer, &who, proposed).await
    }

    async fn answer(
        &self,
        viewer: &Viewer,
        id: &str,
        answer: &str,
        reason: Option<&str>,
    ) -> Result<DecideOutcome, AppError> {
        let Ok(id) = Uuid::parse_str(id.trim()) else {
            return Ok(DecideOutcome::Refused(Notice::PolicyNotFound));
        };
        let who = principal(&self.services, viewer).await?;
        let (result, done) = match answer {
            "approve" => (
                self.services.approve_policy(&who, id, reason).await,
                Notice::PolicyApproved,
            ),
            "refuse" => (
                self.services.refuse_policy(&who, id, reason).await,
                Notice::PolicyRefused,
            ),
            _ => return Ok(DecideOutcome::Refused(Notice::BadVerdict)),
        };
        self.decided(viewer, &who, result.map(|_| ()), done).await
    }

    async fn shadow(
        &self,
        viewer: &Viewer,
        id: &str,
        duration: Option<&str>,
    ) -> Result<DecideOutcome, AppError> {
        let Ok(id) = Uuid::parse_str(id.trim()) else {
            return Ok(DecideOutcome::Refused(Notice::PolicyNotFound));
        };
        let (length, done) = match duration {
            None => (None, Notice::PolicyShadowStopped),
            Some(d) => match shadow_of(d) {
                Some(d) => (Some(d), Notice::PolicyShadowStarted),
                None => return Ok(DecideOutcome::Refused(Notice::PolicyChoice)),
            },
        };
        let who = principal(&self.services, viewer).await?;
        let result = self.services.shadow_policy(&who, id, length).await;
        self.decided(viewer, &who, result, done).await
    }
}
