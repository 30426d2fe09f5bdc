//! Who may change the schema on PostgreSQL, and whether it needs changing.
//!
//! Least privilege: the database's owner runs the migrations (`countersign migrate`), and
//! `serve` runs as a role that may read and append to the audit trail and do the app's work on
//! the other tables, but owns nothing: it cannot drop or disable the triggers that keep
//! `audit_events` append-only, and cannot delete, update or truncate it. [`SERVING_GRANTS`] is
//! that role's whole set of rights.
//!
//! So that such a role can start at all, a connection first reads `_sqlx_migrations` and runs
//! the migrator (DDL, even `create table if not exists`) only when something is pending.

use std::collections::HashSet;

use sqlx::migrate::Migrator;
use sqlx::{Connection, PgConnection};

use super::error::{Result, StorageError};

/// A PostgreSQL role name as `--grant-to` takes it: lowercase letters, digits and `_`, not
/// starting with a digit, at most 63 bytes (so it never needs quoting rules beyond `"…"`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RoleName(String);

impl RoleName {
    /// Parses a role name.
    pub fn parse(s: &str) -> Option<Self> {
        let mut chars = s.chars();
        let first_ok = chars
            .next()
            .is_some_and(|c| c.is_ascii_lowercase() || c == '_');
        let rest_ok = chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
        (first_ok && rest_ok && s.len() <= 63).then(|| Self(s.to_owned()))
    }

