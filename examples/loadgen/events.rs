//! The agent's other two ways of waiting, in the mix: its event stream and its webhook.
//!
//! Watchers keep `GET /api/v1/events` open through the balancer with the agent's token,
//! opening a fresh stream whenever one is cut (an instance killed, the balancer's timeout),
//! and record every `status` event (the proposal's id and status) in the ledger (`seen`).
//!
//! The receiver listens on `--webhook-listen` (loopback: the token's callback URL) and checks
//! each delivery's `Countersign-Signature` as docs/api.md says (HMAC-SHA256 over `<t>.<body>`
//! keyed by the webhook secret, any `v1` matching, `t` within five minutes); a verified one is
//! recorded (`delivered`: its delivery id, proposal and status) and then answered `200`, so
//! every delivery the server marks delivered is in the ledger. One that does not verify is
//! answered `401` and counted an error.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use hmac::{Hmac, Mac};
use reqwest::Client;
use serde_json::Value;
use sha2::Sha256;
use uuid::Uuid;

use crate::ledger::Entry;
use crate::mix::Ctx;

/// One watcher: a stream open until the run ends, opened again whenever it is cut.
pub async fn watch(ctx: Arc<Ctx>) {
    let client = Client::new();
    let until = tokio::time::Instant::from_std(ctx.until);
    while !ctx.over() {
        let since = Instant::now();
        let opened = tokio::time::timeout_at(
            until,
            client
                .get(ctx.url("/api/v1/events"))
                .bearer_auth(&ctx.args.agent_token)
                .header("accept", "text/event-stream")
                .send(),
        )
        .await;
        let mut r = match opened {
            Err(_) => return,
            Ok(Ok(r)) if r.status().is_success() => r,
            Ok(_) => {
                ctx.failed("stream");
                tokio::time::sleep(crate::mix::BACKOFF).await;
                continue;
            }
        };
        ctx.acked("stream", since);
        let mut buffer = String::new();
        loop {
            let since = Instant::now();
            match tokio::time::timeout_at(until, r.chunk()).await {
                Err(_) => return,
                Ok(Ok(Some(bytes))) => {
                    buffer.push_str(&String::from_utf8_lossy(&bytes));
                    for (proposal, status) in drain_events(&mut buffer) {
                        ctx.acked("seen", since);
                        ctx.ledger.record(Entry::Seen { proposal, status });
                    }
                }
                // Cut (or ended): a fresh stream, with a fresh snapshot.
                Ok(_) => break,
            }
        }
    }
}

/// The `status` events complete in `buffer` (removed from it): each proposal's id and status.
/// Other events (`resync`) and keep-alive comments are dropped.
pub fn drain_events(buffer: &mut String) -> Vec<(Uuid, String)> {
    let mut told = Vec::new();
    let text = buffer.replace("\r\n", "\n");
    let (complete, rest) = match text.rfind("\n\n") {
        Some(end) => (&text[..end], text[end + 2..].to_owned()),
        None => return told,
    };
    for event in complete.split("\n\n") {
        let mut name = "message";
        let mut data = String::new();
        for line in event.lines() {
            if let Some(v) = line.strip_prefix("event:") {
                name = v.trim();
            } else if let Some(v) = line.strip_prefix("data:") {
                data.push_str(v.strip_prefix(' ').unwrap_or(v));
            }
        }
        let v: Option<Value> = serde_json::from_str(&data).ok();
        let id = v
            .as_ref()
            .and_then(|v| v["proposal"]["id"].as_str()?.parse().ok());
        let status = v.as_ref().and_then(|v| v["proposal"]["status"].as_str());
        if let (true, Some(id), Some(status)) = (name == "status", id, status) {
            told.push((id, status.to_owned()));
        }
    }
    *buffer = rest;
    told
}

/// The receiver, serving on each `--webhook-listen` address until the run ends.
pub async fn receiver(ctx: &Arc<Ctx>) -> Result<Vec<tokio::task::JoinHandle<()>>, String> {
    let addrs = &ctx.args.webhook_listen;
    if !addrs.is_empty() && ctx.args.webhook_secret.is_none() {
        return Err("--webhook-listen needs the webhook secret (LOADGEN_WEBHOOK_SECRET)".into());
    }
    let until = tokio::time::Instant::from_std(ctx.until);
    let app = axum::Router::new()
        .fallback(axum::routing::post(deliver))
        .with_state(Arc::clone(ctx));
    let mut served = Vec::new();
    for addr in addrs {
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .map_err(|e| format!("{addr}: {e}"))?;
        let serving = axum::serve(
            listener,
            app.clone()
                .into_make_service_with_connect_info::<SocketAddr>(),
        )
        .with_graceful_shutdown(tokio::time::sleep_until(until));
        served.push(tokio::spawn(async move {
            let _ = serving.await;
        }));
    }
    Ok(served)
}

