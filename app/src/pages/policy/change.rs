//! `/policy/changes/:id`: one request to activate a version — who proposed it and why, the
//! diff from the active version, what its backtest found, its shadow run — and, for an admin
//! who did not propose it, the forms to approve or refuse it.

use leptos::prelude::*;
use leptos::server_fn::ServerFn;
use leptos_router::hooks::use_params_map;

use super::diff::DiffView;
use crate::dto::{
    BacktestView, ExampleView, OutcomeView, PolicyChangeView, SessionView, ShadowView,
    TransitionView,
};
use crate::pages::common::{Flash, error_view, use_session};
use crate::server::policy::{AnswerPolicyChange, ShadowPolicyChange, get_policy_change};
use crate::time::When;

/// A request's page.
#[component]
pub fn PolicyChangePage() -> impl IntoView {
    let params = use_params_map();
    let change = Resource::new(
        move || params.read().get("id").unwrap_or_default(),
        get_policy_change,
    );
    let session = use_session();
    view! {
        <p class="back"><a href="/policy">"← Policy"</a></p>
        <h1>"Policy change"</h1>
        <Flash/>
        <Suspense fallback=|| view! { <p>"Loading…"</p> }>
            {move || Suspend::new(async move {
                let csrf = match session.await {
                    Ok(SessionView { csrf_token, .. }) => csrf_token,
                    Err(e) => return error_view(e),
                };
                match change.await {
                    Ok(c) => view! { <Change c csrf/> }.into_any(),
                    Err(e) => error_view(e),
                }
            })}
        </Suspense>
    }
}

#[component]
fn Change(c: PolicyChangeView, csrf: String) -> impl IntoView {
    let id = c.change.id.clone();
    let facts = facts(&c).into_any();
    let answer = if c.can_answer {
        Some(view! { <AnswerForms id=id.clone() csrf=csrf.clone()/> }.into_any())
    } else {
        c.own.then(|| {
            view! { <p class="note" data-testid="policy-own-change">"You proposed this change: another admin must approve it."</p> }
                .into_any()
        })
    };
    let diff = if c.candidate_builtin {
        view! { <p class="note">"The candidate is the built-in policy: it has no text, so the diff shows the active text removed."</p> }
            .into_any()
    } else {
        ().into_any()
    };
    let backtest = match c.backtest {
        Some(b) => view! { <Backtest b/> }.into_any(),
        None => view! { <p class="empty">"This request has no backtest."</p> }.into_any(),
    };
    let shadow = view! { <Shadow s=c.shadow id csrf can=c.can_shadow/> }.into_any();
    view! {
        {facts}
        {answer}
        <section>
            <h2>"Diff from the active version"</h2>
            {diff}
            <DiffView lines=c.diff testid="policy-diff"/>
        </section>
        {backtest}
        {shadow}
    }
}

fn facts(c: &PolicyChangeView) -> impl IntoView + use<> {
    let ch = c.change.clone();
    let status = format!("status status-{}", ch.status);
    let moved = (c.active_version.as_deref() != Some(ch.base.as_str())).then(|| {
        let now = c.active_version.clone().unwrap_or_else(|| "(none)".into());
        view! { <dt>"Active now"</dt><dd><code>{now}</code> <span class="note">" (the active version changed since)"</span></dd> }
    });
    let decided = c.decided_by.clone().map(|by| {
        let at = c.decided_at.map(|at| view! { " " <When at/> });
        let why = c
            .decision_reason
            .clone()
            .map(|r| view! { <dt>"Their reason"</dt><dd>{r}</dd> });
        view! { <dt>"Answered by"</dt><dd data-testid="policy-decided-by">{by}{at}</dd> {why} }
    });
    view! {
        <section class="facts" data-testid="policy-change" data-change-id=ch.id.clone()>
            <dl>
                <dt>"Status"</dt>
                <dd>
                    <span class=status data-testid="policy-change-status">{ch.status.clone()}</span>
                    {ch.loosening.then(|| view! { " " <span class="loosens" data-testid="policy-loosens"
                        title="Its backtest found decisions that would now be accepted">"loosens"</span> })}
                </dd>
                <dt>"Proposed by"</dt><dd data-testid="policy-proposed-by">{ch.proposed_by} " " <When at=ch.proposed_at/></dd>
                <dt>"Reason"</dt><dd class="reasoning" data-testid="policy-reason">{ch.reason}</dd>
                <dt>"Base version"</dt><dd><code data-testid="policy-base-version">{ch.base.clone()}</code></dd>
                <dt>"Candidate"</dt><dd><code data-testid="policy-candidate-version">{ch.version}</code></dd>
                {moved}
                {decided}
            </dl>
        </section>
    }
}

