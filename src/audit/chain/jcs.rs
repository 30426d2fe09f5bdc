//! RFC 8785 (JCS) canonical JSON, written straight into a buffer: members sorted by their keys'
//! UTF-16 code units, no whitespace, strings escaped as ECMAScript does, numbers as ECMAScript
//! prints doubles. The same bytes as `serde_json_canonicalizer` (the reference the tests compare
//! against, and the writer of every number that is not a plain integer), without its buffer per
//! member and its re-parsed keys: an audit row's `details` take about 1 µs instead of 15.

use std::borrow::Cow;
use std::cmp::Ordering;
use std::io::Write as _;

use serde::de::{Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};

/// Integers up to this magnitude are exact doubles, which ECMAScript prints as their digits.
const EXACT: u64 = 1 << 53;

/// Appends the canonical form of `value` to `out`. Fails only for a number RFC 8785 cannot
/// print (never in a `Value` parsed from JSON).
pub(crate) fn write_value(out: &mut Vec<u8>, value: &Value) -> Result<(), serde_json::Error> {
    match value {
        Value::Null => out.extend_from_slice(b"null"),
        Value::Bool(true) => out.extend_from_slice(b"true"),
        Value::Bool(false) => out.extend_from_slice(b"false"),
        Value::Number(n) => write_number(out, n)?,
        Value::String(s) => write_str(out, s),
        Value::Array(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_value(out, item)?;
            }
            out.push(b']');
        }
        Value::Object(members) => write_object(out, members)?,
    }
    Ok(())
}

fn write_object(out: &mut Vec<u8>, members: &Map<String, Value>) -> Result<(), serde_json::Error> {
    let mut sorted: Vec<(&str, &Value)> = members.iter().map(|(k, v)| (k.as_str(), v)).collect();
    in_key_order(&mut sorted);
    out.push(b'{');
    for (i, (key, value)) in sorted.into_iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        write_str(out, key);
        out.push(b':');
        write_value(out, value)?;
    }
    out.push(b'}');
    Ok(())
}

/// Sorts object members as RFC 8785 orders them: by their keys' UTF-16 code units.
fn in_key_order<V>(members: &mut [(&str, V)]) {
    // UTF-8 byte order is code point order, and that is UTF-16 order unless a character
    // beyond U+FFFF meets one in U+E000..=U+FFFF (UTF-8 lead bytes 0xEE and up).
    if members.iter().any(|(k, _)| k.bytes().any(|b| b >= 0xee)) {
        members.sort_unstable_by(|a, b| utf16_order(a.0, b.0));
    } else {
        members.sort_unstable_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
    }
}

fn utf16_order(a: &str, b: &str) -> Ordering {
    a.encode_utf16().cmp(b.encode_utf16())
}

fn write_number(out: &mut Vec<u8>, n: &Number) -> Result<(), serde_json::Error> {
    match n.as_i64() {
        Some(i) if i.unsigned_abs() <= EXACT => {
            // Writing to a Vec cannot fail.
            let _ = write!(out, "{i}");
            Ok(())
        }
        // Fractions, exponents, -0 and integers beyond 2^53 (printed as the double they round
        // to): ECMAScript's shortest round-trip form, exactly as the reference writes it.
        _ => serde_json_canonicalizer::to_writer(n, out),
    }
}

/// Appends the canonical form of the JSON `text` to `out`, parsing it into a value borrowed
/// from the text ([`Lite`]: strings without escapes and keys stay where they are), so text in
/// another form (PostgreSQL's `jsonb` output: spaced, keys by length) costs few allocations.
/// Writes what [`write_value`] writes for the same text parsed as a `Value`, except that an
/// object with a key twice is refused (a `Value` would keep the last).
pub(crate) fn write_text<'a>(out: &mut Vec<u8>, text: &'a str) -> Result<Lite<'a>, Refused> {
    let value: Lite<'a> = serde_json::from_str(text).map_err(|_| Refused)?;
    write_lite(out, &value)?;
    Ok(value)
}

