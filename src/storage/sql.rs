//! The SQL both backends share, written once. [`impl_store!`] expands it for a backend's
//! pool type; the only per-backend text is how an expired lease is recognised, the name of the
//! substring function, and how the queue head is locked (`for update skip locked` on PostgreSQL; SQLite's single writer
//! connection serialises claims instead).

use serde_json::Value;
use sqlx::types::Json;
use time::OffsetDateTime;
use uuid::Uuid;

use super::{
    AuditRecord, CommandRecord, ProposalRecord, Result, Review, StorageError, TokenRecord,
    UserRecord,
};
use crate::domain::command::{CommandSpec, CommandStatus};
use crate::domain::contract::{proposal::ToolProposal, vocab::AuthorizationState};
use crate::domain::lifecycle::{ProposalStatus, ReviewVerdict};
use crate::domain::principal::{ActorKind, Role, TokenKind};
use crate::domain::routing::proposal::ProposalDecision as Routing;

fn parse<T>(what: &str, raw: &str, parse: fn(&str) -> Option<T>) -> Result<T> {
    parse(raw).ok_or_else(|| StorageError::Corrupt(format!("unknown {what} `{raw}`")))
}

#[derive(sqlx::FromRow)]
pub(super) struct ProposalRow {
    seq: i64,
    id: Uuid,
    agent: String,
    status: String,
    authorization_state: String,
    request_hash: String,
    routing: Json<Routing>,
    contract: Json<ToolProposal>,
    created_at: OffsetDateTime,
    updated_at: OffsetDateTime,
    expires_at: Option<OffsetDateTime>,
    decision: Option<String>,
    decided_by: Option<String>,
    decided_at: Option<OffsetDateTime>,
    decision_reason: Option<String>,
}

impl ProposalRow {
    pub(super) fn into_record(self) -> Result<ProposalRecord> {
        let review = match (self.decision, self.decided_by, self.decided_at) {
            (Some(d), Some(by), Some(at)) => Some(Review {
                verdict: parse("decision", &d, ReviewVerdict::parse)?,
                decided_by: by,
                decided_at: at,
                reason: self.decision_reason,
            }),
            _ => None,
        };
        Ok(ProposalRecord {
            seq: self.seq,
            id: self.id,
            agent: self.agent,
            status: parse("proposal status", &self.status, ProposalStatus::parse)?,
            authorization_state: parse(
                "authorization state",
                &self.authorization_state,
                AuthorizationState::parse,
            )?,
            request_hash: self.request_hash,
            routing: self.routing.0,
            contract: self.contract.0,
            created_at: self.created_at,
            updated_at: self.updated_at,
            expires_at: self.expires_at,
            review,
        })
    }
}

#[derive(sqlx::FromRow)]
pub(super) struct CommandRow {
    id: Uuid,
    proposal_id: Uuid,
    status: String,
    spec: Json<CommandSpec>,
    attempts: i32,
    leased_by: Option<String>,
    lease_token_hash: Option<String>,
    lease_expires_at: Option<OffsetDateTime>,
    result: Option<Json<Value>>,
    error: Option<Json<Value>>,
    created_at: OffsetDateTime,
    completed_at: Option<OffsetDateTime>,
}

impl CommandRow {
    pub(super) fn lease_token_hash(&self) -> Option<&str> {
        self.lease_token_hash.as_deref()
    }

    pub(super) fn into_record(self) -> Result<CommandRecord> {
        Ok(CommandRecord {
            id: self.id,
            proposal_id: self.proposal_id,
            status: parse("command status", &self.status, CommandStatus::parse)?,
            spec: self.spec.0,
            attempts: self.attempts,
            leased_by: self.leased_by,
            lease_expires_at: self.lease_expires_at,
            result: self.result.map(|j| j.0),
            error: self.error.map(|j| j.0),
            created_at: self.created_at,
            completed_at: self.completed_at,
        })
    }
}

#[derive(sqlx::FromRow)]
pub(super) struct UserRow {
    id: Uuid,
    username: String,
    password_hash: String,
    role: String,
    disabled_at: Option<OffsetDateTime>,
}

