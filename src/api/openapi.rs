//! The OpenAPI 3.1 document of every agent and executor endpoint, served at
//! `GET /api/v1/openapi.json`, and a human-readable page of it at `GET /api/v1/docs` (rendered
//! here from the same document; no asset comes from anywhere else).
//!
//! Every API route is registered with utoipa-axum's `routes!`, which adds the handler's
//! `#[utoipa::path]` operation to the document in the same call that adds the route: a route
//! cannot exist without its operation, nor an operation without its route
//! (`tests/api/openapi.rs` also checks both ways over HTTP).
//!
//! Request bodies are described by the same JSON Schemas the API publishes under
//! `/api/v1/schemas/` (generated from the Rust types it parses into); responses by the schemas
//! in [`responses`]: the fields clients rely on, with further fields allowed.

use std::sync::OnceLock;

use axum::Json;
use axum::response::Html;
use serde_json::{Map, Value, json};
use utoipa::openapi::OpenApi;
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::{Modify, OpenApi as _};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::ApiState;

use crate::domain::contract::aana::Event;
use crate::domain::contract::proposal::ToolProposal;
use crate::domain::webhook::StatusChanged;

pub mod components;
pub mod responses;

pub use components::*;

/// The document's fixed parts: title, version, security schemes.
#[derive(utoipa::OpenApi)]
#[openapi(
    info(
        title = "Countersign API",
        description = "AI proposes, Countersign decides, infrastructure executes. Agents ask \
                       for pre-tool-check decisions and submit tool proposals; executors lease \
                       approved commands and report on them. Errors are JSON: \
                       `{\"error\": {\"code\", \"message\", \"details\"?}}`; validation errors \
                       (`422`) name each field and the rule it broke."
    ),
    modifiers(&Security),
    tags(
        (name = "agents", description = "Pre-tool-checks, proposals, waiting for decisions"),
        (name = "aana", description = "AANA's bridge paths: an AANA SDK switches by its base URL"),
        (name = "executors", description = "Leasing approved commands and reporting on them"),
        (name = "contracts", description = "The published JSON Schemas"),
    )
)]
pub struct Fixed;

struct Security;

impl Modify for Security {
    fn modify(&self, openapi: &mut OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        for (name, what) in [
            (
                "agent_token",
                "An agent token (`countersign token create --agent NAME`)",
            ),
            (
                "executor_token",
                "An executor token (`countersign token create --executor NAME`)",
            ),
        ] {
            let scheme = HttpBuilder::new()
                .scheme(HttpAuthScheme::Bearer)
                .description(Some(what))
                .build();
            components.add_security_scheme(name, SecurityScheme::Http(scheme));
        }
    }
}

/// The base document, before the routes add their operations.
pub fn base() -> OpenApi {
    Fixed::openapi()
}

/// A JSON Schema generated from `T` for the document: its definitions move to
/// `#/components/schemas/`, where its references point.
fn component_schema<T: schemars::JsonSchema>(definitions: &mut Map<String, Value>) -> Value {
    let settings = super::schemas::settings().with(|s| {
        s.definitions_path = "/components/schemas".into();
        s.meta_schema = None;
    });
    let mut generator = schemars::SchemaGenerator::new(settings);
    let mut root = serde_json::to_value(generator.root_schema_for::<T>()).unwrap_or_default();
    super::schemas::without_null(&mut root);
    if let Some(Value::Object(components)) =
        root.as_object_mut().and_then(|r| r.remove("components"))
        && let Some(Value::Object(schemas)) = components.get("schemas").cloned()
    {
        definitions.extend(schemas);
    }
    root
}

/// What an agent token's callback URL receives (OpenAPI 3.1 `webhooks`; docs/api.md, Webhooks).
fn webhooks() -> Value {
    json!({
        "proposalStatusChanged": {
            "post": {
                "summary": "A status change of a proposal submitted with the token",
                "description": "POSTed to the agent token's webhook URL at each status change, signed with the token's webhook secret. Any 2xx is delivered; anything else is tried again with backoff.",
                "parameters": [
                    {"name": "Countersign-Signature", "in": "header", "required": true,
                     "description": "`t=<unix seconds>,v1=<hex HMAC-SHA256 over \"<t>.<body>\">`, keyed by the webhook secret",
                     "schema": {"type": "string"}},
                    {"name": "Countersign-Delivery", "in": "header", "required": true,
                     "description": "The delivery's id, the same on every retry",
                     "schema": {"type": "string", "format": "uuid"}}
                ],
                "requestBody": {"required": true, "content": {"application/json": {
                    "schema": {"$ref": "#/components/schemas/ProposalStatusChanged"}}}},
                "responses": {"2XX": {"description": "Delivered"}}
            }
        }
    })
}