/// Text [`write_text`] cannot write canonically: not JSON, or an object with a key twice.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Refused;

/// A JSON value that borrows its strings from the text it was parsed from where it can.
#[derive(Debug)]
pub(crate) enum Lite<'a> {
    /// `null`.
    Null,
    /// `true` or `false`.
    Bool(bool),
    /// A negative integer.
    Int(i64),
    /// A non-negative integer.
    Uint(u64),
    /// Any other number.
    Float(f64),
    /// A string.
    Str(Cow<'a, str>),
    /// An array.
    Arr(Vec<Lite<'a>>),
    /// An object's members, as written.
    Obj(Vec<(Cow<'a, str>, Lite<'a>)>),
}

impl Lite<'_> {
    /// An object's string member `key` (`None` for another type, or no such member).
    pub(crate) fn str_member(&self, key: &str) -> Option<&str> {
        let Lite::Obj(members) = self else {
            return None;
        };
        members
            .iter()
            .find(|(k, _)| k == key)
            .and_then(|(_, v)| match v {
                Lite::Str(s) => Some(s.as_ref()),
                _ => None,
            })
    }
}

fn write_lite(out: &mut Vec<u8>, value: &Lite<'_>) -> Result<(), Refused> {
    match value {
        Lite::Null => out.extend_from_slice(b"null"),
        Lite::Bool(true) => out.extend_from_slice(b"true"),
        Lite::Bool(false) => out.extend_from_slice(b"false"),
        Lite::Int(i) => write_number(out, &Number::from(*i)).map_err(|_| Refused)?,
        Lite::Uint(u) => write_number(out, &Number::from(*u)).map_err(|_| Refused)?,
        Lite::Float(f) => {
            let n = Number::from_f64(*f).ok_or(Refused)?;
            write_number(out, &n).map_err(|_| Refused)?;
        }
        Lite::Str(s) => write_str(out, s),
        Lite::Arr(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_lite(out, item)?;
            }
            out.push(b']');
        }
        Lite::Obj(members) => {
            let mut sorted: Vec<(&str, &Lite<'_>)> =
                members.iter().map(|(k, v)| (k.as_ref(), v)).collect();
            in_key_order(&mut sorted);
            if sorted.windows(2).any(|w| w[0].0 == w[1].0) {
                return Err(Refused);
            }
            out.push(b'{');
            for (i, (key, value)) in sorted.into_iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_str(out, key);
                out.push(b':');
                write_lite(out, value)?;
            }
            out.push(b'}');
        }
    }
    Ok(())
}

impl<'de> Deserialize<'de> for Lite<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(LiteVisitor)
    }
}

struct LiteVisitor;

impl<'de> Visitor<'de> for LiteVisitor {
    type Value = Lite<'de>;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_unit<E>(self) -> Result<Self::Value, E> {
        Ok(Lite::Null)
    }
    fn visit_bool<E>(self, b: bool) -> Result<Self::Value, E> {
        Ok(Lite::Bool(b))
    }
    fn visit_i64<E>(self, i: i64) -> Result<Self::Value, E> {
        Ok(Lite::Int(i))
    }
    fn visit_u64<E>(self, u: u64) -> Result<Self::Value, E> {
        Ok(Lite::Uint(u))
    }
    fn visit_f64<E>(self, f: f64) -> Result<Self::Value, E> {
        Ok(Lite::Float(f))
    }
    fn visit_borrowed_str<E>(self, s: &'de str) -> Result<Self::Value, E> {
        Ok(Lite::Str(Cow::Borrowed(s)))
    }
    fn visit_str<E>(self, s: &str) -> Result<Self::Value, E> {
        Ok(Lite::Str(Cow::Owned(s.to_owned())))
    }
    fn visit_string<E>(self, s: String) -> Result<Self::Value, E> {
        Ok(Lite::Str(Cow::Owned(s)))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(4));
        while let Some(item) = seq.next_element()? {
            items.push(item);
        }
        Ok(Lite::Arr(items))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut members = Vec::with_capacity(map.size_hint().unwrap_or(16));
        while let Some(Key(key)) = map.next_key()? {
            members.push((key, map.next_value()?));
        }
        Ok(Lite::Obj(members))
    }
}

