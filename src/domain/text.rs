//! Small parsing helpers shared by the domain's parsers: reading a JSON object field by field
//! while collecting every broken rule instead of stopping at the first.

use serde_json::{Map, Value};

use super::FieldError;

/// An enum that travels as one of a fixed set of lowercase strings. Unknown values fail closed.
pub trait StrEnum: Sized + Copy + 'static {
    /// Every variant, in order.
    const ALL: &'static [Self];
    /// The wire spelling.
    fn as_str(self) -> &'static str;
    /// The variant spelled `s`, if any.
    fn parse(s: &str) -> Option<Self> {
        Self::ALL.iter().copied().find(|v| v.as_str() == s)
    }
    /// "one of `a`, `b`, `c`", for error messages.
    fn expected() -> String {
        let names: Vec<String> = Self::ALL
            .iter()
            .map(|v| format!("`{}`", v.as_str()))
            .collect();
        format!("must be one of {}", names.join(", "))
    }
}

/// Declares a `StrEnum` with serde support through its wire spelling.
macro_rules! str_enum {
    ($(#[$meta:meta])* $vis:vis enum $name:ident { $($(#[$vmeta:meta])* $variant:ident => $text:literal),+ $(,)? }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        $vis enum $name { $($(#[$vmeta])* #[doc = concat!("Wire spelling `", $text, "`.")] $variant),+ }

        impl $crate::domain::text::StrEnum for $name {
            const ALL: &'static [Self] = &[$(Self::$variant),+];
            fn as_str(self) -> &'static str {
                match self { $(Self::$variant => $text),+ }
            }
        }

        impl $name {
            /// The wire spelling.
            pub fn as_str(self) -> &'static str {
                <Self as $crate::domain::text::StrEnum>::as_str(self)
            }
            /// Parses the wire spelling; unknown values are `None` (fail closed).
            pub fn parse(s: &str) -> Option<Self> {
                <Self as $crate::domain::text::StrEnum>::parse(s)
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.as_str())
            }
        }

        impl<'de> serde::Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let s = String::deserialize(d)?;
                Self::parse(&s).ok_or_else(|| serde::de::Error::custom(format!(
                    "unknown {} `{}`", stringify!($name), s
                )))
            }
        }
    };
}
pub(crate) use str_enum;

/// Joins a parent path and a key: `tool` + `name` = `tool.name`.
pub fn join(parent: &str, key: &str) -> String {
    if parent.is_empty() {
        key.to_owned()
    } else {
        format!("{parent}.{key}")
    }
}

/// The JSON type of a value, for "expected string, got number" messages.
pub fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// Reads one JSON object, collecting errors into a shared list.
pub struct Reader<'a> {
    obj: &'a Map<String, Value>,
    path: String,
    errors: &'a mut Vec<FieldError>,
}

impl<'a> Reader<'a> {
    /// Starts reading `value` at `path`; `None` (with an error) when it is not an object.
    pub fn object(
        value: &'a Value,
        path: &str,
        errors: &'a mut Vec<FieldError>,
    ) -> Option<Reader<'a>> {
        match value {
            Value::Object(obj) => Some(Reader {
                obj,
                path: path.to_owned(),
                errors,
            }),
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
    pub fn path(&self, key: &str) -> String {
        join(&self.path, key)
    }

    /// Records an error at `key`.
    pub fn error(&mut self, key: &str, message: impl Into<String>) {
        let field = self.path(key);
        self.errors.push(FieldError::new(field, message));
    }

    /// Records errors for keys outside `allowed` (unknown fields fail closed).
    pub fn deny_unknown(&mut self, allowed: &[&str]) {
        let unknown: Vec<String> = self
            .obj
            .keys()
            .filter(|k| !allowed.contains(&k.as_str()))
            .cloned()
            .collect();
        for key in unknown {
            self.error(&key, "is not a known field");
        }
    }

    /// The raw value at `key`; `None` when absent or null.
    pub fn raw(&self, key: &str) -> Option<&'a Value> {
        match self.obj.get(key) {
            None | Some(Value::Null) => None,
            Some(v) => Some(v),
        }
    }

