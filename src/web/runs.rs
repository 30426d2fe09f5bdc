//! The runs page's side of the desk: commands a person must settle, rollback tasks and paused
//! tools, and the actions on them. Rules live in the services; this only translates.

use app::dto::{self, AppError, Notice, PausedView, RunItem, RunsView, Viewer};
use app::ports::{DecideOutcome, Desk};
use uuid::Uuid;

use super::{Flagged, age, internal, keys_only, moment, principal};
use crate::domain::access::{UseCase, authorize};
use crate::domain::command::Resolution;
use crate::domain::record::CommandRecord;
use crate::service::{Conflict, ServiceError, Services};

fn pretty(v: &serde_json::Value) -> String {
    serde_json::to_string_pretty(v).unwrap_or_default()
}

/// One card; the agent's and the executor's text made visible and its hidden characters
/// counted for the flag. `summary` is its proposal's intent, if found.
fn item(c: CommandRecord, summary: Option<&str>, now: time::OffsetDateTime) -> RunItem {
    let plan = c.spec.rollback_plan.as_ref();
    let mut shown = Flagged::default();
    let params = keys_only(&c.spec.parameters, 120);
    RunItem {
        id: c.id.to_string(),
        proposal_id: c.proposal_id.to_string(),
        kind: c.kind.as_str().into(),
        summary: summary.map(|s| shown.text(s)),
        tool: shown.text(&format!("{} {}", c.spec.tool.name, c.spec.tool.version)),
        parameters: shown.parameters(&params, &c.spec.parameters),
        domain: c.spec.domain.clone(),
        status: c.status.as_str().into(),
        attempts: c.attempts,
        interruption: c.interruption.clone(),
        side_effect: c.side_effect.map(|s| s.as_str().into()),
        leased_by: c.leased_by.clone(),
        error: c.error.as_ref().map(|e| shown.text(&pretty(e))),
        rollback_type: plan.map(|p| p.kind.as_str().into()),
        rollback_instructions: (plan.and_then(|p| p.instructions.as_ref()))
            .map(|i| shown.text(&pretty(i))),
        rollback_of: c.rollback_of.map(|id| id.to_string()),
        age: age(c.completed_at.unwrap_or(c.created_at), now),
        hidden: shown.hidden,
    }
}

/// Refusals a page explains, as notices.
fn refused(e: ServiceError) -> Result<DecideOutcome, AppError> {
    let notice = match e {
        ServiceError::Refused(_) | ServiceError::Denied(_) => Notice::Role,
        ServiceError::NotFound => return Err(AppError::NotFound),
        ServiceError::Conflict(Conflict::CommandState(_)) => Notice::CommandState,
        ServiceError::Invalid(fields) if fields.iter().any(|f| f.field == "reason") => {
            Notice::ResolveReasonRequired
        }
        ServiceError::Invalid(_) => Notice::BadTool,
        other => return Err(internal(other)),
    };
    Ok(DecideOutcome::Refused(notice))
}

/// The page's content.
async fn runs(services: &Services, viewer: &Viewer) -> Result<RunsView, AppError> {
    let who = principal(services, viewer).await?;
    let now = services.now();
    let page = services.runs_page(&who).await.map_err(internal)?;
    let summaries = page.summaries;
    let card = |c: CommandRecord| {
        let summary = summaries.get(&c.proposal_id).map(String::as_str);
        item(c, summary, now)
    };
    Ok(RunsView {
        unknown: page.unknown.into_iter().map(card).collect(),
        rollbacks: page.rollbacks.into_iter().map(card).collect(),
        paused: (page.paused.into_iter())
            .map(|p| PausedView {
                pattern: p.pattern,
                paused_by: p.paused_by,
                paused_at: moment(p.paused_at, now),
            })
            .collect(),
        can_act: authorize(&who, UseCase::ResolveCommand).is_ok(),
        can_pause: authorize(&who, UseCase::SwitchTool).is_ok(),
    })
}

