//! The answers' schemas in the OpenAPI document: the fields agents and executors rely on, with
//! their types and closed value sets; answers may carry further fields (`additionalProperties`
//! is open), which clients must ignore.

use serde_json::{Value, json};

use crate::domain::WireEnum;
use crate::domain::command::scope::MAX_SCOPE_PATTERNS;
use crate::domain::command::{
    CommandStatus, MAX_LEASE_SECONDS, MAX_LEASE_WAIT_SECONDS, MIN_LEASE_SECONDS,
};
use crate::domain::contract::vocab::{AuthorizationState, Route};
use crate::domain::lifecycle::ProposalStatus;

/// A tool pattern: no whitespace, control characters or reserved glob syntax.
const GLOB: &str = r"^[^\s\x00-\x1f\x7f-\x9f\[\]{}\\!]+$";

fn values<T: WireEnum>() -> Value {
    json!(T::ALL.iter().map(|v| v.wire()).collect::<Vec<_>>())
}

fn time() -> Value {
    json!({"type": "string", "format": "date-time"})
}

fn nullable(schema: Value) -> Value {
    json!({"anyOf": [schema, {"type": "null"}]})
}

/// Every named answer schema.
pub fn all() -> Vec<(&'static str, Value)> {
    vec![
        ("Error", error()),
        ("ProposalAnswer", proposal()),
        ("DecisionEnvelope", decision()),
        ("ValidationAnswer", validation()),
        ("LeaseAnswer", lease()),
        ("CommandAnswer", command_answer()),
        ("CompleteAnswer", complete_answer()),
        ("CompleteReport", complete_report()),
        ("FailReport", fail_report()),
        ("HeartbeatAnswer", heartbeat_answer()),
        ("LeaseRequest", lease_request()),
        ("Heartbeat", heartbeat()),
        ("PublicKey", public_key()),
        ("JsonSchemaDocument", json!({"type": "object"})),
    ]
}

fn error() -> Value {
    json!({
        "type": "object",
        "required": ["error"],
        "properties": {"error": {
            "type": "object",
            "required": ["code", "message"],
            "properties": {
                "code": {"type": "string", "description": "Machine-readable, stable."},
                "message": {"type": "string"},
                "details": {"type": "array", "items": {
                    "type": "object",
                    "required": ["field", "message"],
                    "properties": {
                        "field": {"type": "string", "description": "JSON path of the field; empty for the document"},
                        "message": {"type": "string", "description": "The rule it broke"}
                    }
                }}
            }
        }}
    })
}

fn proposal() -> Value {
    json!({
        "type": "object",
        "required": ["proposal"],
        "properties": {"proposal": {
            "type": "object",
            "required": ["id", "status", "authorization_state", "route", "blockers", "created_at", "request_hash_sha256"],
            "properties": {
                "id": {"type": "string", "format": "uuid"},
                "status": {"enum": values::<ProposalStatus>()},
                "authorization_state": {"enum": values::<AuthorizationState>()},
                "route": {"enum": values::<Route>()},
                "blockers": {"type": "array", "items": {"type": "object", "required": ["code", "message"]}},
                "idempotency_key": {"type": "string"},
                "request_hash_sha256": {"type": "string", "pattern": "^[0-9a-f]{64}$"},
                "created_at": time(),
                "updated_at": time(),
                "expires_at": nullable(time()),
                "review": nullable(json!({"type": "object", "required": ["decision", "decided_by", "decided_at"]})),
                "execution": nullable(json!({
                    "type": "object",
                    "required": ["command_id", "status", "attempts"],
                    "properties": {
                        "command_id": {"type": "string", "format": "uuid"},
                        "status": {"enum": values::<CommandStatus>()},
                        "attempts": {"type": "integer"}
                    }
                }))
            }
        }}
    })
}

fn decision() -> Value {
    json!({
        "type": "object",
        "required": ["route", "gate_decision", "recommended_action", "hard_blockers", "reasons", "policy_version"],
        "properties": {
            "check_id": {"type": "string", "format": "uuid"},
            "contract_version": {"const": "aana.agent_tool_precheck.v1"},
            "route": {"enum": values::<Route>()},
            "gate_decision": {"enum": ["pass", "fail"]},
            "recommended_action": {"enum": values::<Route>()},
            "hard_blockers": {"type": "array", "items": {"type": "string"}},
            "blocker_details": {"type": "array", "items": {"type": "object", "required": ["code", "message"]}},
            "aix": {"type": "object", "required": ["decision", "hard_blockers"]},
            "architecture_decision": {"type": "object", "required": ["route"]},
            "reasons": {"type": "array", "items": {"type": "string"}},
            "authorization_report": {"type": "object", "required": ["declared_state", "evidence_supported_state", "effective_state", "support", "downgraded"]},
            "evidence_integrity": {"type": "object", "required": ["checked_ref_count", "issues", "error_codes", "warning_codes", "has_errors", "has_warnings"]},
            "validation_errors": {"type": "array", "items": {"type": "object", "required": ["path", "message"]}},
            "policy_version": {"type": "string"}
        }
    })
}

