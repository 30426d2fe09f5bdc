//! Loading a policy: TOML text (read with positions by `super::toml`) into a [`Policy`],
//! with every problem reported at its line and key path, never only the first. Durations
//! (`"24h"`, `"7d"`) are parsed here too.

use std::collections::BTreeMap;

use super::escalation::Escalation;
use super::glob::Glob;
use super::model::{
    ActionCategory, AgentRule, BlastRadiusRules, DEFAULT_MAX_GRANT_SECS, Defaults, DomainRule,
    MAX_EXPIRY_SECS, Policy, PolicyError, ToolRule,
};
use super::toml::{self, Located, TomlValue, line_col, push_key};
use crate::domain::contract::proposal::is_slug;
use crate::domain::contract::vocab::{BlastRadius, RiskLevel, ToolCategory};
use crate::domain::contract::wire::WireEnum;

impl Policy {
    /// Loads a policy from TOML, or returns every problem found, each with its line.
    pub fn from_toml_str(src: &str) -> Result<Policy, Vec<PolicyError>> {
        let root = match toml::parse(src) {
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

const SECTIONS: &[&str] = &[
    "policy",
    "defaults",
    "blast_radius",
    "agents",
    "domains",
    "tools",
];
const POLICY_KEYS: &[&str] = &["name", "description"];
const DEFAULTS_KEYS: &[&str] = &[
    "required_approvals",
    "expiry",
    "unknown_agents",
    "execute_within",
    "escalate_after",
    "escalate_to",
    "step_up_risk",
];
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
    "idempotent",
    "execute_within",
    "escalate_after",
    "escalate_to",
    "grantable",
    "max_grant",
    "break_glass",
    "editable",
    "step_up",
];
const DOMAIN_KEYS: &[&str] = &["escalate_after", "escalate_to"];

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
        let domains = section("domains")
            .map(|f| self.domains(f))
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
            domains,
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
        let fields = self.fields(entries, &section.path, DEFAULTS_KEYS);
        d.escalation = self.escalation(&fields, section);
        for f in fields {
            match f.key {
                "escalate_after" | "escalate_to" => {}
                "required_approvals" => {
                    d.required_approvals = self.count(&f).unwrap_or(d.required_approvals);
                }
                "expiry" => d.expiry_secs = self.duration(&f).unwrap_or(d.expiry_secs),
                "step_up_risk" => d.step_up_risk = self.enumeration(&f),
                "execute_within" => {
                    d.execute_within_secs = self.duration(&f).unwrap_or(d.execute_within_secs);
                }
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

    fn domains(&mut self, section: &Field<'_>) -> BTreeMap<String, DomainRule> {
        let mut domains = BTreeMap::new();
        let Some(entries) = self.table(section.value, &section.path) else {
            return domains;
        };
        for (name, value) in entries {
            let mut path = section.path.clone();
            push_key(&mut path, name);
            if !is_slug(name, 64) {
                self.error(value, &path, format!("`{name}` is not a domain name"));
                continue;
            }
            let Some(fields) = self.table(value, &path) else {
                continue;
            };
            let fields = self.fields(fields, &path, DOMAIN_KEYS);
            let at = Field {
                key: name,
                value,
                path: path.clone(),
            };
            let escalation = self.escalation(&fields, &at);
            domains.insert(name.clone(), DomainRule { escalation });
        }
        domains
    }

    /// `escalate_after` and `escalate_to` among `fields` of the table at `at`: both or neither.
    fn escalation(&mut self, fields: &[Field<'_>], at: &Field<'_>) -> Option<Escalation> {
        let after = fields.iter().find(|f| f.key == "escalate_after");
        let to = fields.iter().find(|f| f.key == "escalate_to");
        let (after, to) = match (after, to) {
            (None, None) => return None,
            (Some(after), Some(to)) => (after, to),
            (Some(_), None) | (None, Some(_)) => {
                let msg = "`escalate_after` and `escalate_to` go together: when, and to whom";
                self.error(at.value, &at.path, msg);
                return None;
            }
        };
        let after_secs = self.duration(after);
        let to = self.tiers(to);
        Some(Escalation {
            after_secs: after_secs?,
            to: to?,
        })
    }

    /// `escalate_to`: tiers in order, each a username or a deciding role, none twice.
    fn tiers(&mut self, f: &Field<'_>) -> Option<Vec<String>> {
        let TomlValue::Array(items) = &f.value.value else {
            let msg = format!("must be an array of names, got {}", f.value.type_name());
            self.error(f.value, &f.path, msg);
            return None;
        };
        if items.is_empty() {
            self.error(f.value, &f.path, "must name at least one tier");
            return None;
        }
        let mut tiers: Vec<String> = Vec::with_capacity(items.len());
        for (i, item) in items.iter().enumerate() {
            let path = format!("{}[{i}]", f.path);
            let problem = match &item.value {
                TomlValue::String(s) if s == "compliance" => Some(
                    "compliance officers decide nothing: name a reviewer, `reviewer` or `admin`"
                        .into(),
                ),
                TomlValue::String(s) if tiers.contains(s) => Some(format!("`{s}` is listed twice")),
                TomlValue::String(s) if !is_slug(s, 64) => Some(format!(
                    "`{s}` is not a username or role: lowercase letters, digits, `-`, `_`, `.`"
                )),
                TomlValue::String(_) => None,
                _ => Some(format!("must be a name, got {}", item.type_name())),
            };
            match problem {
                Some(msg) => self.error(item, &path, msg),
                None => {
                    if let TomlValue::String(s) = &item.value {
                        tiers.push(s.clone());
                    }
                }
            }
        }
        (tiers.len() == items.len()).then_some(tiers)
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
                idempotent: false,
                execute_within_secs: defaults.execute_within_secs,
                escalation: None,
                grantable: true,
                max_grant_secs: DEFAULT_MAX_GRANT_SECS,
                break_glass: true,
                editable: true,
                step_up: false,
                glob: Glob::is_wildcard(pattern).then_some(glob),
            };
            let fields = self.fields(fields, &id, TOOL_KEYS);
            let at = Field {
                key: pattern,
                value,
                path: id.clone(),
            };
            rule.escalation = self.escalation(&fields, &at);
            for f in &fields {
                self.tool_key(&mut rule, f);
            }
            self.category_a(&rule, &fields, value);
            tools.push(rule);
        }
        tools
    }

    /// Sets `rule`'s key `f` (escalation is read beforehand, from every key).
    fn tool_key(&mut self, rule: &mut ToolRule, f: &Field<'_>) {
        match f.key {
            "escalate_after" | "escalate_to" => {}
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
            "idempotent" => rule.idempotent = self.boolean(f).unwrap_or(false),
            "grantable" => rule.grantable = self.boolean(f).unwrap_or(false),
            "break_glass" => rule.break_glass = self.boolean(f).unwrap_or(false),
            "editable" => rule.editable = self.boolean(f).unwrap_or(false),
            "step_up" => rule.step_up = self.boolean(f).unwrap_or(false),
            "max_grant" => {
                rule.max_grant_secs = self.duration(f).unwrap_or(rule.max_grant_secs);
            }
            "execute_within" => {
                rule.execute_within_secs = self.duration(f).unwrap_or(rule.execute_within_secs);
            }
            _ => rule.allow_phi = self.boolean(f).unwrap_or(false),
        }
    }

    /// A Category A rule must be low risk and of a known tool category.
    fn category_a(&mut self, rule: &ToolRule, fields: &[Field<'_>], value: &Located) {
        if rule.category != ActionCategory::A {
            return;
        }
        let id = &rule.id;
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
}
