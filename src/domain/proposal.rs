//! The tool proposal contract: seed 004's Tool Proposal, with the safe-action fields of seed 003
//! (blast radius, targets, constraints, authorization mode, rollback plan, preconditions,
//! execution limits), seed 002's run context, seed 004's observability fields and seed 000's
//! authorization and evidence fields, and its parser.
//!
//! [`ToolProposal::parse`] is the only way in from the outside: it reads untrusted JSON and
//! returns either a fully typed proposal or every rule the input broke, each with its field
//! path. Unknown fields and unknown enum values are refused (fail closed).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;
use uuid::Uuid;

pub use super::aana::{AuthorizationState, EvidenceRef, RiskDomain, ToolCategory};
pub use super::policy::{AuthorizationMode, BlastRadius, RiskLevel};
use super::proposal_routing::ProposalFacts;
use super::wire::{FieldError, ObjectReader, type_name, wire_enum};

/// Longest accepted intent summary, in characters.
pub const MAX_SUMMARY: usize = 500;
/// Longest accepted reasoning, in characters.
pub const MAX_REASONING: usize = 10_000;
/// Longest accepted idempotency key, in characters.
pub const MAX_IDEMPOTENCY_KEY: usize = 255;
/// Most target refs, preconditions or evidence refs one proposal may carry.
pub const MAX_ITEMS: usize = 100;
/// Longest execution or rollback timeout, in milliseconds (one day).
pub const MAX_TIMEOUT_MS: u64 = 86_400_000;

wire_enum! {
    /// How an action can be reversed (seed 003).
    pub enum RollbackType {
        /// Irreversible by design.
        None => "none",
        /// Issue a compensating action.
        Compensate => "compensate",
        /// Restore from a snapshot or backup.
        Restore => "restore",
        /// Undo the mutation.
        Revert => "revert",
    }
}

/// The tool an agent wants run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct ToolRef {
    /// Fully qualified tool action name, e.g. `google_calendar.create_event`.
    pub name: String,
    /// Tool version or API revision.
    pub version: String,
}

/// Why the agent wants it (shown to reviewers; never sent to executors).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct Intent {
    /// One-line description of the action.
    pub summary: String,
    /// Why this action is appropriate.
    pub reasoning: String,
}

/// Which regulatory regimes apply (seed 004).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct ComplianceContext {
    /// Personal data under GDPR is involved.
    pub gdpr: bool,
    /// Protected health information under HIPAA is involved.
    pub hipaa: bool,
}

/// A resource the action affects (seed 003 `targetRefs`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct TargetRef {
    /// Resource type, e.g. `crm_contact`.
    #[serde(rename = "type")]
    pub kind: String,
    /// Resource identifier.
    pub id: String,
}

/// How the action can be reversed (seed 003 `rollbackPlan`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct RollbackPlan {
    /// Kind of rollback.
    #[serde(rename = "type")]
    pub kind: RollbackType,
    /// Free-form instructions (object or text).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions: Option<Value>,
    /// Longest the rollback may take.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
}

/// The authorization the agent's runtime asks for (seed 003 `authorization`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct AuthorizationRequest {
    /// `auto`, `hitl` or `blocked`. The policy decides; `blocked` always refuses.
    pub mode: AuthorizationMode,
    /// The policy pack that determined the mode.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy_ref: Option<String>,
    /// Role or identity required for approval.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approver: Option<String>,
}

/// Retries on transient failure (seed 003 `execution.retryPolicy`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct RetryPolicy {
    /// Retry attempts.
    pub max_retries: u64,
    /// Delay between retries.
    pub backoff_ms: u64,
}

/// Execution limits (seed 003 `execution`).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, schemars::JsonSchema,
)]
#[schemars(deny_unknown_fields)]
pub struct ExecutionLimits {
    /// Target execution time (informational).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub execution_slo_ms: Option<u64>,
    /// Hard timeout: abort and roll back when exceeded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
    /// Retries.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_policy: Option<RetryPolicy>,
}

/// Seed 002's run context: which governed run and case the proposal belongs to.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RunContext {
    /// Case the work is scoped to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub case_id: Option<String>,
    /// The agent run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
    /// The orchestrating run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_run_id: Option<String>,
    /// Correlation across runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub correlation_id: Option<String>,
}

