//! Pruning operational rows past their retention, one small batch per statement (see
//! [`crate::domain::retention`]). Notifications and webhook deliveries have time-ordered ids
//! (UUIDv7), so "older than" is a range of the primary key, read without an index of its own;
//! rows still pending are never touched. Alerts go only once their proposal no longer waits,
//! so an escalation is never raised twice. Web sessions go once they have ended, read by an
//! index on when each ends (the session store's table, `tower_sessions`).

use sqlx::types::Json;
use time::OffsetDateTime;
use uuid::Uuid;

use super::conn::{Conn, on};
use super::error::Result;

/// The smallest UUIDv7 of the millisecond `at`: every id made before `at` sorts below it.
pub fn first_id_at(at: OffsetDateTime) -> Uuid {
    let ms = u64::try_from(at.unix_timestamp_nanos() / 1_000_000).unwrap_or(0);
    uuid::Builder::from_unix_timestamp_millis(ms, &[0; 10]).into_uuid()
}

/// Deletes up to `limit` notifications made before `before` that no longer wait to be sent;
/// how many.
pub async fn prune_notifications(
    conn: Conn<'_>,
    before: OffsetDateTime,
    limit: u32,
) -> Result<u64> {
    let sql = "delete from notifications where id in (select id from notifications \
               where id < $1 and state <> 'pending' order by id limit $2)";
    let n = on!(conn, |c| sqlx::query(sql)
        .bind(first_id_at(before))
        .bind(i64::from(limit))
        .execute(c)
        .await
        .map(|r| r.rows_affected()))?;
    Ok(n)
}

/// Deletes up to `limit` agents' webhook deliveries made before `before` that were delivered
/// or gave up, with their attempts; how many deliveries. Run in one transaction: the chosen
/// deliveries are locked (PostgreSQL) so none is queued again between the two deletes.
pub async fn prune_webhook_deliveries(
    mut conn: Conn<'_>,
    before: OffsetDateTime,
    limit: u32,
) -> Result<u64> {
    let choose = conn.pick(
        "select id from webhook_deliveries where id < $1 and state <> 'pending' \
         order by id limit $2",
        "select id from webhook_deliveries where id < $1 and state <> 'pending' \
         order by id limit $2 for update",
    );
    let ids: Vec<Uuid> = on!(conn.reborrow(), |c| sqlx::query_scalar(choose)
        .bind(first_id_at(before))
        .bind(i64::from(limit))
        .fetch_all(c)
        .await)?;
    if ids.is_empty() {
        return Ok(0);
    }
    let (attempts, deliveries) = (
        conn.pick(
            "delete from webhook_attempts where delivery_id in \
             (select unhex(replace(value, '-', '')) from json_each($1))",
            "delete from webhook_attempts where delivery_id in \
             (select value::uuid from jsonb_array_elements_text($1))",
        ),
        conn.pick(
            "delete from webhook_deliveries where id in \
             (select unhex(replace(value, '-', '')) from json_each($1))",
            "delete from webhook_deliveries where id in \
             (select value::uuid from jsonb_array_elements_text($1))",
        ),
    );
    on!(conn.reborrow(), |c| sqlx::query(attempts)
        .bind(Json(&ids))
        .execute(c)
        .await
        .map(drop))?;
    let n = on!(conn, |c| sqlx::query(deliveries)
        .bind(Json(&ids))
        .execute(c)
        .await
        .map(|r| r.rows_affected()))?;
    Ok(n)
}

/// Deletes up to `limit` alerts raised before `before` for proposals that no longer wait;
/// how many.
pub async fn prune_alerts(conn: Conn<'_>, before: OffsetDateTime, limit: u32) -> Result<u64> {
    let sql = conn.pick(
        "delete from proposal_alerts where (proposal_id, kind, tier) in \
         (select a.proposal_id, a.kind, a.tier from proposal_alerts a \
          where julianday(a.at) < julianday($1) and not exists (select 1 from proposals p \
          where p.id = a.proposal_id and p.status = 'pending') limit $2)",
        "delete from proposal_alerts where (proposal_id, kind, tier) in \
         (select a.proposal_id, a.kind, a.tier from proposal_alerts a \
          where a.at < $1 and not exists (select 1 from proposals p \
          where p.id = a.proposal_id and p.status = 'pending') limit $2)",
    );
    delete_before(conn, sql, before, limit).await
}

/// Deletes up to `limit` web sessions that ended before `before`; how many. The session
/// store (tower-sessions' sqlx store) keeps them in its own table, which the migrations
/// index by end.
pub async fn prune_sessions(conn: Conn<'_>, before: OffsetDateTime, limit: u32) -> Result<u64> {
    let sql = conn.pick(
        "delete from tower_sessions where id in (select id from tower_sessions \
         where julianday(expiry_date) < julianday($1) limit $2)",
        "delete from tower_sessions.session where id in (select id from \
         tower_sessions.session where expiry_date < $1 limit $2)",
    );
    delete_before(conn, sql, before, limit).await
}

/// Runs `sql`, a delete of up to `$2` rows from before `$1`; how many it deleted.
async fn delete_before(
    conn: Conn<'_>,
    sql: &'static str,
    before: OffsetDateTime,
    limit: u32,
) -> Result<u64> {
    let n = on!(conn, |c| sqlx::query(sql)
        .bind(before)
        .bind(i64::from(limit))
        .execute(c)
        .await
        .map(|r| r.rows_affected()))?;
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_made_before_a_moment_sort_below_its_first_id() {
        let at = OffsetDateTime::from_unix_timestamp(1_700_000_000).expect("time");
        let bound = first_id_at(at);
        let before =
            uuid::Builder::from_unix_timestamp_millis(1_699_999_999_999, &[0xff; 10]).into_uuid();
        let after =
            uuid::Builder::from_unix_timestamp_millis(1_700_000_000_000, &[1; 10]).into_uuid();
        assert!(before < bound && bound < after);
        assert!(before.as_bytes() < bound.as_bytes());
    }
}
