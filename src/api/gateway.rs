//! `POST /mcp/gateway`: the MCP gateway's agent side (streamable HTTP, the agent's bearer
//! token, as `/mcp`). An agent pointed here instead of at its tool servers sees their tools,
//! named `{upstream}__{tool}`, and every call it makes becomes a proposal routed by the policy:
//!
//! - `accept`: the built-in executor makes the call at once; the request answers its result;
//! - `refuse`: `isError: true`, the blockers in words and as `structuredContent`;
//! - `ask` / `defer`: held. The request stays open (progress notifications carry the status
//!   when the client sent a progress token) until the proposal is decided and run, then
//!   answers the upstream's result; a rejection answers `isError: true` with the reviewer's
//!   reason. At the upstream's `hold` it answers `isError: true` with `structuredContent`
//!   `{"status": "pending", "proposal_id", "resume": "countersign_wait_for_decision"}`;
//!   `countersign_wait_for_decision` resumes the wait.
//!
//! A client that declares the MCP Tasks extension gets a held call as a task instead
//! ([`tasks`]).
//!
//! A tool whose definition changed since it was pinned is not listed and its calls are refused
//! (`tool_definition_changed`) until an admin accepts the new one. An upstream that is not up
//! answers `upstream_unavailable`. The same agent calling the same tool with the same
//! arguments while an earlier call is still open gets that call's proposal.

mod tasks;

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::http::request::Parts;
use axum::middleware;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, CancelTaskParams,
    ContentBlock as Content, GetTaskParams, GetTaskResult, Implementation, JsonObject,
    ListToolsResult, MetaObject, PaginatedRequestParams, ProgressNotificationParam,
    ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json::{Value, json};
use uuid::Uuid;

use super::ApiState;
use super::error::ApiError;
use super::limits::TokenLimits;
use super::mcp::{Caller, authenticate};
use crate::domain::command::CommandStatus;
use crate::domain::gateway::{CallInput, Definition, ToolName, WAIT_TOOL, proposal_for};
use crate::domain::lifecycle::{ProposalStatus, status_at};
use crate::gateway::{CallError, Gateway, executor};
use crate::metrics::GatewayStep;
use crate::service::{MAX_WAIT, Services, Submitted};

/// The gateway's route, when the server has a gateway.
pub fn router(state: ApiState) -> Router {
    let Some(gateway) = state.gateway.clone() else {
        return Router::new();
    };
    let services = state.services.clone();
    let limits = state.limits.clone();
    let config = StreamableHttpServerConfig::default()
        .disable_allowed_hosts()
        .with_legacy_session_mode(false);
    let service = StreamableHttpService::new(
        move || {
            Ok(GatewayMcp {
                services: services.clone(),
                gateway: Arc::clone(&gateway),
                limits: limits.clone(),
            })
        },
        Arc::new(NeverSessionManager::default()),
        config,
    );
    Router::new()
        .nest_service("/mcp/gateway", service)
        .layer(middleware::from_fn_with_state(state, authenticate))
}

#[derive(Clone)]
struct GatewayMcp {
    services: Services,
    gateway: Arc<Gateway>,
    limits: Arc<TokenLimits>,
}

fn wait_tool() -> Tool {
    let schema = json!({
        "type": "object",
        "required": ["proposal_id"],
        "properties": {
            "proposal_id": {"type": "string", "format": "uuid",
                "description": "The proposal_id a held call answered with"}
        },
        "additionalProperties": false
    });
    Tool::new(
        WAIT_TOOL,
        "Resume a tool call that Countersign held for a person's approval: waits until the \
         call has run (answers its result) or ended (rejected, expired), or the hold ends again.",
        Arc::new(schema.as_object().cloned().unwrap_or_default()),
    )
}

/// The `_meta` key under which Countersign's own answers (refusals, holds, rejections) carry
/// their structured form as well.
const STATUS_META: &str = "countersign/status";

