//! Server functions of passkeys: the account page, the options of the browser's passkey
//! prompt (`public/passkey.js` fetches them), and the forms that add, rename and remove one.
//! Each state-changing one checks the CSRF token and answers with a redirect.

use leptos::prelude::*;

#[cfg(feature = "ssr")]
use crate::dto::Form;
use crate::dto::{AccountView, AppError};

/// The account page's content.
#[server(prefix = "/fn", endpoint = "account")]
pub async fn load_account() -> Result<AccountView, AppError> {
    let viewer = super::ssr::viewer().await?;
    super::ssr::account_desk()?.account(&viewer).await
}

/// The options of the browser's passkey prompt, as JSON text: `{"publicKey": …}` to register
/// a passkey (no `id`) or to answer the step-up challenge of approving proposal `id`;
/// `{"refused": code, "message": …}` when it cannot be given.
#[server(prefix = "/fn", endpoint = "passkey_options")]
pub async fn passkey_options(csrf_token: String, id: Option<String>) -> Result<String, AppError> {
    let viewer = super::ssr::viewer().await?;
    if !super::ssr::csrf_ok(&csrf_token, Form::Passkey).await? {
        let notice = crate::dto::Notice::Csrf;
        return Ok(refused(notice));
    }
    let id = id.as_deref().map(str::trim).filter(|id| !id.is_empty());
    match super::ssr::account_desk()?
        .passkey_options(&viewer, id)
        .await?
    {
        Ok(options) => Ok(options),
        Err(notice) => Ok(refused(notice)),
    }
}

#[cfg(feature = "ssr")]
fn refused(notice: crate::dto::Notice) -> String {
    serde_json::json!({"refused": notice.code(), "message": notice.text()}).to_string()
}

/// Registers the passkey the browser created (`credential`, JSON) under `name`.
#[server(prefix = "/fn", endpoint = "add_passkey")]
pub async fn add_passkey(
    csrf_token: String,
    name: String,
    credential: String,
) -> Result<(), AppError> {
    super::ssr::page_form("/account", &csrf_token, Form::Passkey, async |viewer| {
        (super::ssr::account_desk()?)
            .add_passkey(&viewer, &name, &credential)
            .await
    })
    .await
}

/// Renames one of the viewer's passkeys.
#[server(prefix = "/fn", endpoint = "rename_passkey")]
pub async fn rename_passkey(csrf_token: String, id: String, name: String) -> Result<(), AppError> {
    super::ssr::page_form("/account", &csrf_token, Form::Passkey, async |viewer| {
        (super::ssr::account_desk()?)
            .rename_passkey(&viewer, &id, &name)
            .await
    })
    .await
}

/// Removes one of the viewer's passkeys.
#[server(prefix = "/fn", endpoint = "remove_passkey")]
pub async fn remove_passkey(csrf_token: String, id: String) -> Result<(), AppError> {
    super::ssr::page_form("/account", &csrf_token, Form::Passkey, async |viewer| {
        super::ssr::account_desk()?
            .remove_passkey(&viewer, &id)
            .await
    })
    .await
}
