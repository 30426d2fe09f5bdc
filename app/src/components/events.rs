//! The table of audit events the compliance pages share: seq, time (as people read it, the
//! exact UTC time on hover), actor, kind, subject (linked to its proposal's timeline), status
//! change, facets and compact details.

use leptos::prelude::*;

use crate::components::visible::{HiddenFlag, Shown};
use crate::dto::AuditEventView;
use crate::time::When;

/// Audit events in the order given.
#[component]
pub fn EventTable(
    /// The events.
    events: Vec<AuditEventView>,
    /// Shown when there are none.
    empty: &'static str,
) -> impl IntoView {
    if events.is_empty() {
        return view! { <p class="empty" data-testid="audit-empty">{empty}</p> }.into_any();
    }
    let rows = events
        .into_iter()
        .map(|e| view! { <EventRow e/> })
        .collect_view();
    view! {
        <table class="events" data-testid="audit-events">
            <thead>
                <tr>
                    <th>"Seq"</th>
                    <th>"Time"</th>
                    <th>"Actor"</th>
                    <th>"Event"</th>
                    <th>"Subject"</th>
                    <th>"Status"</th>
                    <th>"Facets"</th>
                    <th>"Details"</th>
                </tr>
            </thead>
            <tbody>{rows}</tbody>
        </table>
    }
    .into_any()
}

/// Details shown inline when there are this many or fewer; more fold under the first ones.
const INLINE_DETAILS: usize = 2;

fn pair(k: String, v: String) -> impl IntoView {
    view! { <span class="kv"><span class="k"><Shown text=k/></span>"="<span class="v"><Shown text=v/></span></span> }
}

/// The details: a few inline; more behind a native disclosure (no JavaScript needed).
fn details_cell(details: Vec<(String, String)>) -> AnyView {
    if details.len() <= INLINE_DETAILS {
        return details
            .into_iter()
            .map(|(k, v)| pair(k, v))
            .collect_view()
            .into_any();
    }
    let more = details.len() - INLINE_DETAILS;
    let mut rest = details;
    let first: Vec<_> = rest.drain(..INLINE_DETAILS).collect();
    let first = first.into_iter().map(|(k, v)| pair(k, v)).collect_view();
    let rest = rest.into_iter().map(|(k, v)| pair(k, v)).collect_view();
    view! {
        <details class="more">
            <summary>{first}<span class="count">"+" {more}</span></summary>
            {rest}
        </details>
    }
    .into_any()
}

#[component]
fn EventRow(e: AuditEventView) -> impl IntoView {
    let subject = match e.timeline {
        Some(href) => {
            view! { <a href=href data-testid="audit-timeline-link"><Shown text=e.subject/></a> }
                .into_any()
        }
        None => view! { <span><Shown text=e.subject/></span> }.into_any(),
    };
    let facets = e
        .facets
        .into_iter()
        .map(|(k, v)| {
            let class = format!("facet facet-{k}");
            view! { <span class=class title=k><Shown text=v/></span> }
        })
        .collect_view();
    let details = details_cell(e.details);
    let kind = e.kind.clone();
    view! {
        <tr data-testid="audit-row" data-seq=e.seq data-kind=kind>
            <td class="num seq">{e.seq}</td>
            <td class="time"><When at=e.at/></td>
            <td class="actor"><Shown text=e.actor/></td>
            <td><code class="kind">{e.kind}</code></td>
            <td class="subject">{subject}<HiddenFlag count=e.hidden/></td>
            <td class="change">{e.change}</td>
            <td class="facets">{facets}</td>
            <td class="details">{details}</td>
        </tr>
    }
}
