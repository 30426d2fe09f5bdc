//! Operator metrics in the Prometheus text format (`GET /metrics`): what the gate is doing and
//! how fast. Each instance keeps its own registry (the `prometheus` crate); counters and
//! histograms are recorded by the use cases as they happen, and the pending-proposal gauge is
//! read from the database at each scrape, so it agrees across instances.
//!
//! The endpoint is closed unless the operator opens it: with `--metrics-token` it answers a
//! bearer of that token (compared in constant time) on the main listener; with
//! `--metrics-bind` it is served, without a token, only on that separate address (keep it on a
//! network Prometheus alone reaches). Neither: `404`.

use std::net::SocketAddr;
use std::time::Duration;

use axum::Router;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use prometheus::{
    HistogramOpts, HistogramVec, IntCounterVec, IntGaugeVec, Opts, Registry, TextEncoder,
};

/// Seconds from submission to a reviewer's final decision: a minute to a week.
const DECISION_BUCKETS: &[f64] = &[
    60.0, 300.0, 900.0, 1_800.0, 3_600.0, 7_200.0, 14_400.0, 28_800.0, 86_400.0, 259_200.0,
    604_800.0,
];
/// Seconds a request path takes: a tenth of a millisecond to ten seconds.
const LATENCY_BUCKETS: &[f64] = &[
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5,
    10.0,
];

/// Seconds one step of a gateway call, or one write group, takes: 50 µs to 10 s, finest below
/// 2 ms, where the gate's own cost lies.
const STEP_BUCKETS: &[f64] = &[
    0.00005, 0.0001, 0.00015, 0.0002, 0.0003, 0.0004, 0.0005, 0.0006, 0.0008, 0.001, 0.00125,
    0.0015, 0.002, 0.0025, 0.003, 0.004, 0.005, 0.0075, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0, 10.0,
];

/// The steps of a gateway call the policy accepted, run at once where it was made (not a held
/// call run later, nor a retry), each a series of `countersign_gateway_call_seconds`.
#[derive(Debug, Clone, Copy)]
pub enum GatewayStep {
    /// From the gateway taking the agent's call to its submission being durable: the policy,
    /// and the durable submission with its lease (which finds the same call still open, if it
    /// is).
    Gate,
    /// The upstream's answer to the call as sent.
    Upstream,
    /// The durable report of the outcome, before the agent is answered.
    Report,
}

impl GatewayStep {
    /// Every step, in the order [`Metrics`] keeps their series.
    const ALL: [GatewayStep; 3] = [
        GatewayStep::Gate,
        GatewayStep::Upstream,
        GatewayStep::Report,
    ];

    fn label(self) -> &'static str {
        match self {
            GatewayStep::Gate => "gate",
            GatewayStep::Upstream => "upstream",
            GatewayStep::Report => "report",
        }
    }
}

/// The states a gateway upstream can be in, each a series of
/// `countersign_gateway_upstream_state`.
const UPSTREAM_STATES: &[&str] = &["starting", "up", "down", "restarting"];

/// Every metric one instance records.
pub struct Metrics {
    registry: Registry,
    pending: IntGaugeVec,
    decisions: IntCounterVec,
    time_to_decision: HistogramVec,
    expiries: IntCounterVec,
    escalations: IntCounterVec,
    break_glass: IntCounterVec,
    leases: IntCounterVec,
    outcomes: IntCounterVec,
    webhooks: IntCounterVec,
    notifications: IntCounterVec,
    gateway_upstreams: IntGaugeVec,
    /// Each gateway step's series, resolved once, in [`GatewayStep::ALL`]'s order.
    gateway_steps: [prometheus::Histogram; 3],
    writes: HistogramVec,
    pruned: IntCounterVec,
    /// Agents' status reads answered by PostgreSQL's point reader, and its statements.
    gathered: IntCounterVec,
    /// The decision paths' latency children, resolved once (a scrape-free hot path: no label lookup).
    check_latency: prometheus::Histogram,
    submission_latency: prometheus::Histogram,
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

/// A metric family that cannot be built or registered is a programming error (a bad name or
/// a duplicate), found by the first test that starts a server.
fn family<M: prometheus::core::Collector + Clone + 'static>(
    registry: &Registry,
    metric: prometheus::Result<M>,
) -> M {
    match metric.and_then(|m| registry.register(Box::new(m.clone())).map(|()| m)) {
        Ok(m) => m,
        Err(e) => panic!("metric family: {e}"),
    }
}

