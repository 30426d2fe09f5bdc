//! One upstream MCP server: started (stdio) or connected (streamable HTTP), its tools listed
//! and pinned through the service, restarted with backoff when it ends. Its state is on
//! `/healthz` and in the trail (`gateway.upstream_state`).
//!
//! What crosses to an upstream is only what the gate judged: tool calls. It never sees an
//! agent's token: a stdio server gets a bare environment (no Countersign secret), an HTTP one
//! only the headers its configuration names. What an upstream asks of the client (sampling,
//! elicitation, roots) is refused and logged.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, RwLock};
use std::time::Duration;

#[allow(deprecated)]
use rmcp::model::{
    CallToolRequestParams, CreateMessageRequestParams, CreateMessageResult, ElicitRequestParams,
    ElicitResult, ListRootsResult,
};
use rmcp::service::{NotificationContext, RequestContext};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{ClientHandler, ErrorData, RoleClient, ServiceExt};
use serde_json::{Map, Value, json};
use tokio::sync::{Notify, watch};

use crate::domain::gateway::{Definition, ToolName, Transport, Upstream};
use crate::domain::principal::Principal;
use crate::service::Services;

/// How long starting or connecting to an upstream may take (a stdio server's first `npx`
/// run downloads its package).
const CONNECT_TIMEOUT: Duration = Duration::from_secs(60);
/// How long listing an upstream's tools may take.
const LIST_TIMEOUT: Duration = Duration::from_secs(10);
/// The first wait before a restart; it doubles up to [`MAX_BACKOFF`].
const FIRST_BACKOFF: Duration = Duration::from_millis(250);
/// The longest wait before a restart.
const MAX_BACKOFF: Duration = Duration::from_secs(30);
/// Up this long, an upstream's next restart waits only [`FIRST_BACKOFF`] again.
const STABLE: Duration = Duration::from_secs(30);

/// What a stdio upstream inherits of Countersign's environment: enough to find and run a
/// program, nothing that could be a secret.
const INHERITED_ENV: &[&str] = &["PATH", "HOME", "USER", "LANG", "LC_ALL", "TMPDIR", "TERM"];

/// An upstream's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UpstreamState {
    /// Being started for the first time.
    Starting,
    /// Serving.
    Up,
    /// Ended or unreachable; a restart is due.
    Down,
    /// Being started again.
    Restarting,
}

impl UpstreamState {
    /// The name `/healthz` and the trail use.
    pub fn as_str(self) -> &'static str {
        match self {
            UpstreamState::Starting => "starting",
            UpstreamState::Up => "up",
            UpstreamState::Down => "down",
            UpstreamState::Restarting => "restarting",
        }
    }
}

/// Why a call could not be made, or did not come back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CallError {
    /// No upstream serves a tool of that name.
    NoSuchTool,
    /// The upstream now serves a definition other than the pinned one.
    DefinitionChanged,
    /// The upstream is not up: the call was not sent.
    Unavailable,
    /// The call was sent and no answer came (the upstream ended or the connection broke): it
    /// may have had its effect.
    Lost(String),
}

/// The MCP client Countersign is to an upstream.
#[derive(Clone)]
struct Client {
    upstream: String,
    changed: Arc<Notify>,
}

