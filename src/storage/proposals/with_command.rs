//! A proposal and the command running it, read in one statement: what an agent's status read
//! answers ([`crate::storage::direct::PointRead::proposal_and_command`]). On PostgreSQL each
//! statement is a round trip, and this read is the one agents repeat most: one statement
//! where two took two.

use sqlx::Row;
use sqlx::postgres::PgRow;
use sqlx::types::Json;
use time::OffsetDateTime;
use uuid::Uuid;

use super::{ProposalRecord, ProposalRow, Routing, ToolProposal};
use crate::domain::record::CommandRecord;
use crate::storage::commands::{self, CommandRow};
use crate::storage::conn::{Conn, on};
use crate::storage::error::Result;
use crate::storage::in_order::InOrder;

/// The proposal's columns, then its command's (null when it has none): the same columns, in
/// the same order, as the two reads by id select.
const BY_ID: &str = concat!(
    "select p.*, c.* from (select ",
    cols!(),
    " from proposals where id = $1) p left join (select ",
    commands::cols!(),
    " from commands where proposal_id = $1 and kind = 'action') c on true"
);

/// [`BY_ID`] for many proposals at once (PostgreSQL): each proposal's columns, then its
/// command's (null when it has none).
const BY_IDS: &str = concat!(
    "select p.*, c.* from (select ",
    cols!(),
    " from proposals where id = any($1)) p left join lateral (select ",
    commands::cols!(),
    " from commands where proposal_id = p.id and kind = 'action') c on true"
);

/// A proposal by id, and the command running it (not its rollbacks), if there is one.
pub async fn by_id(
    conn: Conn<'_>,
    id: Uuid,
) -> Result<Option<(ProposalRecord, Option<CommandRecord>)>> {
    on!(conn, |c| {
        let Some(row) = sqlx::query(BY_ID).bind(id).fetch_optional(c).await? else {
            return Ok(None);
        };
        let mut columns = InOrder::new(&row, 0);
        let proposal = ProposalRow::in_order(&mut columns)?.into_record()?;
        let command = CommandRow::in_order(&mut columns)?;
        Ok(Some((
            proposal,
            command.map(CommandRow::into_record).transpose()?,
        )))
    })
}

/// The rows of the proposals among `ids` that exist, each with the command running it (not
/// its rollbacks) if there is one, in one statement, for [`decode`] (PostgreSQL: the gathered
/// point reads, [`crate::storage::direct::gathered`]).
pub async fn rows_by_ids(conn: &mut sqlx::PgConnection, ids: &[Uuid]) -> Result<Vec<PgRow>> {
    Ok(sqlx::query(BY_IDS).bind(ids).fetch_all(conn).await?)
}

/// The proposal's id in a row of [`rows_by_ids`].
pub fn row_id(row: &PgRow) -> Result<Uuid> {
    Ok(row.try_get(1)?)
}

/// A row of [`rows_by_ids`]: the proposal and its command.
pub fn decode(row: &PgRow) -> Result<(ProposalRecord, Option<CommandRecord>)> {
    let mut columns = InOrder::new(row, 0);
    let proposal = ProposalRow::in_order(&mut columns)?.into_record()?;
    let command = CommandRow::in_order(&mut columns)?;
    Ok((proposal, command.map(CommandRow::into_record).transpose()?))
}

impl ProposalRow {
    /// The row from `c`'s next columns, in `cols!`'s order.
    fn in_order<'r, R>(c: &mut InOrder<'r, R>) -> sqlx::Result<Self>
    where
        R: sqlx::Row,
        usize: sqlx::ColumnIndex<R>,
        i64: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
        Uuid: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
        String: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
        OffsetDateTime: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
        Json<Routing>: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
        Json<ToolProposal>: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
    {
        // Read in the columns' order: a struct's fields are evaluated as written.
        Ok(Self {
            seq: c.next()?,
            id: c.next()?,
            agent: c.next()?,
            status: c.next()?,
            authorization_state: c.next()?,
            request_hash: c.next()?,
            routing: c.next()?,
            contract: c.next()?,
            created_at: c.next()?,
            updated_at: c.next()?,
            expires_at: c.next()?,
            decision: c.next()?,
            decided_by: c.next()?,
            decided_at: c.next()?,
            decision_reason: c.next()?,
            decision_edit: c.next()?,
            erased_at: c.next()?,
            erased_by: c.next()?,
            erasure_reason: c.next()?,
        })
    }
}
