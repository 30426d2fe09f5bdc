//! The account page: who is signed in, and their passkeys, which prove the approvals the
//! policy asks a step-up for. Adding one runs the browser's passkey prompt
//! (`public/passkey.js`: the page's only script besides the app's); renaming and removing
//! are plain CSRF-checked forms.

use leptos::prelude::*;
use leptos::server_fn::ServerFn;

use super::common::{Flash, with_csrf};
use crate::dto::{AccountView, PasskeyView};
use crate::server::passkeys::{AddPasskey, RemovePasskey, RenamePasskey, load_account};
use crate::time::When;

/// The account page.
#[component]
pub fn AccountPage() -> impl IntoView {
    let account = Resource::new(|| (), |_| load_account());
    view! {
        <h1>"Your account"</h1>
        <Flash/>
        {with_csrf(account, |view, csrf| view! { <Account view csrf/> })}
    }
}

#[component]
fn Account(view: AccountView, csrf: String) -> impl IntoView {
    let AccountView {
        username,
        role,
        passkeys,
    } = view;
    let list = if passkeys.is_empty() {
        view! {
            <p class="empty" data-testid="passkeys-empty">
                "No passkeys yet. Where the policy asks for one, approving needs your passkey."
            </p>
        }
        .into_any()
    } else {
        view! {
            <ul class="passkeys" data-testid="passkeys">
                {passkeys.into_iter().map(|p| view! { <Passkey p csrf=csrf.clone()/> }).collect_view()}
            </ul>
        }
        .into_any()
    };
    view! {
        <p class="sub" data-testid="account-who">{username} " · " {role}</p>
        <section>
            <h2>"Passkeys"</h2>
            <p class="note">
                "A passkey (your device's screen lock, a security key, a password manager) signs \
                 the approvals the policy asks it for: the signature covers the exact request you \
                 approve, and the trail records which passkey signed."
            </p>
            {list}
            <form method="post" action=AddPasskey::url() class="add-passkey" data-passkey-register="">
                <input type="hidden" name="csrf_token" value=csrf/>
                <input type="hidden" name="credential" value=""/>
                <label>"Name it (so you can tell your passkeys apart)"
                    <input type="text" name="name" required maxlength="60" placeholder="e.g. Laptop"
                        data-testid="passkey-name"/>
                </label>
                <button type="submit" data-testid="passkey-add">"Add a passkey"</button>
                <p class="flash error" role="alert" data-testid="passkey-error" hidden></p>
            </form>
        </section>
    }
}

#[component]
fn Passkey(p: PasskeyView, csrf: String) -> impl IntoView {
    let PasskeyView {
        id,
        name,
        credential_id,
        created_at,
        last_used_at,
    } = p;
    let short: String = credential_id.chars().take(12).collect();
    let rename = format!("rename-{id}");
    let full = credential_id.clone();
    view! {
        <li data-testid="passkey" data-credential-id=credential_id.clone()>
            <strong data-testid="passkey-row-name">{name.clone()}</strong>
            " · added " <When at=created_at/>
            " · "
            {match last_used_at {
                Some(at) => view! { "last used " <When at/> }.into_any(),
                None => view! { "never used" }.into_any(),
            }}
            " · " <code title=full>{short} "…"</code>
            <form method="post" action=RenamePasskey::url() class="inline">
                <input type="hidden" name="csrf_token" value=csrf.clone()/>
                <input type="hidden" name="id" value=id.clone()/>
                <label for=rename.clone() class="sr-only">"New name"</label>
                <input id=rename type="text" name="name" required maxlength="60" value=name
                    data-testid="passkey-rename-input"/>
                <button type="submit" data-testid="passkey-rename">"Rename"</button>
            </form>
            <form method="post" action=RemovePasskey::url() class="inline">
                <input type="hidden" name="csrf_token" value=csrf/>
                <input type="hidden" name="id" value=id/>
                <button type="submit" class="reject" data-testid="passkey-remove">"Remove"</button>
            </form>
        </li>
    }
}
