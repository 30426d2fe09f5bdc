//! What the UI needs from the server, as traits the root crate implements (server only).
//! The root crate provides each port's `Dyn…` handle ([`DynDesk`], [`DynAccountDesk`],
//! [`DynGrantsDesk`], [`DynRunsDesk`], [`DynLedger`], [`DynAdmin`], the policy's desk) as Leptos
//! context and puts a [`SessionHandle`] into every request's extensions.

pub mod policy;

use std::sync::Arc;

use crate::dto::{
    AppError, Notice, ProposalView, QueueParams, QueueView, RunsView, SecurityEvent, Viewer,
};

/// The reviewer's desk: sign-in, the queue, proposals and the decisions on them.
#[async_trait::async_trait]
pub trait Desk: Send + Sync + 'static {
    /// Checks a username and password from `client`. A wrong name and a wrong password get
    /// the same answer in the same time; too many failures lately (for the name or the
    /// address) get [`SignInOutcome::Throttled`] without any password check.
    async fn authenticate(
        &self,
        username: &str,
        password: &str,
        client: ClientAddr,
    ) -> Result<SignInOutcome, AppError>;
    /// A page of the pending proposals the viewer may decide, filtered and ordered as asked.
    async fn queue(&self, viewer: &Viewer, params: QueueParams) -> Result<QueueView, AppError>;
    /// One proposal with its review, execution and a page of its audit trail (the most recent
    /// events, or those before seq `trail_before`). With `reveal`, personal data the viewer
    /// revealed (an audited [`Desk::reveal`] within the last minutes) is shown, not withheld.
    async fn proposal(
        &self,
        viewer: &Viewer,
        id: &str,
        trail_before: Option<i64>,
        reveal: bool,
    ) -> Result<ProposalView, AppError>;
    /// Approves or rejects; `confirmation` is the target's name as typed, which approving a
    /// high-risk or wide-reaching action needs, and `passkey` the passkey's answer (JSON) to
    /// the step-up challenge, where the policy asks one. `Ok` carries a notice code, `Err` an
    /// error the page explains.
    async fn decide(
        &self,
        viewer: &Viewer,
        id: &str,
        verdict: &str,
        reason: Option<&str>,
        confirmation: Option<&str>,
        passkey: Option<&str>,
    ) -> Result<DecideOutcome, AppError>;
    /// Approves or rejects each of the proposals `ids` with one reason (the queue's batch),
    /// each as its own decision under every rule. A batch that cannot be taken at all (no
    /// proposal chosen, too many, another verdict) is `Err` with a notice.
    async fn decide_batch(
        &self,
        viewer: &Viewer,
        ids: &[String],
        verdict: &str,
        reason: Option<&str>,
    ) -> Result<Result<crate::dto::BatchOutcome, Notice>, AppError>;
    /// Reveals a GDPR or HIPAA proposal's withheld personal data to the viewer, recording
    /// which fields in the audit trail. `Ok` carries a notice code.
    async fn reveal(&self, viewer: &Viewer, id: &str) -> Result<DecideOutcome, AppError>;
    /// Erases a settled proposal's personal data (admins only). `Ok` carries a notice code.
    async fn erase(
        &self,
        viewer: &Viewer,
        id: &str,
        reason: &str,
    ) -> Result<DecideOutcome, AppError>;
    /// Approves proposal `id` (with the target's name as typed, if it needs it) and lets the
    /// same agent's similar calls through as `form` asks ("approve and allow similar").
    async fn approve_and_grant(
        &self,
        viewer: &Viewer,
        id: &str,
        confirmation: Option<&str>,
        form: &crate::dto::GrantForm,
    ) -> Result<DecideOutcome, AppError>;
    /// Approves proposal `id` alone although it needs more approvers (an admin's
    /// break-glass), with a written `justification`.
    async fn break_glass(
        &self,
        viewer: &Viewer,
        id: &str,
        justification: &str,
        confirmation: Option<&str>,
        passkey: Option<&str>,
    ) -> Result<DecideOutcome, AppError>;
    /// Approves proposal `id` with the parameter values the viewer edited: `fields` are
    /// `(hex JSON pointer, JSON text)` as the form posts them.
    async fn edit_and_approve(
        &self,
        viewer: &Viewer,
        id: &str,
        confirmation: Option<&str>,
        fields: &[(String, String)],
    ) -> Result<DecideOutcome, AppError>;
    /// Records a security event (sign-out, refused CSRF token, denied page) in the audit trail.
    /// `viewer` is who was signed in, if anyone.
    async fn security(&self, viewer: Option<&Viewer>, event: SecurityEvent)
    -> Result<(), AppError>;
}

