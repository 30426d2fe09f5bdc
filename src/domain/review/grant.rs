//! Standing grants ("approve and allow similar"): a reviewer's approval of one agent's later
//! calls of one tool, for a while and at most so many times, so the same call does not wait
//! for a click every time. Every shortcut here is narrow:
//!
//! - **who**: exactly one agent, in the proposal's domain;
//! - **what**: the same tool at the same version, with exactly the approved parameters, except
//!   the fields the reviewer named free, and numeric fields the reviewer bounded (`amount`
//!   from 0 to 500) — never a broader tool pattern;
//! - **how long**: at most the policy's `max_grant` for the tool (default 8 h), and optionally
//!   at most N uses. The narrowest choice (exact parameters, one hour) is the default.
//!
//! What may be granted at all ([`grantable`]): not a tool the policy marks
//! `grantable = false`, nor effective risk `high`, a `large` blast radius, GDPR or HIPAA data,
//! or a tool needing more than one approval. A later proposal uses a grant only when it would
//! otherwise `ask` a person and is itself grantable: a `refuse` (or a `defer`, which waits for
//! evidence no approval supplies) always stands.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use thiserror::Error;

use crate::domain::contract::vocab::{BlastRadius, RiskLevel};
use crate::domain::contract::wire::FieldError;

/// How long a grant lasts when the reviewer does not choose.
pub const DEFAULT_GRANT_SECS: u64 = 3_600;
/// The most fields one grant frees or bounds.
pub const MAX_FIELDS: usize = 32;
/// The most uses one grant can be limited to (a larger count is no limit worth stating).
pub const MAX_USES: u32 = 10_000;

/// Where a grant is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum GrantState {
    /// Proposals inside it are accepted.
    Live,
    /// Its last allowed use is spent.
    UsedUp,
    /// Its time ran out.
    Expired,
    /// Someone revoked it.
    Revoked,
}

impl GrantState {
    /// The state as stored and shown.
    pub fn as_str(self) -> &'static str {
        match self {
            GrantState::Live => "live",
            GrantState::UsedUp => "used_up",
            GrantState::Expired => "expired",
            GrantState::Revoked => "revoked",
        }
    }

    /// A stored state; `None` for anything else (fail closed: such a grant is not live).
    pub fn parse(s: &str) -> Option<Self> {
        [Self::Live, Self::UsedUp, Self::Expired, Self::Revoked]
            .into_iter()
            .find(|state| state.as_str() == s)
    }
}

/// A numeric parameter a grant lets vary between 0 (or the approved value, if negative) and
/// `max`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Bound {
    /// JSON pointer into the parameters (`/amount`).
    pub field: String,
    /// The largest value the grant covers.
    pub max: f64,
}

impl Bound {
    /// Whether `value` is inside the bound; `approved` is the value the reviewer approved.
    fn admits(&self, value: &Value, approved: f64) -> bool {
        value
            .as_f64()
            .is_some_and(|v| v <= self.max && v >= approved.min(0.0))
    }
}

/// What of the parameters may differ from the approved ones.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Scope {
    /// JSON pointers whose values may be anything (or absent).
    pub free: Vec<String>,
    /// Numeric fields that may vary within a bound.
    pub bounds: Vec<Bound>,
}

impl Scope {
    /// Exactly the approved parameters.
    pub fn exact() -> Self {
        Self::default()
    }

    /// Whether the scope is exactly the approved parameters.
    pub fn is_exact(&self) -> bool {
        self.free.is_empty() && self.bounds.is_empty()
    }

    /// Every field the scope names, free or bounded.
    fn fields(&self) -> impl Iterator<Item = &str> {
        self.free
            .iter()
            .map(String::as_str)
            .chain(self.bounds.iter().map(|b| b.field.as_str()))
    }
}

/// What a reviewer asks to grant beside an approval.
#[derive(Debug, Clone, PartialEq)]
pub struct Ask {
    /// What may differ.
    pub scope: Scope,
    /// For how long, in seconds.
    pub duration_secs: u64,
    /// At most this many uses; `None`: until it expires.
    pub max_uses: Option<u32>,
}

impl Ask {
    /// The narrowest grant: exactly these parameters, for an hour.
    pub fn narrowest() -> Self {
        Self {
            scope: Scope::exact(),
            duration_secs: DEFAULT_GRANT_SECS,
            max_uses: None,
        }
    }
}

/// What a proposal exposes, for deciding whether it may be granted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Exposure {
    /// Effective risk after the policy's raises.
    pub effective_risk: RiskLevel,
    /// Seed 003 blast radius.
    pub blast_radius: Option<BlastRadius>,
    /// GDPR personal data.
    pub gdpr: bool,
    /// HIPAA health data.
    pub hipaa: bool,
    /// Approvals the policy requires.
    pub required_approvals: u8,
}

