//! TOML with source positions, for policy errors that name a line.
//!
//! `toml::Spanned<T>` cannot wrap every value: an implicit table (the `tools` of
//! `[tools."crm.*"]`) has no span, and `Spanned` then fails to deserialize. [`Located`] speaks
//! the same span protocol of the `toml` 0.8 deserializer but accepts values with and without a
//! span, so the whole document is read into one tree where every value that has a position
//! keeps it. If a future `toml` stopped offering spans, values would simply arrive without
//! them and errors would lose their line numbers, never their content.

use std::fmt;
use std::ops::Range;

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};

// The span protocol of `serde_spanned` 0.6 (used by `toml` 0.8).
const SPANNED_NAME: &str = "$__serde_spanned_private_Spanned";
const SPANNED_START: &str = "$__serde_spanned_private_start";
const SPANNED_END: &str = "$__serde_spanned_private_end";
const SPANNED_VALUE: &str = "$__serde_spanned_private_value";
const SPANNED_FIELDS: &[&str] = &[SPANNED_START, SPANNED_END, SPANNED_VALUE];
// How `toml` 0.8 hands a datetime to `deserialize_any`.
const DATETIME_KEY: &str = "$__toml_private_datetime";

/// A TOML value with its byte range in the source, when known.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Located {
    span: Option<Range<usize>>,
    pub(crate) value: TomlValue,
}

/// A TOML value whose children are [`Located`].
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum TomlValue {
    String(String),
    Integer(i64),
    Float(f64),
    Boolean(bool),
    Datetime(String),
    Array(Vec<Located>),
    /// Entries in document order.
    Table(Vec<(String, Located)>),
}

impl Located {
    /// Its own span, or the first span found among its children (implicit tables have none).
    pub(crate) fn span(&self) -> Option<Range<usize>> {
        if let Some(span) = &self.span {
            return Some(span.clone());
        }
        match &self.value {
            TomlValue::Array(items) => items.iter().find_map(Located::span),
            TomlValue::Table(entries) => entries.iter().find_map(|(_, v)| v.span()),
            _ => None,
        }
    }

    /// The TOML type name, for "must be a string, got integer" messages.
    pub(crate) fn type_name(&self) -> &'static str {
        match self.value {
            TomlValue::String(_) => "string",
            TomlValue::Integer(_) => "integer",
            TomlValue::Float(_) => "float",
            TomlValue::Boolean(_) => "boolean",
            TomlValue::Datetime(_) => "datetime",
            TomlValue::Array(_) => "array",
            TomlValue::Table(_) => "table",
        }
    }
}

/// A syntax error: its byte range and message.
#[derive(Debug)]
pub(crate) struct SyntaxError {
    pub(crate) span: Option<Range<usize>>,
    pub(crate) message: String,
}

/// Parses a TOML document into a located tree.
pub(crate) fn parse(src: &str) -> Result<Located, SyntaxError> {
    toml::from_str::<Located>(src).map_err(|e| SyntaxError {
        span: e.span(),
        message: e.message().trim().to_owned(),
    })
}

/// 1-based line and column (in characters) of byte `offset` in `src`.
pub(crate) fn line_col(src: &str, offset: usize) -> (usize, usize) {
    let offset = offset.min(src.len());
    let before = src.get(..offset).unwrap_or(src);
    let line = before.bytes().filter(|&b| b == b'\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let column = before[line_start..].chars().count() + 1;
    (line, column)
}

/// Appends a TOML key path segment (after a `.` unless `path` is empty): bare when possible,
/// quoted otherwise.
pub(crate) fn push_key(path: &mut String, key: &str) {
    if !path.is_empty() {
        path.push('.');
    }
    let bare = !key.is_empty()
        && key
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    if bare {
        path.push_str(key);
    } else {
        path.push('"');
        for c in key.chars() {
            if c == '"' || c == '\\' {
                path.push('\\');
            }
            path.push(c);
        }
        path.push('"');
    }
}

/// The value of a span-protocol map, without its own span.
struct Unlocated(TomlValue);

impl<'de> Deserialize<'de> for Unlocated {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(LocatedVisitor)
            .map(|l| Unlocated(l.value))
    }
}

