//! The sign-in page.

use leptos::prelude::*;
use leptos::server_fn::ServerFn;
use leptos_router::components::Redirect;

use super::{Flash, use_session};
use crate::dto::SessionView;
use crate::server::Login;

/// Username and password form; already signed-in people go to the queue.
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
                        Ok(SessionView { csrf_token, .. }) => view! {
                            <form method="post" action=Login::url() class="stack">
                                <input type="hidden" name="csrf_token" value=csrf_token/>
                                <label>"Username" <input name="username" autocomplete="username" required/></label>
                                <label>"Password"
                                    <input name="password" type="password" autocomplete="current-password" required/>
                                </label>
                                <button type="submit">"Sign in"</button>
                            </form>
                        }
                        .into_any(),
                        Err(e) => super::error_view(e),
                    }
                })}
            </Suspense>
        </section>
    }
}
