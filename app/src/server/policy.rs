//! Server functions of the policy pages: thin adapters to the
//! [`crate::ports::policy::PolicyDesk`], which lets admins and compliance officers read and
//! admins change (and records every refusal). Each form checks the CSRF token and answers
//! with a redirect, so plain form posts work without JavaScript; the playground is a read.

use leptos::prelude::*;

use crate::dto::{AppError, PlaygroundView, PolicyChangeView, PolicyView};

#[cfg(feature = "ssr")]
mod ssr {
    use leptos::prelude::*;

    use crate::dto::{AppError, Form, Notice, Viewer};
    use crate::ports::policy::{DynPolicyDesk, Proposed};

    /// Error lines a redirect carries at most, and their characters at most.
    const MAX_LINES: usize = 20;
    const MAX_CHARS: usize = 2000;

    pub fn policy_desk() -> Result<DynPolicyDesk, AppError> {
        use_context::<DynPolicyDesk>().ok_or(AppError::Internal)
    }

    /// The signed-in viewer whose form carried this session's CSRF token; `None` once it has
    /// redirected (to sign-in, or back to `/policy` with the error).
    pub async fn form_viewer(csrf_token: &str) -> Result<Option<Viewer>, AppError> {
        let viewer = match super::super::ssr::viewer().await {
            Ok(v) => v,
            Err(AppError::Unauthenticated) => {
                super::super::ssr::redirect("/login");
                return Ok(None);
            }
            Err(e) => return Err(e),
        };
        if !super::super::ssr::csrf_ok(csrf_token, Form::Admin).await? {
            super::super::ssr::redirect(&format!("/policy?error={}", Notice::Csrf.code()));
            return Ok(None);
        }
        Ok(Some(viewer))
    }

    /// The page of request `id`; `None` once it has redirected to `/policy` (only an id that
    /// parses is echoed into a redirect).
    pub fn change_page(id: &str) -> Option<String> {
        let Ok(id) = uuid::Uuid::parse_str(id.trim()) else {
            let code = Notice::PolicyNotFound.code();
            super::super::ssr::redirect(&format!("/policy?error={code}"));
            return None;
        };
        Some(format!("/policy/changes/{id}"))
    }

    /// Shows what proposing came to: the new request's page, or `/policy` with the refusal
    /// (and an invalid policy's errors, bounded, in `lines`).
    pub async fn after_proposing(proposed: Proposed) -> Result<(), AppError> {
        let to = match proposed {
            Proposed::Opened(id) => {
                format!(
                    "/policy/changes/{id}?notice={}",
                    Notice::PolicyProposed.code()
                )
            }
            Proposed::Refused(n) => format!("/policy?error={}#propose", n.code()),
            Proposed::Invalid(lines) => {
                let session = super::super::ssr::session().await?;
                session.0.keep_lines(&bounded(&lines)).await?;
                format!("/policy?error={}#propose", Notice::PolicyInvalid.code())
            }
        };
        super::super::ssr::redirect(&to);
        Ok(())
    }

    /// At most [`MAX_LINES`] lines of at most [`MAX_CHARS`] characters in all; what is cut
    /// is counted on a last line.
    fn bounded(lines: &[String]) -> Vec<String> {
        let mut out = Vec::new();
        let mut room = MAX_CHARS;
        for line in lines.iter().take(MAX_LINES) {
            if room < 2 {
                break;
            }
            let kept: String = line.chars().take(room).collect();
            room = room.saturating_sub(kept.chars().count());
            out.push(kept);
        }
        if out.len() < lines.len() {
            out.push(format!("… and {} more", lines.len() - out.len()));
        }
        out
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        #[test]
        fn error_lines_are_bounded() {
            let many: Vec<String> = (1..=30).map(|i| format!("line {i}: bad")).collect();
            let kept = bounded(&many);
            assert_eq!(kept.len(), MAX_LINES + 1);
            assert_eq!(kept.last().map(String::as_str), Some("… and 10 more"));
            let long = bounded(&["x".repeat(5000)]);
            assert_eq!(long[0].chars().count(), MAX_CHARS);
        }
    }
}

