//! Builds the application: storage, the Leptos pages with sessions and the reviewer's desk,
//! the JSON API, the security headers on every response, and the listener, served by
//! [`crate::serve`] under its timeouts and connection cap. Tests build it the same way on a
//! random port.

use crate::domain::principal::Principal;
use crate::domain::retention::{self, Prunable, Retention};
use std::net::SocketAddr;
use std::sync::Arc;

use app::ports::{DynDesk, DynLedger};
use app::{App, shell};
use axum::Router;
use axum::middleware;
use leptos::prelude::*;
use leptos_axum::{LeptosRoutes, generate_route_list};
use tower_http::trace::TraceLayer;
use tower_sessions::{Expiry, SessionManagerLayer};

use crate::api::{self, ApiShared, ApiState};
use crate::audit::checkpoint::{CheckpointKey, Trust, load_or_create_key};
use crate::auth::oidc::Oidc;
use crate::auth::session::AnySessionStore;
use crate::config::{Settings, redact_url};
use crate::domain::policy::model::Policy;
use crate::service::PolicyFile;
use crate::service::Services;
use crate::storage::changes::{CREDENTIALS_CHANNEL, PROPOSAL_CHANNEL};
use crate::storage::policies::POLICY_CHANNEL;
use crate::storage::{self, Store};
use crate::web::ReviewDesk;
use crate::web::ledger::AuditLedger;
use crate::web::security::{self, Edge};
use crate::web::session::{SessionConfig, attach_session_port};

/// The app's routes: fixed at compile time, so listed once per process. (Leptos lists them by
/// rendering the app in a special mode; doing that while another server in the same process
/// renders pages — as parallel tests do — must not happen.)
static ROUTES: std::sync::OnceLock<Vec<leptos_axum::AxumRouteListing>> = std::sync::OnceLock::new();

/// Why the application could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// The database could not be opened or migrated.
    #[error("database {url}: {source}")]
    Storage {
        /// The URL, password redacted.
        url: String,
        /// Why.
        source: storage::StorageError,
    },
    /// Leptos.toml could not be read.
    #[error("reading {path}: {message}")]
    LeptosConfig {
        /// The file.
        path: String,
        /// Why.
        message: String,
    },
    /// The policy file could not be read or is invalid.
    #[error("policy {path}:\n{message}")]
    Policy {
        /// The file.
        path: String,
        /// Every error, one per line.
        message: String,
    },
    /// The audit checkpoint key could not be read or created.
    #[error("signing key: {0}")]
    AuditKey(#[from] crate::audit::checkpoint::KeyError),
    /// The start could not be recorded in the audit trail.
    #[error("recording the policy in the audit trail: {0}")]
    Record(#[from] crate::service::ServiceError),
    /// Single sign-on was configured, but the OpenID provider could not be set up.
    #[error("single sign-on: {0}")]
    Oidc(#[from] crate::auth::oidc::OidcSetupError),
    /// The address could not be bound.
    #[error("binding {addr}: {source}")]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// Why.
        source: std::io::Error,
    },
}

/// A built application, bound and ready to serve.
pub struct Application {
    listener: tokio::net::TcpListener,
    router: Router,
    services: Services,
    checkpoint_key: Option<Arc<CheckpointKey>>,
    /// PostgreSQL: where to listen for other instances' queue changes.
    listen_url: Option<String>,
    /// Timeouts and the connection cap.
    limits: crate::config::ConnectionLimits,
    /// The separate metrics listener (`--metrics-bind`), bound.
    metrics_listener: Option<tokio::net::TcpListener>,
    /// How long operational rows are kept.
    retention: Retention,
}

/// Opens the database, creating and migrating it, and returns it with its session store.
pub async fn open_store(url: &str) -> Result<(Store, AnySessionStore), StartError> {
    storage::connect(url)
        .await
        .map_err(|source| StartError::Storage {
            url: redact_url(url),
            source,
        })
}

/// The OpenID provider of `settings`, discovered (`None`: no single sign-on configured).
pub async fn single_sign_on(settings: &Settings) -> Result<Option<Arc<Oidc>>, StartError> {
    let Some(oidc) = &settings.oidc else {
        return Ok(None);
    };
    let discovered = Oidc::discover(oidc).await?;
    tracing::info!(issuer = %oidc.issuer, "single sign-on through the OpenID provider");
    Ok(Some(Arc::new(discovered)))
}

/// Reads the Leptos settings (Leptos.toml, overridden by `LEPTOS_*` variables).
pub fn leptos_options(settings: &Settings) -> Result<LeptosOptions, StartError> {
    let path = settings.leptos_config.to_string_lossy().into_owned();
    get_configuration(Some(&path))
        .map(|conf| conf.leptos_options)
        .map_err(|e| StartError::LeptosConfig {
            path,
            message: e.to_string(),
        })
}

/// Puts the policy in force at start: the `--policy` file (activated when its version is not
/// the active one) or the database's active version; logged and recorded as `policy.loaded`.
async fn start_policy(services: &Services, file: Option<PolicyFile>) -> Result<(), StartError> {
    let source = if file.is_some() { "file" } else { "database" };
    services
        .start_policy(file)
        .await
        .map_err(StartError::Record)?;
    let policy = services.policy();
    tracing::info!(policy = %policy.version(), tools = policy.tools().len(), "policy loaded");
    services
        .record_policy_loaded(source)
        .await
        .map_err(StartError::Record)
}

/// Loads the policy file in `settings`, when there is one.
pub fn load_policy(settings: &Settings) -> Result<Option<PolicyFile>, StartError> {
    let Some(path) = &settings.policy else {
        return Ok(None);
    };
    let shown = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|e| StartError::Policy {
        path: shown.clone(),
        message: e.to_string(),
    })?;
    let policy = Policy::from_toml_str(&text).map_err(|errors| StartError::Policy {
        path: shown,
        message: errors
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join("\n"),
    })?;
    Ok(Some(PolicyFile { text, policy }))
}

