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
mod administer;
mod audit;
mod charts;
mod decide;
mod desk;
mod executor;
mod expire;
mod export;
mod ledger;
mod mail;
mod notify;
mod pre_tool_check;
mod queries;
mod queue;
mod reach;
mod regulated;
mod review;
mod sign_in;
mod slack;
mod sso;
mod submit;
mod tokens;
mod wait;
mod webhooks;

use std::sync::Arc;

use time::OffsetDateTime;

pub use crate::audit::checkpoint::Trust;
pub use accounts::{AccountError, Bootstrap, CreatedToken, TokenRequest};
pub use audit::{Verified, VerifyError, verify_bundle};
pub use charts::{CHART_DAYS, Charts, DayOutcomes, DomainLatency, Tally};
pub use decide::{Decided, Reviewer};
pub use desk::{FACETS_FRESH, Facets, QUEUE_PAGE, QueuePage};
pub use executor::{Grant, LeaseRequest, Leased, Report};
pub use ledger::{COMMIT_LAG, ChainState, Cursor, SCAN_BUDGET, TRAIL_PAGE, TrailPage};
pub use mail::{Mailer, check_address};
pub use notify::{ChannelUrl, DEFAULT_EXPIRY_WARNING, NotifySettings, SigningSecret};
pub use pre_tool_check::CheckAnswer;
pub use queries::QUEUE_LIMIT;
pub use queue::{QueueSignal, Swept};
pub use review::{AgentHistory, withholds_personal_data};
pub use sign_in::{SessionStamp, SignIn};
pub use slack::SlackReply;
pub use sso::SsoSignIn;
pub use submit::Submitted;
pub use wait::{AgentView, MAX_WAIT};
pub use webhooks::{RotateWhich, RotatedSecret, WebhookSettings};

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
    tokens: Arc<tokens::TokenCache>,
    queue: Arc<QueueSignal>,
    grant_key: Arc<ed25519_dalek::SigningKey>,
    /// The public keys (hex) a checkpoint may be signed with, when known.
    checkpoint_trust: Arc<Trust>,
    facets: Arc<desk::FacetCache>,
    hashing: Arc<crate::auth::password::HashPool>,
    webhooks: Arc<webhooks::Webhooks>,
    metrics: Arc<crate::metrics::Metrics>,
    notify: Arc<NotifySettings>,
    windows: Arc<notify::Windows>,
}

/// A command to queue, as an approval (or the policy's `accept`) makes it.
pub(crate) struct NewQueued {
    /// Its id.
    pub id: uuid::Uuid,
    /// Exactly what was approved.
    pub spec: CommandSpec,
    /// End of the approval window (policy `execute_within`).
    pub execute_by: OffsetDateTime,
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
            tokens: Arc::default(),
            queue: Arc::default(),
            grant_key: Arc::new(ed25519_dalek::SigningKey::generate(&mut rand::rngs::OsRng)),
            checkpoint_trust: Arc::default(),
            facets: Arc::default(),
            hashing: Arc::default(),
            webhooks: Arc::new(webhooks::Webhooks::new(WebhookSettings::default())),
            metrics: Arc::default(),
            notify: Arc::default(),
            windows: Arc::default(),
        }
    }

    /// The same, notifying reviewers on the channels `settings` configures: from now on every
    /// status change that needs a person queues a notification per channel.
    pub fn with_notifications(mut self, settings: NotifySettings) -> Self {
        self.store
            .changes()
            .set_notify_channels(settings.channels());
        self.notify = Arc::new(settings);
        self
    }

    /// What this instance has counted, for `GET /metrics`.
    pub fn metrics(&self) -> &crate::metrics::Metrics {
        &self.metrics
    }

    /// The same, sending webhooks under `settings`.
    pub fn with_webhooks(mut self, settings: WebhookSettings) -> Self {
        self.webhooks = Arc::new(webhooks::Webhooks::new(settings));
        self
    }

    /// The same, signing executor grants with `key` (read from its file) rather than with the
    /// key generated for this process.
    pub fn with_grant_key(mut self, key: ed25519_dalek::SigningKey) -> Self {
        self.grant_key = Arc::new(key);
        self
    }

    /// The same, trusting only checkpoints signed with one of `trust`'s keys (the server's own
    /// checkpoint key and its earlier ones, or keys an operator kept): verifying fails on a
    /// checkpoint under any other key, so whoever can write the database cannot re-sign a
    /// rewritten trail.
    pub fn with_checkpoint_trust(mut self, trust: Trust) -> Self {
        self.checkpoint_trust = Arc::new(trust);
        self
    }

    /// The checkpoint keys this instance trusts.
    pub(crate) fn checkpoint_trust(&self) -> &Trust {
        &self.checkpoint_trust
    }

    /// The password hashing pool: at most a few argon2 runs at once.
    pub fn hashing(&self) -> &crate::auth::password::HashPool {
        &self.hashing
    }

    /// The executor queue's wake-up signal (long-polling leases wait on it).
    pub fn queue_signal(&self) -> &Arc<QueueSignal> {
        &self.queue
    }

    /// API tokens were revoked elsewhere (another instance, the CLI): trust none of the
    /// cached ones; the next request reads the table.
    pub fn credentials_revoked(&self) {
        self.tokens.clear();
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
    /// runnable only by the executors the policy allows for the tool, within the policy's
    /// approval window.
    fn approved_command(
        &self,
        contract: &ToolProposal,
        request_hash: &str,
        approver: &str,
        authorization: AuthorizationState,
        now: OffsetDateTime,
    ) -> NewQueued {
        let tool = &contract.tool.name;
        let spec = CommandSpec::for_approved(contract, request_hash, approver, authorization, now)
            .only_for(self.policy.executors_for(tool));
        let window = self.policy.execute_within_secs(tool);
        NewQueued {
            id: uuid::Uuid::now_v7(),
            spec,
            execute_by: now + time::Duration::seconds(i64::try_from(window).unwrap_or(i64::MAX)),
        }
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
    /// The command is not waiting for what was asked (it is in this status).
    CommandState(CommandStatus),
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
    /// A GDPR erasure is not possible now.
    #[error(transparent)]
    Erasure(#[from] crate::domain::erasure::ErasureError),
    /// Storage failed.
    #[error(transparent)]
    Storage(#[from] StorageError),
}
