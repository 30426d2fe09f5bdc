//! The AANA Agent Action Contract v1 (seed 000): the seven-field pre-tool-call event, its
//! structured evidence refs, and a parser that turns untrusted JSON into a typed [`Event`] or
//! lists *every* rule the input broke.
//!
//! What the parser enforces is the published JSON schema
//! (`conformance/aana/agent_tool_precheck.schema.json`) with two deliberate differences, both
//! because seed 000's own text says otherwise:
//!
//! - **String evidence refs are accepted** ("String evidence refs are accepted for
//!   quickstarts"), although the schema's `items` allows only objects.
//! - **The schema's `allOf` route/authorization conditionals are routing rules, not validity
//!   rules.** The seed's own example "Write Missing Confirmation: Ask" (a `user_claimed` write
//!   with `recommended_route: "accept"`) violates them, and the seed routes it `ask`, not as a
//!   schema error. The route engine (the gate of the routing wing) enforces the same
//!   constraints by routing.
//!
//! Everything else fails closed: unknown top-level or evidence fields
//! (`additionalProperties: false`), unknown enum values, wrong JSON types, `null` where a value
//! is required, and any `schema_version` other than [`SCHEMA_VERSION`].

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::vocab::{AuthorizationState, RiskDomain, Route, ToolCategory};
use super::wire::{FieldError, ObjectReader, type_name, wire_enum};

/// The only `schema_version` accepted (optional on the wire; anything else fails closed).
pub const SCHEMA_VERSION: &str = "aana.agent_tool_precheck.v1";

/// Most evidence refs one event may carry; more is refused as a schema error.
pub const MAX_EVIDENCE_REFS: usize = 100;

wire_enum! {
    /// What kind of record an evidence ref points at.
    pub enum EvidenceKind {
        /// A user's message.
        UserMessage => "user_message",
        /// An assistant's message.
        AssistantMessage => "assistant_message",
        /// The result of an earlier tool call.
        ToolResult => "tool_result",
        /// A policy statement.
        Policy => "policy",
        /// An authentication or authorization event.
        AuthEvent => "auth_event",
        /// An explicit approval or confirmation.
        Approval => "approval",
        /// System state.
        SystemState => "system_state",
        /// An audit record.
        AuditRecord => "audit_record",
        /// Anything else.
        Other => "other",
    }
}

wire_enum! {
    /// How far an evidence ref can be trusted, strongest first.
    pub enum TrustTier {
        /// Verified by a trusted system.
        Verified => "verified",
        /// Asserted by the agent runtime.
        Runtime => "runtime",
        /// Claimed by the user.
        UserClaimed => "user_claimed",
        /// Not verified.
        Unverified => "unverified",
        /// Unknown.
        Unknown => "unknown",
    }
}

impl TrustTier {
    /// `verified` or `runtime`: strong enough to support an authorization state.
    pub fn is_trusted(self) -> bool {
        matches!(self, TrustTier::Verified | TrustTier::Runtime)
    }
}

wire_enum! {
    /// Whether an evidence ref's content is safe to show.
    pub enum RedactionStatus {
        /// Public content.
        Public => "public",
        /// Private content redacted.
        Redacted => "redacted",
        /// Contains sensitive content.
        Sensitive => "sensitive",
        /// Unknown.
        Unknown => "unknown",
    }
}

wire_enum! {
    /// How current an evidence ref is.
    pub enum FreshnessStatus {
        /// Current.
        Fresh => "fresh",
        /// Out of date.
        Stale => "stale",
        /// Unknown.
        Unknown => "unknown",
    }
}

wire_enum! {
    /// Whose authorization was checked.
    pub enum SubjectType {
        /// A user.
        User => "user",
        /// An account.
        Account => "account",
        /// A client.
        Client => "client",
        /// An employee.
        Employee => "employee",
        /// A student.
        Student => "student",
        /// A patient.
        Patient => "patient",
        /// A case.
        Case => "case",
        /// A service.
        Service => "service",
        /// Unknown.
        Unknown => "unknown",
    }
}

