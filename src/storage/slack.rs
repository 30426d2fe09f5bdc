//! Deciding from Slack: people by their Slack user id, and the signed requests already seen
//! (a replay is refused).

use time::OffsetDateTime;

use super::accounts::{UserRecord, user_by_username};
use super::conn::{Conn, on};
use super::error::{Result, parse};
use crate::domain::principal::Role;

/// Maps `username` to Slack user `slack_id` (`None`: unmaps); `false` if there is no such user.
pub async fn set_slack_id(conn: Conn<'_>, username: &str, slack_id: Option<&str>) -> Result<bool> {
    let sql = "update users set slack_id = $2 where username = $1";
    let n = on!(conn, |c| sqlx::query(sql)
        .bind(username)
        .bind(slack_id)
        .execute(c)
        .await
        .map(|r| r.rows_affected()))?;
    Ok(n > 0)
}

/// The person mapped to Slack user `slack_id`.
pub async fn user_by_slack_id(mut conn: Conn<'_>, slack_id: &str) -> Result<Option<UserRecord>> {
    let sql = "select username, role from users where slack_id = $1";
    let row: Option<(String, Option<String>)> = on!(conn.reborrow(), |c| sqlx::query_as(sql)
        .bind(slack_id)
        .fetch_optional(c)
        .await)?;
    let Some((username, role)) = row else {
        return Ok(None);
    };
    if let Some(role) = role {
        parse("role", &role, Role::parse)?;
    }
    user_by_username(conn, &username).await
}

/// Remembers a signed request; `false` if it was seen before (a replay). Forgets those older
/// than `forget_before`.
pub async fn remember_request(
    mut conn: Conn<'_>,
    signature: &str,
    at: OffsetDateTime,
    forget_before: OffsetDateTime,
) -> Result<bool> {
    let sql = "delete from slack_requests where at < $1";
    on!(conn.reborrow(), |c| sqlx::query(sql)
        .bind(forget_before)
        .execute(c)
        .await
        .map(|_| ()))?;
    let sql = "insert into slack_requests (signature, at) values ($1, $2) on conflict do nothing";
    let n = on!(conn, |c| sqlx::query(sql)
        .bind(signature)
        .bind(at)
        .execute(c)
        .await
        .map(|r| r.rows_affected()))?;
    Ok(n > 0)
}
