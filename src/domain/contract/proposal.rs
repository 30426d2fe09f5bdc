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

use super::aana::EvidenceRef;
use super::vocab::{
    AuthorizationMode, AuthorizationState, BlastRadius, RiskDomain, RiskLevel, ToolCategory,
};
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
    #[schemars(length(min = 1, max = 128), extend("pattern" = "^[A-Za-z0-9_.:/-]+$"))]
    pub name: String,
    /// Tool version or API revision.
    #[schemars(length(max = 64), extend("pattern" = "\\S"))]
    pub version: String,
}

/// Why the agent wants it (shown to reviewers; never sent to executors).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct Intent {
    /// One-line description of the action.
    #[schemars(length(max = 500), extend("pattern" = "\\S"))]
    pub summary: String,
    /// Why this action is appropriate.
    #[schemars(length(max = 10000), extend("pattern" = "\\S"))]
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
    #[schemars(extend("pattern" = "\\S"))]
    pub kind: String,
    /// Resource identifier.
    #[schemars(extend("pattern" = "\\S"))]
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
    #[schemars(extend("type" = ["object", "string"]))]
    pub instructions: Option<Value>,
    /// Longest the rollback may take.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(max = 86_400_000))]
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
    #[schemars(extend("pattern" = "\\S"))]
    pub policy_ref: Option<String>,
    /// Role or identity required for approval.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("pattern" = "\\S"))]
    pub approver: Option<String>,
}

/// Retries on transient failure (seed 003 `execution.retryPolicy`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct RetryPolicy {
    /// Retry attempts.
    #[schemars(range(max = 100))]
    pub max_retries: u64,
    /// Delay between retries.
    #[schemars(range(max = 86_400_000))]
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
    #[schemars(range(max = 86_400_000))]
    pub execution_slo_ms: Option<u64>,
    /// Hard timeout: abort and roll back when exceeded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(max = 86_400_000))]
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
    #[schemars(extend("pattern" = "\\S"))]
    pub case_id: Option<String>,
    /// The agent run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("pattern" = "\\S"))]
    pub run_id: Option<String>,
    /// The orchestrating run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("pattern" = "\\S"))]
    pub parent_run_id: Option<String>,
    /// Correlation across runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("pattern" = "\\S"))]
    pub correlation_id: Option<String>,
}

/// Seed 004's observability fields: what produced the proposal.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Observability {
    /// Prompt version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("pattern" = "\\S"))]
    pub prompt_version: Option<String>,
    /// Prompt hash.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("pattern" = "\\S"))]
    pub prompt_hash: Option<String>,
    /// Model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("pattern" = "\\S"))]
    pub model: Option<String>,
    /// Model provider.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("pattern" = "\\S"))]
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
    #[schemars(length(max = 64), extend("pattern" = "^[a-z0-9][a-z0-9._-]*$"))]
    pub proposed_by: String,
    /// When the agent created the proposal (RFC 3339).
    #[serde(with = "time::serde::rfc3339")]
    #[schemars(with = "String", extend("format" = "date-time"))]
    pub timestamp: OffsetDateTime,
    /// Domain context, used for policy and ownership.
    #[schemars(length(max = 64), extend("pattern" = "^[a-z0-9][a-z0-9._-]*$"))]
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
    #[schemars(length(max = 255), extend("pattern" = "^[^\\x00-\\x1f\\x7f-\\x9f]*[^\\s\\x00-\\x1f\\x7f-\\x9f][^\\x00-\\x1f\\x7f-\\x9f]*$"))]
    pub idempotency_key: String,
    /// Whether the action can be rolled back.
    pub rollback_supported: bool,
    /// Impact scope (seed 003).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blast_radius: Option<BlastRadius>,
    /// Affected resources (seed 003).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 100))]
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
    #[schemars(length(max = 100), extend("items" = {"type": ["object", "string"]}))]
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
    #[schemars(length(max = 100))]
    pub evidence_refs: Vec<EvidenceRef>,
    /// Risk surface (seed 000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub risk_domain: Option<RiskDomain>,
    /// The proposal this one revises, after a reviewer asked for changes to it (Countersign's
    /// own field; the revised proposal must come from the same agent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub supersedes: Option<Uuid>,
    /// Run context (seed 002).
    #[serde(flatten)]
    pub run: RunContext,
    /// What produced the proposal (seed 004).
    #[serde(flatten)]
    pub observability: Observability,
}

