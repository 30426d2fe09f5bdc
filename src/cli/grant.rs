//! `countersign grant list` shows the standing grants (who made each, for which agent and
//! tool, uses and time left); `grant revoke ID` revokes one at once (audited `grant.revoked`,
//! actor `system:cli`). Grants are made only by a reviewer approving on a proposal's page.

use clap::Subcommand;
use uuid::Uuid;

use super::{Database, services};
use crate::domain::principal::Principal;

#[derive(Debug, Subcommand)]
pub(crate) enum GrantCommand {
    /// List standing grants, newest first: the live ones, or with `--all` the ended ones too.
    List {
        #[command(flatten)]
        db: Database,
        /// Also list used-up, expired and revoked grants.
        #[arg(long)]
        all: bool,
    },
    /// Revoke a live grant: it accepts nothing from now on, on every instance.
    Revoke {
        #[command(flatten)]
        db: Database,
        /// The grant's id (as `grant list` shows it).
        id: Uuid,
    },
}

pub(crate) async fn run(command: GrantCommand) -> Result<(), String> {
    let cli = Principal::Operator;
    let rfc3339 = |t: time::OffsetDateTime| {
        t.format(&time::format_description::well_known::Rfc3339)
            .unwrap_or_default()
    };
    match command {
        GrantCommand::List { db, all } => {
            let grants = services(&db.database_url)
                .await?
                .grants(&cli, !all)
                .await
                .map_err(|e| e.to_string())?;
            for g in grants {
                let uses = match g.max_uses {
                    Some(max) => format!("{}/{max}", g.uses),
                    None => g.uses.to_string(),
                };
                let scope = if g.scope.is_exact() {
                    "exact"
                } else {
                    "similar"
                };
                println!(
                    "{}\t{}\t{}\t{}\t{}\tby {}\tuses {uses}\tuntil {}\t{}",
                    g.id,
                    g.state.as_str(),
                    g.agent,
                    g.tool,
                    scope,
                    g.granted_by,
                    rfc3339(g.expires_at),
                    g.domain,
                );
            }
        }
        GrantCommand::Revoke { db, id } => {
            let g = services(&db.database_url)
                .await?
                .revoke_grant(&cli, id)
                .await
                .map_err(|e| format!("grant {id}: {e}"))?;
            eprintln!(
                "grant {} revoked ({} for {}, made by {}, used {} times)",
                g.id, g.tool, g.agent, g.granted_by, g.uses
            );
        }
    }
    Ok(())
}
