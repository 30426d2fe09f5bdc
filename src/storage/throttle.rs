//! Failed sign-ins, counted per account and per client address (`sign_in_throttle`), so every
//! instance on one database throttles alike. Keys are keyed hashes; times are Unix
//! milliseconds, so both backends compare them as numbers. The rule that turns a count into a
//! wait is [`crate::domain::sign_in::ThrottleRule`].

use super::conn::{Conn, on};
use super::error::Result;
use crate::domain::sign_in::ThrottleScope;

/// One counter: how many failures, the last one when (Unix ms).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Failures {
    /// Account or address.
    pub scope: ThrottleScope,
    /// Failures counted.
    pub count: i64,
    /// The last one, Unix milliseconds.
    pub last_ms: i64,
}

/// The counters of an account key and an address key (either may be missing).
pub async fn failures(conn: Conn<'_>, account: &str, address: &str) -> Result<Vec<Failures>> {
    let sql = "select scope, failures, last_failure_ms from sign_in_throttle \
               where (scope = 'account' and key = $1) or (scope = 'address' and key = $2)";
    let rows: Vec<(String, i64, i64)> = on!(conn, |c| sqlx::query_as(sql)
        .bind(account)
        .bind(address)
        .fetch_all(c)
        .await)?;
    Ok(rows
        .into_iter()
        .map(|(scope, count, last_ms)| Failures {
            scope: if scope == "account" {
                ThrottleScope::Account
            } else {
                ThrottleScope::Address
            },
            count,
            last_ms,
        })
        .collect())
}

/// Counts one failure at `now_ms`; a count whose last failure is before `forget_before_ms`
/// starts again at one. Returns the new count.
pub async fn add_failure(
    conn: Conn<'_>,
    scope: ThrottleScope,
    key: &str,
    now_ms: i64,
    forget_before_ms: i64,
) -> Result<i64> {
    let sql = "insert into sign_in_throttle (scope, key, failures, last_failure_ms) \
               values ($1, $2, 1, $3) \
               on conflict (scope, key) do update set \
               failures = case when sign_in_throttle.last_failure_ms < $4 then 1 \
               else sign_in_throttle.failures + 1 end, \
               last_failure_ms = $3 \
               returning failures";
    let (count,): (i64,) = on!(conn, |c| sqlx::query_as(sql)
        .bind(scope.as_str())
        .bind(key)
        .bind(now_ms)
        .bind(forget_before_ms)
        .fetch_one(c)
        .await)?;
    Ok(count)
}

/// Forgets one counter (an account's, after it signed in).
pub async fn clear(conn: Conn<'_>, scope: ThrottleScope, key: &str) -> Result<()> {
    let sql = "delete from sign_in_throttle where scope = $1 and key = $2";
    on!(conn, |c| sqlx::query(sql)
        .bind(scope.as_str())
        .bind(key)
        .execute(c)
        .await
        .map(|_| ()))?;
    Ok(())
}

/// Deletes counters whose last failure is before `before_ms`; how many.
pub async fn purge(conn: Conn<'_>, before_ms: i64) -> Result<u64> {
    let sql = "delete from sign_in_throttle where last_failure_ms < $1";
    let n = on!(conn, |c| sqlx::query(sql)
        .bind(before_ms)
        .execute(c)
        .await
        .map(|r| r.rows_affected()))?;
    Ok(n)
}