/// The finished document: `built` (from the routes) with the components filled in.
pub fn document(built: OpenApi) -> Value {
    let mut doc = serde_json::to_value(built).unwrap_or_default();
    let mut schemas = Map::new();
    let proposal = component_schema::<ToolProposal>(&mut schemas);
    let event = component_schema::<Event>(&mut schemas);
    schemas.insert("ToolProposal".into(), proposal);
    schemas.insert("AgentActionContractV1".into(), event);
    let delivery = component_schema::<StatusChanged>(&mut schemas);
    schemas.insert("ProposalStatusChanged".into(), delivery);
    if let Value::Object(d) = &mut doc {
        d.insert("webhooks".into(), webhooks());
    }
    for (name, schema) in responses::all() {
        schemas.insert(name.into(), schema);
    }
    if let Some(components) = doc.get_mut("components").and_then(Value::as_object_mut) {
        let entry = components
            .entry("schemas")
            .or_insert_with(|| Value::Object(Map::new()));
        if let Value::Object(existing) = entry {
            existing.extend(schemas);
        }
    }
    // Links let a stateful client (schemathesis) follow a new proposal to its reads.
    for status in ["200", "201"] {
        let pointer = format!("/paths/~1api~1v1~1proposals/post/responses/{status}");
        if let Some(Value::Object(response)) = doc.pointer_mut(&pointer) {
            let id = json!({"id": "$response.body#/proposal/id"});
            response.insert(
                "links".into(),
                json!({"GetProposal": {"operationId": "poll", "parameters": id}}),
            );
        }
    }
    // Every token may be rate limited (src/api/limits.rs), and every address throttled for
    // unknown tokens (src/service/tokens.rs).
    if let Some(Value::Object(paths)) = doc.get_mut("paths") {
        for op in paths
            .values_mut()
            .filter_map(Value::as_object_mut)
            .flat_map(|p| p.values_mut())
        {
            let secured = op["security"].as_array().is_some_and(|s| !s.is_empty());
            if let (true, Some(Value::Object(responses))) = (secured, op.get_mut("responses")) {
                responses.insert(
                    "429".into(),
                    json!({
                        "description": "This token made more requests than its rate limit allows (`rate_limited`), or, waiting for a change, already holds as many waiting requests as it may (`too_many_waits`), or this client's address presented too many tokens that match no active token (`too_many_unknown_tokens`); retry after `Retry-After` seconds",
                        "headers": {"Retry-After": {"schema": {"type": "integer"}}},
                        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}
                    }),
                );
            }
        }
    }
    // A lease may be asked with no body at all (every field has a default).
    if let Some(body) = doc.pointer_mut("/paths/~1api~1v1~1executor~1lease/post/requestBody") {
        body["required"] = json!(false);
    }
    if let Value::Object(d) = &mut doc {
        d.insert("openapi".into(), json!("3.1.0"));
        d.insert(
            "info".into(),
            json!({
                "title": "Countersign API",
                "version": env!("CARGO_PKG_VERSION"),
                "description": d.get("info").and_then(|i| i.get("description")).cloned().unwrap_or(Value::Null),
                "license": {"name": "MIT", "identifier": "MIT"},
            }),
        );
    }
    doc
}

/// The served document (the same for every router built in this process).
static DOCUMENT: OnceLock<Value> = OnceLock::new();

/// Publishes the document of `built` for [`openapi_json`] and [`docs`].
pub fn publish(built: OpenApi) {
    DOCUMENT.get_or_init(|| document(built));
}

fn published() -> &'static Value {
    static EMPTY: Value = Value::Null;
    DOCUMENT.get().unwrap_or(&EMPTY)
}

