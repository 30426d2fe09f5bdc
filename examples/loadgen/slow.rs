//! `loadgen slow`: slow clients and a flood of bad tokens, while the mix runs elsewhere.
//!
//! Straight at the instances (not through the balancer, whose own timeouts would cut them
//! first): `--headers` clients each send a request's line and headers a byte a second, never
//! finishing them, and `--bodies` clients each send whole headers (with the agent's token, so
//! the body is read) and then a 4 KiB body a byte a second. Through the balancer: `--flood`
//! tasks, each from a loopback address of its own (127.0.0.2, 127.0.0.3, …, which the balancer
//! forwards in `X-Forwarded-For`), send reads with random bearer tokens as fast as they are
//! answered, so the instances' throttle of unknown tokens meets many clients, not one, and the
//! good client's address is none of theirs. Meanwhile a good
//! client reads one proposal of its own (submitted first) through the balancer every 50 ms,
//! as it did for `--baseline` seconds before the phase.
//!
//! It fails unless every header trickler is cut (or answered) within `--header-timeout` plus
//! `--margin` of connecting, every body trickler within `--body-timeout` plus `--margin`, and
//! the flood got answers and only `401` or `429`. It prints how long the tricklers lasted,
//! what the flood was answered, and the good reads' p50 and p99 before and during the phase
//! (their ratio is reported, never judged: the machine is shared).

use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use reqwest::Client;
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use uuid::Uuid;

/// `loadgen slow`.
#[derive(clap::Args)]
pub struct SlowArgs {
    /// The balancer's address (the flood and the good reads go through it).
    #[arg(long)]
    url: String,
    /// An instance's address (`host:port`), repeated; the tricklers are spread over them.
    #[arg(long, required = true)]
    instance: Vec<String>,
    /// An agent's token (the good reads', and the body tricklers').
    #[arg(long, env = "LOADGEN_AGENT_TOKEN", hide_env_values = true)]
    agent_token: String,
    /// The agent that token is for.
    #[arg(long, default_value = "agent-a")]
    agent: String,
    /// Clients trickling headers.
    #[arg(long, default_value_t = 50)]
    headers: usize,
    /// Clients trickling a body.
    #[arg(long, default_value_t = 50)]
    bodies: usize,
    /// Tasks sending reads with random tokens, each from its own loopback address (at most
    /// 250).
    #[arg(long, default_value_t = 32, value_parser = clap::value_parser!(u8).range(0..=250))]
    flood: u8,
    /// The instances' header timeout, in seconds.
    #[arg(long, default_value_t = 10)]
    header_timeout: u64,
    /// The instances' body timeout, in seconds.
    #[arg(long, default_value_t = 30)]
    body_timeout: u64,
    /// How much later than its timeout a trickler may still be cut, in seconds.
    #[arg(long, default_value_t = 5)]
    margin: u64,
    /// Seconds of good reads before the phase.
    #[arg(long, default_value_t = 3)]
    baseline: u64,
}

/// How a trickler ended.
#[derive(Debug, Clone, Copy)]
enum Ending {
    /// The server closed the connection, after this long.
    Cut(Duration),
    /// The server answered with this status, after this long.
    Answered(Duration, u16),
    /// Still open at its limit.
    Lasted,
    /// Never connected.
    Refused,
}

impl Ending {
    fn after(self) -> Option<Duration> {
        match self {
            Ending::Cut(d) | Ending::Answered(d, _) => Some(d),
            Ending::Lasted | Ending::Refused => None,
        }
    }
}

/// Connects to `addr`, writes `head` at once, then a byte of `drip` a second (the last one
/// over and over) until the server closes the connection or answers, or `limit` passes.
async fn trickle(addr: String, head: Vec<u8>, drip: Vec<u8>, limit: Duration) -> Ending {
    let started = Instant::now();
    let Ok(Ok(stream)) = tokio::time::timeout(limit, TcpStream::connect(&addr)).await else {
        return Ending::Refused;
    };
    let _ = stream.set_nodelay(true);
    let (mut rd, mut wr) = stream.into_split();
    if wr.write_all(&head).await.is_err() {
        return Ending::Cut(started.elapsed());
    }
    let deadline = tokio::time::Instant::from_std(started + limit);
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    let (mut buf, mut got) = ([0u8; 1024], Vec::new());
    let mut next = 0;
    loop {
        tokio::select! {
            () = tokio::time::sleep_until(deadline) => return Ending::Lasted,
            _ = tick.tick() => {
                let byte = drip[next.min(drip.len() - 1)];
                next += 1;
                if wr.write_all(&[byte]).await.is_err() {
                    return ended(&got, started);
                }
            }
            read = rd.read(&mut buf) => match read {
                Ok(0) | Err(_) => return ended(&got, started),
                Ok(n) => {
                    got.extend_from_slice(&buf[..n]);
                    if got.windows(2).any(|w| w == b"\r\n") {
                        return ended(&got, started);
                    }
                }
            },
        }
    }
}

