//! Thousands of agents waiting at once, for `scripts/bench-waiting`: submits N proposals, opens
//! one `GET /api/v1/proposals/{id}?wait=60` per proposal (each on its own connection), reads the
//! server's resident memory before and after they are parked, then a reviewer approves every
//! proposal through the page's form (8 at a time) and each sample is the time from sending an
//! approval to its waiter's answer. Prints memory per waiter and wake-up p50/p99/max.
//!
//! ```sh
//! wait_storm BASE_URL AGENT_TOKEN REVIEWER PASSWORD SERVER_PID [N]
//! ```

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures_util::stream::{self, StreamExt};
#[path = "support/bench_client.rs"]
mod bench_client;

use reqwest::Client;
use serde_json::Value;

#[tokio::main]
async fn main() -> Result<(), String> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [base, agent, reviewer, password, pid, rest @ ..] = args.as_slice() else {
        return Err(
            "usage: wait_storm BASE_URL AGENT_TOKEN REVIEWER PASSWORD SERVER_PID [N]".into(),
        );
    };
    let n: usize = rest
        .first()
        .map_or(Ok(10_000), |s| s.parse())
        .map_err(|e| format!("N: {e}"))?;
    let api = Client::new();
    let ids: Vec<String> = stream::iter(0..n)
        .map(|_| bench_client::submit(&api, base, agent))
        .buffer_unordered(32)
        .collect::<Vec<_>>()
        .await
        .into_iter()
        .collect::<Result<_, _>>()?;
    println!("submitted {n} proposals");
    let before = rss_kib(pid)?;
    // One client per waiter: each waits on its own connection, as separate agents would.
    let answered: Arc<Mutex<HashMap<String, (Instant, String)>>> = Arc::default();
    let mut waiters = Vec::with_capacity(n);
    for id in &ids {
        let (base, agent, id, answered) =
            (base.clone(), agent.clone(), id.clone(), answered.clone());
        waiters.push(tokio::spawn(async move {
            let client = Client::builder()
                .pool_max_idle_per_host(1)
                .build()
                .map_err(|e| e.to_string())?;
            let r = client
                .get(format!("{base}/api/v1/proposals/{id}?wait=60"))
                .bearer_auth(&agent)
                .send()
                .await
                .map_err(|e| e.to_string())?;
            let at = Instant::now();
            let body: Value = r.json().await.map_err(|e| e.to_string())?;
            let status = body["proposal"]["status"]
                .as_str()
                .unwrap_or("?")
                .to_owned();
            answered
                .lock()
                .map_err(|e| e.to_string())?
                .insert(id, (at, status));
            Ok::<_, String>(())
        }));
    }
    // The server has no "parked" signal over HTTP: give the requests time to arrive and park.
    tokio::time::sleep(Duration::from_secs(5)).await;
    let parked = answered.lock().map_err(|e| e.to_string())?.len();
    let after = rss_kib(pid)?;
    let per = (after.saturating_sub(before) as f64 * 1024.0) / n as f64;
    println!(
        "{n} waiters: server RSS {before} KiB before, {after} KiB with them waiting = {:.1} KiB per waiter ({parked} answered early)",
        per / 1024.0
    );
    let browser = bench_client::signed_in(base, reviewer, password).await?;
    let token = bench_client::csrf(&browser, &format!("{base}/proposals/{}", ids[0])).await?;
    let sent: Arc<Mutex<HashMap<String, Instant>>> = Arc::default();
    let results: Vec<Result<(), String>> = stream::iter(ids.iter().cloned())
        .map(|id| {
            let (browser, base, token, sent) =
                (browser.clone(), base.clone(), token.clone(), sent.clone());
            async move {
                let at = Instant::now();
                bench_client::approve(&browser, &base, &token, &id).await?;
                sent.lock().map_err(|e| e.to_string())?.insert(id, at);
                Ok(())
            }
        })
        .buffer_unordered(8)
        .collect()
        .await;
    results.into_iter().collect::<Result<Vec<()>, _>>()?;
    for w in waiters {
        w.await.map_err(|e| e.to_string())??;
    }
    let answered = answered.lock().map_err(|e| e.to_string())?;
    let sent = sent.lock().map_err(|e| e.to_string())?;
    let mut samples: Vec<Duration> = Vec::with_capacity(n);
    let mut not_approved = 0;
    for (id, (at, status)) in answered.iter() {
        if status != "approved" {
            not_approved += 1;
            continue;
        }
        if let Some(s) = sent.get(id) {
            samples.push(at.saturating_duration_since(*s));
        }
    }
    samples.sort();
    let p = |q: f64| {
        let i = ((q * samples.len() as f64).ceil() as usize).clamp(1, samples.len()) - 1;
        samples[i].as_secs_f64() * 1_000.0
    };
    println!(
        "approval-to-wake over {} waiters: p50 {:.1} ms  p99 {:.1} ms  max {:.1} ms ({not_approved} answered other than approved)",
        samples.len(),
        p(0.50),
        p(0.99),
        p(1.0)
    );
    Ok(())
}

fn rss_kib(pid: &str) -> Result<u64, String> {
    let status =
        std::fs::read_to_string(format!("/proc/{pid}/status")).map_err(|e| e.to_string())?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .ok_or_else(|| "no VmRSS".into())
}