/// The ports the pages' server functions reach through Leptos context, one set for the router.
#[derive(Clone)]
struct Ports {
    desk: DynDesk,
    account: app::ports::DynAccountDesk,
    grants: app::ports::DynGrantsDesk,
    runs: app::ports::DynRunsDesk,
    ledger: DynLedger,
    admin: app::ports::DynAdmin,
    policy: app::ports::policy::DynPolicyDesk,
}

impl Ports {
    fn new(services: &Services, gateway: Option<Arc<crate::gateway::Gateway>>) -> Self {
        let review = ReviewDesk::new(services.clone());
        Self {
            desk: review.clone(),
            account: review.clone(),
            grants: review.clone(),
            runs: review,
            ledger: AuditLedger::new(services.clone()),
            admin: crate::web::admin::AccountsAdmin::new(services.clone(), gateway),
            policy: crate::web::policy::PolicyPages::new(services.clone()),
        }
    }

    /// Provides each port as context for the request being rendered.
    fn provide(&self) {
        provide_context(self.desk.clone());
        provide_context(self.account.clone());
        provide_context(self.grants.clone());
        provide_context(self.runs.clone());
        provide_context(self.ledger.clone());
        provide_context(self.admin.clone());
        provide_context(self.policy.clone());
    }
}

/// The whole router over the use cases; single sign-on's routes when `oidc` is set, the MCP
/// gateway's when `gateway` is.
pub fn router(
    services: Services,
    sessions: AnySessionStore,
    settings: &Settings,
    options: LeptosOptions,
    (oidc, gateway): (Option<Arc<Oidc>>, Option<Arc<crate::gateway::Gateway>>),
) -> Router {
    let ports = Ports::new(&services, gateway.clone());
    let routes = ROUTES.get_or_init(|| generate_route_list(App)).clone();
    let export = crate::web::export::router(services.clone(), ports.desk.clone());
    let single_sign_on = app::ports::SingleSignOn(oidc.is_some());
    let context = move || {
        ports.provide();
        provide_context(single_sign_on);
        security::provide_request_nonce();
    };
    let sso = match oidc {
        Some(oidc) => crate::web::oidc::router(services.clone(), oidc),
        None => Router::new(),
    };
    let session_config = SessionConfig {
        services: services.clone(),
        store: Arc::new(sessions.clone()),
        limits: settings.sessions,
        secure: settings.secure_cookies,
    };
    let web = Router::new()
        .leptos_routes_with_context(&options, routes, context.clone(), {
            let options = options.clone();
            move || shell(options.clone())
        })
        .fallback(leptos_axum::file_and_error_handler_with_context(
            context, shell,
        ))
        .with_state(options)
        .merge(export)
        .merge(crate::web::live::router(services.clone()))
        .merge(sso)
        .layer(middleware::from_fn(crate::web::fn_status::error_status))
        .layer(middleware::from_fn_with_state(
            session_config,
            attach_session_port,
        ))
        .layer(session_layer(sessions, settings));
    let metrics = crate::metrics::router(
        services.clone(),
        settings.metrics_token.as_ref().map(|t| t.0.clone()),
    );
    let slack = crate::web::slack::router(
        services.clone(),
        (settings.notify.slack_signing_secret.as_ref()).map(|s| s.0.clone()),
    );
    let api = api::router(ApiState::new(ApiShared {
        services,
        settings: Arc::new(settings.clone()),
        limits: Arc::new(api::limits::TokenLimits::new(settings.rate)),
        agent_hub: Arc::default(),
        gateway,
    }));
    let edge = Edge {
        hsts: settings.secure_cookies,
        trusted_proxies: settings.trusted_proxies.clone().into(),
    };
    let app = api.merge(metrics).merge(slack).merge(web);
    crate::web::body_limit::limited(app, api::MAX_BODY_BYTES)
        .layer(security::EdgeLayer(edge))
        .layer(TraceLayer::new_for_http())
}

