//! Audit-safe forms of what agents and people send: the trail records *that* a value was
//! there, how long it was and a keyed hash of it — never the value. A parameter becomes its
//! key and the hash of its canonical JSON; free text (an intent, a request id, a subject
//! reference, a reviewer's reason) becomes its length and hash, an identifier (an evidence
//! id) its hash; names are bounded. Anyone holding a value and the installation's salt can show it is the one
//! recorded; nobody reading the trail or an export learns it.
//!
//! The hash is HMAC-SHA256 keyed by the installation's salt (kept in the database, never in
//! the trail or an export), cut to 64 bits: enough to match a value, short enough that a
//! pre-tool-check's event stays small.

use std::collections::BTreeMap;

use hmac::{Hmac, Mac};
use serde::Serialize;
use serde_json::{Map, Value};
use sha2::Sha256;

use crate::domain::contract::canonical::Uncanonical;
use crate::domain::routing::scan::{WITHHELD, audit_safe_name};

/// Most parameter keys one event records; the rest are counted in `omitted`.
pub const MAX_KEYS: usize = 64;
/// Longest name (tool, rule, model, …) one event records.
pub const MAX_NAME: usize = 128;
/// Most list entries (blockers, field paths, evidence refs) one event records.
pub const MAX_ITEMS: usize = 32;

/// The installation's key for value hashes, kept as HMAC's state with the key already taken in
/// (two of a short hash's four SHA-256 blocks), so each hash starts from a copy of it.
#[derive(Clone)]
pub struct Salt(Hmac<Sha256>);

impl std::fmt::Debug for Salt {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Salt(..)")
    }
}

impl Salt {
    /// A salt from its stored bytes (any length; an empty one is refused).
    pub fn from_bytes(bytes: &[u8]) -> Option<Self> {
        if bytes.is_empty() {
            return None;
        }
        let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(b"countersign-audit-salt/1").ok()?;
        mac.update(bytes);
        let key = mac.finalize().into_bytes();
        <Hmac<Sha256> as Mac>::new_from_slice(&key).ok().map(Self)
    }

    /// A fresh random salt's bytes, to store.
    pub fn generate() -> [u8; 32] {
        use rand::RngCore;
        let mut bytes = [0u8; 32];
        rand::rngs::OsRng.fill_bytes(&mut bytes);
        bytes
    }

    /// The keyed hash of `bytes`: 16 hex characters.
    pub fn hash(&self, bytes: &[u8]) -> String {
        let mut mac = self.0.clone();
        mac.update(bytes);
        hex::encode(&mac.finalize().into_bytes()[..8])
    }

    /// Free text as its length (in characters) and hash.
    pub fn text(&self, text: &str) -> TextDigest {
        TextDigest {
            len: text.chars().count(),
            hash: self.hash(text.as_bytes()),
        }
    }

    /// The hash of a JSON value's canonical (RFC 8785) form (as the chain writes it: the same
    /// bytes as `serde_json_canonicalizer`, at a fraction of the cost); an error for a value
    /// without one, never the hash of something else.
    pub fn value(&self, value: &Value) -> Result<String, Uncanonical> {
        let canonical = crate::audit::chain::canonical_text(value)?;
        Ok(self.hash(canonical.as_bytes()))
    }

    /// Parameters as their (audit-safe) keys and value hashes, at most [`MAX_KEYS`] of them;
    /// an error if a value has no canonical form.
    pub fn parameters(&self, params: &Map<String, Value>) -> Result<ParameterDigest, Uncanonical> {
        let mut keys = BTreeMap::new();
        for (k, v) in params.iter().take(MAX_KEYS) {
            let name = audit_safe_name(k);
            let key = if name == WITHHELD {
                // A key that is not a plain name is itself data: keep only its hash.
                format!("#{}", self.hash(k.as_bytes()))
            } else {
                name.to_owned()
            };
            keys.insert(key, self.value(v)?);
        }
        Ok(ParameterDigest {
            keys,
            omitted: params.len().saturating_sub(MAX_KEYS),
        })
    }
}

/// Free text, as the trail records it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct TextDigest {
    /// Length in characters.
    pub len: usize,
    /// Keyed hash ([`Salt::hash`]).
    pub hash: String,
}

