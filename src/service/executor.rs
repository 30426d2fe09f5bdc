//! The executor's side of the queue: lease the oldest command it may run, then report on it
//! with the lease token. A report from anyone but the current lease holder changes nothing.

use serde_json::Value;
use time::OffsetDateTime;
use uuid::Uuid;

use super::{Conflict, ServiceError, Services};
use crate::audit::{Actor, AuditEvent, CommandLeased, CommandReported, ProposalFinished};
use crate::auth::token::{self, Secret};
use crate::domain::command::{CommandStatus, Outcome};
use crate::storage::commands::{self, CommandRecord, NewLease, ReportRow};
use crate::storage::{StorageError, Tx, proposals};

/// A command handed to an executor.
pub struct Leased {
    /// The command.
    pub command: CommandRecord,
    /// The lease token every report must present; shown once.
    pub lease_token: Secret,
    /// When the lease ends.
    pub lease_expires_at: OffsetDateTime,
}

/// An executor's report.
pub struct Report {
    /// The command.
    pub command_id: Uuid,
    /// The lease token it was handed.
    pub lease_token: String,
    /// Succeeded or failed.
    pub outcome: Outcome,
    /// The `result` or `error` body.
    pub body: Value,
}

impl Services {
    /// Leases the oldest command `executor` may run for `lease_seconds`, if any.
    pub async fn lease(
        &self,
        executor: &str,
        lease_seconds: u64,
    ) -> Result<Option<Leased>, ServiceError> {
        let secret = token::new_lease_token();
        let token_hash = secret.hash();
        let now = self.now();
        let expires_at =
            now + time::Duration::seconds(i64::try_from(lease_seconds).unwrap_or(i64::MAX));
        let executor_name = executor.to_owned();
        let leased = self
            .store()
            .write(move |tx| {
                Box::pin(async move {
                    let lease = NewLease {
                        executor: &executor_name,
                        lease_token_hash: &token_hash,
                        now,
                        expires_at,
                    };
                    take_lease(tx, &lease).await
                })
            })
            .await?;
        Ok(leased.map(|command| {
            tracing::info!(command.id = %command.id, proposal.id = %command.proposal_id, "command leased");
            Leased {
                command,
                lease_token: secret,
                lease_expires_at: expires_at,
            }
        }))
    }

    /// Records `executor`'s report on a command it holds.
    pub async fn report(
        &self,
        executor: &str,
        report: Report,
    ) -> Result<CommandRecord, ServiceError> {
        let now = self.now();
        let executor_name = executor.to_owned();
        let outcome = report.outcome;
        let command = self
            .store()
            .write(move |tx| {
                Box::pin(async move { write_report(tx, &executor_name, report, now).await })
            })
            .await?;
        tracing::info!(command.id = %command.id, outcome = %outcome, "command reported");
        Ok(command)
    }
}

async fn take_lease(
    tx: &mut Tx,
    lease: &NewLease<'_>,
) -> Result<Option<CommandRecord>, ServiceError> {
    let Some(command) = commands::claim_next(tx.conn(), lease).await? else {
        return Ok(None);
    };
    let leased = CommandLeased {
        command_id: command.id,
        before: if command.attempts > 1 {
            CommandStatus::Leased
        } else {
            CommandStatus::Queued
        },
        proposal_id: command.proposal_id,
        attempt: command.attempts,
        lease_expires_at: lease
            .expires_at
            .format(&time::format_description::well_known::Rfc3339)
            .ok(),
    };
    tx.record(
        lease.now,
        &Actor::executor(lease.executor),
        AuditEvent::CommandLeased(leased),
    );
    Ok(Some(command))
}

async fn write_report(
    tx: &mut Tx,
    executor: &str,
    report: Report,
    now: OffsetDateTime,
) -> Result<CommandRecord, ServiceError> {
    let (result, error) = match report.outcome {
        Outcome::Succeeded => (Some(&report.body), None),
        Outcome::Failed => (None, Some(&report.body)),
    };
    let token_hash = token::hash(&report.lease_token);
    let row = ReportRow {
        command_id: report.command_id,
        executor,
        lease_token_hash: &token_hash,
        status: report.outcome.command_status(),
        result,
        error,
        now,
    };
    let Some(command) = commands::finish_leased(tx.conn(), &row).await? else {
        return Err(match commands::by_id(tx.conn(), report.command_id).await? {
            None => ServiceError::NotFound,
            Some(c) if !c.held => ServiceError::Conflict(Conflict::CommandNotLeased(c.status)),
            Some(_) => ServiceError::Conflict(Conflict::LeaseTokenMismatch),
        });
    };
    let Some(before) = proposals::executable_status(tx.conn(), command.proposal_id).await? else {
        return Err(StorageError::Corrupt(format!(
            "command {} reported but its proposal was not approved or accepted",
            command.id
        ))
        .into());
    };
    let proposal_status = report.outcome.proposal_status();
    proposals::set_status(tx.conn(), command.proposal_id, proposal_status, now).await?;
    let actor = Actor::executor(executor);
    let reported = CommandReported {
        command_id: command.id,
        outcome: report.outcome,
        proposal_id: command.proposal_id,
        attempt: command.attempts,
        late: command.lease_expires_at.is_some_and(|t| t < now),
    };
    tx.record(now, &actor, AuditEvent::CommandReported(reported));
    let finished = ProposalFinished {
        proposal_id: command.proposal_id,
        before,
        outcome: report.outcome,
        command_id: command.id,
    };
    tx.record(now, &actor, AuditEvent::ProposalFinished(finished));
    Ok(command)
}
