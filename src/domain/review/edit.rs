//! Edit, then approve: a reviewer changes parameter values before approving (the change they
//! would otherwise ask the agent to make: a smaller amount, the right recipient). Never the
//! tool, never the agent, never a parameter added or taken away: only values of parameters the
//! agent sent. The edited request is a new request with its own hash, routed again (the
//! stricter route holds), and the approval binds to it; the agent's answer names every change
//! (`review.edited`). A tool may forbid edits (`editable = false`).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::domain::contract::wire::FieldError;

/// The most parameters one edit changes.
pub const MAX_CHANGES: usize = 32;

/// One parameter changed by the reviewer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FieldChange {
    /// JSON pointer into the parameters (`/amount`).
    pub field: String,
    /// What the agent sent.
    pub old: Value,
    /// What the reviewer approved.
    pub new: Value,
}

/// A reviewer's edit of a proposal: the edited request's hash and what changed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Edited {
    /// `sha256` of the edited request (what the approval binds to).
    pub request_hash: String,
    /// The parameters changed, in the order asked.
    pub changes: Vec<FieldChange>,
}

impl Edited {
    /// The edit with its values erased (GDPR): which fields changed stays.
    pub fn erased(&self) -> Self {
        let erased = || Value::String("[erased]".into());
        Self {
            request_hash: self.request_hash.clone(),
            changes: (self.changes.iter())
                .map(|c| FieldChange {
                    field: c.field.clone(),
                    old: erased(),
                    new: erased(),
                })
                .collect(),
        }
    }
}

/// Parameters as edited, and what changed.
pub type Applied = (Map<String, Value>, Vec<FieldChange>);

/// `parameters` with each `(pointer, value)` of `edits` applied, and the changes made; every
/// edit that breaks a rule, by form field (`edits`). A pointer must name a value the agent
/// sent; an edit that changes nothing is left out; at least one must change something.
pub fn apply(
    parameters: &Map<String, Value>,
    edits: &[(String, Value)],
) -> Result<Applied, Vec<FieldError>> {
    let mut edited = Value::Object(parameters.clone());
    let mut changes: Vec<FieldChange> = Vec::new();
    let mut errors = Vec::new();
    if edits.len() > MAX_CHANGES {
        let rule = format!("an edit changes at most {MAX_CHANGES} parameters");
        errors.push(FieldError::new("edits", rule));
    }
    for (pointer, value) in edits {
        if changes.iter().any(|c| &c.field == pointer) {
            errors.push(FieldError::new(
                "edits",
                format!("`{pointer}` is edited twice"),
            ));
            continue;
        }
        match edited.pointer_mut(pointer).filter(|_| !pointer.is_empty()) {
            Some(slot) if slot == value => {}
            Some(slot) => {
                changes.push(FieldChange {
                    field: pointer.clone(),
                    old: std::mem::replace(slot, value.clone()),
                    new: value.clone(),
                });
            }
            None => errors.push(FieldError::new(
                "edits",
                format!("`{pointer}` is not a parameter the agent sent; only values change"),
            )),
        }
    }
    if errors.is_empty() && changes.is_empty() {
        errors.push(FieldError::new(
            "edits",
            "nothing changed: approve it as it is",
        ));
    }
    match (errors.is_empty(), edited) {
        (true, Value::Object(map)) => Ok((map, changes)),
        _ => Err(errors),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn params() -> Map<String, Value> {
        match json!({"to": "acct-1", "amount": 500, "meta": {"note": "x"}}) {
            Value::Object(m) => m,
            _ => unreachable!("an object"),
        }
    }

    #[test]
    fn values_change_and_each_change_is_named() {
        let edits = [
            ("/amount".to_owned(), json!(200)),
            ("/meta/note".to_owned(), json!("y")),
            ("/to".to_owned(), json!("acct-1")),
        ];
        let (edited, changes) = apply(&params(), &edits).expect("applied");
        assert_eq!(edited["amount"], 200);
        assert_eq!(edited["meta"]["note"], "y");
        assert_eq!(
            changes,
            [
                FieldChange {
                    field: "/amount".into(),
                    old: json!(500),
                    new: json!(200)
                },
                FieldChange {
                    field: "/meta/note".into(),
                    old: json!("x"),
                    new: json!("y")
                },
            ],
            "an unchanged value is no change"
        );
    }

    #[test]
    fn nothing_is_added_and_something_must_change() {
        for edits in [
            vec![("/cc".to_owned(), json!("x"))],
            vec![(String::new(), json!({}))],
            vec![("/to".to_owned(), json!("acct-1"))],
            vec![
                ("/amount".to_owned(), json!(1)),
                ("/amount".to_owned(), json!(2)),
            ],
        ] {
            let errors = apply(&params(), &edits).expect_err("refused");
            assert!(errors.iter().all(|e| e.field == "edits"), "{errors:?}");
        }
    }

    #[test]
    fn erasure_keeps_only_which_fields_changed() {
        let edited = Edited {
            request_hash: "abc".into(),
            changes: vec![FieldChange {
                field: "/to".into(),
                old: json!("a@example.com"),
                new: json!("b@example.com"),
            }],
        };
        let erased = edited.erased();
        assert_eq!(erased.changes[0].field, "/to");
        assert_eq!(erased.changes[0].new, "[erased]");
        assert_eq!(erased.request_hash, "abc");
    }
}