// Sampling and roots are deprecated in MCP (SEP-2577); an upstream may still ask for them,
// and is refused.
#[allow(deprecated)]
impl ClientHandler for Client {
    async fn create_message(
        &self,
        _params: CreateMessageRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<CreateMessageResult, ErrorData> {
        tracing::warn!(upstream = %self.upstream, "refused an upstream's sampling request: the gateway serves tools only");
        Err(ErrorData::invalid_request(
            "Countersign's gateway does not offer sampling to upstreams",
            None,
        ))
    }

    async fn list_roots(
        &self,
        _context: RequestContext<RoleClient>,
    ) -> Result<ListRootsResult, ErrorData> {
        tracing::warn!(upstream = %self.upstream, "refused an upstream's roots request: the gateway serves tools only");
        Err(ErrorData::invalid_request(
            "Countersign's gateway does not offer roots to upstreams",
            None,
        ))
    }

    async fn create_elicitation(
        &self,
        _request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        tracing::warn!(upstream = %self.upstream, "refused an upstream's elicitation request: the gateway serves tools only");
        Err(ErrorData::invalid_request(
            "Countersign's gateway does not offer elicitation to upstreams",
            None,
        ))
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.changed.notify_one();
    }
}

/// A tool the gateway serves now: its names, pinned definition and upstream.
#[derive(Debug, Clone)]
pub struct ServedTool {
    /// Its names.
    pub name: ToolName,
    /// Its pinned definition (the one its upstream serves now).
    pub definition: Definition,
    /// Its upstream's configuration.
    pub upstream: Upstream,
}

type Peer = rmcp::Peer<RoleClient>;

/// What a stdio upstream writes on its standard error, line by line, in Countersign's log at
/// debug level (each line cut to 1,000 characters): its own diagnostics, never the protocol.
async fn log_stderr(upstream: String, stderr: tokio::process::ChildStderr) {
    use tokio::io::AsyncBufReadExt;
    let mut lines = tokio::io::BufReader::new(stderr).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        let line: String = line.chars().take(1_000).collect();
        tracing::debug!(upstream = %upstream, line = %line, "upstream stderr");
    }
}

/// One upstream and what is known of it now.
pub(crate) struct Slot {
    pub(crate) upstream: Upstream,
    services: Services,
    state: watch::Sender<UpstreamState>,
    tried: watch::Sender<bool>,
    peer: RwLock<Option<Peer>>,
    served: RwLock<BTreeMap<String, Definition>>,
    withheld: RwLock<BTreeSet<String>>,
    /// The tools as the upstream last listed them, pinned or not.
    listed: RwLock<Vec<(ToolName, Definition)>>,
    changed: Arc<Notify>,
    reconnect: Notify,
}

impl Slot {
    /// The slot of `upstream`, its supervisor started.
    pub(crate) fn start(upstream: Upstream, services: Services) -> Arc<Self> {
        let slot = Arc::new(Slot {
            upstream,
            services,
            state: watch::Sender::new(UpstreamState::Starting),
            tried: watch::Sender::new(false),
            peer: RwLock::new(None),
            served: RwLock::default(),
            withheld: RwLock::default(),
            listed: RwLock::default(),
            changed: Arc::new(Notify::new()),
            reconnect: Notify::new(),
        });
        (slot.services.metrics()).gateway_upstream(&slot.upstream.name, "starting");
        tokio::spawn(Arc::clone(&slot).supervise());
        slot
    }

    pub(crate) fn state(&self) -> UpstreamState {
        *self.state.borrow()
    }

    /// Waits until the first start succeeded or failed.
    pub(crate) async fn tried(&self) {
        let mut rx = self.tried.subscribe();
        let _ = rx.wait_for(|t| *t).await;
    }

    async fn set_state(&self, next: UpstreamState) {
        let before = self.state.send_replace(next);
        if before == next {
            return;
        }
        tracing::info!(upstream = %self.upstream.name, from = before.as_str(), to = next.as_str(), "gateway upstream state");
        (self.services.metrics()).gateway_upstream(&self.upstream.name, next.as_str());
        let system = Principal::System("gateway");
        if let Err(e) = (self.services)
            .gateway_upstream_state(&system, &self.upstream.name, before.as_str(), next.as_str())
            .await
        {
            tracing::warn!(error = %e, "could not record an upstream's state");
        }
    }

