//! What both policy pages show alike: a unified diff, each line coloured by its kind, and how
//! a version became active, in words.

use leptos::prelude::*;

use crate::dto::DiffLine;

/// A unified diff in a `<pre>`, one `<span class="diff-line diff-KIND">` per line.
#[component]
pub fn DiffView(
    /// The lines.
    lines: Vec<DiffLine>,
    /// Its `data-testid`.
    #[prop(optional)]
    testid: Option<&'static str>,
) -> impl IntoView {
    if lines.is_empty() {
        return view! { <p class="empty">"The two texts are the same."</p> }.into_any();
    }
    let lines = (lines.into_iter())
        .map(|l| {
            let class = format!("diff-line diff-{}", l.kind);
            view! { <span class=class>{l.text}"\n"</span> }
        })
        .collect_view();
    view! { <pre class="diff" data-testid=testid>{lines}</pre> }.into_any()
}

/// How a version became active (`approved`, `break_glass`, …), in words.
pub fn how_words(how: &str) -> &'static str {
    match how {
        "file" => "loaded from the policy file at start",
        "builtin" => "the built-in policy of a new database",
        "approved" => "proposed by one admin, approved by another",
        "break_glass" => "break-glass: activated alone at the shell",
        _ => "another way",
    }
}