/// Sessions in the database: an `HttpOnly`, `SameSite=Lax` cookie (`Secure` behind HTTPS)
/// whose stored expiry is the idle limit from its last save; the session port saves a used
/// session at most once a minute, which moves that expiry on.
fn session_layer(
    sessions: AnySessionStore,
    settings: &Settings,
) -> SessionManagerLayer<AnySessionStore> {
    SessionManagerLayer::new(sessions)
        .with_name(crate::web::session::SESSION_COOKIE)
        .with_secure(settings.secure_cookies)
        .with_http_only(true)
        .with_same_site(crate::web::session::SESSION_SAME_SITE)
        .with_expiry(Expiry::OnInactivity(settings.sessions.idle))
}

impl Application {
    /// Opens storage, reads Leptos.toml and binds the listener.
    pub async fn build(settings: Settings) -> Result<Self, StartError> {
        Self::build_with_clock(settings, Arc::new(crate::service::SystemClock)).await
    }

    /// The same, on another clock (tests move time on to lapse leases and end windows).
    pub async fn build_with_clock(
        settings: Settings,
        clock: Arc<dyn crate::service::Clock>,
    ) -> Result<Self, StartError> {
        let policy_file = load_policy(&settings)?;
        let (store, sessions) = open_store(&settings.database_url).await?;
        let options = leptos_options(&settings)?;
        let oidc = single_sign_on(&settings).await?;
        let addr = settings.bind.unwrap_or(options.site_addr);
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .map_err(|source| StartError::Bind { addr, source })?;
        let checkpoint_key = match &settings.audit_key {
            Some(path) => Some(Arc::new(CheckpointKey::load_or_create(path)?)),
            None => None,
        };
        let mut services = Services::with_clock(store, Arc::new(Policy::builtin()), clock)
            .with_webhooks(settings.webhooks)
            .with_notifications(settings.notify.clone());
        if let Some(gateway) = &settings.gateway {
            services = services.with_gateway_upstreams(gateway.names());
        }
        if let Some(key) = &checkpoint_key {
            // The page's verification trusts only checkpoints this server's key signed (and
            // its earlier keys'). A trail without any yet (a new server) is not a failure.
            let mut keys = vec![key.public_key()];
            keys.extend(settings.audit_earlier_keys.iter().cloned());
            services = services.with_checkpoint_trust(Trust {
                keys,
                require_one: false,
            });
        }
        match &settings.grant_key {
            Some(path) => {
                services = services.with_grant_key(load_or_create_key(path)?);
            }
            None => tracing::warn!(
                "no grant key file: executor grants are signed with a key that lives only as \
                 long as this process"
            ),
        }
        start_policy(&services, policy_file).await?;
        // The first queue page after a start would otherwise wait for the grouped read over
        // every pending proposal (1.1 s at 243,000 pending): an instance behind a balancer
        // takes that time before its health check passes, not in a reviewer's page.
        if let Err(e) = services.read_queue_counts().await {
            tracing::warn!(error = %e, "reading the queue's counts failed; the first page reads them");
        }
        let gateway =
            (settings.gateway.as_ref()).map(|g| crate::gateway::Gateway::start(g, &services));
        let router = router(
            services.clone(),
            sessions,
            &settings,
            options,
            (oidc, gateway),
        );
        let metrics_listener = match settings.metrics_bind {
            Some(addr) => Some(
                crate::metrics::bind(addr)
                    .await
                    .map_err(|source| StartError::Bind { addr, source })?,
            ),
            None => None,
        };
        Ok(Application {
            listener,
            router,
            services,
            checkpoint_key,
            listen_url: (!settings.database_url.starts_with("sqlite:"))
                .then(|| settings.database_url.clone()),
            limits: settings.limits,
            metrics_listener,
            retention: settings.retention,
        })
    }

