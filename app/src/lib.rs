//! Countersign's web front end, rendered on the server and hydrated in the browser.
//!
//! Pages live in [`pages`], the server functions they call in [`server`], the data shapes that
//! cross the wire in [`dto`], times as people read them in [`time`], and — on the server only —
//! the [`ports`] the root crate implements. This crate never touches the database, sessions or
//! password hashes itself, so none of that reaches the wasm build.

// The hydrated pages' view types nest deeply (a table of rows of lists of times): the
// compiler's default query depth of 128 overflows computing their layout in the wasm build.
#![recursion_limit = "256"]

pub mod components;
pub mod dto;
pub mod pages;
#[cfg(feature = "ssr")]
pub mod ports;
#[allow(
    missing_docs,
    reason = "the #[server] macro generates the argument structs"
)]
pub mod server;
pub mod time;

use leptos::prelude::*;
use leptos_meta::{MetaTags, Stylesheet, Title, provide_meta_context};
use leptos_router::components::{Route, Router, Routes};
use leptos_router::{SsrMode, path};

use pages::{
    AccountPage, AdminGatewayPage, AdminTokensPage, AdminUsersPage, AdminWebhooksPage,
    AuditTrailPage, ChartsPage, GrantsPage, Header, InsightsPage, LoginPage, NoRolePage, NotFound,
    PolicyChangePage, PolicyPage, ProposalPage, QueuePage, RunsPage, TimelinePage,
};

/// The HTML document around the app, rendered on the server.
pub fn shell(options: LeptosOptions) -> impl IntoView {
    view! {
        <!DOCTYPE html>
        <html lang="en">
            <head>
                <meta charset="utf-8"/>
                <meta name="viewport" content="width=device-width, initial-scale=1"/>
                <link rel="icon" href="/favicon.svg" type="image/svg+xml"/>
                <AutoReload options=options.clone()/>
                <HydrationScripts options/>
                // The browser's passkey prompts (account page, step-up approvals).
                <script src="/passkey.js" defer nonce=leptos::nonce::use_nonce()></script>
                <MetaTags/>
            </head>
            <body>
                <App/>
            </body>
        </html>
    }
}

/// The application: a header and its pages. Every page renders completely on the server
/// (`SsrMode::Async`), so it works without JavaScript and redirects happen before any byte
/// is sent.
#[component]
pub fn App() -> impl IntoView {
    provide_meta_context();
    let session = Resource::new(|| (), |_| server::session_info());
    provide_context(session);

    view! {
        <Stylesheet id="leptos" href="/pkg/countersign.css"/>
        <Title text="Countersign"/>
        <Router>
            <Header/>
            <main>
                <Routes fallback=|| view! { <NotFound/> }>
                    <Route path=path!("/login") view=LoginPage ssr=SsrMode::Async/>
                    <Route path=path!("/no-role") view=NoRolePage ssr=SsrMode::Async/>
                    <Route path=path!("/") view=QueuePage ssr=SsrMode::Async/>
                    <Route path=path!("/proposals/:id") view=ProposalPage ssr=SsrMode::Async/>
                    <Route path=path!("/runs") view=RunsPage ssr=SsrMode::Async/>
                    <Route path=path!("/grants") view=GrantsPage ssr=SsrMode::Async/>
                    <Route path=path!("/account") view=AccountPage ssr=SsrMode::Async/>
                    <Route path=path!("/admin/users") view=AdminUsersPage ssr=SsrMode::Async/>
                    <Route path=path!("/admin/tokens") view=AdminTokensPage ssr=SsrMode::Async/>
                    <Route path=path!("/admin/webhooks") view=AdminWebhooksPage ssr=SsrMode::Async/>
                    <Route path=path!("/admin/gateway") view=AdminGatewayPage ssr=SsrMode::Async/>
                    <Route path=path!("/audit") view=AuditTrailPage ssr=SsrMode::Async/>
                    <Route path=path!("/audit/charts") view=ChartsPage ssr=SsrMode::Async/>
                    <Route path=path!("/insights") view=InsightsPage ssr=SsrMode::Async/>
                    <Route path=path!("/audit/proposals/:id") view=TimelinePage ssr=SsrMode::Async/>
                    <Route path=path!("/policy") view=PolicyPage ssr=SsrMode::Async/>
                    <Route path=path!("/policy/changes/:id") view=PolicyChangePage ssr=SsrMode::Async/>
                </Routes>
            </main>
        </Router>
    }
}

/// Entry point of the wasm bundle: hydrates the server-rendered page.
#[cfg(feature = "hydrate")]
#[wasm_bindgen::prelude::wasm_bindgen]
pub fn hydrate() {
    console_error_panic_hook::set_once();
    leptos::mount::hydrate_body(App);
}
