//! The review queue: every pending proposal the reviewer may decide, filtered by agent,
//! domain, risk, tool, route and regime, ordered by age, risk or time left, a page at a time.
//! The filters are a plain `GET` form whose fields are the query string's public names
//! (`?agent=&domain=&risk=&tool=&route=&compliance=&sort=`), so a view can be bookmarked and
//! linked, and the page works without JavaScript.
//!
//! Rows can be chosen (a checkbox each, or `x` on the selected row) and approved or rejected
//! together with one reason: each is still its own decision, checked again by the server, and
//! the page then says which were decided and which were not, and why.

use leptos::prelude::*;
use leptos::server_fn::ServerFn;
use leptos_router::hooks::use_query_map;

use super::common::{Flash, error_view, use_session};
use crate::components::keys::{KeyHelp, use_queue_keys};
use crate::components::live::use_desk_changes;
use crate::components::visible::{HiddenFlag, Shown};
use crate::dto::{BatchOutcome, QueueFilterView, QueueItem, QueueParams, QueueView};
use crate::server::{DecideBatch, list_queue};
use crate::time::When;

/// The orders on offer: query value and label.
const SORTS: &[(&str, &str)] = &[
    ("oldest", "Waiting longest"),
    ("newest", "Newest"),
    ("risk", "Highest risk"),
    ("expiry", "Expiring soonest"),
];

/// The queue page.
#[component]
pub fn QueuePage() -> impl IntoView {
    let query = use_query_map();
    let help = RwSignal::new(false);
    let ready = use_queue_keys(help);
    let queue = Resource::new(
        move || {
            let q = query.read();
            let get = |k: &str| q.get(k).filter(|v| !v.is_empty());
            QueueParams {
                agent: get("agent"),
                domain: get("domain"),
                risk: get("risk"),
                tool: get("tool"),
                route: get("route"),
                compliance: get("compliance"),
                sort: get("sort"),
                after: get("after"),
            }
        },
        |p: QueueParams| {
            list_queue(
                p.agent,
                p.domain,
                p.risk,
                p.tool,
                p.route,
                p.compliance,
                p.sort,
                p.after,
            )
        },
    );
    // Refetched when the desk changes: new proposals, decisions, expiries; the stream starts
    // at the head the rows were read at.
    let seen = move || {
        queue.with(|page| {
            page.as_ref()
                .and_then(|page| page.as_ref().ok())
                .map(|view| view.head)
        })
    };
    let live = use_desk_changes(seen, move || queue.refetch());
    let session = use_session();
    view! {
        <h1>"Waiting for a decision"</h1>
        <p class="hint" data-testid="queue-keys" data-ready=move || ready.get().then_some("1") data-live=move || live.get().then_some("1")>"Keys: " <kbd>"j"</kbd> " " <kbd>"k"</kbd> " move, " <kbd>"Enter"</kbd> " opens, " <kbd>"?"</kbd> " lists all."</p>
        <KeyHelp help/>
        <Flash/>
        <BatchReport/>
        // A transition keeps the rows on screen while a live change refetches them.
        <Transition fallback=|| view! { <p>"Loading…"</p> }>
            {move || Suspend::new(async move {
                let csrf = session.await.map(|s| s.csrf_token).unwrap_or_default();
                match queue.await {
                    Ok(view) => view! { <Queue view csrf/> }.into_any(),
                    Err(e) => error_view(e),
                }
            })}
        </Transition>
    }
}

