//! AANA's published conformance data, and what AANA's own Python SDK does with an answer.
//!
//! AANA's SDK is on no package registry, so CI cannot install it. This module follows its code
//! (`aana/sdk.py` in github.com/mindbomber/Alignment-Aware-Neural-Architecture--AANA-, read at
//! commit 536a18e5) line for line where it reads a pre-tool-check answer:
//!
//! - `_hard_blockers` (L408) and `_missing_evidence_markers` (L441-455) pass the blockers
//!   through `dict.fromkeys`, and the middleware (`middleware.py` L37) does the same: a blocker
//!   that is not a string raises `TypeError`;
//! - `_contradictory_evidence_markers` (L458) does the same with
//!   `evidence_integrity.contradictory_evidence_source_ids`, and `public_audit_or_claim_ready`
//!   puts `error_codes` and `warning_codes` in a `set()`;
//! - `architecture_decision` (L530) recomputes the route as `recommended_action or
//!   aix.decision or "defer"`, and `with_architecture_decision` (L580) overwrites whatever
//!   `architecture_decision` the server sent;
//! - `execution_policy` (L639-697) allows execution only when `gate_decision == "pass"`,
//!   `recommended_action == "accept"`, the architecture route allows execution, no hard blocker
//!   (top level, `aix`, architecture) and no `validation_errors`; an answer saying
//!   `shadow_mode: true` or `execution_mode: "shadow"` lets everything through.

use std::fs;
use std::path::PathBuf;

use serde_json::Value;

/// The copy of `shared/conformance/aana/` (see `tests/fixtures/README.md`).
pub const CONFORMANCE_DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/aana");

/// A conformance file, parsed.
pub fn load(file: &str) -> Value {
    let path = PathBuf::from(CONFORMANCE_DIR).join(file);
    let text = fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The event behind a row of `observed_gate_results.json` (`cases:NAME`, `sdk:NAME` or
/// `file:PATH`).
pub fn observed_event(name: &str) -> Value {
    if let Some(case) = name.strip_prefix("cases:") {
        let doc = load("agent_action_contract_cases.json");
        let found = doc["cases"]
            .as_array()
            .expect("cases")
            .iter()
            .find(|c| c["name"] == case);
        return found.expect("case exists")["event"].clone();
    }
    if let Some(example) = name.strip_prefix("sdk:") {
        let doc = load("agent_tool_precheck_examples.json");
        let found = doc["examples"]
            .as_array()
            .expect("examples")
            .iter()
            .find(|e| e["name"] == example);
        return found.expect("example exists")["event"].clone();
    }
    let file = name.rsplit('/').next().expect("file name");
    load(file)
}

/// A list the SDK hashes (`dict.fromkeys`, `set()`): absent, or strings only.
fn hashable_list(answer: &Value, pointer: &str) -> Result<Vec<String>, String> {
    match answer.pointer(pointer) {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(items)) => items
            .iter()
            .map(|i| {
                i.as_str()
                    .map(str::to_owned)
                    .ok_or_else(|| format!("TypeError: unhashable {i} in {pointer}"))
            })
            .collect(),
        Some(other) => Err(format!("{pointer} is not a list: {other}")),
    }
}

/// `route_allows_execution`: only `accept`.
fn route_allows_execution(route: &str) -> bool {
    route == "accept"
}

/// What AANA's SDK decides for `answer` (`should_execute_tool(with_architecture_decision(
/// answer))`), or the exception it raises.
pub fn sdk_allows_execution(answer: &Value) -> Result<bool, String> {
    if answer["shadow_mode"] == Value::Bool(true) || answer["execution_mode"] == "shadow" {
        return Err("the answer asks for shadow mode, which executes blocked calls".into());
    }
    // `_hard_blockers`: the top-level list, or `aix.hard_blockers` when that is empty.
    let top = hashable_list(answer, "/hard_blockers")?;
    let aix = hashable_list(answer, "/aix/hard_blockers")?;
    hashable_list(
        answer,
        "/evidence_integrity/contradictory_evidence_source_ids",
    )?;
    hashable_list(answer, "/evidence_integrity/error_codes")?;
    hashable_list(answer, "/evidence_integrity/warning_codes")?;
    let architecture_blockers = if top.is_empty() {
        aix.clone()
    } else {
        top.clone()
    };
    let recommended = answer["recommended_action"].as_str();
    let route = recommended
        .or_else(|| answer["aix"]["decision"].as_str())
        .unwrap_or("defer");
    let validation_errors = match &answer["validation_errors"] {
        Value::Null => 0,
        Value::Array(a) => a.len(),
        _ => 1,
    };
    Ok(answer["gate_decision"] == "pass"
        && recommended == Some("accept")
        && route_allows_execution(route)
        && top.is_empty()
        && aix.is_empty()
        && architecture_blockers.is_empty()
        && validation_errors == 0)
}
