//! The API's one error type. Each variant documents its status; the body is always
//! `{"error": {"code": "...", "message": "...", "details": [{"field": "...", "message": "..."}]}}`.
//! Internal errors are logged with tracing and answered with a generic message, never echoed.

use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Serialize;

use crate::domain::FieldError;
use crate::service::{Conflict, ServiceError};

/// An API error.
#[derive(Debug)]
pub enum ApiError {
    /// 400: the body is not valid JSON (`malformed_json`) or otherwise unreadable.
    BadRequest {
        /// Machine-readable code.
        code: &'static str,
        /// What went wrong.
        message: String,
    },
    /// 401: missing, malformed, unknown or revoked bearer token (`unauthenticated`).
    Unauthenticated,
    /// 403: authenticated, but not allowed (`forbidden`, `proposer_mismatch`, …).
    Forbidden {
        /// Machine-readable code.
        code: &'static str,
        /// What went wrong.
        message: String,
    },
    /// 404: no such resource, or not yours (`not_found`).
    NotFound,
    /// 405: the path exists but not with this method (`method_not_allowed`).
    MethodNotAllowed,
    /// 409: conflicts with the current state (`proposal_id_conflict`, `command_not_leased`,
    /// `lease_token_mismatch`).
    Conflict {
        /// Machine-readable code.
        code: &'static str,
        /// What went wrong.
        message: String,
    },
    /// 413: body larger than the documented limit (`payload_too_large`).
    PayloadTooLarge,
    /// 415: body is not `application/json` (`unsupported_media_type`).
    UnsupportedMediaType,
    /// 429: this token made more requests than its rate limit allows (`rate_limited`); retry
    /// after `Retry-After` seconds.
    TooManyRequests {
        /// Whole seconds until a request will be accepted.
        retry_after: u64,
    },
    /// 429: this client's address presented too many tokens that match no active token lately
    /// (`too_many_unknown_tokens`); its unknown tokens are refused, without a lookup and after
    /// a pause, for `Retry-After` seconds. A valid token is still accepted.
    TooManyUnknownTokens {
        /// Whole seconds until an unknown token from this address is looked up again.
        retry_after: u64,
    },
    /// 429: this token already has as many requests waiting (`?wait=`, event streams, MCP's
    /// `wait_for_decision`) as it may (`too_many_waits`); retry after one ends.
    TooManyWaits {
        /// Waits a token may hold at once.
        limit: u32,
    },
    /// 422: well-formed JSON that breaks the contract (`validation_failed`,
    /// `idempotency_key_reused`), with every broken rule in `details`.
    Unprocessable {
        /// Machine-readable code.
        code: &'static str,
        /// What went wrong.
        message: String,
        /// Every broken rule, by field path.
        details: Vec<FieldError>,
    },
    /// 500: a server fault, logged, never described (`internal`).
    Internal,
    /// 503: the database does not answer (`unavailable`).
    Unavailable,
}

#[derive(Serialize)]
struct Body<'a> {
    error: Inner<'a>,
}

#[derive(Serialize)]
struct Inner<'a> {
    code: &'a str,
    message: &'a str,
    details: &'a [FieldError],
}

impl ApiError {
    /// 422 `validation_failed` with the given field errors.
    pub fn validation(details: Vec<FieldError>) -> Self {
        ApiError::Unprocessable {
            code: "validation_failed",
            message: "the request breaks the contract; see details".into(),
            details,
        }
    }

    /// 422 `validation_failed` for one field.
    pub fn field(field: &str, message: impl Into<String>) -> Self {
        Self::validation(vec![FieldError::new(field, message)])
    }