fn validation() -> Value {
    json!({
        "type": "object",
        "required": ["valid", "errors", "schema_version"],
        "properties": {
            "valid": {"type": "boolean"},
            "errors": {"type": "array", "items": {"type": "object", "required": ["path", "message"]}},
            "schema_version": {"const": "aana.agent_tool_precheck.v1"}
        }
    })
}

fn command() -> Value {
    json!({
        "type": "object",
        "required": ["id", "proposal_id", "status"],
        "properties": {
            "id": {"type": "string", "format": "uuid"},
            "proposal_id": {"type": "string", "format": "uuid"},
            "status": {"enum": values::<CommandStatus>()}
        }
    })
}

fn lease() -> Value {
    json!({
        "type": "object",
        "required": ["command", "lease_token", "lease_expires_at", "grant"],
        "properties": {
            "command": command(),
            "lease_token": {"type": "string", "minLength": 1},
            "lease_expires_at": time(),
            "grant": {"type": "object", "required": ["command_id", "signature"]}
        }
    })
}

fn command_answer() -> Value {
    json!({"type": "object", "required": ["command"], "properties": {"command": command()}})
}

fn complete_answer() -> Value {
    json!({
        "type": "object",
        "required": ["command"],
        "properties": {
            "command": command(),
            "next": {
                "anyOf": [lease(), {"type": "null"}],
                "description": "Present when the report asked for `next`: the executor's next command, leased in the report's transaction, or null when none was ready"
            }
        }
    })
}

fn complete_report() -> Value {
    let mut next = lease_request();
    next["properties"].as_object_mut().map(|p| p.remove("wait"));
    next["description"] = json!(
        "Lease the executor's next command in the same transaction, if this report is taken (a lease body without `wait`)"
    );
    json!({
        "type": "object",
        "required": ["lease_token", "result"],
        "properties": {
            "lease_token": {"type": "string", "minLength": 1},
            "result": {"not": {"type": "null"}, "description": "What the run produced (at most 64 KiB of JSON)"},
            "next": next
        },
        "additionalProperties": false
    })
}

fn fail_report() -> Value {
    json!({
        "type": "object",
        "required": ["lease_token", "error"],
        "properties": {
            "lease_token": {"type": "string", "minLength": 1},
            "error": {"not": {"type": "null"}, "description": "What went wrong (at most 64 KiB of JSON)"},
            "side_effect": {"enum": ["none", "possible", "done"], "description": "Whether the run may have touched the world; default `possible`"}
        },
        "additionalProperties": false
    })
}

fn heartbeat_answer() -> Value {
    json!({
        "type": "object",
        "required": ["command_id", "lease_expires_at"],
        "properties": {"command_id": {"type": "string", "format": "uuid"}, "lease_expires_at": nullable(time())}
    })
}

fn lease_request() -> Value {
    json!({
        "type": "object",
        "properties": {
            "tools": {
                "type": "array", "minItems": 1, "maxItems": MAX_SCOPE_PATTERNS,
                "items": {"type": "string", "pattern": GLOB},
                "description": "Tool names or globs (`*`, `?`) to lease"
            },
            "wait": {"type": "integer", "minimum": 0, "maximum": MAX_LEASE_WAIT_SECONDS, "description": "Seconds to wait for a command"},
            "lease_seconds": {"type": "integer", "minimum": MIN_LEASE_SECONDS, "maximum": MAX_LEASE_SECONDS}
        },
        "additionalProperties": false
    })
}

fn heartbeat() -> Value {
    json!({
        "type": "object",
        "required": ["lease_token"],
        "properties": {
            "lease_token": {"type": "string", "minLength": 1},
            "lease_seconds": {"type": "integer", "minimum": MIN_LEASE_SECONDS, "maximum": MAX_LEASE_SECONDS}
        },
        "additionalProperties": false
    })
}

fn public_key() -> Value {
    json!({
        "type": "object",
        "required": ["algorithm", "public_key", "encoding"],
        "properties": {"algorithm": {"const": "ed25519"}, "public_key": {"type": "string"}, "encoding": {"const": "hex"}}
    })
}
