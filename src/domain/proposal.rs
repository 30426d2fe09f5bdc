//! The tool proposal contract (seed 004), with the optional safe-action fields of seed 003 and
//! the authorization and evidence fields of seed 000, and its parser.
//!
//! [`ToolProposal::parse`] is the only way in from the outside: it reads untrusted JSON and
//! returns either a fully typed proposal or every rule the input broke, each with its field
//! path. Unknown fields and unknown enum values are refused (fail closed).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;
use uuid::Uuid;

use super::FieldError;
use super::text::{Reader, str_enum, type_name};

/// Longest accepted intent summary, in characters.
pub const MAX_SUMMARY: usize = 500;
/// Longest accepted reasoning, in characters.
pub const MAX_REASONING: usize = 10_000;
/// Longest accepted idempotency key, in characters.
pub const MAX_IDEMPOTENCY_KEY: usize = 255;
/// Most target refs one proposal may name.
pub const MAX_TARGET_REFS: usize = 100;
/// Most evidence refs one proposal may carry.
pub const MAX_EVIDENCE_REFS: usize = 100;

str_enum! {
    /// Declared risk of an action (seed 004). The system may raise it, never lower it.
    pub enum RiskLevel { Low => "low", Medium => "medium", High => "high" }
}

str_enum! {
    /// Potential impact scope (seed 003), smallest first.
    pub enum BlastRadius { Tiny => "tiny", Small => "small", Medium => "medium", Large => "large" }
}

str_enum! {
    /// Consequence class of the tool call (seed 000).
    pub enum ToolCategory {
        PublicRead => "public_read", PrivateRead => "private_read", Write => "write", Unknown => "unknown"
    }
}

str_enum! {
    /// The authorization ladder (seed 000), weakest first; the derived order is the ladder's.
    pub enum AuthorizationState {
        None => "none", UserClaimed => "user_claimed", Authenticated => "authenticated",
        Validated => "validated", Confirmed => "confirmed"
    }
}

str_enum! {
    /// Primary risk surface of the action (seed 000).
    pub enum RiskDomain {
        Devops => "devops", Finance => "finance", Education => "education", Hr => "hr",
        Legal => "legal", Pharma => "pharma", Healthcare => "healthcare", Commerce => "commerce",
        CustomerSupport => "customer_support", Security => "security", Research => "research",
        PersonalProductivity => "personal_productivity", PublicInformation => "public_information",
        Unknown => "unknown"
    }
}

str_enum! {
    /// How an action can be reversed (seed 003).
    pub enum RollbackType { None => "none", Compensate => "compensate", Restore => "restore", Revert => "revert" }
}

str_enum! {
    /// What kind of record an evidence ref points at (seed 000).
    pub enum EvidenceKind {
        UserMessage => "user_message", AssistantMessage => "assistant_message",
        ToolResult => "tool_result", Policy => "policy", AuthEvent => "auth_event",
        Approval => "approval", SystemState => "system_state", AuditRecord => "audit_record",
        Other => "other"
    }
}

str_enum! {
    /// How far an evidence ref can be trusted (seed 000).
    pub enum TrustTier {
        Verified => "verified", Runtime => "runtime", UserClaimed => "user_claimed",
        Unverified => "unverified", Unknown => "unknown"
    }
}

str_enum! {
    /// Whether an evidence ref's content is safe to show (seed 000).
    pub enum RedactionStatus { Public => "public", Redacted => "redacted", Sensitive => "sensitive", Unknown => "unknown" }
}

str_enum! {
    /// How current an evidence ref is (seed 000).
    pub enum Freshness { Fresh => "fresh", Stale => "stale", Unknown => "unknown" }
}

/// The tool an agent wants run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolRef {
    /// Fully qualified tool action name, e.g. `google_calendar.create_event`.
    pub name: String,
    /// Tool version or API revision.
    pub version: String,
}

/// Why the agent wants it (shown to reviewers; never sent to executors).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Intent {
    /// One-line description of the action.
    pub summary: String,
    /// Why this action is appropriate.
    pub reasoning: String,
}

/// Which regulatory regimes apply (seed 004).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ComplianceContext {
    /// Personal data under GDPR is involved.
    pub gdpr: bool,
    /// Protected health information under HIPAA is involved.
    pub hipaa: bool,
}

/// A resource the action affects (seed 003 `targetRefs`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TargetRef {
    /// Resource type, e.g. `crm_contact`.
    #[serde(rename = "type")]
    pub kind: String,
    /// Resource identifier.
    pub id: String,
}