    /// The bound address (useful with port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.listener
            .local_addr()
            .unwrap_or_else(|_| SocketAddr::from(([127, 0, 0, 1], 0)))
    }

    /// The separate metrics listener's address, if there is one (`--metrics-bind`).
    pub fn metrics_addr(&self) -> Option<SocketAddr> {
        self.metrics_listener
            .as_ref()
            .and_then(|l| l.local_addr().ok())
    }

    /// The use cases, for start-up tasks.
    pub fn services(&self) -> &Services {
        &self.services
    }

    /// Serves until SIGINT or SIGTERM, then finishes in-flight requests. Pending proposals whose
    /// time ran out are expired every [`EXPIRY_SWEEP`].
    pub async fn run(self) -> std::io::Result<()> {
        #[cfg(feature = "bench-unchained")]
        tracing::error!(
            "built with `bench-unchained`: audit rows are NOT hash-chained; for benchmarks only"
        );
        tokio::spawn(sweep_expired(self.services.clone()));
        tokio::spawn(sweep_alerts(self.services.clone()));
        tokio::spawn(sweep_queue(self.services.clone()));
        spawn_shared(
            &self.services,
            self.listen_url.clone(),
            self.metrics_listener,
            self.limits,
        );
        tokio::spawn(purge_sign_in_failures(self.services.clone()));
        tokio::spawn(prune_past_retention(self.services.clone(), self.retention));
        match self.checkpoint_key.clone() {
            Some(key) => {
                tokio::spawn(sign_checkpoints(self.services.clone(), key));
            }
            None => tracing::warn!("no audit key: the chain head is not signed"),
        }
        crate::serve::serve(self.listener, self.router, self.limits, shutdown_signal()).await
    }

    /// Serves until the process ends (tests). The queue is swept only when a test asks;
    /// webhooks go out as in [`Application::run`].
    pub async fn run_forever(self) -> std::io::Result<()> {
        spawn_shared(
            &self.services,
            self.listen_url.clone(),
            self.metrics_listener,
            self.limits,
        );
        let forever = std::future::pending::<()>();
        crate::serve::serve(self.listener, self.router, self.limits, forever).await
    }
}