    async fn supervise(self: Arc<Self>) {
        let mut backoff = FIRST_BACKOFF;
        let mut first = true;
        loop {
            if !first {
                self.set_state(UpstreamState::Restarting).await;
            }
            first = false;
            match tokio::time::timeout(CONNECT_TIMEOUT, self.connect()).await {
                Ok(Ok(running)) => {
                    let up_at = tokio::time::Instant::now();
                    let peer = running.peer().clone();
                    *self.peer.write().unwrap_or_else(|e| e.into_inner()) = Some(peer.clone());
                    if let Err(e) = self.relist(&peer).await {
                        tracing::warn!(upstream = %self.upstream.name, error = %e, "listing an upstream's tools failed");
                    }
                    self.set_state(UpstreamState::Up).await;
                    self.tried.send_replace(true);
                    let token = running.cancellation_token();
                    let closed = running.waiting();
                    tokio::pin!(closed);
                    loop {
                        tokio::select! {
                            _ = &mut closed => break,
                            () = self.reconnect.notified() => {
                                token.cancel();
                                break;
                            }
                            () = self.changed.notified() => {
                                if let Err(e) = self.relist(&peer).await {
                                    tracing::warn!(upstream = %self.upstream.name, error = %e, "listing an upstream's tools failed");
                                }
                            }
                        }
                    }
                    if up_at.elapsed() >= STABLE {
                        backoff = FIRST_BACKOFF;
                    }
                }
                Ok(Err(e)) => {
                    tracing::warn!(upstream = %self.upstream.name, error = %e, "an upstream did not start");
                }
                Err(_) => {
                    tracing::warn!(upstream = %self.upstream.name, "an upstream did not start in time");
                }
            }
            *self.peer.write().unwrap_or_else(|e| e.into_inner()) = None;
            self.set_state(UpstreamState::Down).await;
            self.tried.send_replace(true);
            tokio::time::sleep(backoff).await;
            backoff = (backoff * 2).min(MAX_BACKOFF);
        }
    }

    async fn connect(&self) -> Result<rmcp::service::RunningService<RoleClient, Client>, String> {
        let client = Client {
            upstream: self.upstream.name.clone(),
            changed: Arc::clone(&self.changed),
        };
        match &self.upstream.transport {
            Transport::Stdio { command, env } => {
                let mut cmd = tokio::process::Command::new(&command[0]);
                cmd.args(&command[1..]).env_clear();
                for key in INHERITED_ENV {
                    if let Some(value) = std::env::var_os(key) {
                        cmd.env(key, value);
                    }
                }
                cmd.envs(env);
                let (transport, stderr) = TokioChildProcess::builder(cmd)
                    .stderr(std::process::Stdio::piped())
                    .spawn()
                    .map_err(|e| e.to_string())?;
                if let Some(stderr) = stderr {
                    tokio::spawn(log_stderr(self.upstream.name.clone(), stderr));
                }
                client.serve(transport).await.map_err(|e| e.to_string())
            }
            Transport::Http { url, headers } => {
                let mut custom = HashMap::new();
                for (name, value) in headers {
                    let name = axum::http::HeaderName::try_from(name.as_str())
                        .map_err(|e| e.to_string())?;
                    let value = axum::http::HeaderValue::try_from(value.as_str())
                        .map_err(|e| e.to_string())?;
                    custom.insert(name, value);
                }
                let config = StreamableHttpClientTransportConfig::with_uri(url.as_str())
                    .custom_headers(custom);
                let transport = StreamableHttpClientTransport::from_config(config);
                client.serve(transport).await.map_err(|e| e.to_string())
            }
        }
    }

    /// Lists the upstream's tools and pins them: the served set becomes what the service
    /// allows.
    async fn relist(&self, peer: &Peer) -> Result<(), String> {
        let tools = tokio::time::timeout(LIST_TIMEOUT, peer.list_all_tools())
            .await
            .map_err(|_| "the upstream did not list its tools in time".to_owned())?
            .map_err(|e| e.to_string())?;
        let mut listed = Vec::new();
        for tool in tools {
            let json = serde_json::to_value(&tool).unwrap_or(Value::Null);
            match ToolName::new(&self.upstream.name, &tool.name) {
                Some(name) => listed.push((name, Definition::of(&json))),
                None => {
                    tracing::warn!(upstream = %self.upstream.name, tool = %tool.name, "not served: its name cannot be served as UPSTREAM__TOOL within 64 of A-Z, a-z, 0-9, _ and -")
                }
            }
        }
        *self.listed.write().unwrap_or_else(|e| e.into_inner()) = listed.clone();
        self.serve(listed).await
    }

