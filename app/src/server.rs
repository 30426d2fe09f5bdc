//! Server functions: thin adapters from pages to the [`crate::ports`] the server implements.
//! Each checks the session first (deny by default); each state-changing one checks the CSRF
//! token and answers with a redirect, so plain HTML forms work without JavaScript.

use leptos::prelude::*;

pub mod admin;
pub mod audit;
pub mod grants;
pub mod passkeys;
pub mod policy;
pub mod runs;

use crate::dto::{AppError, ProposalView, QueueView, SessionView};

#[cfg(feature = "ssr")]
mod ssr {
    use leptos::prelude::*;

    use crate::dto::{AppError, Viewer};
    use crate::ports::{DynAccountDesk, DynDesk, DynGrantsDesk, DynRunsDesk, SessionHandle};

    pub fn desk() -> Result<DynDesk, AppError> {
        use_context::<DynDesk>().ok_or(AppError::Internal)
    }

    pub fn account_desk() -> Result<DynAccountDesk, AppError> {
        use_context::<DynAccountDesk>().ok_or(AppError::Internal)
    }

    pub fn grants_desk() -> Result<DynGrantsDesk, AppError> {
        use_context::<DynGrantsDesk>().ok_or(AppError::Internal)
    }

    pub fn runs_desk() -> Result<DynRunsDesk, AppError> {
        use_context::<DynRunsDesk>().ok_or(AppError::Internal)
    }

    pub async fn session() -> Result<SessionHandle, AppError> {
        leptos_axum::extract::<axum::Extension<SessionHandle>>()
            .await
            .map(|axum::Extension(s)| s)
            .map_err(|_| AppError::Internal)
    }

    pub async fn viewer() -> Result<Viewer, AppError> {
        current_viewer().await?.ok_or(AppError::Unauthenticated)
    }

    /// The session's viewer if the session is still good; a stale one (timed out, account
    /// disabled, role changed, signed out everywhere) is ended by the session port.
    pub async fn current_viewer() -> Result<Option<Viewer>, AppError> {
        session().await?.0.viewer().await
    }

    /// The client's address the server put in the request.
    pub async fn client() -> Result<crate::ports::ClientAddr, AppError> {
        leptos_axum::extract::<axum::Extension<crate::ports::ClientAddr>>()
            .await
            .map(|axum::Extension(c)| c)
            .map_err(|_| AppError::Internal)
    }

    /// Whether the form's CSRF token is this session's. A refusal is recorded in the audit
    /// trail (`auth.csrf_rejected`) with the form it came with.
    pub async fn csrf_ok(token: &str, form: crate::dto::Form) -> Result<bool, AppError> {
        if session().await?.0.csrf_matches(token).await? {
            return Ok(true);
        }
        let viewer = current_viewer().await.ok().flatten();
        desk()?
            .security(
                viewer.as_ref(),
                crate::dto::SecurityEvent::CsrfRejected(form),
            )
            .await?;
        Ok(false)
    }

    pub fn redirect(to: &str) {
        leptos_axum::redirect(to);
    }

    /// The viewer and the proposal id a proposal's form posted, or `None` once it has
    /// redirected: to the sign-in page without a session, to the queue for an id that does not
    /// parse (only ids that parse are echoed into a redirect), back to the proposal when the
    /// CSRF token is not this session's.
    pub async fn proposal_form(
        csrf_token: &str,
        id: &str,
        form: crate::dto::Form,
    ) -> Result<Option<(Viewer, String)>, AppError> {
        use crate::dto::Notice;
        let viewer = match viewer().await {
            Ok(v) => v,
            Err(AppError::Unauthenticated) => {
                redirect("/login");
                return Ok(None);
            }
            Err(e) => return Err(e),
        };
        let Ok(id) = uuid::Uuid::parse_str(id.trim()).map(|id| id.to_string()) else {
            redirect(&format!("/?error={}", Notice::NotFound.code()));
            return Ok(None);
        };
        if !csrf_ok(csrf_token, form).await? {
            redirect(&format!("/proposals/{id}?error={}", Notice::Csrf.code()));
            return Ok(None);
        }
        Ok(Some((viewer, id)))
    }