/// The tasks every server runs, tests' included: hearing other instances' changes
/// (PostgreSQL at `listen_url`), following the active policy, sending agents' webhooks and reviewers' notifications, and the
/// separate metrics listener, served as the main one is (`crate::serve` under `limits`, and the
/// body limit), with a connection cap of its own, so a scrape gets in when the main one is full.
fn spawn_shared(
    services: &Services,
    listen_url: Option<String>,
    metrics: Option<tokio::net::TcpListener>,
    limits: crate::config::ConnectionLimits,
) {
    if let Some(url) = listen_url {
        tokio::spawn(listen_for_changes(url, services.clone()));
    }
    tokio::spawn(follow_policy(services.clone()));
    tokio::spawn(dispatch(services.clone(), Outbox::Webhooks));
    tokio::spawn(dispatch(services.clone(), Outbox::Notifications));
    if let Some(listener) = metrics {
        let router = crate::metrics::separate_router(services.clone());
        let router = crate::web::body_limit::limited(router, api::MAX_BODY_BYTES);
        tokio::spawn(async move {
            let forever = std::future::pending::<()>();
            if let Err(e) = crate::serve::serve(listener, router, limits, forever).await {
                tracing::error!(error = %e, "the metrics listener stopped");
            }
        });
    }
}

/// How often the server settles lapsed leases and expires commands past their window.
pub const QUEUE_SWEEP: std::time::Duration = std::time::Duration::from_secs(1);

async fn sweep_queue(services: Services) {
    let mut tick = tokio::time::interval(QUEUE_SWEEP);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        if let Err(e) = services.sweep_queue().await {
            tracing::error!(error = %e, "queue sweep failed");
        }
    }
}

/// How often an instance looks at the stored active policy version (and the candidates in a
/// shadow run) without being told: the bound on following a change another process made.
pub const POLICY_FOLLOW: std::time::Duration = std::time::Duration::from_millis(250);

/// Follows the stored active policy version and shadow runs, every [`POLICY_FOLLOW`].
async fn follow_policy(services: Services) {
    let mut tick = tokio::time::interval(POLICY_FOLLOW);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    // A failure that repeats (a stored version that no longer loads) is logged once, until
    // following works again or fails otherwise.
    let mut failing: Option<String> = None;
    loop {
        tick.tick().await;
        match services.follow_policy().await {
            Ok(_) => failing = None,
            Err(e) => {
                let e = e.to_string();
                if failing.as_deref() != Some(e.as_str()) {
                    tracing::error!(error = %e, "following the active policy failed");
                    failing = Some(e);
                }
            }
        }
    }
}

/// Follows the stored active policy now (another instance activated a version).
fn follow_now(services: &Services) {
    let services = services.clone();
    tokio::spawn(async move {
        if let Err(e) = services.follow_policy().await {
            tracing::error!(error = %e, "following the active policy failed");
        }
    });
}

/// PostgreSQL: wakes this instance's waiting leases when another instance queues a command
/// (`NOTIFY countersign_queue`, sent at commit), its agents and pages waiting on a proposal when
/// another instance changes its status (`NOTIFY countersign_proposal, '<id>'`), and drops the
/// API tokens it trusts when one is revoked anywhere (`NOTIFY countersign_credentials`).
///
/// Notifications sent while the listening connection is down are lost, so each time it is
/// (re)established this instance trusts no cached token, and every waiter and waiting lease
/// looks again ([`after_a_gap`]).
async fn listen_for_changes(url: String, services: Services) {
    let channels = [
        "countersign_queue",
        PROPOSAL_CHANNEL,
        CREDENTIALS_CHANNEL,
        POLICY_CHANNEL,
    ];
    loop {
        match sqlx::postgres::PgListener::connect(&url).await {
            Ok(mut listener) => {
                if let Err(e) = listener.listen_all(channels).await {
                    tracing::error!(error = %e, "cannot listen for change notifications");
                } else {
                    after_a_gap(&services);
                    hear(&mut listener, &services).await;
                }
            }
            Err(e) => {
                tracing::error!(error = %e, "cannot connect to listen for change notifications")
            }
        }
        tokio::time::sleep(std::time::Duration::from_secs(1)).await;
    }
}

