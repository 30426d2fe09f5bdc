//! `/audit/proposals/:id`: one proposal's story from the trail, oldest first — submission and
//! routing (with the policy version used), each approval, expiry or decision, the command's
//! lease and report, and the outcome — in bounded pages.

use leptos::prelude::*;
use leptos_router::hooks::{use_params_map, use_query_map};

use super::audit::AuditNav;
use super::common::error_view;
use crate::components::events::EventTable;
use crate::dto::TimelineView;
use crate::server::audit::get_audit_timeline;
use crate::time::When;

/// The timeline page.
#[component]
pub fn TimelinePage() -> impl IntoView {
    let params = use_params_map();
    let query = use_query_map();
    let timeline = Resource::new(
        move || {
            let q = query.read();
            (
                params.read().get("id").unwrap_or_default(),
                q.get("before"),
                q.get("after"),
            )
        },
        |(id, before, after)| get_audit_timeline(id, before, after),
    );
    view! {
        <h1>"Proposal timeline"</h1>
        <AuditNav current="timeline"/>
        <Suspense fallback=|| view! { <p>"Loading…"</p> }>
            {move || Suspend::new(async move {
                match timeline.await {
                    Ok(t) => view! { <Timeline t/> }.into_any(),
                    Err(e) => error_view(e),
                }
            })}
        </Suspense>
    }
}

#[component]
fn Timeline(t: TimelineView) -> impl IntoView {
    let base = format!("/audit/proposals/{}", t.id);
    let earlier = t.earlier.map(|s| {
        let href = format!("{base}?before={s}");
        view! { <a href=href data-testid="timeline-earlier">"← Earlier"</a> }
    });
    let later = t.later.map(|s| {
        let href = format!("{base}?after={s}");
        view! { <a href=href data-testid="timeline-later">"Later →"</a> }
    });
    let status_class = format!("status status-{}", t.status);
    let proposal_href = format!("/proposals/{}", t.id);
    let decided_at = t.decided_at.map(|at| view! { ", " <When at/> });
    view! {
        <section class="timeline-facts" data-testid="timeline">
            <dl>
                <dt>"Proposal"</dt>
                <dd><a href=proposal_href><code>{t.id.clone()}</code></a></dd>
                <dt>"Status"</dt>
                <dd><span class=status_class data-testid="timeline-status">{t.status}</span></dd>
                <dt>"Proposed by"</dt><dd>{t.agent}</dd>
                <dt>"Tool"</dt><dd><code>{t.tool}</code> " · " {t.domain}</dd>
                <dt>"Submitted"</dt><dd><When at=t.submitted_at/></dd>
                <dt>"Policy version"</dt>
                <dd data-testid="timeline-policy"><code>{t.policy_version.unwrap_or_else(|| "not recorded".into())}</code></dd>
                <dt>"Routing"</dt><dd>{t.routing.unwrap_or_else(|| "—".into())}</dd>
                <dt>"Decision"</dt>
                <dd data-testid="timeline-decision">{t.decided.unwrap_or_else(|| "none yet".into())}{decided_at}</dd>
                <dt>"Command"</dt>
                <dd>{t.command_id.unwrap_or_else(|| "none".to_owned())}</dd>
            </dl>
        </section>
        <p class="pager">{earlier}" "{later}</p>
        <EventTable events=t.events empty="No events on this page."/>
    }
}
