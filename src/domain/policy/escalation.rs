//! Escalation: when nobody decides a waiting proposal in time, the next tier is told, and may
//! decide it.
//!
//! ```toml
//! [defaults]
//! escalate_after = "30m"
//! escalate_to = ["team-lead", "admin"]   # tier 1 after 30m, tier 2 after 60m
//!
//! [domains.payments]                      # per domain
//! escalate_after = "15m"
//! escalate_to = ["payments-oncall"]
//!
//! [tools."payments.refund"]               # per tool: beats the domain and the defaults
//! escalate_after = "10m"
//! escalate_to = ["cfo"]
//! ```
//!
//! Each entry of `escalate_to` is one tier, in order: a person (a username) or a role that may
//! decide (`reviewer`, `admin`). Tier *n* is raised `n × escalate_after` after the proposal
//! started waiting, once, audited (`proposal.escalated`); its people are notified and may
//! decide the proposal even outside the domains they are limited to. Every other rule of a
//! decision still holds (role, no self-approval, the agent's operators, quorum). Without the
//! keys nothing escalates.

use serde::Serialize;
use time::OffsetDateTime;

/// Roles an escalation tier may name (compliance officers decide nothing).
pub const DECIDING_ROLES: &[&str] = &["reviewer", "admin"];

/// Who is told, and when, if nobody decides.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Escalation {
    /// Time between tiers, in seconds (at least 1).
    pub after_secs: u64,
    /// The tiers, in order: usernames or deciding roles.
    pub to: Vec<String>,
}

impl Escalation {
    /// How many tiers are due for a proposal waiting since `since`, at `now` (at most every
    /// tier).
    pub fn tiers_due(&self, since: OffsetDateTime, now: OffsetDateTime) -> usize {
        let waited = (now - since).whole_seconds().max(0).unsigned_abs();
        let due = waited / self.after_secs.max(1);
        usize::try_from(due).map_or(self.to.len(), |d| d.min(self.to.len()))
    }

    /// Tier `n` (1-based).
    pub fn tier(&self, n: usize) -> Option<&str> {
        n.checked_sub(1)
            .and_then(|i| self.to.get(i))
            .map(String::as_str)
    }
}

/// Every role name: a tier naming one means the role, never a person who happens to have that
/// username.
const ROLE_NAMES: &[&str] = &["reviewer", "admin", "compliance"];

/// Whether an escalation tier naming `audience` reaches `username` holding `role`.
pub fn reaches(audience: &str, username: &str, role: &str) -> bool {
    if ROLE_NAMES.contains(&audience) {
        audience == role && DECIDING_ROLES.contains(&role)
    } else {
        audience == username
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tiers_come_due_one_window_apart_and_stop_at_the_last() {
        let e = Escalation {
            after_secs: 1800,
            to: vec!["lead".into(), "admin".into()],
        };
        let t0 = OffsetDateTime::UNIX_EPOCH;
        let at = |m: i64| t0 + time::Duration::minutes(m);
        assert_eq!(e.tiers_due(t0, at(29)), 0);
        assert_eq!(e.tiers_due(t0, at(30)), 1);
        assert_eq!(e.tiers_due(t0, at(59)), 1);
        assert_eq!(e.tiers_due(t0, at(60)), 2);
        assert_eq!(e.tiers_due(t0, at(6000)), 2);
        assert_eq!(
            e.tiers_due(at(10), t0),
            0,
            "a clock step back raises nothing"
        );
        assert_eq!(e.tier(1), Some("lead"));
        assert_eq!(e.tier(2), Some("admin"));
        assert_eq!(e.tier(0), None);
        assert_eq!(e.tier(3), None);
    }

    #[test]
    fn a_tier_reaches_its_person_or_the_holders_of_a_deciding_role() {
        assert!(reaches("lead", "lead", "reviewer"));
        assert!(reaches("admin", "ann", "admin"));
        assert!(!reaches("admin", "rob", "reviewer"));
        assert!(!reaches("compliance", "cora", "compliance"));
        assert!(
            !reaches("admin", "admin", "reviewer"),
            "a role's name is the role, not a person so named"
        );
    }
}