/// Hands each notification on until the connection fails. `try_recv` (unlike `recv`) says when
/// the connection was lost: the listener reconnects on the next call, and what was sent
/// meanwhile is gone.
async fn hear(listener: &mut sqlx::postgres::PgListener, services: &Services) {
    loop {
        match listener.try_recv().await {
            Ok(Some(n)) if n.channel() == PROPOSAL_CHANNEL => {
                let id = uuid::Uuid::parse_str(n.payload()).ok();
                services.store().changes().proposals_changed(id);
            }
            Ok(Some(n)) if n.channel() == CREDENTIALS_CHANNEL => services.credentials_revoked(),
            Ok(Some(n)) if n.channel() == POLICY_CHANNEL => follow_now(services),
            Ok(Some(_)) => services.queue_signal().wake(),
            Ok(None) => {
                tracing::warn!("change notifications interrupted; reconnecting");
                after_a_gap(services);
            }
            Err(e) => {
                tracing::warn!(error = %e, "change notifications interrupted");
                return;
            }
        }
    }
}

/// What may have been missed while no notification could arrive: a revocation (trust no
/// cached token), a queued command (waiting leases look), a status change (waiters look).
fn after_a_gap(services: &Services) {
    follow_now(services);
    services.credentials_revoked();
    services.queue_signal().wake();
    services.store().changes().wake_all();
}

/// How often the dispatcher looks for due webhook deliveries (retries, and deliveries queued
/// by other instances) when no commit of this instance woke it.
pub const WEBHOOK_SWEEP: std::time::Duration = std::time::Duration::from_secs(1);

/// What a dispatcher sends.
#[derive(Debug, Clone, Copy)]
enum Outbox {
    /// Agents' webhook deliveries.
    Webhooks,
    /// Reviewers' notifications (only when a channel is configured).
    Notifications,
}

/// Sends what `outbox` holds: at once when a commit queued some, and every [`WEBHOOK_SWEEP`]
/// (retries, digests whose window ended, rows other instances queued).
async fn dispatch(services: Services, outbox: Outbox) {
    let changes = services.store().changes().clone();
    if matches!(outbox, Outbox::Notifications) && changes.notify_channels().is_empty() {
        return;
    }
    loop {
        let sent = match outbox {
            Outbox::Webhooks => services.deliver_webhooks().await,
            Outbox::Notifications => services.deliver_notifications().await,
        };
        if let Err(e) = sent {
            tracing::error!(error = %e, ?outbox, "sending failed; trying again shortly");
        }
        let woken = async {
            match outbox {
                Outbox::Webhooks => changes.deliveries().await,
                Outbox::Notifications => changes.notifications().await,
            }
        };
        tokio::select! {
            () = woken => {}
            () = tokio::time::sleep(WEBHOOK_SWEEP) => {}
        }
    }
}

/// How often the server expires pending proposals whose time ran out.
pub const EXPIRY_SWEEP: std::time::Duration = std::time::Duration::from_secs(15);

async fn sweep_expired(services: Services) {
    let mut tick = tokio::time::interval(EXPIRY_SWEEP);
    loop {
        tick.tick().await;
        match services.expire_due().await {
            Ok(expired) if !expired.is_empty() => {
                tracing::info!(count = expired.len(), "proposals expired")
            }
            Ok(_) => {}
            Err(e) => {
                tracing::warn!(error = %e, "expiring proposals failed; retrying at the next sweep")
            }
        }
    }
}

