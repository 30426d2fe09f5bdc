//! Wire-format helpers shared by the parsers: closed string enums that fail closed on unknown
//! values, the [`FieldError`] shape of a rejected input, and a reader that walks one JSON object
//! collecting every broken rule instead of stopping at the first.

use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// One broken rule in an input, named by its JSON path (`tool_category`,
/// `evidence_refs[2].trust_tier`); the path is empty for the document as a whole.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FieldError {
    /// JSON path of the offending field; empty for the document as a whole.
    pub field: String,
    /// The rule the field broke, in words an agent author can act on.
    pub message: String,
}

impl FieldError {
    /// A new field error.
    pub fn new(field: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            field: field.into(),
            message: message.into(),
        }
    }
}

impl fmt::Display for FieldError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.field.is_empty() {
            f.write_str(&self.message)
        } else {
            write!(f, "{}: {}", self.field, self.message)
        }
    }
}

impl std::error::Error for FieldError {}

/// A closed set of values that travel as fixed lowercase strings.
pub trait WireEnum: Sized + Copy + 'static {
    /// Every variant, in declaration order.
    const ALL: &'static [Self];
    /// The wire spelling of `self`.
    fn wire(self) -> &'static str;
    /// The variant spelled `s`; unknown spellings are `None` (fail closed).
    fn from_wire(s: &str) -> Option<Self> {
        Self::ALL.iter().copied().find(|v| v.wire() == s)
    }
    /// "must be one of `a`, `b`, `c`", for error messages.
    fn expected() -> String {
        let mut out = String::from("must be one of ");
        for (i, v) in Self::ALL.iter().enumerate() {
            if i > 0 {
                out.push_str(", ");
            }
            out.push('`');
            out.push_str(v.wire());
            out.push('`');
        }
        out
    }
}

/// Declares a [`WireEnum`] whose derived order is its declaration order, with `as_str`,
/// `parse`, `Display` and serde through the wire spelling.
macro_rules! wire_enum {
    ($(#[$meta:meta])* $vis:vis enum $name:ident {
        $($(#[$vmeta:meta])* $variant:ident => $text:literal),+ $(,)?
    }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        $vis enum $name { $($(#[$vmeta])* #[doc = concat!("Wire spelling `", $text, "`.")] $variant),+ }

        impl $crate::domain::contract::wire::WireEnum for $name {
            const ALL: &'static [Self] = &[$(Self::$variant),+];
            fn wire(self) -> &'static str {
                self.as_str()
            }
        }

        impl $name {
            /// The wire spelling.
            pub const fn as_str(self) -> &'static str {
                match self { $(Self::$variant => $text),+ }
            }

            /// Parses the wire spelling; unknown values are `None` (fail closed).
            pub fn parse(s: &str) -> Option<Self> {
                match s { $($text => Some(Self::$variant),)+ _ => None }
            }
        }

        impl ::std::fmt::Display for $name {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl ::schemars::JsonSchema for $name {
            fn schema_name() -> ::std::borrow::Cow<'static, str> {
                stringify!($name).into()
            }

            fn json_schema(_: &mut ::schemars::SchemaGenerator) -> ::schemars::Schema {
                ::schemars::json_schema!({ "type": "string", "enum": [$($text),+] })
            }
        }

        impl ::serde::Serialize for $name {
            fn serialize<S: ::serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.as_str())
            }
        }

        impl<'de> ::serde::Deserialize<'de> for $name {
            fn deserialize<D: ::serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let s = <::std::borrow::Cow<'de, str>>::deserialize(d)?;
                Self::parse(&s).ok_or_else(|| {
                    ::serde::de::Error::custom(format!(
                        "unknown {} `{}`; {}",
                        stringify!($name),
                        s,
                        <Self as $crate::domain::contract::wire::WireEnum>::expected()
                    ))
                })
            }
        }
    };
}
pub(crate) use wire_enum;

/// The JSON type of a value, for "must be a string, got number" messages.
pub(crate) fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// Joins a parent path and a key: `freshness` + `status` = `freshness.status`.
pub(crate) fn join(parent: &str, key: &str) -> String {
    if parent.is_empty() {
        key.to_owned()
    } else {
        let mut out = String::with_capacity(parent.len() + 1 + key.len());
        out.push_str(parent);
        out.push('.');
        out.push_str(key);
        out
    }
}

/// Reads one JSON object field by field, pushing every broken rule into a shared list.
///
/// Absent keys are "missing"; a key present with `null` is a type error (the v1 schema allows
/// no nulls), so a runtime cannot blank out a required field.
pub(crate) struct ObjectReader<'a, 'e> {
    obj: &'a Map<String, Value>,
    path: &'a str,
    errors: &'e mut Vec<FieldError>,
}

