//! Deciding several proposals at once, from the queue: one verdict and one reason for each of
//! them, each still its own decision under every rule. A batch approves only what needs
//! nothing more than a click on its own page either: an approval that needs the target's name
//! typed, a passkey, or more than one approver, is taken on the proposal's page (it may be rejected in a
//! batch).

use thiserror::Error;

use super::confirm;
use crate::domain::contract::vocab::{BlastRadius, RiskLevel};

/// The most proposals one batch decides.
pub const MAX_BATCH: usize = 100;

/// Why an approval cannot be taken in a batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
pub enum NotBatchable {
    /// Approving needs the target's name typed ([`confirm::required`]).
    #[error("approving it needs the target's name typed on its own page")]
    NeedsConfirmation,
    /// The policy wants more than one approver: each looks at it on its own page.
    #[error("it needs more than one approver: approve it on its own page")]
    NeedsQuorum,
    /// The policy wants a passkey for each approval ([`super::step_up`]).
    #[error("approving it needs your passkey: approve it on its own page")]
    NeedsPasskey,
}

/// Whether a proposal with this effective risk, blast radius and number of required approvals
/// may be approved in a batch; `step_up`: the policy wants a passkey to approve it.
pub fn approvable(
    effective_risk: RiskLevel,
    blast_radius: Option<BlastRadius>,
    required_approvals: u8,
    step_up: bool,
) -> Result<(), NotBatchable> {
    if step_up {
        return Err(NotBatchable::NeedsPasskey);
    }
    if confirm::required(effective_risk, blast_radius) {
        return Err(NotBatchable::NeedsConfirmation);
    }
    if required_approvals > 1 {
        return Err(NotBatchable::NeedsQuorum);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_one_click_approval_is_batched() {
        let small = Some(BlastRadius::Small);
        assert_eq!(approvable(RiskLevel::Medium, small, 1, false), Ok(()));
        assert_eq!(
            approvable(RiskLevel::High, small, 1, false),
            Err(NotBatchable::NeedsConfirmation)
        );
        assert_eq!(
            approvable(RiskLevel::Low, Some(BlastRadius::Large), 1, false),
            Err(NotBatchable::NeedsConfirmation)
        );
        assert_eq!(
            approvable(RiskLevel::Low, None, 1, false),
            Err(NotBatchable::NeedsConfirmation)
        );
        assert_eq!(
            approvable(RiskLevel::Low, Some(BlastRadius::Tiny), 2, false),
            Err(NotBatchable::NeedsQuorum)
        );
        assert_eq!(
            approvable(RiskLevel::Medium, small, 1, true),
            Err(NotBatchable::NeedsPasskey)
        );
    }
}