/// Settles a command.
async fn resolve(
    services: &Services,
    viewer: &Viewer,
    id: &str,
    resolution: &str,
    reason: &str,
) -> Result<DecideOutcome, AppError> {
    let id = Uuid::parse_str(id).map_err(|_| AppError::NotFound)?;
    let Some(resolution) = Resolution::parse(resolution) else {
        return Ok(DecideOutcome::Refused(Notice::BadVerdict));
    };
    let who = principal(services, viewer).await?;
    match services.resolve_command(&who, id, resolution, reason).await {
        Ok(_) if resolution == Resolution::Release => Ok(DecideOutcome::Decided(Notice::Released)),
        Ok(_) => Ok(DecideOutcome::Decided(Notice::Resolved)),
        Err(e) => refused(e),
    }
}

/// Approves or dismisses a rollback task.
async fn decide_rollback(
    services: &Services,
    viewer: &Viewer,
    id: &str,
    verdict: &str,
    reason: Option<&str>,
) -> Result<DecideOutcome, AppError> {
    let id = Uuid::parse_str(id).map_err(|_| AppError::NotFound)?;
    let approve = match verdict {
        "approve" => true,
        "dismiss" => false,
        _ => return Ok(DecideOutcome::Refused(Notice::BadVerdict)),
    };
    let who = principal(services, viewer).await?;
    match services.decide_rollback(&who, id, approve, reason).await {
        Ok(_) if approve => Ok(DecideOutcome::Decided(Notice::RollbackApproved)),
        Ok(_) => Ok(DecideOutcome::Decided(Notice::RollbackDismissed)),
        Err(e) => refused(e),
    }
}

/// Pauses or resumes a tool (admins only; a refusal is recorded as `access.denied`).
async fn switch_tool(
    services: &Services,
    viewer: &Viewer,
    pattern: &str,
    action: &str,
) -> Result<Option<DecideOutcome>, AppError> {
    let who = principal(services, viewer).await?;
    let result = match action {
        "pause" => services.pause_tool(&who, pattern).await,
        "resume" => services.resume_tool(&who, pattern).await,
        _ => return Ok(Some(DecideOutcome::Refused(Notice::BadVerdict))),
    };
    Ok(Some(match result {
        Err(ServiceError::Denied(_)) => return Ok(None),
        Ok(true) if action == "pause" => DecideOutcome::Decided(Notice::ToolPaused),
        Ok(true) => DecideOutcome::Decided(Notice::ToolResumed),
        Ok(false) if action == "pause" => DecideOutcome::Decided(Notice::ToolPaused),
        Ok(false) => DecideOutcome::Refused(Notice::BadTool),
        Err(e) => refused(e)?,
    }))
}

/// The page a refused pause names in `access.denied`.
const PAUSE_PAGE: dto::Page = dto::Page::ToolSwitch;

#[async_trait::async_trait]
impl app::ports::RunsDesk for super::ReviewDesk {
    async fn runs(&self, viewer: &Viewer) -> Result<dto::RunsView, AppError> {
        runs(&self.services, viewer).await
    }

    async fn resolve(
        &self,
        viewer: &Viewer,
        id: &str,
        resolution: &str,
        reason: &str,
    ) -> Result<DecideOutcome, AppError> {
        resolve(&self.services, viewer, id, resolution, reason).await
    }

    async fn decide_rollback(
        &self,
        viewer: &Viewer,
        id: &str,
        verdict: &str,
        reason: Option<&str>,
    ) -> Result<DecideOutcome, AppError> {
        decide_rollback(&self.services, viewer, id, verdict, reason).await
    }

    async fn switch_tool(
        &self,
        viewer: &Viewer,
        pattern: &str,
        action: &str,
    ) -> Result<DecideOutcome, AppError> {
        match switch_tool(&self.services, viewer, pattern, action).await? {
            Some(outcome) => Ok(outcome),
            None => {
                self.security(Some(viewer), dto::SecurityEvent::AccessDenied(PAUSE_PAGE))
                    .await?;
                Ok(DecideOutcome::Refused(Notice::PauseRole))
            }
        }
    }
}
