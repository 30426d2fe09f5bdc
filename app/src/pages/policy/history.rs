//! The version in force (its text, how and when it became active, who proposed and approved
//! it) and every activation before it, each with its diff against the one before and, for
//! admins, a form to propose returning to it.

use leptos::prelude::*;
use leptos::server_fn::ServerFn;

use super::diff::{DiffView, how_words};
use crate::dto::{ActivationView, PolicyVersionView};
use crate::server::policy::ProposePolicyReturn;
use crate::time::When;

/// The version in force.
#[component]
pub fn Active(
    active: Option<PolicyVersionView>,
    activation: Option<ActivationView>,
) -> impl IntoView {
    let Some(active) = active else {
        return view! {
            <section data-testid="policy-active"><h2>"In force"</h2>
                <p class="empty">"No version is stored yet."</p></section>
        }
        .into_any();
    };
    let text = if active.builtin {
        view! { <p data-testid="policy-active-builtin">"This is the built-in policy: it has no text."</p> }.into_any()
    } else {
        view! { <details open><summary>"Its text"</summary><pre data-testid="policy-active-text">{active.text}</pre></details> }
            .into_any()
    };
    let how = activation.map(|a| {
        let approved = a
            .approved_by
            .map(|by| view! { <dt>"Approved by"</dt><dd>{by}</dd> });
        view! {
            <dt>"Active since"</dt><dd><When at=a.activated_at/></dd>
            <dt>"How"</dt><dd data-testid="policy-active-how">{how_words(&a.how)}</dd>
            <dt>"Proposed by"</dt><dd>{a.proposed_by}</dd>
            {approved}
        }
    });
    view! {
        <section class="facts" data-testid="policy-active">
            <h2>"In force"</h2>
            <dl>
                <dt>"Version"</dt><dd><code data-testid="policy-active-version">{active.version}</code></dd>
                {how}
            </dl>
            {text}
        </section>
    }
    .into_any()
}

/// Every activation, newest first.
#[component]
pub fn History(
    history: Vec<ActivationView>,
    csrf: String,
    can_propose: bool,
    active: Option<String>,
) -> impl IntoView {
    let rows = (history.into_iter())
        .map(|a| {
            let may_return = can_propose && active.as_deref() != Some(a.version.as_str());
            view! { <Activation a csrf=csrf.clone() may_return/> }
        })
        .collect_view();
    view! {
        <section class="policy-history" data-testid="policy-history">
            <h2>"History"</h2>
            {rows}
        </section>
    }
}

#[component]
fn Activation(a: ActivationView, csrf: String, may_return: bool) -> impl IntoView {
    let break_glass = a.how == "break_glass";
    let class = if break_glass {
        "activation break-glass"
    } else {
        "activation"
    };
    let how = how_words(&a.how);
    let change = a.change_id.map(|id| {
        let href = format!("/policy/changes/{id}");
        view! { " · " <a href=href>"its request"</a> }
    });
    let diff = a.previous.clone().map(|previous| {
        view! {
            <details class="policy-diff">
                <summary>"Diff against " <code>{short(&previous)}</code></summary>
                <DiffView lines=a.diff/>
            </details>
        }
    });
    let back = may_return.then(|| view! { <ReturnForm version=a.version.clone() csrf/> });
    view! {
        <article class=class data-testid="policy-history-row" data-version=a.version.clone()>
            <p>
                <code>{a.version.clone()}</code> " · " <When at=a.activated_at/> " · "
                {break_glass.then(|| view! { <strong class="break-glass-mark" data-testid="policy-break-glass">"BREAK-GLASS"</strong> " " })}
                <span data-testid="policy-history-how">{how}</span>
                {change}
            </p>
            <p class="sub">
                "Proposed by " {a.proposed_by}
                {a.approved_by.map(|by| view! { ", approved by " {by} })}
                {a.builtin.then_some(" (the built-in policy: no text)")}
            </p>
            {a.reason.map(|r| view! { <p class="sub">"Reason: " {r}</p> })}
            {diff}
            {back}
        </article>
    }
}

/// A version shortened for a heading (`sha256:0123abcd…`).
fn short(version: &str) -> String {
    let cut: String = version.chars().take(19).collect();
    if cut.len() < version.len() {
        format!("{cut}…")
    } else {
        cut
    }
}

#[component]
fn ReturnForm(version: String, csrf: String) -> impl IntoView {
    view! {
        <details class="policy-return">
            <summary>"Propose returning to this version"</summary>
            <form method="post" action=ProposePolicyReturn::url() class="stack">
                <input type="hidden" name="csrf_token" value=csrf/>
                <input type="hidden" name="version" value=version/>
                <label>"Why " <textarea name="reason" required maxlength="1000" rows="2"
                    data-testid="policy-return-reason"></textarea></label>
                <button type="submit" data-testid="policy-return-submit">"Propose returning to this version"</button>
            </form>
        </details>
    }
}