/// How the action can be reversed (seed 003 `rollbackPlan`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RollbackPlan {
    /// Kind of rollback.
    #[serde(rename = "type")]
    pub kind: RollbackType,
    /// Free-form instructions (object or text).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub instructions: Option<Value>,
    /// Longest the rollback may take.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
}

/// A structured evidence ref (seed 000).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StructuredEvidence {
    /// Opaque source or record reference.
    pub source_id: String,
    /// What kind of record it is.
    pub kind: EvidenceKind,
    /// How far it can be trusted.
    pub trust_tier: TrustTier,
    /// Whether its content is redacted.
    pub redaction_status: RedactionStatus,
    /// Redacted summary.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
    /// Freshness status.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub freshness: Option<Freshness>,
    /// Redacted source label.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub provenance: Option<String>,
}

/// An evidence ref: a quickstart string or a structured record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum EvidenceRef {
    /// `"draft_id:123"`.
    Plain(String),
    /// A structured ref.
    Structured(StructuredEvidence),
}

/// A validated tool proposal.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolProposal {
    /// Globally unique id chosen by the agent.
    pub proposal_id: Uuid,
    /// The proposing agent; must be the authenticated agent.
    pub proposed_by: String,
    /// When the agent created the proposal.
    #[serde(with = "time::serde::rfc3339")]
    pub timestamp: OffsetDateTime,
    /// Domain context, used for policy and ownership.
    pub domain: String,
    /// The tool to run.
    pub tool: ToolRef,
    /// Why.
    pub intent: Intent,
    /// Explicit, complete tool parameters.
    pub parameters: Map<String, Value>,
    /// Declared risk.
    pub risk_level: RiskLevel,
    /// The agent's view of whether a human must approve (advisory; policy decides).
    pub approval_required: bool,
    /// Regulatory regimes.
    pub compliance_context: ComplianceContext,
    /// Key that makes the submission safe to retry.
    pub idempotency_key: String,
    /// Whether the action can be rolled back.
    pub rollback_supported: bool,
    /// Impact scope (seed 003).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blast_radius: Option<BlastRadius>,
    /// Affected resources (seed 003).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub target_refs: Vec<TargetRef>,
    /// Rollback procedure (seed 003).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rollback_plan: Option<RollbackPlan>,
    /// Consequence class (seed 000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_category: Option<ToolCategory>,
    /// Declared authorization state (seed 000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub authorization_state: Option<AuthorizationState>,
    /// Evidence refs (seed 000).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub evidence_refs: Vec<EvidenceRef>,
    /// Risk surface (seed 000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub risk_domain: Option<RiskDomain>,
}

const FIELDS: &[&str] = &[
    "proposal_id",
    "proposed_by",
    "timestamp",
    "domain",
    "tool",
    "intent",
    "parameters",
    "risk_level",
    "approval_required",
    "compliance_context",
    "idempotency_key",
    "rollback_supported",
    "blast_radius",
    "target_refs",
    "rollback_plan",
    "tool_category",
    "authorization_state",
    "evidence_refs",
    "risk_domain",
];

/// Names of agents, tools' systems and domains: lowercase slugs.
pub fn is_slug(s: &str, max: usize) -> bool {
    let mut chars = s.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_lowercase() || c.is_ascii_digit())
        && s.len() <= max
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || "-_.".contains(c))
}

fn is_tool_name(s: &str) -> bool {
    s.len() <= 128
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "_.:-/".contains(c))
}

impl ToolProposal {
    /// Parses untrusted JSON into a proposal, or lists every broken rule.
    pub fn parse(value: &Value) -> Result<Self, Vec<FieldError>> {
        let mut errors = Vec::new();
        let parsed = parse_into(value, &mut errors);
        match parsed {
            Some(p) if errors.is_empty() => Ok(p),
            _ => Err(errors),
        }
    }

    /// The authorization state an agent's declaration is worth before review: `confirmed`
    /// means a human confirmed this action, and only a Countersign reviewer's approval can
    /// say that, so a declared `confirmed` counts as `validated` until then.
    pub fn effective_authorization(&self) -> AuthorizationState {
        self.authorization_state
            .unwrap_or(AuthorizationState::None)
            .min(AuthorizationState::Validated)
    }
}

