//! The `commands` row as stored and how it becomes a [`CommandRecord`]: with the hash of its
//! spec as approved (a lease), with its proposal's status (a report), or settled. Shared by the
//! queue's statements ([`super`]) and a group's ([`super::staged`]).

use serde_json::Value;
use sqlx::types::Json;
use time::OffsetDateTime;
use uuid::Uuid;

use super::ask::{Approval, Claimed, ProposalSeen};
use crate::domain::command::retry::SideEffect;
use crate::domain::command::{CommandKind, CommandSpec, CommandStatus, Resolution};
use crate::domain::lifecycle::ProposalStatus;
use crate::domain::record::CommandRecord;
use crate::storage::direct::raw::Cols;
use crate::storage::error::{Result, StorageError, parse};
use crate::storage::in_order::InOrder;

/// A `commands` row as stored.
#[derive(sqlx::FromRow)]
pub(crate) struct CommandRow {
    pub(super) id: Uuid,
    pub(super) proposal_id: Uuid,
    pub(super) kind: String,
    pub(super) rollback_of: Option<Uuid>,
    pub(super) status: String,
    pub(super) spec: Json<CommandSpec>,
    pub(super) attempts: i32,
    pub(super) leased_by: Option<String>,
    pub(super) lease_token_hash: Option<String>,
    pub(super) lease_expires_at: Option<OffsetDateTime>,
    pub(super) available_at: OffsetDateTime,
    pub(super) execute_by: Option<OffsetDateTime>,
    pub(super) run_deadline: Option<OffsetDateTime>,
    pub(super) interruption: Option<String>,
    pub(super) side_effect: Option<String>,
    pub(super) result: Option<Json<Value>>,
    pub(super) error: Option<Json<Value>>,
    pub(super) resolution: Option<String>,
    pub(super) resolved_by: Option<String>,
    pub(super) resolved_at: Option<OffsetDateTime>,
    pub(super) resolution_reason: Option<String>,
    pub(super) created_at: OffsetDateTime,
    pub(super) completed_at: Option<OffsetDateTime>,
}

impl CommandRow {
    /// The row from `c`'s next columns, in `super::cols!`'s order; `None` where they are
    /// null (a left join that found no command), read no further than the first.
    pub(crate) fn in_order<'r, R>(c: &mut InOrder<'r, R>) -> sqlx::Result<Option<Self>>
    where
        R: sqlx::Row,
        usize: sqlx::ColumnIndex<R>,
        Uuid: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
        String: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
        i32: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
        OffsetDateTime: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
        Json<CommandSpec>: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
        Json<Value>: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
    {
        let Some(id) = c.next::<Option<Uuid>>()? else {
            return Ok(None);
        };
        // Read in the columns' order: a struct's fields are evaluated as written.
        Ok(Some(Self {
            id,
            proposal_id: c.next()?,
            kind: c.next()?,
            rollback_of: c.next()?,
            status: c.next()?,
            spec: c.next()?,
            attempts: c.next()?,
            leased_by: c.next()?,
            lease_token_hash: c.next()?,
            lease_expires_at: c.next()?,
            available_at: c.next()?,
            execute_by: c.next()?,
            run_deadline: c.next()?,
            interruption: c.next()?,
            side_effect: c.next()?,
            result: c.next()?,
            error: c.next()?,
            resolution: c.next()?,
            resolved_by: c.next()?,
            resolved_at: c.next()?,
            resolution_reason: c.next()?,
            created_at: c.next()?,
            completed_at: c.next()?,
        }))
    }
}

/// A command row and the hash of its spec as approved.
#[derive(sqlx::FromRow)]
pub(super) struct WithApproval {
    #[sqlx(flatten)]
    pub(super) row: CommandRow,
    pub(super) approved_spec_sha256: Option<String>,
}

impl WithApproval {
    pub(super) fn into_claimed(self) -> Result<Claimed> {
        Ok(Claimed {
            command: self.row.into_record()?,
            approval: Approval::of(self.approved_spec_sha256),
        })
    }
}

/// A command row and its proposal's status.
#[derive(sqlx::FromRow)]
pub(super) struct WithProposal {
    #[sqlx(flatten)]
    pub(super) row: CommandRow,
    pub(super) proposal_status: Option<String>,
}

