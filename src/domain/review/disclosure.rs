//! Which values of a command a page may show. The page shows every field the executor will
//! receive ([`entries`] walks them all, each with its JSON pointer), but not every *value*:
//!
//! - **Secrets are never shown**, on any proposal, and there is no reveal: a value under a key
//!   named like a credential (`password`, `secret`, `token`, `api_key`, `authorization`,
//!   `private_key`, `credential`, `cookie`, …), a value shaped like one (a bearer token, a JWT,
//!   a well-known API key prefix, a PEM key, a URL with a password: [`find_secret`]), or a long
//!   random-looking string ([`looks_random`]). The page says a secret is there and how long it
//!   is; an agent has no business sending one (executors hold scoped credentials), and a
//!   reviewer cannot judge it by looking at it.
//! - **Personal data on a GDPR or HIPAA proposal is withheld until the reviewer reveals it**
//!   (an audited action): a value under a key naming personal or health data (`email`,
//!   `phone`, `name`, `address`, `dob`, `ssn`, `patient`, `diagnosis`, …; see
//!   [`is_personal_key`]) or shaped like it (an email address, a phone number, a national id, a
//!   payment card: [`find_personal_data`]). The contract has no field classifying data, so the
//!   rule is this documented heuristic on keys and shapes; it errs towards withholding.
//!
//! Only the fields an agent fills with data of its own are looked at ([`AGENT_DATA`]); the tool,
//! targets, keys, hashes and approval facts are always shown. Containers are never withheld
//! themselves: their leaves are, one by one, so the page still shows every key.

use serde_json::Value;

use crate::domain::routing::scan::{find_personal_data, find_secret};

/// Top-level command fields whose values come from the agent: the only ones withheld from.
pub const AGENT_DATA: &[&str] = &[
    "parameters",
    "constraints",
    "preconditions",
    "rollback_plan",
];

/// How long a reveal lasts: the reviewer who revealed a proposal's personal data sees it on
/// that page for this long (asking with `?revealed=1`), then must reveal again.
pub const REVEAL_SECONDS: i64 = 15 * 60;

/// Whether a reveal recorded at `revealed_at` still shows the values at `now`.
pub fn reveal_holds(revealed_at: time::OffsetDateTime, now: time::OffsetDateTime) -> bool {
    // A minute's grace for clocks of instances sharing one database.
    let age = (now - revealed_at).whole_seconds();
    (-60..=REVEAL_SECONDS).contains(&age)
}

/// What a page may do with one value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Disclosure {
    /// Show it.
    Shown,
    /// A secret: never shown.
    Secret,
    /// Personal data of a GDPR or HIPAA proposal: shown only after an audited reveal.
    Personal,
}

/// One field of a command, in document order.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry<'a> {
    /// Its JSON pointer (RFC 6901) from the command's root, e.g. `/parameters/email`.
    pub pointer: String,
    /// 0 for a top-level field, 1 for its members, and so on.
    pub depth: usize,
    /// Its key, or its index in an array as digits.
    pub key: String,
    /// Whether `key` is an array index.
    pub index: bool,
    /// The value (an object or array is followed by its members' entries).
    pub value: &'a Value,
    /// What the page may show of a leaf; containers are always `Shown`.
    pub disclosure: Disclosure,
}

/// Words (whole, after splitting a key on `_`, `-`, `.`, spaces and camelCase) naming personal
/// or health data.
const PERSONAL_WORDS: &[&str] = &[
    "name",
    "firstname",
    "lastname",
    "fullname",
    "surname",
    "username",
    "email",
    "mail",
    "phone",
    "mobile",
    "telephone",
    "tel",
    "fax",
    "address",
    "street",
    "city",
    "postcode",
    "postal",
    "zip",
    "zipcode",
    "dob",
    "birth",
    "birthday",
    "birthdate",
    "born",
    "ssn",
    "nin",
    "national",
    "passport",
    "iban",
    "ip",
    "gender",
    "sex",
    "age",
    "ethnicity",
    "religion",
    "patient",
    "diagnosis",
    "diagnoses",
    "condition",
    "conditions",
    "medication",
    "medications",
    "medicine",
    "prescription",
    "treatment",
    "medical",
    "mrn",
    "health",
    "allergy",
    "allergies",
    "symptom",
    "symptoms",
    "insurance",
    "disability",
    "biometric",
    "location",
    "latitude",
    "longitude",
];

