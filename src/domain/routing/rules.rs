//! The built-in rules of the route engine, shared by the AANA gate ([`super::gate`]) and the
//! proposal router ([`super::proposal`]). A policy can only add strictness to them.
//!
//! ## The authorization ladder (seed 000 text; conformance cases where the text is silent)
//!
//! | `tool_category` | `none`  | `user_claimed` | `authenticated` | `validated` | `confirmed` |
//! |-----------------|---------|----------------|-----------------|-------------|-------------|
//! | `public_read`   | accept  | accept         | accept          | accept      | accept      |
//! | `private_read`  | defer   | ask            | accept          | accept      | accept      |
//! | `write`         | ask     | ask            | ask             | ask         | accept      |
//! | `write`, high risk | defer | defer        | defer           | ask         | accept      |
//! | `unknown`       | defer (refuse when the tool name looks destructive), at every state |
//!
//! - `private_read` below `authenticated`: `none` has no authorization context at all, so it
//!   defers (seed example "Private Read Missing Auth: Defer"); a `user_claimed` identity can be
//!   authenticated by asking (conformance case `private_read_ask_user_claimed` expects `ask`).
//! - `write` executes only at `confirmed` ("Consequential writes should reach confirmed before
//!   execution"); `validated` asks for the confirmation; below `validated` it asks for
//!   validation and confirmation (seed example "Write Missing Confirmation: Ask").
//! - A **high-risk** write below `validated` defers to domain-owner review instead of asking
//!   (seed: "defer: needs ... domain-owner review"; matches the seed SDK example "write action
//!   deferred", a finance write at `authenticated`). High risk is: a [`HIGH_RISK_DOMAINS`]
//!   domain, a policy risk floor of `high`, or a write whose name looks destructive.
//! - `unknown` is never executable ("Treat unknown as non-executable until classified"): it
//!   defers for classification, and refuses when the name looks destructive (seed example
//!   "Unknown Destructive Tool: Refuse").
//!
//! ## Evidence overlays (after the ladder)
//!
//! - A leak (secret, personal data, or `sensitive` content) in any ref: **refuse**.
//! - A ref that contradicts something: **defer**.
//! - Stale evidence, or no evidence at all, for a `private_read` or `write` (rules that depend
//!   on authorization evidence): **defer**. For `public_read` they are noted only.
//! - Lowering the authorization state ([`super::evidence`]) happens before the ladder.

use super::evidence::{EvidenceAssessment, EvidenceIssueCode};
use super::verdict::{BlockerCode, Verdict};
use crate::domain::contract::vocab::{AuthorizationState, RiskDomain, Route, ToolCategory};

/// Risk domains whose consequential actions are high-risk. Includes `unknown`: an action whose
/// risk surface is unknown is not treated as low-risk.
pub const HIGH_RISK_DOMAINS: &[RiskDomain] = &[
    RiskDomain::Finance,
    RiskDomain::Healthcare,
    RiskDomain::Pharma,
    RiskDomain::Legal,
    RiskDomain::Security,
    RiskDomain::Hr,
    RiskDomain::Devops,
    RiskDomain::Unknown,
];

/// Verbs that make a tool name look destructive (matched as whole words of the name, split at
/// `_ . - / :`, spaces and camelCase boundaries, case-insensitively).
pub const DESTRUCTIVE_VERBS: &[&str] = &[
    "delete",
    "del",
    "destroy",
    "drop",
    "truncate",
    "wipe",
    "purge",
    "erase",
    "remove",
    "rm",
    "rmdir",
    "terminate",
    "kill",
    "shutdown",
    "revoke",
    "overwrite",
    "deprovision",
    "uninstall",
    "shred",
    "nuke",
];

/// Whether `domain` is a high-risk domain.
pub fn is_high_risk_domain(domain: RiskDomain) -> bool {
    HIGH_RISK_DOMAINS.contains(&domain)
}

/// Whether a tool name contains a destructive verb as a whole word (`delete_database`,
/// `db.dropTable`, `Purge-Cache`), without allocating.
pub fn looks_destructive(tool_name: &str) -> bool {
    let b = tool_name.as_bytes();
    let mut start = 0;
    for i in 0..=b.len() {
        let boundary = i == b.len()
            || !b[i].is_ascii_alphanumeric()
            || (i > start && b[i].is_ascii_uppercase() && b[i - 1].is_ascii_lowercase());
        if boundary {
            let word = &b[start..i];
            if !word.is_empty()
                && DESTRUCTIVE_VERBS
                    .iter()
                    .any(|v| v.as_bytes().eq_ignore_ascii_case(word))
            {
                return true;
            }
            start = if i < b.len() && b[i].is_ascii_alphanumeric() {
                i
            } else {
                i + 1
            };
        }
    }
    false
}

