//! Data that crosses between server and browser: what pages show, never secrets.

use serde::{Deserialize, Serialize};

mod account;
mod admin;
mod audit;
mod grant;
mod notice;
mod policy;
mod proposal;
mod queue;
mod runs;
pub use account::*;
pub use admin::*;
pub use audit::*;
pub use grant::*;
pub use notice::*;
pub use policy::*;
pub use proposal::*;
pub use queue::*;
pub use runs::*;

/// The signed-in person.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Viewer {
    /// Username.
    pub username: String,
    /// Role.
    pub role: Role,
    /// Whether the role may approve or reject.
    pub can_decide: bool,
}

/// A person's role, as pages see it (the server's domain has the rules for each).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// Decides and administers.
    Admin,
    /// Decides.
    Reviewer,
    /// Reads everything, decides nothing.
    Compliance,
}

impl Role {
    /// `admin`, `reviewer` or `compliance`.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Admin => "admin",
            Role::Reviewer => "reviewer",
            Role::Compliance => "compliance",
        }
    }
}

impl std::fmt::Display for Role {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What every page needs about the session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionView {
    /// The signed-in person, if any.
    pub viewer: Option<Viewer>,
    /// This session's CSRF token, embedded in every form.
    pub csrf_token: String,
    /// Signed in, but the account has no role yet (made at its first single sign-on, not
    /// granted one): its username. Such a session may do nothing but sign out.
    pub awaiting_role: Option<String>,
    /// Whether single sign-on (OpenID Connect) is configured: the sign-in page offers it.
    pub single_sign_on: bool,
}

/// Errors the server functions return to pages.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
pub enum AppError {
    /// No session.
    #[error("please sign in")]
    Unauthenticated,
    /// Signed in, but the role may not do this.
    #[error("{0}")]
    Forbidden(String),
    /// No such thing.
    #[error("not found")]
    NotFound,
    /// Bad input.
    #[error("{0}")]
    Invalid(String),
    /// Something failed on the server; details are in its log, never here.
    #[error("something went wrong on the server; it has been logged")]
    Internal,
    /// The database cannot take the request now (down, restarting, its disk full): nothing
    /// was changed.
    #[error("the database cannot take this now; nothing was changed, try again shortly")]
    Unavailable,
    /// The server function machinery failed.
    #[error("{0}")]
    ServerFn(leptos::server_fn::error::ServerFnErrorErr),
}

impl leptos::server_fn::error::FromServerFnError for AppError {
    type Encoder = leptos::server_fn::codec::JsonEncoding;

    fn from_server_fn_error(value: leptos::server_fn::error::ServerFnErrorErr) -> Self {
        AppError::ServerFn(value)
    }
}

/// Which state-changing form a refused CSRF token came with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Form {
    /// Sign-in.
    Login,
    /// Sign-out.
    Logout,
    /// Approve or reject.
    Decide,
    /// GDPR erasure.
    Erase,
    /// Verify the audit chain now.
    Verify,
    /// Download an audit export.
    Export,
    /// Settle a command's outcome.
    Resolve,
    /// Approve or dismiss a rollback task.
    Rollback,
    /// Pause or resume a tool.
    ToolSwitch,
    /// Reveal withheld personal data.
    Reveal,
    /// An admin's account or token form.
    Admin,
    /// A passkey form on one's account page.
    Passkey,
}

/// A page or action a role may be denied.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Page {
    /// The audit trail.
    Audit,
    /// The audit charts.
    AuditCharts,
    /// The decision insights.
    Insights,
    /// A proposal's audit timeline.
    AuditTimeline,
    /// An export download.
    AuditExport,
    /// Verifying the chain.
    AuditVerify,
    /// GDPR erasure.
    Erase,
    /// Pausing or resuming a tool.
    ToolSwitch,
    /// The account and token admin pages and their forms.
    Admin,
}

/// Security events the pages report to the audit trail.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum SecurityEvent {
    /// The viewer signed out.
    SignedOut,
    /// The person signed in to this account, which has no role yet, signed out.
    SignedOutWithoutRole(String),
    /// A form came without this session's CSRF token.
    CsrfRejected(Form),
    /// The viewer's role may not see this page or do this.
    AccessDenied(Page),
}

/// What a batch decision from the queue came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BatchOutcome {
    /// `approved` or `rejected`.
    pub verdict: String,
    /// How many proposals were decided (or, needing more approvers, had this approval
    /// recorded).
    pub decided: usize,
    /// Each proposal not decided, with why.
    pub refused: Vec<(String, Notice)>,
}

impl BatchOutcome {
    /// The queue's address showing this outcome: `?batch=VERDICT&done=N&refused=ID:CODE,…`.
    pub fn location(&self) -> String {
        let refused: Vec<String> = (self.refused.iter())
            .map(|(id, n)| format!("{id}:{}", n.code()))
            .collect();
        let mut to = format!("/?batch={}&done={}", self.verdict, self.decided);
        if !refused.is_empty() {
            to.push_str(&format!("&refused={}", refused.join(",")));
        }
        to
    }

    /// The outcome a queue address shows, if it shows one; refusals whose id or notice does
    /// not parse are left out (the address is the viewer's to edit).
    pub fn from_query(
        verdict: Option<&str>,
        done: Option<&str>,
        refused: Option<&str>,
    ) -> Option<Self> {
        let verdict = verdict.filter(|v| matches!(*v, "approved" | "rejected"))?;
        let decided = done.and_then(|d| d.parse().ok()).unwrap_or(0);
        let refused = (refused.unwrap_or_default().split(','))
            .filter_map(|pair| {
                let (id, code) = pair.split_once(':')?;
                let id = uuid::Uuid::parse_str(id).ok()?.to_string();
                Some((id, Notice::parse(code)?))
            })
            .collect();
        Some(Self {
            verdict: verdict.to_owned(),
            decided,
            refused,
        })
    }
}
