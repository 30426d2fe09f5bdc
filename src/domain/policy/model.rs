//! The policy model: what a loaded policy says (categories, defaults, blast radius rules,
//! agents and their domains, tool rules in precedence order), how a tool name finds its rule,
//! and the content version. Loading a policy from TOML is [`super::loader`]'s business.

use std::collections::{BTreeMap, HashMap};
use std::fmt;

use serde::Serialize;
use serde_json::{Map, Value, json};

use super::escalation::Escalation;
use super::glob::Glob;
use crate::domain::contract::canonical::{canonical_json, sha256_hex};
use crate::domain::contract::vocab::{BlastRadius, RiskLevel, ToolCategory};
use crate::domain::contract::wire::wire_enum;

/// Format marker included in the canonical form (bumped if its meaning ever changes).
pub const POLICY_FORMAT: &str = "countersign.policy/1";

/// Longest expiry a policy may set.
pub const MAX_EXPIRY_SECS: u64 = 365 * 86_400;

/// Default approval expiry: 24 hours.
pub const DEFAULT_EXPIRY_SECS: u64 = 86_400;

/// Default approval window: an approved command not leased within an hour expires.
pub const DEFAULT_EXECUTE_WITHIN_SECS: u64 = 3_600;

/// The longest standing grant of a tool's calls when its rule sets no `max_grant`: 8 h.
pub const DEFAULT_MAX_GRANT_SECS: u64 = 8 * 3_600;

wire_enum! {
    /// Seed 004 tool action categories.
    pub enum ActionCategory {
        /// Auto-executable (strictly limited): allow-listed, reversible, no personal data, low risk.
        A => "a",
        /// Conditionally auto-executable: not implemented, treated as `C`.
        B => "b",
        /// Always human-approved. The default for every tool.
        C => "c",
    }
}

impl ActionCategory {
    /// Only Category A may ever execute without a human.
    pub fn may_auto_execute(self) -> bool {
        self == ActionCategory::A
    }
}

wire_enum! {
    /// What happens to proposals from agents not listed under `[agents]`.
    pub enum UnknownAgents {
        /// Refuse them.
        Refuse => "refuse",
        /// Let them propose in any domain.
        Allow => "allow",
    }
}

/// Settings for tools no rule matches, and defaults for rules that omit a key.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Defaults {
    /// Human approvals needed (at least 1).
    pub required_approvals: u8,
    /// How long an approval request stays open, in seconds.
    pub expiry_secs: u64,
    /// Whether unregistered agents may propose.
    pub unknown_agents: UnknownAgents,
    /// How long an approved command may wait for its first lease, in seconds.
    pub execute_within_secs: u64,
    /// Who is told when nobody decides in time; `None`: nothing escalates.
    pub escalation: Option<Escalation>,
    /// The effective risk at and above which approving needs a passkey (step-up); `None`:
    /// only the tools whose rule says `step_up = true`.
    pub step_up_risk: Option<RiskLevel>,
}

impl Default for Defaults {
    fn default() -> Self {
        Self {
            required_approvals: 1,
            expiry_secs: DEFAULT_EXPIRY_SECS,
            unknown_agents: UnknownAgents::Refuse,
            execute_within_secs: DEFAULT_EXECUTE_WITHIN_SECS,
            escalation: None,
            step_up_risk: None,
        }
    }
}

/// Blast radius rules (seed 003).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BlastRadiusRules {
    /// Highest tier at which a Category A action may auto-execute.
    pub auto_execute_max: BlastRadius,
    /// Tiers above this need a rollback plan; `None`: never required.
    pub rollback_plan_above: Option<BlastRadius>,
    /// Tiers above this need `extra_approvals` more approvals; `None`: never.
    pub extra_approvals_above: Option<BlastRadius>,
    /// How many more approvals.
    pub extra_approvals: u8,
    /// Tiers above this are refused; `None`: no ceiling.
    pub refuse_above: Option<BlastRadius>,
}