/// The authorization state a category needs before it may execute; `None` for `unknown`,
/// which never executes.
pub fn required_authorization(category: ToolCategory) -> Option<AuthorizationState> {
    match category {
        ToolCategory::PublicRead => Some(AuthorizationState::None),
        ToolCategory::PrivateRead => Some(AuthorizationState::Authenticated),
        ToolCategory::Write => Some(AuthorizationState::Confirmed),
        ToolCategory::Unknown => None,
    }
}

/// The rule that accepts a category when nothing blocks it.
pub(crate) fn accept_rule(category: ToolCategory) -> &'static str {
    match category {
        ToolCategory::PublicRead => "builtin:public_read",
        ToolCategory::PrivateRead => "builtin:private_read_authenticated",
        ToolCategory::Write => "builtin:write_confirmed",
        ToolCategory::Unknown => "builtin:unknown_not_executable",
    }
}

/// How much risk a write carries on the ladder.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum WriteRisk {
    /// An ordinary write: below `confirmed` it asks.
    Ordinary,
    /// A high-risk write (module docs): below `validated` it defers to domain-owner review.
    High,
}

/// What the tool's name says about it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ToolName {
    /// Nothing notable.
    Ordinary,
    /// The name contains a destructive verb ([`looks_destructive`]).
    Destructive,
}

impl ToolName {
    /// Classifies `tool_name`.
    pub(crate) fn of(tool_name: &str) -> ToolName {
        if looks_destructive(tool_name) {
            ToolName::Destructive
        } else {
            ToolName::Ordinary
        }
    }

    /// Whether the name looks destructive.
    pub(crate) fn is_destructive(self) -> bool {
        self == ToolName::Destructive
    }
}

/// One action's place on the authorization ladder (module docs).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Ladder {
    /// The effective tool category.
    pub(crate) category: ToolCategory,
    /// The effective authorization state (after evidence lowering).
    pub(crate) authorization: AuthorizationState,
    /// Whether a write is high-risk.
    pub(crate) risk: WriteRisk,
    /// Whether the tool's name looks destructive.
    pub(crate) name: ToolName,
    /// The strictest route the authorization rows (`private_read`, `write`) may produce: the
    /// proposal router caps them at `ask` when a proposal declares no authorization state (the
    /// reviewer's approval is its authorization). Unknown tools are never capped.
    pub(crate) authorization_cap: Route,
}

const AUTHORIZATION_FIELD: Option<&str> = Some("authorization_state");

impl Ladder {
    /// Applies the ladder to `v`.
    pub(crate) fn apply(&self, v: &mut Verdict) {
        match self.category {
            ToolCategory::PublicRead => {}
            ToolCategory::PrivateRead => self.private_read(v),
            ToolCategory::Write => self.write(v),
            ToolCategory::Unknown => self.unknown(v),
        }
    }

    fn cap(&self, route: Route) -> Route {
        route.min(self.authorization_cap)
    }

    fn private_read(&self, v: &mut Verdict) {
        match self.authorization {
            AuthorizationState::None => v.block(
                self.cap(Route::Defer),
                "builtin:private_read_requires_authenticated",
                BlockerCode::AuthorizationBelowRequired,
                "private read with no authorization context: authenticate the user and \
                 retrieve evidence of it, then recheck",
                AUTHORIZATION_FIELD,
            ),
            AuthorizationState::UserClaimed => v.block(
                self.cap(Route::Ask),
                "builtin:private_read_requires_authenticated",
                BlockerCode::AuthorizationBelowRequired,
                "private read needs `authenticated`; the identity is only claimed: ask the \
                 user to authenticate, then recheck",
                AUTHORIZATION_FIELD,
            ),
            _ => {}
        }
    }

