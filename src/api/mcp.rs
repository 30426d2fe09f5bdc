//! An MCP server at `/mcp` (streamable HTTP, the official Rust SDK `rmcp`), so an agent
//! framework that speaks MCP reaches Countersign without an HTTP client of its own. Every
//! request needs the agent's bearer token, checked as on `/api/v1`; the tools act as that agent.
//!
//! Tools (their input schemas are the JSON Schemas `/api/v1/schemas/` publishes):
//! - `countersign_pre_tool_check`: seed 000's event in, the decision envelope out (AANA's
//!   fields; a schema-invalid event is a refusal with `validation_errors`, as on `/aana`);
//! - `propose_action`: a seed 004 tool proposal in, `{"proposal": …, "replayed": bool}` out;
//! - `get_proposal`: `{"proposal_id"}` in, `{"proposal": …}` out;
//! - `wait_for_decision`: `{"proposal_id", "timeout_seconds"?}` (0..60, default 30) in; answers
//!   once the proposal is past `pending` or the time is up, as `?wait=` does.
//!
//! A refused call (bad input, another agent's proposal, a conflict) is a tool result with
//! `isError: true` and the API's error body as its structured content.
//!
//! The server is stateless (no MCP sessions): any instance on the same database answers any
//! request. Host-header checks against DNS rebinding are off: no request acts without a bearer
//! token, which a rebinding page cannot attach.

use crate::domain::principal::Principal;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::{Request, State};
use axum::http::request::Parts;
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::{Router, extract::FromRequestParts};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, Implementation, JsonObject,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json::{Value, json};
use uuid::Uuid;

use super::ApiState;
use super::error::ApiError;
use super::extract::Agent;
use super::limits::TokenLimits;
use super::schemas::{AGENT_ACTION_CONTRACT, TOOL_PROPOSAL};
use super::views::AgentProposal;
use crate::service::{MAX_WAIT, Services, Submitted};

/// How long `wait_for_decision` waits when not told.
const DEFAULT_WAIT: Duration = Duration::from_secs(30);

/// The agent a request authenticated as, and its token's id, for the tools (here and at
/// `/mcp/gateway`).
#[derive(Clone)]
pub(super) struct Caller(pub(super) Principal, pub(super) uuid::Uuid);

/// The MCP routes: the rmcp service behind the bearer-token check.
pub fn router(state: ApiState) -> Router {
    let services = state.services.clone();
    let limits = state.limits.clone();
    let config = StreamableHttpServerConfig::default()
        .disable_allowed_hosts()
        .with_legacy_session_mode(false)
        .with_json_response(true);
    let service = StreamableHttpService::new(
        move || {
            Ok(Mcp {
                services: services.clone(),
                limits: limits.clone(),
            })
        },
        Arc::new(NeverSessionManager::default()),
        config,
    );
    Router::new()
        .nest_service("/mcp", service)
        .layer(middleware::from_fn_with_state(state, authenticate))
}

/// Lets a request through only with a valid agent token, and tells the tools whose it is.
pub(super) async fn authenticate(
    State(state): State<ApiState>,
    request: Request,
    next: Next,
) -> Response {
    let (mut parts, body) = request.into_parts();
    match Agent::from_request_parts(&mut parts, &state).await {
        Ok(Agent(name, token)) => {
            parts.extensions.insert(Caller(name, token));
            next.run(Request::from_parts(parts, body)).await
        }
        Err(e) => e.into_response(),
    }
}

/// The MCP server: Countersign's use cases as tools.
#[derive(Clone)]
struct Mcp {
    services: Services,
    limits: Arc<TokenLimits>,
}

fn schema(value: &Value) -> Arc<JsonObject> {
    Arc::new(value.as_object().cloned().unwrap_or_default())
}

fn id_schema(with_timeout: bool) -> Arc<JsonObject> {
    let mut properties = json!({
        "proposal_id": {"type": "string", "format": "uuid", "description": "The proposal's id"}
    });
    if with_timeout {
        properties["timeout_seconds"] = json!({
            "type": "integer", "minimum": 0, "maximum": MAX_WAIT.as_secs(),
            "description": "How long to wait for a decision (default 30)"
        });
    }
    schema(&json!({
        "type": "object",
        "required": ["proposal_id"],
        "properties": properties,
        "additionalProperties": false
    }))
}

