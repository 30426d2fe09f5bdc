//! The UI's session port ([`SessionPort`]) over tower-sessions, checked on every use.
//!
//! - **Signed in**, the session holds who (name, role), the account's session epoch and when
//!   they signed in and last used it. [`Services::check_session`] ends it after the idle or
//!   absolute limit, when the account is disabled or its role changed, and when the epoch
//!   moved on (disabled or password reset: every session of the account ends). A used
//!   session is noted at most once a minute, which saves it and so moves its stored expiry on.
//!   An account without a role (made at its first single sign-on) signs in all the same, but
//!   its session is no viewer: [`SessionPort::viewer`] answers `None`, so every page and form
//!   refuses it, and [`SessionPort::awaiting_role`] names it for the page that says so.
//! - **Anonymous** visitors get no stored session at all: a page view writes no row. The
//!   sign-in form's CSRF token is a double-submit pair instead: a random value in a cookie of
//!   its own (`HttpOnly`, `SameSite=Strict`) and, in the form, that value followed by its
//!   keyed hash (the installation's salt), so only a value this server minted is accepted and a
//!   forged form cannot match a cookie the attacker's page cannot read. After sign-in every
//!   form carries the session's own token.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

use app::dto::{AppError, Viewer};
use app::ports::{SessionHandle, SessionPort};
use async_trait::async_trait;
use axum::extract::{Request, State};
use axum::http::{HeaderValue, header};
use axum::middleware::Next;
use axum::response::Response;
use serde::{Deserialize, Serialize};
use subtle::ConstantTimeEq;
use time::OffsetDateTime;
use tower_sessions::cookie::{Cookie, SameSite};
use tower_sessions::session::Error as SessionError;
use tower_sessions::session_store;
use tower_sessions::{Expiry, Session};

use crate::auth::session::AnySessionStore;

use crate::domain::principal::Role;
use crate::domain::sign_in::{SessionLimits, SessionUse};
use crate::service::{Services, SessionStamp};

const USER_KEY: &str = "countersign.user";
const CSRF_KEY: &str = "countersign.csrf";
/// What a refused form said, for the next page only.
const LINES_KEY: &str = "countersign.lines";

/// The session's cookie (set by the session layer, and again here when a use is noted).
pub const SESSION_COOKIE: &str = "countersign_session";
/// The session cookie's `SameSite`.
pub const SESSION_SAME_SITE: SameSite = SameSite::Lax;

/// The cookie that carries the sign-in form's half of its CSRF pair.
pub const LOGIN_CSRF_COOKIE: &str = "countersign_login_csrf";
/// Hex characters of the cookie's random value (192 bits).
const LOGIN_NONCE_LEN: usize = 48;

/// What the session remembers about the signed-in person. Times are Unix seconds by the
/// services' clock; a session from before these fields existed reads as ancient and ends.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct SessionUser {
    username: String,
    /// `None`: the account had no role at sign-in (the session may do nothing).
    role: Option<String>,
    #[serde(default)]
    epoch: i64,
    #[serde(default)]
    signed_in_at: i64,
    #[serde(default)]
    seen_at: i64,
}

/// What every request's session needs: the use cases, the session store, the limits, whether
/// cookies are `Secure`.
#[derive(Clone)]
pub struct SessionConfig {
    /// The use cases (session checks, the salt, the clock).
    pub services: Services,
    /// The store the session layer keeps sessions in (a session's use is noted through it).
    pub store: Arc<AnySessionStore>,
    /// Idle and absolute limits.
    pub limits: SessionLimits,
    /// Mark cookies `Secure`.
    pub secure: bool,
}

/// The typed session of one request.
pub struct WebSession {
    session: Session,
    config: SessionConfig,
    /// The login cookie the browser sent, if it looks like one.
    presented: Option<String>,
    /// A login cookie minted for this response.
    minted: Arc<OnceLock<String>>,
    /// The session's use was noted (its stored expiry moved on): its cookie is sent again.
    noted: Arc<AtomicBool>,
    /// The session's verdict, once checked in this request (a page's resources ask at once;
    /// one check, one `auth.session_ended` at most).
    verdict: tokio::sync::Mutex<Option<Signed>>,
}

/// Who a checked session belongs to.
#[derive(Debug, Clone)]
enum Signed {
    /// Nobody (never signed in, or the session ended).
    Out,
    /// An account without a role: it may do nothing but sign out.
    AwaitingRole(String),
    /// A person with a role.
    In(Viewer),
}