const FIELDS: &[&str] = &[
    "supersedes",
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

/// Reads every field in a fixed order (the order errors are reported in), then assembles the
/// proposal when nothing required is missing.
fn parse_into(value: &Value, errors: &mut Vec<FieldError>) -> Option<ToolProposal> {
    let mut r = ObjectReader::new(value, "", errors)?;
    r.deny_unknown(FIELDS);

    let proposal_id = parse_proposal_id(&mut r);
    let proposed_by = slug(&mut r, "proposed_by");
    let timestamp = parse_timestamp(&mut r);
    let domain = slug(&mut r, "domain");
    let tool = nested(&mut r, "tool", true, parse_tool);
    let intent = nested(&mut r, "intent", true, parse_intent);
    let parameters = parse_parameters(&mut r);
    let risk_level = r.enumeration::<RiskLevel>("risk_level");
    let approval_required = r.boolean("approval_required");
    let compliance_context = nested(&mut r, "compliance_context", true, parse_compliance);
    let idempotency_key = parse_idempotency_key(&mut r);
    let rollback_supported = r.boolean("rollback_supported");
    let blast_radius = r.opt_enumeration::<BlastRadius>("blast_radius");
    let target_refs = items(&mut r, "target_refs", parse_target_ref);
    let rollback_plan = nested(&mut r, "rollback_plan", false, parse_rollback_plan);
    let constraints = r.opt_object("constraints");
    let authorization = nested(&mut r, "authorization", false, parse_authorization);
    let preconditions = items(&mut r, "preconditions", parse_precondition);
    let execution = nested(&mut r, "execution", false, parse_execution);
    let tool_category = r.opt_enumeration::<ToolCategory>("tool_category");
    let authorization_state = r.opt_enumeration::<AuthorizationState>("authorization_state");
    let evidence_refs = nested(
        &mut r,
        "evidence_refs",
        false,
        super::aana::parse_evidence_list,
    );
    let risk_domain = r.opt_enumeration::<RiskDomain>("risk_domain");
    let supersedes = parse_supersedes(&mut r);
    let run = parse_run(&mut r);
    let observability = parse_observability(&mut r);

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
        supersedes,
        run,
        observability,
    })
}

fn parse_supersedes(r: &mut ObjectReader<'_, '_>) -> Option<Uuid> {
    let s = r.opt_bounded("supersedes", 64)?;
    let id = Uuid::parse_str(s).ok();
    if id.is_none() {
        r.error(
            "supersedes",
            "must be the UUID of the proposal this one revises",
        );
    }
    id
}

/// The value at `key` (an error when it is `required` and absent), parsed by `parse` at the
/// key's path.
fn nested<T>(
    r: &mut ObjectReader<'_, '_>,
    key: &str,
    required: bool,
    parse: impl FnOnce(&Value, &str, &mut Vec<FieldError>) -> Option<T>,
) -> Option<T> {
    let v = if required {
        r.required(key)
    } else {
        r.get(key)
    }?;
    let path = r.path(key);
    parse(v, &path, r.errors())
}

fn parse_proposal_id(r: &mut ObjectReader<'_, '_>) -> Option<Uuid> {
    let s = r.bounded("proposal_id", 64)?;
    match Uuid::parse_str(s) {
        Ok(id) => Some(id),
        Err(_) => {
            r.error("proposal_id", "must be a UUID");
            None
        }
    }
}

fn parse_timestamp(r: &mut ObjectReader<'_, '_>) -> Option<OffsetDateTime> {
    let s = r.bounded("timestamp", 64)?;
    match OffsetDateTime::parse(s, &Rfc3339) {
        Ok(t) => Some(t),
        Err(_) => {
            r.error(
                "timestamp",
                "must be an RFC 3339 date-time, e.g. 2026-01-31T12:00:00Z",
            );
            None
        }
    }
}

fn parse_tool(v: &Value, path: &str, errors: &mut Vec<FieldError>) -> Option<ToolRef> {
    let mut t = ObjectReader::new(v, path, errors)?;
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
}

fn parse_intent(v: &Value, path: &str, errors: &mut Vec<FieldError>) -> Option<Intent> {
    let mut i = ObjectReader::new(v, path, errors)?;
    i.deny_unknown(&["summary", "reasoning"]);
    let summary = i.bounded("summary", MAX_SUMMARY).map(str::to_owned);
    let reasoning = i.bounded("reasoning", MAX_REASONING).map(str::to_owned);
    Some(Intent {
        summary: summary?,
        reasoning: reasoning?,
    })
}