fn parse_into(value: &Value, errors: &mut Vec<FieldError>) -> Option<ToolProposal> {
    let mut r = Reader::object(value, "", errors)?;
    r.deny_unknown(FIELDS);

    let proposal_id = r
        .string("proposal_id", 64)
        .and_then(|s| match Uuid::parse_str(s) {
            Ok(id) => Some(id),
            Err(_) => {
                r.error("proposal_id", "must be a UUID");
                None
            }
        });
    let proposed_by = r.string("proposed_by", 64).and_then(|s| {
        if is_slug(s, 64) {
            Some(s.to_owned())
        } else {
            r.error(
                "proposed_by",
                "must be a lowercase name of letters, digits, `-`, `_` or `.`",
            );
            None
        }
    });
    let timestamp =
        r.string("timestamp", 64)
            .and_then(|s| match OffsetDateTime::parse(s, &Rfc3339) {
                Ok(t) => Some(t),
                Err(_) => {
                    r.error(
                        "timestamp",
                        "must be an RFC 3339 date-time, e.g. 2026-01-31T12:00:00Z",
                    );
                    None
                }
            });
    let domain = r.string("domain", 64).and_then(|s| {
        if is_slug(s, 64) {
            Some(s.to_owned())
        } else {
            r.error(
                "domain",
                "must be a lowercase name of letters, digits, `-`, `_` or `.`",
            );
            None
        }
    });
    let tool = r.nested("tool").and_then(|mut t| {
        t.deny_unknown(&["name", "version"]);
        let name = t.string("name", 128).and_then(|s| {
            if is_tool_name(s) {
                Some(s.to_owned())
            } else {
                t.error("name", "may contain only letters, digits and `_ . : - /`");
                None
            }
        });
        let version = t.string("version", 64).map(str::to_owned);
        Some(ToolRef {
            name: name?,
            version: version?,
        })
    });
    let intent = r.nested("intent").and_then(|mut i| {
        i.deny_unknown(&["summary", "reasoning"]);
        let summary = i.string("summary", MAX_SUMMARY).map(str::to_owned);
        let reasoning = i.string("reasoning", MAX_REASONING).map(str::to_owned);
        Some(Intent {
            summary: summary?,
            reasoning: reasoning?,
        })
    });
    let parameters = r.required("parameters").and_then(|v| match v {
        Value::Object(m) => Some(m.clone()),
        other => {
            r.error(
                "parameters",
                format!("must be an object, got {}", type_name(other)),
            );
            None
        }
    });
    let risk_level = r.enumeration::<RiskLevel>("risk_level");
    let approval_required = r.boolean("approval_required");
    let compliance_context = r.nested("compliance_context").and_then(|mut c| {
        c.deny_unknown(&["gdpr", "hipaa"]);
        let gdpr = c.boolean("gdpr");
        let hipaa = c.boolean("hipaa");
        Some(ComplianceContext {
            gdpr: gdpr?,
            hipaa: hipaa?,
        })
    });
    let idempotency_key = r
        .string("idempotency_key", MAX_IDEMPOTENCY_KEY)
        .and_then(|s| {
            if s.chars().any(char::is_control) {
                r.error("idempotency_key", "must not contain control characters");
                None
            } else {
                Some(s.to_owned())
            }
        });
    let rollback_supported = r.boolean("rollback_supported");
    let blast_radius = r.opt_enumeration::<BlastRadius>("blast_radius");
    let target_refs = parse_array(&mut r, "target_refs", MAX_TARGET_REFS, parse_target_ref);
    let rollback_plan = r.raw("rollback_plan").and_then(|v| {
        let path = r.path("rollback_plan");
        let mut p = Reader::object(v, &path, r.errors())?;
        p.deny_unknown(&["type", "instructions", "timeout_ms"]);
        let kind = p.enumeration::<RollbackType>("type");
        let instructions = p.raw("instructions").and_then(|v| match v {
            Value::Object(_) | Value::String(_) => Some(v.clone()),
            other => {
                p.error(
                    "instructions",
                    format!("must be an object or a string, got {}", type_name(other)),
                );
                None
            }
        });
        let timeout_ms = p.opt_u64("timeout_ms", 86_400_000);
        Some(RollbackPlan {
            kind: kind?,
            instructions,
            timeout_ms,
        })
    });
    let tool_category = r.opt_enumeration::<ToolCategory>("tool_category");
    let authorization_state = r.opt_enumeration::<AuthorizationState>("authorization_state");
    let evidence_refs = parse_array(
        &mut r,
        "evidence_refs",
        MAX_EVIDENCE_REFS,
        parse_evidence_ref,
    );
    let risk_domain = r.opt_enumeration::<RiskDomain>("risk_domain");

    Some(ToolProposal {
        proposal_id: proposal_id?,
        proposed_by: proposed_by?,
        timestamp: timestamp?,
        domain: domain?,
        tool: tool?,
        intent: intent?,
        parameters: parameters?,
        risk_level: risk_level?,
        approval_required: approval_required?,
        compliance_context: compliance_context?,
        idempotency_key: idempotency_key?,
        rollback_supported: rollback_supported?,
        blast_radius,
        target_refs: target_refs.unwrap_or_default(),
        rollback_plan,
        tool_category,
        authorization_state,
        evidence_refs: evidence_refs.unwrap_or_default(),
        risk_domain,
    })
}

