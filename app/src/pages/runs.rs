//! Runs that need a person: commands whose outcome is unknown (the executor went silent, timed
//! out, or failed with a possible side effect) and rollback tasks. Each is settled here with a
//! reason, by plain form posts; admins also pause and resume tools (the kill switch).

use leptos::prelude::*;
use leptos::server_fn::ServerFn;

use super::common::{Flash, with_csrf};
use crate::components::visible::{HiddenFlag, Shown};
use crate::dto::{PausedView, RunItem, RunsView};
use crate::server::runs::{DecideRollback, ResolveCommand, SwitchTool, list_runs};
use crate::time::When;

/// The runs page.
#[component]
pub fn RunsPage() -> impl IntoView {
    let runs = Resource::new(|| (), |_| list_runs());
    view! {
        <h1>"Runs that need a person"</h1>
        <Flash/>
        {with_csrf(runs, |view, csrf| view! { <Runs view csrf/> })}
    }
}

#[component]
fn Runs(view: RunsView, csrf: String) -> impl IntoView {
    let RunsView {
        unknown,
        rollbacks,
        paused,
        can_act,
        can_pause,
    } = view;
    let csrf2 = csrf.clone();
    let csrf3 = csrf.clone();
    view! {
        <section data-testid="unknown-outcomes">
            <h2>"Outcome unknown"</h2>
            <p class="sub">
                "The executor went silent, ran out of time, or failed saying something may have \
                 happened. Nothing runs again until a person says what happened."
            </p>
            {if unknown.is_empty() {
                view! { <p class="empty" data-testid="unknown-empty">"None."</p> }.into_any()
            } else {
                unknown
                    .into_iter()
                    .map(|item| view! { <UnknownRun item csrf=csrf.clone() can_act/> })
                    .collect_view()
                    .into_any()
            }}
        </section>
        <section data-testid="rollback-tasks">
            <h2>"Rollback tasks"</h2>
            {if rollbacks.is_empty() {
                view! { <p class="empty" data-testid="rollbacks-empty">"None."</p> }.into_any()
            } else {
                rollbacks
                    .into_iter()
                    .map(|item| view! { <RollbackTask item csrf=csrf2.clone() can_act/> })
                    .collect_view()
                    .into_any()
            }}
        </section>
        <Paused paused csrf=csrf3 can_pause/>
    }
}

#[component]
fn RunFacts(item: RunItem) -> impl IntoView {
    let proposal = format!("/proposals/{}", item.proposal_id);
    let summary = item
        .summary
        .map(|s| view! { <dt>"Intent"</dt><dd data-testid="run-summary"><Shown text=s/></dd> });
    view! {
        <dl class="facts">
            {summary}
            <dt>"Tool"</dt><dd><code><Shown text=item.tool/></code> " · " {item.domain}</dd>
            <dt>"Parameters"</dt><dd><code data-testid="run-parameters"><Shown text=item.parameters/></code></dd>
            <dt>"Status"</dt><dd data-testid="run-status">{item.status}</dd>
            <dt>"Attempts"</dt><dd>{item.attempts}</dd>
            <dt>"Last attempt"</dt>
            <dd>
                {item.interruption.unwrap_or_else(|| "—".into())}
                {item.side_effect.map(|s| format!(" (side effect: {s})"))}
                {item.leased_by.map(|e| format!(" · executor {e}"))}
            </dd>
            {item.error.map(|e| view! { <dt>"Executor's report"</dt><dd><pre><Shown text=e/></pre></dd> })}
            {item.rollback_type.map(|t| view! { <dt>"Rollback plan"</dt><dd>{t}</dd> })}
            {item.rollback_instructions.map(|i| view! { <dt>"Instructions"</dt><dd><pre data-testid="rollback-instructions"><Shown text=i/></pre></dd> })}
            <dt>"Proposal"</dt><dd><a href=proposal>{item.proposal_id}</a></dd>
            <dt>"Changed"</dt><dd>{item.age} " ago"</dd>
        </dl>
    }
}