/// Ends the receiver: it stops taking connections when the run ends; one a sender keeps open
/// past that is cut after a few seconds.
pub async fn stop(receiver: Vec<tokio::task::JoinHandle<()>>) {
    for mut task in receiver {
        if tokio::time::timeout(Duration::from_secs(5), &mut task)
            .await
            .is_err()
        {
            task.abort();
            let _ = task.await;
        }
    }
}

async fn deliver(State(ctx): State<Arc<Ctx>>, headers: HeaderMap, body: Bytes) -> StatusCode {
    let since = Instant::now();
    let secret = ctx.args.webhook_secret.as_deref().unwrap_or_default();
    let signature = (headers.get("countersign-signature")).and_then(|h| h.to_str().ok());
    let now = time::OffsetDateTime::now_utc().unix_timestamp();
    if !signature.is_some_and(|s| verified(secret, s, &body, now)) {
        ctx.failed("webhook");
        return StatusCode::UNAUTHORIZED;
    }
    let v: Value = serde_json::from_slice(&body).unwrap_or_default();
    let delivery = v["id"].as_str().and_then(|s| s.parse().ok());
    let proposal = v["proposal"]["id"].as_str().and_then(|s| s.parse().ok());
    let status = v["proposal"]["status"].as_str();
    let (Some(delivery), Some(proposal), Some(status)) = (delivery, proposal, status) else {
        ctx.failed("webhook");
        return StatusCode::BAD_REQUEST;
    };
    ctx.ledger.record(Entry::Delivered {
        delivery,
        proposal,
        status: status.to_owned(),
    });
    ctx.acked("webhook", since);
    StatusCode::OK
}

/// Whether `header` (`t=<unix seconds>,v1=<hex>[,v1=<hex>…]`) signs `body` with `secret`, at
/// most five minutes from `now`, as docs/api.md tells a receiver to check it.
pub fn verified(secret: &str, header: &str, body: &[u8], now: i64) -> bool {
    let parts: Vec<(&str, &str)> = (header.split(','))
        .filter_map(|p| p.trim().split_once('='))
        .collect();
    let Some(t) = parts.iter().find(|(k, _)| *k == "t").map(|(_, v)| *v) else {
        return false;
    };
    let fresh = t.parse::<i64>().is_ok_and(|t| (now - t).abs() < 300);
    let signed = parts.iter().filter(|(k, _)| *k == "v1").any(|(_, v)| {
        let Ok(given) = hex::decode(v) else {
            return false;
        };
        let Ok(mut mac) = Hmac::<Sha256>::new_from_slice(secret.as_bytes()) else {
            return false;
        };
        mac.update(t.as_bytes());
        mac.update(b".");
        mac.update(body);
        // In constant time.
        mac.verify_slice(&given).is_ok()
    });
    fresh && signed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_events_are_parsed_whole_and_the_rest_kept() {
        let id = Uuid::new_v4();
        let mut buffer = format!(
            ":\n\nevent: status\nid: {id}\ndata: {{\"proposal\": {{\"id\": \"{id}\", \
             \"status\": \"pending\"}}}}\n\nevent: resync\ndata: {{\"reason\": \"gap\"}}\n\n\
             event: status\ndata: {{\"proposal\""
        );
        assert_eq!(drain_events(&mut buffer), vec![(id, "pending".to_owned())]);
        assert_eq!(buffer, "event: status\ndata: {\"proposal\"");
    }

    #[test]
    fn only_a_fresh_signature_by_the_secret_verifies() {
        let body = br#"{"id":"x"}"#;
        let sign = |secret: &str, t: i64| {
            let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).expect("key");
            mac.update(format!("{t}.").as_bytes());
            mac.update(body);
            hex::encode(mac.finalize().into_bytes())
        };
        let now = 1_800_000_000;
        let good = format!("t={now},v1={}", sign("csw_a", now));
        assert!(verified("csw_a", &good, body, now));
        let rotated = format!(
            "t={now},v1={},v1={}",
            sign("csw_b", now),
            sign("csw_a", now)
        );
        assert!(verified("csw_a", &rotated, body, now), "any v1 matching");
        assert!(!verified("csw_b", &good, body, now), "another secret");
        assert!(!verified("csw_a", &good, b"{}", now), "another body");
        assert!(!verified("csw_a", &good, body, now + 301), "stale");
        assert!(!verified("csw_a", "v1=00", body, now), "no t");
    }
}