/// Seed 004's observability fields: what produced the proposal.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Observability {
    /// Prompt version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_version: Option<String>,
    /// Prompt hash.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_hash: Option<String>,
    /// Model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Model provider.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
}

/// A validated tool proposal.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct ToolProposal {
    /// Globally unique id chosen by the agent.
    #[schemars(with = "String", extend("format" = "uuid"))]
    pub proposal_id: Uuid,
    /// The proposing agent; must be the authenticated agent.
    pub proposed_by: String,
    /// When the agent created the proposal (RFC 3339).
    #[serde(with = "time::serde::rfc3339")]
    #[schemars(with = "String", extend("format" = "date-time"))]
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
    /// Policy, budget and scope constraints (seed 003), passed to the executor as given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub constraints: Option<Map<String, Value>>,
    /// Requested authorization mode (seed 003).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub authorization: Option<AuthorizationRequest>,
    /// Declarative checks that must pass before dispatch (seed 003).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub preconditions: Vec<Value>,
    /// Execution limits (seed 003).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub execution: Option<ExecutionLimits>,
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
    /// Run context (seed 002).
    #[serde(flatten)]
    pub run: RunContext,
    /// What produced the proposal (seed 004).
    #[serde(flatten)]
    pub observability: Observability,
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
    "constraints",
    "authorization",
    "preconditions",
    "execution",
    "tool_category",
    "authorization_state",
    "evidence_refs",
    "risk_domain",
    "case_id",
    "run_id",
    "parent_run_id",
    "correlation_id",
    "prompt_version",
    "prompt_hash",
    "model",
    "provider",
];

/// Names of agents, users and domains: lowercase slugs of at most `max` characters.
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
    /// means a human confirmed this action, and only a Countersign reviewer's approval (or a
    /// policy's `accept`) can say that here, so a declared `confirmed` counts as `validated`.
    pub fn effective_authorization(&self) -> AuthorizationState {
        self.authorization_state
            .unwrap_or(AuthorizationState::None)
            .min(AuthorizationState::Validated)
    }

    /// What the policy router needs to know about this proposal.
    pub fn facts(&self) -> ProposalFacts {
        ProposalFacts {
            agent: self.proposed_by.clone(),
            domain: self.domain.clone(),
            tool_name: self.tool.name.clone(),
            risk_level: self.risk_level,
            approval_required: self.approval_required,
            gdpr: self.compliance_context.gdpr,
            hipaa: self.compliance_context.hipaa,
            rollback_supported: self.rollback_supported,
            blast_radius: self.blast_radius,
            has_rollback_plan: self
                .rollback_plan
                .as_ref()
                .is_some_and(|p| p.kind != RollbackType::None),
            authorization_mode: self.authorization.as_ref().map(|a| a.mode),
            tool_category: self.tool_category,
            authorization_state: self.authorization_state,
            evidence: self.evidence_refs.clone(),
            risk_domain: self.risk_domain,
        }
    }
}

fn slug(r: &mut ObjectReader<'_, '_>, key: &str) -> Option<String> {
    let s = r.bounded(key, 64)?;
    if is_slug(s, 64) {
        Some(s.to_owned())
    } else {
        r.error(
            key,
            "must be a lowercase name of letters, digits, `-`, `_` or `.`",
        );
        None
    }
}