/// A refusal: the text the model reads, and the same as structured content and in `_meta`.
fn refusal(text: String, structured: Value) -> CallToolResult {
    let mut result = CallToolResult::structured_error(structured.clone());
    result.content = vec![Content::text(text)];
    let mut meta = JsonObject::new();
    meta.insert(STATUS_META.to_owned(), structured);
    result.meta = Some(MetaObject(meta));
    result
}

/// An API error as a refusal whose words are its message.
fn error_result(e: &ApiError) -> CallToolResult {
    let body = e.body();
    let words = (body.get("error").and_then(|e| e.get("message")))
        .and_then(Value::as_str)
        .unwrap_or("Countersign could not take this call")
        .to_owned();
    refusal(words, body)
}

/// Countersign's own answer to a call of a tool that declares an `outputSchema`, without
/// `structuredContent`: clients check that against the tool's schema, error results too (the
/// TypeScript SDK throws on a mismatch), so the structured form stays only in `_meta`. The
/// upstream's own results pass unchanged.
fn fit_to_schema(mut result: CallToolResult, definition: &Definition) -> CallToolResult {
    let ours = (result.meta.as_ref()).is_some_and(|m| m.0.contains_key(STATUS_META));
    if ours && definition.output_schema().is_some() {
        result.structured_content = None;
    }
    result
}

fn blocker(code: &str, text: &str) -> CallToolResult {
    refusal(
        text.to_owned(),
        json!({"status": "refused", "blockers": [{"code": code, "message": text}]}),
    )
}

/// Whether the call behind a proposal in this status is over (run, or never to run).
fn ended(status: ProposalStatus) -> bool {
    !matches!(
        status,
        ProposalStatus::Pending | ProposalStatus::Approved | ProposalStatus::Accepted
    )
}

impl GatewayMcp {
    /// Submits the call as a proposal, whose submission answers the same call still open
    /// instead, if there is one (the database holds one open copy of a call): its id, and the
    /// proposal as it was made when it is new (its route is known without reading it back).
    /// A call the policy accepts is run at once, here, under the lease its submission took,
    /// and answers as it was reported.
    async fn propose(
        &self,
        caller: &Caller,
        call: &CallInput<'_>,
    ) -> Result<(Uuid, Option<crate::service::AgentView>), ApiError> {
        let started = std::time::Instant::now();
        let body = proposal_for(call, Uuid::now_v7(), self.services.now());
        // Without a free call slot (or a running executor) an accepted call waits in the queue.
        let run = executor::run_at_once(&self.gateway);
        let (submitted, leased) = (self.services)
            .submit_gateway_call(
                &caller.0,
                Some(caller.1),
                &body,
                run.as_ref().map(|run| &run.request),
            )
            .await?;
        let (record, leased, run) = match (submitted, leased.zip(run)) {
            (Submitted::Replayed(r), _) => return Ok((r.id, None)),
            (Submitted::Created(r), None) => return Ok((r.id, Some((r, None)))),
            (Submitted::Created(r), Some((leased, run))) => (r, leased, run),
        };
        (self.services.metrics()).gateway_step(GatewayStep::Gate, started.elapsed());
        // On a task of its own: an agent that hangs up does not cut the call short of its report.
        let (gateway, services) = (Arc::clone(&self.gateway), self.services.clone());
        let ran =
            tokio::spawn(
                async move { executor::run_leased(&gateway, &services, leased, run).await },
            );
        let command = ran.await.ok().flatten();
        let id = record.id;
        // A call that ended is answered as reported; one put back in the queue (a retry) or
        // whose report was not taken is waited for as any other.
        let ended = match command.as_ref().map(|c| c.status) {
            Some(CommandStatus::Succeeded) => ProposalStatus::Succeeded,
            Some(CommandStatus::Failed) => ProposalStatus::Failed,
            _ => return Ok((id, None)),
        };
        let mut record = record;
        record.status = ended;
        Ok((id, Some((record, command))))
    }