#[component]
fn AnswerForms(id: String, csrf: String) -> impl IntoView {
    view! {
        <section class="decide" data-testid="policy-answer">
            <form method="post" action=AnswerPolicyChange::url()>
                <input type="hidden" name="csrf_token" value=csrf.clone()/>
                <input type="hidden" name="id" value=id.clone()/>
                <input type="hidden" name="answer" value="approve"/>
                <label>"Reason (optional) " <textarea name="reason" maxlength="1000" rows="2"></textarea></label>
                <button type="submit" class="approve" data-testid="policy-approve">"Approve: make it active"</button>
            </form>
            <form method="post" action=AnswerPolicyChange::url() class="reject">
                <input type="hidden" name="csrf_token" value=csrf/>
                <input type="hidden" name="id" value=id/>
                <input type="hidden" name="answer" value="refuse"/>
                <label>"Reason (optional) " <textarea name="reason" maxlength="1000" rows="2"></textarea></label>
                <button type="submit" class="reject" data-testid="policy-refuse">"Refuse"</button>
            </form>
        </section>
    }
}

#[component]
fn Backtest(b: BacktestView) -> impl IntoView {
    let rows = (b.by_route.into_iter())
        .map(|r| {
            let loosens = r.to == "accept";
            view! {
                <tr class:loosens-row=loosens data-testid="policy-route-row">
                    <td>{r.from}" → "{r.to.clone()}
                        {loosens.then(|| view! { " " <span class="loosens">"loosens"</span> })}</td>
                    <td class="num">{r.count}</td>
                </tr>
            }
        })
        .collect_view();
    let transitions = (b.transitions.into_iter())
        .map(|t| view! { <Transition t/> })
        .collect_view();
    view! {
        <section class="policy-backtest" data-testid="policy-backtest">
            <h2>"Backtest"</h2>
            <dl class="counts">
                <dt>"Considered"</dt><dd data-testid="policy-backtest-considered">{b.considered}</dd>
                <dt>"Replayed"</dt><dd data-testid="policy-backtest-replayed">{b.replayed}</dd>
                <dt>"Would route differently"</dt><dd data-testid="policy-backtest-changed">{b.changed}</dd>
                <dt>"Erased (not replayable)"</dt><dd data-testid="policy-backtest-erased">{b.erased}</dd>
                <dt>"Recorded without inputs (not replayable)"</dt><dd data-testid="policy-backtest-unrecorded">{b.unrecorded}</dd>
            </dl>
            <table class="by-route">
                <thead><tr><th>"From → to"</th><th>"Decisions"</th></tr></thead>
                <tbody>{rows}</tbody>
            </table>
            {transitions}
        </section>
    }
}

#[component]
fn Transition(t: TransitionView) -> impl IntoView {
    let examples = (t.examples.into_iter())
        .map(|e| view! { <Example e/> })
        .collect_view();
    let (from, to) = (t.from.clone(), t.to.clone());
    let loosens = t.to == "accept";
    view! {
        <section class="transition" data-testid="policy-transition" data-from=from data-to=to>
            <h3>
                {t.kind} ": " {t.from} " → " {t.to}
                {loosens.then(|| view! { " " <span class="loosens">"loosens"</span> })}
                " · " <code>{t.tool}</code> " · " {t.agent} " · " {t.count}
            </h3>
            <table class="examples">
                <thead><tr><th>"Decision"</th><th>"Was"</th><th>"Now"</th></tr></thead>
                <tbody>{examples}</tbody>
            </table>
        </section>
    }
}

#[component]
fn Example(e: ExampleView) -> impl IntoView {
    let subject = match e.link {
        Some(href) => view! { <a href=href>{e.subject}</a> }.into_any(),
        None => view! { <code>{e.subject}</code> }.into_any(),
    };
    view! {
        <tr>
            <td>{e.kind} " " {subject} <div class="sub"><When at=e.at/></div></td>
            <td><Outcome o=e.was/></td>
            <td><Outcome o=e.now/></td>
        </tr>
    }
}

