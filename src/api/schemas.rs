//! The published contracts: JSON Schemas generated from the Rust types the API parses into,
//! served without authentication so agent authors and their tooling can fetch them.
//!
//! - `GET /api/v1/schemas/tool-proposal.json`: the body of `POST /api/v1/proposals`.
//! - `GET /api/v1/schemas/agent-action-contract-v1.json`: the body of
//!   `POST /api/v1/pre-tool-check`.

use std::sync::LazyLock;

use axum::routing::get;
use axum::{Json, Router};
use serde_json::Value;

use super::ApiState;
use crate::domain::contract::aana::Event;
use crate::domain::contract::proposal::ToolProposal;

fn generate<T: schemars::JsonSchema>(id: &str, title: &str) -> Value {
    let mut schema = serde_json::to_value(schemars::schema_for!(T)).unwrap_or_default();
    if let Value::Object(map) = &mut schema {
        map.insert("$id".into(), Value::String(id.into()));
        map.insert("title".into(), Value::String(title.into()));
    }
    schema
}

/// The tool proposal schema.
pub static TOOL_PROPOSAL: LazyLock<Value> = LazyLock::new(|| {
    generate::<ToolProposal>(
        "urn:countersign:schema:tool-proposal:1",
        "Countersign tool proposal",
    )
});

/// The AANA Agent Action Contract v1 event schema.
pub static AGENT_ACTION_CONTRACT: LazyLock<Value> = LazyLock::new(|| {
    generate::<Event>(
        "urn:countersign:schema:agent-action-contract:1",
        "AANA Agent Action Contract v1 event, as Countersign accepts it",
    )
});

/// The schema routes.
pub fn router() -> Router<ApiState> {
    Router::new()
        .route(
            "/schemas/tool-proposal.json",
            get(|| async { Json(TOOL_PROPOSAL.clone()) }),
        )
        .route(
            "/schemas/agent-action-contract-v1.json",
            get(|| async { Json(AGENT_ACTION_CONTRACT.clone()) }),
        )
}
