//! The decision envelope on the wire, in AANA's words: what a [`Decision`] serialises to.
//!
//! AANA's own clients read this answer (its Python SDK's `with_architecture_decision` and
//! `should_execute_tool`, its TypeScript client, its middleware), so every field AANA defines
//! carries AANA's name, type and values, and Countersign's own detail sits beside it:
//!
//! - `gate_decision` is `pass` or `fail`;
//! - `hard_blockers` is a list of blocker codes (strings), and `aix.hard_blockers` the same
//!   list; the messages and fields are in `blocker_details`;
//! - `aix` is AANA's fixed route-to-score table (`aix_version` `0.1`), with `decision` the final
//!   route;
//! - `architecture_decision.route` is the final route, as the seed's execution rule reads it;
//! - `authorization_report` carries `declared_state`, `evidence_supported_state`,
//!   `effective_state`, `support` and `downgraded`, beside Countersign's `declared`,
//!   `effective` and `required`;
//! - `evidence_integrity` carries `checked_ref_count`, `issues` (each with AANA's `level`,
//!   `code`, `path`, `message`), `error_codes`, `warning_codes`, `has_errors`, `has_warnings`
//!   and `contradictory_evidence_source_ids`, beside Countersign's counts.
//!
//! The envelope never carries `shadow_mode` or `execution_mode`: AANA's SDK would let a blocked
//! call through in shadow mode.

use serde::Serialize;
use serde::ser::{SerializeMap, Serializer};

use super::gate::Decision;
use super::verdict::Blocker;
use crate::domain::contract::vocab::Route;

/// The contract the envelope answers, as AANA names it.
pub const CONTRACT_VERSION: &str = "aana.agent_tool_precheck.v1";

/// AANA's `aix` block: a fixed score per route.
#[derive(Debug, Serialize)]
struct Aix<'a> {
    aix_version: &'static str,
    score: f64,
    components: Components,
    decision: Route,
    hard_blockers: &'a [&'static str],
}

#[derive(Debug, Serialize)]
#[expect(non_snake_case, reason = "AANA's component names")]
struct Components {
    P: f64,
    F: f64,
    C: f64,
}

impl<'a> Aix<'a> {
    fn new(route: Route, hard_blockers: &'a [&'static str]) -> Self {
        let score = match route {
            Route::Accept => 0.95,
            Route::Ask => 0.72,
            Route::Defer => 0.45,
            Route::Refuse => 0.15,
        };
        Aix {
            aix_version: "0.1",
            score,
            components: Components {
                P: score,
                F: if route == Route::Accept { 1.0 } else { 0.75 },
                C: score,
            },
            decision: route,
            hard_blockers,
        }
    }
}

/// The seed's `architecture_decision`: the route an SDK/API envelope executes on.
#[derive(Debug, Serialize)]
struct Architecture<'a> {
    route: Route,
    gate_decision: &'static str,
    hard_blockers: &'a [&'static str],
}

/// The codes of `blockers`, as AANA lists them.
pub fn blocker_codes(blockers: &[Blocker]) -> Vec<&'static str> {
    blockers.iter().map(|b| b.code.as_str()).collect()
}

impl Serialize for Decision {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let codes = blocker_codes(&self.hard_blockers);
        let gate = self.gate_decision.as_str();
        let mut m = s.serialize_map(None)?;
        m.serialize_entry("contract_version", CONTRACT_VERSION)?;
        if let Some(event) = &self.audit_event {
            // The event's own fields, echoed as AANA does (absent for a schema-invalid event).
            m.serialize_entry("tool_name", &event.tool_name)?;
            m.serialize_entry("tool_category", &event.tool_category)?;
            m.serialize_entry("authorization_state", &event.authorization_state)?;
            m.serialize_entry("risk_domain", &event.risk_domain)?;
            m.serialize_entry("runtime_recommended_route", &event.recommended_route)?;
            m.serialize_entry("evidence_ref_count", &event.evidence_refs.len())?;
        }
        m.serialize_entry("route", &self.route)?;
        m.serialize_entry("gate_decision", gate)?;
        m.serialize_entry("recommended_action", &self.recommended_action)?;
        m.serialize_entry("hard_blockers", &codes)?;
        m.serialize_entry("blocker_details", &self.hard_blockers)?;
        m.serialize_entry("aix", &Aix::new(self.route, &codes))?;
        let architecture = Architecture {
            route: self.route,
            gate_decision: gate,
            hard_blockers: &codes,
        };
        m.serialize_entry("architecture_decision", &architecture)?;
        m.serialize_entry("reasons", &self.reasons)?;
        if let Some(report) = &self.authorization_report {
            m.serialize_entry("authorization_report", report)?;
        }
        if let Some(integrity) = &self.evidence_integrity {
            m.serialize_entry("evidence_integrity", integrity)?;
        }
        if let Some(classification) = &self.classification {
            m.serialize_entry("classification", classification)?;
        }
        m.serialize_entry("policy_version", &self.policy_version)?;
        m.serialize_entry("rule", &self.rule)?;
        if let Some(event) = &self.audit_event {
            m.serialize_entry("audit_event", event)?;
        }
        m.end()
    }
}