    /// Status code.
    pub fn status(&self) -> StatusCode {
        match self {
            ApiError::BadRequest { .. } => StatusCode::BAD_REQUEST,
            ApiError::Unauthenticated => StatusCode::UNAUTHORIZED,
            ApiError::Forbidden { .. } => StatusCode::FORBIDDEN,
            ApiError::NotFound => StatusCode::NOT_FOUND,
            ApiError::MethodNotAllowed => StatusCode::METHOD_NOT_ALLOWED,
            ApiError::Conflict { .. } => StatusCode::CONFLICT,
            ApiError::PayloadTooLarge => StatusCode::PAYLOAD_TOO_LARGE,
            ApiError::UnsupportedMediaType => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            ApiError::Unprocessable { .. } => StatusCode::UNPROCESSABLE_ENTITY,
            ApiError::TooManyRequests { .. }
            | ApiError::TooManyUnknownTokens { .. }
            | ApiError::TooManyWaits { .. } => StatusCode::TOO_MANY_REQUESTS,
            ApiError::Internal => StatusCode::INTERNAL_SERVER_ERROR,
            ApiError::Unavailable => StatusCode::SERVICE_UNAVAILABLE,
        }
    }
}

impl ApiError {
    /// The error's code, message and field errors.
    fn parts(&self) -> (&str, String, &[FieldError]) {
        match self {
            ApiError::BadRequest { code, message } => (code, message.clone(), &[]),
            ApiError::Unauthenticated => (
                "unauthenticated",
                "send a valid token as `Authorization: Bearer <token>`".into(),
                &[],
            ),
            ApiError::Forbidden { code, message } => (code, message.clone(), &[]),
            ApiError::NotFound => ("not_found", "no such resource".into(), &[]),
            ApiError::MethodNotAllowed => (
                "method_not_allowed",
                "this path does not take that method".into(),
                &[],
            ),
            ApiError::Conflict { code, message } => (code, message.clone(), &[]),
            ApiError::PayloadTooLarge => (
                "payload_too_large",
                format!(
                    "the request body is larger than the {} KiB limit",
                    super::MAX_BODY_BYTES / 1024
                ),
                &[],
            ),
            ApiError::UnsupportedMediaType => (
                "unsupported_media_type",
                "send the body as `Content-Type: application/json`".into(),
                &[],
            ),
            ApiError::Unprocessable {
                code,
                message,
                details,
            } => (code, message.clone(), details),
            ApiError::TooManyRequests { retry_after } => (
                "rate_limited",
                format!(
                    "this token made more requests than its rate limit allows; retry after \
                     {retry_after} s"
                ),
                &[],
            ),
            ApiError::TooManyUnknownTokens { retry_after } => (
                "too_many_unknown_tokens",
                format!(
                    "too many requests from this address carried a token that matches no \
                     active token; such tokens are refused for {retry_after} s (a valid token is \
                     accepted)"
                ),
                &[],
            ),
            ApiError::TooManyWaits { limit } => (
                "too_many_waits",
                format!(
                    "this token already has {limit} requests waiting for a change, as many as \
                     it may; retry when one has ended"
                ),
                &[],
            ),
            ApiError::Internal => (
                "internal",
                "something went wrong on the server; it has been logged".into(),
                &[],
            ),
            ApiError::Unavailable => (
                "unavailable",
                "the database cannot take this now (down, unreachable or out of space); nothing was \
                 changed; retry later"
                    .into(),
                &[],
            ),
        }
    }

    /// The error's JSON body, `{"error": {"code", "message", "details"?}}` (also what MCP tools
    /// answer).
    pub fn body(&self) -> serde_json::Value {
        let (code, message, details) = self.parts();
        serde_json::to_value(Body {
            error: Inner {
                code,
                message: &message,
                details,
            },
        })
        .unwrap_or_default()
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let status = self.status();
        let mut response = (status, Json(self.body())).into_response();
        let retry_after = match &self {
            ApiError::TooManyRequests { retry_after }
            | ApiError::TooManyUnknownTokens { retry_after } => Some(*retry_after),
            ApiError::TooManyWaits { .. } => Some(1),
            _ => None,
        };
        if let Some(seconds) = retry_after {
            response.headers_mut().insert(
                axum::http::header::RETRY_AFTER,
                axum::http::HeaderValue::from(seconds),
            );
        }
        if status == StatusCode::UNAUTHORIZED {
            response.headers_mut().insert(
                axum::http::header::WWW_AUTHENTICATE,
                axum::http::HeaderValue::from_static("Bearer"),
            );
        }
        response
    }
}

