//! The mix: agents, reviewers and executors, each a task with its own HTTP client, until the
//! run's time is up; then the figures per operation. A request that gets no answer (the
//! instance died, the balancer cut it) is an error, counted, and sent again where sending it
//! again is safe (a submission with its idempotency key, a report with its lease token); only
//! answers count as acknowledged, and only those go in the ledger (a submission with its
//! idempotency key, so the checker can prove one key names one proposal). Beside them the
//! agent's event stream is watched and its webhook received ([`crate::events`]).
//!
//! `probe` is one submission of its own, sent until it is acknowledged within a bound:
//! `scripts/faults` runs it after each fault, to prove writes are acknowledged again.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use reqwest::Client;
use serde_json::{Value, json};
use tokio::sync::mpsc;
use uuid::Uuid;

use crate::events;
use crate::ledger::{self, Entry, Ledger};

/// `loadgen run`.
#[derive(clap::Args)]
pub struct RunArgs {
    /// Countersign's address (one instance, or the balancer in front of several).
    #[arg(long)]
    url: String,
    /// An agent's token.
    #[arg(long, env = "LOADGEN_AGENT_TOKEN", hide_env_values = true)]
    pub(crate) agent_token: String,
    /// The agent that token is for (its proposals' `proposed_by`).
    #[arg(long, default_value = "agent-a")]
    agent: String,
    /// An executor's token allowed to run `crm.*`.
    #[arg(long, env = "LOADGEN_EXECUTOR_TOKEN", hide_env_values = true)]
    executor_token: String,
    /// A reviewer's username.
    #[arg(long)]
    reviewer: String,
    /// The reviewer's password.
    #[arg(long, env = "LOADGEN_PASSWORD", hide_env_values = true)]
    password: String,
    /// How long to drive the mix.
    #[arg(long, default_value_t = 30)]
    seconds: u64,
    /// Agent tasks.
    #[arg(long, default_value_t = 8)]
    agents: usize,
    /// Reviewer tasks (each its own session).
    #[arg(long, default_value_t = 2)]
    reviewers: usize,
    /// Executor tasks.
    #[arg(long, default_value_t = 4)]
    executors: usize,
    /// Where the ledger goes.
    #[arg(long)]
    ledger: PathBuf,
    /// Tasks keeping the agent's event stream (`GET /api/v1/events`) open.
    #[arg(long, default_value_t = 2)]
    watchers: usize,
    /// Where the webhook receiver listens (the agent token's callback URL's address), repeated
    /// for each address a sender reaches it at; none without it.
    #[arg(long)]
    pub(crate) webhook_listen: Vec<std::net::SocketAddr>,
    /// The secret the agent token's webhook deliveries are signed with.
    #[arg(long, env = "LOADGEN_WEBHOOK_SECRET", hide_env_values = true)]
    pub(crate) webhook_secret: Option<String>,
}

/// What every task shares.
pub(crate) struct Ctx {
    pub(crate) args: RunArgs,
    pub(crate) until: Instant,
    pub(crate) ledger: Ledger,
    stats: Mutex<BTreeMap<&'static str, Op>>,
    pending: tokio::sync::Mutex<mpsc::UnboundedReceiver<Uuid>>,
}

/// One operation's figures: acknowledged answers' latencies, and errors.
#[derive(Default)]
struct Op {
    millis: Vec<f64>,
    errors: u64,
}

impl Ctx {
    pub(crate) fn over(&self) -> bool {
        Instant::now() >= self.until
    }

    pub(crate) fn acked(&self, op: &'static str, since: Instant) {
        let ms = since.elapsed().as_secs_f64() * 1000.0;
        let mut stats = self.stats.lock().expect("stats");
        stats.entry(op).or_default().millis.push(ms);
    }

    pub(crate) fn failed(&self, op: &'static str) {
        let mut stats = self.stats.lock().expect("stats");
        stats.entry(op).or_default().errors += 1;
    }

    pub(crate) fn url(&self, path: &str) -> String {
        format!("{}{path}", self.args.url.trim_end_matches('/'))
    }
}