/// `Answered` with the status line's code in `got`, or `Cut` when nothing came.
fn ended(got: &[u8], started: Instant) -> Ending {
    let text = String::from_utf8_lossy(got);
    let code = text.split_whitespace().nth(1).and_then(|c| c.parse().ok());
    match code {
        Some(code) => Ending::Answered(started.elapsed(), code),
        None => Ending::Cut(started.elapsed()),
    }
}

/// The tricklers, spread over the instances: `(header ones, body ones)`.
async fn tricklers(args: &SlowArgs) -> (Vec<Ending>, Vec<Ending>) {
    let header_limit = Duration::from_secs(args.header_timeout + args.margin);
    let body_limit = Duration::from_secs(args.body_timeout + args.margin);
    let instance = |i: usize| args.instance[i % args.instance.len()].clone();
    let mut headers = Vec::new();
    for i in 0..args.headers {
        let drip = b"GET /healthz HTTP/1.1\r\nHost: slow\r\nX-Slow: a".to_vec();
        headers.push(tokio::spawn(trickle(
            instance(i),
            Vec::new(),
            drip,
            header_limit,
        )));
    }
    let mut bodies = Vec::new();
    for i in 0..args.bodies {
        let head = format!(
            "POST /api/v1/pre-tool-check HTTP/1.1\r\nHost: slow\r\nAuthorization: Bearer {}\r\n\
             Content-Type: application/json\r\nContent-Length: 4096\r\n\r\n",
            args.agent_token
        );
        let drip = b" ".to_vec();
        bodies.push(tokio::spawn(trickle(
            instance(i),
            head.into_bytes(),
            drip,
            body_limit,
        )));
    }
    let mut ended = (Vec::new(), Vec::new());
    for h in headers {
        ended.0.push(h.await.unwrap_or(Ending::Refused));
    }
    for b in bodies {
        ended.1.push(b.await.unwrap_or(Ending::Refused));
    }
    ended
}

/// What the flood was answered, by status (`0`: no answer).
type Answers = Mutex<BTreeMap<u16, u64>>;

/// Sends reads with random tokens from `from` until `stop`.
async fn flood(url: String, from: IpAddr, answers: Arc<Answers>, stop: Arc<AtomicBool>) {
    let Ok(client) = Client::builder().local_address(from).build() else {
        *answers.lock().expect("answers").entry(0).or_default() += 1;
        return;
    };
    let nil = Uuid::nil();
    while !stop.load(Ordering::Relaxed) {
        let token = format!("cs_{}", Uuid::new_v4().simple());
        let r = client
            .get(format!("{url}/api/v1/proposals/{nil}"))
            .bearer_auth(token)
            .timeout(Duration::from_secs(10))
            .send()
            .await;
        let code = r.map(|r| r.status().as_u16()).unwrap_or(0);
        *answers.lock().expect("answers").entry(code).or_default() += 1;
    }
}

/// Good reads' latencies (ms, sorted) and how many were not answered `200`.
type Reads = (Vec<f64>, u64);