impl From<ServiceError> for ApiError {
    fn from(e: ServiceError) -> Self {
        match e {
            ServiceError::Invalid(errors) => ApiError::validation(errors),
            ServiceError::Forbidden { code, message } => ApiError::Forbidden { code, message },
            ServiceError::Refused(e) => ApiError::Forbidden {
                code: "forbidden",
                message: e.to_string(),
            },
            ServiceError::Denied(e) => ApiError::Forbidden {
                code: "not_permitted",
                message: e.to_string(),
            },
            ServiceError::Conflict(c) => conflict(c),
            ServiceError::NotFound => ApiError::NotFound,
            ServiceError::Erasure(e) => ApiError::Conflict {
                code: "erasure_not_possible",
                message: e.to_string(),
            },
            ServiceError::Storage(e) if e.is_unavailable() => {
                tracing::warn!(error = %e, "the database is not answering");
                ApiError::Unavailable
            }
            ServiceError::Storage(e) => {
                tracing::error!(error = %e, "storage failed");
                ApiError::Internal
            }
        }
    }
}

/// What each conflict means to an API client.
fn conflict(c: Conflict) -> ApiError {
    match c {
        Conflict::IdempotencyKeyReused => ApiError::Unprocessable {
            code: "idempotency_key_reused",
            message: "this idempotency_key was already used for a different request; use a new key for a new request".into(),
            details: vec![FieldError::new(
                "idempotency_key",
                "already used by this agent with a different body",
            )],
        },
        Conflict::ProposalIdTaken => ApiError::Conflict {
            code: "proposal_id_conflict",
            message: "a different proposal already has this proposal_id; generate a new UUID".into(),
        },
        Conflict::LeaseTokenMismatch => ApiError::Conflict {
            code: "lease_token_mismatch",
            message: "this is not the command's current lease token; the lease may have expired and been taken by another executor".into(),
        },
        Conflict::CommandNotLeased(status) => ApiError::Conflict {
            code: "command_not_leased",
            message: format!(
                "the command is {status}, not leased by you; your lease ended (it was reported, \
                 or it lapsed and was retried or settled); nothing was changed"
            ),
        },
        Conflict::CommandState(status) => ApiError::Conflict {
            code: "command_state",
            message: format!("the command is {status}; it is not waiting for that"),
        },
        Conflict::AlreadyDecided(status) => ApiError::Conflict {
            code: "already_decided",
            message: format!("the proposal is already {status}"),
        },
        Conflict::AlreadyApproved => ApiError::Conflict {
            code: "already_approved",
            message: "you already approved this proposal".into(),
        },
        Conflict::UsernameTaken => ApiError::Conflict {
            code: "username_taken",
            message: "a user with this name exists".into(),
        },
        Conflict::GrantEnded(state) => ApiError::Conflict {
            code: "grant_ended",
            message: format!("the grant is {}; only a live grant changes", state.as_str()),
        },
        Conflict::GrantSpent => ApiError::Conflict {
            code: "grant_spent",
            message: "the standing grant ended while the proposal was stored; submit again".into(),
        },
        Conflict::CallOpenAgain(open) => ApiError::Conflict {
            code: "call_open_again",
            message: format!(
                "the agent made the same gateway call again, and proposal {open} is open for it; \
                 only one copy of a call may be open, so this one is not released to run again \
                 (resolve it another way, or decide {open} first)"
            ),
        },
    }
}

/// Fallback for unknown API paths.
pub async fn not_found() -> ApiError {
    ApiError::NotFound
}

/// Fallback for known paths with the wrong method.
pub async fn method_not_allowed() -> ApiError {
    ApiError::MethodNotAllowed
}