fn parse_into(value: &Value, errors: &mut Vec<FieldError>) -> Option<ToolProposal> {
    let mut r = ObjectReader::new(value, "", errors)?;
    r.deny_unknown(FIELDS);

    let proposal_id = r
        .bounded("proposal_id", 64)
        .and_then(|s| match Uuid::parse_str(s) {
            Ok(id) => Some(id),
            Err(_) => {
                r.error("proposal_id", "must be a UUID");
                None
            }
        });
    let proposed_by = slug(&mut r, "proposed_by");
    let timestamp =
        r.bounded("timestamp", 64)
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
    let domain = slug(&mut r, "domain");
    let tool = r.required("tool").and_then(|v| {
        let path = r.path("tool");
        let mut t = ObjectReader::new(v, &path, r.errors())?;
        t.deny_unknown(&["name", "version"]);
        let name = t.bounded("name", 128).and_then(|s| {
            if is_tool_name(s) {
                Some(s.to_owned())
            } else {
                t.error("name", "may contain only letters, digits and `_ . : - /`");
                None
            }
        });
        let version = t.bounded("version", 64).map(str::to_owned);
        Some(ToolRef {
            name: name?,
            version: version?,
        })
    });
    let intent = r.required("intent").and_then(|v| {
        let path = r.path("intent");
        let mut i = ObjectReader::new(v, &path, r.errors())?;
        i.deny_unknown(&["summary", "reasoning"]);
        let summary = i.bounded("summary", MAX_SUMMARY).map(str::to_owned);
        let reasoning = i.bounded("reasoning", MAX_REASONING).map(str::to_owned);
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
    let compliance_context = r.required("compliance_context").and_then(|v| {
        let path = r.path("compliance_context");
        let mut c = ObjectReader::new(v, &path, r.errors())?;
        c.deny_unknown(&["gdpr", "hipaa"]);
        let gdpr = c.boolean("gdpr");
        let hipaa = c.boolean("hipaa");
        Some(ComplianceContext {
            gdpr: gdpr?,
            hipaa: hipaa?,
        })
    });
    let idempotency_key = r
        .bounded("idempotency_key", MAX_IDEMPOTENCY_KEY)
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
    let target_refs = items(&mut r, "target_refs", parse_target_ref);
    let rollback_plan = r.get("rollback_plan").and_then(|v| {
        let path = r.path("rollback_plan");
        let mut p = ObjectReader::new(v, &path, r.errors())?;
        p.deny_unknown(&["type", "instructions", "timeout_ms"]);
        let kind = p.enumeration::<RollbackType>("type");
        let instructions = p.get("instructions").and_then(|v| match v {
            Value::Object(_) | Value::String(_) => Some(v.clone()),
            other => {
                p.error(
                    "instructions",
                    format!("must be an object or a string, got {}", type_name(other)),
                );
                None
            }
        });
        let timeout_ms = p.opt_u64("timeout_ms", MAX_TIMEOUT_MS);
        Some(RollbackPlan {
            kind: kind?,
            instructions,
            timeout_ms,
        })
    });
    let constraints = r.opt_object("constraints");
    let authorization = r.get("authorization").and_then(|v| {
        let path = r.path("authorization");
        let mut a = ObjectReader::new(v, &path, r.errors())?;
        a.deny_unknown(&["mode", "policy_ref", "approver"]);
        let mode = a.enumeration::<AuthorizationMode>("mode");
        let policy_ref = a.opt_bounded("policy_ref", 128).map(str::to_owned);
        let approver = a.opt_bounded("approver", 128).map(str::to_owned);
        Some(AuthorizationRequest {
            mode: mode?,
            policy_ref,
            approver,
        })
    });
    let preconditions = items(&mut r, "preconditions", |v, path, errors| match v {
        Value::Object(_) | Value::String(_) => Some(v.clone()),
        other => {
            errors.push(FieldError::new(
                path,
                format!("must be an object or a string, got {}", type_name(other)),
            ));
            None
        }
    });
    let execution = r.get("execution").and_then(|v| {
        let path = r.path("execution");
        let mut e = ObjectReader::new(v, &path, r.errors())?;
        e.deny_unknown(&["execution_slo_ms", "timeout_ms", "retry_policy"]);
        let execution_slo_ms = e.opt_u64("execution_slo_ms", MAX_TIMEOUT_MS);
        let timeout_ms = e.opt_u64("timeout_ms", MAX_TIMEOUT_MS);
        let retry_policy = e.get("retry_policy").and_then(|v| {
            let path = e.path("retry_policy");
            let mut rp = ObjectReader::new(v, &path, e.errors())?;
            rp.deny_unknown(&["max_retries", "backoff_ms"]);
            let max_retries = rp.opt_u64("max_retries", 100).unwrap_or(0);
            let backoff_ms = rp.opt_u64("backoff_ms", MAX_TIMEOUT_MS).unwrap_or(0);
            Some(RetryPolicy {
                max_retries,
                backoff_ms,
            })
        });
        Some(ExecutionLimits {
            execution_slo_ms,
            timeout_ms,
            retry_policy,
        })
    });
    let tool_category = r.opt_enumeration::<ToolCategory>("tool_category");
    let authorization_state = r.opt_enumeration::<AuthorizationState>("authorization_state");
    let evidence_refs = r.get("evidence_refs").and_then(|v| {
        let path = r.path("evidence_refs");
        super::aana::parse_evidence_list(v, &path, r.errors())
    });
    let risk_domain = r.opt_enumeration::<RiskDomain>("risk_domain");
    let mut text = |key: &str| r.opt_bounded(key, 128).map(str::to_owned);
    let run = RunContext {
        case_id: text("case_id"),
        run_id: text("run_id"),
        parent_run_id: text("parent_run_id"),
        correlation_id: text("correlation_id"),
    };
    let observability = Observability {
        prompt_version: text("prompt_version"),
        prompt_hash: text("prompt_hash"),
        model: text("model"),
        provider: text("provider"),
    };

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
        constraints,
        authorization,
        preconditions: preconditions.unwrap_or_default(),
        execution,
        tool_category,
        authorization_state,
        evidence_refs: evidence_refs.unwrap_or_default(),
        risk_domain,
        run,
        observability,
    })
}

