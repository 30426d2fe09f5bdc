//! Passkeys' rows: each person's registered passkeys, the ceremonies between their two
//! requests (taken once: a conditional delete, so a challenge answers one approval on every
//! instance), and the assertions kept with the approvals they proved.

use time::OffsetDateTime;
use uuid::Uuid;

use super::conn::{Conn, on};
use super::error::Result;
pub use crate::domain::record::{CeremonyRecord, PasskeyRecord};

#[derive(sqlx::FromRow)]
struct PasskeyRow {
    id: Uuid,
    username: String,
    name: String,
    credential_id: String,
    passkey: String,
    created_at: OffsetDateTime,
    last_used_at: Option<OffsetDateTime>,
}

impl From<PasskeyRow> for PasskeyRecord {
    fn from(r: PasskeyRow) -> Self {
        Self {
            id: r.id,
            username: r.username,
            name: r.name,
            credential_id: r.credential_id,
            passkey: r.passkey,
            created_at: r.created_at,
            last_used_at: r.last_used_at,
        }
    }
}

const COLUMNS: &str = "id, username, name, credential_id, passkey, created_at, last_used_at";

/// Stores a newly registered passkey; `false` when its credential is already registered.
pub async fn insert(conn: Conn<'_>, p: &PasskeyRecord) -> Result<bool> {
    let sql = format!(
        "insert into passkeys ({COLUMNS}) values ($1, $2, $3, $4, $5, $6, $7) \
         on conflict (credential_id) do nothing"
    );
    let inserted = on!(conn, |c| sqlx::query(&sql)
        .bind(p.id)
        .bind(&p.username)
        .bind(&p.name)
        .bind(&p.credential_id)
        .bind(&p.passkey)
        .bind(p.created_at)
        .bind(p.last_used_at)
        .execute(c)
        .await
        .map(|r| r.rows_affected()))?;
    Ok(inserted == 1)
}

/// `username`'s passkeys, oldest first.
pub async fn of(conn: Conn<'_>, username: &str) -> Result<Vec<PasskeyRecord>> {
    let sql = format!("select {COLUMNS} from passkeys where username = $1 order by created_at, id");
    let rows: Vec<PasskeyRow> = on!(conn, |c| sqlx::query_as(&sql)
        .bind(username)
        .fetch_all(c)
        .await)?;
    Ok(rows.into_iter().map(Into::into).collect())
}

/// Renames `username`'s passkey `id`: the passkey as renamed, or `None` when they have no such
/// passkey.
pub async fn rename(
    conn: Conn<'_>,
    id: Uuid,
    username: &str,
    name: &str,
) -> Result<Option<PasskeyRecord>> {
    let sql = format!(
        "update passkeys set name = $3 where id = $1 and username = $2 returning {COLUMNS}"
    );
    let row: Option<PasskeyRow> = on!(conn, |c| sqlx::query_as(&sql)
        .bind(id)
        .bind(username)
        .bind(name)
        .fetch_optional(c)
        .await)?;
    Ok(row.map(Into::into))
}

/// Removes `username`'s passkey `id`: the passkey removed, or `None`.
pub async fn remove(conn: Conn<'_>, id: Uuid, username: &str) -> Result<Option<PasskeyRecord>> {
    let sql = format!("delete from passkeys where id = $1 and username = $2 returning {COLUMNS}");
    let row: Option<PasskeyRow> = on!(conn, |c| sqlx::query_as(&sql)
        .bind(id)
        .bind(username)
        .fetch_optional(c)
        .await)?;
    Ok(row.map(Into::into))
}

/// Records that credential `credential_id` proved an approval at `now`, with its relying
/// party record as updated (its counter) from `before`, the record the proof was checked
/// against; `false` when it changed meanwhile (removed, or used at the same moment elsewhere,
/// which would lose a counter step).
pub async fn used(
    conn: Conn<'_>,
    credential_id: &str,
    before: &str,
    passkey: &str,
    now: OffsetDateTime,
) -> Result<bool> {
    let sql = "update passkeys set passkey = $2, last_used_at = $3 \
               where credential_id = $1 and passkey = $4";
    let updated = on!(conn, |c| sqlx::query(sql)
        .bind(credential_id)
        .bind(passkey)
        .bind(now)
        .bind(before)
        .execute(c)
        .await
        .map(|r| r.rows_affected()))?;
    Ok(updated == 1)
}

#[derive(sqlx::FromRow)]
struct CeremonyRow {
    id: Uuid,
    username: String,
    purpose: String,
    proposal_id: Option<Uuid>,
    request_hash: Option<String>,
    nonce: Option<String>,
    state: String,
    expires_at: OffsetDateTime,
}

impl From<CeremonyRow> for CeremonyRecord {
    fn from(r: CeremonyRow) -> Self {
        Self {
            id: r.id,
            username: r.username,
            purpose: r.purpose,
            proposal_id: r.proposal_id,
            request_hash: r.request_hash,
            nonce: r.nonce,
            state: r.state,
            expires_at: r.expires_at,
        }
    }
}

