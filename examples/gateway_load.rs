//! The MCP gateway under load, for `scripts/bench-gateway`, with real MCP clients (the
//! official Rust SDK, `rmcp`, over streamable HTTP).
//!
//! `overhead`: the same upstream tool called directly and through the gateway, side by side
//! in one run: C clients each alternate a direct call and a gateway call (`echo`, accepted by
//! the policy) N times; prints p50/p99/max of each and the difference of the p99s.
//!
//! `held`: N calls held at once (a tool the policy sends to a person), read from the database
//! once all are pending; a reviewer approves each through the page's form (8 at a time); each
//! sample is the time from sending an approval to its call's answer.
//!
//! ```sh
//! gateway_load overhead GATEWAY_URL TOKEN DIRECT_URL N C
//! gateway_load held BASE_URL TOKEN DATABASE_URL REVIEWER PASSWORD N
//! ```

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures_util::stream::{self, StreamExt};
use rmcp::model::CallToolRequestParams;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{RoleClient, ServiceExt};
use serde_json::json;
#[path = "support/bench_client.rs"]
#[allow(dead_code, reason = "this benchmark submits no proposal over the API")]
mod bench_client;

type Client = rmcp::service::RunningService<RoleClient, ()>;

async fn client(url: &str, token: Option<&str>) -> Result<Client, String> {
    let mut config =
        StreamableHttpClientTransportConfig::with_uri(url).max_concurrent_requests(4096);
    if let Some(token) = token {
        config = config.auth_header(token);
    }
    ().serve(StreamableHttpClientTransport::from_config(config))
        .await
        .map_err(|e| e.to_string())
}

async fn call(
    client: &Client,
    tool: &str,
    args: serde_json::Value,
) -> Result<serde_json::Value, String> {
    let request = CallToolRequestParams::new(tool.to_owned())
        .with_arguments(args.as_object().cloned().unwrap_or_default());
    let result = client.call_tool(request).await.map_err(|e| e.to_string())?;
    serde_json::to_value(result).map_err(|e| e.to_string())
}

fn percentiles(mut samples: Vec<Duration>) -> (f64, f64, f64) {
    samples.sort();
    let p = |q: f64| {
        let i = ((q * samples.len() as f64).ceil() as usize).clamp(1, samples.len()) - 1;
        samples[i].as_secs_f64() * 1_000.0
    };
    (p(0.50), p(0.99), p(1.0))
}

async fn overhead(
    gateway: &str,
    token: &str,
    direct: &str,
    n: usize,
    c: usize,
) -> Result<(), String> {
    let (via, plain) = (
        Arc::new(client(gateway, Some(token)).await?),
        Arc::new(client(direct, None).await?),
    );
    let mut tasks = Vec::new();
    for worker in 0..c {
        let (via, plain) = (Arc::clone(&via), Arc::clone(&plain));
        tasks.push(tokio::spawn(async move {
            let (mut d, mut g) = (Vec::new(), Vec::new());
            for i in 0..n / c {
                let message = format!("bench {worker}-{i}");
                let at = Instant::now();
                call(&plain, "echo", json!({"message": message})).await?;
                d.push(at.elapsed());
                let at = Instant::now();
                let answer = call(&via, "everything__echo", json!({"message": message})).await?;
                g.push(at.elapsed());
                if answer["isError"] == true {
                    return Err(format!("the gateway refused: {answer}"));
                }
            }
            Ok::<_, String>((d, g))
        }));
    }
    let (mut direct_all, mut gateway_all) = (Vec::new(), Vec::new());
    for t in tasks {
        let (d, g) = t.await.map_err(|e| e.to_string())??;
        direct_all.extend(d);
        gateway_all.extend(g);
    }
    let (d50, d99, dmax) = percentiles(direct_all);
    let (g50, g99, gmax) = percentiles(gateway_all);
    println!(
        "direct   ({n} calls, {c} clients): p50 {d50:.2} ms  p99 {d99:.2} ms  max {dmax:.2} ms"
    );
    println!(
        "gateway  ({n} calls, {c} clients): p50 {g50:.2} ms  p99 {g99:.2} ms  max {gmax:.2} ms"
    );
    println!(
        "added by the gateway: p50 {:.2} ms  p99 {:.2} ms",
        g50 - d50,
        g99 - d99
    );
    Ok(())
}

async fn pending_ids(database: &str) -> Result<Vec<uuid::Uuid>, String> {
    let sql = "select id from proposals where status = 'pending'";
    if database.starts_with("postgres") {
        let pool = sqlx::PgPool::connect(database)
            .await
            .map_err(|e| e.to_string())?;
        sqlx::query_scalar(sql)
            .fetch_all(&pool)
            .await
            .map_err(|e| e.to_string())
    } else {
        let pool = sqlx::SqlitePool::connect(database)
            .await
            .map_err(|e| e.to_string())?;
        sqlx::query_scalar(sql)
            .fetch_all(&pool)
            .await
            .map_err(|e| e.to_string())
    }
}

