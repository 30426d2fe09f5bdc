//! What a reviewer is shown before deciding, as rules (seed 004's approval UX: "clear,
//! unambiguous"): text made visible ([`text`]: invisible and direction-changing characters
//! escaped), which values of a command are secrets or personal data ([`disclosure`]), when
//! approving needs the target's name typed ([`confirm`]), and how an agent's earlier proposals
//! for the same tool came out ([`history`]), what a revision changed ([`diff`]), which
//! approvals a batch from the queue may take ([`batch`]), what a standing grant covers
//! ([`grant`]), when an admin may approve alone ([`break_glass`]), what a reviewer's edit
//! changes ([`edit`]), how insights count decisions ([`insight`]), and when approving needs a
//! passkey and what its challenge binds ([`step_up`]).
//!
//! Pure like the rest of the domain: the pages call these through `web`, the decision through
//! `service::decide`, so the page and the server apply the same rule.

pub mod batch;
pub mod break_glass;
pub mod confirm;
pub mod diff;
pub mod disclosure;
pub mod edit;
pub mod grant;
pub mod history;
pub mod insight;
pub mod step_up;
pub mod text;
