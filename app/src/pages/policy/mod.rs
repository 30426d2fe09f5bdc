//! The policy pages, for admins (and read-only for compliance officers): `/policy` shows the
//! version in force, the requests waiting for a second admin, a form to propose a candidate
//! ([`propose`]), a playground that routes one input under the active version and a
//! candidate ([`playground`]), and every activation with its diff ([`history`]);
//! `/policy/changes/:id` ([`change`]) shows one request with its diff, backtest and shadow
//! run, and the forms to approve or refuse it. Every change is a plain form post.

mod change;
mod diff;
mod history;
mod playground;
mod propose;

use leptos::prelude::*;
use leptos_router::hooks::use_query_map;

use super::common::{Flash, error_view, use_session};
use crate::dto::{AppError, ChangeItem, PlaygroundView, PolicyView, SessionView};
use crate::server::policy::{get_policy, policy_playground};
use crate::time::When;

pub use change::PolicyChangePage;

/// What the playground answered, when the page was asked with an input.
type Played = Result<Option<PlaygroundView>, AppError>;

/// The policy page.
#[component]
pub fn PolicyPage() -> impl IntoView {
    let query = use_query_map();
    let policy = Resource::new(|| (), |_| get_policy());
    let played = Resource::new(
        move || {
            let q = query.read();
            (q.get("input"), q.get("candidate"))
        },
        |(input, candidate)| async move {
            match input.filter(|i| !i.trim().is_empty()) {
                Some(input) => policy_playground(input, candidate).await.map(Some),
                None => Ok(None),
            }
        },
    );
    let session = use_session();
    view! {
        <h1>"Policy"</h1>
        <Flash/>
        <Suspense fallback=|| view! { <p>"Loading…"</p> }>
            {move || Suspend::new(async move {
                let csrf = match session.await {
                    Ok(SessionView { csrf_token, .. }) => csrf_token,
                    Err(e) => return error_view(e),
                };
                match policy.await {
                    Ok(view) => {
                        let played = played.await;
                        view! { <Overview view csrf played/> }.into_any()
                    }
                    Err(e) => error_view(e),
                }
            })}
        </Suspense>
    }
}

#[component]
fn Overview(view: PolicyView, csrf: String, played: Played) -> impl IntoView {
    let PolicyView {
        active,
        activation,
        pending,
        decided,
        history,
        can_propose,
        errors,
    } = view;
    let active_version = active.as_ref().map(|a| a.version.clone());
    let candidates: Vec<String> = pending.iter().map(|c| c.version.clone()).collect();
    let active = view! { <history::Active active activation/> }.into_any();
    let changes = view! { <Changes pending decided/> }.into_any();
    let propose =
        can_propose.then(|| view! { <propose::ProposeForm csrf=csrf.clone()/> }.into_any());
    let playground = view! { <playground::Playground candidates played/> }.into_any();
    let history = view! {
        <history::History history csrf can_propose active=active_version/>
    }
    .into_any();
    let errors = view! { <propose::InvalidLines errors/> }.into_any();
    view! { {errors} {active} {changes} {propose} {playground} {history} }
}

/// The requests waiting for a second admin, and the latest answered ones.
#[component]
fn Changes(pending: Vec<ChangeItem>, decided: Vec<ChangeItem>) -> impl IntoView {
    let pending = if pending.is_empty() {
        view! { <p class="empty" data-testid="policy-pending-empty">"No change waits for approval."</p> }
            .into_any()
    } else {
        view! { <ul class="policy-changes">{pending.into_iter().map(|c| view! { <ChangeLine c/> }).collect_view()}</ul> }
            .into_any()
    };
    let decided = (!decided.is_empty()).then(|| {
        view! {
            <details class="policy-decided">
                <summary>"Answered lately"</summary>
                <ul class="policy-changes">{decided.into_iter().map(|c| view! { <ChangeLine c/> }).collect_view()}</ul>
            </details>
        }
    });
    view! {
        <section data-testid="policy-pending">
            <h2>"Waiting for a second admin"</h2>
            {pending}
            {decided}
        </section>
    }
}

#[component]
fn ChangeLine(c: ChangeItem) -> impl IntoView {
    let href = format!("/policy/changes/{}", c.id);
    let status = format!("status status-{}", c.status);
    view! {
        <li data-change-id=c.id.clone()>
            <a href=href data-testid="policy-change-link"><code>{c.version}</code></a>
            " " <span class=status>{c.status.clone()}</span>
            {c.loosening.then(|| view! { " " <span class="loosens" data-testid="policy-loosens">"loosens"</span> })}
            " — proposed by " {c.proposed_by} " " <When at=c.proposed_at/>
            <div class="sub">{c.reason}</div>
        </li>
    }
}
