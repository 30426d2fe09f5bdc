//! The operator's policy: a declarative TOML document that can be read in one sitting (see
//! `policy.example.toml` for every key, documented), loaded with every error reported at its
//! line, and identified by a content version.
//!
//! ```toml
//! [policy]
//! name = "acme-support"
//!
//! [defaults]                      # for every tool no rule lists
//! required_approvals = 1
//! expiry = "24h"
//! unknown_agents = "refuse"       # or "allow": agents not under [agents] may propose
//!
//! [blast_radius]                  # seed 003 tiers: tiny < small < medium < large
//! auto_execute_max = "tiny"       # Category A auto-executes only up to this tier
//! rollback_plan_above = "small"   # above this tier a rollback plan is required
//! extra_approvals_above = "medium"
//! extra_approvals = 1
//!
//! [agents.sales-agent]            # domain ownership: where an agent may propose
//! domains = ["sales"]
//!
//! [tools."crm.*"]                 # exact name or glob (`*`, `?`)
//! category = "C"                  # seed 004 A / B / C
//! tool_category = "write"         # floor for the declared AANA category
//! risk = "medium"                 # floor for the declared risk
//! required_approvals = 2
//! expiry = "4h"
//! allowed_agents = ["sales-agent"]     # lane: who may propose it (empty = anyone)
//! allowed_executors = ["n8n-crm"]      # who may execute it (empty = any executor)
//! allow_phi = false                    # HIPAA allow-list
//! ```
//!
//! Semantics that hold for every policy:
//!
//! - A tool no rule matches is **Category C**: it always needs a human, never auto-executes.
//! - A policy can only make decisions stricter than the built-in rules: categories and risk
//!   are floors, never ceilings.
//! - When several rules match a tool name, an exact name beats every pattern, and among
//!   patterns the most specific wins ([`Glob::specificity`]); the order rules are written in
//!   never matters.
//! - Category `B` ("conditionally auto-executable", seed 004) is not implemented: it is
//!   accepted for forward compatibility and treated exactly like `C`.
//! - Unknown keys, unknown values and wrong types are errors (a typo in a safety policy must
//!   not silently fall back to a default).
//!
//! [`Policy::version`] is `sha256:<hex>` of the canonical JSON of the *parsed* policy (defaults
//! filled in, durations in seconds, name lists sorted), so it is stable across whitespace,
//! comments, key order, rule order and spelling choices (`"24h"` = `"1d"`, `"A"` = `"a"`), and
//! changes whenever a decision could change.

use std::collections::{BTreeMap, HashMap};
use std::fmt;

use serde::Serialize;
use serde_json::{Map, Value, json};

use super::aana::ToolCategory;
use super::canonical::{canonical_json, sha256_hex};
use super::glob::Glob;
use super::policy_toml::{self, Located, TomlValue, line_col, push_key};
use super::wire::{WireEnum, wire_enum};

/// Format marker included in the canonical form (bumped if its meaning ever changes).
pub const POLICY_FORMAT: &str = "countersign.policy/1";

/// Longest expiry a policy may set.
pub const MAX_EXPIRY_SECS: u64 = 365 * 86_400;

/// Default approval expiry: 24 hours.
pub const DEFAULT_EXPIRY_SECS: u64 = 86_400;

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
    /// Seed 004 risk levels, lowest first. The system may raise a declared level, never lower it.
    pub enum RiskLevel {
        /// Low.
        Low => "low",
        /// Medium.
        Medium => "medium",
        /// High.
        High => "high",
    }
}

wire_enum! {
    /// Seed 003 blast radius tiers, smallest first.
    pub enum BlastRadius {
        /// Single record, read-only or append.
        Tiny => "tiny",
        /// Single record, mutating.
        Small => "small",
        /// Multiple records or a single high-value record.
        Medium => "medium",
        /// Cross-system or irreversible at scale.
        Large => "large",
    }
}