/// The policy page's content.
#[server(prefix = "/fn", endpoint = "get_policy")]
pub async fn get_policy() -> Result<PolicyView, AppError> {
    let viewer = super::ssr::viewer().await?;
    let mut view = ssr::policy_desk()?.overview(&viewer).await?;
    view.errors = super::ssr::session().await?.0.take_lines().await?;
    Ok(view)
}

/// A policy change's page.
#[server(prefix = "/fn", endpoint = "get_policy_change")]
pub async fn get_policy_change(id: String) -> Result<PolicyChangeView, AppError> {
    let viewer = super::ssr::viewer().await?;
    ssr::policy_desk()?.change(&viewer, &id).await
}

/// What the active version, and the stored `candidate` version when chosen, decide of
/// `input` (a tool proposal or an AANA event, JSON). Changes nothing.
#[server(prefix = "/fn", endpoint = "policy_playground")]
pub async fn policy_playground(
    input: String,
    candidate: Option<String>,
) -> Result<PlaygroundView, AppError> {
    let viewer = super::ssr::viewer().await?;
    let candidate = candidate.filter(|c| !c.trim().is_empty());
    ssr::policy_desk()?
        .playground(&viewer, &input, candidate.as_deref())
        .await
}

/// Proposes the policy `text`, backtested over `since` (`7d`, `30d`, `90d`), then shows the
/// new request's page; an invalid policy's errors are shown on `/policy`.
#[server(prefix = "/fn", endpoint = "propose_policy")]
pub async fn propose_policy(
    csrf_token: String,
    text: String,
    reason: String,
    since: String,
) -> Result<(), AppError> {
    let Some(viewer) = ssr::form_viewer(&csrf_token).await? else {
        return Ok(());
    };
    let proposed = ssr::policy_desk()?
        .propose(&viewer, &text, &reason, &since)
        .await?;
    ssr::after_proposing(proposed).await
}

/// Proposes returning to stored version `version`, then shows the new request's page.
#[server(prefix = "/fn", endpoint = "propose_policy_return")]
pub async fn propose_policy_return(
    csrf_token: String,
    version: String,
    reason: String,
) -> Result<(), AppError> {
    let Some(viewer) = ssr::form_viewer(&csrf_token).await? else {
        return Ok(());
    };
    let proposed = ssr::policy_desk()?
        .propose_return(&viewer, &version, &reason)
        .await?;
    ssr::after_proposing(proposed).await
}

/// Approves (`answer=approve`) or refuses (`answer=refuse`) request `id`, then shows it again.
#[server(prefix = "/fn", endpoint = "answer_policy_change")]
pub async fn answer_policy_change(
    csrf_token: String,
    id: String,
    answer: String,
    reason: Option<String>,
) -> Result<(), AppError> {
    let Some(page) = ssr::change_page(&id) else {
        return Ok(());
    };
    super::ssr::page_form(
        &page,
        &csrf_token,
        crate::dto::Form::Admin,
        async |viewer| {
            (ssr::policy_desk()?)
                .answer(&viewer, &id, &answer, reason.as_deref())
                .await
        },
    )
    .await
}

/// Runs request `id`'s version in shadow for `duration` (`1h`, `24h`, `7d`), or stops its
/// run (`duration=stop`), then shows it again.
#[server(prefix = "/fn", endpoint = "shadow_policy_change")]
pub async fn shadow_policy_change(
    csrf_token: String,
    id: String,
    duration: String,
) -> Result<(), AppError> {
    let Some(page) = ssr::change_page(&id) else {
        return Ok(());
    };
    let duration = Some(duration.trim()).filter(|d| *d != "stop");
    super::ssr::page_form(
        &page,
        &csrf_token,
        crate::dto::Form::Admin,
        async |viewer| (ssr::policy_desk()?).shadow(&viewer, &id, duration).await,
    )
    .await
}
