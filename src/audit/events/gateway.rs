//! The MCP gateway's events: a tool's definition seen, changed and accepted, and an upstream's
//! state. Definitions are recorded by hash only; an upstream's credentials never appear.

use serde::Serialize;

use super::payload::Payload;

/// Payload of `gateway.tool_seen`: a tool was seen for the first time and its definition
/// pinned.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GatewayToolSeen {
    /// Internal name (`files.write_file`).
    pub tool: String,
    /// Its upstream.
    pub upstream: String,
    /// `sha256:` of the pinned definition (RFC 8785).
    pub definition_sha256: String,
}

impl Payload for GatewayToolSeen {
    fn kind(&self) -> &'static str {
        "gateway.tool_seen"
    }
    fn subject(&self) -> (&'static str, String) {
        ("gateway_tool", self.tool.clone())
    }
}

/// Payload of `gateway.tool_changed`: an upstream now serves a tool with a definition other
/// than the pinned one; the tool is not served until an admin accepts it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GatewayToolChanged {
    /// Internal name.
    pub tool: String,
    /// `sha256:` of the pinned definition.
    pub pinned_sha256: String,
    /// `sha256:` of the definition now served.
    pub offered_sha256: String,
}

impl Payload for GatewayToolChanged {
    fn kind(&self) -> &'static str {
        "gateway.tool_changed"
    }
    fn subject(&self) -> (&'static str, String) {
        ("gateway_tool", self.tool.clone())
    }
    fn change(&self) -> (Option<String>, Option<String>) {
        (Some("served".into()), Some("withheld".into()))
    }
}

/// Payload of `gateway.tool_accepted`: an admin pinned a tool's changed definition.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GatewayToolAccepted {
    /// Internal name.
    pub tool: String,
    /// `sha256:` of the definition pinned before.
    pub previous_sha256: String,
    /// `sha256:` of the definition pinned now.
    pub definition_sha256: String,
}

impl Payload for GatewayToolAccepted {
    fn kind(&self) -> &'static str {
        "gateway.tool_accepted"
    }
    fn subject(&self) -> (&'static str, String) {
        ("gateway_tool", self.tool.clone())
    }
    fn change(&self) -> (Option<String>, Option<String>) {
        (Some("withheld".into()), Some("served".into()))
    }
}

/// Payload of `gateway.upstream_state`: an upstream went up, down, or is restarting.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GatewayUpstreamState {
    /// The upstream's configured name.
    #[serde(skip)]
    pub upstream: String,
    /// The state before.
    #[serde(skip)]
    pub before: &'static str,
    /// The state now.
    #[serde(skip)]
    pub after: &'static str,
}

impl Payload for GatewayUpstreamState {
    fn kind(&self) -> &'static str {
        "gateway.upstream_state"
    }
    fn subject(&self) -> (&'static str, String) {
        ("gateway_upstream", self.upstream.clone())
    }
    fn change(&self) -> (Option<String>, Option<String>) {
        (Some(self.before.into()), Some(self.after.into()))
    }
}
