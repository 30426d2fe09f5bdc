//! Standing grants: who made each, for which agent and tool, what may differ, its uses and time
//! left, and a revoke button (a CSRF-checked form post that works without JavaScript).

use leptos::prelude::*;
use leptos::server_fn::ServerFn;

use super::common::{Flash, with_csrf};
use crate::components::visible::{HiddenFlag, Shown};
use crate::dto::{GrantView, GrantsView};
use crate::server::grants::{RevokeGrant, list_grants};
use crate::time::When;

/// The grants page.
#[component]
pub fn GrantsPage() -> impl IntoView {
    let grants = Resource::new(|| (), |_| list_grants());
    view! {
        <h1>"Standing grants"</h1>
        <p class="sub">
            "Each lets one agent's calls of one tool, with the approved parameters (except what \
             the reviewer freed or bounded), through without asking, until its time or uses run \
             out. Revoking one stops it at once, on every instance."
        </p>
        <Flash/>
        {with_csrf(grants, |view, csrf| view! { <Grants view csrf/> })}
    }
}

#[component]
fn Grants(view: GrantsView, csrf: String) -> impl IntoView {
    let GrantsView {
        live,
        ended,
        can_revoke,
    } = view;
    let live = if live.is_empty() {
        view! { <p class="empty" data-testid="grants-empty">"No live grants."</p> }.into_any()
    } else {
        live.into_iter()
            .map(|g| view! { <Grant g csrf=csrf.clone() can_revoke/> })
            .collect_view()
            .into_any()
    };
    let ended = ended
        .into_iter()
        .map(|g| view! { <Grant g csrf=String::new() can_revoke=false/> })
        .collect_view();
    view! {
        <section data-testid="grants-live">
            <h2>"Live"</h2>
            {live}
        </section>
        <section data-testid="grants-ended">
            <h2>"Ended"</h2>
            {ended}
        </section>
    }
}

#[component]
fn Grant(g: GrantView, csrf: String, can_revoke: bool) -> impl IntoView {
    let anchor = format!("grant-{}", g.id);
    let proposal = format!("/proposals/{}", g.proposal_id);
    let uses = match g.max_uses {
        Some(max) => format!("{} of {max}", g.uses),
        None => format!("{} (no limit)", g.uses),
    };
    let live = g.state == "live";
    let id = g.id.clone();
    view! {
        <article class="grant" id=anchor data-testid="grant-row" data-grant-id=g.id.clone()>
            <HiddenFlag count=g.hidden/>
            <dl class="facts">
                <dt>"Agent"</dt><dd data-testid="grant-agent">{g.agent}</dd>
                <dt>"Tool"</dt><dd><code><Shown text=g.tool/></code> " · " {g.domain}</dd>
                <dt>"Made by"</dt><dd data-testid="grant-by">{g.granted_by} " " <When at=g.created_at/>
                    " approving " <a href=proposal>"this proposal"</a></dd>
                <dt>"Covers"</dt><dd data-testid="grant-scope"><Shown text=g.scope/></dd>
                <dt>"Approved parameters"</dt><dd><pre><Shown text=g.parameters/></pre></dd>
                <dt>"Uses"</dt><dd data-testid="grant-uses">{uses}</dd>
                <dt>{if live { "Ends" } else { "State" }}</dt>
                <dd data-testid="grant-state">
                    {(!live).then(|| g.state.clone())}
                    {g.ended_by.map(|by| format!(" by {by}"))}
                    {live.then(|| view! { <When at=g.expires_at/> })}
                </dd>
            </dl>
            {(can_revoke && live).then(|| view! {
                <form method="post" action=RevokeGrant::url() class="reject">
                    <input type="hidden" name="csrf_token" value=csrf/>
                    <input type="hidden" name="id" value=id/>
                    <button type="submit" class="reject" data-testid="grant-revoke">"Revoke"</button>
                </form>
            })}
        </article>
    }
}
