//! What every page shares: the session resource, the header, the flash line a redirect asks
//! for, the not-found page and how a server function's error is shown. The pages name this
//! file, never their parent's re-exports.

use leptos::prelude::*;
use leptos::server_fn::ServerFn;
use leptos_router::hooks::use_query_map;

use crate::dto::{AppError, Notice, Role, SessionView};
use crate::server::Logout;

/// A page's content that has forms: "Loading…", then `render(data, csrf)` with the session's
/// CSRF token, or the error (of the session or of the data) as every page shows one.
pub fn with_csrf<T, V>(
    data: Resource<Result<T, AppError>>,
    render: fn(T, String) -> V,
) -> impl IntoView
where
    T: Clone + Send + Sync + serde::Serialize + serde::de::DeserializeOwned + 'static,
    V: IntoView + 'static,
{
    let session = use_session();
    view! {
        <Suspense fallback=|| view! { <p>"Loading…"</p> }>
            {move || Suspend::new(async move {
                let csrf = match session.await {
                    Ok(SessionView { csrf_token, .. }) => csrf_token,
                    Err(e) => return error_view(e),
                };
                match data.await {
                    Ok(view) => render(view, csrf).into_any(),
                    Err(e) => error_view(e),
                }
            })}
        </Suspense>
    }
}

/// The session resource the app provides to every page.
pub type SessionResource = Resource<Result<SessionView, AppError>>;

/// The session resource from context.
pub fn use_session() -> SessionResource {
    expect_context::<SessionResource>()
}

/// Product name, who is signed in, and the sign-out button.
#[component]
pub fn Header() -> impl IntoView {
    let session = use_session();
    view! {
        <header class="top">
            <a class="brand" href="/">"Countersign"</a>
            <Suspense fallback=|| ()>
                {move || Suspend::new(async move {
                    match session.await {
                        Ok(SessionView { viewer: Some(viewer), csrf_token, .. }) => view! {
                            <nav>
                                <a href="/">"Queue"</a>
                                <a href="/runs" data-testid="nav-runs">"Runs"</a>
                                <a href="/grants" data-testid="nav-grants">"Grants"</a>
                                {matches!(viewer.role, Role::Compliance | Role::Admin)
                                    .then(|| view! { <a href="/audit" data-testid="nav-audit">"Audit"</a> })}
                                {matches!(viewer.role, Role::Compliance | Role::Admin)
                                    .then(|| view! { <a href="/policy" data-testid="nav-policy">"Policy"</a> })}
                                {(viewer.role == Role::Admin)
                                    .then(|| view! { <a href="/admin/users" data-testid="nav-admin">"Admin"</a> })}
                                <a class="who" href="/account" data-testid="viewer">
                                    {viewer.username} " · " {viewer.role.as_str()}
                                </a>
                                <form method="post" action=Logout::url() class="inline">
                                    <input type="hidden" name="csrf_token" value=csrf_token/>
                                    <button type="submit" class="link" data-testid="logout">"Sign out"</button>
                                </form>
                            </nav>
                        }
                        .into_any(),
                        _ => ().into_any(),
                    }
                })}
            </Suspense>
        </header>
    }
}

/// Words for the notice and error codes that redirects carry in the query string.
fn flash_text(code: &str) -> &'static str {
    Notice::parse(code).map_or(
        "Something happened that this page cannot describe.",
        Notice::text,
    )
}

/// The notice or error a redirect asked this page to show.
#[component]
pub fn Flash() -> impl IntoView {
    let query = use_query_map();
    move || {
        let q = query.read();
        if let Some(code) = q.get("error") {
            view! { <p class="flash error" role="alert" data-testid="flash-error">{flash_text(&code)}</p> }.into_any()
        } else if let Some(code) = q.get("notice") {
            view! { <p class="flash notice" role="status" data-testid="flash-notice">{flash_text(&code)}</p> }.into_any()
        } else {
            ().into_any()
        }
    }
}

/// Shown for unknown paths.
#[component]
pub fn NotFound() -> impl IntoView {
    #[cfg(feature = "ssr")]
    {
        if let Some(resp) = use_context::<leptos_axum::ResponseOptions>() {
            resp.set_status(axum::http::StatusCode::NOT_FOUND);
        }
    }
    view! {
        <h1>"Not found"</h1>
        <p><a href="/">"Back to the queue"</a></p>
    }
}

/// Renders a server-function error: sign-in redirect, a forbidden page (status 403), or a
/// message.
pub fn error_view(e: AppError) -> AnyView {
    match e {
        AppError::Unauthenticated => {
            view! { <leptos_router::components::Redirect path="/login"/> }.into_any()
        }
        AppError::Forbidden(why) => {
            #[cfg(feature = "ssr")]
            if let Some(resp) = use_context::<leptos_axum::ResponseOptions>() {
                resp.set_status(axum::http::StatusCode::FORBIDDEN);
            }
            view! {
                <section class="forbidden" data-testid="forbidden">
                    <h2>"Forbidden"</h2>
                    <p class="flash error" role="alert">{why}</p>
                    <p><a href="/">"Back to the queue"</a></p>
                </section>
            }
            .into_any()
        }
        other => {
            // The page's status says what went wrong too: 404 for what the viewer may not see
            // or that does not exist, 422 for a bad query string, 503 when the database cannot
            // take it now.
            #[cfg(feature = "ssr")]
            if let Some(resp) = use_context::<leptos_axum::ResponseOptions>() {
                match other {
                    AppError::NotFound => resp.set_status(axum::http::StatusCode::NOT_FOUND),
                    AppError::Invalid(_) => {
                        resp.set_status(axum::http::StatusCode::UNPROCESSABLE_ENTITY);
                    }
                    AppError::Unavailable => {
                        resp.set_status(axum::http::StatusCode::SERVICE_UNAVAILABLE);
                    }
                    _ => {}
                }
            }
            view! { <p class="flash error" role="alert" data-testid="flash-error">{other.to_string()}</p> }.into_any()
        }
    }
}