/// The viewer's own account: the account page and its passkeys.
#[async_trait::async_trait]
pub trait AccountDesk: Send + Sync + 'static {
    /// The viewer's account page: who they are and their passkeys.
    async fn account(&self, viewer: &Viewer) -> Result<crate::dto::AccountView, AppError>;
    /// The options of the browser's passkey prompt, JSON: to register a passkey (`proposal`
    /// `None`), or to answer the step-up challenge of approving `proposal`. A refusal (no
    /// passkey to answer with) is the inner `Err`.
    async fn passkey_options(
        &self,
        viewer: &Viewer,
        proposal: Option<&str>,
    ) -> Result<Result<String, Notice>, AppError>;
    /// Registers the passkey the browser created (`credential`, JSON) under `name`.
    async fn add_passkey(
        &self,
        viewer: &Viewer,
        name: &str,
        credential: &str,
    ) -> Result<DecideOutcome, AppError>;
    /// Renames the viewer's passkey `id`.
    async fn rename_passkey(
        &self,
        viewer: &Viewer,
        id: &str,
        name: &str,
    ) -> Result<DecideOutcome, AppError>;
    /// Removes the viewer's passkey `id`.
    async fn remove_passkey(&self, viewer: &Viewer, id: &str) -> Result<DecideOutcome, AppError>;
}

/// The account desk, shared.
pub type DynAccountDesk = Arc<dyn AccountDesk>;

/// Standing grants ("approve and allow similar"): the grants page and its revoke button.
#[async_trait::async_trait]
pub trait GrantsDesk: Send + Sync + 'static {
    /// The standing grants the viewer may see.
    async fn grants(&self, viewer: &Viewer) -> Result<crate::dto::GrantsView, AppError>;
    /// Revokes standing grant `id`.
    async fn revoke_grant(&self, viewer: &Viewer, id: &str) -> Result<DecideOutcome, AppError>;
}

/// The grants desk, shared.
pub type DynGrantsDesk = Arc<dyn GrantsDesk>;

/// The runs page: commands a person must settle, rollback tasks and paused tools.
#[async_trait::async_trait]
pub trait RunsDesk: Send + Sync + 'static {
    /// Commands a person must settle, rollback tasks and paused tools.
    async fn runs(&self, viewer: &Viewer) -> Result<RunsView, AppError>;
    /// Settles a command: `succeeded`, `failed` or `release`, with a reason.
    async fn resolve(
        &self,
        viewer: &Viewer,
        id: &str,
        resolution: &str,
        reason: &str,
    ) -> Result<DecideOutcome, AppError>;
    /// Approves (`approve`) or dismisses (`dismiss`) a rollback task.
    async fn decide_rollback(
        &self,
        viewer: &Viewer,
        id: &str,
        verdict: &str,
        reason: Option<&str>,
    ) -> Result<DecideOutcome, AppError>;
    /// Pauses (`pause`) or resumes (`resume`) a tool (admins only).
    async fn switch_tool(
        &self,
        viewer: &Viewer,
        pattern: &str,
        action: &str,
    ) -> Result<DecideOutcome, AppError>;
}