/// Runs the mix for `args.seconds`, then prints the figures.
pub async fn run(args: RunArgs) -> Result<(), String> {
    let (ledger, writer) = Ledger::create(&args.ledger).map_err(|e| e.to_string())?;
    let (to_review, pending) = mpsc::unbounded_channel();
    let started = Instant::now();
    let ctx = Arc::new(Ctx {
        until: started + Duration::from_secs(args.seconds),
        ledger,
        stats: Mutex::default(),
        pending: tokio::sync::Mutex::new(pending),
        args,
    });
    let mut tasks = Vec::new();
    for n in 0..ctx.args.agents {
        let (ctx, to_review) = (Arc::clone(&ctx), to_review.clone());
        tasks.push(tokio::spawn(agent(ctx, n, to_review)));
    }
    drop(to_review);
    for _ in 0..ctx.args.reviewers {
        tasks.push(tokio::spawn(reviewer(Arc::clone(&ctx))));
    }
    for n in 0..ctx.args.executors {
        tasks.push(tokio::spawn(executor(Arc::clone(&ctx), n)));
    }
    for _ in 0..ctx.args.watchers {
        tasks.push(tokio::spawn(events::watch(Arc::clone(&ctx))));
    }
    let receiver = events::receiver(&ctx).await?;
    for t in tasks {
        t.await.map_err(|e| format!("a task failed: {e}"))?;
    }
    events::stop(receiver).await;
    let elapsed = started.elapsed().as_secs_f64();
    print_figures(&ctx, elapsed);
    let Ok(ctx) = Arc::try_unwrap(ctx) else {
        return Err("a task outlived the run".into());
    };
    drop(ctx);
    writer.await.map_err(|e| e.to_string())
}

fn print_figures(ctx: &Ctx, elapsed: f64) {
    println!(
        "{:<12} {:>8} {:>7} {:>9} {:>9} {:>9}",
        "operation", "acked", "errors", "per s", "p50 ms", "p99 ms"
    );
    let mut stats = ctx.stats.lock().expect("stats");
    for (op, s) in stats.iter_mut() {
        s.millis.sort_by(f64::total_cmp);
        let at = |q: f64| {
            let n = s.millis.len();
            if n == 0 {
                return 0.0;
            }
            s.millis[((n as f64 * q).ceil() as usize).clamp(1, n) - 1]
        };
        println!(
            "{op:<12} {:>8} {:>7} {:>9.1} {:>9.2} {:>9.2}",
            s.millis.len(),
            s.errors,
            s.millis.len() as f64 / elapsed,
            at(0.50),
            at(0.99)
        );
    }
}

/// A proposal body of `agent` with the idempotency key `key`, numbered so every one differs.
pub(crate) fn proposal(agent: &str, task: usize, i: u64, key: &str) -> Value {
    json!({
        "proposal_id": Uuid::new_v4(),
        "proposed_by": agent,
        "timestamp": "2026-11-29T10:00:00Z",
        "domain": "sales",
        "tool": {"name": "crm.update_contact", "version": "2024-01"},
        "intent": {"summary": "Update the contact's email", "reasoning": "The customer asked for it."},
        "parameters": {"contact_id": format!("c-{task}-{i}"), "email": format!("n{i}@example.com")},
        "risk_level": "medium",
        "approval_required": true,
        "compliance_context": {"gdpr": false, "hipaa": false},
        "idempotency_key": key,
        "rollback_supported": true,
        "blast_radius": "small",
        "target_refs": [{"type": "crm_contact", "id": format!("c-{task}-{i}")}]
    })
}

/// A pre-tool-check the built-in policy answers.
fn check_event() -> Value {
    json!({
        "tool_name": "crm.get_contact", "tool_category": "private_read",
        "authorization_state": "authenticated", "evidence_refs": ["ticket-42"],
        "risk_domain": "customer_support", "proposed_arguments": {"contact_id": "c-1"},
        "recommended_route": "accept"
    })
}

/// How many times a request that got no answer is sent again.
const TRIES: usize = 20;
/// The pause before sending again.
pub(crate) const BACKOFF: Duration = Duration::from_millis(100);

/// The proposal's id and status a submission's answer names.
fn answered(v: &Value) -> Option<(Uuid, String)> {
    let id = v["proposal"]["id"].as_str()?.parse().ok()?;
    let status = v["proposal"]["status"].as_str()?.to_owned();
    Some((id, status))
}

/// Submits `body` until it is answered (its idempotency key makes every resend safe): the
/// proposal's id and status.
async fn submit(ctx: &Ctx, client: &Client, body: &Value) -> Option<(Uuid, String)> {
    for _ in 0..TRIES {
        let since = Instant::now();
        let sent = client
            .post(ctx.url("/api/v1/proposals"))
            .bearer_auth(&ctx.args.agent_token)
            .json(body)
            .send()
            .await;
        match sent {
            Ok(r) if matches!(r.status().as_u16(), 200 | 201) => {
                let v: Value = r.json().await.ok()?;
                let answer = answered(&v)?;
                ctx.acked("submit", since);
                return Some(answer);
            }
            Ok(r) if r.status().is_client_error() && r.status().as_u16() != 429 => {
                ctx.failed("submit");
                return None;
            }
            _ => ctx.failed("submit"),
        }
        tokio::time::sleep(BACKOFF).await;
    }
    None
}

