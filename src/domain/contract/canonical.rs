//! Canonical JSON and the request hash (seed 002): stable key order, no whitespace, volatile
//! timestamps excluded, so the same request always hashes the same.

use serde_json::Value;
use sha2::{Digest, Sha256};

/// Top-level fields that change between retries of the same request and so are not hashed.
const VOLATILE: &[&str] = &["timestamp"];

/// Writes `value` as canonical JSON: object keys sorted at every depth, no whitespace.
pub fn canonical_json(value: &Value) -> String {
    let mut out = String::new();
    write_canonical(value, &mut out);
    out
}

fn write_canonical(value: &Value, out: &mut String) {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push('{');
            for (i, key) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(key.clone()).to_string());
                out.push(':');
                write_canonical(&map[key], out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(item, out);
            }
            out.push(']');
        }
        scalar => out.push_str(&scalar.to_string()),
    }
}

/// `sha256` hex of the canonical JSON of `value` without its volatile top-level fields.
pub fn request_hash_sha256(value: &Value) -> String {
    let hashed = match value {
        Value::Object(map) => {
            let mut map = map.clone();
            for key in VOLATILE {
                map.remove(*key);
            }
            Value::Object(map)
        }
        other => other.clone(),
    };
    sha256_hex(canonical_json(&hashed).as_bytes())
}

/// Lowercase hex sha256 of `bytes`.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// A value with no canonical (RFC 8785) form: it does not serialise, or holds a number RFC 8785
/// cannot print. Whatever hashes or signs such a value fails with this error; it never hashes
/// or signs a default (`""`, `null`) in its place.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("no canonical JSON form: {0}")]
pub struct Uncanonical(pub String);

impl From<serde_json::Error> for Uncanonical {
    fn from(e: serde_json::Error) -> Self {
        Uncanonical(e.to_string())
    }
}

/// The canonical JSON (RFC 8785) of `value`, what signed grants and command hashes cover.
pub fn rfc8785<T: serde::Serialize>(value: &T) -> Result<Vec<u8>, Uncanonical> {
    Ok(serde_json_canonicalizer::to_vec(value)?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn what_has_no_canonical_form_is_an_error() {
        let mut odd = std::collections::BTreeMap::new();
        odd.insert((1, 2), "a map with keys that are not strings");
        assert!(rfc8785(&odd).is_err());
        assert!(rfc8785(&f64::NAN).is_err());
        assert_eq!(
            rfc8785(&json!({"b": 1.0, "a": 1e21})),
            Ok(br#"{"a":1e+21,"b":1}"#.to_vec())
        );
    }

    #[test]
    fn sorts_keys_at_every_depth() {
        let v = json!({"b": 1, "a": {"d": [1, {"z": 1, "y": 2}], "c": "x"}});
        assert_eq!(
            canonical_json(&v),
            r#"{"a":{"c":"x","d":[1,{"y":2,"z":1}]},"b":1}"#
        );
    }

    #[test]
    fn hash_ignores_key_order_and_timestamp_but_not_content() {
        let a = json!({"x": 1, "y": "two", "timestamp": "2026-01-01T00:00:00Z"});
        let b = json!({"y": "two", "timestamp": "2026-06-01T00:00:00Z", "x": 1});
        let c = json!({"y": "two", "x": 2});
        assert_eq!(request_hash_sha256(&a), request_hash_sha256(&b));
        assert_ne!(request_hash_sha256(&a), request_hash_sha256(&c));
        assert_eq!(request_hash_sha256(&a).len(), 64);
    }
}