/// How often the server looks for proposals about to expire and escalation tiers now due.
pub const ALERT_SWEEP: std::time::Duration = std::time::Duration::from_secs(5);

async fn sweep_alerts(services: Services) {
    let notifying = !services.store().changes().notify_channels().is_empty();
    if !notifying && services.policy().shortest_escalation().is_none() {
        return;
    }
    let mut tick = tokio::time::interval(ALERT_SWEEP);
    loop {
        tick.tick().await;
        match services.raise_alerts().await {
            Ok(0) => {}
            Ok(raised) => tracing::info!(raised, "expiry warnings and escalations raised"),
            Err(e) => {
                tracing::warn!(error = %e, "raising alerts failed; retrying at the next sweep")
            }
        }
    }
}

/// The head is signed once this many events were written since the last checkpoint…
pub const CHECKPOINT_EVERY_EVENTS: i64 = 1_000;
/// …or when it moved and this long has passed.
pub const CHECKPOINT_EVERY: std::time::Duration = std::time::Duration::from_secs(60);

async fn sign_checkpoints(services: Services, key: Arc<CheckpointKey>) {
    let mut tick = tokio::time::interval(std::time::Duration::from_secs(1));
    let mut last_signed = tokio::time::Instant::now() - CHECKPOINT_EVERY;
    loop {
        tick.tick().await;
        let due = match services.latest_checkpoint().await {
            Ok((last, head)) => {
                let since = head.seq - last.map_or(0, |c| c.seq);
                since >= CHECKPOINT_EVERY_EVENTS
                    || (since > 0 && last_signed.elapsed() >= CHECKPOINT_EVERY)
            }
            Err(e) => {
                tracing::warn!(error = %e, "reading the chain head failed; retrying");
                false
            }
        };
        if !due {
            continue;
        }
        match services
            .sign_checkpoint(&Principal::System("checkpoint"), &key)
            .await
        {
            Ok(Some(cp)) => {
                last_signed = tokio::time::Instant::now();
                tracing::info!(seq = cp.seq, "audit checkpoint signed");
            }
            Ok(None) => {}
            Err(e) => tracing::warn!(error = %e, "signing a checkpoint failed; retrying"),
        }
    }
}

/// How often old sign-in failure counts are deleted. (Web sessions that ended are pruned with
/// the other operational rows: [`prune_past_retention`].)
pub const SIGN_IN_PURGE: std::time::Duration = std::time::Duration::from_secs(600);

async fn purge_sign_in_failures(services: Services) {
    let mut tick = tokio::time::interval(SIGN_IN_PURGE);
    loop {
        tick.tick().await;
        if let Err(e) = services.purge_sign_in_failures().await {
            tracing::warn!(error = %e, "forgetting old sign-in failures failed; retrying later");
        }
    }
}

/// Every [`retention::EVERY`], deletes each kind of operational row past its retention, a
/// batch at a time with a pause between batches, so the writer serves agents meanwhile.
async fn prune_past_retention(services: Services, retention: Retention) {
    let who = Principal::System("retention");
    let mut tick = tokio::time::interval(retention::EVERY);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        for kind in Prunable::ALL {
            let Some(keep) = retention.of(kind) else {
                continue;
            };
            let mut pruned = 0;
            loop {
                match services.prune(&who, kind, keep).await {
                    Ok(n) if n < u64::from(retention::BATCH) => {
                        pruned += n;
                        break;
                    }
                    Ok(n) => pruned += n,
                    Err(e) => {
                        let table = kind.as_str();
                        tracing::warn!(error = %e, table, "pruning failed; retrying later");
                        break;
                    }
                }
                tokio::time::sleep(retention::PAUSE).await;
            }
            if pruned > 0 {
                tracing::info!(
                    table = kind.as_str(),
                    rows = pruned,
                    "pruned past retention"
                );
            }
        }
    }
}

async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {},
        () = term => {},
    }
    tracing::info!("shutting down");
}