const CEREMONY_COLUMNS: &str =
    "id, username, purpose, proposal_id, request_hash, nonce, state, expires_at";

/// Starts ceremony `c`: it replaces the person's earlier one of the same purpose (for the same
/// proposal), which has the same id, so two started at once leave one; ceremonies that lapsed
/// by `now` are cleared.
pub async fn begin(mut conn: Conn<'_>, c: &CeremonyRecord, now: OffsetDateTime) -> Result<()> {
    let lapsed = conn.pick(
        "delete from passkey_ceremonies where julianday(expires_at) <= julianday($1)",
        "delete from passkey_ceremonies where expires_at <= $1",
    );
    on!(conn.reborrow(), |x| sqlx::query(lapsed)
        .bind(now)
        .execute(x)
        .await
        .map(drop))?;
    let sql = format!(
        "insert into passkey_ceremonies ({CEREMONY_COLUMNS}) \
         values ($1, $2, $3, $4, $5, $6, $7, $8) on conflict (id) do update \
         set request_hash = excluded.request_hash, nonce = excluded.nonce, \
         state = excluded.state, expires_at = excluded.expires_at"
    );
    on!(conn, |x| sqlx::query(&sql)
        .bind(c.id)
        .bind(&c.username)
        .bind(&c.purpose)
        .bind(c.proposal_id)
        .bind(&c.request_hash)
        .bind(&c.nonce)
        .bind(&c.state)
        .bind(c.expires_at)
        .execute(x)
        .await
        .map(drop))?;
    Ok(())
}

/// `username`'s live ceremony for `purpose` (and `proposal`) at `now`, if any.
pub async fn ceremony(
    conn: Conn<'_>,
    username: &str,
    purpose: &str,
    proposal: Option<Uuid>,
    now: OffsetDateTime,
) -> Result<Option<CeremonyRecord>> {
    let live = conn.pick("julianday(expires_at) > julianday($4)", "expires_at > $4");
    let sql = format!(
        "select {CEREMONY_COLUMNS} from passkey_ceremonies where username = $1 \
         and purpose = $2 and (proposal_id = $3 or (proposal_id is null and $3 is null)) \
         and {live}"
    );
    let row: Option<CeremonyRow> = on!(conn, |c| sqlx::query_as(&sql)
        .bind(username)
        .bind(purpose)
        .bind(proposal)
        .bind(now)
        .fetch_optional(c)
        .await)?;
    Ok(row.map(Into::into))
}

/// Takes ceremony `id` in the `state` it was answered in: `false` when it was taken already
/// (a replay, or another instance finishing the same one) or replaced by a newer one.
pub async fn take(conn: Conn<'_>, id: Uuid, state: &str) -> Result<bool> {
    let sql = "delete from passkey_ceremonies where id = $1 and state = $2";
    let deleted = on!(conn, |c| sqlx::query(sql)
        .bind(id)
        .bind(state)
        .execute(c)
        .await
        .map(|r| r.rows_affected()))?;
    Ok(deleted == 1)
}

/// An approval's verified assertion, as kept.
pub struct KeptAssertion<'a> {
    /// The proposal approved.
    pub proposal_id: Uuid,
    /// Who approved it.
    pub username: &'a str,
    /// With which credential (base64url).
    pub credential_id: &'a str,
    /// The request hash the challenge bound.
    pub request_hash: &'a str,
    /// Nonce, challenge, clientDataJSON, authenticatorData and signature, JSON.
    pub assertion: &'a str,
    /// When.
    pub at: OffsetDateTime,
}

/// Keeps an approval's assertion with it.
pub async fn keep(conn: Conn<'_>, a: &KeptAssertion<'_>) -> Result<()> {
    // An admin's break-glass may follow their own approval of the same proposal: the newer
    // proof replaces theirs.
    let sql = "insert into passkey_assertions \
               (proposal_id, username, credential_id, request_hash, assertion, at) \
               values ($1, $2, $3, $4, $5, $6) on conflict (proposal_id, username) do update \
               set credential_id = excluded.credential_id, request_hash = excluded.request_hash, \
               assertion = excluded.assertion, at = excluded.at";
    on!(conn, |c| sqlx::query(sql)
        .bind(a.proposal_id)
        .bind(a.username)
        .bind(a.credential_id)
        .bind(a.request_hash)
        .bind(a.assertion)
        .bind(a.at)
        .execute(c)
        .await
        .map(drop))?;
    Ok(())
}

/// The credentials that proved proposal `id`'s approvals: `(username, credential id)`.
pub async fn proofs_of(conn: Conn<'_>, id: Uuid) -> Result<Vec<(String, String)>> {
    let sql = "select username, credential_id from passkey_assertions where proposal_id = $1 \
               order by at";
    let rows: Vec<(String, String)> =
        on!(conn, |c| sqlx::query_as(sql).bind(id).fetch_all(c).await)?;
    Ok(rows)
}
