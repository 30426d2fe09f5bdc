//! `/audit`: every event, newest first, filtered from the query string (a GET form that works
//! without JavaScript and can be bookmarked), in keyset pages; the chain's head, latest
//! checkpoint and last verification with a "Verify now" form; and the export download of the
//! current selection (a form that posts the filters with the CSRF token).

use leptos::prelude::*;
use leptos::server_fn::ServerFn;
use leptos_router::hooks::use_query_map;

use super::common::{Flash, error_view, use_session};
use crate::components::events::EventTable;
use crate::dto::{AuditPage, AuditQuery, DECISIONS, EVENT_KINDS, RISKS, SessionView, TrailStatus};
use crate::server::audit::{VerifyAuditTrail, get_audit_trail};
use crate::time::When;

/// Links between the compliance pages.
#[component]
pub fn AuditNav(
    /// The page shown: `trail`, `charts` or `insights`.
    current: &'static str,
) -> impl IntoView {
    let class = move |name: &str| if name == current { "current" } else { "" };
    view! {
        <nav class="subnav">
            <a href="/audit" class=class("trail")>"Trail"</a>
            <a href="/audit/charts" class=class("charts")>"Charts"</a>
            <a href="/insights" class=class("insights") data-testid="nav-insights">"Insights"</a>
        </nav>
    }
}

/// The audit trail page.
#[component]
pub fn AuditTrailPage() -> impl IntoView {
    let query = use_query_map();
    let current = move || AuditQuery::from_lookup(|k| query.read().get(k));
    let trail = Resource::new(current, get_audit_trail);
    let session = use_session();
    view! {
        <h1>"Audit trail"</h1>
        <AuditNav current="trail"/>
        <Flash/>
        <Suspense fallback=|| view! { <p>"Loading…"</p> }>
            {move || Suspend::new(async move {
                let csrf = match session.await {
                    Ok(SessionView { csrf_token, .. }) => csrf_token,
                    Err(e) => return error_view(e),
                };
                match trail.await {
                    Ok(page) => view! { <Trail page q=current() csrf/> }.into_any(),
                    Err(e) => error_view(e),
                }
            })}
        </Suspense>
    }
}

#[component]
fn Trail(page: AuditPage, q: AuditQuery, csrf: String) -> impl IntoView {
    let export = view! { <ExportForm q=q.clone() csrf=csrf.clone()/> };
    let pager = pager(&page, &q);
    let searched = page.searched_to.map(|s| {
        view! {
            <p class="note" data-testid="audit-searched">
                "This page looked back as far as seq " {s}
                " and found no more matches there; older events continue on the next page."
            </p>
        }
    });
    view! {
        <ChainStatus status=page.status csrf/>
        <FilterForm q=q.clone()/>
        {export}
        {pager.clone()}
        <EventTable events=page.events empty="No events match these filters."/>
        {searched}
        {pager}
    }
}

/// The download of the current selection: a form that posts the filters with the CSRF token
/// (an export is recorded in the trail, so no GET makes one).
#[component]
fn ExportForm(q: AuditQuery, csrf: String) -> impl IntoView {
    let filters = (q.filters().into_iter())
        .filter_map(|(name, value)| {
            let value = value.filter(|v| !v.trim().is_empty())?.to_owned();
            Some(view! { <input type="hidden" name=name value=value/> })
        })
        .collect_view();
    view! {
        <form method="post" action="/audit/export.zip" class="actions" data-testid="audit-export">
            <input type="hidden" name="csrf_token" value=csrf/>
            {filters}
            <button type="submit" class="button">"Download this selection (.zip)"</button>
            " events.jsonl, events.csv and a manifest with hashes and the covering checkpoint"
        </form>
    }
}

/// "← Newer" and "Older →", keeping the filters.
fn pager(page: &AuditPage, q: &AuditQuery) -> impl IntoView + Clone + use<> {
    let newer = page.newer.map(|s| {
        let href = q.href("/audit", &[("after", s.to_string())]);
        view! { <a href=href data-testid="audit-newer">"← Newer"</a> }
    });
    let older = page.older.map(|s| {
        let href = q.href("/audit", &[("before", s.to_string())]);
        view! { <a href=href data-testid="audit-older">"Older →"</a> }
    });
    let newest = (page.newer.is_some()).then(|| {
        let href = q.href("/audit", &[]);
        view! { <a href=href>"Newest"</a> }
    });
    view! { <p class="pager">{newest}" "{newer}" "{older}</p> }
}