/// Builds metric families and registers them on one registry.
struct Families<'r>(&'r Registry);

impl Families<'_> {
    fn counter(&self, name: &str, help: &str, labels: &[&str]) -> IntCounterVec {
        family(self.0, IntCounterVec::new(Opts::new(name, help), labels))
    }

    fn histogram(&self, name: &str, help: &str, labels: &[&str], buckets: &[f64]) -> HistogramVec {
        let opts = HistogramOpts::new(name, help).buckets(buckets.to_vec());
        family(self.0, HistogramVec::new(opts, labels))
    }

    fn gauge(&self, name: &str, help: &str, labels: &[&str]) -> IntGaugeVec {
        family(self.0, IntGaugeVec::new(Opts::new(name, help), labels))
    }
}

/// The families that time the gate's own work: (the agent API's decision paths, the steps of a
/// gateway call, the writer's groups).
fn timers(f: &Families<'_>) -> (HistogramVec, HistogramVec, HistogramVec) {
    let latency = f.histogram(
        "countersign_request_seconds",
        "Seconds the agent API's decision paths take, by path (pre_tool_check, submission)",
        &["path"],
        LATENCY_BUCKETS,
    );
    let gateway_steps = f.histogram(
        "countersign_gateway_call_seconds",
        "Seconds each step of an accepted MCP gateway call run at once takes: gate (lookup, \
         policy, durable submission and lease), upstream, report (durable)",
        &["step"],
        STEP_BUCKETS,
    );
    let writes = f.histogram(
        "countersign_write_seconds",
        "Seconds the writer's groups take: group (from the writer taking it to its commit's \
         end), commit (the commit alone: the durable flush)",
        &["part"],
        STEP_BUCKETS,
    );
    (latency, gateway_steps, writes)
}

/// The family counting PostgreSQL's gathered status reads and their statements.
fn gathered(f: &Families<'_>) -> IntCounterVec {
    f.counter(
        "countersign_gathered_reads_total",
        "PostgreSQL: agents' status reads answered by the point reader (reads), and the \
         statements that answered them (statements), many reads to a statement under load",
        &["counted"],
    )
}

impl Metrics {
    /// A fresh registry with every family at zero.
    pub fn new() -> Self {
        let r = Registry::new();
        let f = Families(&r);
        let pending = f.gauge(
            "countersign_pending_proposals",
            "Proposals waiting for a reviewer, by domain and risk",
            &["domain", "risk"],
        );
        let (latency, gateway_steps, writes) = timers(&f);
        let metrics = Self {
            check_latency: latency.with_label_values(&["pre_tool_check"]),
            submission_latency: latency.with_label_values(&["submission"]),
            pending,
            decisions: f.counter(
                "countersign_decisions_total",
                "Reviewers' final decisions, by outcome (approved, rejected, changes_requested)",
                &["outcome"],
            ),
            time_to_decision: f.histogram(
                "countersign_time_to_decision_seconds",
                "Seconds from a proposal's submission to its final decision",
                &[],
                DECISION_BUCKETS,
            ),
            expiries: f.counter(
                "countersign_expiries_total",
                "Pending proposals that expired undecided",
                &[],
            ),
            break_glass: f.counter(
                "countersign_break_glass_total",
                "Approvals an admin took alone past the policy's quorum (break-glass)",
                &[],
            ),
            escalations: f.counter(
                "countersign_escalations_total",
                "Escalation tiers raised because nobody decided in time",
                &[],
            ),
            leases: f.counter(
                "countersign_leases_total",
                "Commands handed to executors",
                &[],
            ),
            outcomes: f.counter(
                "countersign_command_outcomes_total",
                "Executors' reports, by the command's resulting status",
                &["status"],
            ),
            webhooks: f.counter(
                "countersign_webhook_attempts_total",
                "Agents' webhook delivery attempts, by result (delivered, retry, failed)",
                &["result"],
            ),
            notifications: f.counter(
                "countersign_notifications_total",
                "Reviewers' notification sends, by channel and result (sent, retry, failed)",
                &["channel", "result"],
            ),
            gateway_upstreams: f.gauge(
                "countersign_gateway_upstream_state",
                "Each MCP gateway upstream's state: 1 for the state it is in now (starting, up, \
                 down, restarting), 0 for the others",
                &["upstream", "state"],
            ),
            gateway_steps: GatewayStep::ALL.map(|s| gateway_steps.with_label_values(&[s.label()])),
            writes,
            pruned: f.counter(
                "countersign_pruned_rows_total",
                "Operational rows deleted past their retention, by table",
                &["table"],
            ),
            gathered: gathered(&f),
            registry: r,
        };
        metrics.start_at_zero();
        metrics
    }

