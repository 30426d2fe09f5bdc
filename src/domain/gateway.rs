//! The MCP gateway's rules, free of IO: its configuration (which upstream MCP servers, how to
//! reach them, their domain and how long a held call stays open), the names a tool is served
//! and known by, the pinned hash of a tool's definition, and the tool proposal a call becomes.
//! Imports `contract` and `policy`'s TOML reader.

pub mod call;
pub mod config;
pub mod tool;

pub use call::{CallInput, proposal_for};
pub use config::{GatewayConfig, Transport, Upstream};
pub use tool::{Definition, ToolName, ToolPin};

/// The built-in executor that runs approved gateway calls: the only executor any gateway
/// tool's command is ever handed to. No token may take this name.
pub const GATEWAY_EXECUTOR: &str = "countersign-gateway";

/// The `_meta` key of the marker on a result the gateway cut: the whole result's size and
/// SHA-256. Countersign's alone: an upstream's own is taken out.
pub const TRUNCATED: &str = "countersign/truncated";

/// The tool every gateway serves beside the upstreams' own: resume a held call.
pub const WAIT_TOOL: &str = "countersign_wait_for_decision";
