//! Single sign-on's two routes (only when an OpenID provider is configured):
//!
//! - `GET /auth/oidc/login` sends the person to the provider (authorization code with PKCE),
//!   keeping the state, nonce and PKCE verifier in the session;
//! - `GET /auth/oidc/callback` takes those back out (each sign-in is answered once), checks
//!   the provider's answer ([`Oidc::finish`]), signs the person in under a new session id
//!   ([`Services::sso_sign_in`], then the session port as for a password) and sends them to
//!   the queue — or, when their account has no role yet, to `/no-role`. A failure is recorded
//!   and sends them back to the sign-in page with an error.

use std::sync::Arc;

use app::dto::{AppError, Notice};
use app::ports::SessionHandle;
use axum::extract::{Query, State};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::get;
use axum::{Extension, Router};
use serde::Deserialize;
use tower_sessions::Session;

use super::fn_status::status_for;
use crate::auth::oidc::{Oidc, OidcFailure, PendingLogin};
use crate::domain::sso::SsoIdentity;
use crate::service::{Services, SsoSignIn};

/// Where the session keeps a sign-in under way.
const PENDING_KEY: &str = "countersign.oidc_pending";

#[derive(Clone)]
struct SsoState {
    services: Services,
    oidc: Arc<Oidc>,
}

/// The routes, inside the session layers.
pub fn router(services: Services, oidc: Arc<Oidc>) -> Router {
    Router::new()
        .route("/auth/oidc/login", get(login))
        .route("/auth/oidc/callback", get(callback))
        .with_state(SsoState { services, oidc })
}

/// What the provider sends back (RFC 6749 §4.1.2: `code` and `state`, or `error`; RFC 9207:
/// `iss`, when the provider names itself).
#[derive(Deserialize)]
struct Answer {
    code: Option<String>,
    state: Option<String>,
    error: Option<String>,
    iss: Option<String>,
}

/// The session could not be read or written: `503` when its database cannot take it now.
fn session_failed(e: tower_sessions::session::Error) -> Response {
    refused(crate::web::session::store_failed(e))
}

/// A use case's or the session port's failure (logged where it was made), answered with its
/// status: `503` when the database cannot take it now, else `500`.
fn refused(e: AppError) -> Response {
    (status_for(&e), e.to_string()).into_response()
}

fn to_login(notice: Notice) -> Response {
    Redirect::to(&format!("/login?error={}", notice.code())).into_response()
}

async fn login(State(s): State<SsoState>, session: Session) -> Response {
    let (url, pending) = s.oidc.start();
    match session.insert(PENDING_KEY, pending).await {
        Ok(()) => Redirect::to(&url).into_response(),
        Err(e) => session_failed(e),
    }
}

async fn callback(
    State(s): State<SsoState>,
    session: Session,
    Extension(port): Extension<SessionHandle>,
    Query(answer): Query<Answer>,
) -> Response {
    let pending = match session.remove::<PendingLogin>(PENDING_KEY).await {
        Ok(p) => p,
        Err(e) => return session_failed(e),
    };
    let identity = match check(&s.oidc, pending, answer).await {
        Ok(identity) => identity,
        Err(failure) => {
            tracing::warn!(reason = failure.reason(), error = %failure, "single sign-on refused");
            if let Err(e) = s.services.sso_sign_in_failed(failure.reason()).await {
                return refused(super::internal(e));
            }
            return to_login(Notice::SsoFailed);
        }
    };
    match s.services.sso_sign_in(identity).await {
        Ok(SsoSignIn::SignedIn(user)) => {
            match port.0.sign_in(&user.username).await {
                Ok(()) => {}
                // Disabled between the provider's answer and the session.
                Err(AppError::Unauthenticated) => return to_login(Notice::SsoRefused),
                Err(e) => return refused(e),
            }
            let role = user.role.map_or("none", |r| r.as_str());
            tracing::info!(user = %user.username, role, "signed in through single sign-on");
            let to = if user.role.is_some() { "/" } else { "/no-role" };
            Redirect::to(to).into_response()
        }
        Ok(SsoSignIn::Disabled) => to_login(Notice::SsoRefused),
        Ok(SsoSignIn::NoUsername) => to_login(Notice::SsoFailed),
        Err(e) => refused(super::internal(e)),
    }
}

/// The identity the provider's answer vouches for, once it checks out against the session's
/// pending sign-in.
async fn check(
    oidc: &Oidc,
    pending: Option<PendingLogin>,
    answer: Answer,
) -> Result<SsoIdentity, OidcFailure> {
    if let Some(error) = answer.error {
        // The provider's code (`access_denied`, …), kept printable and short for the log.
        let code = error.chars().filter(char::is_ascii_graphic).take(64);
        return Err(OidcFailure::Provider(code.collect()));
    }
    let (Some(pending), Some(state), Some(code)) = (pending, answer.state, answer.code) else {
        return Err(OidcFailure::StateMismatch);
    };
    if answer.iss.is_some_and(|iss| iss != oidc.issuer()) {
        return Err(OidcFailure::IssuerMismatch);
    }
    oidc.finish(pending, &state, &code).await
}
