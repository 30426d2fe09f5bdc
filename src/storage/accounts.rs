//! People and machine principals: users and API tokens.

use crate::domain::sso::RoleSource;
use time::OffsetDateTime;
use uuid::Uuid;

use super::conn::{Conn, on};
use super::error::{Result, parse};
use crate::domain::principal::{Role, TokenKind};

// The record is the domain's; re-exported for the service, which names it here.
pub use crate::domain::record::TokenRecord;

/// A person who signs in.
#[derive(Clone)]
pub struct UserRecord {
    /// Id.
    pub id: Uuid,
    /// Unique name.
    pub username: String,
    /// argon2id PHC string ([`NO_PASSWORD`] for an account that signs in only through single
    /// sign-on). Deliberately not `Debug`.
    pub password_hash: String,
    /// Role; `None` until granted (an account made at its first single sign-on without a
    /// mapped role): such an account may do nothing.
    pub role: Option<Role>,
    /// Disabled users cannot sign in.
    pub disabled: bool,
    /// Moves on when every session of the account must end (disabled, password reset);
    /// a session signed in under another epoch is over.
    pub session_epoch: i64,
}

/// A new token: only the hash of the secret is stored.
pub struct NewToken {
    /// Id.
    pub id: Uuid,
    /// Agent or executor.
    pub kind: TokenKind,
    /// Principal name.
    pub name: String,
    /// sha256 hex of the token.
    pub token_hash: String,
    /// An executor token's tool scope (comma-separated globs).
    pub tool_scope: Option<String>,
    /// An agent token's operator (a username).
    pub operator: Option<String>,
    /// The person who made it at `/admin/tokens` (`None` at the shell): they saw its secret.
    pub created_by: Option<String>,
    /// An agent token's callback URL, checked.
    pub webhook_url: Option<String>,
    /// The secret that signs its deliveries (shown once).
    pub webhook_secret: Option<String>,
}

#[derive(sqlx::FromRow)]
struct UserRow {
    id: Uuid,
    username: String,
    password_hash: String,
    role: Option<String>,
    disabled_at: Option<OffsetDateTime>,
    session_epoch: i64,
}

impl UserRow {
    fn into_record(self) -> Result<UserRecord> {
        Ok(UserRecord {
            id: self.id,
            username: self.username,
            password_hash: self.password_hash,
            role: self
                .role
                .map(|r| parse("role", &r, Role::parse))
                .transpose()?,
            disabled: self.disabled_at.is_some(),
            session_epoch: self.session_epoch,
        })
    }
}

/// What `password_hash` holds for an account without a password: not a PHC string, so no
/// password ever matches it.
pub const NO_PASSWORD: &str = "!single-sign-on";

#[derive(sqlx::FromRow)]
struct TokenRow {
    id: Uuid,
    kind: String,
    name: String,
    revoked_at: Option<OffsetDateTime>,
    tool_scope: Option<String>,
}

/// How many users exist.
pub async fn count_users(conn: Conn<'_>) -> Result<i64> {
    let (n,): (i64,) = on!(conn, |c| sqlx::query_as("select count(*) from users")
        .fetch_one(c)
        .await)?;
    Ok(n)
}

/// Adds a user; `false` if the name is taken.
pub async fn insert_user(conn: Conn<'_>, user: &UserRecord, now: OffsetDateTime) -> Result<bool> {
    let sql = "insert into users (id, username, password_hash, role, created_at, role_source) \
               values ($1, $2, $3, $4, $5, case when $4 is null then null else 'admin' end) \
               on conflict do nothing";
    let added = on!(conn, |c| sqlx::query(sql)
        .bind(user.id)
        .bind(&user.username)
        .bind(&user.password_hash)
        .bind(user.role.map(Role::as_str))
        .bind(now)
        .execute(c)
        .await
        .map(|r| r.rows_affected()))?;
    Ok(added > 0)
}

/// The columns of a [`UserRecord`], for each query that reads one.
macro_rules! select_user {
    () => {
        "select id, username, password_hash, role, disabled_at, session_epoch from users "
    };
}

/// A user by name.
pub async fn user_by_username(conn: Conn<'_>, username: &str) -> Result<Option<UserRecord>> {
    let sql = concat!(select_user!(), "where username = $1");
    let row: Option<UserRow> = on!(conn, |c| sqlx::query_as(sql)
        .bind(username)
        .fetch_optional(c)
        .await)?;
    row.map(UserRow::into_record).transpose()
}

