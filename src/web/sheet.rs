//! The command sheet: every field of the command an executor receives, as rows of the proposal
//! page's table, each carrying its JSON pointer. The rows come from the command's own JSON
//! (`CommandSpec` serialised), so a field added to the command shows on the page without
//! anyone remembering to add it. Agent-written text is made visible, secrets are withheld, and
//! personal data of GDPR and HIPAA proposals is withheld unless the viewer revealed it
//! ([`crate::domain::review`]).

use app::dto::{CommandSheet, FieldRow, FieldValue};
use serde_json::{Map, Value};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

use crate::domain::command::CommandSpec;
use crate::domain::review::disclosure::{Disclosure, Entry, entries};
use crate::domain::review::text::visible;

/// The top-level fields in reading order: what runs, on what, within which limits, how to undo
/// it, then the command's identity and approval. Fields not named here follow, by name.
const ORDER: &[&str] = &[
    "tool",
    "parameters",
    "target_refs",
    "constraints",
    "preconditions",
    "execution",
    "blast_radius",
    "rollback_supported",
    "rollback_plan",
    "idempotency_key",
    "domain",
    "allowed_executors",
    "authorization_state",
    "request_hash_sha256",
    "approved_by",
    "approved_at",
];

/// Fields the approval itself sets: a preview shows them as "on approval".
const SET_ON_APPROVAL: &[&str] = &["/approved_by", "/approved_at"];

/// How the sheet is drawn.
pub struct SheetOptions {
    /// The queued command (`true`) or a preview of what approval would queue.
    pub queued: bool,
    /// GDPR or HIPAA: personal data is withheld.
    pub regulated: bool,
    /// The viewer revealed the personal data.
    pub revealed: bool,
    /// The page's render time.
    pub now: OffsetDateTime,
}

fn rank(key: &str) -> usize {
    ORDER.iter().position(|k| *k == key).unwrap_or(ORDER.len())
}

/// The spec's JSON object, top-level fields in reading order.
fn ordered(spec: &CommandSpec) -> Vec<(String, Value)> {
    let json = serde_json::to_value(spec).unwrap_or_default();
    let object: Map<String, Value> = match json {
        Value::Object(o) => o,
        _ => Map::new(),
    };
    let mut fields: Vec<(String, Value)> = object.into_iter().collect();
    fields.sort_by(|(a, _), (b, _)| rank(a).cmp(&rank(b)).then_with(|| a.cmp(b)));
    fields
}

/// Every field of `spec` as rows.
pub fn command_sheet(spec: &CommandSpec, o: &SheetOptions) -> CommandSheet {
    let mut sheet = CommandSheet {
        queued: o.queued,
        ..CommandSheet::default()
    };
    for (key, value) in ordered(spec) {
        for entry in entries(&key, &value, o.regulated) {
            let row = row(&entry, o);
            match row.value {
                FieldValue::Secret { .. } => sheet.secrets += 1,
                FieldValue::Withheld { .. } => sheet.withheld += 1,
                FieldValue::Revealed(_) => sheet.revealed += 1,
                _ => {}
            }
            sheet.rows.push(row);
        }
    }
    sheet
}

fn row(e: &Entry<'_>, o: &SheetOptions) -> FieldRow {
    let key = visible(&e.key);
    let (value, hidden) = value(e, o);
    FieldRow {
        // Keys are the agent's: the pointer is shown (as an attribute) in visible form too.
        pointer: visible(&e.pointer).text,
        depth: e.depth,
        key: key.text,
        index: e.index,
        value,
        hidden: key.hidden + hidden,
    }
}

fn chars(v: &Value) -> usize {
    match v {
        Value::String(s) => s.chars().count(),
        other => other.to_string().chars().count(),
    }
}

fn text(s: &str) -> (FieldValue, usize) {
    let v = visible(s);
    (FieldValue::Text(v.text), v.hidden)
}