/// The filter form: a plain GET to `/audit`, so the filters live in the query string.
#[component]
fn FilterForm(q: AuditQuery) -> impl IntoView {
    let text = |name: &'static str, label: &'static str, placeholder: &'static str| {
        view! {
            <label>{label}
                <input type="text" name=name value=q.value(name) placeholder=placeholder maxlength="128"/>
            </label>
        }
    };
    let choice = |name: &'static str, label: &'static str, options: &'static [&'static str]| {
        let current = q.value(name);
        let options = options
            .iter()
            .map(|o| view! { <option value=*o selected=current == *o>{*o}</option> })
            .collect_view();
        view! {
            <label>{label}
                <select name=name>
                    <option value="">"any"</option>
                    {options}
                </select>
            </label>
        }
    };
    view! {
        <form method="get" action="/audit" class="filters" data-testid="audit-filters">
            <label>"From (UTC)"
                <input type="text" name="from" value=q.value("from") placeholder="YYYY-MM-DD[THH:MM]"/>
            </label>
            <label>"To (UTC, inclusive)"
                <input type="text" name="to" value=q.value("to") placeholder="YYYY-MM-DD[THH:MM]"/>
            </label>
            {choice("kind", "Event", EVENT_KINDS)}
            {text("actor", "Actor", "username, agent or executor")}
            {text("agent", "Agent", "")}
            {text("tool", "Tool", "")}
            {text("domain", "Domain", "")}
            {choice("decision", "Decision", DECISIONS)}
            {choice("risk", "Risk", RISKS)}
            <div class="buttons">
                <button type="submit" data-testid="audit-filter">"Filter"</button>
                <a href="/audit">"Clear"</a>
            </div>
        </form>
    }
}

/// The chain's head, its latest signed checkpoint and the last verification, with the form
/// that verifies now.
#[component]
fn ChainStatus(status: TrailStatus, csrf: String) -> impl IntoView {
    let checkpoint = match status.checkpoint {
        Some(cp) => view! {
            <dd data-testid="audit-checkpoint">"seq " {cp.seq}
                {cp.at.map(|at| view! { ", signed " <When at/> })}
                <br/>"public key " <code class="hash">{cp.public_key}</code></dd>
        }
        .into_any(),
        None => view! { <dd data-testid="audit-checkpoint">"none signed yet"</dd> }.into_any(),
    };
    let verification = match status.verification {
        Some(v) if v.ok => view! {
            <dd class="verified ok" data-testid="audit-verification">
                "Verified " {v.count} " events up to seq " {v.head_seq} " " <When at=v.at/> " (by " {v.by} ")"
                <br/>"head " <code class="hash">{v.head_hash}</code>
            </dd>
        }
        .into_any(),
        Some(v) => view! {
            <dd class="verified bad" data-testid="audit-verification" role="alert">
                "FAILED " <When at=v.at/> " (by " {v.by} "): " {v.message}
                {v.first_bad_seq.map(|s| view! { <br/>"first bad seq " <strong data-testid="audit-first-bad">{s}</strong> })}
            </dd>
        }
        .into_any(),
        None => view! {
            <dd data-testid="audit-verification">"not verified since the server started"</dd>
        }
        .into_any(),
    };
    view! {
        <section class="chain" data-testid="audit-status">
            <dl>
                <dt>"Head"</dt>
                <dd data-testid="audit-head">"seq " {status.head_seq} <br/><code class="hash">{status.head_hash}</code></dd>
                <dt>"Latest signed checkpoint"</dt>
                {checkpoint}
                <dt>"Last verification"</dt>
                {verification}
            </dl>
            <form method="post" action=VerifyAuditTrail::url() class="inline">
                <input type="hidden" name="csrf_token" value=csrf/>
                <button type="submit" data-testid="audit-verify">"Verify now"</button>
            </form>
        </section>
    }
}
