//! `POST /integrations/slack/actions`: Slack's interactivity requests (a reviewer pressed
//! Approve or Reject on a notification). Authenticated by Slack's request signature, not a
//! session, so no CSRF token: a request that is not Slack's, is stale or is a replay is `401`
//! and changes nothing (see `service/slack.rs`). Served only when `--slack-signing-secret` is
//! set.

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use serde_json::json;

use crate::service::Services;

#[derive(Clone)]
struct Slack {
    services: Services,
    secret: String,
}

/// The route, when a signing secret is configured.
pub fn router(services: Services, secret: Option<String>) -> Router {
    match secret {
        Some(secret) => Router::new()
            .route("/integrations/slack/actions", post(action))
            .with_state(Slack { services, secret }),
        None => Router::new(),
    }
}

async fn action(State(slack): State<Slack>, headers: HeaderMap, body: Bytes) -> Response {
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    let answer = slack
        .services
        .slack_action(
            &slack.secret,
            header("x-slack-request-timestamp"),
            header("x-slack-signature"),
            &body,
        )
        .await;
    match answer {
        Ok(reply) => axum::Json(json!({
            "response_type": "ephemeral",
            "replace_original": false,
            "text": reply.0,
        }))
        .into_response(),
        Err(e) => (StatusCode::UNAUTHORIZED, e.to_string()).into_response(),
    }
}