    /// Every series a scrape should see from the start, at zero (a series appears only once
    /// it has a value; a dashboard's rate over a missing one says nothing).
    fn start_at_zero(&self) {
        let none: &[&str] = &[];
        for outcome in ["approved", "rejected", "changes_requested"] {
            self.decisions.with_label_values(&[outcome]);
        }
        self.time_to_decision.with_label_values(none);
        self.expiries.with_label_values(none);
        self.escalations.with_label_values(none);
        self.break_glass.with_label_values(none);
        self.leases.with_label_values(none);
        for result in ["delivered", "retry", "failed"] {
            self.webhooks.with_label_values(&[result]);
        }
        for table in crate::domain::retention::Prunable::ALL {
            self.pruned.with_label_values(&[table.as_str()]);
        }
    }

    /// A reviewer's final decision on a proposal submitted `waited` ago.
    pub fn decided(&self, outcome: &str, waited: Duration) {
        self.decisions.with_label_values(&[outcome]).inc();
        self.time_to_decision
            .with_label_values(&[] as &[&str])
            .observe(waited.as_secs_f64());
    }

    /// `n` pending proposals expired.
    pub fn expired(&self, n: usize) {
        self.expiries
            .with_label_values(&[] as &[&str])
            .inc_by(u64::try_from(n).unwrap_or(u64::MAX));
    }

    /// An admin broke the glass: approved alone what needed more approvers.
    pub fn broke_glass(&self) {
        self.break_glass.with_label_values(&[] as &[&str]).inc();
    }

    /// `n` escalation tiers were raised.
    pub fn escalated(&self, n: usize) {
        self.escalations
            .with_label_values(&[] as &[&str])
            .inc_by(u64::try_from(n).unwrap_or(u64::MAX));
    }

    /// A command was leased.
    pub fn leased(&self) {
        self.leases.with_label_values(&[] as &[&str]).inc();
    }

    /// An executor reported; the command is now `status`.
    pub fn reported(&self, status: &str) {
        self.outcomes.with_label_values(&[status]).inc();
    }

    /// A webhook attempt came to `result` (`delivered`, `retry`, `failed`).
    pub fn webhook_attempt(&self, result: &str) {
        self.webhooks.with_label_values(&[result]).inc();
    }

    /// A notification send on `channel` came to `state` (`sent`, `pending`, `failed`).
    pub fn notification(&self, channel: &str, state: &str) {
        let result = if state == "pending" { "retry" } else { state };
        self.notifications
            .with_label_values(&[channel, result])
            .inc();
    }

    /// `n` rows of `table` were deleted past their retention.
    pub fn pruned(&self, table: &str, n: u64) {
        self.pruned.with_label_values(&[table]).inc_by(n);
    }

    /// Gateway upstream `upstream` is now in `state` (`starting`, `up`, `down`,
    /// `restarting`).
    pub fn gateway_upstream(&self, upstream: &str, state: &str) {
        for each in UPSTREAM_STATES {
            let value = i64::from(*each == state);
            self.gateway_upstreams
                .with_label_values(&[upstream, each])
                .set(value);
        }
    }

    /// A step of a gateway call took `took`.
    pub fn gateway_step(&self, step: GatewayStep, took: Duration) {
        self.gateway_steps[step as usize].observe(took.as_secs_f64());
    }

    /// The writer's timers, (group, commit): the store observes each group's times into them
    /// (`WriterStats::time_into`).
    pub fn write_timers(&self) -> (prometheus::Histogram, prometheus::Histogram) {
        (
            self.writes.with_label_values(&["group"]),
            self.writes.with_label_values(&["commit"]),
        )
    }

