//! Server functions of the runs page: settle commands whose outcome is unknown, approve or
//! dismiss rollback tasks, pause and resume tools. Each checks the CSRF token, then redirects
//! back to `/runs` with a notice, so the page works as plain form posts without JavaScript.

use leptos::prelude::*;

use crate::dto::{AppError, RunsView};

/// The runs page's content.
#[server(prefix = "/fn", endpoint = "list_runs")]
pub async fn list_runs() -> Result<RunsView, AppError> {
    let viewer = super::ssr::viewer().await?;
    super::ssr::runs_desk()?.runs(&viewer).await
}

#[cfg(feature = "ssr")]
async fn act(
    csrf_token: &str,
    form: crate::dto::Form,
    action: impl std::future::Future<Output = Result<crate::ports::DecideOutcome, AppError>>,
) -> Result<(), AppError> {
    use crate::dto::Notice;
    use crate::ports::DecideOutcome;

    if !super::ssr::csrf_ok(csrf_token, form).await? {
        super::ssr::redirect(&format!("/runs?error={}", Notice::Csrf.code()));
        return Ok(());
    }
    match action.await {
        Ok(DecideOutcome::Decided(n)) => {
            super::ssr::redirect(&format!("/runs?notice={}", n.code()))
        }
        Ok(DecideOutcome::Refused(n)) => super::ssr::redirect(&format!("/runs?error={}", n.code())),
        Err(AppError::NotFound) => {
            super::ssr::redirect(&format!("/runs?error={}", Notice::NotFound.code()))
        }
        Err(e) => return Err(e),
    }
    Ok(())
}

#[cfg(feature = "ssr")]
async fn signed_in() -> Result<Option<crate::dto::Viewer>, AppError> {
    match super::ssr::viewer().await {
        Ok(v) => Ok(Some(v)),
        Err(AppError::Unauthenticated) => {
            super::ssr::redirect("/login");
            Ok(None)
        }
        Err(e) => Err(e),
    }
}

/// Settles a command whose outcome is unknown: `succeeded`, `failed` or `release`.
#[server(prefix = "/fn", endpoint = "resolve_command")]
pub async fn resolve_command(
    csrf_token: String,
    id: String,
    resolution: String,
    reason: String,
) -> Result<(), AppError> {
    let Some(viewer) = signed_in().await? else {
        return Ok(());
    };
    let desk = super::ssr::runs_desk()?;
    act(
        &csrf_token,
        crate::dto::Form::Resolve,
        desk.resolve(&viewer, &id, &resolution, &reason),
    )
    .await
}

/// Approves or dismisses a rollback task (`verdict` is `approve` or `dismiss`).
#[server(prefix = "/fn", endpoint = "decide_rollback")]
pub async fn decide_rollback(
    csrf_token: String,
    id: String,
    verdict: String,
    reason: Option<String>,
) -> Result<(), AppError> {
    let Some(viewer) = signed_in().await? else {
        return Ok(());
    };
    let desk = super::ssr::runs_desk()?;
    act(
        &csrf_token,
        crate::dto::Form::Rollback,
        desk.decide_rollback(&viewer, &id, &verdict, reason.as_deref()),
    )
    .await
}

/// Pauses or resumes a tool for every executor (`action` is `pause` or `resume`; admins).
#[server(prefix = "/fn", endpoint = "switch_tool")]
pub async fn switch_tool(
    csrf_token: String,
    pattern: String,
    action: String,
) -> Result<(), AppError> {
    let Some(viewer) = signed_in().await? else {
        return Ok(());
    };
    let desk = super::ssr::runs_desk()?;
    act(
        &csrf_token,
        crate::dto::Form::ToolSwitch,
        desk.switch_tool(&viewer, &pattern, &action),
    )
    .await
}
