//! Extractors: who is calling (bearer tokens of agents and executors), and the JSON body,
//! read by hand so that every failure gets the API's error shape and status.
//!
//! A token is checked from the client's address (the edge's [`ClientAddr`]): an address the
//! service throttles for presenting unknown tokens is answered `429 too_many_unknown_tokens`
//! with `Retry-After` (see `service::tokens`), after [`THROTTLED_PAUSE`].

use app::ports::ClientAddr;
use axum::body::Bytes;
use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::header::{AUTHORIZATION, CONTENT_TYPE};
use axum::http::request::Parts;
use serde_json::Value;

use super::ApiState;
use super::error::ApiError;
use crate::auth::token;
use crate::domain::command::scope::ToolScope;
use crate::domain::principal::Principal;
use crate::domain::principal::TokenKind;
use crate::domain::record::TokenRecord;
use crate::service::TokenCheck;

/// How long a refusal of a throttled address's unknown token is held before it is sent. It
/// costs the server a timer; a client that floods guesses waits for each answer on each of its
/// connections, so its flood cannot take the CPU the agents need.
pub const THROTTLED_PAUSE: std::time::Duration = std::time::Duration::from_secs(1);

async fn principal(
    parts: &Parts,
    state: &ApiState,
    kind: TokenKind,
) -> Result<TokenRecord, ApiError> {
    let header = parts
        .headers
        .get(AUTHORIZATION)
        .and_then(|h| h.to_str().ok())
        .ok_or(ApiError::Unauthenticated)?;
    let presented = header
        .strip_prefix("Bearer ")
        .map(str::trim)
        .filter(|t| !t.is_empty() && t.len() <= 256)
        .ok_or(ApiError::Unauthenticated)?;
    // Without the edge (a router served bare), every client counts as one address.
    let client = parts
        .extensions
        .get::<ClientAddr>()
        .map_or(std::net::Ipv4Addr::UNSPECIFIED.into(), |c| c.0);
    let record = match state
        .services
        .authenticate_token(&token::hash(presented), client)
        .await?
    {
        TokenCheck::Active(record) => record,
        TokenCheck::Refused => return Err(ApiError::Unauthenticated),
        TokenCheck::Throttled { retry_after } => {
            tokio::time::sleep(THROTTLED_PAUSE).await;
            return Err(ApiError::TooManyUnknownTokens {
                retry_after: whole_seconds(retry_after.unsigned_abs()),
            });
        }
    };
    if let Err(wait) = state.limits.check(record.id) {
        return Err(ApiError::TooManyRequests {
            retry_after: whole_seconds(wait),
        });
    }
    if record.kind != kind {
        return Err(ApiError::Forbidden {
            code: "forbidden",
            message: format!(
                "this endpoint is for {} tokens, not {} tokens",
                kind, record.kind
            ),
        });
    }
    Ok(record)
}

/// `wait` in whole seconds, rounded up: what `Retry-After` says.
fn whole_seconds(wait: std::time::Duration) -> u64 {
    wait.as_secs() + u64::from(wait.subsec_nanos() > 0)
}

/// An authenticated agent: its name and its token's id.
pub struct Agent(pub Principal, pub uuid::Uuid);

impl FromRequestParts<ApiState> for Agent {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &ApiState) -> Result<Self, ApiError> {
        principal(parts, state, TokenKind::Agent)
            .await
            .map(|r| Agent(Principal::Agent(r.name), r.id))
    }
}

/// An authenticated executor: its name, its token's tool scope and its token's id.
#[derive(Clone)]
pub struct Executor(pub Principal, pub Option<ToolScope>, pub uuid::Uuid);

impl FromRequestParts<ApiState> for Executor {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &ApiState) -> Result<Self, ApiError> {
        let record = principal(parts, state, TokenKind::Executor).await?;
        // A stored scope that no longer parses grants nothing (deny by default).
        let scope = match record.tool_scope.as_deref() {
            None => None,
            Some(text) => Some(
                ToolScope::parse_list(text).map_err(|_| ApiError::Forbidden {
                    code: "forbidden",
                    message: "this executor token's tool scope is unreadable; create a new token"
                        .into(),
                })?,
            ),
        };
        Ok(Executor(Principal::Executor(record.name), scope, record.id))
    }
}

/// The `{id}` path segment; one that cannot even be read (bad percent-encoding) is `404`,
/// like any unknown id.
pub struct PathId(pub String);

impl FromRequestParts<ApiState> for PathId {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &ApiState) -> Result<Self, ApiError> {
        axum::extract::Path::<String>::from_request_parts(parts, state)
            .await
            .map(|axum::extract::Path(id)| PathId(id))
            .map_err(|_| ApiError::NotFound)
    }
}

/// A JSON request body. An empty body reads as `{}`.
pub struct JsonBody(pub Value);

impl FromRequest<ApiState> for JsonBody {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &ApiState) -> Result<Self, ApiError> {
        let json_type = req
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.split(';').next())
            .map(|m| {
                let m = m.trim().to_ascii_lowercase();
                m == "application/json" || (m.starts_with("application/") && m.ends_with("+json"))
            });
        let bytes = Bytes::from_request(req, state).await.map_err(|rejection| {
            if rejection.status() == axum::http::StatusCode::PAYLOAD_TOO_LARGE {
                ApiError::PayloadTooLarge
            } else {
                ApiError::BadRequest {
                    code: "unreadable_body",
                    message: "the request body could not be read".into(),
                }
            }
        })?;
        if bytes.iter().all(u8::is_ascii_whitespace) {
            return Ok(JsonBody(Value::Object(Default::default())));
        }
        if json_type != Some(true) {
            return Err(ApiError::UnsupportedMediaType);
        }
        serde_json::from_slice(&bytes)
            .map(JsonBody)
            .map_err(|e| ApiError::BadRequest {
                code: "malformed_json",
                message: format!("the body is not valid JSON: {e}"),
            })
    }
}