    /// The point reader's counters, (reads, statements): the store counts into them
    /// (`Counts::count_into`, PostgreSQL only).
    pub fn gathered_counters(&self) -> (prometheus::IntCounter, prometheus::IntCounter) {
        (
            self.gathered.with_label_values(&["reads"]),
            self.gathered.with_label_values(&["statements"]),
        )
    }

    /// A pre-tool-check took `took`.
    pub fn checked(&self, took: Duration) {
        self.check_latency.observe(took.as_secs_f64());
    }

    /// A submission took `took`.
    pub fn submitted(&self, took: Duration) {
        self.submission_latency.observe(took.as_secs_f64());
    }

    /// The text exposition, with the pending gauge set to `pending` (domain, risk, count).
    pub fn render(&self, pending: &[(String, String, i64)]) -> String {
        self.pending.reset();
        for (domain, risk, n) in pending {
            self.pending.with_label_values(&[domain, risk]).set(*n);
        }
        let mut text = String::new();
        if let Err(e) = TextEncoder::new().encode_utf8(&self.registry.gather(), &mut text) {
            tracing::error!(error = %e, "cannot encode metrics");
        }
        text
    }
}

/// What a scrape reads: this instance's counters, and the pending proposals by domain and risk
/// from the database, so the gauge agrees across instances. The service layer implements it
/// (`Services`); this module names no use case, so the counters sit below the use cases that
/// record them.
pub trait Scraped: Clone + Send + Sync + 'static {
    /// Why the pending proposals could not be read (logged, never shown).
    type Error: std::fmt::Display;
    /// This instance's counters.
    fn counters(&self) -> &Metrics;
    /// The pending proposals: (domain, risk, count).
    fn pending(
        &self,
    ) -> impl Future<Output = Result<Vec<(String, String, i64)>, Self::Error>> + Send;
}

/// Who may scrape: a bearer of `token` (main listener), or anyone (the separate listener).
#[derive(Clone)]
struct Scrape<S> {
    source: S,
    token: Option<String>,
}

/// `GET /metrics` on the main listener, answering only a bearer of `token`; without a token,
/// the route is not there (`404`).
pub fn router<S: Scraped>(source: S, token: Option<String>) -> Router {
    match token.filter(|t| !t.is_empty()) {
        Some(token) => Router::new()
            .route("/metrics", get(scrape::<S>))
            .with_state(Scrape {
                source,
                token: Some(token),
            }),
        None => Router::new(),
    }
}

/// `GET /metrics` without a token, for its own listener (`--metrics-bind`), which
/// [`crate::startup`] serves under the main listener's bounds.
pub fn separate_router<S: Scraped>(source: S) -> Router {
    Router::new()
        .route("/metrics", get(scrape::<S>))
        .with_state(Scrape {
            source,
            token: None,
        })
}

/// The address of the separate metrics listener, bound (a failure to bind stops the start).
pub async fn bind(addr: SocketAddr) -> std::io::Result<tokio::net::TcpListener> {
    tokio::net::TcpListener::bind(addr).await
}

async fn scrape<S: Scraped>(State(scrape): State<Scrape<S>>, headers: HeaderMap) -> Response {
    if let Some(token) = &scrape.token {
        let presented = headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .unwrap_or_default();
        let same: bool =
            subtle::ConstantTimeEq::ct_eq(presented.as_bytes(), token.as_bytes()).into();
        if !same {
            return (
                StatusCode::UNAUTHORIZED,
                [(header::WWW_AUTHENTICATE, "Bearer realm=\"metrics\"")],
                "the metrics token is missing or wrong\n",
            )
                .into_response();
        }
    }
    match scrape.source.pending().await {
        Ok(pending) => (
            [(
                header::CONTENT_TYPE,
                "text/plain; version=0.0.4; charset=utf-8",
            )],
            scrape.source.counters().render(&pending),
        )
            .into_response(),
        Err(e) => {
            tracing::error!(error = %e, "cannot read the pending proposals for metrics");
            (
                StatusCode::SERVICE_UNAVAILABLE,
                "the database is not answering\n",
            )
                .into_response()
        }
    }
}