impl Default for BlastRadiusRules {
    fn default() -> Self {
        Self {
            auto_execute_max: BlastRadius::Tiny,
            rollback_plan_above: None,
            extra_approvals_above: None,
            extra_approvals: 1,
            refuse_above: None,
        }
    }
}

impl BlastRadiusRules {
    /// Whether `tier` needs a rollback plan.
    pub fn requires_rollback_plan(&self, tier: BlastRadius) -> bool {
        self.rollback_plan_above.is_some_and(|t| tier > t)
    }

    /// Approvals to add for `tier`.
    pub fn extra_approvals_for(&self, tier: BlastRadius) -> u8 {
        if self.extra_approvals_above.is_some_and(|t| tier > t) {
            self.extra_approvals
        } else {
            0
        }
    }

    /// Whether `tier` is above the ceiling.
    pub fn exceeds_ceiling(&self, tier: BlastRadius) -> bool {
        self.refuse_above.is_some_and(|t| tier > t)
    }

    /// Whether a Category A action of `tier` may auto-execute.
    pub fn allows_auto_execution(&self, tier: BlastRadius) -> bool {
        tier <= self.auto_execute_max
    }
}

/// A registered agent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AgentRule {
    /// Free text for operators.
    pub description: Option<String>,
    /// Domains the agent owns and may propose in (sorted, non-empty).
    pub domains: Vec<String>,
}

impl AgentRule {
    /// Whether the agent owns `domain`.
    pub fn owns(&self, domain: &str) -> bool {
        self.domains.iter().any(|d| d == domain)
    }
}

/// What the policy says about the tools one pattern matches.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ToolRule {
    /// The exact tool name or glob, as written.
    pub pattern: String,
    /// The rule's TOML path, e.g. `tools."crm.*"`, used in decisions' `rule` fields.
    pub id: String,
    /// Free text for operators.
    pub description: Option<String>,
    /// Seed 004 category.
    pub category: ActionCategory,
    /// Floor for the declared AANA tool category.
    pub tool_category: Option<ToolCategory>,
    /// Floor for the declared risk level.
    pub risk: RiskLevel,
    /// Human approvals needed (at least 1).
    pub required_approvals: u8,
    /// How long an approval request stays open, in seconds.
    pub expiry_secs: u64,
    /// Lane: agents that may propose the tool (sorted; empty = any agent).
    pub allowed_agents: Vec<String>,
    /// Executors that may run the tool (sorted; empty = any executor).
    pub allowed_executors: Vec<String>,
    /// HIPAA allow-list: whether proposals involving PHI may use the tool.
    pub allow_phi: bool,
    /// Running the tool twice has the effect of running it once: a lapsed lease may be retried.
    pub idempotent: bool,
    /// How long an approved command may wait for its first lease, in seconds.
    pub execute_within_secs: u64,
    /// Escalation for this tool; `None`: the domain's, else the defaults'.
    pub escalation: Option<Escalation>,
    /// Whether reviewers may grant this tool's later calls ("approve and allow similar").
    pub grantable: bool,
    /// The longest such grant, in seconds.
    pub max_grant_secs: u64,
    /// Whether an admin may approve alone, in an emergency, what needs more approvers.
    pub break_glass: bool,
    /// Whether a reviewer may change parameter values before approving.
    pub editable: bool,
    /// Whether approving needs a fresh passkey assertion bound to the request (step-up).
    pub step_up: bool,
    #[serde(skip)]
    pub(super) glob: Option<Glob>,
}

impl ToolRule {
    /// Whether the rule names one exact tool.
    pub fn is_exact(&self) -> bool {
        self.glob.is_none()
    }

    /// Whether the rule applies to `tool_name`.
    pub fn matches(&self, tool_name: &str) -> bool {
        match &self.glob {
            Some(glob) => glob.matches(tool_name),
            None => self.pattern == tool_name,
        }
    }

