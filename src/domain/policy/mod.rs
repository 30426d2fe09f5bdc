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
//! escalate_after = "30m"               # nobody decided: tell the next tier
//! escalate_to = ["team-lead", "admin"] # (also under [defaults] and [domains.<name>])
//! ```
//!
//! Semantics that hold for every policy:
//!
//! - A tool no rule matches is **Category C**: it always needs a human, never auto-executes.
//! - A policy can only make decisions stricter than the built-in rules: categories and risk
//!   are floors, never ceilings.
//! - When several rules match a tool name, an exact name beats every pattern, and among
//!   patterns the most specific wins ([`Glob::specificity`](glob::Glob::specificity)); the
//!   order rules are written in never matters.
//! - Category `B` ("conditionally auto-executable", seed 004) is not implemented: it is
//!   accepted for forward compatibility and treated exactly like `C`.
//! - Unknown keys, unknown values and wrong types are errors (a typo in a safety policy must
//!   not silently fall back to a default).
//!
//! [`Policy::version`](model::Policy::version) is `sha256:<hex>` of the canonical JSON of the
//! *parsed* policy (defaults filled in, durations in seconds, name lists sorted), so it is
//! stable across whitespace, comments, key order, rule order and spelling choices (`"24h"` =
//! `"1d"`, `"A"` = `"a"`), and changes whenever a decision could change.
//!
//! The wing imports only the contract wing ([`crate::domain::contract`]): [`model`] is the
//! policy itself, [`loader`] reads it from TOML (with positions from `toml`), [`glob`]
//! matches tool-name patterns, [`escalation`] says who is told when nobody decides.

pub mod escalation;
pub mod glob;
pub mod loader;
pub mod model;
pub(crate) mod toml;