impl<'a, 'e> ObjectReader<'a, 'e> {
    /// Starts reading `value` at `path`; `None` (with an error) when it is not an object.
    pub(crate) fn new(
        value: &'a Value,
        path: &'a str,
        errors: &'e mut Vec<FieldError>,
    ) -> Option<Self> {
        match value {
            Value::Object(obj) => Some(Self { obj, path, errors }),
            other => {
                errors.push(FieldError::new(
                    path,
                    format!("must be an object, got {}", type_name(other)),
                ));
                None
            }
        }
    }

    /// The path of `key` inside this object.
    pub(crate) fn path(&self, key: &str) -> String {
        join(self.path, key)
    }

    /// Records an error at `key`.
    pub(crate) fn error(&mut self, key: &str, message: impl Into<String>) {
        let field = self.path(key);
        self.errors.push(FieldError::new(field, message));
    }

    /// The shared error list, for parsers of nested values.
    pub(crate) fn errors(&mut self) -> &mut Vec<FieldError> {
        self.errors
    }

    /// Records an error for every key outside `allowed` (the schema's
    /// `additionalProperties: false`).
    pub(crate) fn deny_unknown(&mut self, allowed: &[&str]) {
        for key in self.obj.keys() {
            if !allowed.contains(&key.as_str()) {
                self.errors.push(FieldError::new(
                    join(self.path, key),
                    "is not a known field",
                ));
            }
        }
    }

    /// The raw value at `key`, if present (even when `null`).
    pub(crate) fn get(&self, key: &str) -> Option<&'a Value> {
        self.obj.get(key)
    }

    /// The raw value at `key`, with an error when it is absent.
    pub(crate) fn required(&mut self, key: &str) -> Option<&'a Value> {
        let v = self.get(key);
        if v.is_none() {
            self.error(key, "is required");
        }
        v
    }

    fn expect_str(&mut self, key: &str, v: &'a Value) -> Option<&'a str> {
        match v {
            Value::String(s) => Some(s),
            other => {
                let msg = format!("must be a string, got {}", type_name(other));
                self.error(key, msg);
                None
            }
        }
    }

    /// A string that must be present; with `non_empty`, also not blank.
    pub(crate) fn string(&mut self, key: &str, non_empty: bool) -> Option<&'a str> {
        let v = self.required(key)?;
        let s = self.expect_str(key, v)?;
        self.check_non_empty(key, s, non_empty)
    }

    /// A string that may be absent; with `non_empty`, not blank when present.
    pub(crate) fn opt_string(&mut self, key: &str, non_empty: bool) -> Option<&'a str> {
        let v = self.get(key)?;
        let s = self.expect_str(key, v)?;
        self.check_non_empty(key, s, non_empty)
    }

    fn check_non_empty(&mut self, key: &str, s: &'a str, non_empty: bool) -> Option<&'a str> {
        if non_empty && s.trim().is_empty() {
            self.error(key, "must be a non-empty string");
            None
        } else {
            Some(s)
        }
    }

    /// A required enum value; unknown spellings fail closed.
    pub(crate) fn enumeration<T: WireEnum>(&mut self, key: &str) -> Option<T> {
        let v = self.required(key)?;
        self.enum_value(key, v)
    }

    /// An optional enum value; unknown spellings fail closed.
    pub(crate) fn opt_enumeration<T: WireEnum>(&mut self, key: &str) -> Option<T> {
        let v = self.get(key)?;
        self.enum_value(key, v)
    }

    fn enum_value<T: WireEnum>(&mut self, key: &str, v: &'a Value) -> Option<T> {
        let s = self.expect_str(key, v)?;
        let parsed = T::from_wire(s);
        if parsed.is_none() {
            let msg = format!("unknown value `{s}`; {}", T::expected());
            self.error(key, msg);
        }
        parsed
    }

    /// A required string that is not blank and has at most `max` characters.
    pub(crate) fn bounded(&mut self, key: &str, max: usize) -> Option<&'a str> {
        let s = self.string(key, true)?;
        self.check_max(key, s, max)
    }

    /// An optional string that, when present, is not blank and has at most `max` characters.
    pub(crate) fn opt_bounded(&mut self, key: &str, max: usize) -> Option<&'a str> {
        let s = self.opt_string(key, true)?;
        self.check_max(key, s, max)
    }

    fn check_max(&mut self, key: &str, s: &'a str, max: usize) -> Option<&'a str> {
        if s.chars().count() > max {
            self.error(key, format!("must be at most {max} characters"));
            None
        } else {
            Some(s)
        }
    }

    /// A required boolean.
    pub(crate) fn boolean(&mut self, key: &str) -> Option<bool> {
        match self.required(key)? {
            Value::Bool(b) => Some(*b),
            other => {
                let msg = format!("must be a boolean, got {}", type_name(other));
                self.error(key, msg);
                None
            }
        }
    }

    /// An optional whole number from 0 to `max` ([`whole_number`]).
    pub(crate) fn opt_u64(&mut self, key: &str, max: u64) -> Option<u64> {
        let v = self.get(key)?;
        match whole_number(v) {
            Some(n) if n <= max => Some(n),
            Some(_) => {
                self.error(key, format!("must be at most {max}"));
                None
            }
            None => {
                let msg = format!(
                    "must be a whole number from 0 to {max}, got {}",
                    type_name(v)
                );
                self.error(key, msg);
                None
            }
        }
    }

    /// An optional JSON object, cloned.
    pub(crate) fn opt_object(&mut self, key: &str) -> Option<Map<String, Value>> {
        match self.get(key)? {
            Value::Object(m) => Some(m.clone()),
            other => {
                let msg = format!("must be an object, got {}", type_name(other));
                self.error(key, msg);
                None
            }
        }
    }

    /// An optional JSON number.
    pub(crate) fn opt_number(&mut self, key: &str) -> Option<f64> {
        let v = self.get(key)?;
        match v.as_f64() {
            Some(n) => Some(n),
            None => {
                let msg = format!("must be a number, got {}", type_name(v));
                self.error(key, msg);
                None
            }
        }
    }

    /// An optional array of strings; bad items are reported by index.
    pub(crate) fn opt_string_array(&mut self, key: &str) -> Option<Vec<String>> {
        let v = self.get(key)?;
        let Value::Array(items) = v else {
            let msg = format!("must be an array of strings, got {}", type_name(v));
            self.error(key, msg);
            return None;
        };
        let mut out = Vec::with_capacity(items.len());
        let mut ok = true;
        for (i, item) in items.iter().enumerate() {
            match item {
                Value::String(s) => out.push(s.clone()),
                other => {
                    ok = false;
                    let field = format!("{}[{i}]", self.path(key));
                    self.errors.push(FieldError::new(
                        field,
                        format!("must be a string, got {}", type_name(other)),
                    ));
                }
            }
        }
        ok.then_some(out)
    }
}

