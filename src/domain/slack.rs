//! Deciding from Slack: checking that a request really comes from Slack (its `v0` signature),
//! reading which button a person pressed, and which proposals may be decided from chat at all.
//! Pure rules; the endpoint is `POST /integrations/slack/actions` (`web/slack.rs`).
//!
//! - **Signature.** `X-Slack-Signature: v0=<hex HMAC-SHA256 over "v0:<timestamp>:<raw body>">`
//!   keyed by the app's signing secret, compared in constant time; `X-Slack-Request-Timestamp`
//!   within [`MAX_AGE_SECS`] of our clock. A replay of a signature already seen is refused by
//!   the endpoint (it remembers them for that long).
//! - **Not from chat.** High-risk proposals and those with a large or medium blast radius are
//!   decided on the page only (they ask the reviewer to type the target's name there): their
//!   messages carry only the link, and a forged button for one is refused ([`decidable_in_chat`]).

use hmac::{Hmac, Mac};
use serde::Deserialize;
use sha2::Sha256;

/// How old (or how far ahead) a Slack request may be.
pub const MAX_AGE_SECS: i64 = 300;
/// The approve button's `action_id`.
pub const APPROVE: &str = "countersign_approve";
/// The reject button's `action_id`.
pub const REJECT: &str = "countersign_reject";
/// The reason input's `block_id` and `action_id`.
pub const REASON: &str = "countersign_reason";

/// Why a request is refused before anything is read from it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum SignatureError {
    /// No or malformed `X-Slack-Request-Timestamp` or `X-Slack-Signature`.
    #[error("the request is not signed by Slack")]
    Unsigned,
    /// The timestamp is more than five minutes from now.
    #[error("the request is too old (or from the future)")]
    Stale,
    /// The signature does not match.
    #[error("the request's signature does not match")]
    Forged,
}

/// Checks a request's Slack signature at unix time `now`.
pub fn verify(
    secret: &str,
    timestamp: Option<&str>,
    signature: Option<&str>,
    body: &[u8],
    now: i64,
) -> Result<(), SignatureError> {
    let ts: i64 = timestamp
        .and_then(|t| t.trim().parse().ok())
        .ok_or(SignatureError::Unsigned)?;
    let given = signature
        .and_then(|s| s.trim().strip_prefix("v0="))
        .and_then(|h| hex::decode(h).ok())
        .ok_or(SignatureError::Unsigned)?;
    if (now - ts).abs() > MAX_AGE_SECS {
        return Err(SignatureError::Stale);
    }
    let Ok(mut mac) = Hmac::<Sha256>::new_from_slice(secret.as_bytes()) else {
        return Err(SignatureError::Forged);
    };
    mac.update(format!("v0:{ts}:").as_bytes());
    mac.update(body);
    mac.verify_slice(&given).map_err(|_| SignatureError::Forged)
}

/// The `v0=` signature of `body` at `timestamp` (what Slack sends; for tests and tools).
pub fn sign(secret: &str, timestamp: i64, body: &[u8]) -> String {
    let Ok(mut mac) = Hmac::<Sha256>::new_from_slice(secret.as_bytes()) else {
        return String::new();
    };
    mac.update(format!("v0:{timestamp}:").as_bytes());
    mac.update(body);
    format!("v0={}", hex::encode(mac.finalize().into_bytes()))
}

/// What a pressed button asks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pressed {
    /// The Slack user who pressed it.
    pub slack_user: String,
    /// Approve (`true`) or reject.
    pub approve: bool,
    /// The proposal (the button's value).
    pub proposal_id: String,
    /// The reason typed in the message's reason field, if any.
    pub reason: Option<String>,
}

#[derive(Deserialize)]
struct Payload {
    #[serde(rename = "type")]
    kind: String,
    user: User,
    #[serde(default)]
    actions: Vec<Action>,
    #[serde(default)]
    state: Option<State>,
}

#[derive(Deserialize)]
struct User {
    id: String,
}

#[derive(Deserialize)]
struct Action {
    action_id: String,
    #[serde(default)]
    value: Option<String>,
}

#[derive(Deserialize)]
struct State {
    #[serde(default)]
    values: serde_json::Map<String, serde_json::Value>,
}

/// Reads a `block_actions` payload (the form field `payload`); `None` for anything else (an
/// unknown action, another interaction type): nothing is decided.
pub fn pressed(payload: &str) -> Option<Pressed> {
    let p: Payload = serde_json::from_str(payload).ok()?;
    if p.kind != "block_actions" {
        return None;
    }
    let action = p.actions.first()?;
    let approve = match action.action_id.as_str() {
        APPROVE => true,
        REJECT => false,
        _ => return None,
    };
    let reason = p
        .state
        .as_ref()
        .and_then(|s| s.values.get(REASON))
        .and_then(|b| b.get(REASON))
        .and_then(|i| i.get("value"))
        .and_then(serde_json::Value::as_str)
        .map(str::trim)
        .filter(|r| !r.is_empty())
        .map(str::to_owned);
    Some(Pressed {
        slack_user: p.user.id,
        approve,
        proposal_id: action.value.clone()?,
        reason,
    })
}

/// Whether a proposal of this declared risk and blast radius may be decided from chat.
pub fn decidable_in_chat(risk: &str, blast_radius: Option<&str>) -> bool {
    risk != "high" && !matches!(blast_radius, Some("large" | "medium"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_fresh_request_signed_with_the_secret_passes() {
        let body = b"payload=%7B%7D";
        let sig = sign("s3cret", 1_700_000_000, body);
        let ok = verify(
            "s3cret",
            Some("1700000000"),
            Some(&sig),
            body,
            1_700_000_100,
        );
        assert_eq!(ok, Ok(()));
        let forged = verify("other", Some("1700000000"), Some(&sig), body, 1_700_000_100);
        assert_eq!(forged, Err(SignatureError::Forged));
        let tampered = verify(
            "s3cret",
            Some("1700000000"),
            Some(&sig),
            b"payload=x",
            1_700_000_100,
        );
        assert_eq!(tampered, Err(SignatureError::Forged));
        let stale = verify(
            "s3cret",
            Some("1700000000"),
            Some(&sig),
            body,
            1_700_000_301,
        );
        assert_eq!(stale, Err(SignatureError::Stale));
        let unsigned = verify("s3cret", None, Some(&sig), body, 1_700_000_000);
        assert_eq!(unsigned, Err(SignatureError::Unsigned));
    }

    #[test]
    fn a_button_press_is_read_with_its_reason_and_anything_else_is_not() {
        let payload = serde_json::json!({
            "type": "block_actions", "user": {"id": "U1"},
            "actions": [{"action_id": REJECT, "value": "p-1"}],
            "state": {"values": {REASON: {REASON: {"type": "plain_text_input", "value": " wrong contact "}}}}
        });
        let p = pressed(&payload.to_string()).expect("pressed");
        assert_eq!(
            p,
            Pressed {
                slack_user: "U1".into(),
                approve: false,
                proposal_id: "p-1".into(),
                reason: Some("wrong contact".into())
            }
        );
        let other = serde_json::json!({"type": "view_submission", "user": {"id": "U1"}});
        assert!(pressed(&other.to_string()).is_none());
        let unknown = serde_json::json!({"type": "block_actions", "user": {"id": "U1"},
            "actions": [{"action_id": "delete_everything", "value": "p-1"}]});
        assert!(pressed(&unknown.to_string()).is_none());
        assert!(decidable_in_chat("medium", Some("small")));
        assert!(!decidable_in_chat("high", None));
        assert!(!decidable_in_chat("low", Some("large")));
    }
}