    /// A form of `page` that is not a proposal's: signs the viewer in first, checks its CSRF
    /// token, runs `act`, then shows `page` again with what came of it.
    pub async fn page_form(
        page: &str,
        csrf_token: &str,
        form: crate::dto::Form,
        act: impl AsyncFnOnce(Viewer) -> Result<crate::ports::DecideOutcome, AppError>,
    ) -> Result<(), AppError> {
        use crate::dto::Notice;
        use crate::ports::DecideOutcome;
        let viewer = match viewer().await {
            Ok(v) => v,
            Err(AppError::Unauthenticated) => {
                redirect("/login");
                return Ok(());
            }
            Err(e) => return Err(e),
        };
        if !csrf_ok(csrf_token, form).await? {
            redirect(&format!("{page}?error={}", Notice::Csrf.code()));
            return Ok(());
        }
        match act(viewer).await {
            Ok(DecideOutcome::Decided(n)) => redirect(&format!("{page}?notice={}", n.code())),
            Ok(DecideOutcome::Refused(n)) => redirect(&format!("{page}?error={}", n.code())),
            Err(AppError::NotFound) => {
                redirect(&format!("{page}?error={}", Notice::NotFound.code()));
            }
            Err(e) => return Err(e),
        }
        Ok(())
    }

    /// Shows proposal `id` again after its form: at `done` with the notice when it was done,
    /// with the error when refused, the queue when there is no such proposal (for this viewer).
    pub fn after_proposal_form(
        id: &str,
        outcome: Result<crate::ports::DecideOutcome, AppError>,
        done: impl FnOnce(crate::dto::Notice) -> String,
    ) -> Result<(), AppError> {
        use crate::dto::Notice;
        use crate::ports::DecideOutcome;
        match outcome {
            Ok(DecideOutcome::Decided(n)) => redirect(&done(n)),
            Ok(DecideOutcome::Refused(n)) => {
                redirect(&format!("/proposals/{id}?error={}", n.code()));
            }
            Err(AppError::NotFound) => redirect(&format!("/?error={}", Notice::NotFound.code())),
            Err(e) => return Err(e),
        }
        Ok(())
    }
}

/// The session's viewer and CSRF token; creates the token (and so the session) on first use.
#[server(prefix = "/fn", endpoint = "session_info")]
pub async fn session_info() -> Result<SessionView, AppError> {
    let session = ssr::session().await?;
    let single_sign_on = use_context::<crate::ports::SingleSignOn>().is_some_and(|s| s.0);
    Ok(SessionView {
        viewer: ssr::current_viewer().await?,
        csrf_token: session.0.csrf_token().await?,
        awaiting_role: session.0.awaiting_role().await?,
        single_sign_on,
    })
}

/// Signs a person in and sends them to the queue, or back to the login page with an error.
#[server(prefix = "/fn", endpoint = "login")]
pub async fn login(csrf_token: String, username: String, password: String) -> Result<(), AppError> {
    if !ssr::csrf_ok(&csrf_token, crate::dto::Form::Login).await? {
        ssr::redirect(&format!("/login?error={}", crate::dto::Notice::Csrf.code()));
        return Ok(());
    }
    use crate::ports::SignInOutcome;
    let desk = ssr::desk()?;
    let client = ssr::client().await?;
    let refused = match desk
        .authenticate(username.trim(), &password, client)
        .await?
    {
        SignInOutcome::SignedIn(viewer) => {
            ssr::session().await?.0.sign_in(&viewer.username).await?;
            ssr::redirect("/");
            return Ok(());
        }
        SignInOutcome::AwaitingRole(username) => {
            ssr::session().await?.0.sign_in(&username).await?;
            ssr::redirect("/no-role");
            return Ok(());
        }
        SignInOutcome::Refused => crate::dto::Notice::InvalidCredentials,
        SignInOutcome::Throttled => crate::dto::Notice::Throttled,
    };
    ssr::redirect(&format!("/login?error={}", refused.code()));
    Ok(())
}