    /// The name.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for RoleName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// Everything the serving role is granted (`{role}` stands for its quoted name): read and
/// append the trail, move the chain head, the app's own tables, the session store, and the
/// migration record `serve` checks. Nothing here allows delete, update or truncate on
/// `audit_events`, or any DDL; the role owns nothing, so triggers stay out of its reach.
pub const SERVING_GRANTS: &[&str] = &[
    "grant usage on schema public to {role}",
    "grant select, insert on audit_events, audit_checkpoints, audit_salt to {role}",
    "grant select, update on audit_chain to {role}",
    "grant select, insert, update on proposals, approvals, commands, users, api_tokens \
     to {role}",
    "grant select, insert, delete on paused_tools to {role}",
    "grant select, insert on gateway_definitions to {role}",
    "grant select, insert, update on gateway_tools, standing_grants, decision_stats to {role}",
    "grant select, insert, update, delete on webhook_deliveries, webhook_attempts, notifications \
     to {role}",
    "grant select, insert, delete on slack_requests to {role}",
    "grant select, insert, delete on proposal_alerts to {role}",
    "grant select, insert, update, delete on passkeys, passkey_ceremonies to {role}",
    "grant select, insert on passkey_assertions to {role}",
    "grant select, insert, update on policy_versions, policy_active, policy_changes, \
     policy_shadow_transitions to {role}",
    "grant select, insert on policy_activations, policy_shadow_differences to {role}",
    "grant update (told_at) on policy_activations to {role}",
    "grant select, insert, update, delete on sign_in_throttle to {role}",
    "grant select on _sqlx_migrations to {role}",
    "grant usage on schema tower_sessions to {role}",
    "grant select, insert, update, delete on tower_sessions.session to {role}",
];

/// Grants `role` every one of [`SERVING_GRANTS`] on the PostgreSQL database at `url`, in one
/// transaction. Run as the owner, after migrating. Refuses a role that does not exist, a
/// superuser (it bypasses every grant) and the connecting role itself (it owns the schema).
pub async fn grant_serving(url: &str, role: &RoleName) -> Result<()> {
    let mut conn = PgConnection::connect(url).await?;
    let refuse = |why: String| Err(StorageError::Privileges(why));
    match role_is_superuser(&mut conn, role).await? {
        None => {
            return refuse(format!(
                "role `{role}` does not exist: create it first, e.g. \
                 `create role {role} login password '…'`"
            ));
        }
        Some(true) => {
            return refuse(format!(
                "role `{role}` is a superuser, which bypasses every grant: serve as a role \
                 without superuser"
            ));
        }
        Some(false) => {}
    }
    if current_user(&mut conn).await? == role.as_str() {
        return refuse(format!(
            "`{role}` is the role running the migrations, which owns the schema: serve as \
             another role"
        ));
    }
    let mut tx = conn.begin().await?;
    for template in SERVING_GRANTS {
        grant(&mut tx, template, role).await?;
    }
    tx.commit().await?;
    Ok(())
}

/// Runs one of [`SERVING_GRANTS`] for `role`.
pub async fn grant(conn: &mut PgConnection, template: &str, role: &RoleName) -> Result<()> {
    let sql = template.replace("{role}", &format!("\"{role}\""));
    sqlx::query(&sql).execute(conn).await?;
    Ok(())
}

/// Whether `role` exists and is a superuser (`None`: no such role).
pub async fn role_is_superuser(conn: &mut PgConnection, role: &RoleName) -> Result<Option<bool>> {
    let sql = "select rolsuper from pg_roles where rolname = $1";
    let row: Option<(bool,)> = sqlx::query_as(sql)
        .bind(role.as_str())
        .fetch_optional(conn)
        .await?;
    Ok(row.map(|(s,)| s))
}

/// The role this connection runs as.
pub async fn current_user(conn: &mut PgConnection) -> Result<String> {
    let sql = "select current_user::text";
    let (user,): (String,) = sqlx::query_as(sql).fetch_one(conn).await?;
    Ok(user)
}

/// The migrations recorded as applied, by version and checksum (none if the record is
/// missing: a new database).
pub async fn applied_migrations(conn: &mut PgConnection) -> Result<Vec<(i64, Vec<u8>)>> {
    let sql = "select version, checksum from _sqlx_migrations where success";
    match sqlx::query_as(sql).fetch_all(conn).await {
        Ok(rows) => Ok(rows),
        Err(sqlx::Error::Database(e)) if e.code().as_deref() == Some(UNDEFINED_TABLE) => {
            Ok(Vec::new())
        }
        Err(e) => Err(e.into()),
    }
}

/// Whether the session store's table exists (tower-sessions creates it outside the migrations).
pub async fn sessions_table_exists(conn: &mut PgConnection) -> Result<bool> {
    let sql = "select to_regclass('tower_sessions.session') is not null";
    let (exists,): (bool,) = sqlx::query_as(sql).fetch_one(conn).await?;
    Ok(exists)
}

const UNDEFINED_TABLE: &str = "42P01";
const INSUFFICIENT_PRIVILEGE: &str = "42501";

/// The migrations of `migrator` not applied (or applied with other contents) according to
/// `applied`; and whether `applied` holds versions `migrator` does not know.
pub fn pending(migrator: &Migrator, applied: &[(i64, Vec<u8>)]) -> (usize, bool) {
    let ups: Vec<_> = migrator
        .iter()
        .filter(|m| !m.migration_type.is_down_migration())
        .collect();
    let done: HashSet<(i64, &[u8])> = applied.iter().map(|(v, c)| (*v, c.as_slice())).collect();
    let pending = ups
        .iter()
        .filter(|m| !done.contains(&(m.version, &*m.checksum)))
        .count();
    let known: HashSet<i64> = ups.iter().map(|m| m.version).collect();
    let unknown = applied.iter().any(|(v, _)| !known.contains(v));
    (pending, unknown)
}

/// Whether `e` is PostgreSQL refusing this role a right.
pub fn is_permission_denied(e: &StorageError) -> bool {
    let db = match e {
        StorageError::Database(sqlx::Error::Database(db)) => db,
        StorageError::Migrate(sqlx::migrate::MigrateError::Execute(sqlx::Error::Database(db)))
        | StorageError::Migrate(sqlx::migrate::MigrateError::ExecuteMigration(
            sqlx::Error::Database(db),
            _,
        )) => db,
        _ => return false,
    };
    db.code().as_deref() == Some(INSUFFICIENT_PRIVILEGE)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn role_names_are_plain_identifiers() {
        for ok in ["countersign_app", "_x", "app2"] {
            assert_eq!(RoleName::parse(ok).map(|r| r.to_string()), Some(ok.into()));
        }
        let long = "a".repeat(64);
        for bad in [
            "",
            "2app",
            "App",
            "app-x",
            "a\"; drop table x; --",
            "a b",
            &long,
        ] {
            assert_eq!(RoleName::parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn every_grant_names_the_role_and_none_hands_over_the_trail() {
        for g in SERVING_GRANTS {
            assert!(g.starts_with("grant ") && g.ends_with(" to {role}"), "{g}");
            assert!(!g.contains(" all ") && !g.contains("truncate") && !g.contains("trigger"));
            if g.contains("audit_events") {
                assert!(!g.contains("update") && !g.contains("delete"), "{g}");
            }
        }
    }
}