/// `v` as a whole number from 0: JSON has one number type, so `3.0` is the whole number 3 (as
/// JSON Schema's `integer` says); fractions, negatives and numbers past 2^53 are not.
pub fn whole_number(v: &Value) -> Option<u64> {
    v.as_u64().or_else(|| {
        v.as_f64()
            .filter(|f| f.fract() == 0.0 && *f >= 0.0 && *f <= 2f64.powi(53))
            .map(|f| f as u64)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    use crate::domain::contract::vocab::Route;

    #[test]
    fn wire_enum_round_trips_and_fails_closed() {
        assert_eq!(Route::parse("ask"), Some(Route::Ask));
        assert_eq!(Route::parse("Ask"), None);
        assert_eq!(<Route as WireEnum>::from_wire("defer"), Some(Route::Defer));
        assert_eq!(Route::Refuse.to_string(), "refuse");
        assert_eq!(
            Route::expected(),
            "must be one of `accept`, `ask`, `defer`, `refuse`"
        );
        let r: Route = serde_json::from_value(json!("accept")).expect("accept parses");
        assert_eq!(r, Route::Accept);
        let err = serde_json::from_value::<Route>(json!("revise")).expect_err("unknown");
        assert!(err.to_string().contains("unknown Route `revise`"));
    }

    #[test]
    fn reader_collects_every_error_with_its_path() {
        let v = json!({"a": 1, "b": " ", "c": null, "e": "maybe", "x": true});
        let mut errors = Vec::new();
        let mut r = ObjectReader::new(&v, "obj", &mut errors).expect("object");
        assert!(r.string("a", true).is_none());
        assert!(r.string("b", true).is_none());
        assert!(r.opt_string("c", false).is_none());
        assert!(r.string("d", false).is_none());
        assert!(r.enumeration::<Route>("e").is_none());
        r.deny_unknown(&["a", "b", "c", "d", "e"]);
        let got: Vec<String> = errors.iter().map(ToString::to_string).collect();
        assert_eq!(
            got,
            [
                "obj.a: must be a string, got number",
                "obj.b: must be a non-empty string",
                "obj.c: must be a string, got null",
                "obj.d: is required",
                "obj.e: unknown value `maybe`; must be one of `accept`, `ask`, `defer`, `refuse`",
                "obj.x: is not a known field",
            ]
        );
    }

    #[test]
    fn non_objects_are_reported_at_their_path() {
        let mut errors = Vec::new();
        assert!(ObjectReader::new(&json!([1]), "", &mut errors).is_none());
        assert_eq!(errors[0].to_string(), "must be an object, got array");
    }
}