/// Parts of a key (lowercased, separators removed) naming personal data in compounds such as
/// `emailAddress` or `patientrecord`.
const PERSONAL_PARTS: &[&str] = &[
    "email",
    "phone",
    "address",
    "birth",
    "patient",
    "diagnos",
    "firstname",
    "lastname",
    "fullname",
    "surname",
    "username",
    "passport",
];

/// Parts of a key (lowercased, separators removed) naming a credential.
const SECRET_PARTS: &[&str] = &[
    "password",
    "passwd",
    "passphrase",
    "secret",
    "token",
    "apikey",
    "accesskey",
    "privatekey",
    "sshkey",
    "signingkey",
    "authorization",
    "credential",
    "cookie",
    "sessionid",
];

fn squashed(key: &str) -> String {
    key.chars()
        .filter(char::is_ascii_alphanumeric)
        .map(|c| c.to_ascii_lowercase())
        .collect()
}

/// A key's words: split on anything not alphanumeric and at lower-to-upper case changes.
fn words(key: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut word = String::new();
    let mut prev_lower = false;
    for c in key.chars() {
        if !c.is_alphanumeric() {
            out.extend((!word.is_empty()).then(|| std::mem::take(&mut word)));
            prev_lower = false;
            continue;
        }
        if c.is_uppercase() && prev_lower {
            out.push(std::mem::take(&mut word));
        }
        prev_lower = c.is_lowercase() || c.is_ascii_digit();
        word.extend(c.to_lowercase());
    }
    out.extend((!word.is_empty()).then_some(word));
    out
}

/// Whether a key names a credential (`api_key`, `X-Auth-Token`, `clientSecret`, …).
pub fn is_secret_key(key: &str) -> bool {
    let k = squashed(key);
    k == "pwd" || k == "auth" || SECRET_PARTS.iter().any(|p| k.contains(p))
}

/// Whether a key names personal or health data (`email`, `first_name`, `patientId`, …).
pub fn is_personal_key(key: &str) -> bool {
    let k = squashed(key);
    PERSONAL_PARTS.iter().any(|p| k.contains(p))
        || words(key)
            .iter()
            .any(|w| PERSONAL_WORDS.contains(&w.as_str()))
}

/// Whether a string looks like a random token: at least 24 characters without spaces, of
/// upper- and lowercase letters and digits (so hex hashes and UUIDs do not count), with
/// nearly as much entropy per character as a random string of its length.
pub fn looks_random(s: &str) -> bool {
    let len = s.chars().count();
    if !(24..=4_096).contains(&len)
        || !s
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "+/=_-.~".contains(c))
    {
        return false;
    }
    let has = |f: fn(&char) -> bool| s.chars().any(|c| f(&c));
    if !(has(char::is_ascii_uppercase)
        && has(char::is_ascii_lowercase)
        && has(char::is_ascii_digit))
    {
        return false;
    }
    let mut counts = std::collections::HashMap::new();
    for c in s.chars() {
        *counts.entry(c).or_insert(0_u32) += 1;
    }
    let n = len as f64;
    let entropy: f64 = counts
        .values()
        .map(|&k| {
            let p = f64::from(k) / n;
            -p * p.log2()
        })
        .sum();
    entropy >= (0.85 * n.log2()).min(4.5)
}

