//! The agent's record with this tool: how its earlier proposals for it came out, and the last
//! few with links.

use leptos::prelude::*;

use crate::components::visible::{HiddenFlag, Shown};
use crate::dto::{HistoryView, ProposalView};
use crate::time::When;

fn counts(h: &HistoryView) -> impl IntoView + use<> {
    let item = |label: &'static str, n: u64, testid: &'static str| {
        (n > 0).then(|| view! { <li><strong data-testid=testid>{n}</strong> " " {label}</li> })
    };
    let runs = (h.approved > 0).then(|| {
        view! {
            " ("
            <ul class="tally runs" aria-label="How the approved ones ran">
                {item("succeeded", h.succeeded, "history-succeeded")}
                {item("failed", h.failed, "history-failed")}
                {item("outcome unknown", h.unknown, "history-unknown")}
                {item("not finished", h.running, "history-running")}
            </ul>
            ")"
        }
    });
    view! {
        <ul class="tally">
            <li><strong data-testid="history-approved">{h.approved}</strong> " approved" {runs}</li>
            <li><strong data-testid="history-rejected">{h.rejected}</strong> " rejected"</li>
            {item("refused by the policy", h.refused, "history-refused")}
            {item("expired", h.expired, "history-expired")}
            {item("pending", h.pending, "history-pending")}
        </ul>
    }
}

/// The history section.
pub fn history(p: &ProposalView) -> impl IntoView + use<> {
    let h = p.history.clone();
    let heading = format!("{}'s record with {}", p.proposed_by, p.tool);
    let body = if h.total == 0 {
        view! { <p class="muted" data-testid="history-none">"No earlier proposals by this agent for this tool."</p> }
            .into_any()
    } else {
        let noun = if h.total == 1 {
            "proposal"
        } else {
            "proposals"
        };
        let scope = if h.capped {
            format!(" earlier {noun} (the most recent):")
        } else {
            format!(" earlier {noun}:")
        };
        let recent = h
            .recent
            .iter()
            .map(|r| {
                let href = format!("/proposals/{}", r.id);
                let class = format!("status status-{}", r.status);
                view! {
                    <li data-testid="history-item">
                        <a href=href><Shown text=r.summary.clone()/></a>
                        <HiddenFlag count=r.hidden/> " "
                        <span class=class>{r.status.clone()}</span> " " <When at=r.at/>
                    </li>
                }
            })
            .collect_view();
        view! {
            <p><span data-testid="history-total">{h.total}</span> {scope}</p>
            {counts(&h)}
            <h3>"Most recent"</h3>
            <ol class="recent">{recent}</ol>
        }
        .into_any()
    };
    view! {
        <section class="history" data-testid="agent-history" aria-labelledby="history-h">
            <h2 id="history-h">{heading}</h2>
            {body}
        </section>
    }
}