fn items<T>(
    r: &mut ObjectReader<'_, '_>,
    key: &str,
    item: impl Fn(&Value, &str, &mut Vec<FieldError>) -> Option<T>,
) -> Option<Vec<T>> {
    let v = r.get(key)?;
    let Value::Array(values) = v else {
        r.error(key, format!("must be an array, got {}", type_name(v)));
        return None;
    };
    if values.len() > MAX_ITEMS {
        r.error(key, format!("must hold at most {MAX_ITEMS} items"));
        return None;
    }
    let base = r.path(key);
    let parsed: Vec<Option<T>> = values
        .iter()
        .enumerate()
        .map(|(i, v)| item(v, &format!("{base}[{i}]"), r.errors()))
        .collect();
    parsed.into_iter().collect()
}

fn parse_target_ref(v: &Value, path: &str, errors: &mut Vec<FieldError>) -> Option<TargetRef> {
    let mut t = ObjectReader::new(v, path, errors)?;
    t.deny_unknown(&["type", "id"]);
    let kind = t.bounded("type", 64).map(str::to_owned);
    let id = t.bounded("id", 256).map(str::to_owned);
    Some(TargetRef {
        kind: kind?,
        id: id?,
    })
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
            "authorization".into(),
            json!({"mode": "hitl", "approver": "sales-lead"}),
        );
        o.insert(
            "execution".into(),
            json!({"timeout_ms": 30000, "retry_policy": {"max_retries": 2, "backoff_ms": 500}}),
        );
        o.insert(
            "preconditions".into(),
            json!([{"type": "resource_state", "expect": "active"}]),
        );
        o.insert("constraints".into(), json!({"change_window": "weekdays"}));
        o.insert("case_id".into(), json!("case-7"));
        o.insert("model".into(), json!("gpt-x"));
        o.insert(
            "evidence_refs".into(),
            json!(["draft:1", {"source_id": "auth.session", "kind": "auth_event", "trust_tier": "verified",
                               "redaction_status": "redacted", "freshness": {"status": "fresh"}, "provenance": "connector"}]),
        );
        let p = ToolProposal::parse(&v).expect("valid");
        assert_eq!(p.blast_radius, Some(BlastRadius::Medium));
        assert_eq!(p.target_refs[0].kind, "crm_contact");
        assert_eq!(p.evidence_refs.len(), 2);
        assert_eq!(
            p.authorization.as_ref().map(|a| a.mode),
            Some(AuthorizationMode::Hitl)
        );
        assert_eq!(
            p.execution
                .and_then(|e| e.retry_policy)
                .map(|r| r.max_retries),
            Some(2)
        );
        assert_eq!(p.run.case_id.as_deref(), Some("case-7"));
        assert_eq!(p.observability.model.as_deref(), Some("gpt-x"));
        assert!(p.facts().has_rollback_plan);
        let stored = serde_json::to_value(&p).expect("serialize");
        assert_eq!(
            serde_json::from_value::<ToolProposal>(stored).expect("deserialize"),
            p
        );
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
        assert!(got.contains(&(
            "risk_level",
            "unknown value `catastrophic`; must be one of `low`, `medium`, `high`"
        )));
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