/// Freshness of a structured evidence ref.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct Freshness {
    /// Declared status.
    pub status: FreshnessStatus,
    /// When freshness was checked (ISO timestamp, informational).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checked_at: Option<String>,
    /// Maximum acceptable age in hours.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_age_hours: Option<f64>,
    /// Age in hours.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub age_hours: Option<f64>,
    /// Redacted source of the freshness assertion.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
}

impl Freshness {
    /// Stale when declared `stale`, or when `age_hours` exceeds `max_age_hours` whatever the
    /// declared status says (a "fresh" ref that is older than its own limit is not fresh).
    pub fn is_stale(&self) -> bool {
        self.status == FreshnessStatus::Stale || self.exceeds_max_age()
    }

    /// `age_hours > max_age_hours`, when both are given.
    pub fn exceeds_max_age(&self) -> bool {
        matches!((self.age_hours, self.max_age_hours), (Some(age), Some(max)) if age > max)
    }
}

/// A structured evidence ref (the production form).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct StructuredEvidence {
    /// Opaque source or record reference.
    #[schemars(extend("pattern" = "\\S"))]
    pub source_id: String,
    /// What kind of record it is.
    pub kind: EvidenceKind,
    /// How far it can be trusted.
    pub trust_tier: TrustTier,
    /// Whether its content is redacted.
    pub redaction_status: RedactionStatus,
    /// Short redacted summary of what it establishes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
    /// When it was retrieved (ISO timestamp, informational).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retrieved_at: Option<String>,
    /// Freshness.
    pub freshness: Freshness,
    /// Public citation URL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub citation_url: Option<String>,
    /// Retrieval/provenance URI.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retrieval_url: Option<String>,
    /// Redacted provenance label (`connector`, `policy`, `runtime`, `fixture`, ...).
    #[schemars(extend("pattern" = "\\S"))]
    pub provenance: String,
    /// Claim/action ids this evidence supports.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub supports: Vec<String>,
    /// Claim/action ids this evidence contradicts.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub contradicts: Vec<String>,
}

/// An evidence ref: a quickstart string or a structured record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(untagged)]
pub enum EvidenceRef {
    /// A quickstart reference such as `"draft_id:123"`: accepted, but carries no trust,
    /// redaction or freshness metadata, so it can neither support nor lower anything.
    Plain(#[schemars(extend("pattern" = "\\S"))] String),
    /// A structured ref.
    Structured(Box<StructuredEvidence>),
}

/// The redacted subject whose authorization was checked.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct AuthorizationSubject {
    /// Kind of subject.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subject_type: Option<SubjectType>,
    /// Opaque or redacted subject reference.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subject_ref: Option<String>,
}

/// A schema-valid Agent Action Contract v1 event.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct Event {
    /// Optional compatibility marker; when present it is [`SCHEMA_VERSION`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("const" = "aana.agent_tool_precheck.v1"))]
    pub schema_version: Option<String>,
    /// Optional event/request id for audit correlation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_id: Option<String>,
    /// Optional agent/runtime id (checked against the policy's lanes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
    /// Optional short redacted summary of the user request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_intent: Option<String>,
    /// Optional redacted subject whose authorization was checked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub authorization_subject: Option<AuthorizationSubject>,
    /// Exact tool/function name the agent intends to call.
    #[schemars(extend("pattern" = "^[^\\s\\x00-\\x1f\\x7f-\\x9f](?:[^\\x00-\\x1f\\x7f-\\x9f]*[^\\s\\x00-\\x1f\\x7f-\\x9f])?$"))]
    pub tool_name: String,
    /// Declared consequence class.
    pub tool_category: ToolCategory,
    /// Declared strongest verified authorization state.
    pub authorization_state: AuthorizationState,
    /// Evidence used to classify the action, authorization and risk.
    pub evidence_refs: Vec<EvidenceRef>,
    /// Primary risk surface.
    pub risk_domain: RiskDomain,
    /// Arguments the agent intends to pass (never copied into audit records).
    pub proposed_arguments: Map<String, Value>,
    /// The runtime's proposed route; it can only make the final route stricter.
    pub recommended_route: Route,
}