/// Ends the session.
#[server(prefix = "/fn", endpoint = "logout")]
pub async fn logout(csrf_token: String) -> Result<(), AppError> {
    if !ssr::csrf_ok(&csrf_token, crate::dto::Form::Logout).await? {
        ssr::redirect(&format!("/?error={}", crate::dto::Notice::Csrf.code()));
        return Ok(());
    }
    if let Some(viewer) = ssr::current_viewer().await? {
        ssr::desk()?
            .security(Some(&viewer), crate::dto::SecurityEvent::SignedOut)
            .await?;
    } else if let Some(username) = ssr::session().await?.0.awaiting_role().await? {
        ssr::desk()?
            .security(
                None,
                crate::dto::SecurityEvent::SignedOutWithoutRole(username),
            )
            .await?;
    }
    ssr::session().await?.0.sign_out().await?;
    ssr::redirect(&format!(
        "/login?notice={}",
        crate::dto::Notice::SignedOut.code()
    ));
    Ok(())
}

/// A page of the pending proposals, filtered and ordered as the query string asks.
#[server(prefix = "/fn", endpoint = "list_queue")]
// One argument per public query-string name. (The lint fires on the browser's build of this
// function, not on the server's, so `expect` cannot say it for both.)
#[allow(clippy::too_many_arguments)]
pub async fn list_queue(
    agent: Option<String>,
    domain: Option<String>,
    risk: Option<String>,
    tool: Option<String>,
    route: Option<String>,
    compliance: Option<String>,
    sort: Option<String>,
    after: Option<String>,
) -> Result<QueueView, AppError> {
    let viewer = ssr::viewer().await?;
    let params = crate::dto::QueueParams {
        agent,
        domain,
        risk,
        tool,
        route,
        compliance,
        sort,
        after,
    };
    ssr::desk()?.queue(&viewer, params).await
}

/// One proposal in full, with a page of its audit trail (before seq `trail_before`, or the
/// most recent). `reveal` shows the personal data the viewer revealed minutes ago.
#[server(prefix = "/fn", endpoint = "get_proposal")]
pub async fn get_proposal(
    id: String,
    trail_before: Option<i64>,
    reveal: bool,
) -> Result<ProposalView, AppError> {
    let viewer = ssr::viewer().await?;
    ssr::desk()?
        .proposal(&viewer, &id, trail_before, reveal)
        .await
}

/// Approves or rejects a proposal, then shows it again with a notice or an error.
#[server(prefix = "/fn", endpoint = "decide_proposal")]
pub async fn decide_proposal(
    csrf_token: String,
    id: String,
    verdict: String,
    reason: Option<String>,
    confirm: Option<String>,
    passkey: Option<String>,
) -> Result<(), AppError> {
    let Some((viewer, id)) = ssr::proposal_form(&csrf_token, &id, crate::dto::Form::Decide).await?
    else {
        return Ok(());
    };
    let outcome = ssr::desk()?
        .decide(
            &viewer,
            &id,
            &verdict,
            reason.as_deref(),
            confirm.as_deref(),
            passkey.as_deref(),
        )
        .await;
    ssr::after_proposal_form(&id, outcome, |n| {
        format!("/proposals/{id}?notice={}", n.code())
    })
}

/// An admin approves a proposal alone although it needs more approvers (break-glass), saying
/// why, then shows it again with a notice or an error.
#[server(prefix = "/fn", endpoint = "break_glass")]
pub async fn break_glass(
    csrf_token: String,
    id: String,
    justification: String,
    confirm: Option<String>,
    passkey: Option<String>,
) -> Result<(), AppError> {
    let Some((viewer, id)) = ssr::proposal_form(&csrf_token, &id, crate::dto::Form::Decide).await?
    else {
        return Ok(());
    };
    let outcome = ssr::desk()?
        .break_glass(
            &viewer,
            &id,
            &justification,
            confirm.as_deref(),
            passkey.as_deref(),
        )
        .await;
    ssr::after_proposal_form(&id, outcome, |n| {
        format!("/proposals/{id}?notice={}", n.code())
    })
}