    /// Holds the request until the call behind proposal `id` has ended or `hold` passes;
    /// progress notifications carry each status when the client asked for them. `first` is the
    /// proposal as just made, if it was (else it is read). `made` says the request is the call
    /// itself (not `countersign_wait_for_decision`).
    async fn hold(
        &self,
        caller: &Caller,
        (id, first): (Uuid, Option<crate::service::AgentView>),
        (hold, made): (Duration, bool),
        context: &RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ApiError> {
        // A waiting place is taken only to wait: a call that has already ended (an accepted
        // one, run) answers without one. The call itself, finding them all taken, answers
        // `pending` with its proposal's id (which `too_many_waits` would lose); a resume, whose
        // agent has the id, answers `too_many_waits`.
        let mut waiting = None;
        let progress = context.meta.get_progress_token();
        let deadline = tokio::time::Instant::now() + hold;
        let mut view = match first {
            Some(view) => view,
            None => self.services.agent_proposal(&caller.0, id).await?,
        };
        let mut step = 0.0;
        let mut told = None;
        loop {
            // As agents see it: a pending proposal past its expiry is expired, swept or not.
            let status = status_at(view.0.status, view.0.expires_at, self.services.now());
            if ended(status) {
                return Ok(answer(view, status));
            }
            if let Some(token) = progress.as_ref().filter(|_| told != Some(status)) {
                told = Some(status);
                step += 1.0;
                let mut note = ProgressNotificationParam::new(token.clone(), step);
                note.message = Some(format!("Countersign: the call is {status}"));
                let _ = context.peer.notify_progress(note).await;
            }
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            if left.is_zero() {
                return Ok(pending(id));
            }
            if waiting.is_none() {
                match self.limits.waiting_place(caller.1) {
                    Ok(place) => waiting = Some(place),
                    Err(_) if made => return Ok(pending(id)),
                    Err(e) => return Err(e),
                }
            }
            let wait = left.min(MAX_WAIT);
            // Nothing moved in `wait`: the view in hand is still current.
            if let Some(next) = (self.services)
                .next_change(&caller.0, id, status, wait)
                .await?
            {
                view = next;
            }
        }
    }

    async fn call_upstream_tool(
        &self,
        caller: &Caller,
        request: CallToolRequestParams,
        context: &RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let Some(name) = ToolName::from_served(&request.name) else {
            return Err(ErrorData::invalid_params(
                format!("no tool named `{}`", request.name),
                None,
            ));
        };
        let tool = match self.gateway.tool_now(&name).await {
            Ok(tool) => tool,
            Err(CallError::DefinitionChanged) => {
                return Ok(blocker(
                    "tool_definition_changed",
                    "This tool's definition changed since Countersign pinned it; it is not \
                     served until an admin accepts the new definition.",
                )
                .into());
            }
            Err(CallError::Unavailable | CallError::Lost(_)) => {
                return Ok(blocker(
                    "upstream_unavailable",
                    "This tool's server is not available right now; try again later.",
                )
                .into());
            }
            Err(CallError::NoSuchTool) => {
                return Err(ErrorData::invalid_params(
                    format!("no tool named `{}`", request.name),
                    None,
                ));
            }
        };
        let arguments = request.arguments.clone().unwrap_or_default();
        // rmcp moves a request's `_meta` (where the agent puts `countersign/intent`) into the
        // context before the handler sees it; what the parameters still hold is added.
        let mut meta = context.meta.0.0.clone();
        if let Some(m) = &request.meta {
            meta.extend(m.0.0.clone());
        }
        let meta = Some(meta);
        let call = CallInput {
            agent: caller.0.name(),
            domain: &tool.upstream.domain,
            name: &name,
            definition: &tool.definition,
            arguments: &arguments,
            meta: meta.as_ref(),
        };
        let proposed = match self.propose(caller, &call).await {
            Ok(proposed) => proposed,
            Err(e) => return Ok(fit_to_schema(error_result(&e), &tool.definition).into()),
        };
        if tasks::declared(context) {
            match self.as_task(caller, &proposed).await {
                Ok(Some(task)) => return Ok(CallToolResponse::Task(task)),
                Ok(None) => {}
                Err(e) => return Ok(fit_to_schema(error_result(&e), &tool.definition).into()),
            }
        }
        let outcome = (self.hold(caller, proposed, (tool.upstream.hold, true), context)).await;
        let result = outcome.unwrap_or_else(|e| error_result(&e));
        Ok(fit_to_schema(result, &tool.definition).into())
    }

    async fn resume(
        &self,
        caller: &Caller,
        args: &JsonObject,
        context: &RequestContext<RoleServer>,
    ) -> CallToolResult {
        let id = args
            .get("proposal_id")
            .and_then(Value::as_str)
            .and_then(|s| Uuid::parse_str(s).ok());
        let Some(id) = id else {
            let e = ApiError::field("proposal_id", "is required: the id a held call answered");
            return error_result(&e);
        };
        let hold = match self.services.agent_proposal(&caller.0, id).await {
            Ok((record, _)) => ToolName::from_internal(&record.contract.tool.name)
                .and_then(|n| {
                    self.gateway
                        .upstreams()
                        .find(|u| u.name == n.upstream)
                        .map(|u| u.hold)
                })
                .unwrap_or(crate::domain::gateway::config::DEFAULT_HOLD),
            Err(e) => return error_result(&ApiError::from(e)),
        };
        (self.hold(caller, (id, None), (hold, false), context).await)
            .unwrap_or_else(|e| error_result(&e))
    }
}

/// The call is still waiting for a person at the end of the hold.
fn pending(id: Uuid) -> CallToolResult {
    refusal(
        format!(
            "This call is waiting for a person's approval in Countersign. Call \
             {WAIT_TOOL} with proposal_id \"{id}\" to wait for it; it answers the call's \
             result once it has run."
        ),
        json!({"status": "pending", "proposal_id": id, "resume": WAIT_TOOL}),
    )
}

/// What an ended call answers.
fn answer((record, command): crate::service::AgentView, status: ProposalStatus) -> CallToolResult {
    let id = record.id;
    let stored = |v: Option<&Value>| {
        v.and_then(|v| serde_json::from_value::<CallToolResult>(v.clone()).ok())
    };
    match status {
        ProposalStatus::Succeeded => stored(command.as_ref().and_then(|c| c.result.as_ref()))
            .unwrap_or_else(|| CallToolResult::success(vec![Content::text("done")])),
        ProposalStatus::Failed => stored(command.as_ref().and_then(|c| c.error.as_ref()))
            .filter(|r| r.is_error == Some(true))
            .unwrap_or_else(|| {
                let error = command.and_then(|c| c.error).unwrap_or(Value::Null);
                refusal(
                    format!(
                        "The call failed: {}",
                        error
                            .get("message")
                            .and_then(Value::as_str)
                            .unwrap_or("no detail")
                    ),
                    json!({"status": "failed", "proposal_id": id, "error": error}),
                )
            }),
        ProposalStatus::Rejected => {
            let reason = record.review.as_ref().and_then(|r| r.reason.clone());
            refusal(
                format!(
                    "A reviewer rejected this call: {}",
                    reason.as_deref().unwrap_or("no reason given")
                ),
                json!({"status": "rejected", "proposal_id": id, "reason": reason}),
            )
        }
        ProposalStatus::Refused => {
            let words: Vec<String> = (record.routing.blockers.iter())
                .map(|b| b.message.clone())
                .collect();
            refusal(
                format!(
                    "Countersign's policy refuses this call: {}",
                    words.join("; ")
                ),
                json!({"status": "refused", "proposal_id": id, "blockers": record.routing.blockers}),
            )
        }
        ProposalStatus::OutcomeUnknown | ProposalStatus::TimedOut => {
            // The upstream's own error, when it answered one: the model reads why.
            let upstream = stored(command.as_ref().and_then(|c| c.error.as_ref()))
                .filter(|r| r.is_error == Some(true));
            let words = format!(
                "This call was sent, and whether it took effect is unknown ({status}): a person \
                 will settle it; do not call it again meanwhile."
            );
            let status = json!({"status": status.as_str(), "proposal_id": id});
            match upstream {
                Some(mut result) => {
                    result
                        .content
                        .push(Content::text(format!("Countersign: {words}")));
                    let mut meta = result.meta.take().unwrap_or_default();
                    meta.0.insert(STATUS_META.to_owned(), status);
                    result.meta = Some(meta);
                    result
                }
                None => refusal(words, status),
            }
        }
        other => refusal(
            format!("This call ended without running as asked: it is {other}."),
            json!({"status": other.as_str(), "proposal_id": id}),
        ),
    }
}

impl ServerHandler for GatewayMcp {
    fn get_info(&self) -> ServerConfig {
        let capabilities = ServerCapabilities::builder()
            .enable_tools()
            .enable_tasks()
            .build();
        ServerConfig::new(capabilities)
            .with_server_info(Implementation::new(
                "countersign-gateway",
                env!("CARGO_PKG_VERSION"),
            ))
            .with_instructions(
                "Your tools, through Countersign: a call a person must approve is held until \
                 it is decided and run. When a call answers status pending, call \
                 countersign_wait_for_decision with its proposal_id.",
            )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let caller = caller(&context)?;
        let policy = self.services.policy();
        let mut tools: Vec<Tool> = (self.gateway.tools().await.into_iter())
            .filter(|t| {
                !policy.refuses_outright(caller.0.name(), &t.name.internal(), &t.upstream.domain)
            })
            .filter_map(|t| serde_json::from_value(t.definition.served_as(&t.name.served())).ok())
            .collect();
        tools.push(wait_tool());
        Ok(ListToolsResult::with_all_items(tools))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let caller = caller(&context)?;
        if request.name == WAIT_TOOL {
            let args = request.arguments.unwrap_or_default();
            return Ok(self.resume(&caller, &args, &context).await.into());
        }
        self.call_upstream_tool(&caller, request, &context).await
    }