/// Submits proposal `i` of agent task `task` with a key of its own, records the acknowledged
/// answer with its key and hands a pending proposal to the reviewers. Every fourth is sent
/// again, as an agent that lost the answer would: that answer is recorded too, and the checker
/// proves both name the one proposal stored for the key.
async fn submit_recorded(
    ctx: &Ctx,
    client: &Client,
    (task, i): (usize, u64),
    to_review: &mpsc::UnboundedSender<Uuid>,
) -> Option<Uuid> {
    let key = format!("loadgen-{}", Uuid::new_v4());
    let body = proposal(&ctx.args.agent, task, i, &key);
    let (id, status) = submit(ctx, client, &body).await?;
    let pending = status == "pending";
    ctx.ledger.record(Entry::Submit {
        proposal: id,
        status,
        key: Some(key.clone()),
    });
    if pending {
        let _ = to_review.send(id);
    }
    if i % 4 == 0
        && let Some((again, status)) = submit(ctx, client, &body).await
    {
        if again != id {
            ctx.failed("resubmit");
        }
        ctx.ledger.record(Entry::Submit {
            proposal: again,
            status,
            key: Some(key),
        });
    }
    Some(id)
}

async fn agent(ctx: Arc<Ctx>, task: usize, to_review: mpsc::UnboundedSender<Uuid>) {
    let client = Client::new();
    let mut last = None;
    let mut i = 0;
    while !ctx.over() {
        i += 1;
        last = submit_recorded(&ctx, &client, (task, i), &to_review)
            .await
            .or(last);
        let since = Instant::now();
        let checked = client
            .post(ctx.url("/api/v1/pre-tool-check"))
            .bearer_auth(&ctx.args.agent_token)
            .json(&check_event())
            .send()
            .await;
        let answered = match checked {
            Ok(r) if r.status().is_success() => r.json::<serde_json::Value>().await.ok(),
            _ => None,
        };
        let check_id = (answered.as_ref())
            .and_then(|a| a["check_id"].as_str())
            .and_then(|id| id.parse::<Uuid>().ok());
        match check_id {
            Some(check) => {
                ctx.acked("check", since);
                ctx.ledger.record(Entry::Check { check });
            }
            None => ctx.failed("check"),
        }
        // Every fourth round waits on the newest proposal (`?wait=1`).
        if let Some(id) = last.filter(|_| i % 4 == 0) {
            let since = Instant::now();
            let waited = client
                .get(ctx.url(&format!("/api/v1/proposals/{id}?wait=1")))
                .bearer_auth(&ctx.args.agent_token)
                .send()
                .await;
            match waited {
                Ok(r) if r.status().is_success() => ctx.acked("wait", since),
                _ => ctx.failed("wait"),
            }
        }
    }
}

/// A signed-in reviewer's client, or why not.
async fn sign_in(ctx: &Ctx) -> Option<Client> {
    let client = Client::builder()
        .cookie_store(true)
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .ok()?;
    let csrf = csrf_of(&client, &ctx.url("/login")).await?;
    let r = client
        .post(ctx.url("/fn/login"))
        .header("accept", "text/html")
        .header("referer", ctx.url("/login"))
        .form(&[
            ("csrf_token", csrf.as_str()),
            ("username", &ctx.args.reviewer),
            ("password", &ctx.args.password),
        ])
        .send()
        .await
        .ok()?;
    r.status().is_redirection().then_some(client)
}

/// The page at `url`'s CSRF token and the name it asks typed before approving, if any.
async fn page_of(client: &Client, url: &str) -> Option<(String, Option<String>)> {
    let r = client
        .get(url)
        .header("accept", "text/html")
        .send()
        .await
        .ok()?;
    if !r.status().is_success() {
        return None;
    }
    let html = r.text().await.ok()?;
    let marker = "name=\"csrf_token\" value=\"";
    let start = html.find(marker)? + marker.len();
    let csrf = html.get(start..start + 64)?.to_owned();
    let confirm = html.find("data-testid=\"confirm-name\">").and_then(|i| {
        let from = i + "data-testid=\"confirm-name\">".len();
        let end = html[from..].find("</code>")? + from;
        Some(html[from..end].replace("<code>", "").replace("&amp;", "&"))
    });
    Some((csrf, confirm))
}