    /// Pins `listed` (what the upstream lists): the served set becomes what the service allows,
    /// the rest is withheld.
    async fn serve(&self, listed: Vec<(ToolName, Definition)>) -> Result<(), String> {
        let all: BTreeSet<String> = listed.iter().map(|(n, _)| n.tool.clone()).collect();
        let system = Principal::System("gateway");
        let served = (self.services)
            .pin_gateway_tools(&system, &self.upstream.name, listed)
            .await
            .map_err(|e| e.to_string())?;
        let served: BTreeMap<String, Definition> =
            served.into_iter().map(|(n, d)| (n.tool, d)).collect();
        let withheld = all
            .into_iter()
            .filter(|t| !served.contains_key(t))
            .collect();
        *self.served.write().unwrap_or_else(|e| e.into_inner()) = served;
        *self.withheld.write().unwrap_or_else(|e| e.into_inner()) = withheld;
        Ok(())
    }

    /// Lists the tools again now, if the upstream is up (a few seconds at most).
    pub(crate) async fn refresh(&self) {
        let peer = self.peer.read().unwrap_or_else(|e| e.into_inner()).clone();
        if let Some(peer) = peer
            && let Err(e) = self.relist(&peer).await
        {
            tracing::warn!(upstream = %self.upstream.name, error = %e, "listing an upstream's tools failed");
        }
    }

    /// The tool `tool` as [`Slot::served_tool`] finds it, after pinning the upstream's last
    /// list again if it is withheld for a changed definition: an admin may have accepted that
    /// definition since, on any instance, and it is served from the next call.
    pub(crate) async fn recheck(&self, tool: &str) -> Result<ServedTool, CallError> {
        let found = self.served_tool(tool);
        if !matches!(found, Err(CallError::DefinitionChanged)) {
            return found;
        }
        let listed = self
            .listed
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        if let Err(e) = self.serve(listed).await {
            tracing::warn!(upstream = %self.upstream.name, error = %e, "pinning an upstream's tools again failed");
        }
        self.served_tool(tool)
    }

    /// The tools served now.
    pub(crate) fn served(&self) -> Vec<ServedTool> {
        if self.state() != UpstreamState::Up {
            return Vec::new();
        }
        let served = self.served.read().unwrap_or_else(|e| e.into_inner());
        served
            .iter()
            .filter_map(|(tool, definition)| {
                Some(ServedTool {
                    name: ToolName::new(&self.upstream.name, tool)?,
                    definition: definition.clone(),
                    upstream: self.upstream.clone(),
                })
            })
            .collect()
    }

    /// The tool `tool`, if it is served now.
    pub(crate) fn served_tool(&self, tool: &str) -> Result<ServedTool, CallError> {
        if self
            .withheld
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .contains(tool)
        {
            return Err(CallError::DefinitionChanged);
        }
        let definition = self
            .served
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .get(tool)
            .cloned();
        match (definition, self.state()) {
            (Some(definition), UpstreamState::Up) => Ok(ServedTool {
                name: ToolName::new(&self.upstream.name, tool).ok_or(CallError::NoSuchTool)?,
                definition,
                upstream: self.upstream.clone(),
            }),
            (_, UpstreamState::Up) => Err(CallError::NoSuchTool),
            _ => Err(CallError::Unavailable),
        }
    }

    /// Calls `tool` with exactly `arguments`; the upstream's result as MCP's JSON.
    pub(crate) async fn call(
        &self,
        tool: &str,
        arguments: Map<String, Value>,
    ) -> Result<Value, CallError> {
        let peer = self.peer.read().unwrap_or_else(|e| e.into_inner()).clone();
        let peer = peer.ok_or(CallError::Unavailable)?;
        if peer.is_transport_closed() {
            self.reconnect.notify_one();
            return Err(CallError::Unavailable);
        }
        let request = CallToolRequestParams::new(tool.to_owned()).with_arguments(arguments);
        match peer.call_tool(request).await {
            Ok(result) => Ok(serde_json::to_value(&result).unwrap_or(Value::Null)),
            // The upstream answered, with a JSON-RPC error instead of a result: the agent reads
            // it as the tool's error (whether the tool did anything first, only it knows).
            Err(rmcp::ServiceError::McpError(e)) => Ok(json!({
                "content": [{
                    "type": "text",
                    "text": format!("The tool's server answered an error ({}): {}", e.code.0, e.message),
                }],
                "isError": true,
            })),
            Err(e) => {
                if peer.is_transport_closed() {
                    self.reconnect.notify_one();
                }
                Err(CallError::Lost(e.to_string()))
            }
        }
    }
}
