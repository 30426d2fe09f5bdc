//! `countersign gateway check FILE` validates a gateway file (every error with its line, as
//! `serve --gateway` would refuse it); `gateway list` shows the pinned tools and any changed
//! definition waiting; `gateway accept NAME` pins a tool's changed definition (audited
//! `gateway.tool_accepted`, actor `system:cli`).

use clap::Subcommand;
use std::path::PathBuf;

use super::{Database, services};
use crate::domain::gateway::GatewayConfig;
use crate::domain::principal::Principal;
use crate::service::ServiceError;

#[derive(Debug, Subcommand)]
pub(crate) enum GatewayCommand {
    /// Validate a gateway file; print its upstreams, or every error with its line.
    Check {
        /// The gateway file (TOML).
        file: PathBuf,
    },
    /// List the gateway's pinned tools and the changed definitions waiting for an admin.
    List {
        #[command(flatten)]
        db: Database,
    },
    /// Pin the changed definition a tool is now served with (e.g. `files.write_file`).
    Accept {
        #[command(flatten)]
        db: Database,
        /// The tool's name inside Countersign: `UPSTREAM.TOOL`.
        name: String,
        /// Accept only this definition (its SHA-256, as `countersign gateway list` prints it),
        /// so that one the upstream changed again since is not pinned unseen.
        #[arg(long)]
        sha256: Option<String>,
    },
}

/// Reads and validates a gateway file against this process's environment.
pub(crate) fn load_gateway(file: &std::path::Path) -> Result<GatewayConfig, String> {
    let text = std::fs::read_to_string(file).map_err(|e| format!("{}: {e}", file.display()))?;
    GatewayConfig::parse(&text, &|name| std::env::var(name).ok()).map_err(|errors| {
        let lines: Vec<String> = errors.iter().map(ToString::to_string).collect();
        format!("{}:\n{}", file.display(), lines.join("\n"))
    })
}

pub(crate) async fn run(command: GatewayCommand) -> Result<(), String> {
    let cli = Principal::Operator;
    match command {
        GatewayCommand::Check { file } => {
            let config = load_gateway(&file)?;
            for u in &config.upstreams {
                println!(
                    "{}\t{}\tdomain {}\thold {}s",
                    u.name,
                    u.transport.kind(),
                    u.domain,
                    u.hold.as_secs()
                );
            }
        }
        GatewayCommand::List { db } => {
            let tools = services(&db.database_url)
                .await?
                .gateway_tools(&cli)
                .await
                .map_err(|e| e.to_string())?;
            for t in tools {
                match &t.offered {
                    Some(offered) => println!(
                        "{}\tpinned {}\tCHANGED to {} (withheld: `countersign gateway accept {}`)",
                        t.name,
                        t.pinned.sha256(),
                        offered.sha256(),
                        t.name
                    ),
                    None => println!("{}\tpinned {}", t.name, t.pinned.sha256()),
                }
            }
        }
        GatewayCommand::Accept { db, name, sha256 } => {
            let pin = services(&db.database_url)
                .await?
                .accept_gateway_tool(&cli, &name, sha256.as_deref())
                .await
                .map_err(|e| match e {
                    ServiceError::Invalid(errors) => (errors.iter())
                        .map(|e| format!("{}: {}", e.field, e.message))
                        .collect::<Vec<_>>()
                        .join("\n"),
                    other => format!("tool `{name}`: {other}"),
                })?;
            eprintln!("`{}` now pinned at {}", pin.name, pin.pinned.sha256());
        }
    }
    Ok(())
}
