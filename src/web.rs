//! The server's side of the UI's ports: the reviewer's desk over the store. Every method
//! checks the viewer's role again (deny by default), and decisions follow the domain's
//! lifecycle rules before the store applies them atomically.

use std::sync::Arc;

use app::dto::{
    AppError, AuditView, BlockerView, ExecutionView, ProposalView, QueueItem, ReviewView, Viewer,
};
use app::ports::{DecideOutcome, Desk};
use async_trait::async_trait;
use serde_json::Value;
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;
use uuid::Uuid;

use crate::auth::password;
use crate::domain::Policy;
use crate::domain::command::CommandSpec;
use crate::domain::lifecycle::{DecisionError, ProposalStatus, ReviewVerdict, check_decision};
use crate::domain::principal::Role;
use crate::storage::{Conflict, DynStore, NewDecision, ProposalRecord, StorageError};

/// How many pending proposals the queue page shows at most.
pub const QUEUE_PAGE_SIZE: i64 = 200;

/// The reviewer's desk. Its methods receive a viewer the server functions have just checked
/// against the stored account ([`Desk::revalidate`]); they check the role for each operation.
pub struct ReviewDesk {
    store: DynStore,
    policy: Arc<Policy>,
}

impl ReviewDesk {
    /// A desk over `store`, queueing approved commands under `policy`.
    pub fn new(store: DynStore, policy: Arc<Policy>) -> Arc<Self> {
        Arc::new(Self { store, policy })
    }
}

fn internal(e: StorageError) -> AppError {
    tracing::error!(error = %e, "storage failed");
    AppError::Internal
}

fn role_of(viewer: &Viewer) -> Result<Role, AppError> {
    Role::parse(&viewer.role).ok_or_else(|| AppError::Forbidden("unknown role".into()))
}

