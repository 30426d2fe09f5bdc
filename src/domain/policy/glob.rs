//! Tool-name patterns for the policy: `*` matches any run of characters (dots included),
//! `?` matches exactly one character, everything else matches itself. No character classes,
//! braces or escapes: tool names never need them, and refusing them keeps a pattern readable
//! at a glance.
//!
//! When several patterns match a name, the most specific wins ([`Glob::specificity`]): more
//! literal characters first, then fewer `*`, then the pattern's own text, so the outcome never
//! depends on the order rules are written in.

use std::cmp::Ordering;

#[derive(Debug, Clone, PartialEq, Eq)]
enum Token {
    Literal(String),
    AnyOne,
    AnyRun,
}

/// A compiled tool-name pattern.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Glob {
    pattern: String,
    tokens: Vec<Token>,
    literal_chars: usize,
    stars: usize,
}

/// Characters a pattern may not contain (reserved glob syntax).
const RESERVED: &[char] = &['[', ']', '{', '}', '\\', '!'];

impl Glob {
    /// Compiles `pattern`; errors name the problem.
    pub fn new(pattern: &str) -> Result<Glob, String> {
        if pattern.is_empty() {
            return Err("a tool pattern must not be empty".into());
        }
        if let Some(c) = pattern.chars().find(|c| RESERVED.contains(c)) {
            return Err(format!(
                "`{c}` is not supported in a tool pattern: only `*` (any run of characters) \
                 and `?` (one character) are wildcards"
            ));
        }
        if pattern.chars().any(|c| c.is_whitespace() || c.is_control()) {
            return Err("a tool pattern must not contain whitespace".into());
        }
        let mut tokens = Vec::new();
        let mut literal = String::new();
        let mut literal_chars = 0;
        let mut stars = 0;
        for c in pattern.chars() {
            match c {
                '*' | '?' => {
                    if !literal.is_empty() {
                        tokens.push(Token::Literal(std::mem::take(&mut literal)));
                    }
                    if c == '*' {
                        stars += 1;
                        if tokens.last() != Some(&Token::AnyRun) {
                            tokens.push(Token::AnyRun);
                        }
                    } else {
                        tokens.push(Token::AnyOne);
                    }
                }
                _ => {
                    literal.push(c);
                    literal_chars += 1;
                }
            }
        }
        if !literal.is_empty() {
            tokens.push(Token::Literal(literal));
        }
        Ok(Glob {
            pattern: pattern.to_owned(),
            tokens,
            literal_chars,
            stars,
        })
    }

    /// Whether `pattern` has any wildcard (otherwise it is an exact tool name).
    pub fn is_wildcard(pattern: &str) -> bool {
        pattern.contains(['*', '?'])
    }

    /// The pattern as written.
    pub fn as_str(&self) -> &str {
        &self.pattern
    }

    /// Whether `name` matches the whole pattern.
    pub fn matches(&self, name: &str) -> bool {
        // Greedy match with backtracking to the last `*` only: sufficient because every other
        // token has a fixed length.
        let t = &self.tokens;
        let (mut ti, mut ni) = (0usize, 0usize);
        let mut backtrack: Option<(usize, usize)> = None;
        loop {
            if ti < t.len() {
                match &t[ti] {
                    Token::AnyRun => {
                        backtrack = Some((ti + 1, ni));
                        ti += 1;
                        continue;
                    }
                    Token::AnyOne => {
                        if let Some(c) = name[ni..].chars().next() {
                            ni += c.len_utf8();
                            ti += 1;
                            continue;
                        }
                    }
                    Token::Literal(lit) => {
                        if name[ni..].starts_with(lit.as_str()) {
                            ni += lit.len();
                            ti += 1;
                            continue;
                        }
                    }
                }
            } else if ni == name.len() {
                return true;
            }
            match backtrack {
                Some((resume, from)) if from < name.len() => {
                    let step = name[from..].chars().next().map_or(1, char::len_utf8);
                    backtrack = Some((resume, from + step));
                    ti = resume;
                    ni = from + step;
                }
                _ => return false,
            }
        }
    }

    /// Orders patterns most specific first: more literal characters, then fewer `*`, then the
    /// pattern text (a total, deterministic order).
    pub fn specificity(&self, other: &Glob) -> Ordering {
        other
            .literal_chars
            .cmp(&self.literal_chars)
            .then(self.stars.cmp(&other.stars))
            .then_with(|| self.pattern.cmp(&other.pattern))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(p: &str, n: &str) -> bool {
        Glob::new(p).expect("valid pattern").matches(n)
    }

    #[test]
    fn matching() {
        assert!(m("crm.*", "crm.update_contact"));
        assert!(m("crm.*", "crm.contacts.update"));
        assert!(m("crm.*", "crm."));
        assert!(!m("crm.*", "crm"));
        assert!(!m("crm.*", "xcrm.update"));
        assert!(m("*", ""));
        assert!(m("*", "anything.at.all"));
        assert!(m("*.delete_*", "crm.delete_contact"));
        assert!(!m("*.delete_*", "crm.update_contact"));
        assert!(m("a*b*c", "aXbYc"));
        assert!(m("a*b*c", "abbbc"));
        assert!(!m("a*b*c", "acb"));
        assert!(m("get_?", "get_x"));
        assert!(!m("get_?", "get_xy"));
        assert!(m("café.?", "café.é"));
        assert!(m("send_email", "send_email"));
        assert!(!m("send_email", "send_emails"));
        assert!(m("**x", "abx"));
        assert!(m("*ab", "aab"));
    }

    #[test]
    fn rejects_unsupported_syntax() {
        for p in ["", "crm.[ab]", "crm.{a,b}", "a\\*", "a b", "!crm"] {
            assert!(Glob::new(p).is_err(), "{p}");
        }
    }

    #[test]
    fn most_specific_first() {
        let mut globs: Vec<Glob> = ["*", "crm.*", "crm.delete_*", "crm.*_contact", "crm.??"]
            .iter()
            .map(|p| Glob::new(p).expect("valid"))
            .collect();
        globs.sort_by(Glob::specificity);
        let order: Vec<&str> = globs.iter().map(Glob::as_str).collect();
        assert_eq!(
            order,
            ["crm.*_contact", "crm.delete_*", "crm.??", "crm.*", "*"]
        );
    }
}