/// Middleware (inside the session layer): puts the request's [`SessionHandle`] into its
/// extensions, saves a changed session ([`save_changes`]), and sets the login CSRF cookie on
/// the response when one was minted.
pub async fn attach_session_port(
    State(config): State<SessionConfig>,
    mut req: Request,
    next: Next,
) -> Response {
    let Some(session) = req.extensions().get::<Session>().cloned() else {
        return next.run(req).await;
    };
    let minted = Arc::new(OnceLock::new());
    let secure = config.secure;
    let noted = Arc::new(AtomicBool::new(false));
    let asked = Asked::of(&req);
    let idle = config.limits.idle;
    let port = WebSession {
        session: session.clone(),
        config,
        presented: login_cookie(&req),
        minted: minted.clone(),
        noted: noted.clone(),
        verdict: tokio::sync::Mutex::new(None),
    };
    req.extensions_mut().insert(SessionHandle(Arc::new(port)));
    let answered = next.run(req).await;
    let mut res = save_changes(&session, answered, &asked).await;
    // A use noted through its own handle left this request's session unchanged, so the layer
    // sends no cookie: send it again, so the browser's copy lives as long as the stored one.
    let resend =
        noted.load(Ordering::Acquire) && !session.is_modified() && !res.status().is_server_error();
    if let Some(value) =
        (session.id().filter(|_| resend)).and_then(|id| session_cookie(id, idle, secure))
    {
        res.headers_mut().append(header::SET_COOKIE, value);
    }
    if let Some(nonce) = minted.get() {
        let secure = if secure { "; Secure" } else { "" };
        let cookie =
            format!("{LOGIN_CSRF_COOKIE}={nonce}; Path=/; HttpOnly; SameSite=Strict{secure}");
        if let Ok(value) = HeaderValue::from_str(&cookie) {
            res.headers_mut().append(header::SET_COOKIE, value);
        }
    }
    res
}

/// The session's cookie as the session layer sets it (`Max-Age` the idle limit), or `None`
/// if it cannot be a header.
fn session_cookie(
    id: tower_sessions::session::Id,
    idle: time::Duration,
    secure: bool,
) -> Option<HeaderValue> {
    let cookie = Cookie::build((SESSION_COOKIE, id.to_string()))
        .http_only(true)
        .same_site(SESSION_SAME_SITE)
        .secure(secure)
        .path("/")
        .max_age(idle)
        .build();
    HeaderValue::from_str(&cookie.to_string()).ok()
}

/// What a request asked for, as far as answering a failed save goes.
struct Asked {
    /// A server function (`/fn/…`).
    server_fn: bool,
    /// Its browser takes HTML.
    html: bool,
    /// The page it came from.
    page: Option<String>,
}

impl Asked {
    fn of(req: &Request) -> Self {
        let headers = req.headers();
        let html = (headers.get(header::ACCEPT).and_then(|v| v.to_str().ok()))
            .is_some_and(|v| v.contains("text/html"));
        let page = headers.get(header::REFERER).and_then(|v| v.to_str().ok());
        Self {
            server_fn: req.uri().path().starts_with("/fn/"),
            html,
            page: page.map(str::to_owned),
        }
    }
}

/// Saves a session the request changed, before the session layer would: when the store
/// cannot take it, the answer is `503` with words (a server function's [`AppError`], or a
/// sentence; for a plain form, a page linking back to the form's) instead of the layer's
/// empty `500`. The layer saves the same record again after a save here (it cannot be told the
/// session is saved); the store takes that save as made (`crate::auth::session`), so it
/// normally writes nothing and cannot fail. The layer saves nothing after a server error.
async fn save_changes(session: &Session, res: Response, asked: &Asked) -> Response {
    if !session.is_modified() || res.status().is_server_error() || session.is_empty().await {
        return res;
    }
    match session.save().await {
        Ok(()) => res,
        Err(e) => {
            let e = store_failed(e);
            let status = super::fn_status::status_for(&e);
            if asked.html {
                // A page, not a redirect with a notice: the layer would try the save again
                // after anything but a server error.
                let page = asked.page.as_deref().filter(|_| asked.server_fn);
                let back = super::plain::local_path(page.unwrap_or("/"));
                let words = (e.to_string(), "Back to the page");
                return super::plain::page(status, "Try again shortly", &words.0, (&back, words.1));
            }
            let (content_type, body) = if asked.server_fn {
                let json = serde_json::to_string(&e).unwrap_or_default();
                ("application/json", json)
            } else {
                ("text/plain; charset=utf-8", e.to_string())
            };
            let mut res = Response::new(axum::body::Body::from(body));
            *res.status_mut() = status;
            res.headers_mut()
                .insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
            res
        }
    }
}