/// The runs desk, shared.
pub type DynRunsDesk = Arc<dyn RunsDesk>;

/// What a sign-in attempt came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SignInOutcome {
    /// Signed in as this viewer.
    SignedIn(Viewer),
    /// Wrong username or password (one answer for both).
    Refused,
    /// Too many failed attempts lately; try again later.
    Throttled,
    /// The password matched an account that has no role yet: signed in, to be told so.
    AwaitingRole(String),
}

/// Whether single sign-on is configured, provided as context by the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SingleSignOn(pub bool);

/// The client's address, as the server determined it (the socket's peer, or what a trusted
/// proxy forwarded); every request carries it in its extensions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClientAddr(pub std::net::IpAddr);

/// What a decision attempt came to, as notices a page turns into words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DecideOutcome {
    /// Decided: `Approved`, `Rejected` or `ApprovalRecorded`.
    Decided(Notice),
    /// Refused by a rule: the notice names it (`AlreadyDecided`, `OwnProposal`, …).
    Refused(Notice),
}

/// The desk, shared.
pub type DynDesk = Arc<dyn Desk>;

/// The current request's session.
#[async_trait::async_trait]
pub trait SessionPort: Send + Sync + 'static {
    /// The signed-in person, if the session is still good: within its idle and absolute
    /// limits, its account still enabled, with the same role, not signed out everywhere since.
    /// A session that is not is ended here.
    async fn viewer(&self) -> Result<Option<Viewer>, AppError>;
    /// Signed in to an account that has no role yet (checked as [`SessionPort::viewer`]
    /// checks): its username. Such a session is no viewer: it may do nothing but sign out.
    async fn awaiting_role(&self) -> Result<Option<String>, AppError>;
    /// This session's CSRF token, created on first use. Before sign-in it lives in a cookie
    /// of its own (no session is stored for anonymous visitors).
    async fn csrf_token(&self) -> Result<String, AppError>;
    /// Whether `token` is this session's CSRF token (constant-time).
    async fn csrf_matches(&self, token: &str) -> Result<bool, AppError>;
    /// Signs the account `username` in under a new session id, with the role it has now.
    async fn sign_in(&self, username: &str) -> Result<(), AppError>;
    /// Ends the session.
    async fn sign_out(&self) -> Result<(), AppError>;
    /// Keeps `lines` for this session's next page (what a refused form said, too long for an
    /// address), replacing any kept before.
    async fn keep_lines(&self, lines: &[String]) -> Result<(), AppError>;
    /// The lines kept for this page, once: they are gone after.
    async fn take_lines(&self) -> Result<Vec<String>, AppError>;
}

/// The session port of one request, found in its extensions.
#[derive(Clone)]
pub struct SessionHandle(pub Arc<dyn SessionPort>);

/// The compliance officer's ledger: the whole audit trail, a proposal's timeline, the charts
/// and on-demand verification. Every method answers `Forbidden` unless the viewer's role may
/// audit (compliance, admin); the server functions record the refusal.
#[async_trait::async_trait]
pub trait Ledger: Send + Sync + 'static {
    /// A page of the trail under `query`'s filters and cursor, with the chain's state.
    async fn trail(
        &self,
        viewer: &Viewer,
        query: &crate::dto::AuditQuery,
    ) -> Result<crate::dto::AuditPage, AppError>;
    /// Proposal `id`'s timeline from the start (or after/before a seq).
    async fn timeline(
        &self,
        viewer: &Viewer,
        id: &str,
        before: Option<&str>,
        after: Option<&str>,
    ) -> Result<crate::dto::TimelineView, AppError>;
    /// The charts' numbers.
    async fn charts(&self, viewer: &Viewer) -> Result<crate::dto::ChartsView, AppError>;
    /// The decision insights over the last `days` days.
    async fn insights(
        &self,
        viewer: &Viewer,
        days: i64,
    ) -> Result<crate::dto::InsightsView, AppError>;
    /// Verifies the whole chain now and keeps the result for the trail page.
    async fn verify(&self, viewer: &Viewer) -> Result<(), AppError>;
}

