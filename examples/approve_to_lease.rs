//! Approve-to-lease latency against a running server, for `scripts/bench-executor`: an executor
//! waits in long-poll (`POST /api/v1/executor/lease {"wait": 30}`) while a reviewer approves a
//! proposal through the page's form; the time from sending the approval to the executor holding
//! the command is one sample. Prints p50/p95/p99/max over N samples.
//!
//! ```sh
//! approve_to_lease BASE_URL AGENT_TOKEN EXECUTOR_TOKEN REVIEWER PASSWORD [N]
//! ```

use std::time::{Duration, Instant};

use reqwest::Client;
use serde_json::{Value, json};
use uuid::Uuid;

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
    let browser = Client::builder()
        .cookie_store(true)
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .map_err(|e| e.to_string())?;
    let login_csrf = csrf(&browser, &format!("{base}/login")).await?;
    browser
        .post(format!("{base}/fn/login"))
        .header("accept", "text/html")
        .form(&[
            ("csrf_token", login_csrf.as_str()),
            ("username", reviewer),
            ("password", password),
        ])
        .send()
        .await
        .map_err(|e| e.to_string())?;
    let api = Client::new();
    let mut samples = Vec::with_capacity(n);
    for _ in 0..n {
        let id = submit(&api, base, agent).await?;
        let page = format!("{base}/proposals/{id}");
        let token = csrf(&browser, &page).await?;
        // The executor is waiting before the approval is sent (20 ms for its request to reach
        // the server and park; HTTP says nothing when a long-poll starts waiting).
        let lease = tokio::spawn(lease(api.clone(), base.clone(), executor.clone()));
        tokio::time::sleep(Duration::from_millis(20)).await;
        let sent = Instant::now();
        let r = browser
            .post(format!("{base}/fn/decide_proposal"))
            .header("accept", "text/html")
            .header("referer", &page)
            .form(&[
                ("csrf_token", token.as_str()),
                ("id", &id),
                ("verdict", "approved"),
            ])
            .send()
            .await
            .map_err(|e| e.to_string())?;
        if !r.status().is_redirection() {
            return Err(format!("approval answered {}", r.status()));
        }
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

async fn csrf(browser: &Client, url: &str) -> Result<String, String> {
    let html = browser
        .get(url)
        .header("accept", "text/html")
        .send()
        .await
        .map_err(|e| e.to_string())?
        .text()
        .await
        .map_err(|e| e.to_string())?;
    let marker = "name=\"csrf_token\" value=\"";
    let start = html.find(marker).ok_or(format!("no CSRF token on {url}"))? + marker.len();
    Ok(html[start..start + 64].to_owned())
}

async fn submit(api: &Client, base: &str, agent: &str) -> Result<String, String> {
    let id = Uuid::new_v4().to_string();
    let body = json!({
        "proposal_id": id,
        "proposed_by": "bench-agent",
        "timestamp": "2026-11-22T10:00:00Z",
        "domain": "sales",
        "tool": {"name": "crm.update_contact", "version": "2024-01"},
        "intent": {"summary": "Update the contact's email", "reasoning": "Benchmark."},
        "parameters": {"contact_id": "c-123", "email": "new@example.com"},
        "risk_level": "low",
        "approval_required": true,
        "compliance_context": {"gdpr": false, "hipaa": false},
        "idempotency_key": format!("key-{id}"),
        "rollback_supported": true,
        "blast_radius": "tiny",
        "target_refs": [{"type": "crm_contact", "id": "c-123"}]
    });
    let r = api
        .post(format!("{base}/api/v1/proposals"))
        .bearer_auth(agent)
        .json(&body)
        .send()
        .await
        .map_err(|e| e.to_string())?;
    if r.status().as_u16() != 201 {
        return Err(format!(
            "submit answered {}: {}",
            r.status(),
            r.text().await.unwrap_or_default()
        ));
    }
    Ok(id)
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
