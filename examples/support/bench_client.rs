//! What the benchmark examples share (`approve_to_lease`, `wait_storm`, `gateway_load`): a
//! reviewer signed in through the login form, a page's CSRF token, an approval through the
//! page's form, and an agent's proposal submitted over the API.

use reqwest::Client;
use serde_json::json;
use uuid::Uuid;

/// A browser-like client signed in as `reviewer`: keeps cookies, follows no redirects.
pub async fn signed_in(base: &str, reviewer: &str, password: &str) -> Result<Client, String> {
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
    Ok(browser)
}

/// The CSRF token on the page at `url`.
pub async fn csrf(browser: &Client, url: &str) -> Result<String, String> {
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

/// Approves proposal `id` through its page's form, as `browser` (signed in, with the page's
/// CSRF token `csrf`); an error unless the form answers with a redirect.
pub async fn approve(browser: &Client, base: &str, csrf: &str, id: &str) -> Result<(), String> {
    let r = browser
        .post(format!("{base}/fn/decide_proposal"))
        .header("accept", "text/html")
        .header("referer", format!("{base}/proposals/{id}"))
        .form(&[("csrf_token", csrf), ("id", id), ("verdict", "approved")])
        .send()
        .await
        .map_err(|e| e.to_string())?;
    if !r.status().is_redirection() {
        return Err(format!("approval answered {}", r.status()));
    }
    Ok(())
}

/// Submits a low-risk CRM proposal as `bench-agent`; answers its id.
pub async fn submit(api: &Client, base: &str, agent: &str) -> Result<String, String> {
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
