//! Break-glass: an admin approves alone, in an emergency, a proposal the policy wants more
//! than one approver for. It is never quiet: a written justification of at least
//! [`MIN_JUSTIFICATION`] characters, `proposal.break_glass` in the trail, every admin and the
//! compliance role told on every channel, a red mark on the proposal and trail pages, and a
//! counter in `/metrics`. The policy may forbid it per tool (`break_glass = false`). Every other
//! rule of a decision still holds: the role, the domain, never one's own proposal nor one's own
//! agent's, and the typed name where approving needs it.

use thiserror::Error;

/// The shortest justification, in characters (after trimming).
pub const MIN_JUSTIFICATION: usize = 20;
/// The longest justification, in characters.
pub const MAX_JUSTIFICATION: usize = 2_000;

/// Why break-glass is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
pub enum BreakGlassError {
    /// One approval decides it: approve it the ordinary way.
    #[error("it needs only one approval: approve it the ordinary way")]
    NotNeeded,
    /// The policy says `break_glass = false` for the tool.
    #[error("the policy forbids break-glass for this tool")]
    PolicyForbids,
    /// The justification is shorter than [`MIN_JUSTIFICATION`] or longer than
    /// [`MAX_JUSTIFICATION`] characters.
    #[error("write why this cannot wait, in 20 to 2000 characters")]
    Justification,
}

/// Whether an admin may break the glass on a proposal needing `required_approvals`, for a tool
/// whose policy `allows` it, saying `justification`.
pub fn check(
    required_approvals: u8,
    allows: bool,
    justification: &str,
) -> Result<(), BreakGlassError> {
    if required_approvals <= 1 {
        return Err(BreakGlassError::NotNeeded);
    }
    if !allows {
        return Err(BreakGlassError::PolicyForbids);
    }
    let len = justification.trim().chars().count();
    if !(MIN_JUSTIFICATION..=MAX_JUSTIFICATION).contains(&len) {
        return Err(BreakGlassError::Justification);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const WHY: &str = "the outage costs 2k a minute";

    #[test]
    fn only_a_quorum_the_policy_allows_to_break_with_a_written_reason() {
        assert_eq!(check(2, true, WHY), Ok(()));
        assert_eq!(check(1, true, WHY), Err(BreakGlassError::NotNeeded));
        assert_eq!(check(3, false, WHY), Err(BreakGlassError::PolicyForbids));
        for short in ["", "urgent", "   nineteen chars!!   ", &"x".repeat(2_001)] {
            assert_eq!(
                check(2, true, short),
                Err(BreakGlassError::Justification),
                "{short}"
            );
        }
        assert_eq!(check(2, true, &"x".repeat(20)), Ok(()));
    }
}
