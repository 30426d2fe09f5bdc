//! The lookup of an agent's gateway call still open ([`open_gateway_call`]), which the index
//! `proposals_open_gateway_call` serves and keeps to one copy.

use super::{ProposalRecord, ProposalRow, record};
use crate::storage::conn::{Conn, on};
use crate::storage::error::Result;

/// Agent `agent`'s gateway call with key prefix `prefix` (`gateway::call::call_prefix`) that is
/// open: pending, or approved or accepted and not yet run. There is at most one: the index
/// `proposals_open_gateway_call` holds it so, and serves this read (which repeats its predicate,
/// as a partial index's use asks).
pub async fn open_gateway_call(
    conn: Conn<'_>,
    agent: &str,
    prefix: &str,
) -> Result<Option<ProposalRecord>> {
    macro_rules! open_call {
        ($hex:literal) => {
            concat!(
                "select ",
                cols!(),
                " from proposals where agent = $1 and substr(idempotency_key, 1, 41) = $2 \
                 and length(idempotency_key) = 77 and substr(idempotency_key, 1, 8) = 'gateway-' \
                 and ",
                $hex,
                " and substr(idempotency_key, 41, 1) = '-' \
                 and status in ('pending', 'approved', 'accepted')"
            )
        };
    }
    let sql = conn.pick(
        open_call!("substr(idempotency_key, 9, 32) not glob '*[^0-9a-f]*'"),
        open_call!("substr(idempotency_key, 9, 32) ~ '^[0-9a-f]{32}$'"),
    );
    let row: Option<ProposalRow> = on!(conn, |c| sqlx::query_as(sql)
        .bind(agent)
        .bind(prefix)
        .fetch_optional(c)
        .await)?;
    record(row)
}