/// A session store's failure as the pages answer it. The session store (tower-sessions' sqlx
/// store) hands the database's errors on as words only, so every one of them is taken for
/// what it nearly always is, a database that cannot take the request now (down, restarting,
/// its disk full): `503 unavailable` with the error logged, never a `500`.
pub(crate) fn store_failed(e: SessionError) -> AppError {
    match e {
        SessionError::Store(session_store::Error::Backend(_)) => {
            tracing::warn!(error = %e, "the database is not answering");
            AppError::Unavailable
        }
        other => internal(other),
    }
}

/// The login cookie's value, if the request has a well-formed one.
fn login_cookie(req: &Request) -> Option<String> {
    req.headers()
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(name, _)| *name == LOGIN_CSRF_COOKIE)
        .map(|(_, value)| value.to_owned())
        .filter(|v| v.len() == LOGIN_NONCE_LEN && v.bytes().all(|b| b.is_ascii_hexdigit()))
}

fn internal(e: impl std::fmt::Display) -> AppError {
    tracing::error!(error = %e, "session failed");
    AppError::Internal
}

fn unix(t: OffsetDateTime) -> i64 {
    t.unix_timestamp()
}

fn from_unix(secs: i64) -> OffsetDateTime {
    OffsetDateTime::from_unix_timestamp(secs).unwrap_or(OffsetDateTime::UNIX_EPOCH)
}

impl WebSession {
    async fn user(&self) -> Result<Option<SessionUser>, AppError> {
        self.session.get(USER_KEY).await.map_err(store_failed)
    }

    /// The sign-in form's token for `nonce`: the nonce and its keyed hash.
    fn login_token(&self, nonce: &str) -> String {
        let mac = self
            .config
            .services
            .store()
            .salt()
            .hash(format!("countersign-login-csrf/1\0{nonce}").as_bytes());
        format!("{nonce}{mac}")
    }

    /// The login cookie's value: the one presented, or one minted for this response.
    fn login_nonce(&self) -> String {
        match &self.presented {
            Some(nonce) => nonce.clone(),
            None => self
                .minted
                .get_or_init(|| crate::auth::token::random_hex()[..LOGIN_NONCE_LEN].to_owned())
                .clone(),
        }
    }

    /// Checks the stored session and notes its use; [`Signed::Out`] (and the session ended)
    /// when it may no longer be used.
    async fn checked(&self, mut user: SessionUser) -> Result<Signed, AppError> {
        let services = &self.config.services;
        let role = match user.role.as_deref().map(Role::parse) {
            None => None,
            Some(Some(role)) => Some(role),
            Some(None) => {
                self.session.flush().await.map_err(store_failed)?;
                return Ok(Signed::Out);
            }
        };
        let stamp = SessionStamp {
            username: user.username.clone(),
            role,
            epoch: user.epoch,
            signed_in_at: from_unix(user.signed_in_at),
            seen_at: from_unix(user.seen_at),
        };
        match services
            .check_session(&stamp, self.config.limits)
            .await
            .map_err(super::internal)?
        {
            Ok(SessionUse::Keep) => {}
            Ok(SessionUse::Touch) => {
                user.seen_at = unix(services.now());
                self.note_use(&user).await;
            }
            Err(end) => {
                tracing::info!(user = %user.username, reason = end.as_str(), "session ended");
                self.session.flush().await.map_err(store_failed)?;
                return Ok(Signed::Out);
            }
        }
        Ok(match role {
            Some(role) => Signed::In(Viewer {
                username: user.username,
                role: role.into(),
                can_decide: role.can_decide(),
            }),
            None => Signed::AwaitingRole(user.username),
        })
    }

    /// Notes a session's use: saves `user` (its `seen_at` moved on), which moves the stored
    /// expiry on too, so activity extends the session. It goes through a handle of its own, so
    /// the request's session stays unchanged: when the database cannot take the write, the
    /// request is served all the same and its next one tries again (a `seen_at` left behind
    /// only ends the session sooner). A request that changes its session as well saves the
    /// `seen_at` it read, and the next one notes its use again.
    async fn note_use(&self, user: &SessionUser) {
        let Some(id) = self.session.id() else { return };
        let expiry = Expiry::OnInactivity(self.config.limits.idle);
        let own = Session::new(Some(id), Arc::clone(&self.config.store), Some(expiry));
        let noted = async {
            // A session ended meanwhile (signed out in another tab) is not made again.
            if own.get::<SessionUser>(USER_KEY).await?.is_some() {
                own.insert(USER_KEY, user).await?;
                own.save().await?;
            }
            Ok::<(), SessionError>(())
        };
        match noted.await {
            Ok(()) => self.noted.store(true, Ordering::Release),
            Err(e) => {
                tracing::warn!(user = %user.username, error = %e, "a session's use was not noted");
            }
        }
    }