async fn csrf_of(client: &Client, url: &str) -> Option<String> {
    page_of(client, url).await.map(|(csrf, _)| csrf)
}

async fn reviewer(ctx: Arc<Ctx>) {
    let mut client = None;
    let mut n = 0u64;
    loop {
        let next = {
            let mut pending = ctx.pending.lock().await;
            tokio::time::timeout(Duration::from_millis(200), pending.recv()).await
        };
        let id = match next {
            Ok(Some(id)) => id,
            Ok(None) => return,
            Err(_) if ctx.over() => return,
            Err(_) => continue,
        };
        n += 1;
        let verdict = if n.is_multiple_of(10) {
            "rejected"
        } else {
            "approved"
        };
        for _ in 0..5 {
            if client.is_none() {
                client = sign_in(&ctx).await;
            }
            let Some(c) = &client else {
                ctx.failed("sign_in");
                tokio::time::sleep(BACKOFF).await;
                continue;
            };
            match decide(&ctx, c, id, verdict).await {
                Some(true) => break,
                Some(false) => {
                    ctx.failed("decide");
                    break;
                }
                None => {
                    // No answer (an instance died, the database is away): not at once again.
                    ctx.failed("decide");
                    tokio::time::sleep(BACKOFF).await;
                }
            }
        }
    }
}

/// Decides `id` through its page's form: `Some(true)` when the page confirmed it, `Some(false)`
/// when it refused, `None` without an answer.
async fn decide(ctx: &Ctx, client: &Client, id: Uuid, verdict: &str) -> Option<bool> {
    let since = Instant::now();
    let page = format!("/proposals/{id}");
    let (csrf, confirm) = page_of(client, &ctx.url(&page)).await?;
    let id_text = id.to_string();
    let mut form = vec![
        ("csrf_token", csrf.as_str()),
        ("id", id_text.as_str()),
        ("verdict", verdict),
    ];
    if verdict == "rejected" {
        form.push(("reason", "loadgen: not this one"));
    }
    if let Some(name) = confirm.as_deref() {
        form.push(("confirm", name));
    }
    let r = client
        .post(ctx.url("/fn/decide_proposal"))
        .header("accept", "text/html")
        .header("referer", ctx.url(&page))
        .form(&form)
        .send()
        .await
        .ok()?;
    let location = r.headers().get("location")?.to_str().ok()?.to_owned();
    let done = location.contains(&format!("notice={verdict}"));
    if done {
        ctx.acked("decide", since);
        ctx.ledger.record(Entry::Decide {
            proposal: id,
            verdict: verdict.to_owned(),
        });
    }
    Some(done)
}

async fn executor(ctx: Arc<Ctx>, task: usize) {
    let client = Client::new();
    let mut n = task as u64;
    while !ctx.over() {
        let since = Instant::now();
        let leased = client
            .post(ctx.url("/api/v1/executor/lease"))
            .bearer_auth(&ctx.args.executor_token)
            .json(&json!({"wait": 1, "lease_seconds": 30}))
            .send()
            .await;
        let lease: Value = match leased {
            Ok(r) if r.status().as_u16() == 204 => continue,
            Ok(r) if r.status().is_success() => match r.json().await {
                Ok(v) => v,
                Err(_) => {
                    ctx.failed("lease");
                    continue;
                }
            },
            _ => {
                ctx.failed("lease");
                tokio::time::sleep(BACKOFF).await;
                continue;
            }
        };
        ctx.acked("lease", since);
        let ids = (
            lease["command"]["id"].as_str().and_then(|s| s.parse().ok()),
            lease["command"]["proposal_id"]
                .as_str()
                .and_then(|s| s.parse().ok()),
            lease["lease_token"].as_str(),
        );
        let (Some(command), Some(proposal), Some(token)) = ids else {
            ctx.failed("lease");
            continue;
        };
        ctx.ledger.record(Entry::Lease { command, proposal });
        ctx.ledger.record(Entry::Run { command });
        n += 1;
        run_one(&ctx, &client, command, token, n.is_multiple_of(10)).await;
    }
}