    async fn get_task(
        &self,
        request: GetTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, ErrorData> {
        self.get(&caller(&context)?, &request.task_id).await
    }

    async fn cancel_task(
        &self,
        request: CancelTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.cancel(&caller(&context)?, &request.task_id).await
    }
}

fn caller(context: &RequestContext<RoleServer>) -> Result<Caller, ErrorData> {
    context
        .extensions
        .get::<Parts>()
        .and_then(|p| p.extensions.get::<Caller>())
        .cloned()
        .ok_or_else(|| ErrorData::invalid_request("no agent token", None))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refusal_keeps_structured_content_only_where_the_tools_schema_allows_it() {
        let plain = Definition::of(&json!({"name": "write", "inputSchema": {"type": "object"}}));
        let typed = Definition::of(&json!({
            "name": "read", "inputSchema": {"type": "object"},
            "outputSchema": {"type": "object", "required": ["content"]}
        }));
        let refused = || blocker("tool_definition_changed", "changed");
        let kept = fit_to_schema(refused(), &plain);
        assert_eq!(
            kept.structured_content.as_ref().map(|s| &s["status"]),
            Some(&json!("refused"))
        );
        let fitted = fit_to_schema(refused(), &typed);
        assert_eq!(fitted.structured_content, None);
        let meta = fitted.meta.as_ref().map(|m| &m.0[STATUS_META]);
        assert_eq!(
            meta.map(|s| &s["blockers"][0]["code"]),
            Some(&json!("tool_definition_changed"))
        );
        assert_eq!(fitted.is_error, Some(true));
        // The upstream's own result passes unchanged, whatever its schema.
        let upstream = CallToolResult::structured(json!({"content": "hello"}));
        assert_eq!(fit_to_schema(upstream.clone(), &typed), upstream);
    }
}