/// What the last batch came to, from the address the batch redirected to.
#[component]
fn BatchReport() -> impl IntoView {
    let query = use_query_map();
    move || {
        let q = query.read();
        let outcome = BatchOutcome::from_query(
            q.get("batch").as_deref(),
            q.get("done").as_deref(),
            q.get("refused").as_deref(),
        )?;
        let words = match (outcome.verdict.as_str(), outcome.decided) {
            ("approved", 1) => "Approved 1 proposal.".to_owned(),
            ("approved", n) => format!("Approved {n} proposals."),
            (_, 1) => "Rejected 1 proposal; its agent sees your reason.".to_owned(),
            (_, n) => format!("Rejected {n} proposals; their agents see your reason."),
        };
        let refused = (!outcome.refused.is_empty()).then(|| {
            view! {
                <p>"Not decided:"</p>
                <ul data-testid="batch-refused">
                    {outcome.refused.into_iter().map(|(id, notice)| {
                        let (href, attr) = (format!("/proposals/{id}"), id.clone());
                        view! {
                            <li data-proposal-id=attr data-reason=notice.code()>
                                <a href=href><code>{id}</code></a>" — "{notice.text()}
                            </li>
                        }
                    }).collect_view()}
                </ul>
            }
        });
        Some(view! {
            <section class="flash notice" role="status" data-testid="batch-report" data-decided=outcome.decided.to_string()>
                <p>{words}</p>
                {refused}
            </section>
        })
    }
}

#[component]
fn Queue(view: QueueView, csrf: String) -> impl IntoView {
    let QueueView {
        items,
        matching,
        total,
        filters,
        sort,
        next,
        first,
        limited_to,
        head: _,
    } = view;
    let filtered = filters.iter().any(|f| f.chosen.is_some());
    let count = if filtered {
        format!("{matching} of {total} pending match these filters")
    } else {
        format!("{total} pending")
    };
    let limited = limited_to.map(|ds| {
        view! { <p class="note" data-testid="queue-limited">"You review the domains " {ds.join(", ")} " only."</p> }
    });
    let body = if items.is_empty() {
        let words = if filtered {
            "Nothing waiting matches these filters."
        } else {
            "Nothing is waiting for review."
        };
        view! { <p class="empty" data-testid="queue-empty">{words}</p> }.into_any()
    } else {
        view! { <QueueTable items csrf/> }.into_any()
    };
    view! {
        {limited}
        <FilterForm filters sort filtered/>
        <p class="count" data-testid="queue-count" role="status">{count}</p>
        {body}
        <nav class="pager" aria-label="Queue pages">
            {first.map(|href| view! { <a href=href data-testid="queue-first">"← First page"</a> })}
            {next.map(|href| view! { <a href=href rel="next" data-testid="queue-next">"Next page →"</a> })}
        </nav>
    }
}

#[component]
fn FilterForm(filters: Vec<QueueFilterView>, sort: String, filtered: bool) -> impl IntoView {
    view! {
        <form method="get" action="/" class="filters" data-testid="queue-filters" aria-label="Filter the queue">
            {filters.into_iter().map(|f| view! { <FilterSelect f/> }).collect_view()}
            <label>
                "Order"
                <select name="sort" data-testid="queue-sort">
                    {SORTS
                        .iter()
                        .map(|(value, label)| {
                            view! { <option value=*value selected=sort == *value>{*label}</option> }
                        })
                        .collect_view()}
                </select>
            </label>
            <button type="submit" data-testid="queue-apply">"Show"</button>
            {filtered.then(|| view! { <a href="/" data-testid="queue-clear">"Clear filters"</a> })}
        </form>
    }
}

#[component]
fn FilterSelect(f: QueueFilterView) -> impl IntoView {
    let testid = format!("filter-{}", f.name);
    let chosen = f.chosen.clone().unwrap_or_default();
    // A chosen value no pending proposal has any more stays on offer, with 0.
    let mut options = f.options;
    if !chosen.is_empty() && !options.iter().any(|(v, _)| *v == chosen) {
        options.push((chosen.clone(), 0));
    }
    view! {
        <label>
            {f.label}
            <select name=f.name data-testid=testid>
                <option value="">"Any"</option>
                {options
                    .into_iter()
                    .map(|(value, n)| {
                        let selected = value == chosen;
                        let label = format!("{value} ({n})");
                        view! { <option value=value selected=selected>{label}</option> }
                    })
                    .collect_view()}
            </select>
        </label>
    }
}