/// Heartbeats once, then completes (or fails, with nothing done) until a report is answered.
async fn run_one(ctx: &Ctx, client: &Client, command: Uuid, token: &str, fail: bool) {
    let since = Instant::now();
    let beat = client
        .post(ctx.url(&format!("/api/v1/executor/commands/{command}/heartbeat")))
        .bearer_auth(&ctx.args.executor_token)
        .json(&json!({"lease_token": token}))
        .send()
        .await;
    match beat {
        Ok(r) if r.status().is_success() => ctx.acked("heartbeat", since),
        _ => ctx.failed("heartbeat"),
    }
    let (path, body, outcome) = if fail {
        let body = json!({"lease_token": token, "error": {"message": "loadgen: a failure"},
            "side_effect": "none"});
        ("fail", body, "failed")
    } else {
        let body = json!({"lease_token": token, "result": {"ok": true}});
        ("complete", body, "succeeded")
    };
    for _ in 0..TRIES {
        let since = Instant::now();
        let r = client
            .post(ctx.url(&format!("/api/v1/executor/commands/{command}/{path}")))
            .bearer_auth(&ctx.args.executor_token)
            .json(&body)
            .send()
            .await;
        match r {
            Ok(r) if r.status().is_success() => {
                ctx.acked("report", since);
                ctx.ledger.record(Entry::Report {
                    command,
                    outcome: outcome.to_owned(),
                });
                return;
            }
            // Refused: an earlier, unanswered report of ours already settled it.
            Ok(r) if r.status().as_u16() == 409 => {
                ctx.failed("report");
                return;
            }
            _ => ctx.failed("report"),
        }
        tokio::time::sleep(BACKOFF).await;
    }
}

/// `loadgen probe`.
#[derive(clap::Args)]
pub struct ProbeArgs {
    /// Countersign's address (the balancer).
    #[arg(long)]
    url: String,
    /// An agent's token.
    #[arg(long, env = "LOADGEN_AGENT_TOKEN", hide_env_values = true)]
    agent_token: String,
    /// The agent that token is for (the proposal's `proposed_by`).
    #[arg(long, default_value = "agent-a")]
    agent: String,
    /// How long the submission may take to be acknowledged, in seconds (a request that is
    /// under way then still gets its 5 s).
    #[arg(long, default_value_t = 30)]
    within: u64,
    /// The ledger its acknowledged answer is appended to.
    #[arg(long)]
    ledger: PathBuf,
}

/// How long one probe request may wait for its answer.
const PROBE_REQUEST: Duration = Duration::from_secs(5);

/// `loadgen probe`: one submission with an idempotency key of its own, sent (again, with that
/// key, whenever it gets no answer) until it is acknowledged `201` or `200`; its answer is
/// appended to the ledger and printed, each try that failed on stderr. Fails when none comes
/// within `--within` seconds.
pub async fn probe(args: ProbeArgs) -> Result<(), String> {
    let client = Client::builder()
        .timeout(PROBE_REQUEST)
        .build()
        .map_err(|e| e.to_string())?;
    let key = format!("loadgen-probe-{}", Uuid::new_v4());
    let body = proposal(&args.agent, 0, 0, &key);
    let url = format!("{}/api/v1/proposals", args.url.trim_end_matches('/'));
    let started = Instant::now();
    let until = started + Duration::from_secs(args.within);
    let mut last = String::from("nothing sent");
    while Instant::now() < until {
        let sent = client
            .post(&url)
            .bearer_auth(&args.agent_token)
            .json(&body)
            .send()
            .await;
        let r = match sent {
            Ok(r) => r,
            Err(e) => {
                last = format!("no answer: {e}");
                eprintln!("probe: +{} ms {last}", started.elapsed().as_millis());
                tokio::time::sleep(BACKOFF).await;
                continue;
            }
        };
        let code = r.status().as_u16();
        if r.status().is_client_error() && code != 429 {
            return Err(format!("the submission was refused: {code}"));
        }
        let answer = r.json::<Value>().await.ok();
        match answer.as_ref().and_then(answered) {
            Some((id, status)) if matches!(code, 200 | 201) => {
                let ms = started.elapsed().as_millis();
                println!("probe: {code} in {ms} ms, proposal {id} ({status})");
                let entry = Entry::Submit {
                    proposal: id,
                    status,
                    key: Some(key),
                };
                return ledger::append(&args.ledger, &entry);
            }
            _ => {
                last = format!("answered {code}: {answer:?}");
                eprintln!("probe: +{} ms {last}", started.elapsed().as_millis());
            }
        }
        tokio::time::sleep(BACKOFF).await;
    }
    Err(format!(
        "no submission acknowledged within {} s (last: {last})",
        args.within
    ))
}
