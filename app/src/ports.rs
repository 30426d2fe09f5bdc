//! What the UI needs from the server, as traits the root crate implements (server only).
//! The root crate provides a [`DynDesk`] as Leptos context and puts a [`SessionHandle`] into
//! every request's extensions.

use std::sync::Arc;

use crate::dto::{AppError, Notice, ProposalView, QueueItem, Viewer};

/// The reviewer's desk: sign-in and proposals.
#[async_trait::async_trait]
pub trait Desk: Send + Sync + 'static {
    /// Checks a username and password. Wrong name or password is `Unauthenticated`, with the
    /// same timing either way.
    async fn authenticate(&self, username: &str, password: &str) -> Result<Viewer, AppError>;
    /// Whether a session's viewer still matches the stored account (exists, not disabled, same
    /// role). A session that no longer does is ended.
    async fn revalidate(&self, viewer: &Viewer) -> Result<bool, AppError>;
    /// Pending proposals, oldest first.
    async fn queue(&self, viewer: &Viewer) -> Result<Vec<QueueItem>, AppError>;
    /// One proposal with its review, execution and audit trail.
    async fn proposal(&self, viewer: &Viewer, id: &str) -> Result<ProposalView, AppError>;
    /// Approves or rejects. `Ok` carries a notice code, `Err` an error the page explains.
    async fn decide(
        &self,
        viewer: &Viewer,
        id: &str,
        verdict: &str,
        reason: Option<&str>,
    ) -> Result<DecideOutcome, AppError>;
}

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
    /// The signed-in person, if any.
    async fn viewer(&self) -> Result<Option<Viewer>, AppError>;
    /// This session's CSRF token, created on first use.
    async fn csrf_token(&self) -> Result<String, AppError>;
    /// Whether `token` is this session's CSRF token (constant-time).
    async fn csrf_matches(&self, token: &str) -> Result<bool, AppError>;
    /// Signs `viewer` in under a new session id.
    async fn sign_in(&self, viewer: &Viewer) -> Result<(), AppError>;
    /// Ends the session.
    async fn sign_out(&self) -> Result<(), AppError>;
}

/// The session port of one request, found in its extensions.
#[derive(Clone)]
pub struct SessionHandle(pub Arc<dyn SessionPort>);