async fn held(
    base: &str,
    token: &str,
    database: &str,
    reviewer: &str,
    password: &str,
    n: usize,
) -> Result<(), String> {
    let via = Arc::new(client(&format!("{base}/mcp/gateway"), Some(token)).await?);
    let answered: Arc<Mutex<HashMap<String, Instant>>> = Arc::default();
    let mut calls = Vec::new();
    for i in 0..n {
        let (via, answered) = (Arc::clone(&via), Arc::clone(&answered));
        calls.push(tokio::spawn(async move {
            let answer = call(&via, "everything__get-sum", json!({"a": i, "b": 1})).await?;
            let at = Instant::now();
            let sum = answer.to_string();
            if answer["isError"] == true {
                return Err(format!("call {i}: {sum}"));
            }
            answered
                .lock()
                .map_err(|e| e.to_string())?
                .insert(format!("{}", i + 1), at);
            Ok::<_, String>(())
        }));
    }
    let started = Instant::now();
    let ids = loop {
        let ids = pending_ids(database).await?;
        if ids.len() >= n {
            break ids;
        }
        if started.elapsed() > Duration::from_secs(50) {
            return Err(format!("only {} of {n} calls pending", ids.len()));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    println!(
        "{n} calls held at once after {:.1} s",
        started.elapsed().as_secs_f64()
    );
    let browser = bench_client::signed_in(base, reviewer, password).await?;
    let csrf = bench_client::csrf(&browser, &format!("{base}/proposals/{}", ids[0])).await?;
    let sent: Arc<Mutex<HashMap<uuid::Uuid, Instant>>> = Arc::default();
    let approving = Instant::now();
    let results: Vec<Result<Duration, String>> = stream::iter(ids.iter().copied())
        .map(|id| {
            let (browser, base, csrf, sent) =
                (browser.clone(), base.to_owned(), csrf.clone(), sent.clone());
            async move {
                let at = Instant::now();
                sent.lock().map_err(|e| e.to_string())?.insert(id, at);
                bench_client::approve(&browser, &base, &csrf, &id.to_string()).await?;
                Ok(at.elapsed())
            }
        })
        .buffer_unordered(8)
        .collect()
        .await;
    let approvals = results.into_iter().collect::<Result<Vec<_>, _>>()?;
    let took = approving.elapsed().as_secs_f64();
    let (a50, a99, amax) = percentiles(approvals);
    println!(
        "{n} approvals in {took:.2} s ({:.0}/s), each answered in p50 {a50:.1} ms  p99 {a99:.1} ms  max {amax:.1} ms",
        n as f64 / took
    );
    for c in calls {
        c.await.map_err(|e| e.to_string())??;
    }
    // Each call's answer is matched to its approval by the proposal's parameters.
    let pool_ids = proposal_args(database).await?;
    let answered = answered.lock().map_err(|e| e.to_string())?;
    let sent = sent.lock().map_err(|e| e.to_string())?;
    let samples: Vec<Duration> = pool_ids
        .iter()
        .filter_map(|(id, key)| Some(answered.get(key)?.saturating_duration_since(*sent.get(id)?)))
        .collect();
    let (p50, p99, max) = percentiles(samples.clone());
    println!(
        "approval-to-answer over {} held calls: p50 {p50:.1} ms  p99 {p99:.1} ms  max {max:.1} ms",
        samples.len()
    );
    Ok(())
}

/// Each proposal's id and its `a + 1` (the key its call's answer is filed under).
async fn proposal_args(database: &str) -> Result<Vec<(uuid::Uuid, String)>, String> {
    let sql = "select id, contract from proposals";
    let rows: Vec<(uuid::Uuid, String)> = if database.starts_with("postgres") {
        let pool = sqlx::PgPool::connect(database)
            .await
            .map_err(|e| e.to_string())?;
        sqlx::query_as("select id, contract::text from proposals")
            .fetch_all(&pool)
            .await
            .map_err(|e| e.to_string())?
    } else {
        let pool = sqlx::SqlitePool::connect(database)
            .await
            .map_err(|e| e.to_string())?;
        sqlx::query_as(sql)
            .fetch_all(&pool)
            .await
            .map_err(|e| e.to_string())?
    };
    Ok(rows
        .into_iter()
        .filter_map(|(id, contract)| {
            let v: serde_json::Value = serde_json::from_str(&contract).ok()?;
            let a = v["parameters"]["a"].as_u64()?;
            Some((id, format!("{}", a + 1)))
        })
        .collect())
}

#[tokio::main]
async fn main() -> Result<(), String> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let num = |s: &String| s.parse::<usize>().map_err(|e| format!("{s}: {e}"));
    match args.as_slice() {
        [mode, gateway, token, direct, n, c] if mode == "overhead" => {
            overhead(gateway, token, direct, num(n)?, num(c)?).await
        }
        [mode, base, token, database, reviewer, password, n] if mode == "held" => {
            held(base, token, database, reviewer, password, num(n)?).await
        }
        _ => Err(
            "usage: gateway_load overhead GATEWAY_URL TOKEN DIRECT_URL N C | \
                  held BASE_URL TOKEN DATABASE_URL REVIEWER PASSWORD N"
                .into(),
        ),
    }
}