    /// Whether `agent` is in the tool's lane.
    pub fn allows_agent(&self, agent: &str) -> bool {
        self.allowed_agents.is_empty() || self.allowed_agents.iter().any(|a| a == agent)
    }

    /// Whether `executor` may run the tool.
    pub fn allows_executor(&self, executor: &str) -> bool {
        self.allowed_executors.is_empty() || self.allowed_executors.iter().any(|e| e == executor)
    }
}

/// One problem in a policy document, located by line and key path.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PolicyError {
    /// 1-based line, when known.
    pub line: Option<usize>,
    /// 1-based column, when known.
    pub column: Option<usize>,
    /// TOML key path, e.g. `tools."crm.*".risk`; empty for the document.
    pub path: String,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for PolicyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.line, self.column) {
            (Some(line), Some(column)) => write!(f, "line {line}, column {column}: ")?,
            (Some(line), None) => write!(f, "line {line}: ")?,
            _ => {}
        }
        if !self.path.is_empty() {
            write!(f, "{}: ", self.path)?;
        }
        f.write_str(&self.message)
    }
}

impl std::error::Error for PolicyError {}

/// What the policy says about one domain (`[domains.<name>]`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DomainRule {
    /// Escalation for the domain's proposals; `None`: the defaults'.
    pub escalation: Option<Escalation>,
}

/// A loaded, validated policy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Policy {
    name: Option<String>,
    description: Option<String>,
    defaults: Defaults,
    blast_radius: BlastRadiusRules,
    agents: BTreeMap<String, AgentRule>,
    domains: BTreeMap<String, DomainRule>,
    /// Exact rules first (by name), then patterns, most specific first.
    tools: Vec<ToolRule>,
    exact: HashMap<String, usize>,
    version: String,
}

impl Default for Policy {
    fn default() -> Self {
        Policy::builtin()
    }
}

impl Policy {
    /// The built-in policy used when an operator has configured none: no tool is listed, so
    /// every tool is Category C; any agent may propose in any domain.
    pub fn builtin() -> Policy {
        Policy::assemble(
            Some("builtin-default".into()),
            Some("No tool is allow-listed: every proposal waits for one human approval.".into()),
            Defaults {
                unknown_agents: UnknownAgents::Allow,
                ..Defaults::default()
            },
            BlastRadiusRules::default(),
            BTreeMap::new(),
            BTreeMap::new(),
            Vec::new(),
        )
    }

    pub(super) fn assemble(
        name: Option<String>,
        description: Option<String>,
        defaults: Defaults,
        blast_radius: BlastRadiusRules,
        agents: BTreeMap<String, AgentRule>,
        domains: BTreeMap<String, DomainRule>,
        mut tools: Vec<ToolRule>,
    ) -> Policy {
        tools.sort_by(|a, b| match (&a.glob, &b.glob) {
            (None, None) => a.pattern.cmp(&b.pattern),
            (None, Some(_)) => std::cmp::Ordering::Less,
            (Some(_), None) => std::cmp::Ordering::Greater,
            (Some(x), Some(y)) => x.specificity(y),
        });
        let exact = tools
            .iter()
            .enumerate()
            .filter(|(_, t)| t.is_exact())
            .map(|(i, t)| (t.pattern.clone(), i))
            .collect();
        let mut policy = Policy {
            name,
            description,
            defaults,
            blast_radius,
            agents,
            domains,
            tools,
            exact,
            version: String::new(),
        };
        policy.version = format!("sha256:{}", sha256_hex(policy.canonical_json().as_bytes()));
        policy
    }

    /// `sha256:<hex>` of [`Policy::canonical_json`].
    pub fn version(&self) -> &str {
        &self.version
    }

    /// The canonical JSON form the version is computed from.
    pub fn canonical_json(&self) -> String {
        canonical_json(&self.canonical_value())
    }