/// What a row shows, and how many hidden characters that has.
fn value(e: &Entry<'_>, o: &SheetOptions) -> (FieldValue, usize) {
    let v = e.value;
    match (e.disclosure, v) {
        (_, Value::Object(m)) => (
            FieldValue::Group {
                members: m.len(),
                array: false,
            },
            0,
        ),
        (_, Value::Array(a)) => (
            FieldValue::Group {
                members: a.len(),
                array: true,
            },
            0,
        ),
        (Disclosure::Secret, v) => (FieldValue::Secret { chars: chars(v) }, 0),
        (Disclosure::Personal, v) if !o.revealed => (FieldValue::Withheld { chars: chars(v) }, 0),
        (Disclosure::Personal, v) => {
            let shown = visible(&v.as_str().map_or_else(|| v.to_string(), str::to_owned));
            (FieldValue::Revealed(shown.text), shown.hidden)
        }
        (Disclosure::Shown, _) if !o.queued && SET_ON_APPROVAL.contains(&e.pointer.as_str()) => {
            (FieldValue::OnApproval, 0)
        }
        (Disclosure::Shown, Value::String(s)) if e.pointer == "/approved_at" => {
            match OffsetDateTime::parse(s, &Rfc3339) {
                Ok(t) => (FieldValue::Time(super::moment(t, o.now)), 0),
                Err(_) => text(s),
            }
        }
        (Disclosure::Shown, Value::String(s)) => text(s),
        (Disclosure::Shown, other) => (FieldValue::Literal(other.to_string()), 0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::contract::proposal::ToolProposal;
    use crate::domain::contract::vocab::AuthorizationState;
    use app::time::Moment;
    use serde_json::json;

    fn spec(params: Value, gdpr: bool) -> CommandSpec {
        let body = json!({
            "proposal_id": "0190f0e0-0000-7000-8000-000000000001",
            "proposed_by": "agent-a",
            "timestamp": "2026-11-22T10:00:00Z",
            "domain": "sales",
            "tool": {"name": "crm.update_contact", "version": "2024-01"},
            "intent": {"summary": "s", "reasoning": "r"},
            "parameters": params,
            "risk_level": "medium",
            "approval_required": true,
            "compliance_context": {"gdpr": gdpr, "hipaa": false},
            "idempotency_key": "k-1",
            "rollback_supported": true,
            "execution": {"timeout_ms": 30000, "retry_policy": {"max_retries": 2, "backoff_ms": 500}}
        });
        let p = ToolProposal::parse(&body).expect("valid");
        let at = time::macros::datetime!(2026-11-26 10:00 UTC);
        CommandSpec::for_approved(&p, "abc", "rev", AuthorizationState::Confirmed, at)
    }

    fn options(queued: bool, regulated: bool, revealed: bool) -> SheetOptions {
        SheetOptions {
            queued,
            regulated,
            revealed,
            now: time::macros::datetime!(2026-11-26 10:05 UTC),
        }
    }

    fn find<'a>(s: &'a CommandSheet, pointer: &str) -> &'a FieldValue {
        &s.rows
            .iter()
            .find(|r| r.pointer == pointer)
            .unwrap_or_else(|| panic!("no row {pointer}"))
            .value
    }

    #[test]
    fn every_field_is_a_row_in_reading_order() {
        let s = command_sheet(&spec(json!({"n": 1}), false), &options(true, false, false));
        let top: Vec<&str> = s
            .rows
            .iter()
            .filter(|r| r.depth == 0)
            .map(|r| r.key.as_str())
            .collect();
        assert_eq!(top.first(), Some(&"tool"));
        assert_eq!(top.get(1), Some(&"parameters"));
        assert_eq!(top.last(), Some(&"approved_at"));
        assert_eq!(
            find(&s, "/execution/retry_policy/max_retries"),
            &FieldValue::Literal("2".into())
        );
        assert_eq!(
            find(&s, "/approved_at"),
            &FieldValue::Time(Moment::new(1_795_687_200, 1_795_687_500))
        );
        assert_eq!(find(&s, "/approved_by"), &FieldValue::Text("rev".into()));
    }

    #[test]
    fn a_preview_leaves_the_approval_to_the_approval() {
        let s = command_sheet(&spec(json!({}), false), &options(false, false, false));
        assert_eq!(find(&s, "/approved_by"), &FieldValue::OnApproval);
        assert_eq!(find(&s, "/approved_at"), &FieldValue::OnApproval);
    }

    #[test]
    fn secrets_never_and_personal_data_only_when_revealed() {
        let params =
            json!({"api_key": "abc123", "email": "jane@example.com", "note": "a\u{202E}b"});
        let masked = command_sheet(&spec(params.clone(), true), &options(true, true, false));
        assert_eq!(
            find(&masked, "/parameters/api_key"),
            &FieldValue::Secret { chars: 6 }
        );
        assert_eq!(
            find(&masked, "/parameters/email"),
            &FieldValue::Withheld { chars: 16 }
        );
        assert_eq!(
            find(&masked, "/parameters/note"),
            &FieldValue::Text("a⟦U+202E⟧b".into())
        );
        assert_eq!(
            (masked.secrets, masked.withheld, masked.revealed),
            (1, 1, 0)
        );
        let shown = command_sheet(&spec(params, true), &options(true, true, true));
        assert_eq!(
            find(&shown, "/parameters/api_key"),
            &FieldValue::Secret { chars: 6 }
        );
        assert_eq!(
            find(&shown, "/parameters/email"),
            &FieldValue::Revealed("jane@example.com".into())
        );
        let text = serde_json::to_string(&shown).expect("json");
        assert!(!text.contains("abc123"), "a secret never reaches the page");
    }
}