/// Why a proposal's calls may not be granted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
pub enum NotGrantable {
    /// The policy says `grantable = false` for the tool.
    #[error("the policy does not let this tool be granted")]
    PolicyForbids,
    /// Effective risk `high`.
    #[error("a high-risk action is approved one at a time")]
    HighRisk,
    /// Blast radius `large`.
    #[error("an action with a large blast radius is approved one at a time")]
    LargeBlastRadius,
    /// GDPR or HIPAA data.
    #[error("an action on personal or health data is approved one at a time")]
    RegulatedData,
    /// More than one approver.
    #[error("an action that needs more than one approver is approved one at a time")]
    NeedsQuorum,
}

/// The longest grant a proposal with this exposure may have, given the policy's `max_grant`
/// for its tool (`None`: the policy forbids grants of it); why not, if it may have none.
pub fn grantable(max_grant_secs: Option<u64>, e: &Exposure) -> Result<u64, NotGrantable> {
    let max = max_grant_secs.ok_or(NotGrantable::PolicyForbids)?;
    if e.effective_risk == RiskLevel::High {
        return Err(NotGrantable::HighRisk);
    }
    if e.blast_radius == Some(BlastRadius::Large) {
        return Err(NotGrantable::LargeBlastRadius);
    }
    if e.gdpr || e.hipaa {
        return Err(NotGrantable::RegulatedData);
    }
    if e.required_approvals > 1 {
        return Err(NotGrantable::NeedsQuorum);
    }
    Ok(max)
}

/// What is wrong with `ask` for a proposal with `parameters`, whose tool may be granted for at
/// most `max_secs`: each problem named by its form field (`grant.free`, `grant.bounds`,
/// `grant.duration`, `grant.max_uses`).
pub fn check(ask: &Ask, parameters: &Map<String, Value>, max_secs: u64) -> Vec<FieldError> {
    let mut errors = Vec::new();
    let approved = Value::Object(parameters.clone());
    if ask.scope.free.len() + ask.scope.bounds.len() > MAX_FIELDS {
        let rule = format!("a grant frees or bounds at most {MAX_FIELDS} fields");
        errors.push(FieldError::new("grant.free", rule));
    }
    let mut seen: Vec<&str> = Vec::new();
    for field in ask.scope.fields() {
        if seen.contains(&field) {
            errors.push(FieldError::new(
                "grant.free",
                format!("`{field}` is named twice"),
            ));
        }
        seen.push(field);
        if field.is_empty() || approved.pointer(field).is_none() {
            let rule = format!("`{field}` is not a parameter of this proposal");
            errors.push(FieldError::new("grant.free", rule));
        }
    }
    for b in &ask.scope.bounds {
        match approved.pointer(&b.field).and_then(Value::as_f64) {
            Some(v) if !b.max.is_finite() || v > b.max => errors.push(FieldError::new(
                "grant.bounds",
                format!(
                    "the bound of `{}` must be a number at least its approved value",
                    b.field
                ),
            )),
            Some(_) => {}
            None => errors.push(FieldError::new(
                "grant.bounds",
                format!("`{}` is not a number, so it cannot be bounded", b.field),
            )),
        }
    }
    if ask.duration_secs == 0 || ask.duration_secs > max_secs {
        let rule = format!(
            "must be longer than zero and at most the policy's {} s for this tool",
            max_secs
        );
        errors.push(FieldError::new("grant.duration", rule));
    }
    if ask.max_uses.is_some_and(|n| n == 0 || n > MAX_USES) {
        let rule = format!("must be from 1 to {MAX_USES}, or empty for no limit");
        errors.push(FieldError::new("grant.max_uses", rule));
    }
    errors
}

/// Whether a call with `parameters` is inside a grant of `approved` with `scope`: every field
/// the scope does not name is equal, and every bounded field is a number inside its bound.
pub fn covers(
    approved: &Map<String, Value>,
    scope: &Scope,
    parameters: &Map<String, Value>,
) -> bool {
    let mut granted = Value::Object(approved.clone());
    let mut call = Value::Object(parameters.clone());
    for b in &scope.bounds {
        let Some(was) = granted.pointer(&b.field).and_then(Value::as_f64) else {
            return false;
        };
        if !call.pointer(&b.field).is_some_and(|v| b.admits(v, was)) {
            return false;
        }
    }
    for field in scope.fields() {
        remove(&mut granted, field);
        remove(&mut call, field);
    }
    granted == call
}