#[component]
fn UnknownRun(item: RunItem, csrf: String, can_act: bool) -> impl IntoView {
    let id = item.id.clone();
    let attr = id.clone();
    view! {
        <article class="run" data-testid="unknown-run" data-command-id=attr>
            <HiddenFlag count=item.hidden/>
            <RunFacts item/>
            {can_act.then(|| view! {
                <form method="post" action=ResolveCommand::url() class="resolve">
                    <input type="hidden" name="csrf_token" value=csrf/>
                    <input type="hidden" name="id" value=id/>
                    <label>"What happened, and how you know "
                        <textarea name="reason" required maxlength="2000" data-testid="resolve-reason"></textarea>
                    </label>
                    <button type="submit" name="resolution" value="succeeded" data-testid="resolve-succeeded">"It succeeded"</button>
                    <button type="submit" name="resolution" value="failed" data-testid="resolve-failed">"It failed"</button>
                    <button type="submit" name="resolution" value="release" data-testid="resolve-release">"Run it once more"</button>
                </form>
            })}
        </article>
    }
}

#[component]
fn RollbackTask(item: RunItem, csrf: String, can_act: bool) -> impl IntoView {
    let id = item.id.clone();
    let csrf2 = csrf.clone();
    let id2 = id.clone();
    let of = item.rollback_of.clone().unwrap_or_default();
    let attr = id.clone();
    view! {
        <article class="run" data-testid="rollback-task" data-command-id=attr>
            <p>"Undo command " <code>{of}</code> <HiddenFlag count=item.hidden/></p>
            <RunFacts item/>
            {can_act.then(|| view! {
                <form method="post" action=DecideRollback::url() class="approve">
                    <input type="hidden" name="csrf_token" value=csrf/>
                    <input type="hidden" name="id" value=id/>
                    <input type="hidden" name="verdict" value="approve"/>
                    <button type="submit" data-testid="rollback-approve">"Approve rollback"</button>
                </form>
                <form method="post" action=DecideRollback::url() class="reject">
                    <input type="hidden" name="csrf_token" value=csrf2/>
                    <input type="hidden" name="id" value=id2/>
                    <input type="hidden" name="verdict" value="dismiss"/>
                    <label>"Why not roll back " <textarea name="reason" required maxlength="2000"></textarea></label>
                    <button type="submit" data-testid="rollback-dismiss">"Dismiss"</button>
                </form>
            })}
        </article>
    }
}

#[component]
fn Paused(paused: Vec<PausedView>, csrf: String, can_pause: bool) -> impl IntoView {
    let csrf2 = csrf.clone();
    view! {
        <section data-testid="paused-tools">
            <h2>"Paused tools"</h2>
            {if paused.is_empty() {
                view! { <p class="empty">"No tool is paused."</p> }.into_any()
            } else {
                view! {
                    <ul>
                        {paused.into_iter().map(|p| {
                            let pattern = p.pattern.clone();
                            view! {
                                <li data-testid="paused-tool">
                                    <code>{p.pattern}</code> " paused by " {p.paused_by} " " <When at=p.paused_at/>
                                    {can_pause.then(|| view! {
                                        <form method="post" action=SwitchTool::url() class="inline">
                                            <input type="hidden" name="csrf_token" value=csrf.clone()/>
                                            <input type="hidden" name="pattern" value=pattern/>
                                            <input type="hidden" name="action" value="resume"/>
                                            <button type="submit">"Resume"</button>
                                        </form>
                                    })}
                                </li>
                            }
                        }).collect_view()}
                    </ul>
                }.into_any()
            }}
            {can_pause.then(|| view! {
                <form method="post" action=SwitchTool::url() class="pause">
                    <input type="hidden" name="csrf_token" value=csrf2/>
                    <input type="hidden" name="action" value="pause"/>
                    <label>"Tool name or glob (" <code>"*"</code> " for all) "
                        <input name="pattern" required maxlength="128" data-testid="pause-pattern"/>
                    </label>
                    <button type="submit" data-testid="pause-tool">"Pause for every executor"</button>
                </form>
            })}
        </section>
    }
}
