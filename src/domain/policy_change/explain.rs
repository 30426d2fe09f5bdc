//! What a policy decides of one input, as `policy explain` prints it and the policy page's
//! playground shows it: an AANA event (it has `tool_name`) goes through the gate, anything else
//! is read as a tool proposal and routed.

use serde::Serialize;
use serde_json::Value;

use crate::domain::contract::aana::Event;
use crate::domain::contract::proposal::ToolProposal;
use crate::domain::contract::wire::FieldError;
use crate::domain::policy::model::Policy;
use crate::domain::routing::gate;
use crate::domain::routing::proposal::route_proposal;

/// One decision, explained.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Explained {
    /// The whole decision, as the API answers it.
    pub decision: Value,
    /// Its route.
    pub route: String,
    /// The rule that produced it.
    pub rule: String,
    /// Its blockers' codes.
    pub blockers: Vec<String>,
    /// The version that decided.
    pub policy_version: String,
}

/// Routes an AANA event (it has `tool_name`) or a tool proposal under `policy`; every contract
/// error when it is neither.
pub fn explain(value: &Value, policy: &Policy) -> Result<Explained, Vec<FieldError>> {
    if value.get("tool_name").is_some() {
        let event = Event::parse(value)?;
        let d = gate::check(&event, policy);
        Ok(Explained {
            decision: serde_json::to_value(&d).unwrap_or_default(),
            route: d.route.to_string(),
            rule: d.rule.clone(),
            blockers: d.hard_blockers.iter().map(|b| b.code.to_string()).collect(),
            policy_version: d.policy_version.clone(),
        })
    } else {
        let proposal = ToolProposal::parse(value)?;
        let d = route_proposal(&proposal.facts(), policy);
        Ok(Explained {
            decision: serde_json::to_value(&d).unwrap_or_default(),
            route: d.route.to_string(),
            rule: d.rule.clone(),
            blockers: d.blockers.iter().map(|b| b.code.to_string()).collect(),
            policy_version: d.policy_version.clone(),
        })
    }
}