impl UserRow {
    pub(super) fn into_record(self) -> Result<UserRecord> {
        Ok(UserRecord {
            id: self.id,
            username: self.username,
            password_hash: self.password_hash,
            role: parse("role", &self.role, Role::parse)?,
            disabled: self.disabled_at.is_some(),
        })
    }
}

#[derive(sqlx::FromRow)]
pub(super) struct TokenRow {
    id: Uuid,
    kind: String,
    name: String,
    revoked_at: Option<OffsetDateTime>,
}

impl TokenRow {
    pub(super) fn into_record(self) -> Result<TokenRecord> {
        Ok(TokenRecord {
            id: self.id,
            kind: parse("token kind", &self.kind, TokenKind::parse)?,
            name: self.name,
            revoked: self.revoked_at.is_some(),
        })
    }
}

#[derive(sqlx::FromRow)]
pub(super) struct AuditRow {
    seq: i64,
    at: OffsetDateTime,
    actor_kind: String,
    actor: String,
    action: String,
    subject_type: String,
    subject_id: String,
    before_status: Option<String>,
    after_status: Option<String>,
    details: Json<Value>,
}

impl AuditRow {
    pub(super) fn into_record(self) -> Result<AuditRecord> {
        Ok(AuditRecord {
            seq: self.seq,
            at: self.at,
            actor_kind: parse("actor kind", &self.actor_kind, ActorKind::parse)?,
            actor: self.actor,
            action: self.action,
            subject_type: self.subject_type,
            subject_id: self.subject_id,
            before_status: self.before_status,
            after_status: self.after_status,
            details: self.details.0,
        })
    }
}

macro_rules! proposal_cols {
    () => {
        "seq, id, agent, status, authorization_state, request_hash, routing, contract, \
         created_at, updated_at, expires_at, decision, decided_by, decided_at, decision_reason"
    };
}
macro_rules! command_cols {
    () => {
        "id, proposal_id, status, spec, attempts, leased_by, lease_token_hash, lease_expires_at, \
         result, error, created_at, completed_at"
    };
}
pub(super) use {command_cols, proposal_cols};