wire_enum! {
    /// Seed 003 authorization modes.
    pub enum AuthorizationMode {
        /// Dispatch without human approval (still subject to every other rule).
        Auto => "auto",
        /// Pause for human-in-the-loop approval.
        Hitl => "hitl",
        /// Not permitted under current policy.
        Blocked => "blocked",
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
}

impl Default for Defaults {
    fn default() -> Self {
        Self {
            required_approvals: 1,
            expiry_secs: DEFAULT_EXPIRY_SECS,
            unknown_agents: UnknownAgents::Refuse,
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
    #[serde(skip)]
    glob: Option<Glob>,
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

/// A loaded, validated policy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Policy {
    name: Option<String>,
    description: Option<String>,
    defaults: Defaults,
    blast_radius: BlastRadiusRules,
    agents: BTreeMap<String, AgentRule>,
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
    /// Loads a policy from TOML, or returns every problem found, each with its line.
    pub fn from_toml_str(src: &str) -> Result<Policy, Vec<PolicyError>> {
        let root = match policy_toml::parse(src) {
            Ok(root) => root,
            Err(e) => {
                let (line, column) = match e.span {
                    Some(span) => {
                        let (l, c) = line_col(src, span.start);
                        (Some(l), Some(c))
                    }
                    None => (None, None),
                };
                return Err(vec![PolicyError {
                    line,
                    column,
                    path: String::new(),
                    message: format!("invalid TOML: {}", e.message),
                }]);
            }
        };
        let mut loader = Loader {
            src,
            errors: Vec::new(),
        };
        let policy = loader.policy(&root);
        if loader.errors.is_empty() {
            policy.ok_or_else(Vec::new)
        } else {
            let mut errors = loader.errors;
            errors.sort_by_key(|e| (e.line.is_none(), e.line, e.column));
            Err(errors)
        }
    }

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
            Vec::new(),
        )
    }

    fn assemble(
        name: Option<String>,
        description: Option<String>,
        defaults: Defaults,
        blast_radius: BlastRadiusRules,
        agents: BTreeMap<String, AgentRule>,
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
                (
                    t.pattern.clone(),
                    json!({
                        "description": t.description,
                        "category": t.category.as_str(),
                        "tool_category": t.tool_category.map(ToolCategory::as_str),
                        "risk": t.risk.as_str(),
                        "required_approvals": t.required_approvals,
                        "expiry_secs": t.expiry_secs,
                        "allowed_agents": t.allowed_agents,
                        "allowed_executors": t.allowed_executors,
                        "allow_phi": t.allow_phi,
                    }),
                )
            })
            .collect();
        let b = &self.blast_radius;
        json!({
            "format": POLICY_FORMAT,
            "policy": {"name": self.name, "description": self.description},
            "defaults": {
                "required_approvals": self.defaults.required_approvals,
                "expiry_secs": self.defaults.expiry_secs,
                "unknown_agents": self.defaults.unknown_agents.as_str(),
            },
            "blast_radius": {
                "auto_execute_max": b.auto_execute_max.as_str(),
                "rollback_plan_above": b.rollback_plan_above.map(BlastRadius::as_str),
                "extra_approvals_above": b.extra_approvals_above.map(BlastRadius::as_str),
                "extra_approvals": b.extra_approvals,
                "refuse_above": b.refuse_above.map(BlastRadius::as_str),
            },
            "agents": agents,
            "tools": tools,
        })
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

    /// The approval expiry for `tool_name`, in seconds.
    pub fn expiry_secs(&self, tool_name: &str) -> u64 {
        self.tool_rule(tool_name)
            .map_or(self.defaults.expiry_secs, |r| r.expiry_secs)
    }
}

