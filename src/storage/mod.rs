//! All of Countersign's SQL, on SQLite (the embedded default) and PostgreSQL (for several
//! instances on one database), behind one [`Store`] interface.
//!
//! Every state change runs in one transaction with its audit row and, where it queues work,
//! its command row: they commit together or not at all. Conditional updates
//! (`where status = 'pending'`) make concurrent decisions and leases safe on both backends.
//!
//! Errors: [`StorageError`] is this layer's only error type. `Conflict` and `NotFound` carry
//! what the caller needs to answer a client; `Database` is an internal failure, logged by the
//! caller and never echoed.

mod postgres;
mod sql;
mod sqlite;

use std::sync::Arc;

use serde_json::Value;
use time::OffsetDateTime;
use uuid::Uuid;

use crate::domain::command::{CommandSpec, CommandStatus, Outcome};
use crate::domain::contract::{proposal::ToolProposal, vocab::AuthorizationState};
use crate::domain::lifecycle::{ProposalStatus, ReviewVerdict};
use crate::domain::principal::{ActorKind, Role, TokenKind};
use crate::domain::routing::proposal::ProposalDecision as Routing;

pub use postgres::PgStore;
pub use sqlite::SqliteStore;

/// The storage layer's error.
#[derive(Debug, thiserror::Error)]
pub enum StorageError {
    /// The row does not exist.
    #[error("not found")]
    NotFound,
    /// The change conflicts with the current state.
    #[error("conflict: {0:?}")]
    Conflict(Conflict),
    /// A stored value is not one Countersign writes (corruption or a newer schema).
    #[error("corrupt row: {0}")]
    Corrupt(String),
    /// The database failed.
    #[error(transparent)]
    Database(#[from] sqlx::Error),
    /// Migrations failed.
    #[error(transparent)]
    Migrate(#[from] sqlx::migrate::MigrateError),
}

/// Why a change was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Conflict {
    /// A user with this name exists.
    UsernameTaken,
    /// The proposal was already decided; it is now in this status.
    AlreadyDecided(ProposalStatus),
    /// This reviewer already approved the proposal, which waits for other approvers.
    AlreadyApproved,
    /// The same idempotency key was used by this agent for a different request.
    IdempotencyKeyReused,
    /// The proposal id is already taken by another request.
    ProposalIdTaken,
    /// The command is not leased (it is in this status).
    CommandNotLeased(CommandStatus),
    /// The lease token is not the command's current one.
    LeaseTokenMismatch,
}

/// Result alias for this layer.
pub type Result<T, E = StorageError> = std::result::Result<T, E>;

/// Which backend a store runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// SQLite file.
    Sqlite,
    /// PostgreSQL server.
    Postgres,
}

/// One row of the append-only audit trail, as written.
#[derive(Debug, Clone, PartialEq)]
pub struct AuditEntry {
    /// Who.
    pub actor_kind: ActorKind,
    /// Their name.
    pub actor: String,
    /// What, e.g. `proposal.approved`.
    pub action: &'static str,
    /// What kind of thing it happened to.
    pub subject_type: &'static str,
    /// Its id.
    pub subject_id: String,
    /// Status before.
    pub before_status: Option<String>,
    /// Status after.
    pub after_status: Option<String>,
    /// Audit-safe details: never secrets, passwords, tokens or raw parameters.
    pub details: Value,
}

/// An audit row as read back.
#[derive(Debug, Clone, PartialEq)]
pub struct AuditRecord {
    /// Position in the trail.
    pub seq: i64,
    /// When.
    pub at: OffsetDateTime,
    /// Who.
    pub actor_kind: ActorKind,
    /// Their name.
    pub actor: String,
    /// What.
    pub action: String,
    /// What kind of thing it happened to.
    pub subject_type: String,
    /// Its id.
    pub subject_id: String,
    /// Status before.
    pub before_status: Option<String>,
    /// Status after.
    pub after_status: Option<String>,
    /// Audit-safe details.
    pub details: Value,
}

/// A person who signs in.
#[derive(Clone)]
pub struct UserRecord {
    /// Id.
    pub id: Uuid,
    /// Unique name.
    pub username: String,
    /// argon2id PHC string. Deliberately not `Debug`.
    pub password_hash: String,
    /// Role.
    pub role: Role,
    /// Disabled users cannot sign in.
    pub disabled: bool,
}

