//! `countersign proposal erase ID --reason ...`: GDPR erasure from the command line. It removes
//! a settled proposal's personal data values (and its command's), keeps its keys, request hash
//! and decision, records `proposal.erased` (actor `system:cli`), and leaves the chain verifying.

use clap::Subcommand;
use uuid::Uuid;

use super::{Database, services};
use crate::domain::principal::Principal;

#[derive(Debug, Subcommand)]
pub(crate) enum ProposalCommand {
    /// Erase a settled proposal's personal data values (GDPR).
    Erase {
        #[command(flatten)]
        db: Database,
        /// The proposal id.
        id: Uuid,
        /// Why (kept on the proposal; the trail records its length and hash).
        #[arg(long)]
        reason: String,
    },
}

pub(crate) async fn run(command: ProposalCommand) -> Result<(), String> {
    match command {
        ProposalCommand::Erase { db, id, reason } => {
            let p = services(&db.database_url)
                .await?
                .erase_proposal(&Principal::Operator, id, &reason)
                .await
                .map_err(|e| format!("proposal {id}: {e}"))?;
            println!(
                "erased: proposal {} ({}), status {}",
                p.id, p.contract.tool.name, p.status
            );
            Ok(())
        }
    }
}
