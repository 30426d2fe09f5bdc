//! Typing the target's name to approve, as GitHub asks before deleting a repository: approving
//! an action whose effective risk is `high`, or whose blast radius is `medium`, `large` or not
//! stated (unknown fails closed), needs the reviewer to type the name of what it acts on. The
//! page asks for it and the server checks it ([`check`], called by `service::decide`), so a
//! forged form cannot skip it.
//!
//! The name is the first target ref's id, or the tool's name when the proposal names no target
//! — what the reviewer must have read. It is shown and compared in its visible form
//! ([`super::text::visible`]): a hidden character must be typed as the escape the page shows,
//! so nobody confirms a name they could not see. The comparison is exact (case included) after
//! trimming the whitespace around what was typed.

use super::text::visible;
use crate::domain::contract::proposal::TargetRef;
use crate::domain::contract::vocab::{BlastRadius, RiskLevel};

/// Longest typed confirmation looked at, in characters.
pub const MAX_TYPED: usize = 1_000;

/// Whether approving needs the target's name typed.
pub fn required(effective_risk: RiskLevel, blast_radius: Option<BlastRadius>) -> bool {
    effective_risk == RiskLevel::High
        || !matches!(blast_radius, Some(BlastRadius::Tiny | BlastRadius::Small))
}

/// The name to type: the first target's id, else the tool's name, in visible form.
pub fn target_name(target_refs: &[TargetRef], tool: &str) -> String {
    let name = target_refs.first().map_or(tool, |t| t.id.as_str());
    visible(name).text
}

/// The name to type before approving, when one is needed.
pub fn expected(
    effective_risk: RiskLevel,
    blast_radius: Option<BlastRadius>,
    target_refs: &[TargetRef],
    tool: &str,
) -> Option<String> {
    required(effective_risk, blast_radius).then(|| target_name(target_refs, tool))
}

/// Why a typed confirmation does not do.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfirmationError {
    /// Nothing was typed.
    #[error("type `{expected}` to approve this action")]
    Missing {
        /// The name to type.
        expected: String,
    },
    /// Something else was typed.
    #[error(
        "what you typed is not `{expected}`; type the target's name exactly as shown to approve"
    )]
    Mismatch {
        /// The name to type.
        expected: String,
    },
}

/// Checks `typed` against the `expected` name (none expected: anything goes).
pub fn check(expected: Option<&str>, typed: Option<&str>) -> Result<(), ConfirmationError> {
    let Some(expected) = expected else {
        return Ok(());
    };
    let typed = typed.map(str::trim).filter(|t| !t.is_empty());
    match typed {
        None => Err(ConfirmationError::Missing {
            expected: expected.to_owned(),
        }),
        Some(t) if t.chars().count() <= MAX_TYPED && t == expected => Ok(()),
        Some(_) => Err(ConfirmationError::Mismatch {
            expected: expected.to_owned(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target(id: &str) -> TargetRef {
        TargetRef {
            kind: "db".into(),
            id: id.into(),
        }
    }

    #[test]
    fn high_risk_and_wide_or_unknown_blast_radius_ask_for_the_name() {
        use BlastRadius::*;
        assert!(required(RiskLevel::High, Some(Tiny)));
        assert!(required(RiskLevel::Low, Some(Medium)));
        assert!(required(RiskLevel::Low, Some(Large)));
        assert!(
            required(RiskLevel::Medium, None),
            "unknown blast radius fails closed"
        );
        assert!(!required(RiskLevel::Medium, Some(Small)));
        assert!(!required(RiskLevel::Low, Some(Tiny)));
    }

    #[test]
    fn the_name_is_the_first_target_or_else_the_tool() {
        assert_eq!(
            target_name(&[target("prod-db"), target("other")], "db.drop"),
            "prod-db"
        );
        assert_eq!(target_name(&[], "db.drop"), "db.drop");
        assert_eq!(
            target_name(&[target("prod\u{200B}db")], "t"),
            "prod⟦U+200B⟧db"
        );
    }

    #[test]
    fn only_the_exact_name_confirms() {
        let want = Some("prod-db");
        assert_eq!(check(want, Some("prod-db")), Ok(()));
        assert_eq!(check(want, Some("  prod-db\n")), Ok(()));
        assert!(matches!(
            check(want, Some("Prod-db")),
            Err(ConfirmationError::Mismatch { .. })
        ));
        assert!(matches!(
            check(want, Some("prod-d")),
            Err(ConfirmationError::Mismatch { .. })
        ));
        assert!(matches!(
            check(want, None),
            Err(ConfirmationError::Missing { .. })
        ));
        assert!(matches!(
            check(want, Some("  ")),
            Err(ConfirmationError::Missing { .. })
        ));
        assert_eq!(check(None, None), Ok(()));
        assert_eq!(check(None, Some("anything")), Ok(()));
    }

    #[test]
    fn a_hidden_character_is_typed_as_its_escape() {
        let want = expected(RiskLevel::High, None, &[target("a\u{202E}b")], "t");
        assert_eq!(check(want.as_deref(), Some("a⟦U+202E⟧b")), Ok(()));
        assert!(check(want.as_deref(), Some("a\u{202E}b")).is_err());
        assert!(check(want.as_deref(), Some("ab")).is_err());
    }
}