/// The document's own routes.
pub fn router() -> OpenApiRouter<ApiState> {
    OpenApiRouter::new()
        .routes(routes!(openapi_json))
        .routes(routes!(docs))
}

/// This document.
#[utoipa::path(
    get,
    path = "/openapi.json",
    tag = "contracts",
    responses((status = 200, description = "OpenAPI 3.1", body = JsonSchemaDocument))
)]
async fn openapi_json() -> Json<Value> {
    Json(published().clone())
}

/// This document as a page.
#[utoipa::path(
    get,
    path = "/docs",
    tag = "contracts",
    responses((status = 200, description = "HTML", content_type = "text/html", body = String))
)]
async fn docs() -> Html<String> {
    Html(page(published()))
}

/// The page's head: the app's own stylesheet, nothing from elsewhere.
const PAGE_HEAD: &str = "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">\
     <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
     <title>Countersign API</title><link rel=\"stylesheet\" href=\"/pkg/countersign.css\">\
     </head><body><main class=\"api-docs\">";

/// The document as a page: each operation with its method, path, summary, description,
/// security, parameters, body and answers.
pub fn page(doc: &Value) -> String {
    let mut html = String::from(PAGE_HEAD);
    let title = doc["info"]["title"].as_str().unwrap_or("API");
    html.push_str(&format!(
        "<h1>{}</h1><p>{}</p><p>The machine-readable document: \
         <a href=\"/api/v1/openapi.json\"><code>/api/v1/openapi.json</code></a> (OpenAPI {}).</p>",
        escape(title),
        escape(doc["info"]["description"].as_str().unwrap_or("")),
        escape(doc["openapi"].as_str().unwrap_or("")),
    ));
    let Some(paths) = doc["paths"].as_object() else {
        html.push_str("</main></body></html>");
        return html;
    };
    for (path, item) in paths {
        for (method, op) in item.as_object().into_iter().flatten() {
            html.push_str(&operation(method, path, op));
        }
    }
    html.push_str("</main></body></html>");
    html
}

fn operation(method: &str, path: &str, op: &Value) -> String {
    let mut out = format!(
        "<section class=\"api-op\"><h2><code>{} {}</code></h2>",
        escape(&method.to_uppercase()),
        escape(path)
    );
    if let Some(s) = op["summary"].as_str() {
        out.push_str(&format!("<p><strong>{}</strong></p>", escape(s)));
    }
    if let Some(d) = op["description"].as_str() {
        out.push_str(&format!("<p>{}</p>", escape(d)));
    }
    let security: Vec<String> = op["security"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|s| s.as_object().and_then(|o| o.keys().next().cloned()))
        .collect();
    out.push_str(&format!(
        "<p>Authentication: {}</p>",
        if security.is_empty() {
            "none".to_owned()
        } else {
            escape(&security.join(", "))
        }
    ));
    if let Some(params) = op["parameters"].as_array() {
        out.push_str("<table><caption>Parameters</caption><tr><th scope=\"col\">Name</th><th scope=\"col\">In</th><th scope=\"col\">Description</th></tr>");
        for p in params {
            out.push_str(&format!(
                "<tr><td><code>{}</code></td><td>{}</td><td>{}</td></tr>",
                escape(p["name"].as_str().unwrap_or("")),
                escape(p["in"].as_str().unwrap_or("")),
                escape(p["description"].as_str().unwrap_or(""))
            ));
        }
        out.push_str("</table>");
    }
    if let Some(schema) =
        op["requestBody"]["content"]["application/json"]["schema"]["$ref"].as_str()
    {
        out.push_str(&format!(
            "<p>Body: <code>{}</code></p>",
            escape(schema.rsplit('/').next().unwrap_or(schema))
        ));
    }
    out.push_str("<table><caption>Answers</caption><tr><th scope=\"col\">Status</th><th scope=\"col\">Meaning</th></tr>");
    for (status, r) in op["responses"].as_object().into_iter().flatten() {
        out.push_str(&format!(
            "<tr><td>{}</td><td>{}</td></tr>",
            escape(status),
            escape(r["description"].as_str().unwrap_or(""))
        ));
    }
    out.push_str("</table></section>");
    out
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}