/// An object key, borrowed from the text when it has no escapes.
struct Key<'a>(Cow<'a, str>);

impl<'de> Deserialize<'de> for Key<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct KeyVisitor;
        impl<'de> Visitor<'de> for KeyVisitor {
            type Value = Key<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("an object key")
            }
            fn visit_borrowed_str<E>(self, s: &'de str) -> Result<Self::Value, E> {
                Ok(Key(Cow::Borrowed(s)))
            }
            fn visit_str<E>(self, s: &str) -> Result<Self::Value, E> {
                Ok(Key(Cow::Owned(s.to_owned())))
            }
            fn visit_string<E>(self, s: String) -> Result<Self::Value, E> {
                Ok(Key(Cow::Owned(s)))
            }
        }
        d.deserialize_str(KeyVisitor)
    }
}

/// A JSON string as RFC 8785 writes it: `"` and `\` escaped, control characters as `\b`,
/// `\t`, `\n`, `\f`, `\r` or `\u00xx`, everything else as it is.
pub(crate) fn write_str(out: &mut Vec<u8>, s: &str) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    out.push(b'"');
    let bytes = s.as_bytes();
    // Most strings need no escape: one pass without early exit (so it vectorises), one copy.
    let plain = bytes.iter().fold(true, |plain, &b| {
        plain & (b >= 0x20) & (b != b'"') & (b != b'\\')
    });
    if plain {
        out.extend_from_slice(bytes);
        out.push(b'"');
        return;
    }
    let mut start = 0;
    for (i, &b) in bytes.iter().enumerate() {
        let escape: &[u8] = match b {
            b'"' => b"\\\"",
            b'\\' => b"\\\\",
            0x08 => b"\\b",
            0x09 => b"\\t",
            0x0a => b"\\n",
            0x0c => b"\\f",
            0x0d => b"\\r",
            0x00..=0x1f => &[
                b'\\',
                b'u',
                b'0',
                b'0',
                HEX[usize::from(b >> 4)],
                HEX[usize::from(b & 0xf)],
            ],
            _ => continue,
        };
        out.extend_from_slice(&bytes[start..i]);
        out.extend_from_slice(escape);
        start = i + 1;
    }
    out.extend_from_slice(&bytes[start..]);
    out.push(b'"');
}

#[cfg(test)]
mod tests {
    use rand::rngs::StdRng;
    use rand::{Rng, SeedableRng};
    use serde_json::json;

    use super::*;

    fn canonical(v: &Value) -> String {
        let mut out = Vec::new();
        write_value(&mut out, v).expect("canonical");
        String::from_utf8(out).expect("utf-8")
    }

    fn reference(v: &Value) -> String {
        serde_json_canonicalizer::to_string(v).expect("reference")
    }

    /// Characters that test the escaping and the key order.
    const ODD: &[char] = &[
        'a',
        'Z',
        '0',
        ' ',
        '"',
        '\\',
        '/',
        '\u{0}',
        '\u{8}',
        '\t',
        '\n',
        '\u{b}',
        '\u{c}',
        '\r',
        '\u{1f}',
        '\u{7f}',
        '\u{80}',
        'é',
        '€',
        '\u{2028}',
        '\u{d7ff}',
        '\u{e000}',
        '\u{fb01}',
        '\u{ffff}',
        '😀',
        '\u{10000}',
        '\u{10ffff}',
    ];

    fn string(rng: &mut StdRng) -> String {
        (0..rng.gen_range(0..6))
            .map(|_| ODD[rng.gen_range(0..ODD.len())])
            .collect()
    }