impl WithProposal {
    pub(super) fn into_parts(self) -> Result<(CommandRecord, Option<ProposalStatus>)> {
        let status = self
            .proposal_status
            .map(|s| parse("proposal status", &s, ProposalStatus::parse))
            .transpose()?;
        Ok((self.row.into_record()?, status))
    }
}

impl CommandRow {
    /// The row as a direct read stepped it (see [`crate::storage::direct`]).
    pub(super) fn from_direct(c: &Cols<'_, '_>) -> Result<Self> {
        let attempts = c.int("attempts")?;
        Ok(Self {
            id: c.uuid("id")?,
            proposal_id: c.uuid("proposal_id")?,
            kind: c.text("kind")?,
            rollback_of: c.opt_uuid("rollback_of")?,
            status: c.text("status")?,
            spec: Json(c.json("spec")?),
            attempts: i32::try_from(attempts)
                .map_err(|_| StorageError::Corrupt(format!("attempts {attempts}")))?,
            leased_by: c.opt_text("leased_by")?,
            lease_token_hash: c.opt_text("lease_token_hash")?,
            lease_expires_at: c.opt_time("lease_expires_at")?,
            available_at: c.time("available_at")?,
            execute_by: c.opt_time("execute_by")?,
            run_deadline: c.opt_time("run_deadline")?,
            interruption: c.opt_text("interruption")?,
            side_effect: c.opt_text("side_effect")?,
            result: c.opt_json("result")?.map(Json),
            error: c.opt_json("error")?.map(Json),
            resolution: c.opt_text("resolution")?,
            resolved_by: c.opt_text("resolved_by")?,
            resolved_at: c.opt_time("resolved_at")?,
            resolution_reason: c.opt_text("resolution_reason")?,
            created_at: c.time("created_at")?,
            completed_at: c.opt_time("completed_at")?,
        })
    }

    pub(crate) fn into_record(self) -> Result<CommandRecord> {
        Ok(CommandRecord {
            id: self.id,
            proposal_id: self.proposal_id,
            kind: parse("command kind", &self.kind, CommandKind::parse)?,
            rollback_of: self.rollback_of,
            status: parse("command status", &self.status, CommandStatus::parse)?,
            spec: self.spec.0,
            attempts: self.attempts,
            leased_by: self.leased_by,
            lease_expires_at: self.lease_expires_at,
            available_at: self.available_at,
            execute_by: self.execute_by,
            run_deadline: self.run_deadline,
            interruption: self.interruption,
            side_effect: self
                .side_effect
                .map(|s| parse("side effect", &s, SideEffect::parse))
                .transpose()?,
            result: self.result.map(|j| j.0),
            error: self.error.map(|j| j.0),
            resolution: self
                .resolution
                .map(|s| parse("resolution", &s, Resolution::parse))
                .transpose()?,
            resolved_by: self.resolved_by,
            resolved_at: self.resolved_at,
            resolution_reason: self.resolution_reason,
            created_at: self.created_at,
            completed_at: self.completed_at,
            held: self.lease_token_hash.is_some(),
        })
    }
}

/// The record of a row, if there is one.
pub(super) fn record(row: Option<CommandRow>) -> Result<Option<CommandRecord>> {
    row.map(CommandRow::into_record).transpose()
}

/// The records of rows.
pub(super) fn records(rows: Vec<CommandRow>) -> Result<Vec<CommandRecord>> {
    rows.into_iter().map(CommandRow::into_record).collect()
}

/// A settled command, its proposal's status, and whether the statement moved the proposal.
#[derive(sqlx::FromRow)]
pub(super) struct Settled {
    #[sqlx(flatten)]
    with: WithProposal,
    proposal_moved: bool,
}

impl Settled {
    /// The command and what the statement saw of its proposal.
    pub(super) fn into_parts(self) -> Result<(CommandRecord, Option<ProposalSeen>)> {
        let (command, status) = self.with.into_parts()?;
        let seen = status.map(if self.proposal_moved {
            ProposalSeen::Moved
        } else {
            ProposalSeen::Read
        });
        Ok((command, seen))
    }

    /// The command row alone (a lease's, in a statement that also settles).
    pub(super) fn into_row(self) -> CommandRow {
        self.with.row
    }
}

/// A leased row as a lease's token hash and what it claimed.
pub(super) fn into_claim(r: WithApproval) -> Result<(String, Claimed)> {
    let hash = r.row.lease_token_hash.clone().unwrap_or_default();
    Ok((hash, r.into_claimed()?))
}
