//! The diff between two versions of a policy, as the policy page and `policy propose` show it:
//! a unified diff of their texts, line by line (`similar`).

use similar::TextDiff;

/// Lines of context around each change.
const CONTEXT: usize = 3;

/// The unified diff from `old` (named `old_name`) to `new`; empty when the texts are equal.
pub fn unified(old_name: &str, old: &str, new_name: &str, new: &str) -> String {
    if old == new {
        return String::new();
    }
    TextDiff::from_lines(old, new)
        .unified_diff()
        .context_radius(CONTEXT)
        .header(old_name, new_name)
        .to_string()
}

/// One line of a diff, for a page to colour.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LineKind {
    /// A file header or hunk header.
    Header,
    /// Only in the new text.
    Added,
    /// Only in the old text.
    Removed,
    /// In both.
    Context,
}

/// What kind of line `line` of a unified diff is.
pub fn line_kind(line: &str) -> LineKind {
    if line.starts_with("+++") || line.starts_with("---") || line.starts_with("@@") {
        LineKind::Header
    } else if line.starts_with('+') {
        LineKind::Added
    } else if line.starts_with('-') {
        LineKind::Removed
    } else {
        LineKind::Context
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_texts_have_no_diff_and_a_change_shows_both_lines() {
        assert_eq!(unified("a", "x = 1\n", "b", "x = 1\n"), "");
        let d = unified(
            "active",
            "[defaults]\nexpiry = \"1h\"\n",
            "candidate",
            "[defaults]\nexpiry = \"2h\"\n",
        );
        assert!(d.contains("--- active\n+++ candidate\n"), "{d}");
        assert!(d.contains("-expiry = \"1h\"\n+expiry = \"2h\"\n"), "{d}");
        let kinds: Vec<LineKind> = d.lines().map(line_kind).collect();
        assert!(kinds.contains(&LineKind::Added) && kinds.contains(&LineKind::Removed));
    }
}