/// Parses a duration such as `"90s"`, `"15m"`, `"24h"`, `"7d"` or `"2w"` into seconds
/// (greater than zero, at most [`MAX_EXPIRY_SECS`]).
pub fn parse_duration(text: &str) -> Result<u64, String> {
    const HELP: &str = "must be a whole number followed by s, m, h, d or w, e.g. \"24h\"";
    let digits = text.bytes().take_while(u8::is_ascii_digit).count();
    let (number, unit) = text.split_at(digits);
    let multiplier = match unit {
        "s" => 1,
        "m" => 60,
        "h" => 3_600,
        "d" => 86_400,
        "w" => 604_800,
        _ => return Err(HELP.into()),
    };
    let n: u64 = number.parse().map_err(|_| HELP.to_owned())?;
    let secs = n.saturating_mul(multiplier);
    if secs == 0 {
        Err("must be longer than zero".into())
    } else if secs > MAX_EXPIRY_SECS {
        Err(format!(
            "must be at most {}",
            format_duration(MAX_EXPIRY_SECS)
        ))
    } else {
        Ok(secs)
    }
}

/// Formats seconds in the largest unit that divides them: `86400` is `"1d"`, `5400` is `"90m"`.
pub fn format_duration(secs: u64) -> String {
    for (unit, size) in [("w", 604_800), ("d", 86_400), ("h", 3_600), ("m", 60)] {
        if secs >= size && secs.is_multiple_of(size) {
            return format!("{}{unit}", secs / size);
        }
    }
    format!("{secs}s")
}

const SECTIONS: &[&str] = &["policy", "defaults", "blast_radius", "agents", "tools"];
const POLICY_KEYS: &[&str] = &["name", "description"];
const DEFAULTS_KEYS: &[&str] = &["required_approvals", "expiry", "unknown_agents"];
const BLAST_KEYS: &[&str] = &[
    "auto_execute_max",
    "rollback_plan_above",
    "extra_approvals_above",
    "extra_approvals",
    "refuse_above",
];
const AGENT_KEYS: &[&str] = &["description", "domains"];
const TOOL_KEYS: &[&str] = &[
    "description",
    "category",
    "tool_category",
    "risk",
    "required_approvals",
    "expiry",
    "allowed_agents",
    "allowed_executors",
    "allow_phi",
];

/// One known key of a table: its name, value and path.
struct Field<'a> {
    key: &'a str,
    value: &'a Located,
    path: String,
}

/// Walks the located tree, collecting every error.
struct Loader<'s> {
    src: &'s str,
    errors: Vec<PolicyError>,
}