/// The account linked to the identity provider's `subject` at `issuer` (single sign-on).
pub async fn user_by_oidc_subject(
    conn: Conn<'_>,
    issuer: &str,
    subject: &str,
) -> Result<Option<UserRecord>> {
    let sql = concat!(
        select_user!(),
        "where oidc_issuer = $1 and oidc_subject = $2"
    );
    let row: Option<UserRow> = on!(conn, |c| sqlx::query_as(sql)
        .bind(issuer)
        .bind(subject)
        .fetch_optional(c)
        .await)?;
    row.map(UserRow::into_record).transpose()
}

/// Links a new account to the identity provider's `subject` at `issuer`, with `domains`
/// (`None`: every domain); `false` if the name is taken or the identity already has an account.
pub async fn insert_oidc_user(
    conn: Conn<'_>,
    user: &UserRecord,
    (issuer, subject): (&str, &str),
    domains: Option<&[String]>,
    now: OffsetDateTime,
) -> Result<bool> {
    let sql = "insert into users (id, username, password_hash, role, created_at, domains, \
               oidc_issuer, oidc_subject, role_source) values ($1, $2, $3, $4, $5, $6, $7, $8, \
               case when $4 is null then null else 'claim' end) on conflict do nothing";
    let added = on!(conn, |c| sqlx::query(sql)
        .bind(user.id)
        .bind(&user.username)
        .bind(&user.password_hash)
        .bind(user.role.map(Role::as_str))
        .bind(now)
        .bind(domains.map(sqlx::types::Json))
        .bind(issuer)
        .bind(subject)
        .execute(c)
        .await
        .map(|r| r.rows_affected()))?;
    Ok(added > 0)
}

/// Whether any account has this username.
pub async fn username_taken(conn: Conn<'_>, username: &str) -> Result<bool> {
    let sql = "select count(*) from users where username = $1";
    let (n,): (i64,) = on!(conn, |c| sqlx::query_as(sql)
        .bind(username)
        .fetch_one(c)
        .await)?;
    Ok(n > 0)
}

/// Stores a token's hash.
pub async fn insert_token(conn: Conn<'_>, token: &NewToken, now: OffsetDateTime) -> Result<()> {
    let sql = "insert into api_tokens (id, kind, name, token_hash, created_at, tool_scope, \
               operator, webhook_url, webhook_secret, created_by) \
               values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)";
    on!(conn, |c| sqlx::query(sql)
        .bind(token.id)
        .bind(token.kind.as_str())
        .bind(&token.name)
        .bind(&token.token_hash)
        .bind(now)
        .bind(&token.tool_scope)
        .bind(&token.operator)
        .bind(&token.webhook_url)
        .bind(&token.webhook_secret)
        .bind(&token.created_by)
        .execute(c)
        .await
        .map(|_| ()))?;
    Ok(())
}

/// The principal behind a token hash.
pub async fn token_by_hash(conn: Conn<'_>, token_hash: &str) -> Result<Option<TokenRecord>> {
    let sql = "select id, kind, name, revoked_at, tool_scope from api_tokens where token_hash = $1";
    let row: Option<TokenRow> = on!(conn, |c| sqlx::query_as(sql)
        .bind(token_hash)
        .fetch_optional(c)
        .await)?;
    row.map(|r| {
        Ok(TokenRecord {
            id: r.id,
            kind: parse("token kind", &r.kind, TokenKind::parse)?,
            name: r.name,
            revoked: r.revoked_at.is_some(),
            tool_scope: r.tool_scope,
        })
    })
    .transpose()
}

/// The hashes of every token not revoked.
pub async fn active_token_hashes(conn: Conn<'_>) -> Result<Vec<String>> {
    let sql = "select token_hash from api_tokens where revoked_at is null";
    let hashes = on!(conn, |c| sqlx::query_scalar(sql).fetch_all(c).await)?;
    Ok(hashes)
}

/// Gives an active user another role, granted by `source` (`admin` or `claim`); `false` if
/// the user is gone or disabled.
pub async fn update_role(conn: Conn<'_>, id: Uuid, role: Role, source: RoleSource) -> Result<bool> {
    let sql = "update users set role = $1, role_source = $3 where id = $2 and disabled_at is null";
    let done = on!(conn, |c| sqlx::query(sql)
        .bind(role.as_str())
        .bind(id)
        .bind(source.as_str())
        .execute(c)
        .await
        .map(|r| r.rows_affected() > 0))?;
    Ok(done)
}

/// Where user `id`'s role came from (`None`: no role, or granted before this was recorded).
pub async fn role_source(conn: Conn<'_>, id: Uuid) -> Result<Option<RoleSource>> {
    let sql = "select role_source from users where id = $1";
    let source: Option<Option<String>> = on!(conn, |c| sqlx::query_scalar(sql)
        .bind(id)
        .fetch_optional(c)
        .await)?;
    Ok(source.flatten().as_deref().and_then(RoleSource::parse))
}

