//! Approve-to-lease latency against a running server, for `scripts/bench-executor`: an executor
//! waits in long-poll (`POST /api/v1/executor/lease {"wait": 30}`) while a reviewer approves a
//! proposal through the page's form; the time from sending the approval to the executor holding
//! the command is one sample. Prints p50/p95/p99/max over N samples.
//!
//! ```sh
//! approve_to_lease BASE_URL AGENT_TOKEN EXECUTOR_TOKEN REVIEWER PASSWORD [N]
//! ```

use std::time::{Duration, Instant};

#[path = "support/bench_client.rs"]
mod bench_client;

use reqwest::Client;
use serde_json::{Value, json};

#[tokio::main]
async fn main() -> Result<(), String> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [base, agent, executor, reviewer, password, rest @ ..] = args.as_slice() else {
        return Err(
            "usage: approve_to_lease BASE_URL AGENT_TOKEN EXECUTOR_TOKEN REVIEWER PASSWORD [N]"
                .into(),
        );
    };
    let n: usize = rest
        .first()
        .map_or(Ok(200), |s| s.parse())
        .map_err(|e| format!("N: {e}"))?;
    let browser = bench_client::signed_in(base, reviewer, password).await?;
    let api = Client::new();
    let mut samples = Vec::with_capacity(n);
    for _ in 0..n {
        let id = bench_client::submit(&api, base, agent).await?;
        let page = format!("{base}/proposals/{id}");
        let token = bench_client::csrf(&browser, &page).await?;
        // The executor is waiting before the approval is sent (20 ms for its request to reach
        // the server and park; HTTP says nothing when a long-poll starts waiting).
        let lease = tokio::spawn(lease(api.clone(), base.clone(), executor.clone()));
        tokio::time::sleep(Duration::from_millis(20)).await;
        let sent = Instant::now();
        bench_client::approve(&browser, base, &token, &id).await?;
        let (leased_at, (command_id, lease_token)) = lease.await.map_err(|e| e.to_string())??;
        complete(&api, base, executor, &command_id, &lease_token).await?;
        samples.push(leased_at.duration_since(sent));
    }
    samples.sort();
    let p = |q: f64| {
        let i = ((q * samples.len() as f64).ceil() as usize).clamp(1, samples.len()) - 1;
        samples[i].as_secs_f64() * 1_000.0
    };
    println!(
        "approve-to-lease over {n} approvals: p50 {:.1} ms  p95 {:.1} ms  p99 {:.1} ms  max {:.1} ms",
        p(0.50),
        p(0.95),
        p(0.99),
        p(1.0)
    );
    Ok(())
}

type Held = (Instant, (String, String));

async fn lease(api: Client, base: String, executor: String) -> Result<Held, String> {
    let r = api
        .post(format!("{base}/api/v1/executor/lease"))
        .bearer_auth(&executor)
        .json(&json!({"wait": 30}))
        .send()
        .await
        .map_err(|e| e.to_string())?;
    let at = Instant::now();
    if r.status().as_u16() != 200 {
        return Err(format!("lease answered {}", r.status()));
    }
    let v: Value = r.json().await.map_err(|e| e.to_string())?;
    let s = |p: &str| v.pointer(p).and_then(Value::as_str).map(str::to_owned);
    let id = s("/command/id").ok_or("no command id")?;
    let token = s("/lease_token").ok_or("no lease token")?;
    Ok((at, (id, token)))
}

async fn complete(
    api: &Client,
    base: &str,
    executor: &str,
    id: &str,
    token: &str,
) -> Result<(), String> {
    let r = api
        .post(format!("{base}/api/v1/executor/commands/{id}/complete"))
        .bearer_auth(executor)
        .json(&json!({"lease_token": token, "result": {"ok": true}}))
        .send()
        .await
        .map_err(|e| e.to_string())?;
    if r.status().as_u16() != 200 {
        return Err(format!("complete answered {}", r.status()));
    }
    Ok(())
}
