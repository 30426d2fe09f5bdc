//! The published contracts: JSON Schemas generated from the Rust types the API parses into,
//! served without authentication so agent authors and their tooling can fetch them.
//!
//! - `GET /api/v1/schemas/tool-proposal.json`: the body of `POST /api/v1/proposals`.
//! - `GET /api/v1/schemas/agent-action-contract-v1.json`: the body of
//!   `POST /api/v1/pre-tool-check`.

use std::sync::LazyLock;

use axum::Json;
use serde_json::Value;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::ApiState;
use crate::domain::contract::aana::Event;
use crate::domain::contract::proposal::ToolProposal;

/// How the contracts' schemas are generated: JSON Schema 2020-12.
pub fn settings() -> schemars::generate::SchemaSettings {
    schemars::generate::SchemaSettings::draft2020_12()
}

/// An optional field is absent or of its type, never `null`, in these contracts (the parsers
/// refuse `null` for a field they know): drops `null` from every subschema of `schema`.
pub fn without_null(schema: &mut Value) {
    match schema {
        Value::Object(object) => {
            if let Some(Value::Array(types)) = object.get_mut("type") {
                types.retain(|t| t != "null");
                if let [only] = types.as_slice() {
                    let only = only.clone();
                    object.insert("type".into(), only);
                }
            }
            for key in ["anyOf", "oneOf"] {
                if let Some(Value::Array(options)) = object.get_mut(key) {
                    options.retain(|o| o.get("type").is_none_or(|t| t != "null"));
                    if let [only] = options.as_slice() {
                        let only = only.clone();
                        object.remove(key);
                        if let Value::Object(fields) = only {
                            object.extend(fields);
                        }
                    }
                }
            }
            object.values_mut().for_each(without_null);
        }
        Value::Array(items) => items.iter_mut().for_each(without_null),
        _ => {}
    }
}

fn generate<T: schemars::JsonSchema>(id: &str, title: &str) -> Value {
    let schema = schemars::SchemaGenerator::new(settings()).into_root_schema_for::<T>();
    let mut schema = serde_json::to_value(schema).unwrap_or_default();
    without_null(&mut schema);
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
pub fn router() -> OpenApiRouter<ApiState> {
    OpenApiRouter::new()
        .routes(routes!(tool_proposal))
        .routes(routes!(agent_action_contract))
}

/// The JSON Schema of a tool proposal (the body of `POST /api/v1/proposals`).
#[utoipa::path(
    get,
    path = "/schemas/tool-proposal.json",
    tag = "contracts",
    responses((status = 200, description = "JSON Schema 2020-12", body = super::openapi::components::JsonSchemaDocument))
)]
async fn tool_proposal() -> Json<Value> {
    Json(TOOL_PROPOSAL.clone())
}

/// The JSON Schema of an AANA Agent Action Contract v1 event (the body of
/// `POST /api/v1/pre-tool-check`).
#[utoipa::path(
    get,
    path = "/schemas/agent-action-contract-v1.json",
    tag = "contracts",
    responses((status = 200, description = "JSON Schema 2020-12", body = super::openapi::components::JsonSchemaDocument))
)]
async fn agent_action_contract() -> Json<Value> {
    Json(AGENT_ACTION_CONTRACT.clone())
}