fn parse_parameters(r: &mut ObjectReader<'_, '_>) -> Option<Map<String, Value>> {
    match r.required("parameters")? {
        Value::Object(m) => Some(m.clone()),
        other => {
            r.error(
                "parameters",
                format!("must be an object, got {}", type_name(other)),
            );
            None
        }
    }
}

fn parse_compliance(
    v: &Value,
    path: &str,
    errors: &mut Vec<FieldError>,
) -> Option<ComplianceContext> {
    let mut c = ObjectReader::new(v, path, errors)?;
    c.deny_unknown(&["gdpr", "hipaa"]);
    let gdpr = c.boolean("gdpr");
    let hipaa = c.boolean("hipaa");
    Some(ComplianceContext {
        gdpr: gdpr?,
        hipaa: hipaa?,
    })
}

fn parse_idempotency_key(r: &mut ObjectReader<'_, '_>) -> Option<String> {
    let s = r.bounded("idempotency_key", MAX_IDEMPOTENCY_KEY)?;
    if s.chars().any(char::is_control) {
        r.error("idempotency_key", "must not contain control characters");
        None
    } else {
        Some(s.to_owned())
    }
}

fn parse_rollback_plan(
    v: &Value,
    path: &str,
    errors: &mut Vec<FieldError>,
) -> Option<RollbackPlan> {
    let mut p = ObjectReader::new(v, path, errors)?;
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
}

fn parse_authorization(
    v: &Value,
    path: &str,
    errors: &mut Vec<FieldError>,
) -> Option<AuthorizationRequest> {
    let mut a = ObjectReader::new(v, path, errors)?;
    a.deny_unknown(&["mode", "policy_ref", "approver"]);
    let mode = a.enumeration::<AuthorizationMode>("mode");
    let policy_ref = a.opt_bounded("policy_ref", 128).map(str::to_owned);
    let approver = a.opt_bounded("approver", 128).map(str::to_owned);
    Some(AuthorizationRequest {
        mode: mode?,
        policy_ref,
        approver,
    })
}

fn parse_precondition(v: &Value, path: &str, errors: &mut Vec<FieldError>) -> Option<Value> {
    match v {
        Value::Object(_) | Value::String(_) => Some(v.clone()),
        other => {
            errors.push(FieldError::new(
                path,
                format!("must be an object or a string, got {}", type_name(other)),
            ));
            None
        }
    }
}

fn parse_execution(v: &Value, path: &str, errors: &mut Vec<FieldError>) -> Option<ExecutionLimits> {
    let mut e = ObjectReader::new(v, path, errors)?;
    e.deny_unknown(&["execution_slo_ms", "timeout_ms", "retry_policy"]);
    let execution_slo_ms = e.opt_u64("execution_slo_ms", MAX_TIMEOUT_MS);
    let timeout_ms = e.opt_u64("timeout_ms", MAX_TIMEOUT_MS);
    let retry_policy = nested(&mut e, "retry_policy", false, parse_retry_policy);
    Some(ExecutionLimits {
        execution_slo_ms,
        timeout_ms,
        retry_policy,
    })
}

fn parse_retry_policy(v: &Value, path: &str, errors: &mut Vec<FieldError>) -> Option<RetryPolicy> {
    let mut rp = ObjectReader::new(v, path, errors)?;
    rp.deny_unknown(&["max_retries", "backoff_ms"]);
    let max_retries = rp.opt_u64("max_retries", 100).unwrap_or(0);
    let backoff_ms = rp.opt_u64("backoff_ms", MAX_TIMEOUT_MS).unwrap_or(0);
    Some(RetryPolicy {
        max_retries,
        backoff_ms,
    })
}

fn parse_run(r: &mut ObjectReader<'_, '_>) -> RunContext {
    let mut text = |key: &str| r.opt_bounded(key, 128).map(str::to_owned);
    RunContext {
        case_id: text("case_id"),
        run_id: text("run_id"),
        parent_run_id: text("parent_run_id"),
        correlation_id: text("correlation_id"),
    }
}

fn parse_observability(r: &mut ObjectReader<'_, '_>) -> Observability {
    let mut text = |key: &str| r.opt_bounded(key, 128).map(str::to_owned);
    Observability {
        prompt_version: text("prompt_version"),
        prompt_hash: text("prompt_hash"),
        model: text("model"),
        provider: text("provider"),
    }
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
mod tests;
