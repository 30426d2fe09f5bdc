//! What the policy pages need from the server (`/policy`, `/policy/changes/:id`): a port of
//! its own beside the [`Desk`](super::Desk), provided as Leptos context as a
//! [`DynPolicyDesk`]. Reading is for admins and compliance officers; proposing, approving,
//! refusing and shadow runs are for admins. A role that may not gets `Forbidden` (reads) or a
//! refusal notice (forms), and the refusal is recorded (`access.denied`).

use std::sync::Arc;

use crate::dto::{AppError, Notice, PlaygroundView, PolicyChangeView, PolicyView, Viewer};
use crate::ports::DecideOutcome;

/// What proposing a candidate (or a return to an earlier version) came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Proposed {
    /// A request was opened: its id.
    Opened(String),
    /// A rule refused it: the notice names the rule.
    Refused(Notice),
    /// Not a valid policy: every error, with its line (`line 3, column 1: tools.x: …`).
    Invalid(Vec<String>),
}

/// The policy pages' port.
#[async_trait::async_trait]
pub trait PolicyDesk: Send + Sync + 'static {
    /// The policy page: the active version, pending and recent requests, the history (each
    /// activation with its diff against the one before it).
    async fn overview(&self, viewer: &Viewer) -> Result<PolicyView, AppError>;
    /// Request `id`'s page.
    async fn change(&self, viewer: &Viewer, id: &str) -> Result<PolicyChangeView, AppError>;
    /// What the active version, and the stored `candidate` version when given, decide of
    /// `input` (JSON text: a tool proposal, or an AANA event).
    async fn playground(
        &self,
        viewer: &Viewer,
        input: &str,
        candidate: Option<&str>,
    ) -> Result<PlaygroundView, AppError>;
    /// Proposes the policy `text`, backtested over the last `since` (`7d`, `30d`, `90d`).
    async fn propose(
        &self,
        viewer: &Viewer,
        text: &str,
        reason: &str,
        since: &str,
    ) -> Result<Proposed, AppError>;
    /// Proposes returning to stored version `version`.
    async fn propose_return(
        &self,
        viewer: &Viewer,
        version: &str,
        reason: &str,
    ) -> Result<Proposed, AppError>;
    /// Approves (`approve`) or refuses (`refuse`) request `id`.
    async fn answer(
        &self,
        viewer: &Viewer,
        id: &str,
        answer: &str,
        reason: Option<&str>,
    ) -> Result<DecideOutcome, AppError>;
    /// Runs request `id`'s version in shadow for `duration` (`1h`, `24h`, `7d`), or stops
    /// its run (`None`).
    async fn shadow(
        &self,
        viewer: &Viewer,
        id: &str,
        duration: Option<&str>,
    ) -> Result<DecideOutcome, AppError>;
}

/// The policy desk, shared.
pub type DynPolicyDesk = Arc<dyn PolicyDesk>;
