//! `/insights` (admins and compliance): per reviewer and per domain over a window of 7, 30 or
//! 90 days — decisions, approval rate, time to decision (median, p90), decisions made faster
//! than the proposal could be read (a rubber-stamp sign), grants made and used, break-glass
//! approvals, expiries nobody decided. SVG charts with their numbers as tables; each figure
//! links to the trail behind it.

use leptos::prelude::*;
use leptos_router::hooks::use_query_map;

use super::audit::AuditNav;
use super::common::error_view;
use crate::components::chart::{Bar, HorizontalBars, duration_words};
use crate::dto::{InsightRow, InsightsView};
use crate::server::audit::get_insights;

/// The insights page.
#[component]
pub fn InsightsPage() -> impl IntoView {
    let query = use_query_map();
    let days = move || query.read().get("days").and_then(|d| d.parse::<i64>().ok());
    let insights = Resource::new(days, get_insights);
    view! {
        <h1>"Decision insights"</h1>
        <AuditNav current="insights"/>
        <Suspense fallback=|| view! { <p>"Loading…"</p> }>
            {move || Suspend::new(async move {
                match insights.await {
                    Ok(i) => view! { <Insights i/> }.into_any(),
                    Err(e) => error_view(e),
                }
            })}
        </Suspense>
    }
}

fn pct(part: i64, whole: i64) -> String {
    if whole == 0 {
        "—".into()
    } else {
        format!("{}%", part * 100 / whole)
    }
}

/// A percentile as its bucket's upper bound: "≤ 2 min"; past the last bucket "> 1 d".
fn secs(v: Option<i64>) -> String {
    match v {
        None => "—".into(),
        Some(i64::MAX) => "> 1 d".into(),
        Some(s) => format!("≤ {}", duration_words(s)),
    }
}

/// Encodes a query-string value (names are usernames and domains: letters, digits, `-_.`).
fn q(v: &str) -> String {
    v.chars()
        .map(|c| match c {
            'a'..='z' | 'A'..='Z' | '0'..='9' | '-' | '_' | '.' => c.to_string(),
            other => format!("%{:02X}", u32::from(other)),
        })
        .collect()
}

#[component]
fn Insights(i: InsightsView) -> impl IntoView {
    let windows = [7, 30, 90]
        .into_iter()
        .map(|d| {
            let class = if d == i.days { "current" } else { "" };
            view! { <a href=format!("/insights?days={d}") class=class>{format!("{d} days")}</a> }
        })
        .collect_view();
    let reviewer_bars: Vec<(String, Vec<Bar>)> = (i.reviewers.iter())
        .map(|r| {
            let bar = |value: i64, class| Bar {
                value,
                class,
                text: value.to_string(),
            };
            (
                r.name.clone(),
                vec![
                    bar(r.approved, "approved"),
                    bar(r.decisions - r.approved, "rejected"),
                    bar(r.fast, "expired"),
                ],
            )
        })
        .collect();
    let domain_bars: Vec<(String, Vec<Bar>)> = (i.domains.iter())
        .map(|d| {
            let bar = |v: Option<i64>, class| Bar {
                value: v.unwrap_or(0),
                class,
                text: secs(v),
            };
            (d.name.clone(), vec![bar(d.p50, "p50"), bar(d.p90, "p90")])
        })
        .collect();
    view! {
        <nav class="subnav" data-testid="insights-window">"Window: " {windows}</nav>
        <p class="sub">"Since " {i.from.clone()} " UTC. A decision is fast when it came sooner than the \
            proposal could be read (its text at 50 characters a second, at least 2 s). Times are \
            counted in buckets: a median of ≤ 2 min means the middle decision took 1 to 2 minutes."</p>
        <HorizontalBars title="Decisions per reviewer" heads=vec!["reviewer", "approved", "other", "fast"]
            rows=reviewer_bars testid="insights-reviewer-chart" empty="No decisions in this window."/>
        <ReviewerTable rows=i.reviewers/>
        <HorizontalBars title="Time to decision per domain" heads=vec!["domain", "median", "p90"]
            rows=domain_bars testid="insights-domain-chart" empty="No decisions in this window."/>
        <DomainTable rows=i.domains/>
    }
}

#[component]
fn ReviewerTable(rows: Vec<InsightRow>) -> impl IntoView {
    let rows = rows
        .into_iter()
        .map(|r| {
            let trail = format!("/audit?actor={}", q(&r.name));
            let glass = format!("/audit?actor={}&kind=proposal.break_glass", q(&r.name));
            let grants = format!("/grants#{}", q(&r.name));
            view! {
                <tr data-testid="insights-reviewer" data-name=r.name.clone()>
                    <th scope="row"><a href=trail.clone()>{r.name.clone()}</a></th>
                    <td class="num" data-field="decisions"><a href=trail.clone()>{r.decisions}</a></td>
                    <td class="num" data-field="approval">{pct(r.approved, r.decisions)}</td>
                    <td class="num" data-field="p50">{secs(r.p50)}</td>
                    <td class="num" data-field="p90">{secs(r.p90)}</td>
                    <td class="num" data-field="fast"><a href=trail>{r.fast}</a></td>
                    <td class="num" data-field="grants"><a href=grants>{r.grants} " (" {r.grant_uses} " uses)"</a></td>
                    <td class="num" data-field="break-glass"><a href=glass>{r.break_glass}</a></td>
                </tr>
            }
        })
        .collect_view();
    view! {
        <div class="scroll" tabindex="0" role="region" aria-label="Insights per reviewer">
        <table class="insights" data-testid="insights-reviewers">
            <caption>"Per reviewer"</caption>
            <thead><tr>
                <th scope="col">"Reviewer"</th><th scope="col">"Decisions"</th><th scope="col">"Approved"</th>
                <th scope="col">"Median"</th><th scope="col">"p90"</th><th scope="col">"Fast"</th>
                <th scope="col">"Grants"</th><th scope="col">"Break-glass"</th>
            </tr></thead>
            <tbody>{rows}</tbody>
        </table>
        </div>
    }
}

#[component]
fn DomainTable(rows: Vec<InsightRow>) -> impl IntoView {
    let rows = rows
        .into_iter()
        .map(|d| {
            let trail = format!("/audit?domain={}", q(&d.name));
            let expired = format!("/audit?domain={}&kind=proposal.expired", q(&d.name));
            view! {
                <tr data-testid="insights-domain" data-name=d.name.clone()>
                    <th scope="row"><a href=trail.clone()>{d.name.clone()}</a></th>
                    <td class="num" data-field="decisions"><a href=trail>{d.decisions}</a></td>
                    <td class="num" data-field="approval">{pct(d.approved, d.decisions)}</td>
                    <td class="num" data-field="p50">{secs(d.p50)}</td>
                    <td class="num" data-field="p90">{secs(d.p90)}</td>
                    <td class="num" data-field="fast">{d.fast}</td>
                    <td class="num" data-field="expired"><a href=expired>{d.expired}</a></td>
                </tr>
            }
        })
        .collect_view();
    view! {
        <div class="scroll" tabindex="0" role="region" aria-label="Insights per domain">
        <table class="insights" data-testid="insights-domains">
            <caption>"Per domain"</caption>
            <thead><tr>
                <th scope="col">"Domain"</th><th scope="col">"Decisions"</th><th scope="col">"Approved"</th>
                <th scope="col">"Median"</th><th scope="col">"p90"</th><th scope="col">"Fast"</th>
                <th scope="col">"Expired undecided"</th>
            </tr></thead>
            <tbody>{rows}</tbody>
        </table>
        </div>
    }
}