fn parse_array<T>(
    r: &mut Reader<'_>,
    key: &str,
    max: usize,
    item: fn(&Value, &str, &mut Vec<FieldError>) -> Option<T>,
) -> Option<Vec<T>> {
    let v = r.raw(key)?;
    let Value::Array(items) = v else {
        r.error(key, format!("must be an array, got {}", type_name(v)));
        return None;
    };
    if items.len() > max {
        r.error(key, format!("must hold at most {max} items"));
        return None;
    }
    let base = r.path(key);
    let parsed: Vec<Option<T>> = items
        .iter()
        .enumerate()
        .map(|(i, v)| item(v, &format!("{base}[{i}]"), r.errors()))
        .collect();
    parsed.into_iter().collect()
}

fn parse_target_ref(v: &Value, path: &str, errors: &mut Vec<FieldError>) -> Option<TargetRef> {
    let mut t = Reader::object(v, path, errors)?;
    t.deny_unknown(&["type", "id"]);
    let kind = t.string("type", 64).map(str::to_owned);
    let id = t.string("id", 256).map(str::to_owned);
    Some(TargetRef {
        kind: kind?,
        id: id?,
    })
}

fn parse_evidence_ref(v: &Value, path: &str, errors: &mut Vec<FieldError>) -> Option<EvidenceRef> {
    if let Value::String(s) = v {
        if s.trim().is_empty() || s.len() > 256 {
            errors.push(FieldError::new(
                path,
                "must be a non-empty string of at most 256 characters",
            ));
            return None;
        }
        return Some(EvidenceRef::Plain(s.clone()));
    }
    let mut e = Reader::object(v, path, errors)?;
    e.deny_unknown(&[
        "source_id",
        "kind",
        "trust_tier",
        "redaction_status",
        "summary",
        "freshness",
        "provenance",
    ]);
    let source_id = e.string("source_id", 256).map(str::to_owned);
    let kind = e.enumeration::<EvidenceKind>("kind");
    let trust_tier = e.enumeration::<TrustTier>("trust_tier");
    let redaction_status = e.enumeration::<RedactionStatus>("redaction_status");
    let summary = e.opt_string("summary", 2_000).map(str::to_owned);
    let freshness = e.raw("freshness").and_then(|f| {
        let fpath = e.path("freshness");
        let mut fr = Reader::object(f, &fpath, e.errors())?;
        fr.deny_unknown(&["status"]);
        fr.enumeration::<Freshness>("status")
    });
    let provenance = e.opt_string("provenance", 128).map(str::to_owned);
    Some(EvidenceRef::Structured(StructuredEvidence {
        source_id: source_id?,
        kind: kind?,
        trust_tier: trust_tier?,
        redaction_status: redaction_status?,
        summary,
        freshness,
        provenance,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    pub(crate) fn valid() -> Value {
        json!({
            "proposal_id": "7b0e7a52-8f5e-4c36-9a57-1f1d2f9b6c11",
            "proposed_by": "sales-agent",
            "timestamp": "2026-11-22T10:00:00Z",
            "domain": "sales",
            "tool": {"name": "crm.update_contact", "version": "2024-01"},
            "intent": {"summary": "Update the contact's email", "reasoning": "The customer asked."},
            "parameters": {"contact_id": "c-1", "email": "a@example.com"},
            "risk_level": "medium",
            "approval_required": true,
            "compliance_context": {"gdpr": true, "hipaa": false},
            "idempotency_key": "k-1",
            "rollback_supported": true
        })
    }

    fn fields(v: &Value) -> Vec<String> {
        ToolProposal::parse(v)
            .expect_err("must be rejected")
            .into_iter()
            .map(|e| e.field)
            .collect()
    }

    #[test]
    fn parses_the_seed_004_shape() {
        let p = ToolProposal::parse(&valid()).expect("valid");
        assert_eq!(p.tool.name, "crm.update_contact");
        assert_eq!(p.risk_level, RiskLevel::Medium);
        assert!(p.compliance_context.gdpr);
        assert_eq!(p.effective_authorization(), AuthorizationState::None);
    }

    #[test]
    fn parses_the_optional_seed_003_and_000_fields() {
        let mut v = valid();
        let o = v.as_object_mut().expect("object");
        o.insert("blast_radius".into(), json!("medium"));
        o.insert(
            "target_refs".into(),
            json!([{"type": "crm_contact", "id": "c-1"}]),
        );
        o.insert(
            "rollback_plan".into(),
            json!({"type": "revert", "instructions": "set it back", "timeout_ms": 5000}),
        );
        o.insert("tool_category".into(), json!("write"));
        o.insert("authorization_state".into(), json!("confirmed"));
        o.insert("risk_domain".into(), json!("commerce"));
        o.insert(
            "evidence_refs".into(),
            json!(["draft:1", {"source_id": "auth.session", "kind": "auth_event", "trust_tier": "verified",
                               "redaction_status": "redacted", "freshness": {"status": "fresh"}}]),
        );
        let p = ToolProposal::parse(&v).expect("valid");
        assert_eq!(p.blast_radius, Some(BlastRadius::Medium));
        assert_eq!(p.target_refs[0].kind, "crm_contact");
        assert_eq!(p.evidence_refs.len(), 2);
        // An agent cannot declare itself confirmed; only a reviewer's approval can.
        assert_eq!(p.effective_authorization(), AuthorizationState::Validated);
    }

    #[test]
    fn lists_every_missing_field() {
        let errs = fields(&json!({}));
        for f in [
            "proposal_id",
            "proposed_by",
            "timestamp",
            "domain",
            "tool",
            "intent",
            "parameters",
            "risk_level",
            "approval_required",
            "compliance_context",
            "idempotency_key",
            "rollback_supported",
        ] {
            assert!(errs.contains(&f.to_owned()), "missing {f} in {errs:?}");
        }
    }

    #[test]
    fn unknown_enum_values_and_fields_fail_closed() {
        let mut v = valid();
        v["risk_level"] = json!("catastrophic");
        v["blast_radius"] = json!("galactic");
        v["authorization_state"] = json!("root");
        v["surprise"] = json!(1);
        let errs = ToolProposal::parse(&v).expect_err("rejected");
        let got: Vec<(&str, &str)> = errs
            .iter()
            .map(|e| (e.field.as_str(), e.message.as_str()))
            .collect();
        assert!(got.contains(&("risk_level", "must be one of `low`, `medium`, `high`")));
        assert!(got.iter().any(|(f, _)| *f == "blast_radius"));
        assert!(got.iter().any(|(f, _)| *f == "authorization_state"));
        assert!(got.contains(&("surprise", "is not a known field")));
    }

    #[test]
    fn wrong_types_name_the_field_and_the_type() {
        let mut v = valid();
        v["tool"] = json!("crm.update_contact");
        v["approval_required"] = json!("yes");
        v["parameters"] = json!([1]);
        v["target_refs"] = json!([{"type": "x"}, 3]);
        let errs = ToolProposal::parse(&v).expect_err("rejected");
        let got: Vec<String> = errs.iter().map(ToString::to_string).collect();
        assert!(
            got.contains(&"tool: must be an object, got string".to_owned()),
            "{got:?}"
        );
        assert!(got.contains(&"approval_required: must be a boolean, got string".to_owned()));
        assert!(got.contains(&"parameters: must be an object, got array".to_owned()));
        assert!(got.contains(&"target_refs[0].id: is required".to_owned()));
        assert!(got.contains(&"target_refs[1]: must be an object, got number".to_owned()));
    }

    #[test]
    fn rejects_bad_ids_times_and_names() {
        let mut v = valid();
        v["proposal_id"] = json!("not-a-uuid");
        v["timestamp"] = json!("yesterday");
        v["proposed_by"] = json!("Sales Agent");
        v["idempotency_key"] = json!("");
        assert_eq!(
            fields(&v),
            ["proposal_id", "proposed_by", "timestamp", "idempotency_key"]
        );
    }

    #[test]
    fn round_trips_through_storage_json() {
        let p = ToolProposal::parse(&valid()).expect("valid");
        let stored = serde_json::to_value(&p).expect("serialize");
        let back: ToolProposal = serde_json::from_value(stored).expect("deserialize");
        assert_eq!(p, back);
    }
}
