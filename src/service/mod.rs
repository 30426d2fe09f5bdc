//! Countersign's use cases, one file each: submit a proposal, answer a pre-tool-check, decide,
//! expire, lease, report, and manage accounts. Each is one function over [`Services`] (the
//! store, the policy and the clock) and the actor, and each is used alike by the JSON API, the
//! reviewer's pages and the CLI. Handlers and server functions only parse, call and present.
//!
//! A use case reads what it needs, applies the domain's rules, and hands one change to
//! [`Store::write`]: state, audit events and queue rows commit together or not at all.
//!
//! Errors: [`ServiceError`] is this layer's one error; adapters map it to HTTP statuses or page
//! notices. `Storage` is internal and never echoed.

mod accounts;
mod audit;
mod decide;
mod executor;
mod expire;
mod pre_tool_check;
mod queries;
mod submit;

use std::sync::Arc;

use time::OffsetDateTime;

pub use accounts::{AccountError, Bootstrap};
pub use audit::{Verified, VerifyError, verify_bundle};
pub use decide::{Decided, Reviewer};
pub use executor::{Leased, Report};
pub use pre_tool_check::CheckAnswer;
pub use queries::QUEUE_LIMIT;
pub use submit::Submitted;

use crate::domain::FieldError;
use crate::domain::command::{CommandSpec, CommandStatus};
use crate::domain::contract::proposal::ToolProposal;
use crate::domain::contract::vocab::AuthorizationState;
use crate::domain::lifecycle::{DecisionError, ProposalStatus};
use crate::domain::policy::model::Policy;
use crate::storage::{ReadConn, StorageError, Store};

/// Where time comes from: the system clock, or a fixed one in tests.
pub trait Clock: Send + Sync + 'static {
    /// Now, in UTC.
    fn now(&self) -> OffsetDateTime;
}

/// The system clock.
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> OffsetDateTime {
        OffsetDateTime::now_utc()
    }
}

/// What every use case works with. Cheap to clone.
#[derive(Clone)]
pub struct Services {
    store: Store,
    policy: Arc<Policy>,
    clock: Arc<dyn Clock>,
}

impl Services {
    /// Use cases over `store` under `policy`, on the system clock.
    pub fn new(store: Store, policy: Arc<Policy>) -> Self {
        Self::with_clock(store, policy, Arc::new(SystemClock))
    }

    /// The same, on another clock.
    pub fn with_clock(store: Store, policy: Arc<Policy>, clock: Arc<dyn Clock>) -> Self {
        Self {
            store,
            policy,
            clock,
        }
    }

    /// The store.
    pub fn store(&self) -> &Store {
        &self.store
    }

    /// The policy in force.
    pub fn policy(&self) -> &Arc<Policy> {
        &self.policy
    }

    /// Now, by this service's clock.
    pub fn now(&self) -> OffsetDateTime {
        self.clock.now()
    }

    /// The command an approval (or the policy's `accept`) queues: exactly the approved request,
    /// runnable only by the executors the policy allows for the tool.
    fn command_spec(
        &self,
        contract: &ToolProposal,
        request_hash: &str,
        approver: &str,
        authorization: AuthorizationState,
        now: OffsetDateTime,
    ) -> CommandSpec {
        CommandSpec::for_approved(contract, request_hash, approver, authorization, now)
            .only_for(self.policy.executors_for(&contract.tool.name))
    }

    async fn read(&self) -> Result<ReadConn, ServiceError> {
        Ok(self.store.read().await?)
    }
}

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
    /// Storage failed.
    #[error(transparent)]
    Storage(#[from] StorageError),
}