/// The seven required fields, in the contract's frozen order.
pub const REQUIRED_FIELDS: &[&str] = &[
    "tool_name",
    "tool_category",
    "authorization_state",
    "evidence_refs",
    "risk_domain",
    "proposed_arguments",
    "recommended_route",
];

/// The optional compatibility fields.
pub const OPTIONAL_FIELDS: &[&str] = &[
    "schema_version",
    "request_id",
    "agent_id",
    "user_intent",
    "authorization_subject",
];

const EVIDENCE_FIELDS: &[&str] = &[
    "source_id",
    "kind",
    "trust_tier",
    "redaction_status",
    "summary",
    "retrieved_at",
    "freshness",
    "citation_url",
    "retrieval_url",
    "provenance",
    "supports",
    "contradicts",
];

const FRESHNESS_FIELDS: &[&str] = &[
    "status",
    "checked_at",
    "max_age_hours",
    "age_hours",
    "source",
];

const SUBJECT_FIELDS: &[&str] = &["subject_type", "subject_ref"];

impl Event {
    /// Parses untrusted JSON into an event, or returns every broken rule with its JSON path.
    pub fn parse(value: &Value) -> Result<Event, Vec<FieldError>> {
        let mut errors = Vec::new();
        match parse_event_into(value, &mut errors) {
            Some(event) if errors.is_empty() => Ok(event),
            _ => Err(errors),
        }
    }

    /// Parses a JSON document; malformed JSON is reported as a single error on the document.
    pub fn from_json_str(json: &str) -> Result<Event, Vec<FieldError>> {
        match serde_json::from_str::<Value>(json) {
            Ok(value) => Event::parse(&value),
            Err(e) => Err(vec![FieldError::new("", format!("is not valid JSON: {e}"))]),
        }
    }
}

/// Parses untrusted JSON into an event (same as [`Event::parse`]).
pub fn parse_event(value: &Value) -> Result<Event, Vec<FieldError>> {
    Event::parse(value)
}

fn parse_event_into(value: &Value, errors: &mut Vec<FieldError>) -> Option<Event> {
    let mut r = ObjectReader::new(value, "", errors)?;

    let tool_name = r
        .string("tool_name", true)
        .and_then(|s| match tool_name_problem(s) {
            None => Some(s.to_owned()),
            Some(problem) => {
                r.error("tool_name", problem);
                None
            }
        });
    let tool_category = r.enumeration::<ToolCategory>("tool_category");
    let authorization_state = r.enumeration::<AuthorizationState>("authorization_state");
    let evidence_refs = r
        .required("evidence_refs")
        .and_then(|v| parse_evidence_list(v, "evidence_refs", r.errors()));
    let risk_domain = r.enumeration::<RiskDomain>("risk_domain");
    let proposed_arguments = r.required("proposed_arguments").and_then(|v| match v {
        Value::Object(map) => Some(map.clone()),
        other => {
            let msg = format!("must be an object, got {}", type_name(other));
            r.error("proposed_arguments", msg);
            None
        }
    });
    let recommended_route = r.enumeration::<Route>("recommended_route");

    let schema_version = r.opt_string("schema_version", false).and_then(|s| {
        if s == SCHEMA_VERSION {
            Some(s.to_owned())
        } else {
            r.error(
                "schema_version",
                format!("unsupported schema version `{s}`; only `{SCHEMA_VERSION}` is accepted"),
            );
            None
        }
    });
    let request_id = r.opt_string("request_id", false).map(str::to_owned);
    let agent_id = r.opt_string("agent_id", false).map(str::to_owned);
    let user_intent = r.opt_string("user_intent", false).map(str::to_owned);
    let authorization_subject = r
        .get("authorization_subject")
        .and_then(|v| parse_subject(v, "authorization_subject", r.errors()));

    let mut known = Vec::with_capacity(REQUIRED_FIELDS.len() + OPTIONAL_FIELDS.len());
    known.extend_from_slice(REQUIRED_FIELDS);
    known.extend_from_slice(OPTIONAL_FIELDS);
    r.deny_unknown(&known);

    Some(Event {
        schema_version,
        request_id,
        agent_id,
        user_intent,
        authorization_subject,
        tool_name: tool_name?,
        tool_category: tool_category?,
        authorization_state: authorization_state?,
        evidence_refs: evidence_refs?,
        risk_domain: risk_domain?,
        proposed_arguments: proposed_arguments?,
        recommended_route: recommended_route?,
    })
}