/// A machine principal behind an API token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenRecord {
    /// Id.
    pub id: Uuid,
    /// Agent or executor.
    pub kind: TokenKind,
    /// Principal name.
    pub name: String,
    /// Revoked tokens authenticate nobody.
    pub revoked: bool,
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
}

/// A reviewer's decision as stored.
#[derive(Debug, Clone, PartialEq)]
pub struct Review {
    /// Approved or rejected.
    pub verdict: ReviewVerdict,
    /// Reviewer's username.
    pub decided_by: String,
    /// When.
    pub decided_at: OffsetDateTime,
    /// Reviewer's reason.
    pub reason: Option<String>,
}

/// A proposal as stored.
#[derive(Debug, Clone, PartialEq)]
pub struct ProposalRecord {
    /// Position in arrival order.
    pub seq: i64,
    /// The agent's proposal id.
    pub id: Uuid,
    /// The authenticated agent that submitted it.
    pub agent: String,
    /// Current status.
    pub status: ProposalStatus,
    /// Current effective authorization (`confirmed` once approved).
    pub authorization_state: AuthorizationState,
    /// `sha256` of the canonical request.
    pub request_hash: String,
    /// How it was routed.
    pub routing: Routing,
    /// The validated contract.
    pub contract: ToolProposal,
    /// Arrival time.
    pub created_at: OffsetDateTime,
    /// Last change.
    pub updated_at: OffsetDateTime,
    /// When a pending proposal expires.
    pub expires_at: Option<OffsetDateTime>,
    /// The decision, once taken.
    pub review: Option<Review>,
}

/// A proposal to store.
pub struct NewProposal {
    /// The authenticated agent.
    pub agent: String,
    /// Status it starts in.
    pub status: ProposalStatus,
    /// Effective authorization.
    pub authorization_state: AuthorizationState,
    /// Request hash.
    pub request_hash: String,
    /// Routing.
    pub routing: Routing,
    /// Contract.
    pub contract: ToolProposal,
    /// Arrival time.
    pub now: OffsetDateTime,
    /// When it expires if still pending.
    pub expires_at: Option<OffsetDateTime>,
    /// A command to queue at once (policy `accept`).
    pub command: Option<(Uuid, CommandSpec)>,
}

/// What storing a proposal did.
#[derive(Debug)]
pub enum Submitted {
    /// A new proposal.
    Created(ProposalRecord),
    /// The same request was submitted before: the original.
    Replayed(ProposalRecord),
}

/// A decision to store.
pub struct NewDecision {
    /// Proposal.
    pub proposal_id: Uuid,
    /// Verdict.
    pub verdict: ReviewVerdict,
    /// Reviewer.
    pub reviewer: String,
    /// Reason.
    pub reason: Option<String>,
    /// How many distinct reviewers must approve (the policy's `required_approvals`).
    pub required_approvals: u8,
    /// When.
    pub now: OffsetDateTime,
    /// The command to queue on approval.
    pub command: Option<(Uuid, CommandSpec)>,
}

/// A command in the executor queue.
#[derive(Debug, Clone, PartialEq)]
pub struct CommandRecord {
    /// Id.
    pub id: Uuid,
    /// The proposal it executes.
    pub proposal_id: Uuid,
    /// Status.
    pub status: CommandStatus,
    /// What to run.
    pub spec: CommandSpec,
    /// How many times it was leased.
    pub attempts: i32,
    /// Executor holding or last holding it.
    pub leased_by: Option<String>,
    /// Lease end.
    pub lease_expires_at: Option<OffsetDateTime>,
    /// Success report.
    pub result: Option<Value>,
    /// Failure report.
    pub error: Option<Value>,
    /// Queued at.
    pub created_at: OffsetDateTime,
    /// Reported at.
    pub completed_at: Option<OffsetDateTime>,
}

/// A lease to take.
pub struct NewLease {
    /// Executor name.
    pub executor: String,
    /// sha256 hex of the lease token handed to the executor.
    pub lease_token_hash: String,
    /// Now.
    pub now: OffsetDateTime,
    /// Lease end.
    pub expires_at: OffsetDateTime,
}