/// Takes away user `id`'s role when a claim granted it; `false` otherwise.
pub async fn revoke_claimed_role(conn: Conn<'_>, id: Uuid) -> Result<bool> {
    let sql = "update users set role = null, role_source = null \
               where id = $1 and role_source = 'claim'";
    let done = on!(conn, |c| sqlx::query(sql)
        .bind(id)
        .execute(c)
        .await
        .map(|r| r.rows_affected() > 0))?;
    Ok(done)
}

/// Disables an active user and ends their sessions (the epoch moves on); their id, or `None`
/// if there is no such active user.
pub async fn disable_user(
    conn: Conn<'_>,
    username: &str,
    now: OffsetDateTime,
) -> Result<Option<Uuid>> {
    let sql = "update users set disabled_at = $1, session_epoch = session_epoch + 1 \
               where username = $2 and disabled_at is null returning id";
    let row: Option<(Uuid,)> = on!(conn, |c| sqlx::query_as(sql)
        .bind(now)
        .bind(username)
        .fetch_optional(c)
        .await)?;
    Ok(row.map(|(id,)| id))
}

/// Gives an active user a new password hash and ends their sessions (the epoch moves on);
/// their id, or `None` if there is no such active user.
pub async fn reset_password(
    conn: Conn<'_>,
    username: &str,
    password_hash: &str,
) -> Result<Option<Uuid>> {
    let sql = "update users set password_hash = $1, session_epoch = session_epoch + 1 \
               where username = $2 and disabled_at is null returning id";
    let row: Option<(Uuid,)> = on!(conn, |c| sqlx::query_as(sql)
        .bind(password_hash)
        .bind(username)
        .fetch_optional(c)
        .await)?;
    Ok(row.map(|(id,)| id))
}

/// Every active executor token's name and tool scope.
pub async fn executor_scopes(conn: Conn<'_>) -> Result<Vec<(String, Option<String>)>> {
    let sql = "select name, tool_scope from api_tokens where kind = 'executor' \
               and revoked_at is null order by name";
    let rows = on!(conn, |c| sqlx::query_as(sql).fetch_all(c).await)?;
    Ok(rows)
}

/// Revokes every active token of a principal; the ids revoked.
pub async fn revoke_tokens(
    conn: Conn<'_>,
    kind: TokenKind,
    name: &str,
    now: OffsetDateTime,
) -> Result<Vec<Uuid>> {
    let sql = "update api_tokens set revoked_at = $1 where kind = $2 and name = $3 \
               and revoked_at is null returning id";
    let rows: Vec<(Uuid,)> = on!(conn, |c| sqlx::query_as(sql)
        .bind(now)
        .bind(kind.as_str())
        .bind(name)
        .fetch_all(c)
        .await)?;
    Ok(rows.into_iter().map(|(id,)| id).collect())
}

/// The domains a user is limited to (`None`: every domain; also for an unknown user).
pub async fn user_domains(conn: Conn<'_>, username: &str) -> Result<Option<Vec<String>>> {
    let sql = "select domains from users where username = $1";
    let row: Option<(Option<sqlx::types::Json<Vec<String>>>,)> = on!(conn, |c| {
        sqlx::query_as(sql).bind(username).fetch_optional(c).await
    })?;
    Ok(row.and_then(|(d,)| d).map(|d| d.0))
}

/// Limits a user to `domains` (`None`: every domain); `false` if there is no such user.
pub async fn set_user_domains(
    conn: Conn<'_>,
    username: &str,
    domains: Option<&[String]>,
) -> Result<bool> {
    let sql = "update users set domains = $1 where username = $2";
    let changed = on!(conn, |c| sqlx::query(sql)
        .bind(domains.map(sqlx::types::Json))
        .bind(username)
        .execute(c)
        .await
        .map(|r| r.rows_affected()))?;
    Ok(changed > 0)
}

/// A person as the admin pages list them.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct UserListing {
    /// Username.
    pub username: String,
    /// Role, as stored (`None`: not granted yet).
    pub role: Option<String>,
    /// The domains they are limited to (`None`: every domain).
    pub domains: Option<sqlx::types::Json<Vec<String>>>,
    /// The address they are emailed at.
    pub email: Option<String>,
    /// When they were disabled, if they are.
    pub disabled_at: Option<OffsetDateTime>,
}

