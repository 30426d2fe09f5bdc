//! `/audit/charts`: decisions per day by outcome, the pending queue's depth, time to decision
//! per domain, the tools reviewers reject most and each reviewer's decisions — SVG drawn on
//! the server, each with its numbers as a table. Names and counts only.

use leptos::prelude::*;

use super::audit::AuditNav;
use super::common::error_view;
use crate::components::chart::{Bar, DayColumns, DayLine, HorizontalBars, Series, duration_words};
use crate::dto::{ChartsView, TallyView};
use crate::server::audit::get_audit_charts;

/// The charts page.
#[component]
pub fn ChartsPage() -> impl IntoView {
    let charts = Resource::new(|| (), |_| get_audit_charts());
    view! {
        <h1>"Audit charts"</h1>
        <AuditNav current="charts"/>
        <Suspense fallback=|| view! { <p>"Loading…"</p> }>
            {move || Suspend::new(async move {
                match charts.await {
                    Ok(c) => view! { <Charts c/> }.into_any(),
                    Err(e) => error_view(e),
                }
            })}
        </Suspense>
    }
}

fn tally_rows(tallies: Vec<TallyView>, rejected_first: bool) -> Vec<(String, Vec<Bar>)> {
    tallies
        .into_iter()
        .map(|t| {
            let rejected = Bar {
                value: t.rejected,
                class: "rejected",
                text: t.rejected.to_string(),
            };
            let approved = Bar {
                value: t.approved,
                class: "approved",
                text: t.approved.to_string(),
            };
            let bars = if rejected_first {
                vec![rejected, approved]
            } else {
                vec![approved, rejected]
            };
            (t.name, bars)
        })
        .collect()
}

#[component]
fn Charts(c: ChartsView) -> impl IntoView {
    let outcomes = vec![
        Series {
            label: "approved",
            class: "approved",
            values: c.approved,
        },
        Series {
            label: "rejected",
            class: "rejected",
            values: c.rejected,
        },
        Series {
            label: "expired",
            class: "expired",
            values: c.expired,
        },
    ];
    let depth = Series {
        label: "pending at end of day",
        class: "pending",
        values: c.queue_depth,
    };
    let latency = c
        .latency
        .into_iter()
        .map(|l| {
            let bar = |value: i64, class: &'static str| Bar {
                value,
                class,
                text: duration_words(value),
            };
            let name = format!("{} ({})", l.domain, l.count);
            (
                name,
                vec![bar(l.p50, "p50"), bar(l.p90, "p90"), bar(l.p99, "p99")],
            )
        })
        .collect();
    let truncated = c.truncated.then(|| {
        view! { <p class="note">"Very many decisions in this window: the per-domain, per-tool and per-reviewer charts show the most recent part."</p> }
    });
    view! {
        <p class="note">"The last 30 days, UTC. Counts and names only: charts never show parameter values."</p>
        {truncated}
        <div class="charts">
            <DayColumns title="Decisions per day by outcome" days=c.days.clone() series=outcomes testid="chart-decisions"/>
            <DayLine title="Pending queue depth (end of day)" days=c.days series=depth testid="chart-queue"/>
            <HorizontalBars
                title="Time to decision per domain (p50, p90, p99)"
                heads=vec!["Domain (decisions)", "p50", "p90", "p99"]
                rows=latency
                testid="chart-latency"
                empty="No decisions in the last 30 days."
            />
            <HorizontalBars
                title="Tools by rejections"
                heads=vec!["Tool", "rejected", "approved"]
                rows=tally_rows(c.tools, true)
                testid="chart-tools"
                empty="No rejections in the last 30 days."
            />
            <HorizontalBars
                title="Reviewer load (decisions per reviewer)"
                heads=vec!["Reviewer", "approved", "rejected"]
                rows=tally_rows(c.reviewers, false)
                testid="chart-reviewers"
                empty="No decisions in the last 30 days."
            />
        </div>
    }
}