    fn write(&self, v: &mut Verdict) {
        let authorization = self.authorization;
        match authorization {
            AuthorizationState::Confirmed => {}
            AuthorizationState::Validated => v.block(
                self.cap(Route::Ask),
                "builtin:write_requires_confirmed",
                BlockerCode::ConfirmationRequired,
                "write is validated but not confirmed: ask the user to explicitly confirm \
                 this action, then recheck",
                AUTHORIZATION_FIELD,
            ),
            _ if self.risk == WriteRisk::High => v.block(
                self.cap(Route::Defer),
                "builtin:high_risk_write_requires_validation",
                BlockerCode::AuthorizationBelowRequired,
                format!(
                    "high-risk write at `{authorization}`: validate the target, ownership \
                     and eligibility (domain-owner review), then confirm"
                ),
                AUTHORIZATION_FIELD,
            ),
            _ => v.block(
                self.cap(Route::Ask),
                "builtin:write_requires_confirmed",
                BlockerCode::AuthorizationBelowRequired,
                format!(
                    "write at `{authorization}` needs validation and explicit confirmation: \
                     ask the user, then recheck"
                ),
                AUTHORIZATION_FIELD,
            ),
        }
    }

    fn unknown(&self, v: &mut Verdict) {
        if self.name.is_destructive() {
            v.block(
                Route::Refuse,
                "builtin:unknown_destructive_tool",
                BlockerCode::UnknownDestructiveTool,
                "unclassified tool whose name looks destructive: classify it in the policy \
                 before it can be proposed",
                Some("tool_category"),
            );
        } else {
            v.block(
                Route::Defer,
                "builtin:unknown_not_executable",
                BlockerCode::UnknownToolCategory,
                "tool category is unknown: classify the tool (public_read, private_read or \
                 write) or route it to review",
                Some("tool_category"),
            );
        }
    }
}

/// How the evidence overlays treat stale and missing evidence.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Overlays {
    /// Stale evidence defers (otherwise it is only noted).
    pub(crate) stale_blocks: bool,
    /// An empty evidence list defers.
    pub(crate) requires_evidence: bool,
}

/// Applies the evidence overlays (module docs) to `v`.
pub(crate) fn apply_evidence_overlays(
    v: &mut Verdict,
    evidence: &EvidenceAssessment,
    overlays: Overlays,
) {
    let Overlays {
        stale_blocks,
        requires_evidence,
    } = overlays;
    let mut stale_noted = false;
    for issue in &evidence.integrity.issues {
        let field = Some(issue.field.as_str());
        let message = || format!("{}: {}", issue.field, issue.message);
        match issue.code {
            EvidenceIssueCode::LeaksSecret => v.block(
                Route::Refuse,
                "builtin:evidence_leaks_secret",
                BlockerCode::EvidenceLeaksSecret,
                message(),
                field,
            ),
            EvidenceIssueCode::LeaksPersonalData => v.block(
                Route::Refuse,
                "builtin:evidence_leaks_personal_data",
                BlockerCode::EvidenceLeaksPersonalData,
                message(),
                field,
            ),
            EvidenceIssueCode::SensitiveContent => v.block(
                Route::Refuse,
                "builtin:evidence_sensitive_content",
                BlockerCode::EvidenceSensitiveContent,
                message(),
                field,
            ),
            EvidenceIssueCode::Contradicts => v.block(
                Route::Defer,
                "builtin:evidence_contradictory",
                BlockerCode::EvidenceContradictory,
                message(),
                field,
            ),
            EvidenceIssueCode::Stale if stale_blocks => v.block(
                Route::Defer,
                "builtin:evidence_stale",
                BlockerCode::EvidenceStale,
                message(),
                field,
            ),
            EvidenceIssueCode::Stale if !stale_noted => {
                stale_noted = true;
                v.note("stale evidence noted; this route does not depend on it");
            }
            _ => {}
        }
    }
    if requires_evidence && evidence.integrity.total == 0 {
        v.block(
            Route::Defer,
            "builtin:evidence_missing",
            BlockerCode::EvidenceMissing,
            "this action needs evidence of its authorization; none was given",
            Some("evidence_refs"),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn destructive_names_are_whole_words() {
        for name in [
            "delete_database",
            "db.dropTable",
            "Purge-Cache",
            "rm",
            "users/remove",
            "DeleteUser",
            "kill:process",
        ] {
            assert!(looks_destructive(name), "{name}");
        }
        for name in [
            "run_vendor_plugin",
            "get_deleted_items_count",
            "dropdown.render",
            "format_report",
            "reset_password",
            "search_docs",
            "",
        ] {
            assert!(!looks_destructive(name), "{name}");
        }
    }

    #[test]
    fn high_risk_domains() {
        assert!(is_high_risk_domain(RiskDomain::Finance));
        assert!(is_high_risk_domain(RiskDomain::Unknown));
        assert!(!is_high_risk_domain(RiskDomain::CustomerSupport));
        assert!(!is_high_risk_domain(RiskDomain::PublicInformation));
    }
}