/// Parameters, as the trail records them: one entry per key, its value's keyed hash; keys
/// beyond [`MAX_KEYS`] are counted under `(omitted)` (a name no parameter key can have in the
/// trail: [`audit_safe_name`] allows no parentheses).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ParameterDigest {
    /// Key → keyed hash of its value.
    #[serde(flatten)]
    pub keys: BTreeMap<String, String>,
    /// Keys beyond [`MAX_KEYS`], not recorded.
    #[serde(rename = "(omitted)", skip_serializing_if = "is_zero")]
    pub omitted: usize,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// A name cut to [`MAX_NAME`] characters (on a character boundary).
pub fn name(s: &str) -> String {
    match s.char_indices().nth(MAX_NAME) {
        Some((at, _)) => format!("{}…", &s[..at]),
        None => s.to_owned(),
    }
}

/// A plain name as recorded: [`audit_safe_name`] (withheld unless it looks like an identifier).
pub fn safe_name(s: &str) -> String {
    audit_safe_name(s).to_owned()
}

/// At most [`MAX_ITEMS`] entries of a list.
pub fn bounded<T>(items: impl IntoIterator<Item = T>) -> Vec<T> {
    items.into_iter().take(MAX_ITEMS).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn salt() -> Salt {
        Salt::from_bytes(b"test salt").expect("non-empty")
    }

    #[test]
    fn text_is_length_and_keyed_hash() {
        let d = salt().text("Jane Doe, 12 Elm Street");
        assert_eq!(d.len, 23);
        assert_eq!(d.hash.len(), 16);
        assert_ne!(
            d.hash,
            Salt::from_bytes(b"other")
                .expect("salt")
                .text("Jane Doe, 12 Elm Street")
                .hash
        );
        assert_eq!(d, salt().text("Jane Doe, 12 Elm Street"));
    }

    #[test]
    fn parameters_keep_keys_and_hash_values() {
        let params = json!({"patient": "John Smith", "diagnosis": "diabetes", "a b": 1});
        let Value::Object(map) = params else {
            unreachable!()
        };
        let d = salt().parameters(&map).expect("canonical");
        let text = serde_json::to_string(&d).expect("serialises");
        assert!(!text.contains("John"), "{text}");
        assert!(!text.contains("diabetes"), "{text}");
        assert!(!text.contains("a b"), "{text}");
        assert!(d.keys.contains_key("patient"));
        assert!(d.keys.contains_key("diagnosis"));
        assert_eq!(
            d.keys["patient"],
            salt().value(&json!("John Smith")).expect("canonical")
        );
    }

    #[test]
    fn keys_are_bounded() {
        let map: Map<String, Value> = (0..100).map(|i| (format!("k{i}"), json!(i))).collect();
        let d = salt().parameters(&map).expect("canonical");
        assert_eq!(d.keys.len(), MAX_KEYS);
        assert_eq!(d.omitted, 36);
        let row = serde_json::to_value(&d).expect("serialises");
        assert_eq!(row["(omitted)"], 36);
        assert!(row["k0"].is_string());
    }

    #[test]
    fn names_are_cut_on_a_character_boundary() {
        assert_eq!(name("crm.update"), "crm.update");
        let long = "é".repeat(200);
        assert_eq!(name(&long).chars().count(), MAX_NAME + 1);
    }

    /// Values computed outside Rust (Python's `hmac`): a salt's hashes never change between
    /// releases, or a value could no longer be matched against what the trail recorded.
    #[test]
    fn hashes_are_pinned() {
        assert_eq!(salt().hash(b"Jane Doe, 12 Elm Street"), "716fb1b60b2003e2");
        assert_eq!(
            salt().value(&json!("John Smith")).as_deref(),
            Ok("c41caed8ec5034e8")
        );
        let value = json!({"b": 1, "a": [1.5, "x", 1e30]});
        assert_eq!(salt().value(&value).as_deref(), Ok("de6fefaa99bc009a"));
    }

    #[test]
    fn empty_salt_is_refused() {
        assert!(Salt::from_bytes(&[]).is_none());
    }
}
