//! Two policies the policy's life tests move between, and the inputs whose routes differ
//! under them.

use serde_json::{Value, json};

use crate::common;

/// In force first: `docs.search` is sales-agent's alone; `search_docs` (a pre-tool-check) has
/// no rule.
pub const BEFORE: &str = r#"
[policy]
name = "before"

[defaults]
unknown_agents = "allow"

[tools."docs.search"]
category = "A"
tool_category = "public_read"
risk = "low"
allowed_agents = ["sales-agent"]

[tools."crm.*"]
category = "C"
tool_category = "write"
risk = "medium"
"#;

/// The candidate: `docs.search` becomes intruder's alone (sales-agent's accept → refuse,
/// intruder's refuse → accept), and `search_docs` needs a human (accept → ask).
pub const AFTER: &str = r#"
[policy]
name = "after"

[defaults]
unknown_agents = "allow"

[tools."docs.search"]
category = "A"
tool_category = "public_read"
risk = "low"
allowed_agents = ["intruder"]

[tools."search_docs"]
category = "C"

[tools."crm.*"]
category = "C"
tool_category = "write"
risk = "medium"
"#;

/// A Category A `docs.search` proposal from `agent`.
pub fn search(agent: &str) -> Value {
    let mut body = common::proposal_body(agent);
    body["tool"]["name"] = json!("docs.search");
    body["risk_level"] = json!("low");
    body["approval_required"] = json!(false);
    body["compliance_context"] = json!({"gdpr": false, "hipaa": false});
    body["parameters"] = json!({"query": "refund policy"});
    body.as_object_mut().expect("object").remove("target_refs");
    body["blast_radius"] = json!("tiny");
    body
}

/// A public read of `search_docs` (no rule under BEFORE; Category C under AFTER).
pub fn search_docs_check() -> Value {
    json!({"tool_name": "search_docs", "tool_category": "public_read",
        "authorization_state": "none", "evidence_refs": [], "risk_domain": "research",
        "proposed_arguments": {"query": "contract"}, "recommended_route": "accept"})
}
