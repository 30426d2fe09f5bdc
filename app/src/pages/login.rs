//! The sign-in page, and the page of a person signed in to an account without a role.

use leptos::prelude::*;
use leptos::server_fn::ServerFn;
use leptos_router::components::Redirect;

use super::common::{Flash, use_session};
use crate::dto::SessionView;
use crate::server::{Login, Logout};

/// Username and password form, and single sign-on when it is configured; already signed-in
/// people go to the queue, those whose account has no role yet to the page that says so.
#[component]
pub fn LoginPage() -> impl IntoView {
    let session = use_session();
    view! {
        <section class="login">
            <h1>"Sign in"</h1>
            <Flash/>
            <Suspense fallback=|| ()>
                {move || Suspend::new(async move {
                    match session.await {
                        Ok(SessionView { viewer: Some(_), .. }) => view! { <Redirect path="/"/> }.into_any(),
                        Ok(SessionView { awaiting_role: Some(_), .. }) => {
                            view! { <Redirect path="/no-role"/> }.into_any()
                        }
                        Ok(SessionView { csrf_token, single_sign_on, .. }) => view! {
                            <form method="post" action=Login::url() class="stack">
                                <input type="hidden" name="csrf_token" value=csrf_token/>
                                <label>"Username" <input name="username" autocomplete="username" required/></label>
                                <label>"Password"
                                    <input name="password" type="password" autocomplete="current-password" required/>
                                </label>
                                <button type="submit">"Sign in"</button>
                            </form>
                            {single_sign_on.then(|| view! {
                                // A full page load, not the router's: the server answers with a
                                // redirect to the identity provider.
                                <p class="sso">
                                    <a href="/auth/oidc/login" rel="external" class="button" data-testid="sso-login">
                                        "Sign in with single sign-on"
                                    </a>
                                </p>
                            })}
                        }
                        .into_any(),
                        Err(e) => super::common::error_view(e),
                    }
                })}
            </Suspense>
        </section>
    }
}

/// Signed in to an account that has no role yet (made at its first single sign-on): they may
/// do nothing but sign out until an admin grants a role or the identity provider maps one.
#[component]
pub fn NoRolePage() -> impl IntoView {
    let session = use_session();
    view! {
        <section class="login">
            <Suspense fallback=|| ()>
                {move || Suspend::new(async move {
                    match session.await {
                        Ok(SessionView { viewer: Some(_), .. }) => view! { <Redirect path="/"/> }.into_any(),
                        Ok(SessionView { awaiting_role: Some(username), csrf_token, .. }) => view! {
                            <h1>"No role yet"</h1>
                            <p data-testid="no-role">
                                "You are signed in as " <strong>{username}</strong>
                                ", but your account has no role yet, so there is nothing you may see or do. "
                                "Ask an admin to grant you one, then sign in again."
                            </p>
                            <form method="post" action=Logout::url() class="inline">
                                <input type="hidden" name="csrf_token" value=csrf_token/>
                                <button type="submit" data-testid="no-role-logout">"Sign out"</button>
                            </form>
                        }
                        .into_any(),
                        Ok(_) => view! { <Redirect path="/login"/> }.into_any(),
                        Err(e) => super::common::error_view(e),
                    }
                })}
            </Suspense>
        </section>
    }
}