/// Why `name` cannot be an exact tool name, if it cannot.
fn tool_name_problem(name: &str) -> Option<&'static str> {
    if name.trim() != name {
        Some("must not start or end with whitespace (it must be the exact tool name)")
    } else if name.chars().any(char::is_control) {
        Some("must not contain control characters")
    } else {
        None
    }
}

/// Parses an `evidence_refs` array found at `path`. Shared with the proposal parser.
pub(crate) fn parse_evidence_list(
    value: &Value,
    path: &str,
    errors: &mut Vec<FieldError>,
) -> Option<Vec<EvidenceRef>> {
    let Value::Array(items) = value else {
        errors.push(FieldError::new(
            path,
            format!(
                "must be an array of evidence refs (strings or objects), got {}",
                type_name(value)
            ),
        ));
        return None;
    };
    if items.len() > MAX_EVIDENCE_REFS {
        errors.push(FieldError::new(
            path,
            format!("must hold at most {MAX_EVIDENCE_REFS} evidence refs"),
        ));
        return None;
    }
    let before = errors.len();
    let mut refs = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let item_path = format!("{path}[{i}]");
        match item {
            Value::String(s) if s.trim().is_empty() => {
                errors.push(FieldError::new(item_path, "must be a non-empty string"));
            }
            Value::String(s) => refs.push(EvidenceRef::Plain(s.clone())),
            Value::Object(_) => {
                if let Some(e) = parse_structured(item, &item_path, errors) {
                    refs.push(EvidenceRef::Structured(Box::new(e)));
                }
            }
            other => errors.push(FieldError::new(
                item_path,
                format!(
                    "must be a string or an evidence object, got {}",
                    type_name(other)
                ),
            )),
        }
    }
    (errors.len() == before).then_some(refs)
}

fn parse_structured(
    value: &Value,
    path: &str,
    errors: &mut Vec<FieldError>,
) -> Option<StructuredEvidence> {
    let mut r = ObjectReader::new(value, path, errors)?;
    let source_id = r.string("source_id", true).map(str::to_owned);
    let kind = r.enumeration::<EvidenceKind>("kind");
    let trust_tier = r.enumeration::<TrustTier>("trust_tier");
    let redaction_status = r.enumeration::<RedactionStatus>("redaction_status");
    let summary = r.opt_string("summary", false).map(str::to_owned);
    let retrieved_at = r.opt_string("retrieved_at", false).map(str::to_owned);
    let freshness_path = r.path("freshness");
    let freshness = r
        .required("freshness")
        .and_then(|v| parse_freshness(v, &freshness_path, r.errors()));
    let citation_url = r.opt_string("citation_url", false).map(str::to_owned);
    let retrieval_url = r.opt_string("retrieval_url", false).map(str::to_owned);
    let provenance = r.string("provenance", true).map(str::to_owned);
    let supports = r.opt_string_array("supports");
    let contradicts = r.opt_string_array("contradicts");
    r.deny_unknown(EVIDENCE_FIELDS);
    Some(StructuredEvidence {
        source_id: source_id?,
        kind: kind?,
        trust_tier: trust_tier?,
        redaction_status: redaction_status?,
        summary,
        retrieved_at,
        freshness: freshness?,
        citation_url,
        retrieval_url,
        provenance: provenance?,
        supports: supports.unwrap_or_default(),
        contradicts: contradicts.unwrap_or_default(),
    })
}