impl<'de> Deserialize<'de> for Located {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_struct(SPANNED_NAME, SPANNED_FIELDS, LocatedVisitor)
    }
}

struct LocatedVisitor;

impl LocatedVisitor {
    fn bare(value: TomlValue) -> Located {
        Located { span: None, value }
    }
}

impl<'de> Visitor<'de> for LocatedVisitor {
    type Value = Located;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a TOML value")
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Located, E> {
        Ok(Self::bare(TomlValue::Boolean(v)))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Located, E> {
        Ok(Self::bare(TomlValue::Integer(v)))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Located, E> {
        i64::try_from(v)
            .map(|v| Self::bare(TomlValue::Integer(v)))
            .map_err(|_| E::custom("integer out of range"))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Located, E> {
        Ok(Self::bare(TomlValue::Float(v)))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Located, E> {
        Ok(Self::bare(TomlValue::String(v.to_owned())))
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<Located, E> {
        Ok(Self::bare(TomlValue::String(v)))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Located, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element::<Located>()? {
            items.push(item);
        }
        Ok(Self::bare(TomlValue::Array(items)))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Located, A::Error> {
        let Some(first) = map.next_key::<String>()? else {
            return Ok(Self::bare(TomlValue::Table(Vec::new())));
        };
        if first == SPANNED_START {
            let start: usize = map.next_value()?;
            let _end_key: Option<String> = map.next_key()?;
            let end: usize = map.next_value()?;
            let _value_key: Option<String> = map.next_key()?;
            let Unlocated(value) = map.next_value()?;
            return Ok(Located {
                span: Some(start..end),
                value,
            });
        }
        if first == DATETIME_KEY {
            let text: String = map.next_value()?;
            return Ok(Self::bare(TomlValue::Datetime(text)));
        }
        let mut entries = vec![(first, map.next_value::<Located>()?)];
        while let Some(key) = map.next_key::<String>()? {
            let value = map.next_value::<Located>()?;
            entries.push((key, value));
        }
        Ok(Self::bare(TomlValue::Table(entries)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry<'a>(v: &'a Located, key: &str) -> &'a Located {
        match &v.value {
            TomlValue::Table(entries) => {
                &entries
                    .iter()
                    .find(|(k, _)| k == key)
                    .expect("key present")
                    .1
            }
            _ => panic!("not a table"),
        }
    }

    #[test]
    fn keeps_positions_including_under_implicit_tables() {
        let src = "# comment\n[defaults]\nexpiry = \"24h\"\n\n[tools.\"crm.*\"]\ncategory = \"C\"\nagents = [\"a\", 3]\nwhen = 1979-05-27\n";
        let root = parse(src).expect("valid toml");
        let expiry = entry(entry(&root, "defaults"), "expiry");
        assert_eq!(expiry.value, TomlValue::String("24h".into()));
        assert_eq!(line_col(src, expiry.span().expect("span").start), (3, 10));
        let tools = entry(&root, "tools");
        // `tools` is implicit: it borrows its first child's position.
        assert_eq!(line_col(src, tools.span().expect("span").start).0, 5);
        let rule = entry(tools, "crm.*");
        let agents = entry(rule, "agents");
        let TomlValue::Array(items) = &agents.value else {
            panic!("array")
        };
        assert_eq!(items[1].type_name(), "integer");
        assert_eq!(line_col(src, items[1].span().expect("span").start), (7, 16));
        assert_eq!(entry(rule, "when").type_name(), "datetime");
    }

    #[test]
    fn syntax_errors_have_positions() {
        let src = "a = 1\nb = \n";
        let e = parse(src).expect_err("invalid");
        assert_eq!(line_col(src, e.span.expect("span").start).0, 2);
        assert!(!e.message.is_empty());
    }

    #[test]
    fn key_paths_quote_when_needed() {
        let mut p = String::new();
        push_key(&mut p, "tools");
        push_key(&mut p, "crm.*");
        push_key(&mut p, "say \"hi\"");
        push_key(&mut p, "category");
        assert_eq!(p, r#"tools."crm.*"."say \"hi\"".category"#);
    }
}
