//! The runs page's side of the desk: commands a person must settle, rollback tasks and paused
//! tools, and the actions on them. Rules live in the services; this only translates.

use app::dto::{self, AppError, Notice, PausedView, RunItem, RunsView, Viewer};
use app::ports::DecideOutcome;
use uuid::Uuid;

use super::{age, internal, may_view, moment, role_of};
use crate::audit::Actor;
use crate::domain::command::Resolution;
use crate::domain::principal::Role;
use crate::service::{Conflict, Reviewer, ServiceError, Services};
use crate::storage::commands::CommandRecord;

fn pretty(v: &serde_json::Value) -> String {
    serde_json::to_string_pretty(v).unwrap_or_default()
}

fn item(c: CommandRecord, now: time::OffsetDateTime) -> RunItem {
    let plan = c.spec.rollback_plan.as_ref();
    RunItem {
        id: c.id.to_string(),
        proposal_id: c.proposal_id.to_string(),
        kind: c.kind.as_str().into(),
        tool: format!("{} {}", c.spec.tool.name, c.spec.tool.version),
        domain: c.spec.domain.clone(),
        status: c.status.as_str().into(),
        attempts: c.attempts,
        interruption: c.interruption.clone(),
        side_effect: c.side_effect.map(|s| s.as_str().into()),
        leased_by: c.leased_by.clone(),
        error: c.error.as_ref().map(pretty),
        rollback_type: plan.map(|p| p.kind.as_str().into()),
        rollback_instructions: plan.and_then(|p| p.instructions.as_ref()).map(pretty),
        rollback_of: c.rollback_of.map(|id| id.to_string()),
        age: age(c.completed_at.unwrap_or(c.created_at), now),
    }
}

fn reviewer(viewer: &Viewer) -> Reviewer {
    Reviewer {
        username: viewer.username.clone(),
        role: role_of(viewer),
    }
}

/// Refusals a page explains, as notices.
fn refused(e: ServiceError) -> Result<DecideOutcome, AppError> {
    let notice = match e {
        ServiceError::Refused(_) => Notice::Role,
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
pub async fn runs(services: &Services, viewer: &Viewer) -> Result<RunsView, AppError> {
    let role = may_view(viewer)?;
    let now = services.now();
    let unknown = services.needing_resolution().await.map_err(internal)?;
    let rollbacks = services.rollback_tasks().await.map_err(internal)?;
    let paused = services.paused_tools().await.map_err(internal)?;
    Ok(RunsView {
        unknown: unknown.into_iter().map(|c| item(c, now)).collect(),
        rollbacks: rollbacks.into_iter().map(|c| item(c, now)).collect(),
        paused: paused
            .into_iter()
            .map(|p| PausedView {
                pattern: p.pattern,
                paused_by: p.paused_by,
                paused_at: moment(p.paused_at, now),
            })
            .collect(),
        can_act: role.can_decide(),
        can_pause: role == Role::Admin,
    })
}

/// Settles a command.
pub async fn resolve(
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
    match services
        .resolve_command(&reviewer(viewer), id, resolution, reason)
        .await
    {
        Ok(_) if resolution == Resolution::Release => Ok(DecideOutcome::Decided(Notice::Released)),
        Ok(_) => Ok(DecideOutcome::Decided(Notice::Resolved)),
        Err(e) => refused(e),
    }
}

/// Approves or dismisses a rollback task.
pub async fn decide_rollback(
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
    match services
        .decide_rollback(&reviewer(viewer), id, approve, reason)
        .await
    {
        Ok(_) if approve => Ok(DecideOutcome::Decided(Notice::RollbackApproved)),
        Ok(_) => Ok(DecideOutcome::Decided(Notice::RollbackDismissed)),
        Err(e) => refused(e),
    }
}

/// Pauses or resumes a tool (admins only; a refusal is recorded as `access.denied`).
pub async fn switch_tool(
    services: &Services,
    viewer: &Viewer,
    pattern: &str,
    action: &str,
) -> Result<Option<DecideOutcome>, AppError> {
    if role_of(viewer) != Role::Admin {
        return Ok(None);
    }
    let actor = Actor::user(&viewer.username);
    let result = match action {
        "pause" => services.pause_tool(pattern, &actor).await,
        "resume" => services.resume_tool(pattern, &actor).await,
        _ => return Ok(Some(DecideOutcome::Refused(Notice::BadVerdict))),
    };
    Ok(Some(match result {
        Ok(true) if action == "pause" => DecideOutcome::Decided(Notice::ToolPaused),
        Ok(true) => DecideOutcome::Decided(Notice::ToolResumed),
        Ok(false) if action == "pause" => DecideOutcome::Decided(Notice::ToolPaused),
        Ok(false) => DecideOutcome::Refused(Notice::BadTool),
        Err(e) => refused(e)?,
    }))
}

/// The page a refused pause names in `access.denied`.
pub const PAUSE_PAGE: dto::Page = dto::Page::ToolSwitch;