/// Removes the value at JSON pointer `pointer` (an array element becomes `null`, so the
/// others keep their places).
fn remove(value: &mut Value, pointer: &str) {
    let Some((parent, last)) = pointer.rsplit_once('/') else {
        return;
    };
    let key = last.replace("~1", "/").replace("~0", "~");
    match value.pointer_mut(parent) {
        Some(Value::Object(map)) => {
            map.remove(&key);
        }
        Some(Value::Array(items)) => {
            if let Some(item) = key.parse::<usize>().ok().and_then(|i| items.get_mut(i)) {
                *item = Value::Null;
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn params(v: Value) -> Map<String, Value> {
        match v {
            Value::Object(m) => m,
            _ => unreachable!("an object"),
        }
    }

    fn exposure() -> Exposure {
        Exposure {
            effective_risk: RiskLevel::Medium,
            blast_radius: Some(BlastRadius::Small),
            gdpr: false,
            hipaa: false,
            required_approvals: 1,
        }
    }

    #[test]
    fn exact_scope_covers_only_the_same_parameters() {
        let approved = params(json!({"to": "a@example.com", "amount": 10}));
        let exact = Scope::exact();
        assert!(covers(&approved, &exact, &approved));
        let other = params(json!({"to": "b@example.com", "amount": 10}));
        assert!(!covers(&approved, &exact, &other));
        let more = params(json!({"to": "a@example.com", "amount": 10, "cc": "x"}));
        assert!(!covers(&approved, &exact, &more));
        let float = params(json!({"to": "a@example.com", "amount": 10.0}));
        assert!(!covers(&approved, &exact, &float), "1 and 1.0 differ");
    }

    #[test]
    fn free_fields_may_differ_or_be_absent() {
        let approved = params(json!({"path": "/a", "content": "x", "meta": {"n": 1, "m": 2}}));
        let scope = Scope {
            free: vec!["/content".into(), "/meta/n".into()],
            bounds: vec![],
        };
        let call = params(json!({"path": "/a", "content": "y", "meta": {"n": 9, "m": 2}}));
        assert!(covers(&approved, &scope, &call));
        let absent = params(json!({"path": "/a", "meta": {"m": 2}}));
        assert!(covers(&approved, &scope, &absent));
        let other_path = params(json!({"path": "/b", "content": "y", "meta": {"n": 1, "m": 2}}));
        assert!(!covers(&approved, &scope, &other_path));
    }

    #[test]
    fn bounded_fields_stay_between_zero_and_the_bound() {
        let approved = params(json!({"to": "acct-1", "amount": 120}));
        let scope = Scope {
            free: vec![],
            bounds: vec![Bound {
                field: "/amount".into(),
                max: 500.0,
            }],
        };
        for (amount, inside) in [(json!(500), true), (json!(0.5), true), (json!(501), false)] {
            let call = params(json!({"to": "acct-1", "amount": amount}));
            assert_eq!(covers(&approved, &scope, &call), inside, "{amount}");
        }
        for amount in [json!(-1), json!("100"), Value::Null] {
            let call = params(json!({"to": "acct-1", "amount": amount}));
            assert!(!covers(&approved, &scope, &call), "{amount}");
        }
        let missing = params(json!({"to": "acct-1"}));
        assert!(!covers(&approved, &scope, &missing));
        let other = params(json!({"to": "acct-2", "amount": 100}));
        assert!(!covers(&approved, &scope, &other));
    }

    #[test]
    fn only_a_narrow_low_exposure_call_is_grantable() {
        assert_eq!(grantable(Some(3_600), &exposure()), Ok(3_600));
        assert_eq!(
            grantable(None, &exposure()),
            Err(NotGrantable::PolicyForbids)
        );
        let cases = [
            (
                Exposure {
                    effective_risk: RiskLevel::High,
                    ..exposure()
                },
                NotGrantable::HighRisk,
            ),
            (
                Exposure {
                    blast_radius: Some(BlastRadius::Large),
                    ..exposure()
                },
                NotGrantable::LargeBlastRadius,
            ),
            (
                Exposure {
                    gdpr: true,
                    ..exposure()
                },
                NotGrantable::RegulatedData,
            ),
            (
                Exposure {
                    hipaa: true,
                    ..exposure()
                },
                NotGrantable::RegulatedData,
            ),
            (
                Exposure {
                    required_approvals: 2,
                    ..exposure()
                },
                NotGrantable::NeedsQuorum,
            ),
        ];
        for (e, why) in cases {
            assert_eq!(grantable(Some(3_600), &e), Err(why));
        }
    }

    #[test]
    fn an_ask_names_only_real_fields_and_stays_inside_the_policy() {
        let p = params(json!({"amount": 120, "to": "acct-1"}));
        assert!(check(&Ask::narrowest(), &p, 8 * 3_600).is_empty());
        let bad = Ask {
            scope: Scope {
                free: vec!["/nope".into(), "/to".into(), "/to".into()],
                bounds: vec![
                    Bound {
                        field: "/to".into(),
                        max: 1.0,
                    },
                    Bound {
                        field: "/amount".into(),
                        max: 100.0,
                    },
                ],
            },
            duration_secs: 9 * 3_600,
            max_uses: Some(0),
        };
        let fields: Vec<String> = check(&bad, &p, 8 * 3_600)
            .into_iter()
            .map(|e| e.field)
            .collect();
        for f in [
            "grant.free",
            "grant.bounds",
            "grant.duration",
            "grant.max_uses",
        ] {
            assert!(fields.iter().any(|x| x == f), "{f} in {fields:?}");
        }
        assert_eq!(fields.iter().filter(|f| *f == "grant.bounds").count(), 2);
    }
}
