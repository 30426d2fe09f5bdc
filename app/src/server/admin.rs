//! Server functions of the account, token and gateway admin pages: thin adapters to the
//! [`crate::ports::Admin`] port, which refuses every role but admin and records the refusal.
//! Each form checks the CSRF token, then redirects back with a notice (and, when a secret was
//! made, the key under which the next page view shows it once).

use leptos::prelude::*;

use crate::dto::{AppError, GatewayView, TokensView, UsersView, WebhooksView};

#[cfg(feature = "ssr")]
mod ssr {
    use leptos::prelude::*;

    use crate::dto::{AppError, Form, Notice, Viewer};
    use crate::ports::{AdminOutcome, DynAdmin};

    pub fn admin() -> Result<DynAdmin, AppError> {
        use_context::<DynAdmin>().ok_or(AppError::Internal)
    }

    /// The signed-in viewer, or a redirect to sign-in (`None`).
    pub async fn signed_in() -> Result<Option<Viewer>, AppError> {
        match super::super::ssr::viewer().await {
            Ok(v) => Ok(Some(v)),
            Err(AppError::Unauthenticated) => {
                super::super::ssr::redirect("/login");
                Ok(None)
            }
            Err(e) => Err(e),
        }
    }

    /// Whether the form's CSRF token is good; if not, redirects back to `page` with an error.
    pub async fn csrf_ok(page: &str, token: &str) -> Result<bool, AppError> {
        if super::super::ssr::csrf_ok(token, Form::Admin).await? {
            return Ok(true);
        }
        super::super::ssr::redirect(&format!("{page}?error={}", Notice::Csrf.code()));
        Ok(false)
    }

    /// Redirects back to `page` with what the change came to.
    pub fn answer(page: &str, outcome: AdminOutcome) {
        let kind = if outcome.refused { "error" } else { "notice" };
        let mut to = format!("{page}?{kind}={}", outcome.notice.code());
        if let Some(key) = outcome.shown {
            to.push_str(&format!("&shown={key}"));
        }
        super::super::ssr::redirect(&to);
    }
}

/// The users page's content; `shown` names a one-time password waiting to be shown.
#[server(prefix = "/fn", endpoint = "list_admin_users")]
pub async fn list_admin_users(shown: Option<String>) -> Result<UsersView, AppError> {
    let viewer = super::ssr::viewer().await?;
    ssr::admin()?.users(&viewer, shown.as_deref()).await
}

/// The tokens page's content; `shown` names a new token waiting to be shown.
#[server(prefix = "/fn", endpoint = "list_admin_tokens")]
pub async fn list_admin_tokens(shown: Option<String>) -> Result<TokensView, AppError> {
    let viewer = super::ssr::viewer().await?;
    ssr::admin()?.tokens(&viewer, shown.as_deref()).await
}

/// The newest webhook deliveries (admins only).
#[server(prefix = "/fn", endpoint = "list_webhook_deliveries")]
pub async fn list_webhook_deliveries() -> Result<WebhooksView, AppError> {
    let viewer = super::ssr::viewer().await?;
    ssr::admin()?.webhooks(&viewer).await
}

/// The MCP gateway's upstreams and pinned tools (admins only).
#[server(prefix = "/fn", endpoint = "list_gateway_tools")]
pub async fn list_gateway_tools() -> Result<GatewayView, AppError> {
    let viewer = super::ssr::viewer().await?;
    ssr::admin()?.gateway(&viewer).await
}

/// Accepts (`action` `accept`) the changed definition of gateway tool `name`: the one whose
/// SHA-256 is `sha256`, as the page showed it.
#[server(prefix = "/fn", endpoint = "change_gateway")]
pub async fn change_gateway(
    csrf_token: String,
    action: String,
    name: String,
    sha256: String,
) -> Result<(), AppError> {
    const PAGE: &str = "/admin/gateway";

    let Some(viewer) = ssr::signed_in().await? else {
        return Ok(());
    };
    if !ssr::csrf_ok(PAGE, &csrf_token).await? {
        return Ok(());
    }
    if action != "accept" {
        return Err(AppError::Invalid("`action`: must be `accept`".into()));
    }
    let outcome = (ssr::admin()?.accept_gateway_tool(&viewer, &name, &sha256)).await?;
    ssr::answer(PAGE, outcome);
    Ok(())
}

/// Changes an account: `action` is `add`, `disable`, `enable`, `reset_password`, `role`,
/// `domains` or `email`.
#[server(prefix = "/fn", endpoint = "change_user")]
pub async fn change_user(
    csrf_token: String,
    action: String,
    username: String,
    role: Option<String>,
    domains: Option<String>,
    email: Option<String>,
) -> Result<(), AppError> {
    use crate::ports::UserChange;
    const PAGE: &str = "/admin/users";

    let Some(viewer) = ssr::signed_in().await? else {
        return Ok(());
    };
    if !ssr::csrf_ok(PAGE, &csrf_token).await? {
        return Ok(());
    }
    let change = match action.as_str() {
        "add" => UserChange::Add {
            username,
            role: role.unwrap_or_default(),
            domains,
            email,
        },
        "disable" => UserChange::Disable(username),
        "enable" => UserChange::Enable(username),
        "reset_password" => UserChange::ResetPassword(username),
        "role" => UserChange::Role {
            username,
            role: role.unwrap_or_default(),
        },
        "domains" => UserChange::Domains { username, domains },
        "email" => UserChange::Email { username, email },
        _ => {
            return Err(AppError::Invalid(
                "`action`: must be one of add, disable, enable, reset_password, role, domains, \
                 email"
                    .into(),
            ));
        }
    };
    let outcome = ssr::admin()?.change_user(&viewer, change).await?;
    ssr::answer(PAGE, outcome);
    Ok(())
}

/// Creates (`action` `create`) or revokes (`revoke`, by `id`) an API token, or rotates an
/// agent token's webhook signing secret (`rotate_webhook_secret`, by `id`).
#[server(prefix = "/fn", endpoint = "change_token")]
// One argument per form field. (The lint fires on the browser's build of this function, not on
// the server's, so `expect` cannot say it for both.)
#[allow(clippy::too_many_arguments)]
pub async fn change_token(
    csrf_token: String,
    action: String,
    kind: Option<String>,
    name: Option<String>,
    tools: Option<String>,
    operator: Option<String>,
    webhook: Option<String>,
    id: Option<String>,
) -> Result<(), AppError> {
    use crate::ports::TokenChange;
    const PAGE: &str = "/admin/tokens";

    let Some(viewer) = ssr::signed_in().await? else {
        return Ok(());
    };
    if !ssr::csrf_ok(PAGE, &csrf_token).await? {
        return Ok(());
    }
    let change = match action.as_str() {
        "create" => TokenChange::Create {
            kind: kind.unwrap_or_default(),
            name: name.unwrap_or_default(),
            tools,
            operator,
            webhook,
        },
        "revoke" => TokenChange::Revoke(id.unwrap_or_default()),
        "rotate_webhook_secret" => TokenChange::RotateWebhookSecret(id.unwrap_or_default()),
        _ => {
            return Err(AppError::Invalid(
                "`action`: must be one of create, revoke, rotate_webhook_secret".into(),
            ));
        }
    };
    let outcome = ssr::admin()?.change_token(&viewer, change).await?;
    ssr::answer(PAGE, outcome);
    Ok(())
}