/// Reads `proposal` every 50 ms until `stop`: each answered read's latency (ms), and the
/// reads not answered `200`.
async fn reads(ctx: (Client, String, String), stop: Arc<AtomicBool>) -> Reads {
    let (client, url, token) = ctx;
    let (mut millis, mut errors) = (Vec::new(), 0);
    while !stop.load(Ordering::Relaxed) {
        let since = Instant::now();
        let r = client.get(&url).bearer_auth(&token).send().await;
        match r {
            Ok(r) if r.status().is_success() => {
                let _ = r.bytes().await;
                millis.push(since.elapsed().as_secs_f64() * 1000.0);
            }
            _ => errors += 1,
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    millis.sort_by(f64::total_cmp);
    (millis, errors)
}

/// The `q` quantile of sorted `millis` (0 when empty).
fn quantile(millis: &[f64], q: f64) -> f64 {
    let n = millis.len();
    if n == 0 {
        return 0.0;
    }
    millis[((n as f64 * q).ceil() as usize).clamp(1, n) - 1]
}

/// Submits one proposal through the balancer for the good reads: its URL.
async fn reading(args: &SlowArgs, client: &Client) -> Result<String, String> {
    let base = args.url.trim_end_matches('/');
    let key = format!("loadgen-slow-{}", Uuid::new_v4());
    let body = crate::mix::proposal(&args.agent, 0, 0, &key);
    for _ in 0..50 {
        let r = client
            .post(format!("{base}/api/v1/proposals"))
            .bearer_auth(&args.agent_token)
            .json(&body)
            .send()
            .await;
        if let Ok(r) = r
            && r.status().is_success()
            && let Ok(v) = r.json::<Value>().await
            && let Some(id) = v["proposal"]["id"].as_str()
        {
            return Ok(format!("{base}/api/v1/proposals/{id}"));
        }
        tokio::time::sleep(crate::mix::BACKOFF).await;
    }
    Err("no proposal to read: the submission was never acknowledged".into())
}

pub async fn slow(args: SlowArgs) -> Result<(), String> {
    let client = Client::builder()
        .timeout(Duration::from_secs(10))
        .build()
        .map_err(|e| e.to_string())?;
    let read = (
        client.clone(),
        reading(&args, &client).await?,
        args.agent_token.clone(),
    );
    let stop = Arc::new(AtomicBool::new(false));
    let before = tokio::spawn(reads(read.clone(), Arc::clone(&stop)));
    tokio::time::sleep(Duration::from_secs(args.baseline)).await;
    stop.store(true, Ordering::Relaxed);
    let before = before.await.map_err(|e| e.to_string())?;

    let stop = Arc::new(AtomicBool::new(false));
    let during = tokio::spawn(reads(read, Arc::clone(&stop)));
    let answers = Arc::new(Answers::default());
    let url = args.url.trim_end_matches('/').to_owned();
    let floods: Vec<_> = (0..args.flood)
        .map(|i| {
            let from = IpAddr::V4(Ipv4Addr::new(127, 0, 0, 2 + i));
            let answers = Arc::clone(&answers);
            tokio::spawn(flood(url.clone(), from, answers, Arc::clone(&stop)))
        })
        .collect();
    let started = Instant::now();
    let (headers, bodies) = tricklers(&args).await;
    let phase = started.elapsed().as_secs_f64();
    stop.store(true, Ordering::Relaxed);
    for f in floods {
        let _ = f.await;
    }
    let during = during.await.map_err(|e| e.to_string())?;
    let answers = answers.lock().expect("answers").clone();
    report(
        &args,
        (&headers, &bodies),
        &answers,
        (&before, &during),
        phase,
    )
}

/// Prints the phase's figures; `Err` unless every limit held.
fn report(
    args: &SlowArgs,
    (headers, bodies): (&[Ending], &[Ending]),
    answers: &BTreeMap<u16, u64>,
    (before, during): (&Reads, &Reads),
    phase: f64,
) -> Result<(), String> {
    let lasted = |ended: &[Ending]| -> (f64, f64) {
        let mut s: Vec<f64> = ended
            .iter()
            .filter_map(|e| e.after())
            .map(|d| d.as_secs_f64())
            .collect();
        s.sort_by(f64::total_cmp);
        (quantile(&s, 0.5), s.last().copied().unwrap_or(0.0))
    };
    let held = |ended: &[Ending]| ended.iter().filter(|e| e.after().is_some()).count();
    let mut answered: BTreeMap<String, usize> = BTreeMap::new();
    for e in bodies {
        let what = match e {
            Ending::Answered(_, code) => code.to_string(),
            Ending::Cut(_) => "cut".into(),
            other => format!("{other:?}").to_lowercase(),
        };
        *answered.entry(what).or_default() += 1;
    }
    let (h50, hmax) = lasted(headers);
    let (b50, bmax) = lasted(bodies);
    let flooded: u64 = answers
        .iter()
        .filter(|(c, _)| **c != 0)
        .map(|(_, n)| n)
        .sum();
    let wrong: u64 = answers
        .iter()
        .filter(|(c, _)| !matches!(c, 0 | 401 | 429))
        .map(|(_, n)| n)
        .sum();
    let unanswered = answers.get(&0).copied().unwrap_or(0);
    let ratio = |q: f64| quantile(&during.0, q) / quantile(&before.0, q).max(0.001);
    println!(
        "good reads   before: {} (errors {}), p50 {:.2} ms, p99 {:.2} ms; during the phase: {} \
         (errors {}), p50 {:.2} ms, p99 {:.2} ms; ratio p50 x{:.2}, p99 x{:.2}",
        before.0.len(),
        before.1,
        quantile(&before.0, 0.5),
        quantile(&before.0, 0.99),
        during.0.len(),
        during.1,
        quantile(&during.0, 0.5),
        quantile(&during.0, 0.99),
        ratio(0.5),
        ratio(0.99)
    );
    println!("bad tokens   answers by status {answers:?} (0: no answer)");
    let cut = held(headers) + held(bodies);
    let ok = cut == headers.len() + bodies.len() && wrong == 0 && flooded > 0;
    let line = format!(
        "slow clients {cut} cut of {} in {phase:.1} s: {} header tricklers ended after p50 \
         {h50:.1} s, max {hmax:.1} s (limit {} s); {} body tricklers ended after p50 {b50:.1} s, \
         max {bmax:.1} s (limit {} s; {answered:?}); bad tokens {flooded} from {} addresses \
         answered {} ({wrong} otherwise, {unanswered} unanswered)",
        headers.len() + bodies.len(),
        headers.len(),
        args.header_timeout + args.margin,
        bodies.len(),
        args.body_timeout + args.margin,
        args.flood,
        if wrong == 0 {
            "401/429 only"
        } else {
            "NOT only 401/429"
        },
    );
    println!("{line}");
    if ok {
        Ok(())
    } else {
        Err(format!("a limit did not hold: {line}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_status_line_is_an_answer_and_nothing_is_a_cut() {
        let t = Instant::now();
        assert!(matches!(
            ended(b"HTTP/1.1 408 Request Timeout\r\n", t),
            Ending::Answered(_, 408)
        ));
        assert!(matches!(ended(b"", t), Ending::Cut(_)));
        assert!(Ending::Lasted.after().is_none() && Ending::Refused.after().is_none());
    }
}