    fn canonical_value(&self) -> Value {
        let agents: Map<String, Value> = self
            .agents
            .iter()
            .map(|(name, a)| {
                (
                    name.clone(),
                    json!({"description": a.description, "domains": a.domains}),
                )
            })
            .collect();
        let tools: Map<String, Value> = self
            .tools
            .iter()
            .map(|t| {
                let mut rule = json!({
                        "description": t.description,
                        "category": t.category.as_str(),
                        "tool_category": t.tool_category.map(ToolCategory::as_str),
                        "risk": t.risk.as_str(),
                        "required_approvals": t.required_approvals,
                        "expiry_secs": t.expiry_secs,
                        "allowed_agents": t.allowed_agents,
                        "allowed_executors": t.allowed_executors,
                        "allow_phi": t.allow_phi,
                        "idempotent": t.idempotent,
                        "execute_within_secs": t.execute_within_secs,
                });
                with_escalation(&mut rule, t.escalation.as_ref());
                with_review(&mut rule, t);
                (t.pattern.clone(), rule)
            })
            .collect();
        let b = &self.blast_radius;
        let mut defaults = json!({
            "required_approvals": self.defaults.required_approvals,
            "expiry_secs": self.defaults.expiry_secs,
            "unknown_agents": self.defaults.unknown_agents.as_str(),
            "execute_within_secs": self.defaults.execute_within_secs,
        });
        with_escalation(&mut defaults, self.defaults.escalation.as_ref());
        if let Some(risk) = self.defaults.step_up_risk {
            defaults["step_up_risk"] = risk.as_str().into();
        }
        let mut canonical = json!({
            "format": POLICY_FORMAT,
            "policy": {"name": self.name, "description": self.description},
            "defaults": defaults,
            "blast_radius": {
                "auto_execute_max": b.auto_execute_max.as_str(),
                "rollback_plan_above": b.rollback_plan_above.map(BlastRadius::as_str),
                "extra_approvals_above": b.extra_approvals_above.map(BlastRadius::as_str),
                "extra_approvals": b.extra_approvals,
                "refuse_above": b.refuse_above.map(BlastRadius::as_str),
            },
            "agents": agents,
            "tools": tools,
        });
        // Added only when present, so policies written before escalation keep their version.
        if !self.domains.is_empty() {
            let domains: Map<String, Value> = self
                .domains
                .iter()
                .map(|(name, d)| {
                    let mut rule = json!({});
                    with_escalation(&mut rule, d.escalation.as_ref());
                    (name.clone(), rule)
                })
                .collect();
            canonical["domains"] = Value::Object(domains);
        }
        canonical
    }

    /// The policy's name, if it has one.
    pub fn name(&self) -> Option<&str> {
        self.name.as_deref()
    }

    /// The policy's description, if it has one.
    pub fn description(&self) -> Option<&str> {
        self.description.as_deref()
    }

    /// Defaults for unlisted tools.
    pub fn defaults(&self) -> &Defaults {
        &self.defaults
    }

    /// Blast radius rules.
    pub fn blast_radius(&self) -> &BlastRadiusRules {
        &self.blast_radius
    }

    /// Registered agents, by name.
    pub fn agents(&self) -> &BTreeMap<String, AgentRule> {
        &self.agents
    }

    /// The registered agent `name`, if any.
    pub fn agent(&self, name: &str) -> Option<&AgentRule> {
        self.agents.get(name)
    }

    /// Every tool rule, in precedence order.
    pub fn tools(&self) -> &[ToolRule] {
        &self.tools
    }

    /// The rule that applies to `tool_name`: the exact rule if there is one, else the most
    /// specific matching pattern; `None` means the tool is unlisted (Category C).
    pub fn tool_rule(&self, tool_name: &str) -> Option<&ToolRule> {
        if let Some(&i) = self.exact.get(tool_name) {
            return self.tools.get(i);
        }
        self.tools
            .iter()
            .skip(self.exact.len())
            .find(|t| t.matches(tool_name))
    }

