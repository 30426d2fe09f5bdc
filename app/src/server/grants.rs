//! Server functions of standing grants: "approve and allow similar" on a proposal's page, the
//! grants page and its revoke button. Each state-changing one checks the CSRF token and
//! answers with a redirect, so plain form posts work without JavaScript.

use leptos::prelude::*;

use crate::dto::{AppError, GrantsView};

/// The grants page's content.
#[server(prefix = "/fn", endpoint = "list_grants")]
pub async fn list_grants() -> Result<GrantsView, AppError> {
    let viewer = super::ssr::viewer().await?;
    super::ssr::grants_desk()?.grants(&viewer).await
}

/// Approves proposal `id` and lets the same agent's similar calls through: for `duration`
/// seconds, at most `max_uses` times (empty: no limit), with the parameters named in `free`
/// (`free[N]`, JSON pointers) any value and each `bound_at[N]` from 0 to `bound_max[N]` (an
/// empty bound leaves it exact).
#[server(prefix = "/fn", endpoint = "approve_and_grant")]
#[allow(
    clippy::too_many_arguments,
    reason = "one field per form input; the macro expands it only on the server"
)]
pub async fn approve_and_grant(
    csrf_token: String,
    id: String,
    confirm: Option<String>,
    duration: String,
    max_uses: Option<String>,
    free: Option<Vec<String>>,
    bound_at: Option<Vec<String>>,
    bound_max: Option<Vec<String>>,
) -> Result<(), AppError> {
    let Some((viewer, id)) =
        super::ssr::proposal_form(&csrf_token, &id, crate::dto::Form::Decide).await?
    else {
        return Ok(());
    };
    let form = crate::dto::GrantForm {
        duration,
        max_uses: max_uses.unwrap_or_default(),
        free: free.unwrap_or_default(),
        bounds: (bound_at.unwrap_or_default().into_iter())
            .zip(bound_max.unwrap_or_default())
            .collect(),
    };
    let outcome = super::ssr::desk()?
        .approve_and_grant(&viewer, &id, confirm.as_deref(), &form)
        .await;
    super::ssr::after_proposal_form(&id, outcome, |n| {
        format!("/proposals/{id}?notice={}", n.code())
    })
}

/// Revokes standing grant `id`, then shows the grants page with what came of it.
#[server(prefix = "/fn", endpoint = "revoke_grant")]
pub async fn revoke_grant(csrf_token: String, id: String) -> Result<(), AppError> {
    let form = crate::dto::Form::Decide;
    super::ssr::page_form("/grants", &csrf_token, form, async |viewer| {
        super::ssr::grants_desk()?.revoke_grant(&viewer, &id).await
    })
    .await
}