#[component]
fn Outcome(o: OutcomeView) -> impl IntoView {
    let blockers = (!o.blockers.is_empty()).then(|| {
        view! { <div class="blockers">"blockers: " <code>{o.blockers.join(", ")}</code></div> }
    });
    view! { <strong>{o.route}</strong> " " <code>{o.rule}</code> {blockers} }
}

#[component]
fn Shadow(s: ShadowView, id: String, csrf: String, can: bool) -> impl IntoView {
    let until = s.until.map(|at| {
        let words = if s.running {
            "runs until "
        } else {
            "ran until "
        };
        view! { <p>{words} <When at/></p> }
    });
    let forms = can.then(|| view! { <ShadowForms id csrf running=s.running/> });
    let transitions = (s.transitions.into_iter())
        .map(|(kind, from, to, tool, agent, count)| {
            view! {
                <tr data-testid="policy-shadow-transition">
                    <td>{kind}</td>
                    <td><strong>{from}</strong> " → " <strong>{to}</strong></td>
                    <td><code>{tool}</code> " · " {agent}</td>
                    <td>{count}</td>
                </tr>
            }
        })
        .collect_view();
    let listed = (s.listed.into_iter())
        .map(|d| {
            let subject = match d.link {
                Some(href) => view! { <a href=href>{d.subject}</a> }.into_any(),
                None => view! { <code>{d.subject}</code> }.into_any(),
            };
            view! {
                <tr data-testid="policy-shadow-difference">
                    <td><When at=d.at/></td>
                    <td>{d.kind} " " {subject}</td>
                    <td><code>{d.tool}</code> " · " {d.agent}</td>
                    <td><strong>{d.from_route}</strong> " " <code>{d.from_rule}</code> <div class="blockers"><code>{d.from_blockers}</code></div></td>
                    <td><strong>{d.to_route}</strong> " " <code>{d.to_rule}</code> <div class="blockers"><code>{d.to_blockers}</code></div></td>
                </tr>
            }
        })
        .collect_view();
    view! {
        <section class="policy-shadow" data-testid="policy-shadow">
            <h2>"Shadow run"</h2>
            {until}
            <p>
                "Decisions routed in shadow: " <span data-testid="policy-shadow-count">{s.shadowed}</span>
                " · differences: " <span data-testid="policy-shadow-differences">{s.differences}</span>
            </p>
            {forms}
            <table class="shadow-transitions">
                <thead><tr><th>"Decision"</th><th>"Route change"</th><th>"Tool · agent"</th><th>"How many"</th></tr></thead>
                <tbody>{transitions}</tbody>
            </table>
            <h3>"Examples"</h3>
            <table class="shadow-differences">
                <thead><tr><th>"When"</th><th>"Decision"</th><th>"Tool · agent"</th><th>"Active"</th><th>"Candidate"</th></tr></thead>
                <tbody>{listed}</tbody>
            </table>
        </section>
    }
}

#[component]
fn ShadowForms(id: String, csrf: String, running: bool) -> impl IntoView {
    let stop = running.then(|| {
        view! {
            <form method="post" action=ShadowPolicyChange::url() class="inline">
                <input type="hidden" name="csrf_token" value=csrf.clone()/>
                <input type="hidden" name="id" value=id.clone()/>
                <input type="hidden" name="duration" value="stop"/>
                <button type="submit" data-testid="policy-shadow-stop">"Stop"</button>
            </form>
        }
    });
    view! {
        <form method="post" action=ShadowPolicyChange::url() class="inline shadow-form">
            <input type="hidden" name="csrf_token" value=csrf.clone()/>
            <input type="hidden" name="id" value=id.clone()/>
            <label>"Run in shadow for "
                <select name="duration" data-testid="policy-shadow-duration">
                    <option value="1h">"1 hour"</option>
                    <option value="24h" selected>"24 hours"</option>
                    <option value="7d">"7 days"</option>
                </select>
            </label>
            <button type="submit" data-testid="policy-shadow-start">"Run in shadow"</button>
        </form>
        {stop}
    }
}