impl Loader<'_> {
    fn error(&mut self, at: &Located, path: &str, message: impl Into<String>) {
        let (line, column) = match at.span() {
            Some(span) => {
                let (l, c) = line_col(self.src, span.start);
                (Some(l), Some(c))
            }
            None => (None, None),
        };
        self.errors.push(PolicyError {
            line,
            column,
            path: path.to_owned(),
            message: message.into(),
        });
    }

    fn table<'a>(&mut self, v: &'a Located, path: &str) -> Option<&'a [(String, Located)]> {
        match &v.value {
            TomlValue::Table(entries) => Some(entries),
            _ => {
                self.error(v, path, format!("must be a table, got {}", v.type_name()));
                None
            }
        }
    }

    /// The known keys of a table; unknown keys are reported.
    fn fields<'a>(
        &mut self,
        entries: &'a [(String, Located)],
        path: &str,
        known: &[&str],
    ) -> Vec<Field<'a>> {
        let mut out = Vec::with_capacity(entries.len());
        for (key, value) in entries {
            let mut p = path.to_owned();
            push_key(&mut p, key);
            if known.contains(&key.as_str()) {
                out.push(Field {
                    key,
                    value,
                    path: p,
                });
            } else {
                self.error(
                    value,
                    &p,
                    format!("unknown key `{key}`; expected one of: {}", known.join(", ")),
                );
            }
        }
        out
    }

    fn string<'a>(&mut self, f: &Field<'a>) -> Option<&'a str> {
        match &f.value.value {
            TomlValue::String(s) if s.trim().is_empty() => {
                self.error(f.value, &f.path, "must not be empty");
                None
            }
            TomlValue::String(s) => Some(s),
            _ => {
                let msg = format!("must be a string, got {}", f.value.type_name());
                self.error(f.value, &f.path, msg);
                None
            }
        }
    }

    fn boolean(&mut self, f: &Field<'_>) -> Option<bool> {
        match f.value.value {
            TomlValue::Boolean(b) => Some(b),
            _ => {
                let msg = format!("must be true or false, got {}", f.value.type_name());
                self.error(f.value, &f.path, msg);
                None
            }
        }
    }

    fn count(&mut self, f: &Field<'_>) -> Option<u8> {
        match f.value.value {
            TomlValue::Integer(n) => match u8::try_from(n) {
                Ok(n) if n >= 1 => Some(n),
                _ => {
                    self.error(
                        f.value,
                        &f.path,
                        format!("must be between 1 and 255, got {n}"),
                    );
                    None
                }
            },
            _ => {
                let msg = format!("must be an integer, got {}", f.value.type_name());
                self.error(f.value, &f.path, msg);
                None
            }
        }
    }

    fn duration(&mut self, f: &Field<'_>) -> Option<u64> {
        let text = self.string(f)?;
        match parse_duration(text) {
            Ok(secs) => Some(secs),
            Err(msg) => {
                self.error(f.value, &f.path, msg);
                None
            }
        }
    }

    fn enumeration<T: WireEnum>(&mut self, f: &Field<'_>) -> Option<T> {
        let text = self.string(f)?;
        let parsed = T::from_wire(text);
        if parsed.is_none() {
            self.error(
                f.value,
                &f.path,
                format!("unknown value `{text}`; {}", T::expected()),
            );
        }
        parsed
    }

    fn category(&mut self, f: &Field<'_>) -> Option<ActionCategory> {
        let text = self.string(f)?;
        let parsed = ActionCategory::parse(&text.to_ascii_lowercase());
        if parsed.is_none() {
            self.error(
                f.value,
                &f.path,
                format!("unknown category `{text}`; must be A, B or C"),
            );
        }
        parsed
    }

    fn tier_above(&mut self, f: &Field<'_>) -> Option<BlastRadius> {
        let tier = self.enumeration::<BlastRadius>(f)?;
        if tier == BlastRadius::Large {
            self.error(
                f.value,
                &f.path,
                "no tier is above `large`; remove the key instead",
            );
            return None;
        }
        Some(tier)
    }

    /// An array of distinct non-empty strings, returned sorted.
    fn names(&mut self, f: &Field<'_>) -> Option<Vec<String>> {
        let TomlValue::Array(items) = &f.value.value else {
            let msg = format!("must be an array of strings, got {}", f.value.type_name());
            self.error(f.value, &f.path, msg);
            return None;
        };
        let mut out: Vec<String> = Vec::with_capacity(items.len());
        let mut ok = true;
        for (i, item) in items.iter().enumerate() {
            let path = format!("{}[{i}]", f.path);
            match &item.value {
                TomlValue::String(s) if s.trim().is_empty() => {
                    ok = false;
                    self.error(item, &path, "must not be empty");
                }
                TomlValue::String(s) if out.contains(s) => {
                    ok = false;
                    self.error(item, &path, format!("`{s}` is listed twice"));
                }
                TomlValue::String(s) => out.push(s.clone()),
                _ => {
                    ok = false;
                    let msg = format!("must be a string, got {}", item.type_name());
                    self.error(item, &path, msg);
                }
            }
        }
        out.sort();
        ok.then_some(out)
    }

    fn policy(&mut self, root: &Located) -> Option<Policy> {
        let entries = self.table(root, "")?;
        let sections = self.fields(entries, "", SECTIONS);
        let section = |name: &str| sections.iter().find(|f| f.key == name);

        let (name, description) = section("policy").map(|f| self.meta(f)).unwrap_or_default();
        let defaults = section("defaults")
            .map(|f| self.defaults(f))
            .unwrap_or_default();
        let blast_radius = section("blast_radius")
            .map(|f| self.blast_radius(f))
            .unwrap_or_default();
        let agents = section("agents")
            .map(|f| self.agents(f))
            .unwrap_or_default();
        let tools = section("tools")
            .map(|f| self.tools(f, &defaults))
            .unwrap_or_default();
        Some(Policy::assemble(
            name,
            description,
            defaults,
            blast_radius,
            agents,
            tools,
        ))
    }

    fn meta(&mut self, section: &Field<'_>) -> (Option<String>, Option<String>) {
        let Some(entries) = self.table(section.value, &section.path) else {
            return (None, None);
        };
        let (mut name, mut description) = (None, None);
        for f in self.fields(entries, &section.path, POLICY_KEYS) {
            match f.key {
                "name" => name = self.string(&f).map(str::to_owned),
                _ => description = self.string(&f).map(str::to_owned),
            }
        }
        (name, description)
    }

    fn defaults(&mut self, section: &Field<'_>) -> Defaults {
        let mut d = Defaults::default();
        let Some(entries) = self.table(section.value, &section.path) else {
            return d;
        };
        for f in self.fields(entries, &section.path, DEFAULTS_KEYS) {
            match f.key {
                "required_approvals" => {
                    d.required_approvals = self.count(&f).unwrap_or(d.required_approvals);
                }
                "expiry" => d.expiry_secs = self.duration(&f).unwrap_or(d.expiry_secs),
                _ => d.unknown_agents = self.enumeration(&f).unwrap_or(d.unknown_agents),
            }
        }
        d
    }

    fn blast_radius(&mut self, section: &Field<'_>) -> BlastRadiusRules {
        let mut b = BlastRadiusRules::default();
        let Some(entries) = self.table(section.value, &section.path) else {
            return b;
        };
        let fields = self.fields(entries, &section.path, BLAST_KEYS);
        let mut extra_approvals_field = None;
        for f in &fields {
            match f.key {
                "auto_execute_max" => {
                    b.auto_execute_max = self.enumeration(f).unwrap_or(b.auto_execute_max);
                }
                "rollback_plan_above" => b.rollback_plan_above = self.tier_above(f),
                "extra_approvals_above" => b.extra_approvals_above = self.tier_above(f),
                "extra_approvals" => {
                    b.extra_approvals = self.count(f).unwrap_or(b.extra_approvals);
                    extra_approvals_field = Some(f);
                }
                _ => b.refuse_above = self.tier_above(f),
            }
        }
        if let Some(f) = extra_approvals_field
            && !fields.iter().any(|x| x.key == "extra_approvals_above")
        {
            self.error(
                f.value,
                &f.path,
                "has no effect without `extra_approvals_above`; set both or neither",
            );
        }
        if let Some(ceiling) = b.refuse_above
            && b.auto_execute_max > ceiling
        {
            let at = fields
                .iter()
                .find(|x| x.key == "auto_execute_max")
                .map_or(section.value, |x| x.value);
            self.error(
                    at,
                    &format!("{}.auto_execute_max", section.path),
                    format!(
                        "`{}` is above `refuse_above = \"{ceiling}\"`: nothing there could auto-execute",
                        b.auto_execute_max
                    ),
                );
        }
        b
    }

    fn agents(&mut self, section: &Field<'_>) -> BTreeMap<String, AgentRule> {
        let mut agents = BTreeMap::new();
        let Some(entries) = self.table(section.value, &section.path) else {
            return agents;
        };
        for (name, value) in entries {
            let mut path = section.path.clone();
            push_key(&mut path, name);
            if name.trim().is_empty() || name.trim() != name {
                self.error(
                    value,
                    &path,
                    "an agent name must be non-empty, without surrounding spaces",
                );
                continue;
            }
            let Some(fields) = self.table(value, &path) else {
                continue;
            };
            let mut rule = AgentRule {
                description: None,
                domains: Vec::new(),
            };
            let mut has_domains = false;
            for f in self.fields(fields, &path, AGENT_KEYS) {
                match f.key {
                    "description" => rule.description = self.string(&f).map(str::to_owned),
                    _ => {
                        has_domains = true;
                        match self.names(&f) {
                            Some(d) if d.is_empty() => self.error(
                                f.value,
                                &f.path,
                                "must list at least one domain (remove the agent to fall back \
                                 to `defaults.unknown_agents`)",
                            ),
                            Some(d) => rule.domains = d,
                            None => {}
                        }
                    }
                }
            }
            if !has_domains {
                self.error(
                    value,
                    &path,
                    "`domains` is required: the domains this agent owns",
                );
            }
            agents.insert(name.clone(), rule);
        }
        agents
    }

    fn tools(&mut self, section: &Field<'_>, defaults: &Defaults) -> Vec<ToolRule> {
        let mut tools = Vec::new();
        let Some(entries) = self.table(section.value, &section.path) else {
            return tools;
        };
        for (pattern, value) in entries {
            let mut id = section.path.clone();
            push_key(&mut id, pattern);
            let glob = match Glob::new(pattern) {
                Ok(glob) => glob,
                Err(msg) => {
                    self.error(value, &id, msg);
                    continue;
                }
            };
            let Some(fields) = self.table(value, &id) else {
                continue;
            };
            let mut rule = ToolRule {
                pattern: pattern.clone(),
                id: id.clone(),
                description: None,
                category: ActionCategory::C,
                tool_category: None,
                risk: RiskLevel::Low,
                required_approvals: defaults.required_approvals,
                expiry_secs: defaults.expiry_secs,
                allowed_agents: Vec::new(),
                allowed_executors: Vec::new(),
                allow_phi: false,
                glob: Glob::is_wildcard(pattern).then_some(glob),
            };
            let fields = self.fields(fields, &id, TOOL_KEYS);
            for f in &fields {
                match f.key {
                    "description" => rule.description = self.string(f).map(str::to_owned),
                    "category" => rule.category = self.category(f).unwrap_or(rule.category),
                    "tool_category" => rule.tool_category = self.enumeration(f),
                    "risk" => rule.risk = self.enumeration(f).unwrap_or(rule.risk),
                    "required_approvals" => {
                        rule.required_approvals = self.count(f).unwrap_or(rule.required_approvals);
                    }
                    "expiry" => rule.expiry_secs = self.duration(f).unwrap_or(rule.expiry_secs),
                    "allowed_agents" => rule.allowed_agents = self.names(f).unwrap_or_default(),
                    "allowed_executors" => {
                        rule.allowed_executors = self.names(f).unwrap_or_default();
                    }
                    _ => rule.allow_phi = self.boolean(f).unwrap_or(false),
                }
            }
            if rule.category == ActionCategory::A {
                let at = |key: &str| fields.iter().find(|f| f.key == key);
                if rule.risk != RiskLevel::Low {
                    let f = at("risk");
                    self.error(
                        f.map_or(value, |f| f.value),
                        &format!("{id}.risk"),
                        "Category A (auto-executable) requires `risk = \"low\"`",
                    );
                }
                if rule.tool_category == Some(ToolCategory::Unknown) {
                    let f = at("tool_category");
                    self.error(
                        f.map_or(value, |f| f.value),
                        &format!("{id}.tool_category"),
                        "Category A cannot be `unknown`: unclassified tools never execute",
                    );
                }
            }
            tools.push(rule);
        }
        tools
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("90s"), Ok(90));
        assert_eq!(parse_duration("15m"), Ok(900));
        assert_eq!(parse_duration("24h"), Ok(86_400));
        assert_eq!(parse_duration("7d"), Ok(604_800));
        assert_eq!(parse_duration("2w"), Ok(1_209_600));
        for bad in [
            "",
            "h",
            "24",
            "24 h",
            "1.5h",
            "-1h",
            "24H",
            "0h",
            "366d",
            "99999999999999999999w",
        ] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
        assert_eq!(format_duration(86_400), "1d");
        assert_eq!(format_duration(5_400), "90m");
        assert_eq!(format_duration(45), "45s");
        assert_eq!(format_duration(1_209_600), "2w");
    }

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
