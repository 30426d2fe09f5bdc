//! Agent-written text as the server made it visible: every invisible or direction-changing
//! character arrives escaped as `⟦U+202E⟧` (the server's `domain::review::text`, which also
//! escapes any bracket an agent wrote, so every `⟦…⟧` here is one of its escapes). [`Shown`]
//! marks each escape so it stands out, and names it on hover; [`HiddenFlag`] says how many a
//! field, row or card holds. Every page that shows agent-written text uses both.

use leptos::prelude::*;

/// A piece of visible text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Piece {
    /// Plain text.
    Text(String),
    /// An escape's code, e.g. `U+202E`.
    Escape(String),
}

/// Splits visible text into plain runs and escapes.
pub fn pieces(text: &str) -> Vec<Piece> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(open) = rest.find('\u{27E6}') {
        let after = &rest[open + '\u{27E6}'.len_utf8()..];
        let Some(close) = after.find('\u{27E7}') else {
            break;
        };
        if open > 0 {
            out.push(Piece::Text(rest[..open].to_owned()));
        }
        out.push(Piece::Escape(after[..close].to_owned()));
        rest = &after[close + '\u{27E7}'.len_utf8()..];
    }
    if !rest.is_empty() {
        out.push(Piece::Text(rest.to_owned()));
    }
    out
}

/// What an escaped character is, in words.
pub fn name(code: &str) -> &'static str {
    match code {
        "U+202A" => "left-to-right embedding",
        "U+202B" => "right-to-left embedding",
        "U+202C" => "pop directional formatting",
        "U+202D" => "left-to-right override",
        "U+202E" => "right-to-left override: text after it is shown reversed",
        "U+2066" => "left-to-right isolate",
        "U+2067" => "right-to-left isolate",
        "U+2068" => "first strong isolate",
        "U+2069" => "pop directional isolate",
        "U+200B" => "zero-width space",
        "U+200C" => "zero-width non-joiner",
        "U+200D" => "zero-width joiner",
        "U+200E" => "left-to-right mark",
        "U+200F" => "right-to-left mark",
        "U+2060" => "word joiner",
        "U+FEFF" => "zero-width no-break space (byte order mark)",
        "U+00AD" => "soft hyphen",
        "U+27E6" | "U+27E7" => "a bracket the agent wrote (not a hidden character)",
        _ => "invisible, direction-changing or control character",
    }
}

/// Visible text with its escapes marked.
#[component]
pub fn Shown(
    /// Text as the server made it visible.
    #[prop(into)]
    text: String,
) -> AnyView {
    // Erased: shown inside many lists and cards, whose types must stay shallow for the wasm
    // build.
    pieces(&text)
        .into_iter()
        .map(|p| match p {
            Piece::Text(t) => t.into_any(),
            Piece::Escape(code) => {
                let shown = format!("\u{27E6}{code}\u{27E7}");
                view! { <mark class="hidden-char" title=name(&code)>{shown}</mark> }.into_any()
            }
        })
        .collect_view()
        .into_any()
}

/// The flag beside agent-written text that hides characters, wherever it is shown (a field of
/// the proposal page, a row of the queue or the trail, a card on `/runs`): how many there are,
/// each shown as `⟦U+…⟧` where it occurs. Nothing when there are none.
#[component]
pub fn HiddenFlag(
    /// How many hidden characters.
    count: usize,
    /// The flag's test id.
    #[prop(default = "hidden-flag")]
    testid: &'static str,
) -> AnyView {
    // Erased, as [`Shown`] is.
    if count == 0 {
        return ().into_any();
    }
    let words = if count == 1 {
        "1 hidden character".to_owned()
    } else {
        format!("{count} hidden characters")
    };
    let title = "Invisible or direction-changing characters in the agent's text: each is shown \
                 as ⟦U+…⟧ where it occurs (here, or on the proposal page)";
    view! {
        <span class="flag" title=title data-testid=testid data-hidden=count>
            " ⚠ " {words}
        </span>
    }
    .into_any()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_are_split_out() {
        assert_eq!(pieces("plain"), vec![Piece::Text("plain".into())]);
        assert_eq!(
            pieces("/tmp/⟦U+202E⟧fdp.exe⟦U+200B⟧"),
            vec![
                Piece::Text("/tmp/".into()),
                Piece::Escape("U+202E".into()),
                Piece::Text("fdp.exe".into()),
                Piece::Escape("U+200B".into()),
            ]
        );
        assert_eq!(pieces(""), vec![]);
    }
}
