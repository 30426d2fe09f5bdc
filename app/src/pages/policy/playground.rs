//! The playground: paste a tool proposal or an AANA event (JSON), optionally choose a pending
//! candidate, and see side by side what the active version and the candidate decide of it.
//! A GET form: it changes nothing, so it needs no CSRF token, and its address can be shared.

use leptos::prelude::*;
use leptos_router::hooks::use_query_map;

use crate::dto::{AppError, ExplainView, PlaygroundView};

/// The playground form and its answer.
#[component]
pub fn Playground(
    /// Versions of the pending requests, offered as candidates.
    candidates: Vec<String>,
    /// What the playground answered, when asked.
    played: Result<Option<PlaygroundView>, AppError>,
) -> impl IntoView {
    let query = use_query_map();
    let (input, chosen) = {
        let q = query.read_untracked();
        (q.get("input").unwrap_or_default(), q.get("candidate"))
    };
    let options = (candidates.into_iter())
        .map(|v| {
            let selected = chosen.as_deref() == Some(v.as_str());
            view! { <option value=v.clone() selected=selected>{v.clone()}</option> }
        })
        .collect_view();
    let answer = match played {
        Ok(Some(p)) => view! { <Answer p/> }.into_any(),
        Ok(None) => ().into_any(),
        Err(e) => view! { <p class="flash error" role="alert">{e.to_string()}</p> }.into_any(),
    };
    view! {
        <section id="playground" class="policy-playground">
            <h2>"Playground"</h2>
            <p class="sub">
                "Paste a tool proposal, or an AANA event (it has " <code>"tool_name"</code>
                "), as JSON: see what the active version, and a candidate, would decide. Nothing is stored."
            </p>
            <form method="get" action="/policy" class="playground-form">
                <label>"Input (JSON) "
                    <textarea name="input" required rows="10" spellcheck="false" class="code"
                        data-testid="policy-playground-input">{input}</textarea>
                </label>
                <label>"Candidate "
                    <select name="candidate" data-testid="policy-playground-candidate">
                        <option value="">"(none: the active version only)"</option>
                        {options}
                    </select>
                </label>
                <button type="submit" data-testid="policy-playground-submit">"Route it"</button>
            </form>
            {answer}
        </section>
    }
}

#[component]
fn Answer(p: PlaygroundView) -> impl IntoView {
    if let Some(why) = p.error {
        return view! { <p class="flash error" role="alert" data-testid="policy-playground-error">{why}</p> }
            .into_any();
    }
    let active = p.active.map(
        |e| view! { <Side title="Active version" e testid="policy-playground-active-route"/> },
    );
    let candidate = p
        .candidate
        .map(|e| view! { <Side title="Candidate" e testid="policy-playground-candidate-route"/> });
    view! { <div class="side-by-side" data-testid="policy-playground-answer">{active}{candidate}</div> }.into_any()
}

/// What one version decided.
#[component]
fn Side(title: &'static str, e: ExplainView, testid: &'static str) -> impl IntoView {
    let body = match e {
        ExplainView::Decided {
            route,
            rule,
            blockers,
            policy_version,
        } => {
            let blockers = if blockers.is_empty() {
                "none".to_owned()
            } else {
                blockers.join(", ")
            };
            let class = format!("status status-{route}");
            view! {
                <dl>
                    <dt>"Route"</dt><dd><span class=class data-testid=testid>{route}</span></dd>
                    <dt>"Rule"</dt><dd><code>{rule}</code></dd>
                    <dt>"Blockers"</dt><dd><code>{blockers}</code></dd>
                    <dt>"Version"</dt><dd><code class="hash">{policy_version}</code></dd>
                </dl>
            }
            .into_any()
        }
        ExplainView::Contract(errors) => view! {
            <p class="note">"Not a valid proposal or event; nothing was decided:"</p>
            <ul data-testid="policy-playground-contract">
                {errors.into_iter().map(|(field, message)| view! {
                    <li><code>{if field.is_empty() { "(document)".to_owned() } else { field }}</code> ": " {message}</li>
                }).collect_view()}
            </ul>
        }
        .into_any(),
    };
    view! { <div class="side"><h3>{title}</h3>{body}</div> }
}