/// What a page may show of the leaf `value` under the keys `path` (from the command's root,
/// array indices left out), on a proposal that is `regulated` (GDPR or HIPAA).
pub fn classify(path: &[&str], value: &Value, regulated: bool) -> Disclosure {
    if value.is_null() || value.is_object() || value.is_array() {
        return Disclosure::Shown;
    }
    if !path.first().is_some_and(|top| AGENT_DATA.contains(top)) {
        return Disclosure::Shown;
    }
    if let Value::String(s) = value {
        let secret_key = path.iter().skip(1).any(|k| is_secret_key(k));
        if !s.is_empty() && (secret_key || find_secret(s).is_some() || looks_random(s)) {
            return Disclosure::Secret;
        }
    }
    if regulated {
        let personal_key = path.iter().skip(1).any(|k| is_personal_key(k));
        let personal_value = value
            .as_str()
            .is_some_and(|s| find_personal_data(s).is_some());
        if personal_key || personal_value {
            return Disclosure::Personal;
        }
    }
    Disclosure::Shown
}

fn pointer_token(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

struct Walk<'a> {
    regulated: bool,
    keys: Vec<&'a str>,
    out: Vec<Entry<'a>>,
}

impl<'a> Walk<'a> {
    fn visit(&mut self, pointer: String, depth: usize, key: String, index: bool, value: &'a Value) {
        self.out.push(Entry {
            pointer: pointer.clone(),
            depth,
            key,
            index,
            value,
            disclosure: classify(&self.keys, value, self.regulated),
        });
        match value {
            Value::Object(map) => {
                for (k, v) in map {
                    self.keys.push(k);
                    let at = format!("{pointer}/{}", pointer_token(k));
                    self.visit(at, depth + 1, k.clone(), false, v);
                    self.keys.pop();
                }
            }
            Value::Array(items) => {
                for (i, v) in items.iter().enumerate() {
                    self.visit(format!("{pointer}/{i}"), depth + 1, i.to_string(), true, v);
                }
            }
            _ => {}
        }
    }
}

/// Every entry of the top-level field `field` with `value`: the field itself, then its
/// members depth first, in document order.
pub fn entries<'a>(field: &'a str, value: &'a Value, regulated: bool) -> Vec<Entry<'a>> {
    let mut walk = Walk {
        regulated,
        keys: vec![field],
        out: Vec::new(),
    };
    walk.visit(
        format!("/{}", pointer_token(field)),
        0,
        field.to_owned(),
        false,
        value,
    );
    walk.out
}