    /// The raw value at `key`, with an error when it is missing.
    pub fn required(&mut self, key: &str) -> Option<&'a Value> {
        let v = self.raw(key);
        if v.is_none() {
            self.error(key, "is required");
        }
        v
    }

    fn as_str(&mut self, key: &str, v: &'a Value) -> Option<&'a str> {
        match v {
            Value::String(s) => Some(s.as_str()),
            other => {
                self.error(key, format!("must be a string, got {}", type_name(other)));
                None
            }
        }
    }

    /// A required string, trimmed-nonempty and at most `max` characters.
    pub fn string(&mut self, key: &str, max: usize) -> Option<&'a str> {
        let v = self.required(key)?;
        let s = self.as_str(key, v)?;
        self.check_len(key, s, max)
    }

    /// An optional string with the same rules as [`Reader::string`].
    pub fn opt_string(&mut self, key: &str, max: usize) -> Option<&'a str> {
        let v = self.raw(key)?;
        let s = self.as_str(key, v)?;
        self.check_len(key, s, max)
    }

    fn check_len(&mut self, key: &str, s: &'a str, max: usize) -> Option<&'a str> {
        if s.trim().is_empty() {
            self.error(key, "must not be empty");
            None
        } else if s.chars().count() > max {
            self.error(key, format!("must be at most {max} characters"));
            None
        } else {
            Some(s)
        }
    }

    /// A required boolean.
    pub fn boolean(&mut self, key: &str) -> Option<bool> {
        match self.required(key)? {
            Value::Bool(b) => Some(*b),
            other => {
                let msg = format!("must be a boolean, got {}", type_name(other));
                self.error(key, msg);
                None
            }
        }
    }

    /// A required enum value; unknown spellings fail closed.
    pub fn enumeration<T: StrEnum>(&mut self, key: &str) -> Option<T> {
        let v = self.required(key)?;
        self.enum_value(key, v)
    }

    /// An optional enum value.
    pub fn opt_enumeration<T: StrEnum>(&mut self, key: &str) -> Option<T> {
        let v = self.raw(key)?;
        self.enum_value(key, v)
    }

    fn enum_value<T: StrEnum>(&mut self, key: &str, v: &'a Value) -> Option<T> {
        let s = self.as_str(key, v)?;
        let parsed = T::parse(s);
        if parsed.is_none() {
            self.error(key, T::expected());
        }
        parsed
    }

    /// An optional non-negative integer no larger than `max`.
    pub fn opt_u64(&mut self, key: &str, max: u64) -> Option<u64> {
        let v = self.raw(key)?;
        match v.as_u64() {
            Some(n) if n <= max => Some(n),
            Some(_) => {
                self.error(key, format!("must be at most {max}"));
                None
            }
            None => {
                self.error(key, "must be a non-negative integer");
                None
            }
        }
    }

    /// Descends into a required nested object.
    pub fn nested(&mut self, key: &str) -> Option<Reader<'_>> {
        let v = self.required(key)?;
        let path = self.path(key);
        Reader::object(v, &path, self.errors)
    }

    /// The errors list, for parsers of nested values.
    pub fn errors(&mut self) -> &mut Vec<FieldError> {
        self.errors
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn collects_every_error_with_its_path() {
        let v = json!({"a": 1, "b": "", "extra": true});
        let mut errors = Vec::new();
        let mut r = Reader::object(&v, "", &mut errors).expect("object");
        assert!(r.string("a", 10).is_none());
        assert!(r.string("b", 10).is_none());
        assert!(r.boolean("c").is_none());
        r.deny_unknown(&["a", "b", "c"]);
        let fields: Vec<&str> = errors.iter().map(|e| e.field.as_str()).collect();
        assert_eq!(fields, ["a", "b", "c", "extra"]);
        assert_eq!(errors[0].message, "must be a string, got number");
    }

    #[test]
    fn nested_paths_join_with_dots() {
        let v = json!({"tool": {"name": 3}});
        let mut errors = Vec::new();
        let mut r = Reader::object(&v, "", &mut errors).expect("object");
        let mut tool = r.nested("tool").expect("nested");
        assert!(tool.string("name", 10).is_none());
        assert_eq!(errors[0].field, "tool.name");
    }
}