/// Every user, by name.
pub async fn list_users(conn: Conn<'_>) -> Result<Vec<UserListing>> {
    let sql = "select username, role, domains, email, disabled_at from users order by username";
    let rows = on!(conn, |c| sqlx::query_as(sql).fetch_all(c).await)?;
    Ok(rows)
}

/// A token as the admin pages and `token list` show it: never its hash.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct TokenListing {
    /// Id.
    pub id: Uuid,
    /// `agent` or `executor`, as stored.
    pub kind: String,
    /// Principal name.
    pub name: String,
    /// An executor token's tool scope.
    pub tool_scope: Option<String>,
    /// An agent token's operator.
    pub operator: Option<String>,
    /// An agent token's callback URL.
    pub webhook_url: Option<String>,
    /// When it was created.
    pub created_at: OffsetDateTime,
    /// When it was revoked, if it was.
    pub revoked_at: Option<OffsetDateTime>,
}

/// Every token, newest first.
pub async fn list_tokens(conn: Conn<'_>) -> Result<Vec<TokenListing>> {
    let sql = "select id, kind, name, tool_scope, operator, webhook_url, created_at, revoked_at \
               from api_tokens order by created_at desc, id desc";
    let rows = on!(conn, |c| sqlx::query_as(sql).fetch_all(c).await)?;
    Ok(rows)
}

/// Enables a disabled user; their id, or `None` if there is no such disabled user. The
/// session epoch already moved on when they were disabled, so no old session comes back.
pub async fn enable_user(conn: Conn<'_>, username: &str) -> Result<Option<Uuid>> {
    let sql = "update users set disabled_at = null where username = $1 \
               and disabled_at is not null returning id";
    let row: Option<(Uuid,)> = on!(conn, |c| sqlx::query_as(sql)
        .bind(username)
        .fetch_optional(c)
        .await)?;
    Ok(row.map(|(id,)| id))
}

/// How many enabled admins there are, their rows locked until the transaction ends.
///
/// On PostgreSQL two instances may each take away one of the last two admins at once: each
/// would count two and go ahead. Locking the rows makes the second wait for the first, then
/// re-read the row it changed (read committed re-checks the condition on the new version), so
/// it counts one and is refused. SQLite has one writer (`begin immediate`), so nothing can
/// change between the count and the write.
pub async fn count_enabled_admins(conn: Conn<'_>) -> Result<i64> {
    let sql = conn.pick(
        "select count(*) from users where role = 'admin' and disabled_at is null",
        "select count(*) from (select id from users where role = 'admin' \
         and disabled_at is null for update) admins",
    );
    let (n,): (i64,) = on!(conn, |c| sqlx::query_as(sql).fetch_one(c).await)?;
    Ok(n)
}

/// Revokes one active token; its kind and name, or `None` if there is no such active token.
pub async fn revoke_token(
    conn: Conn<'_>,
    id: Uuid,
    now: OffsetDateTime,
) -> Result<Option<(TokenKind, String)>> {
    let sql = "update api_tokens set revoked_at = $1 where id = $2 and revoked_at is null \
               returning kind, name";
    let row: Option<(String, String)> = on!(conn, |c| sqlx::query_as(sql)
        .bind(now)
        .bind(id)
        .fetch_optional(c)
        .await)?;
    row.map(|(kind, name)| Ok((parse("token kind", &kind, TokenKind::parse)?, name)))
        .transpose()
}

/// Tells every instance listening on PostgreSQL that API credentials were revoked (delivered
/// at commit, [`super::changes::CREDENTIALS_CHANNEL`]), so each drops the tokens it trusts
/// without reading; SQLite has one serving process, which its own revocations clear directly.
pub async fn announce_revocation(conn: Conn<'_>) -> Result<()> {
    if let Conn::Postgres(c) = conn {
        sqlx::query("select pg_notify('countersign_credentials', '')")
            .execute(c)
            .await?;
    }
    Ok(())
}

/// The people who operate an agent: those its tokens name their operator and those who made
/// its tokens at `/admin/tokens` (they saw a secret that submits as it), revoked tokens included
/// (they operated it when it proposed).
pub async fn agent_operators(conn: Conn<'_>, agent: &str) -> Result<Vec<String>> {
    let sql = "select operator from api_tokens where kind = 'agent' and name = $1 \
               and operator is not null \
               union select created_by from api_tokens where kind = 'agent' and name = $1 \
               and created_by is not null";
    let rows: Vec<(String,)> = on!(conn, |c| sqlx::query_as(sql).bind(agent).fetch_all(c).await)?;
    Ok(rows.into_iter().map(|(o,)| o).collect())
}
