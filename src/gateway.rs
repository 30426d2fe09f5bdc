//! The MCP gateway's outbound side: the upstream MCP servers Countersign stands in front of
//! ([`upstream`]: started or connected, restarted with backoff, their tools pinned through
//! the service) and the built-in executor that makes an approved call to its upstream
//! ([`executor`]). The agent's side is `api::gateway` (`POST /mcp/gateway`).
//!
//! Adapters only: every decision (pinning, routing, the queue, reports) is a use case in
//! `service/`; this module speaks MCP to the upstreams.

pub mod executor;
pub mod upstream;

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::domain::command::scope::ToolScope;
use crate::domain::gateway::{GatewayConfig, ToolName, Upstream};
use crate::service::Services;

pub use upstream::{CallError, ServedTool, UpstreamState};

/// The running gateway: one slot per upstream.
pub struct Gateway {
    slots: Vec<Arc<upstream::Slot>>,
    /// The calls the built-in executor makes at once, wherever they are made.
    call_slots: Arc<tokio::sync::Semaphore>,
    /// The built-in executor's scope: the configured upstreams' tools (`None` when it did
    /// not parse; the executor then does not run).
    scope: Option<ToolScope>,
}

impl Gateway {
    /// Starts every upstream (each on its own task, restarted with backoff) and the built-in
    /// executor.
    pub fn start(config: &GatewayConfig, services: &Services) -> Arc<Self> {
        let slots = config
            .upstreams
            .iter()
            .map(|u| upstream::Slot::start(u.clone(), services.clone()))
            .collect();
        let call_slots = Arc::new(tokio::sync::Semaphore::new(executor::CONCURRENT_CALLS));
        let scope = executor::scope(&config.upstreams);
        let gateway = Arc::new(Gateway {
            slots,
            call_slots,
            scope,
        });
        executor::spawn(Arc::clone(&gateway), services.clone());
        gateway
    }

    fn slot(&self, upstream: &str) -> Option<&Arc<upstream::Slot>> {
        self.slots.iter().find(|s| s.upstream.name == upstream)
    }

    /// Each upstream's state, by name (`/healthz`, `/metrics`).
    pub fn states(&self) -> BTreeMap<String, UpstreamState> {
        self.slots
            .iter()
            .map(|s| (s.upstream.name.clone(), s.state()))
            .collect()
    }

    /// Every upstream's configuration.
    pub fn upstreams(&self) -> impl Iterator<Item = &Upstream> {
        self.slots.iter().map(|s| &s.upstream)
    }

    /// Every tool served now, listing each upstream afresh first (at most a few seconds
    /// each; an upstream that does not answer keeps its last list).
    pub async fn tools(&self) -> Vec<ServedTool> {
        let refreshed = self.slots.iter().map(|s| s.refresh());
        futures_util::future::join_all(refreshed).await;
        self.slots.iter().flat_map(|s| s.served()).collect()
    }

    /// The tool `name` if it is served now, with the state of its upstream.
    pub fn tool(&self, name: &ToolName) -> Result<ServedTool, CallError> {
        let slot = self.slot(&name.upstream).ok_or(CallError::NoSuchTool)?;
        slot.served_tool(&name.tool)
    }

    /// The tool `name` as [`Gateway::tool`] finds it, except that one withheld for a changed
    /// definition is looked at again against the pins, so an admin's acceptance holds from the
    /// next call.
    pub async fn tool_now(&self, name: &ToolName) -> Result<ServedTool, CallError> {
        let slot = self.slot(&name.upstream).ok_or(CallError::NoSuchTool)?;
        slot.recheck(&name.tool).await
    }

    /// Calls `name` on its upstream with `arguments`, exactly.
    pub async fn call(
        &self,
        name: &ToolName,
        arguments: serde_json::Map<String, serde_json::Value>,
    ) -> Result<serde_json::Value, CallError> {
        let slot = self.slot(&name.upstream).ok_or(CallError::NoSuchTool)?;
        slot.call(&name.tool, arguments).await
    }

    /// Waits until every upstream has been tried once (started, or failed to start).
    pub async fn started(&self) {
        for slot in &self.slots {
            slot.tried().await;
        }
    }
}