    /// The session's verdict, checked once per request.
    async fn signed(&self) -> Result<Signed, AppError> {
        let mut verdict = self.verdict.lock().await;
        if let Some(known) = &*verdict {
            return Ok(known.clone());
        }
        let signed = match self.user().await? {
            Some(user) => self.checked(user).await?,
            None => Signed::Out,
        };
        *verdict = Some(signed.clone());
        Ok(signed)
    }
}

#[async_trait]
impl SessionPort for WebSession {
    async fn viewer(&self) -> Result<Option<Viewer>, AppError> {
        Ok(match self.signed().await? {
            Signed::In(viewer) => Some(viewer),
            Signed::Out | Signed::AwaitingRole(_) => None,
        })
    }

    async fn awaiting_role(&self) -> Result<Option<String>, AppError> {
        Ok(match self.signed().await? {
            Signed::AwaitingRole(username) => Some(username),
            Signed::Out | Signed::In(_) => None,
        })
    }

    async fn csrf_token(&self) -> Result<String, AppError> {
        if let Some(token) = self
            .session
            .get::<String>(CSRF_KEY)
            .await
            .map_err(store_failed)?
        {
            return Ok(token);
        }
        if self.user().await?.is_none() {
            return Ok(self.login_token(&self.login_nonce()));
        }
        let token = crate::auth::token::random_hex();
        self.session
            .insert(CSRF_KEY, &token)
            .await
            .map_err(store_failed)?;
        Ok(token)
    }

    async fn keep_lines(&self, lines: &[String]) -> Result<(), AppError> {
        self.session
            .insert(LINES_KEY, lines)
            .await
            .map_err(store_failed)
    }

    async fn take_lines(&self) -> Result<Vec<String>, AppError> {
        // Removing marks the session changed even when there is nothing to remove: look first.
        let kept: Option<Vec<String>> = self.session.get(LINES_KEY).await.map_err(store_failed)?;
        if kept.is_some() {
            self.session
                .remove_value(LINES_KEY)
                .await
                .map_err(store_failed)?;
        }
        Ok(kept.unwrap_or_default())
    }

    async fn csrf_matches(&self, token: &str) -> Result<bool, AppError> {
        if token.is_empty() {
            return Ok(false);
        }
        if let Some(stored) = self
            .session
            .get::<String>(CSRF_KEY)
            .await
            .map_err(store_failed)?
        {
            return Ok(stored.as_bytes().ct_eq(token.as_bytes()).into());
        }
        if self.user().await?.is_some() {
            return Ok(false);
        }
        Ok(match &self.presented {
            Some(nonce) => self
                .login_token(nonce)
                .as_bytes()
                .ct_eq(token.as_bytes())
                .into(),
            None => false,
        })
    }

    async fn sign_in(&self, username: &str) -> Result<(), AppError> {
        let services = &self.config.services;
        let account = services
            .user(username)
            .await
            .map_err(super::internal)?
            .filter(|a| !a.disabled)
            .ok_or(AppError::Unauthenticated)?;
        // A new id defeats session fixation; the CSRF token is renewed with it.
        self.session.cycle_id().await.map_err(store_failed)?;
        let token = crate::auth::token::random_hex();
        self.session
            .insert(CSRF_KEY, &token)
            .await
            .map_err(store_failed)?;
        let now = unix(services.now());
        let user = SessionUser {
            username: account.username,
            role: account.role.map(|r| r.as_str().to_owned()),
            epoch: account.session_epoch,
            signed_in_at: now,
            seen_at: now,
        };
        self.session
            .insert(USER_KEY, user)
            .await
            .map_err(store_failed)?;
        *self.verdict.lock().await = None;
        Ok(())
    }

    async fn sign_out(&self) -> Result<(), AppError> {
        self.session.flush().await.map_err(store_failed)?;
        *self.verdict.lock().await = Some(Signed::Out);
        Ok(())
    }
}