/// The tools, in the order they are listed.
fn tools() -> Vec<Tool> {
    vec![
        Tool::new(
            "countersign_pre_tool_check",
            "Seed 000's pre-tool-check: may this tool call run now? Execute only when \
             gate_decision is pass, recommended_action is accept and hard_blockers is empty.",
            schema(&AGENT_ACTION_CONTRACT),
        ),
        Tool::new(
            "propose_action",
            "Submit a consequential action as a tool proposal (seed 004) for a human to approve; \
             an executor runs it once approved. The same idempotency_key and body return the \
             original proposal.",
            schema(&TOOL_PROPOSAL),
        ),
        Tool::new(
            "get_proposal",
            "This agent's proposal: its status, route, blockers, review and execution.",
            id_schema(false),
        ),
        Tool::new(
            "wait_for_decision",
            "Wait until this agent's proposal is past pending (approved, rejected, ...) or the \
             timeout ends, then return it.",
            id_schema(true),
        ),
    ]
}

fn refused(error: ApiError) -> CallToolResult {
    CallToolResult::structured_error(error.body())
}

fn proposal_id(args: &JsonObject) -> Result<Uuid, ApiError> {
    args.get("proposal_id")
        .and_then(Value::as_str)
        .and_then(|s| Uuid::parse_str(s).ok())
        .ok_or_else(|| ApiError::field("proposal_id", "is required: a proposal's UUID"))
}

fn timeout(args: &JsonObject) -> Result<Duration, ApiError> {
    match args.get("timeout_seconds") {
        None => Ok(DEFAULT_WAIT),
        Some(v) => v
            .as_u64()
            .filter(|s| *s <= MAX_WAIT.as_secs())
            .map(Duration::from_secs)
            .ok_or_else(|| {
                ApiError::field(
                    "timeout_seconds",
                    format!("must be whole seconds from 0 to {}", MAX_WAIT.as_secs()),
                )
            }),
    }
}

impl Mcp {
    async fn propose(&self, caller: &Caller, body: Value) -> Result<Value, ApiError> {
        let submitted = (self.services)
            .submit_with_token(&caller.0, Some(caller.1), &body)
            .await?;
        let (record, replayed) = match submitted {
            Submitted::Created(r) => (r, false),
            Submitted::Replayed(r) => (r, true),
        };
        let (_, command) = self.services.agent_proposal(&caller.0, record.id).await?;
        Ok(json!({ "proposal": AgentProposal::new(record, command), "replayed": replayed }))
    }

    async fn proposal(
        &self,
        caller: &Caller,
        args: &JsonObject,
        wait: bool,
    ) -> Result<Value, ApiError> {
        let id = proposal_id(args)?;
        let wait = if wait { timeout(args)? } else { Duration::ZERO };
        let _waiting = match wait.is_zero() {
            true => None,
            false => Some(self.limits.waiting_place(caller.1)?),
        };
        let (record, command) = (self.services).await_proposal(&caller.0, id, wait).await?;
        Ok(json!({ "proposal": AgentProposal::new(record, command) }))
    }

    async fn call(&self, caller: &Caller, name: &str, args: JsonObject) -> Result<Value, ApiError> {
        let agent = &caller.0;
        match name {
            "countersign_pre_tool_check" => {
                super::aana::aana_check(&self.services, agent, &Value::Object(args)).await
            }
            "propose_action" => self.propose(caller, Value::Object(args)).await,
            "get_proposal" => self.proposal(caller, &args, false).await,
            "wait_for_decision" => self.proposal(caller, &args, true).await,
            _ => Err(ApiError::NotFound),
        }
    }
}

impl ServerHandler for Mcp {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new(
                "countersign",
                env!("CARGO_PKG_VERSION"),
            ))
            .with_instructions(
                "Countersign is the approval gate for consequential tools: check a tool call \
                 with countersign_pre_tool_check; when it is not accepted, submit it with \
                 propose_action and wait_for_decision. Never run a consequential tool yourself.",
            )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(tools()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let caller = context
            .extensions
            .get::<Parts>()
            .and_then(|p| p.extensions.get::<Caller>())
            .cloned()
            .ok_or_else(|| ErrorData::invalid_request("no agent token", None))?;
        if !tools().iter().any(|t| t.name == request.name) {
            return Err(ErrorData::invalid_params(
                format!("no tool named `{}`", request.name),
                None,
            ));
        }
        let args = request.arguments.unwrap_or_default();
        let result = match self.call(&caller, &request.name, args).await {
            Ok(value) => CallToolResult::structured(value),
            Err(e) => refused(e),
        };
        Ok(result.into())
    }
}