fn parse_freshness(value: &Value, path: &str, errors: &mut Vec<FieldError>) -> Option<Freshness> {
    let mut r = ObjectReader::new(value, path, errors)?;
    let status = r.enumeration::<FreshnessStatus>("status");
    let checked_at = r.opt_string("checked_at", false).map(str::to_owned);
    let max_age_hours = r.opt_number("max_age_hours");
    let age_hours = r.opt_number("age_hours");
    let source = r.opt_string("source", false).map(str::to_owned);
    r.deny_unknown(FRESHNESS_FIELDS);
    Some(Freshness {
        status: status?,
        checked_at,
        max_age_hours,
        age_hours,
        source,
    })
}

fn parse_subject(
    value: &Value,
    path: &str,
    errors: &mut Vec<FieldError>,
) -> Option<AuthorizationSubject> {
    let mut r = ObjectReader::new(value, path, errors)?;
    let subject_type = r.opt_enumeration::<SubjectType>("subject_type");
    let subject_ref = r.opt_string("subject_ref", false).map(str::to_owned);
    r.deny_unknown(SUBJECT_FIELDS);
    Some(AuthorizationSubject {
        subject_type,
        subject_ref,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn minimal() -> Value {
        json!({
            "tool_name": "send_email",
            "tool_category": "write",
            "authorization_state": "user_claimed",
            "evidence_refs": ["draft_id:123"],
            "risk_domain": "customer_support",
            "proposed_arguments": {"to": "customer@example.com"},
            "recommended_route": "accept"
        })
    }

    fn fields(errors: &[FieldError]) -> Vec<&str> {
        errors.iter().map(|e| e.field.as_str()).collect()
    }

    #[test]
    fn parses_the_seed_minimal_event() {
        let e = Event::parse(&minimal()).expect("valid");
        assert_eq!(e.tool_name, "send_email");
        assert_eq!(e.tool_category, ToolCategory::Write);
        assert_eq!(e.authorization_state, AuthorizationState::UserClaimed);
        assert_eq!(
            e.evidence_refs,
            vec![EvidenceRef::Plain("draft_id:123".into())]
        );
        assert_eq!(e.recommended_route, Route::Accept);
    }

    #[test]
    fn serializes_back_to_the_wire_shape() {
        let v = minimal();
        let e = Event::parse(&v).expect("valid");
        assert_eq!(serde_json::to_value(&e).expect("serializes"), v);
    }

    #[test]
    fn reports_every_missing_required_field() {
        let errors = Event::parse(&json!({})).expect_err("invalid");
        assert_eq!(fields(&errors), REQUIRED_FIELDS);
        assert!(errors.iter().all(|e| e.message == "is required"));
    }

    #[test]
    fn reports_every_broken_rule_not_just_the_first() {
        let v = json!({
            "schema_version": "aana.agent_tool_precheck.v2",
            "tool_name": "",
            "tool_category": "delete",
            "authorization_state": 3,
            "evidence_refs": [
                "ok",
                7,
                {"source_id": "a", "kind": "rumor", "trust_tier": "verified",
                 "redaction_status": "public", "freshness": {"status": "old", "extra": 1},
                 "provenance": "", "colour": "red", "supports": ["x", 2]}
            ],
            "risk_domain": "space",
            "proposed_arguments": "to=x",
            "recommended_route": "maybe",
            "authorization_subject": {"subject_type": "robot", "name": "x"},
            "debug": true
        });
        let errors = Event::parse(&v).expect_err("invalid");
        assert_eq!(
            fields(&errors),
            [
                "tool_name",
                "tool_category",
                "authorization_state",
                "evidence_refs[1]",
                "evidence_refs[2].kind",
                "evidence_refs[2].freshness.status",
                "evidence_refs[2].freshness.extra",
                "evidence_refs[2].provenance",
                "evidence_refs[2].supports[1]",
                "evidence_refs[2].colour",
                "risk_domain",
                "proposed_arguments",
                "recommended_route",
                "schema_version",
                "authorization_subject.subject_type",
                "authorization_subject.name",
                "debug",
            ]
        );
        let msg = |f: &str| {
            errors
                .iter()
                .find(|e| e.field == f)
                .map(|e| e.message.clone())
                .unwrap_or_default()
        };
        assert_eq!(
            msg("tool_category"),
            "unknown value `delete`; must be one of `public_read`, `private_read`, `write`, `unknown`"
        );
        assert_eq!(msg("authorization_state"), "must be a string, got number");
        assert_eq!(msg("proposed_arguments"), "must be an object, got string");
        assert!(msg("schema_version").contains("unsupported schema version"));
    }

    #[test]
    fn structured_evidence_requires_the_schema_fields() {
        let mut v = minimal();
        v["evidence_refs"] = json!([{"summary": "x"}]);
        let errors = Event::parse(&v).expect_err("invalid");
        assert_eq!(
            fields(&errors),
            [
                "evidence_refs[0].source_id",
                "evidence_refs[0].kind",
                "evidence_refs[0].trust_tier",
                "evidence_refs[0].redaction_status",
                "evidence_refs[0].freshness",
                "evidence_refs[0].provenance",
            ]
        );
    }

    #[test]
    fn wrong_shapes_fail_closed() {
        for (patch, field) in [
            (json!({"evidence_refs": {"a": 1}}), "evidence_refs"),
            (json!({"evidence_refs": [""]}), "evidence_refs[0]"),
            (json!({"tool_name": " send_email"}), "tool_name"),
            (json!({"tool_name": "send\nemail"}), "tool_name"),
            (json!({"tool_name": null}), "tool_name"),
            (json!({"request_id": 5}), "request_id"),
            (
                json!({"authorization_subject": "acct"}),
                "authorization_subject",
            ),
            (json!({"recommended_route": "revise"}), "recommended_route"),
        ] {
            let mut v = minimal();
            for (k, val) in patch.as_object().expect("object") {
                v[k] = val.clone();
            }
            let errors = Event::parse(&v).expect_err("invalid");
            assert_eq!(fields(&errors), [field], "{patch}");
        }
        let errors = Event::parse(&json!("event")).expect_err("invalid");
        assert_eq!(errors[0].to_string(), "must be an object, got string");
    }

    #[test]
    fn limits_the_number_of_evidence_refs() {
        let mut v = minimal();
        v["evidence_refs"] = Value::Array(vec![json!("x"); MAX_EVIDENCE_REFS + 1]);
        let errors = Event::parse(&v).expect_err("invalid");
        assert_eq!(fields(&errors), ["evidence_refs"]);
    }

    #[test]
    fn malformed_json_is_one_document_error() {
        let errors = Event::from_json_str("{\"tool_name\": ").expect_err("invalid");
        assert_eq!(errors.len(), 1);
        assert_eq!(errors[0].field, "");
        assert!(errors[0].message.starts_with("is not valid JSON"));
    }

    #[test]
    fn freshness_past_its_max_age_is_stale_whatever_it_says() {
        let f = Freshness {
            status: FreshnessStatus::Fresh,
            checked_at: None,
            max_age_hours: Some(24.0),
            age_hours: Some(30.0),
            source: None,
        };
        assert!(f.is_stale());
        assert!(
            !Freshness {
                age_hours: Some(2.0),
                ..f.clone()
            }
            .is_stale()
        );
        assert!(
            Freshness {
                status: FreshnessStatus::Stale,
                age_hours: None,
                ..f
            }
            .is_stale()
        );
    }

    #[test]
    fn route_and_ladder_orders() {
        assert!(Route::Accept < Route::Ask && Route::Ask < Route::Defer);
        assert!(Route::Defer < Route::Refuse);
        assert_eq!(Route::Ask.stricter(Route::Defer), Route::Defer);
        assert!(AuthorizationState::None < AuthorizationState::UserClaimed);
        assert!(AuthorizationState::Validated < AuthorizationState::Confirmed);
        assert!(ToolCategory::Write < ToolCategory::Unknown);
    }
}