/// The pointers of every personal-data leaf of a command (as JSON): what a reveal shows.
pub fn personal_fields(command: &serde_json::Map<String, Value>, regulated: bool) -> Vec<String> {
    command
        .iter()
        .flat_map(|(k, v)| entries(k, v, regulated))
        .filter(|e| e.disclosure == Disclosure::Personal)
        .map(|e| e.pointer)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn of(path: &[&str], v: Value, regulated: bool) -> Disclosure {
        classify(path, &v, regulated)
    }

    #[test]
    fn credentials_are_secret_by_key_or_by_shape_on_every_proposal() {
        use Disclosure::*;
        let p = |k| vec!["parameters", k];
        for key in [
            "password",
            "api_key",
            "X-Auth-Token",
            "clientSecret",
            "Authorization",
            "private_key",
        ] {
            assert_eq!(of(&p(key), json!("hunter2hunter2"), false), Secret, "{key}");
        }
        assert_eq!(
            of(
                &p("header"),
                json!("Bearer abcdefghijklmnopqrstuvwxyz012345"),
                false
            ),
            Secret
        );
        assert_eq!(
            of(
                &p("k"),
                json!("sk-abcdefghijklmnopqrstuvwxyz0123456789"),
                false
            ),
            Secret
        );
        assert_eq!(
            of(
                &p("blob"),
                json!("Zk9yZ2V0VGhpc1Rva2VuMTIzNDU2Nzg5MEFCQ0RFRg"),
                false
            ),
            Secret
        );
        // A key under a secret-named object is secret too.
        assert_eq!(
            of(&["parameters", "credentials", "user"], json!("ops"), false),
            Secret
        );
        // Numbers under a token-ish key are not credentials.
        assert_eq!(of(&p("max_tokens"), json!(500), false), Shown);
    }

    #[test]
    fn hashes_ids_and_words_are_not_secrets() {
        use Disclosure::*;
        let p = vec!["parameters", "ref"];
        for v in [
            "a94a8fe5ccb19ba61c4c0873d391e987982fbbd3",
            "3F2504E0-4F89-11D3-9A0C-0305E82C3301",
            "550e8400-e29b-41d4-a716-446655440000",
            "updateContactEmailAddressForCustomer2024",
            "The customer asked for it in ticket 42.",
        ] {
            assert_eq!(of(&p, json!(v), false), Shown, "{v}");
        }
    }

    #[test]
    fn personal_data_is_withheld_only_on_regulated_proposals() {
        use Disclosure::*;
        for key in [
            "email",
            "first_name",
            "patientId",
            "date_of_birth",
            "homeAddress",
            "diagnosis",
            "phone",
        ] {
            let path = ["parameters", key];
            assert_eq!(of(&path, json!("x"), true), Personal, "{key}");
            assert_eq!(of(&path, json!("x"), false), Shown, "{key}");
        }
        assert_eq!(
            of(&["parameters", "to"], json!("jane@example.com"), true),
            Personal
        );
        assert_eq!(
            of(&["parameters", "patient", "age"], json!(42), true),
            Personal
        );
        assert_eq!(
            of(&["parameters", "contact_id"], json!("c-123"), true),
            Shown
        );
        assert_eq!(of(&["parameters", "classname"], json!("x"), true), Shown);
    }

    #[test]
    fn only_the_agents_own_fields_are_looked_at() {
        use Disclosure::*;
        assert_eq!(
            of(
                &["idempotency_key"],
                json!("Zk9yZ2V0VGhpc1Rva2VuMTIzNDU2Nzg5MEFC"),
                true
            ),
            Shown
        );
        assert_eq!(of(&["approved_by"], json!("jane@example.com"), true), Shown);
        assert_eq!(
            of(&["constraints", "owner_email"], json!("a@b.example"), true),
            Personal
        );
        assert_eq!(of(&["preconditions", "token"], json!("abc"), false), Secret);
    }

    #[test]
    fn entries_walk_every_field_with_its_pointer_and_depth() {
        let v = json!({"to": ["a@example.com"], "a/b~c": {"n": 1}, "empty": {}});
        let got: Vec<(String, usize, Disclosure)> = entries("parameters", &v, true)
            .into_iter()
            .map(|e| (e.pointer, e.depth, e.disclosure))
            .collect();
        assert_eq!(
            got,
            vec![
                ("/parameters".into(), 0, Disclosure::Shown),
                ("/parameters/a~1b~0c".into(), 1, Disclosure::Shown),
                ("/parameters/a~1b~0c/n".into(), 2, Disclosure::Shown),
                ("/parameters/empty".into(), 1, Disclosure::Shown),
                ("/parameters/to".into(), 1, Disclosure::Shown),
                ("/parameters/to/0".into(), 2, Disclosure::Personal),
            ]
        );
    }

    #[test]
    fn a_reveal_lasts_a_quarter_of_an_hour() {
        let at = time::macros::datetime!(2026-11-26 10:00 UTC);
        assert!(reveal_holds(at, at));
        assert!(reveal_holds(at, at + time::Duration::minutes(15)));
        assert!(!reveal_holds(at, at + time::Duration::minutes(16)));
        assert!(
            !reveal_holds(at, at - time::Duration::minutes(2)),
            "not from the future"
        );
    }

    #[test]
    fn personal_fields_list_pointers_never_values() {
        let spec = json!({"tool": {"name": "crm.update"}, "parameters": {"email": "a@example.com", "n": 2}});
        let fields = personal_fields(spec.as_object().expect("object"), true);
        assert_eq!(fields, vec!["/parameters/email".to_owned()]);
        assert!(personal_fields(spec.as_object().expect("object"), false).is_empty());
    }
}