fn may_view(viewer: &Viewer) -> Result<Role, AppError> {
    let role = role_of(viewer)?;
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

#[async_trait]
impl Desk for ReviewDesk {
    async fn authenticate(&self, username: &str, password: &str) -> Result<Viewer, AppError> {
        let user = self
            .store
            .user_by_username(username)
            .await
            .map_err(internal)?;
        let active = user.filter(|u| !u.disabled);
        let ok = password::verify(
            password.to_owned(),
            active.as_ref().map(|u| u.password_hash.clone()),
        )
        .await;
        match active {
            Some(u) if ok => {
                tracing::info!(user = %u.username, "signed in");
                Ok(Viewer {
                    username: u.username,
                    role: u.role.as_str().into(),
                    can_decide: u.role.can_decide(),
                })
            }
            _ => {
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
            .store
            .user_by_username(&viewer.username)
            .await
            .map_err(internal)?;
        Ok(user.is_some_and(|u| !u.disabled && u.role.as_str() == viewer.role))
    }

    async fn queue(&self, viewer: &Viewer) -> Result<Vec<QueueItem>, AppError> {
        may_view(viewer)?;
        let now = OffsetDateTime::now_utc();
        // What ran out of time leaves the queue now rather than at the next sweep.
        self.store.expire_due(now).await.map_err(internal)?;
        let pending = self
            .store
            .proposals_by_status(ProposalStatus::Pending, QUEUE_PAGE_SIZE)
            .await
            .map_err(internal)?;
        Ok(pending
            .into_iter()
            .map(|p| QueueItem {
                id: p.id.to_string(),
                summary: p.contract.intent.summary.clone(),
                tool: format!("{} {}", p.contract.tool.name, p.contract.tool.version),
                targets: targets(&p),
                affected: if p.contract.compliance_context.gdpr
                    || p.contract.compliance_context.hipaa
                {
                    // Personal or health data: the queue names the fields; the values are shown
                    // only on the proposal page, to the reviewer who opens it to decide.
                    keys_only(&p.contract.parameters, 120)
                } else {
                    preview(&p.contract.parameters, 120)
                },
                rollback: rollback_words(&p),
                risk: p.contract.risk_level.as_str().into(),
                age: age(p.created_at, now),
                proposed_by: p.agent.clone(),
                route: p.routing.route.as_str().into(),
            })
            .collect())
    }

    async fn proposal(&self, viewer: &Viewer, id: &str) -> Result<ProposalView, AppError> {
        let role = may_view(viewer)?;
        let id = Uuid::parse_str(id).map_err(|_| AppError::NotFound)?;
        // A proposal whose time ran out is shown as expired, not as still decidable.
        self.store
            .expire_due(OffsetDateTime::now_utc())
            .await
            .map_err(internal)?;
        let p = self
            .store
            .proposal(id)
            .await
            .map_err(internal)?
            .ok_or(AppError::NotFound)?;
        let command = self
            .store
            .command_for_proposal(id)
            .await
            .map_err(internal)?;
        let approvals = self.store.approvals(id).await.map_err(internal)?;
        let mut audit = self
            .store
            .audit_for_subject("proposal", &id.to_string())
            .await
            .map_err(internal)?;
        if let Some(c) = &command {
            audit.extend(
                self.store
                    .audit_for_subject("command", &c.id.to_string())
                    .await
                    .map_err(internal)?,
            );
            audit.sort_by_key(|a| a.seq);
        }
        let check = check_decision(
            p.status,
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
        Ok(ProposalView {
            id: p.id.to_string(),
            status: p.status.as_str().into(),
            authorization_state: p.authorization_state.as_str().into(),
            declared_authorization: c.authorization_state.map(|a| a.as_str().into()),
            summary: c.intent.summary.clone(),
            reasoning: c.intent.reasoning.clone(),
            tool: c.tool.name.clone(),
            tool_version: c.tool.version.clone(),
            proposed_by: p.agent.clone(),
            domain: c.domain.clone(),
            created_at: rfc3339(p.created_at),
            age: age(p.created_at, OffsetDateTime::now_utc()),
            expires_at: p.expires_at.map(rfc3339),
            risk_level: c.risk_level.as_str().into(),
            blast_radius: c.blast_radius.map(|b| b.as_str().into()),
            rollback: rollback_words(&p),
            rollback_plan: c
                .rollback_plan
                .as_ref()
                .and_then(|plan| serde_json::to_string_pretty(plan).ok()),
            targets: targets(&p),
            parameters: serde_json::to_string_pretty(&c.parameters).unwrap_or_default(),
            compliance,
            classification,
            route: p.routing.route.as_str().into(),
            effective_risk: p.routing.effective_risk.as_str().into(),
            required_approvals: p.routing.required_approvals,
            category: p.routing.category.as_str().into(),
            rule: p.routing.rule.clone(),
            policy_version: p.routing.policy_version.clone(),
            blockers: p
                .routing
                .blockers
                .iter()
                .map(|b| BlockerView {
                    code: b.code.as_str().into(),
                    message: b.message.clone(),
                })
                .collect(),
            reasons: p.routing.reasons.clone(),
            request_hash: p.request_hash.clone(),
            idempotency_key: c.idempotency_key.clone(),
            review: p.review.as_ref().map(|r| ReviewView {
                verdict: r.verdict.as_str().into(),
                decided_by: r.decided_by.clone(),
                decided_at: rfc3339(r.decided_at),
                reason: r.reason.clone(),
            }),
            execution: command.map(|x| ExecutionView {
                command_id: x.id.to_string(),
                status: x.status.as_str().into(),
                attempts: x.attempts,
                leased_by: x.leased_by,
            }),
            audit: audit
                .into_iter()
                .map(|a| AuditView {
                    at: rfc3339(a.at),
                    actor: format!("{}:{}", a.actor_kind, a.actor),
                    action: a.action,
                    change: match (a.before_status, a.after_status) {
                        (Some(b), Some(a)) => format!("{b} → {a}"),
                        (None, Some(a)) => format!("→ {a}"),
                        _ => String::new(),
                    },
                })
                .collect(),
            approve_blocked: (can_decide
                && approvals.iter().any(|(who, _)| *who == viewer.username))
            .then(|| {
                let more =
                    usize::from(p.routing.required_approvals).saturating_sub(approvals.len());
                format!("You approved. {more} more approval(s) from other reviewers are needed.")
            }),
            approvals: approvals
                .iter()
                .map(|(who, at)| format!("{who} at {}", rfc3339(*at)))
                .collect(),
            can_decide,
            cannot_decide_because: if p.status.is_open() { cannot } else { None },
        })
    }

    async fn decide(
        &self,
        viewer: &Viewer,
        id: &str,
        verdict: &str,
        reason: Option<&str>,
    ) -> Result<DecideOutcome, AppError> {
        let role = role_of(viewer)?;
        let Some(verdict) = ReviewVerdict::parse(verdict) else {
            return Ok(DecideOutcome::Refused("bad_verdict"));
        };
        let id = Uuid::parse_str(id).map_err(|_| AppError::NotFound)?;
        let p = self
            .store
            .proposal(id)
            .await
            .map_err(internal)?
            .ok_or(AppError::NotFound)?;
        let decision =
            match check_decision(p.status, &p.agent, &viewer.username, role, verdict, reason) {
                Ok(d) => d,
                Err(e) => {
                    return Ok(DecideOutcome::Refused(match e {
                        DecisionError::RoleMayNotDecide => "role",
                        DecisionError::OwnProposal => "own_proposal",
                        DecisionError::AlreadyDecided(ProposalStatus::Expired) => "expired",
                        DecisionError::AlreadyDecided(_) => "already_decided",
                        DecisionError::ReasonRequired => "reason_required",
                    }));
                }
            };
        let now = OffsetDateTime::now_utc();
        let command = (decision.verdict == ReviewVerdict::Approved).then(|| {
            (
                Uuid::now_v7(),
                CommandSpec::for_approved(
                    &p.contract,
                    &p.request_hash,
                    &viewer.username,
                    crate::domain::contract::vocab::AuthorizationState::Confirmed,
                    now,
                )
                .only_for(self.policy.executors_for(&p.contract.tool.name)),
            )
        });
        let result = self
            .store
            .decide_proposal(&NewDecision {
                proposal_id: id,
                verdict: decision.verdict,
                reviewer: viewer.username.clone(),
                reason: decision.reason,
                required_approvals: p.routing.required_approvals.max(1),
                now,
                command,
            })
            .await;
        match result {
            Ok(record) if record.status == ProposalStatus::Pending => {
                tracing::info!(proposal.id = %id, reviewer = %viewer.username, "approval recorded; more needed");
                Ok(DecideOutcome::Decided("approval_recorded"))
            }
            Ok(_) => {
                tracing::info!(proposal.id = %id, reviewer = %viewer.username, verdict = %verdict, "proposal decided");
                Ok(DecideOutcome::Decided(verdict.as_str()))
            }
            Err(StorageError::Conflict(Conflict::AlreadyApproved)) => {
                Ok(DecideOutcome::Refused("already_approved"))
            }
            Err(StorageError::Conflict(Conflict::AlreadyDecided(ProposalStatus::Expired))) => {
                Ok(DecideOutcome::Refused("expired"))
            }
            Err(StorageError::Conflict(Conflict::AlreadyDecided(_))) => {
                Ok(DecideOutcome::Refused("already_decided"))
            }
            Err(StorageError::NotFound) => Err(AppError::NotFound),
            Err(e) => Err(internal(e)),
        }
    }
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