    fn number(rng: &mut StdRng) -> Value {
        match rng.gen_range(0..8) {
            0 => json!(rng.gen_range(-1000..1000)),
            1 => json!(rng.r#gen::<i64>()),
            2 => json!(rng.r#gen::<u64>()),
            3 => json!((1_i64 << 53) + rng.gen_range(-3..4)),
            4 => json!(rng.r#gen::<f64>() * 10f64.powi(rng.gen_range(-30..30))),
            5 => json!(-rng.r#gen::<f64>()),
            6 => json!(rng.gen_range(-5..5) as f64),
            _ => json!(1e21 * f64::from(rng.gen_range(1..9))),
        }
    }

    fn value(rng: &mut StdRng, depth: u32) -> Value {
        match rng.gen_range(0..if depth > 3 { 4 } else { 6 }) {
            0 => Value::Null,
            1 => Value::Bool(rng.r#gen()),
            2 => number(rng),
            3 => Value::String(string(rng)),
            4 => (0..rng.gen_range(0..5))
                .map(|_| value(rng, depth + 1))
                .collect(),
            _ => Value::Object(
                (0..rng.gen_range(0..7))
                    .map(|_| (string(rng), value(rng, depth + 1)))
                    .collect(),
            ),
        }
    }

    #[test]
    fn it_writes_what_the_reference_writes() {
        let mut rng = StdRng::seed_from_u64(8785);
        for _ in 0..20_000 {
            let v = value(&mut rng, 0);
            assert_eq!(canonical(&v), reference(&v), "{v:?}");
        }
    }

    /// The same value in another form: spaced, members in another order (as PostgreSQL
    /// prints `jsonb`: shorter keys first).
    fn respaced(v: &Value) -> String {
        match v {
            Value::Array(items) => {
                let items: Vec<String> = items.iter().map(respaced).collect();
                format!("[{}]", items.join(", "))
            }
            Value::Object(m) => {
                let mut members: Vec<(&String, &Value)> = m.iter().collect();
                members.sort_by_key(|(k, _)| (k.len(), k.as_bytes().to_vec()));
                let members: Vec<String> = members
                    .into_iter()
                    .map(|(k, v)| format!("{}: {}", Value::String(k.clone()), respaced(v)))
                    .collect();
                format!("{{{}}}", members.join(", "))
            }
            other => other.to_string(),
        }
    }

    #[test]
    fn text_in_any_form_writes_what_its_value_writes() {
        let mut rng = StdRng::seed_from_u64(8786);
        for _ in 0..20_000 {
            let v = value(&mut rng, 0);
            for text in [v.to_string(), respaced(&v)] {
                let mut out = Vec::new();
                write_text(&mut out, &text).expect("written");
                assert_eq!(
                    String::from_utf8(out).expect("utf-8"),
                    canonical(&v),
                    "{text}"
                );
            }
        }
    }

    #[test]
    fn a_key_twice_or_broken_text_is_refused() {
        let mut out = Vec::new();
        assert!(write_text(&mut out, r#"{"a": 1, "b": 2, "a": 1}"#).is_err());
        assert!(write_text(&mut out, r#"{"a": 1"#).is_err());
        assert!(write_text(&mut out, r#"{"a": 1} x"#).is_err());
        let lite = write_text(&mut out, r#"{"tool": "crm.get", "n": 1}"#).expect("written");
        assert_eq!(lite.str_member("tool"), Some("crm.get"));
        assert_eq!(lite.str_member("n"), None);
        assert_eq!(lite.str_member("agent"), None);
    }

    #[test]
    fn the_edges_of_numbers_and_key_order() {
        for v in [
            json!({"\u{e000}": 1, "😀": 2, "\u{ffff}": 3, "a": 4, "": 5}),
            json!([
                0.0,
                -0.0,
                1.0,
                1e21,
                1e-7,
                123456789012345678u64,
                -9007199254740993i64
            ]),
            json!([
                9007199254740992u64,
                9007199254740993u64,
                -9007199254740992i64,
                0.1
            ]),
            json!({"b": [true, false, null], "a": {"d": "\u{1}\u{7f}", "c": "\"\\/"}}),
        ] {
            assert_eq!(canonical(&v), reference(&v));
        }
    }
}