/// Approves a proposal with the parameter values the reviewer edited ("edit, then approve"):
/// `field[N]` names a parameter (the hex of its JSON pointer) and `value[N]` its value as JSON.
#[server(prefix = "/fn", endpoint = "edit_and_approve")]
pub async fn edit_and_approve(
    csrf_token: String,
    id: String,
    confirm: Option<String>,
    field: Option<Vec<String>>,
    value: Option<Vec<String>>,
) -> Result<(), AppError> {
    let Some((viewer, id)) = ssr::proposal_form(&csrf_token, &id, crate::dto::Form::Decide).await?
    else {
        return Ok(());
    };
    let fields: Vec<(String, String)> = (field.unwrap_or_default().into_iter())
        .zip(value.unwrap_or_default())
        .collect();
    let outcome = ssr::desk()?
        .edit_and_approve(&viewer, &id, confirm.as_deref(), &fields)
        .await;
    ssr::after_proposal_form(&id, outcome, |n| {
        format!("/proposals/{id}?notice={}", n.code())
    })
}

/// Approves or rejects the proposals chosen in the queue (`ids[N]`, one checkbox each) with
/// one reason, then shows the queue with what came of each.
#[server(prefix = "/fn", endpoint = "decide_batch")]
pub async fn decide_batch(
    csrf_token: String,
    verdict: String,
    reason: Option<String>,
    ids: Option<Vec<String>>,
) -> Result<(), AppError> {
    use crate::dto::{Form, Notice};
    let viewer = match ssr::viewer().await {
        Ok(v) => v,
        Err(AppError::Unauthenticated) => {
            ssr::redirect("/login");
            return Ok(());
        }
        Err(e) => return Err(e),
    };
    if !ssr::csrf_ok(&csrf_token, Form::Decide).await? {
        ssr::redirect(&format!("/?error={}", Notice::Csrf.code()));
        return Ok(());
    }
    let ids = ids.unwrap_or_default();
    let reason = reason.as_deref().map(str::trim).filter(|r| !r.is_empty());
    match ssr::desk()?
        .decide_batch(&viewer, &ids, &verdict, reason)
        .await?
    {
        Ok(outcome) => ssr::redirect(&outcome.location()),
        Err(notice) => ssr::redirect(&format!("/?error={}", notice.code())),
    }
    Ok(())
}

/// Erases a settled proposal's personal data values (admins only; GDPR), then shows it again
/// with a notice or an error.
#[server(prefix = "/fn", endpoint = "erase_proposal")]
pub async fn erase_proposal(
    csrf_token: String,
    id: String,
    reason: String,
) -> Result<(), AppError> {
    let Some((viewer, id)) = ssr::proposal_form(&csrf_token, &id, crate::dto::Form::Erase).await?
    else {
        return Ok(());
    };
    let outcome = ssr::desk()?.erase(&viewer, &id, &reason).await;
    ssr::after_proposal_form(&id, outcome, |n| {
        format!("/proposals/{id}?notice={}", n.code())
    })
}

/// Reveals a GDPR or HIPAA proposal's withheld personal data to the viewer (recorded in the
/// audit trail), then shows the proposal with the values.
#[server(prefix = "/fn", endpoint = "reveal_personal_data")]
pub async fn reveal_personal_data(csrf_token: String, id: String) -> Result<(), AppError> {
    let Some((viewer, id)) = ssr::proposal_form(&csrf_token, &id, crate::dto::Form::Reveal).await?
    else {
        return Ok(());
    };
    let outcome = ssr::desk()?.reveal(&viewer, &id).await;
    ssr::after_proposal_form(&id, outcome, |n| {
        format!("/proposals/{id}?revealed=1&notice={}#command", n.code())
    })
}