/// An executor's report.
pub struct NewReport {
    /// Command.
    pub command_id: Uuid,
    /// Reporting executor.
    pub executor: String,
    /// sha256 hex of the presented lease token.
    pub lease_token_hash: String,
    /// Success or failure.
    pub outcome: Outcome,
    /// The `result` or `error` body.
    pub report: Value,
    /// Now.
    pub now: OffsetDateTime,
}

/// Countersign's storage, on either backend.
#[async_trait::async_trait]
pub trait Store: Send + Sync + 'static {
    /// Which backend this is.
    fn backend(&self) -> Backend;
    /// Checks the database answers.
    async fn ping(&self) -> Result<()>;

    /// How many users exist.
    async fn count_users(&self) -> Result<i64>;
    /// Adds a user; `Conflict(UsernameTaken)` if the name is taken.
    async fn insert_user(&self, user: &UserRecord, audit: &AuditEntry) -> Result<()>;
    /// A user by name.
    async fn user_by_username(&self, username: &str) -> Result<Option<UserRecord>>;

    /// Stores a token's hash.
    async fn insert_token(&self, token: &NewToken, audit: &AuditEntry) -> Result<()>;
    /// The principal behind a token hash.
    async fn token_by_hash(&self, token_hash: &str) -> Result<Option<TokenRecord>>;

    /// Stores a proposal with its audit row (and command, if accepted) in one transaction,
    /// or returns the original for a replay of the same request.
    async fn submit_proposal(&self, new: &NewProposal) -> Result<Submitted>;
    /// A proposal by id.
    async fn proposal(&self, id: Uuid) -> Result<Option<ProposalRecord>>;
    /// Proposals in `status`, oldest first.
    async fn proposals_by_status(
        &self,
        status: ProposalStatus,
        limit: i64,
    ) -> Result<Vec<ProposalRecord>>;
    /// Decides a pending proposal: status, authorization, reviewer, command and audit rows
    /// in one transaction. `Conflict(AlreadyDecided)` if someone decided first (or its time ran
    /// out: `Expired`). An approval short of `required_approvals` distinct reviewers is recorded
    /// and the proposal stays `pending`; `Conflict(AlreadyApproved)` if this reviewer approved.
    async fn decide_proposal(&self, decision: &NewDecision) -> Result<ProposalRecord>;
    /// Who has approved a proposal so far, in order.
    async fn approvals(&self, proposal_id: Uuid) -> Result<Vec<(String, OffsetDateTime)>>;

    /// Marks every pending proposal whose time ran out `expired`, each with its audit row,
    /// and returns them. The server runs this periodically; decisions check expiry themselves.
    async fn expire_due(&self, now: OffsetDateTime) -> Result<Vec<ProposalRecord>>;

    /// The command for a proposal.
    async fn command_for_proposal(&self, proposal_id: Uuid) -> Result<Option<CommandRecord>>;
    /// Leases the oldest queued command (or one whose lease expired), if any.
    async fn lease_command(&self, lease: &NewLease) -> Result<Option<CommandRecord>>;
    /// Records an executor's report against the current lease.
    async fn report_command(&self, report: &NewReport) -> Result<CommandRecord>;

    /// Appends one audit row on its own (for events that change no other state, such as a
    /// pre-tool-check decision or a rejected request).
    async fn append_audit(&self, entry: &AuditEntry) -> Result<()>;
    /// The audit trail of one subject, in order.
    async fn audit_for_subject(
        &self,
        subject_type: &str,
        subject_id: &str,
    ) -> Result<Vec<AuditRecord>>;
}

/// A shared store.
pub type DynStore = Arc<dyn Store>;

/// Connects to `url` (`sqlite://…` or `postgres://…`), creating the database if it is missing
/// and applying migrations. Returns the store and the session store for the same database.
pub async fn connect(url: &str) -> Result<(DynStore, crate::auth::session::AnySessionStore)> {
    if url.starts_with("sqlite:") {
        let (store, sessions) = SqliteStore::connect(url).await?;
        Ok((Arc::new(store), sessions))
    } else if url.starts_with("postgres:") || url.starts_with("postgresql:") {
        let (store, sessions) = PgStore::connect(url).await?;
        Ok((Arc::new(store), sessions))
    } else {
        Err(StorageError::Database(sqlx::Error::Configuration(
            "database URL must start with sqlite:// or postgres://".into(),
        )))
    }
}
