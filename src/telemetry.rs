//! Structured logs with tracing, to stderr. `RUST_LOG` filters (default `info`);
//! `COUNTERSIGN_LOG_FORMAT=json` writes one JSON object per line for log shippers.

use tracing_subscriber::EnvFilter;

/// Installs the global subscriber; harmless if one is already installed (tests).
pub fn init() {
    let filter = EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| EnvFilter::new("info,sqlx=warn,tower_sessions=warn"));
    let json = std::env::var("COUNTERSIGN_LOG_FORMAT").is_ok_and(|v| v == "json");
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    let _ = if json {
        builder.json().try_init()
    } else {
        builder.try_init()
    };
}