    /// Whether agent `agent` is refused `tool` in `domain` whatever the call: outside its
    /// domains, unregistered where the policy refuses unknown agents, or outside the tool's
    /// lane (the routing's first refusals, which no argument changes).
    pub fn refuses_outright(&self, agent: &str, tool: &str, domain: &str) -> bool {
        let agent_refused = match self.agent(agent) {
            Some(rule) => !rule.owns(domain),
            None => self.defaults.unknown_agents == UnknownAgents::Refuse,
        };
        agent_refused || self.tool_rule(tool).is_some_and(|r| !r.allows_agent(agent))
    }

    /// Whether `executor` may run `tool_name` (unlisted tools: any executor).
    pub fn executor_may_run(&self, tool_name: &str, executor: &str) -> bool {
        self.tool_rule(tool_name)
            .is_none_or(|rule| rule.allows_executor(executor))
    }

    /// The executors allowed to run `tool_name`; empty means any executor.
    pub fn executors_for(&self, tool_name: &str) -> &[String] {
        self.tool_rule(tool_name)
            .map_or(&[], |rule| rule.allowed_executors.as_slice())
    }

    /// Whether the policy declares `tool_name` idempotent.
    pub fn is_idempotent(&self, tool_name: &str) -> bool {
        self.tool_rule(tool_name).is_some_and(|r| r.idempotent)
    }

    /// How long an approved command for `tool_name` may wait for its first lease, in seconds.
    pub fn execute_within_secs(&self, tool_name: &str) -> u64 {
        self.tool_rule(tool_name)
            .map_or(self.defaults.execute_within_secs, |r| r.execute_within_secs)
    }

    /// The longest standing grant of `tool_name`'s calls, in seconds; `None` when the policy
    /// says `grantable = false` (an unlisted tool may be granted for [`DEFAULT_MAX_GRANT_SECS`]).
    pub fn max_grant_secs(&self, tool_name: &str) -> Option<u64> {
        match self.tool_rule(tool_name) {
            Some(r) => r.grantable.then_some(r.max_grant_secs),
            None => Some(DEFAULT_MAX_GRANT_SECS),
        }
    }

    /// Whether a reviewer may edit `tool_name`'s parameter values before approving: unless
    /// its rule says `editable = false`.
    pub fn editable(&self, tool_name: &str) -> bool {
        self.tool_rule(tool_name).is_none_or(|r| r.editable)
    }

    /// Whether approving a proposal for `tool_name` whose effective risk is `risk` needs a
    /// passkey: its rule says `step_up = true`, or the risk is at or above `step_up_risk`.
    pub fn step_up(&self, tool_name: &str, risk: RiskLevel) -> bool {
        self.tool_rule(tool_name).is_some_and(|r| r.step_up)
            || self
                .defaults
                .step_up_risk
                .is_some_and(|floor| risk >= floor)
    }

    /// Whether an admin may break the glass on `tool_name` (approve alone what needs more
    /// approvers): unless its rule says `break_glass = false`.
    pub fn break_glass_allowed(&self, tool_name: &str) -> bool {
        self.tool_rule(tool_name).is_none_or(|r| r.break_glass)
    }

    /// Who is told when nobody decides a proposal for `tool_name` in `domain`: the tool's
    /// rule, else the domain's, else the defaults'; `None`: nothing escalates.
    pub fn escalation_for(&self, tool_name: &str, domain: &str) -> Option<&Escalation> {
        self.tool_rule(tool_name)
            .and_then(|r| r.escalation.as_ref())
            .or_else(|| self.domains.get(domain).and_then(|d| d.escalation.as_ref()))
            .or(self.defaults.escalation.as_ref())
    }

    /// Every escalation the policy sets: the tools', the domains' and the defaults'.
    fn escalations(&self) -> impl Iterator<Item = &Escalation> {
        let tools = self.tools.iter().filter_map(|t| t.escalation.as_ref());
        let domains = self.domains.values().filter_map(|d| d.escalation.as_ref());
        tools
            .chain(domains)
            .chain(self.defaults.escalation.as_ref())
    }