/// Implements [`super::Store`] for `$store` (which has `write` and `read` pools of `$db`).
macro_rules! impl_store {
    (
        $store:ty,
        $db:ty,
        backend = $backend:expr,
        expired = $expired:literal,
        due = $due:literal,
        live = $live:literal,
        contains = $contains:literal,
        lock = $lock:literal
    ) => {
        use sqlx::types::Json;
        use time::OffsetDateTime;
        use uuid::Uuid;

        use $crate::domain::lifecycle::{ProposalStatus, ReviewVerdict};
        use $crate::domain::principal::ActorKind;
        use $crate::domain::contract::vocab::AuthorizationState;
        use $crate::storage::sql::{command_cols, proposal_cols, AuditRow, CommandRow, ProposalRow, TokenRow, UserRow};
        use $crate::storage::{
            AuditEntry, AuditRecord, Backend, CommandRecord, Conflict, NewDecision, NewLease, NewProposal,
            NewReport, NewToken, ProposalRecord, Result, StorageError, Store, Submitted, TokenRecord, UserRecord,
        };

        async fn insert_audit(
            tx: &mut sqlx::Transaction<'_, $db>,
            e: &AuditEntry,
            at: OffsetDateTime,
        ) -> Result<()> {
            sqlx::query(
                "insert into audit_events (id, at, actor_kind, actor, action, subject_type, subject_id, \
                 before_status, after_status, details) values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)",
            )
            .bind(Uuid::now_v7())
            .bind(at)
            .bind(e.actor_kind.as_str())
            .bind(&e.actor)
            .bind(e.action)
            .bind(e.subject_type)
            .bind(&e.subject_id)
            .bind(&e.before_status)
            .bind(&e.after_status)
            .bind(Json(&e.details))
            .execute(&mut **tx)
            .await?;
            Ok(())
        }

        async fn insert_command(
            tx: &mut sqlx::Transaction<'_, $db>,
            proposal_id: Uuid,
            command: &(Uuid, $crate::domain::command::CommandSpec),
            actor_kind: ActorKind,
            actor: &str,
            now: OffsetDateTime,
        ) -> Result<()> {
            sqlx::query(
                "insert into commands (id, proposal_id, status, spec, allowed_executors, created_at, updated_at) \
                 values ($1, $2, 'queued', $3, $4, $5, $5)",
            )
            .bind(command.0)
            .bind(proposal_id)
            .bind(Json(&command.1))
            .bind(command.1.executor_filter())
            .bind(now)
            .execute(&mut **tx)
            .await?;
            let entry = AuditEntry {
                actor_kind,
                actor: actor.to_owned(),
                action: "command.queued",
                subject_type: "command",
                subject_id: command.0.to_string(),
                before_status: None,
                after_status: Some("queued".into()),
                details: serde_json::json!({
                    "proposal_id": proposal_id,
                    "tool": command.1.tool.name,
                    "request_hash_sha256": command.1.request_hash_sha256,
                }),
            };
            insert_audit(tx, &entry, now).await
        }

        async fn proposal_in<'e, E>(e: E, id: Uuid) -> Result<Option<ProposalRecord>>
        where
            E: sqlx::Executor<'e, Database = $db>,
        {
            sqlx::query_as::<_, ProposalRow>(concat!("select ", proposal_cols!(), " from proposals where id = $1"))
                .bind(id)
                .fetch_optional(e)
                .await?
                .map(ProposalRow::into_record)
                .transpose()
        }

        async fn command_by_id<'e, E>(e: E, id: Uuid) -> Result<Option<CommandRow>>
        where
            E: sqlx::Executor<'e, Database = $db>,
        {
            Ok(sqlx::query_as::<_, CommandRow>(concat!("select ", command_cols!(), " from commands where id = $1"))
                .bind(id)
                .fetch_optional(e)
                .await?)
        }

        #[async_trait::async_trait]
        impl Store for $store {
            fn backend(&self) -> Backend {
                $backend
            }

            async fn ping(&self) -> Result<()> {
                sqlx::query("select 1").execute(&self.read).await?;
                Ok(())
            }

            async fn count_users(&self) -> Result<i64> {
                let (n,): (i64,) = sqlx::query_as("select count(*) from users").fetch_one(&self.read).await?;
                Ok(n)
            }

            async fn insert_user(&self, user: &UserRecord, audit: &AuditEntry) -> Result<()> {
                let now = OffsetDateTime::now_utc();
                let mut tx = self.write.begin().await?;
                let inserted = sqlx::query(
                    "insert into users (id, username, password_hash, role, created_at) values ($1, $2, $3, $4, $5) \
                     on conflict do nothing",
                )
                .bind(user.id)
                .bind(&user.username)
                .bind(&user.password_hash)
                .bind(user.role.as_str())
                .bind(now)
                .execute(&mut *tx)
                .await?
                .rows_affected();
                if inserted == 0 {
                    return Err(StorageError::Conflict(Conflict::UsernameTaken));
                }
                insert_audit(&mut tx, audit, now).await?;
                tx.commit().await?;
                Ok(())
            }

            async fn user_by_username(&self, username: &str) -> Result<Option<UserRecord>> {
                sqlx::query_as::<_, UserRow>(
                    "select id, username, password_hash, role, disabled_at from users where username = $1",
                )
                .bind(username)
                .fetch_optional(&self.read)
                .await?
                .map(UserRow::into_record)
                .transpose()
            }

            async fn insert_token(&self, token: &NewToken, audit: &AuditEntry) -> Result<()> {
                let now = OffsetDateTime::now_utc();
                let mut tx = self.write.begin().await?;
                sqlx::query(
                    "insert into api_tokens (id, kind, name, token_hash, created_at) values ($1, $2, $3, $4, $5)",
                )
                .bind(token.id)
                .bind(token.kind.as_str())
                .bind(&token.name)
                .bind(&token.token_hash)
                .bind(now)
                .execute(&mut *tx)
                .await?;
                insert_audit(&mut tx, audit, now).await?;
                tx.commit().await?;
                Ok(())
            }

            async fn token_by_hash(&self, token_hash: &str) -> Result<Option<TokenRecord>> {
                sqlx::query_as::<_, TokenRow>(
                    "select id, kind, name, revoked_at from api_tokens where token_hash = $1",
                )
                .bind(token_hash)
                .fetch_optional(&self.read)
                .await?
                .map(TokenRow::into_record)
                .transpose()
            }

            async fn submit_proposal(&self, new: &NewProposal) -> Result<Submitted> {
                let mut tx = self.write.begin().await?;
                let c = &new.contract;
                let inserted = sqlx::query_as::<_, ProposalRow>(concat!(
                    "insert into proposals (id, agent, idempotency_key, request_hash, status, authorization_state, \
                     risk_level, tool_name, domain, route, routing, contract, created_at, updated_at, expires_at) \
                     values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $13, $14) \
                     on conflict do nothing returning ",
                    proposal_cols!()
                ))
                .bind(c.proposal_id)
                .bind(&new.agent)
                .bind(&c.idempotency_key)
                .bind(&new.request_hash)
                .bind(new.status.as_str())
                .bind(new.authorization_state.as_str())
                .bind(c.risk_level.as_str())
                .bind(&c.tool.name)
                .bind(&c.domain)
                .bind(new.routing.route.as_str())
                .bind(Json(&new.routing))
                .bind(Json(c))
                .bind(new.now)
                .bind(new.expires_at)
                .fetch_optional(&mut *tx)
                .await?;

                let Some(row) = inserted else {
                    let existing = sqlx::query_as::<_, ProposalRow>(concat!(
                        "select ", proposal_cols!(), " from proposals where agent = $1 and idempotency_key = $2"
                    ))
                    .bind(&new.agent)
                    .bind(&c.idempotency_key)
                    .fetch_optional(&mut *tx)
                    .await?;
                    tx.rollback().await?;
                    return match existing {
                        Some(row) if row_matches(&row, &new.request_hash) => Ok(Submitted::Replayed(row.into_record()?)),
                        Some(_) => Err(StorageError::Conflict(Conflict::IdempotencyKeyReused)),
                        None => Err(StorageError::Conflict(Conflict::ProposalIdTaken)),
                    };
                };
                let record = row.into_record()?;
                let entry = AuditEntry {
                    actor_kind: ActorKind::Agent,
                    actor: new.agent.clone(),
                    action: "proposal.submitted",
                    subject_type: "proposal",
                    subject_id: record.id.to_string(),
                    before_status: None,
                    after_status: Some(record.status.as_str().into()),
                    details: serde_json::json!({
                        "tool": c.tool.name,
                        "domain": c.domain,
                        "risk_level": c.risk_level,
                        "route": new.routing.route,
                        "rule": new.routing.rule,
                        "policy_version": new.routing.policy_version,
                        "request_hash_sha256": new.request_hash,
                        "parameter_keys": c
                            .parameters
                            .keys()
                            .map(|k| $crate::domain::routing::scan::audit_safe_name(k))
                            .collect::<Vec<_>>(),
                    }),
                };
                insert_audit(&mut tx, &entry, new.now).await?;
                if let Some(command) = &new.command {
                    insert_command(&mut tx, record.id, command, ActorKind::System, "policy", new.now).await?;
                }
                tx.commit().await?;
                Ok(Submitted::Created(record))
            }

            async fn proposal(&self, id: Uuid) -> Result<Option<ProposalRecord>> {
                proposal_in(&self.read, id).await
            }

            async fn proposals_by_status(&self, status: ProposalStatus, limit: i64) -> Result<Vec<ProposalRecord>> {
                sqlx::query_as::<_, ProposalRow>(concat!(
                    "select ", proposal_cols!(), " from proposals where status = $1 order by seq limit $2"
                ))
                .bind(status.as_str())
                .bind(limit)
                .fetch_all(&self.read)
                .await?
                .into_iter()
                .map(ProposalRow::into_record)
                .collect()
            }

            async fn decide_proposal(&self, d: &NewDecision) -> Result<ProposalRecord> {
                let status = d.verdict.status();
                let authorization: Option<&str> = match d.verdict {
                    ReviewVerdict::Approved => Some(AuthorizationState::Confirmed.as_str()),
                    ReviewVerdict::Rejected => None,
                };
                let mut tx = self.write.begin().await?;
                // Claim the pending, unexpired proposal (a row lock on PostgreSQL; SQLite has one
                // writer): concurrent reviewers queue up here and see each other's outcome.
                let claimed = sqlx::query_as::<_, ProposalRow>(concat!(
                    "update proposals set updated_at = $1 where id = $2 and status = 'pending' and ",
                    $live,
                    " returning ",
                    proposal_cols!()
                ))
                .bind(d.now)
                .bind(d.proposal_id)
                .fetch_optional(&mut *tx)
                .await?;
                let Some(claimed) = claimed else {
                    let current = proposal_in(&mut *tx, d.proposal_id).await?;
                    tx.rollback().await?;
                    return match current {
                        // Still pending, so its time ran out: it expires now, never approved.
                        Some(p) if p.status == ProposalStatus::Pending => {
                            self.expire_due(d.now).await?;
                            Err(StorageError::Conflict(Conflict::AlreadyDecided(ProposalStatus::Expired)))
                        }
                        Some(p) => Err(StorageError::Conflict(Conflict::AlreadyDecided(p.status))),
                        None => Err(StorageError::NotFound),
                    };
                };
                if d.verdict == ReviewVerdict::Approved {
                    let added = sqlx::query(
                        "insert into approvals (proposal_id, reviewer, at) values ($1, $2, $3) on conflict do nothing",
                    )
                    .bind(d.proposal_id)
                    .bind(&d.reviewer)
                    .bind(d.now)
                    .execute(&mut *tx)
                    .await?
                    .rows_affected();
                    if added == 0 {
                        tx.rollback().await?;
                        return Err(StorageError::Conflict(Conflict::AlreadyApproved));
                    }
                    let (count,): (i64,) = sqlx::query_as("select count(*) from approvals where proposal_id = $1")
                        .bind(d.proposal_id)
                        .fetch_one(&mut *tx)
                        .await?;
                    if count < i64::from(d.required_approvals) {
                        let record = claimed.into_record()?;
                        let entry = AuditEntry {
                            actor_kind: ActorKind::User,
                            actor: d.reviewer.clone(),
                            action: "proposal.approval_recorded",
                            subject_type: "proposal",
                            subject_id: record.id.to_string(),
                            before_status: Some(ProposalStatus::Pending.as_str().into()),
                            after_status: Some(ProposalStatus::Pending.as_str().into()),
                            details: serde_json::json!({
                                "approvals": count,
                                "required_approvals": d.required_approvals,
                                "reason": d.reason,
                                "request_hash_sha256": record.request_hash,
                            }),
                        };
                        insert_audit(&mut tx, &entry, d.now).await?;
                        tx.commit().await?;
                        return Ok(record);
                    }
                }
                let row = sqlx::query_as::<_, ProposalRow>(concat!(
                    "update proposals set status = $1, authorization_state = coalesce($2, authorization_state), \
                     decision = $3, decided_by = $4, decided_at = $5, decision_reason = $6, updated_at = $5 \
                     where id = $7 returning ",
                    proposal_cols!()
                ))
                .bind(status.as_str())
                .bind(authorization)
                .bind(d.verdict.as_str())
                .bind(&d.reviewer)
                .bind(d.now)
                .bind(&d.reason)
                .bind(d.proposal_id)
                .fetch_one(&mut *tx)
                .await?;
                let record = row.into_record()?;
                let entry = AuditEntry {
                    actor_kind: ActorKind::User,
                    actor: d.reviewer.clone(),
                    action: match d.verdict {
                        ReviewVerdict::Approved => "proposal.approved",
                        ReviewVerdict::Rejected => "proposal.rejected",
                    },
                    subject_type: "proposal",
                    subject_id: record.id.to_string(),
                    before_status: Some(ProposalStatus::Pending.as_str().into()),
                    after_status: Some(status.as_str().into()),
                    details: serde_json::json!({
                        "authorization_state": record.authorization_state,
                        "reason": d.reason,
                        "required_approvals": d.required_approvals,
                        "request_hash_sha256": record.request_hash,
                    }),
                };
                insert_audit(&mut tx, &entry, d.now).await?;
                if let Some(command) = &d.command {
                    insert_command(&mut tx, record.id, command, ActorKind::User, &d.reviewer, d.now).await?;
                }
                tx.commit().await?;
                Ok(record)
            }

            async fn approvals(&self, proposal_id: Uuid) -> Result<Vec<(String, OffsetDateTime)>> {
                Ok(sqlx::query_as("select reviewer, at from approvals where proposal_id = $1 order by at, reviewer")
                    .bind(proposal_id)
                    .fetch_all(&self.read)
                    .await?)
            }

            async fn expire_due(&self, now: OffsetDateTime) -> Result<Vec<ProposalRecord>> {
                let mut tx = self.write.begin().await?;
                let rows = sqlx::query_as::<_, ProposalRow>(concat!(
                    "update proposals set status = 'expired', updated_at = $1 where status = 'pending' and ",
                    $due,
                    " returning ",
                    proposal_cols!()
                ))
                .bind(now)
                .fetch_all(&mut *tx)
                .await?;
                let mut expired = Vec::with_capacity(rows.len());
                for row in rows {
                    let record = row.into_record()?;
                    let entry = AuditEntry {
                        actor_kind: ActorKind::System,
                        actor: "expiry".into(),
                        action: "proposal.expired",
                        subject_type: "proposal",
                        subject_id: record.id.to_string(),
                        before_status: Some(ProposalStatus::Pending.as_str().into()),
                        after_status: Some(ProposalStatus::Expired.as_str().into()),
                        details: serde_json::json!({
                            "expires_at": record.expires_at.and_then(|t| t.format(&time::format_description::well_known::Rfc3339).ok()),
                        }),
                    };
                    insert_audit(&mut tx, &entry, now).await?;
                    expired.push(record);
                }
                tx.commit().await?;
                Ok(expired)
            }

            async fn command_for_proposal(&self, proposal_id: Uuid) -> Result<Option<CommandRecord>> {
                sqlx::query_as::<_, CommandRow>(concat!("select ", command_cols!(), " from commands where proposal_id = $1"))
                    .bind(proposal_id)
                    .fetch_optional(&self.read)
                    .await?
                    .map(CommandRow::into_record)
                    .transpose()
            }

            async fn lease_command(&self, lease: &NewLease) -> Result<Option<CommandRecord>> {
                let mut tx = self.write.begin().await?;
                let row = sqlx::query_as::<_, CommandRow>(concat!(
                    "update commands set status = 'leased', attempts = attempts + 1, leased_by = $1, \
                     lease_token_hash = $2, lease_expires_at = $3, updated_at = $4 \
                     where seq = (select seq from commands where (status = 'queued' or (status = 'leased' and ",
                    $expired,
                    ")) and (allowed_executors is null or ",
                    $contains,
                    "(allowed_executors, ',' || $1 || ',') > 0) order by seq limit 1 ",
                    $lock,
                    ") returning ",
                    command_cols!()
                ))
                .bind(&lease.executor)
                .bind(&lease.lease_token_hash)
                .bind(lease.expires_at)
                .bind(lease.now)
                .fetch_optional(&mut *tx)
                .await?;
                let Some(row) = row else {
                    tx.rollback().await?;
                    return Ok(None);
                };
                let record = row.into_record()?;
                let entry = AuditEntry {
                    actor_kind: ActorKind::Executor,
                    actor: lease.executor.clone(),
                    action: "command.leased",
                    subject_type: "command",
                    subject_id: record.id.to_string(),
                    before_status: Some(if record.attempts > 1 { "leased" } else { "queued" }.into()),
                    after_status: Some("leased".into()),
                    details: serde_json::json!({
                        "proposal_id": record.proposal_id,
                        "attempt": record.attempts,
                        "lease_expires_at": lease.expires_at.format(&time::format_description::well_known::Rfc3339).ok(),
                    }),
                };
                insert_audit(&mut tx, &entry, lease.now).await?;
                tx.commit().await?;
                Ok(Some(record))
            }

            async fn report_command(&self, r: &NewReport) -> Result<CommandRecord> {
                let status = r.outcome.command_status();
                let (result, error) = match r.outcome {
                    $crate::domain::command::Outcome::Succeeded => (Some(Json(&r.report)), None),
                    $crate::domain::command::Outcome::Failed => (None, Some(Json(&r.report))),
                };
                let mut tx = self.write.begin().await?;
                let updated = sqlx::query_as::<_, CommandRow>(concat!(
                    "update commands set status = $1, result = $2, error = $3, completed_at = $4, updated_at = $4, \
                     lease_token_hash = null where id = $5 and status = 'leased' and lease_token_hash = $6 \
                     and leased_by = $7 returning ",
                    command_cols!()
                ))
                .bind(status.as_str())
                .bind(result)
                .bind(error)
                .bind(r.now)
                .bind(r.command_id)
                .bind(&r.lease_token_hash)
                .bind(&r.executor)
                .fetch_optional(&mut *tx)
                .await?;
                let Some(row) = updated else {
                    let current = command_by_id(&mut *tx, r.command_id).await?;
                    tx.rollback().await?;
                    return Err(match current {
                        None => StorageError::NotFound,
                        Some(c) if c.lease_token_hash().is_none() => match c.into_record() {
                            Ok(c) => StorageError::Conflict(Conflict::CommandNotLeased(c.status)),
                            Err(e) => e,
                        },
                        Some(_) => StorageError::Conflict(Conflict::LeaseTokenMismatch),
                    });
                };
                let record = row.into_record()?;
                let proposal_status = r.outcome.proposal_status();
                let before: Option<(String,)> = sqlx::query_as(
                    "select status from proposals where id = $1 and status in ('approved', 'accepted')",
                )
                .bind(record.proposal_id)
                .fetch_optional(&mut *tx)
                .await?;
                let Some((before,)) = before else {
                    return Err(StorageError::Corrupt(format!(
                        "command {} reported but its proposal was not approved or accepted",
                        record.id
                    )));
                };
                sqlx::query("update proposals set status = $1, updated_at = $2 where id = $3")
                    .bind(proposal_status.as_str())
                    .bind(r.now)
                    .bind(record.proposal_id)
                    .execute(&mut *tx)
                    .await?;
                let command_entry = AuditEntry {
                    actor_kind: ActorKind::Executor,
                    actor: r.executor.clone(),
                    action: match r.outcome {
                        $crate::domain::command::Outcome::Succeeded => "command.succeeded",
                        $crate::domain::command::Outcome::Failed => "command.failed",
                    },
                    subject_type: "command",
                    subject_id: record.id.to_string(),
                    before_status: Some("leased".into()),
                    after_status: Some(status.as_str().into()),
details: serde_json::json!({
                        "proposal_id": record.proposal_id,
                        "attempt": record.attempts,
                        // Reported after the lease ran out (but before anyone else took it).
                        "late": record.lease_expires_at.is_some_and(|t| t < r.now),
                    }),
                };
                insert_audit(&mut tx, &command_entry, r.now).await?;
                let proposal_entry = AuditEntry {
                    actor_kind: ActorKind::Executor,
                    actor: r.executor.clone(),
                    action: match r.outcome {
                        $crate::domain::command::Outcome::Succeeded => "proposal.succeeded",
                        $crate::domain::command::Outcome::Failed => "proposal.failed",
                    },
                    subject_type: "proposal",
                    subject_id: record.proposal_id.to_string(),
                    before_status: Some(before),
                    after_status: Some(proposal_status.as_str().into()),
                    details: serde_json::json!({ "command_id": record.id }),
                };
                insert_audit(&mut tx, &proposal_entry, r.now).await?;
                tx.commit().await?;
                Ok(record)
            }

            async fn append_audit(&self, entry: &AuditEntry) -> Result<()> {
                let mut tx = self.write.begin().await?;
                insert_audit(&mut tx, entry, OffsetDateTime::now_utc()).await?;
                tx.commit().await?;
                Ok(())
            }

            async fn audit_for_subject(&self, subject_type: &str, subject_id: &str) -> Result<Vec<AuditRecord>> {
                sqlx::query_as::<_, AuditRow>(
                    "select seq, at, actor_kind, actor, action, subject_type, subject_id, before_status, \
                     after_status, details from audit_events where subject_type = $1 and subject_id = $2 order by seq",
                )
                .bind(subject_type)
                .bind(subject_id)
                .fetch_all(&self.read)
                .await?
                .into_iter()
                .map(AuditRow::into_record)
                .collect()
            }
        }

        fn row_matches(row: &ProposalRow, request_hash: &str) -> bool {
            row.request_hash() == request_hash
        }
    };
}
pub(super) use impl_store;

impl ProposalRow {
    pub(super) fn request_hash(&self) -> &str {
        &self.request_hash
    }
}