/// The ledger, shared.
pub type DynLedger = Arc<dyn Ledger>;

/// A change to a person's account, as the users page's forms ask for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UserChange {
    /// Add a user with a one-time password; `domains` comma-separated (empty: every domain).
    Add {
        /// Username.
        username: String,
        /// Role, as typed.
        role: String,
        /// Domains, as typed.
        domains: Option<String>,
        /// Email address, as typed (empty: none).
        email: Option<String>,
    },
    /// Disable (sessions end at their next request).
    Disable(String),
    /// Enable again.
    Enable(String),
    /// A new one-time password (sessions end).
    ResetPassword(String),
    /// Another role.
    Role {
        /// Username.
        username: String,
        /// Role, as typed.
        role: String,
    },
    /// Other domains (empty: every domain).
    Domains {
        /// Username.
        username: String,
        /// Domains, as typed.
        domains: Option<String>,
    },
    /// Another email address (empty: none).
    Email {
        /// Username.
        username: String,
        /// Address, as typed.
        email: Option<String>,
    },
}

/// A change to the API tokens, as the tokens page's forms ask for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TokenChange {
    /// Create a token (shown once).
    Create {
        /// `agent` or `executor`.
        kind: String,
        /// Principal name.
        name: String,
        /// An executor's tool scope, comma-separated globs.
        tools: Option<String>,
        /// An agent's operator.
        operator: Option<String>,
        /// An agent's callback URL.
        webhook: Option<String>,
    },
    /// Revoke the token with this id.
    Revoke(String),
    /// Give the webhook of the agent token with this id a new signing secret (shown once).
    RotateWebhookSecret(String),
}

/// What an admin's change came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AdminOutcome {
    /// The notice (or error) to show.
    pub notice: Notice,
    /// Whether it was refused.
    pub refused: bool,
    /// A key under which a secret waits to be shown once on the next page.
    pub shown: Option<String>,
}

/// Accounts and tokens (admins only). Every method refuses other roles and records the
/// refusal (`access.denied`); secrets made here are kept for one showing, then forgotten.
#[async_trait::async_trait]
pub trait Admin: Send + Sync + 'static {
    /// The users page; `shown` takes the secret waiting under that key, if any.
    async fn users(
        &self,
        viewer: &Viewer,
        shown: Option<&str>,
    ) -> Result<crate::dto::UsersView, AppError>;
    /// The tokens page; `shown` takes the secret waiting under that key, if any.
    async fn tokens(
        &self,
        viewer: &Viewer,
        shown: Option<&str>,
    ) -> Result<crate::dto::TokensView, AppError>;
    /// Changes an account.
    async fn change_user(
        &self,
        viewer: &Viewer,
        change: UserChange,
    ) -> Result<AdminOutcome, AppError>;
    /// The newest webhook deliveries and their attempts.
    async fn webhooks(&self, viewer: &Viewer) -> Result<crate::dto::WebhooksView, AppError>;
    /// Creates or revokes a token.
    async fn change_token(
        &self,
        viewer: &Viewer,
        change: TokenChange,
    ) -> Result<AdminOutcome, AppError>;
    /// The MCP gateway's upstreams and pinned tools.
    async fn gateway(&self, viewer: &Viewer) -> Result<crate::dto::GatewayView, AppError>;
    /// Accepts the changed definition of gateway tool `name` (`files.write_file`), the one
    /// whose SHA-256 is `seen` (the one the page showed).
    async fn accept_gateway_tool(
        &self,
        viewer: &Viewer,
        name: &str,
        seen: &str,
    ) -> Result<AdminOutcome, AppError>;
}

/// The admin port, shared.
pub type DynAdmin = Arc<dyn Admin>;
