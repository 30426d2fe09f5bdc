//! What every use case works with: [`Services`] (the store, the policy, the clock and this
//! instance's caches and clients), how it is built, and the checks every use case starts with.
//! The use cases themselves are `impl Services` blocks in their own files, which name this one;
//! this file names only the leaf files that hold its parts.

use std::sync::Arc;

use time::OffsetDateTime;

use super::error::ServiceError;
use super::facet_cache::FacetCache;
use super::notify_settings::{NotifySettings, Windows};
use super::policy_cell::{PolicyCell, Shadow};
use super::queue_signal::QueueSignal;
use super::token_cache::TokenCache;
use super::webhook_client::{WebhookSettings, Webhooks};
use crate::audit::checkpoint::Trust;
use crate::domain::access::{self, Reach, UseCase};
use crate::domain::command::CommandSpec;
use crate::domain::contract::proposal::ToolProposal;
use crate::domain::contract::vocab::AuthorizationState;
use crate::domain::gateway::call::call_prefix;
use crate::domain::policy::model::Policy;
use crate::domain::principal::Principal;
use crate::metrics::{Metrics, Scraped};
use crate::storage::{ReadConn, Store};

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
    pub(super) store: Store,
    /// The active version, swapped in place when another one is activated (here, on another
    /// instance, or at the shell): every decision reads the one in force when it starts.
    pub(super) policy: Arc<PolicyCell>,
    /// Candidates in a shadow run, and the routing of new decisions under them.
    pub(super) shadow: Arc<Shadow>,
    pub(super) clock: Arc<dyn Clock>,
    pub(super) tokens: Arc<TokenCache>,
    pub(super) queue: Arc<QueueSignal>,
    pub(super) grant_key: Arc<ed25519_dalek::SigningKey>,
    /// The public keys (hex) a checkpoint may be signed with, when known.
    pub(super) checkpoint_trust: Arc<Trust>,
    pub(super) facets: Arc<FacetCache>,
    pub(super) hashing: Arc<crate::auth::password::HashPool>,
    pub(super) webhooks: Arc<Webhooks>,
    pub(super) metrics: Arc<Metrics>,
    pub(super) notify: Arc<NotifySettings>,
    pub(super) windows: Arc<Windows>,
    /// The MCP gateway's upstreams by name: their tools' commands go to the built-in gateway
    /// executor only.
    pub(super) gateway_upstreams: Arc<[String]>,
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
        let metrics = Arc::new(Metrics::new());
        let (group, commit) = metrics.write_timers();
        store.writer_stats().time_into(group, commit);
        if let Some(counts) = store.gathered_counts() {
            let (reads, statements) = metrics.gathered_counters();
            counts.count_into(reads, statements);
        }
        Self {
            store,
            policy: Arc::new(PolicyCell::new(policy)),
            shadow: Arc::default(),
            clock,
            tokens: Arc::default(),
            queue: Arc::default(),
            grant_key: Arc::new(ed25519_dalek::SigningKey::generate(&mut rand::rngs::OsRng)),
            checkpoint_trust: Arc::default(),
            facets: Arc::default(),
            hashing: Arc::default(),
            webhooks: Arc::new(Webhooks::new(WebhookSettings::default())),
            metrics,
            notify: Arc::default(),
            windows: Arc::default(),
            gateway_upstreams: Arc::from(Vec::new()),
        }
    }

    /// The same, with an MCP gateway in front of these upstreams: every tool named
    /// `{upstream}.…` is theirs, and its approved commands go to the built-in gateway executor
    /// only, whatever scope another executor's token has.
    pub fn with_gateway_upstreams(mut self, names: Vec<String>) -> Self {
        self.gateway_upstreams = Arc::from(names);
        self
    }

    /// Whether `tool` (an internal name) belongs to a gateway upstream.
    pub fn is_gateway_tool(&self, tool: &str) -> bool {
        crate::domain::gateway::ToolName::from_internal(tool)
            .is_some_and(|n| self.gateway_upstreams.contains(&n.upstream))
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
    pub fn metrics(&self) -> &Metrics {
        &self.metrics
    }

    /// The same, sending webhooks under `settings`.
    pub fn with_webhooks(mut self, settings: WebhookSettings) -> Self {
        self.webhooks = Arc::new(Webhooks::new(settings));
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

    /// Whether `who` may call `use_case`, and what it may reach there: every use case asks
    /// this first. Deny by default.
    pub fn authorize<'p>(
        &self,
        who: &'p Principal,
        use_case: UseCase,
    ) -> Result<Reach<'p>, ServiceError> {
        Ok(access::authorize(who, use_case)?)
    }

    /// The agent `who` is, when the table lets it call `use_case`.
    pub(crate) fn agent_of<'p>(
        &self,
        who: &'p Principal,
        use_case: UseCase,
    ) -> Result<&'p str, ServiceError> {
        self.named(who, use_case, |p| match p {
            Principal::Agent(name) => Some(name),
            _ => None,
        })
    }

    /// The executor `who` is, when the table lets it call `use_case`.
    pub(crate) fn executor_of<'p>(
        &self,
        who: &'p Principal,
        use_case: UseCase,
    ) -> Result<&'p str, ServiceError> {
        self.named(who, use_case, |p| match p {
            Principal::Executor(name) => Some(name),
            _ => None,
        })
    }

    /// The name `pick` finds in `who`, when the table lets `who` call `use_case`; refused when
    /// `who` is not that kind of principal.
    pub(super) fn named<'p>(
        &self,
        who: &'p Principal,
        use_case: UseCase,
        pick: fn(&'p Principal) -> Option<&'p String>,
    ) -> Result<&'p str, ServiceError> {
        self.authorize(who, use_case)?;
        pick(who).map(String::as_str).ok_or_else(|| {
            access::Denied {
                who: who.who(),
                use_case,
            }
            .into()
        })
    }

    /// The store.
    pub fn store(&self) -> &Store {
        &self.store
    }

    /// The policy in force now (a decision reads it once, and keeps the version it read).
    pub fn policy(&self) -> Arc<Policy> {
        self.policy.load()
    }

    /// Hears each time another version comes into force on this instance.
    pub fn policy_changes(&self) -> tokio::sync::watch::Receiver<u64> {
        self.policy.swaps()
    }

    /// Makes `policy` the one in force on this instance (its activation is already stored).
    pub(super) fn swap_policy(&self, policy: Arc<Policy>) {
        self.policy.swap(policy);
    }

    /// Now, by this service's clock.
    pub fn now(&self) -> OffsetDateTime {
        self.clock.now()
    }

    /// The command an approval (or the policy's `accept`) queues: exactly the approved request,
    /// runnable only by the executors the policy allows for the tool (a gateway call's: the
    /// gateway executor alone), within the policy's approval window.
    pub(super) fn approved_command(
        &self,
        contract: &ToolProposal,
        request_hash: &str,
        approver: &str,
        authorization: AuthorizationState,
        now: OffsetDateTime,
    ) -> NewQueued {
        let tool = &contract.tool.name;
        let gateway = [crate::domain::gateway::GATEWAY_EXECUTOR.to_owned()];
        let policy = self.policy();
        // A call made through the gateway (its key has the gateway's shape) is the gateway
        // executor's alone also where this instance serves no gateway (an instance for the
        // pages only): no external executor's scope ever matches it.
        let through_gateway = call_prefix(&contract.idempotency_key).is_some();
        let executors = match self.is_gateway_tool(tool) || through_gateway {
            true => &gateway[..],
            false => policy.executors_for(tool),
        };
        let spec = CommandSpec::for_approved(contract, request_hash, approver, authorization, now)
            .only_for(executors);
        let window = policy.execute_within_secs(tool);
        NewQueued {
            id: uuid::Uuid::now_v7(),
            spec,
            execute_by: now + time::Duration::seconds(i64::try_from(window).unwrap_or(i64::MAX)),
        }
    }

    pub(super) async fn read(&self) -> Result<ReadConn, ServiceError> {
        Ok(self.store.read().await?)
    }
}

impl Scraped for Services {
    type Error = ServiceError;

    fn counters(&self) -> &Metrics {
        &self.metrics
    }

    async fn pending(&self) -> Result<Vec<(String, String, i64)>, ServiceError> {
        self.pending_by_domain_and_risk().await
    }
}
