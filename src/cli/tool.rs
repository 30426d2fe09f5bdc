//! `countersign tool pause|resume NAME` and `tool list`: the kill switch. A paused tool (an
//! exact name, a glob, or `*` for every tool) is leased by no executor; its commands wait and
//! nothing is lost. Each change is audited (`tool.paused` / `tool.resumed`, actor `system:cli`).

use clap::Subcommand;

use super::{Database, services};
use crate::domain::principal::Principal;

#[derive(Debug, Subcommand)]
pub(crate) enum ToolCommand {
    /// Stop every executor from leasing a tool (its commands wait).
    Pause {
        #[command(flatten)]
        db: Database,
        /// Tool name, glob (`crm.*`) or `*` for every tool.
        name: String,
    },
    /// Let executors lease a paused tool again.
    Resume {
        #[command(flatten)]
        db: Database,
        /// The name or glob exactly as paused.
        name: String,
    },
    /// List paused tools.
    List {
        #[command(flatten)]
        db: Database,
    },
}

pub(crate) async fn run(command: ToolCommand) -> Result<(), String> {
    let cli = Principal::Operator;
    match command {
        ToolCommand::Pause { db, name } => {
            let changed = services(&db.database_url)
                .await?
                .pause_tool(&cli, &name)
                .await
                .map_err(|e| format!("tool `{name}`: {e}"))?;
            if changed {
                eprintln!("paused `{name}`: no executor leases it until `tool resume {name}`");
            } else {
                eprintln!("`{name}` was already paused");
            }
        }
        ToolCommand::Resume { db, name } => {
            let changed = services(&db.database_url)
                .await?
                .resume_tool(&cli, &name)
                .await
                .map_err(|e| format!("tool `{name}`: {e}"))?;
            if !changed {
                return Err(format!(
                    "`{name}` is not paused (see `countersign tool list`)"
                ));
            }
            eprintln!("resumed `{name}`");
        }
        ToolCommand::List { db } => {
            for p in services(&db.database_url)
                .await?
                .paused_tools(&cli)
                .await
                .map_err(|e| e.to_string())?
            {
                let at = p
                    .paused_at
                    .format(&time::format_description::well_known::Rfc3339)
                    .unwrap_or_default();
                println!("{}\tpaused by {} at {at}", p.pattern, p.paused_by);
            }
        }
    }
    Ok(())
}
