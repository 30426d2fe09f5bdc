//! Text that could mislead, made visible. An agent writes the intent, the reasoning, the
//! parameters and their keys; a bidirectional override (U+202E), a zero-width space or a
//! soft hyphen there can make a path or a command *render* differently from what runs. Every
//! such character is shown as an escape, `⟦U+202E⟧`, and counted, so the page can say how many
//! there are.
//!
//! Escaped: every format character (Unicode category Cf: the bidi embeddings, overrides and
//! isolates U+202A–U+202E and U+2066–U+2069, zero-width U+200B–U+200F, U+2060–U+2064, U+FEFF,
//! the soft hyphen U+00AD, the Arabic, Syriac, Egyptian and musical format characters, the tag
//! characters U+E0000–U+E0FFF), the line and paragraph separators U+2028/U+2029, variation
//! selectors (U+FE00–U+FE0F, U+E0100–U+E01EF) and the other blank-rendering characters
//! (U+034F, U+115F, U+1160, U+17B4, U+17B5, U+180B–U+180F, U+3164, U+FFA0), and every control
//! character but tab, line feed and the carriage return of a CRLF.
//!
//! The escape's own brackets are escaped too when an agent writes them (`⟦` becomes
//! `⟦U+27E6⟧`, not counted as hidden), so every `⟦` on a page opens an escape this module wrote.

/// Opens an escape.
pub const OPEN: char = '\u{27E6}';
/// Closes an escape.
pub const CLOSE: char = '\u{27E7}';

/// A text in the form a page may show.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Visible {
    /// The text with every hidden character (and every literal escape bracket) escaped.
    pub text: String,
    /// How many invisible or direction-changing characters it had.
    pub hidden: usize,
}

/// Whether `c` is invisible, changes the direction of the text around it, or is a control
/// character (tab and line feed excepted): what [`visible`] escapes and counts.
pub fn is_hidden(c: char) -> bool {
    if c.is_control() {
        return c != '\t' && c != '\n';
    }
    matches!(
        u32::from(c),
        0x00AD
            | 0x034F
            | 0x0600..=0x0605
            | 0x061C
            | 0x06DD
            | 0x070F
            | 0x0890..=0x0891
            | 0x08E2
            | 0x115F..=0x1160
            | 0x17B4..=0x17B5
            | 0x180B..=0x180F
            | 0x200B..=0x200F
            | 0x2028..=0x202E
            | 0x2060..=0x2064
            | 0x2066..=0x206F
            | 0x3164
            | 0xFE00..=0xFE0F
            | 0xFEFF
            | 0xFFA0
            | 0xFFF9..=0xFFFB
            | 0x110BD
            | 0x110CD
            | 0x13430..=0x1343F
            | 0x1BCA0..=0x1BCA3
            | 0x1D173..=0x1D17A
            | 0xE0000..=0xE0FFF
    )
}

fn escape(out: &mut String, c: char) {
    out.push(OPEN);
    out.push_str(&format!("U+{:04X}", u32::from(c)));
    out.push(CLOSE);
}

/// `s` with every hidden character shown as `⟦U+XXXX⟧`, and how many there were. A carriage
/// return directly before a line feed is a line ending, not hidden.
pub fn visible(s: &str) -> Visible {
    let clean = |c: char| !is_hidden(c) && c != OPEN && c != CLOSE;
    if s.chars().all(clean) {
        return Visible {
            text: s.to_owned(),
            hidden: 0,
        };
    }
    let mut text = String::with_capacity(s.len() + 16);
    let mut hidden = 0;
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\r' && chars.peek() == Some(&'\n') {
            text.push(c);
        } else if c == OPEN || c == CLOSE {
            escape(&mut text, c);
        } else if is_hidden(c) {
            hidden += 1;
            escape(&mut text, c);
        } else {
            text.push(c);
        }
    }
    Visible { text, hidden }
}

/// How many hidden characters the keys and strings of a JSON value hold, at any depth (what a
/// list counts for a row whose parameters it only previews, or withholds).
pub fn hidden_in_json(value: &serde_json::Value) -> usize {
    use serde_json::Value;
    match value {
        Value::String(s) => visible(s).hidden,
        Value::Array(items) => items.iter().map(hidden_in_json).sum(),
        Value::Object(members) => (members.iter())
            .map(|(k, v)| visible(k).hidden + hidden_in_json(v))
            .sum(),
        Value::Null | Value::Bool(_) | Value::Number(_) => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hidden_characters_are_counted_in_keys_and_values_at_any_depth() {
        let v = serde_json::json!({"a\u{200B}": ["x", {"b": "\u{202E}y\u{200B}"}], "n": 1});
        assert_eq!(hidden_in_json(&v), 3);
        assert_eq!(hidden_in_json(&serde_json::json!({"plain": "text"})), 0);
    }

    #[test]
    fn plain_text_is_unchanged() {
        for s in [
            "",
            "Update the contact's email",
            "Zürich — 東京\n\tindented",
            "a\r\nb",
        ] {
            assert_eq!(
                visible(s),
                Visible {
                    text: s.into(),
                    hidden: 0
                }
            );
        }
    }

    #[test]
    fn a_right_to_left_override_cannot_reverse_a_path() {
        // "/tmp/\u{202E}fdp.exe" renders as "/tmp/exe.pdf" in a browser.
        let v = visible("/tmp/\u{202E}fdp.exe");
        assert_eq!(v.text, "/tmp/⟦U+202E⟧fdp.exe");
        assert_eq!(v.hidden, 1);
    }

    #[test]
    fn every_class_of_hidden_character_is_escaped_and_counted() {
        let cases = [
            ('\u{202A}', "U+202A"),
            ('\u{2066}', "U+2066"),
            ('\u{2069}', "U+2069"),
            ('\u{200B}', "U+200B"),
            ('\u{200D}', "U+200D"),
            ('\u{200F}', "U+200F"),
            ('\u{2060}', "U+2060"),
            ('\u{2064}', "U+2064"),
            ('\u{FEFF}', "U+FEFF"),
            ('\u{00AD}', "U+00AD"),
            ('\u{061C}', "U+061C"),
            ('\u{180E}', "U+180E"),
            ('\u{2028}', "U+2028"),
            ('\u{FE0F}', "U+FE0F"),
            ('\u{E0041}', "U+E0041"),
            ('\u{0000}', "U+0000"),
            ('\u{001B}', "U+001B"),
            ('\u{0085}', "U+0085"),
            ('\r', "U+000D"),
        ];
        for (c, code) in cases {
            let v = visible(&format!("a{c}b"));
            assert_eq!(v.text, format!("a⟦{code}⟧b"), "{code}");
            assert_eq!(v.hidden, 1, "{code}");
        }
        assert_eq!(visible("\u{200B}\u{200B}x\u{202E}").hidden, 3);
    }

    #[test]
    fn ordinary_spaces_tabs_and_newlines_are_not_hidden() {
        for c in [' ', '\t', '\n', '\u{00A0}', 'é', '\u{0301}'] {
            assert!(!is_hidden(c), "{:04X}", u32::from(c));
        }
    }

    #[test]
    fn a_written_escape_cannot_pass_for_one_of_ours() {
        let v = visible("⟦U+202E⟧");
        assert_eq!(v.text, "⟦U+27E6⟧U+202E⟦U+27E7⟧");
        assert_eq!(v.hidden, 0);
    }
}