    /// The shortest `escalate_after` anywhere in the policy, in seconds; `None`: nothing
    /// escalates.
    pub fn shortest_escalation(&self) -> Option<u64> {
        self.escalations().map(|e| e.after_secs).min()
    }

    /// The most tiers any escalation in the policy has; `None`: nothing escalates.
    pub fn most_tiers(&self) -> Option<usize> {
        self.escalations().map(|e| e.to.len()).max()
    }

    /// The approval expiry for `tool_name`, in seconds.
    pub fn expiry_secs(&self, tool_name: &str) -> u64 {
        self.tool_rule(tool_name)
            .map_or(self.defaults.expiry_secs, |r| r.expiry_secs)
    }
}

/// Adds `escalate_after` and `escalate_to` to a canonical rule, when it has them.
fn with_escalation(rule: &mut Value, escalation: Option<&Escalation>) {
    if let Some(e) = escalation {
        rule["escalate_after_secs"] = json!(e.after_secs);
        rule["escalate_to"] = json!(e.to);
    }
}

/// A rule's review keys (grants, break-glass, edits, step-up) in its canonical form, each only
/// when it differs from its default, so a policy that sets none keeps its version.
fn with_review(rule: &mut Value, t: &ToolRule) {
    if !t.grantable {
        rule["grantable"] = json!(false);
    }
    if t.max_grant_secs != DEFAULT_MAX_GRANT_SECS {
        rule["max_grant_secs"] = json!(t.max_grant_secs);
    }
    if !t.break_glass {
        rule["break_glass"] = json!(false);
    }
    if !t.editable {
        rule["editable"] = json!(false);
    }
    if t.step_up {
        rule["step_up"] = json!(true);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_policy_lists_nothing_and_has_a_stable_version() {
        let p = Policy::builtin();
        assert!(p.tools().is_empty());
        assert!(p.tool_rule("anything").is_none());
        assert_eq!(p.defaults().unknown_agents, UnknownAgents::Allow);
        assert!(p.version().starts_with("sha256:"));
        assert_eq!(p.version().len(), "sha256:".len() + 64);
        assert_eq!(p.version(), Policy::default().version());
    }

    #[test]
    fn refused_outright_is_the_agent_and_lane_refusals() {
        let p = Policy::from_toml_str(
            r#"
[defaults]
unknown_agents = "refuse"

[agents.coder]
description = "writes code"
domains = ["files"]

[tools."files.delete"]
category = "C"
allowed_agents = ["ops"]
"#,
        )
        .expect("valid");
        assert!(!p.refuses_outright("coder", "files.write", "files"));
        assert!(
            p.refuses_outright("coder", "files.write", "sales"),
            "not its domain"
        );
        assert!(
            p.refuses_outright("stranger", "files.write", "files"),
            "unknown"
        );
        assert!(
            p.refuses_outright("coder", "files.delete", "files"),
            "not in the lane"
        );
    }

    #[test]
    fn blast_radius_thresholds() {
        let b = BlastRadiusRules {
            auto_execute_max: BlastRadius::Tiny,
            rollback_plan_above: Some(BlastRadius::Small),
            extra_approvals_above: Some(BlastRadius::Medium),
            extra_approvals: 2,
            refuse_above: None,
        };
        assert!(!b.requires_rollback_plan(BlastRadius::Small));
        assert!(b.requires_rollback_plan(BlastRadius::Medium));
        assert_eq!(b.extra_approvals_for(BlastRadius::Medium), 0);
        assert_eq!(b.extra_approvals_for(BlastRadius::Large), 2);
        assert!(!b.exceeds_ceiling(BlastRadius::Large));
        assert!(b.allows_auto_execution(BlastRadius::Tiny));
        assert!(!b.allows_auto_execution(BlastRadius::Small));
    }
}