/// The rows, in one form with the batch's controls: a checkbox per row (`ids[N]`), one
/// reason, approve or reject.
#[component]
fn QueueTable(items: Vec<QueueItem>, csrf: String) -> impl IntoView {
    let own_page = items.iter().any(|i| !i.batch_approvable);
    let rows = (items.into_iter().enumerate())
        .map(|(n, item)| view! { <QueueRow item n/> })
        .collect_view();
    view! {
        <form method="post" action=DecideBatch::url() data-testid="batch-form">
        <input type="hidden" name="csrf_token" value=csrf/>
        <table class="queue">
            <thead>
                <tr>
                    <th scope="col"><span class="sr-only">"Choose"</span></th>
                    <th scope="col">"Intent"</th>
                    <th scope="col">"Tool"</th>
                    <th scope="col">"Target"</th>
                    <th scope="col">"Affected data"</th>
                    <th scope="col">"Rollback"</th>
                    <th scope="col">"Risk"</th>
                    <th scope="col">"Waiting"</th>
                </tr>
            </thead>
            <tbody>{rows}</tbody>
        </table>
        <fieldset class="batch" data-testid="batch">
            <legend>"Decide the chosen proposals together"</legend>
            <label>"Reason (a rejection needs one; the agents see it) "
                <textarea name="reason" maxlength="2000" rows="2" data-testid="batch-reason"></textarea>
            </label>
            <div class="batch-buttons">
                <button type="submit" name="verdict" value="approved" data-testid="batch-approve">"Approve chosen"</button>
                <button type="submit" name="verdict" value="rejected" class="reject" data-testid="batch-reject">"Reject chosen"</button>
            </div>
            {own_page.then(|| view! {
                <p class="hint">"Rows marked " <span class="tag">"own page"</span> " need the target's name typed or more than one approver: approve them on their own page (they may be rejected here)."</p>
            })}
        </fieldset>
        </form>
    }
}

#[component]
fn QueueRow(item: QueueItem, n: usize) -> impl IntoView {
    let href = format!("/proposals/{}", item.id);
    let risk_class = format!("risk risk-{}", item.risk);
    let targets = if item.targets.is_empty() {
        "—".to_owned()
    } else {
        item.targets.join(", ")
    };
    let flag = view! { <HiddenFlag count=item.hidden/> };
    let compliance = (!item.compliance.is_empty())
        .then(|| view! { <span class="tag" data-testid="queue-compliance">{item.compliance.join(" ")}</span> });
    let expires = item
        .expires
        .map(|at| view! { <div class="sub" data-testid="queue-expires"><When at prefix="expires " past_prefix="expired "/></div> });
    let choose = format!("Choose: {}", item.summary);
    let own_page = (!item.batch_approvable).then(|| {
        view! { <span class="tag" title="Approve it on its own page" data-testid="queue-own-page">"own page"</span> }
    });
    view! {
        <tr data-testid="queue-row" data-proposal-id=item.id.clone() data-batch-approve=item.batch_approvable.to_string()>
            <td data-label="Choose" class="choose">
                <input type="checkbox" name=format!("ids[{n}]") value=item.id.clone() data-testid="queue-select" aria-label=choose/>
            </td>
            <td>
                <a href=href><Shown text=item.summary/></a>
                {flag}
                <div class="sub">
                    <span data-testid="queue-agent">{item.proposed_by}</span>
                    " · " <span data-testid="queue-domain">{item.domain}</span>
                    " · " <span data-testid="queue-route">{item.route}</span>
                    " " {compliance} {own_page}
                </div>
            </td>
            <td data-label="Tool" data-testid="queue-tool"><code><Shown text=item.tool/></code></td>
            <td data-label="Target" data-testid="queue-target"><Shown text=targets/></td>
            <td data-label="Affected data" data-testid="queue-affected"><code class="preview"><Shown text=item.affected/></code></td>
            <td data-label="Rollback" data-testid="queue-rollback">{item.rollback}</td>
            // The level is written out, so colour is never the only sign of risk.
            <td data-label="Risk" data-testid="queue-risk"><span class=risk_class>{item.risk}</span></td>
            <td data-label="Waiting" data-testid="queue-age"><When at=item.arrived/>{expires}</td>
        </tr>
    }
}
