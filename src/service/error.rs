//! This layer's errors: [`ServiceError`], every use case's one error, which adapters map to
//! HTTP statuses or page notices (`Storage` is internal and never echoed); the [`Conflict`]s a
//! change can meet; and [`AccountError`], what managing accounts adds. A leaf: every use case
//! names it, it names none of them.

use crate::domain::FieldError;
use crate::domain::command::CommandStatus;
use crate::domain::lifecycle::{DecisionError, ProposalStatus};
use crate::domain::principal::LastAdmin;
use crate::domain::review::grant::GrantState;
use crate::storage::StorageError;
use uuid::Uuid;

/// Why a change conflicts with the current state.
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
    /// The command is not waiting for what was asked (it is in this status).
    CommandState(CommandStatus),
    /// The standing grant is no longer live (it is in this state).
    GrantEnded(GrantState),
    /// The standing grant a submission was routed under ended before it was stored (the
    /// submission is routed again; never answered).
    GrantSpent,
    /// The same gateway call is open again as this proposal, so the one asked about cannot be
    /// released to run again (only one copy of a call is open at a time).
    CallOpenAgain(Uuid),
}

/// A use case's error.
#[derive(Debug, thiserror::Error)]
pub enum ServiceError {
    /// The input breaks the contract; every broken rule by field path.
    #[error("invalid input")]
    Invalid(Vec<FieldError>),
    /// The actor may not do this (`code` names why, e.g. `proposer_mismatch`).
    #[error("{message}")]
    Forbidden {
        /// Machine-readable code.
        code: &'static str,
        /// What went wrong.
        message: String,
    },
    /// A review rule refuses the decision.
    #[error(transparent)]
    Refused(#[from] DecisionError),
    /// The change conflicts with the current state.
    #[error("conflict: {0:?}")]
    Conflict(Conflict),
    /// No such thing (or not the actor's).
    #[error("not found")]
    NotFound,
    /// This kind of principal may not call this use case (the table in
    /// [`crate::domain::access`]).
    #[error(transparent)]
    Denied(#[from] crate::domain::access::Denied),
    /// A GDPR erasure is not possible now.
    #[error(transparent)]
    Erasure(#[from] crate::domain::erasure::ErasureError),
    /// Storage failed.
    #[error(transparent)]
    Storage(#[from] StorageError),
}

impl From<crate::domain::contract::canonical::Uncanonical> for ServiceError {
    /// A value the trail would hash has no canonical form: a failure of the write, like
    /// storage's.
    fn from(e: crate::domain::contract::canonical::Uncanonical) -> Self {
        ServiceError::Storage(e.into())
    }
}

/// Why an account could not be created.
#[derive(Debug, thiserror::Error)]
pub enum AccountError {
    /// Bad name, role or password.
    #[error("{0}")]
    Invalid(String),
    /// The username is taken.
    #[error("a user named `{0}` already exists")]
    Taken(String),
    /// No active account or token of that name.
    #[error("no active {0}")]
    Missing(String),
    /// The change would leave no enabled admin.
    #[error(transparent)]
    LastAdmin(#[from] LastAdmin),
    /// The store failed.
    #[error(transparent)]
    Service(#[from] ServiceError),
}
