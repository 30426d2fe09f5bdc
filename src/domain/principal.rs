//! Who acts in Countersign: people with a role, and machine principals (agents and executors)
//! that authenticate with API tokens.

use super::contract::wire::wire_enum;

wire_enum! {
    /// A person's role. Deny by default: each capability below names the roles it allows.
    pub enum Role { Admin => "admin", Reviewer => "reviewer", Compliance => "compliance" }
}

impl Role {
    /// May read the review queue and proposal details.
    pub fn can_view_proposals(self) -> bool {
        matches!(self, Role::Admin | Role::Reviewer | Role::Compliance)
    }

    /// May approve or reject proposals. Compliance officers read everything and decide nothing.
    pub fn can_decide(self) -> bool {
        matches!(self, Role::Admin | Role::Reviewer)
    }

    /// May read the whole audit trail, its charts and exports (`/audit`). Reviewers see only
    /// the trails of the proposals they open.
    pub fn can_audit(self) -> bool {
        matches!(self, Role::Admin | Role::Compliance)
    }
}

/// A signed-in person acting: who they are, their role, and the domains they are limited to
/// (`None`: every domain), as their account stood when the request was checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Person {
    /// Username.
    pub username: String,
    /// Role.
    pub role: Role,
    /// The domains they review (`None`: every domain).
    pub domains: Option<Vec<String>>,
}

/// Whoever calls a use case. Every service function that reads or changes something takes
/// one and decides, itself, whether it may ([`super::access::authorize`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Principal {
    /// A person, signed in (a page, a server function, Slack).
    Person(Person),
    /// An agent, by its API token's name.
    Agent(String),
    /// An executor, by its API token's name.
    Executor(String),
    /// The operator at the shell: whoever can run `countersign` against the database.
    Operator,
    /// Countersign's own background work (`sweep`, `expiry`, `webhooks`, ...).
    System(&'static str),
}

impl std::fmt::Display for Principal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl Principal {
    /// A person with `role`, limited to no domain.
    pub fn person(username: &str, role: Role) -> Self {
        Self::person_in(username, role, None)
    }

    /// A person with `role`, limited to `domains` (`None`: every domain).
    pub fn person_in(username: &str, role: Role, domains: Option<Vec<String>>) -> Self {
        Principal::Person(Person {
            username: username.to_owned(),
            role,
            domains,
        })
    }

    /// The person acting, if a person is.
    pub fn as_person(&self) -> Option<&Person> {
        match self {
            Principal::Person(p) => Some(p),
            _ => None,
        }
    }

    /// The name the trail records: the username, the token's name, `cli` for the operator, or
    /// the background task's name.
    pub fn name(&self) -> &str {
        match self {
            Principal::Person(p) => &p.username,
            Principal::Agent(n) | Principal::Executor(n) => n,
            Principal::Operator => "cli",
            Principal::System(n) => n,
        }
    }
}

wire_enum! {
    /// The kind of machine principal an API token belongs to.
    pub enum TokenKind { Agent => "agent", Executor => "executor" }
}

wire_enum! {
    /// Who did something, as recorded in the audit trail.
    pub enum ActorKind { User => "user", Agent => "agent", Executor => "executor", System => "system" }
}

/// Checks a user, agent or executor name: 1-64 characters, lowercase letters, digits, `-`,
/// `_` and `.`, starting with a letter or digit. Names share one namespace, so a person can
/// never approve what an agent of the same name proposed.
pub fn parse_name(name: &str) -> Result<String, String> {
    if super::contract::proposal::is_slug(name, 64) {
        Ok(name.to_owned())
    } else {
        Err(format!(
            "`{name}` is not a valid name: use 1-64 lowercase letters, digits, `-`, `_` or `.`, starting with a letter or digit"
        ))
    }
}

/// What an account change does to the set of enabled admins.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AdminChange {
    /// The account is disabled.
    Disable,
    /// The account gets this role.
    Role(Role),
}

/// Refused: the change would leave no enabled admin, and nobody could administer again
/// (short of the shell).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("this is the last enabled admin: make another admin first")]
pub struct LastAdmin;

/// Checks that an account change keeps at least one enabled admin. `target` is the account's
/// current role (`None`: not granted yet) and whether it is enabled; `enabled_admins` counts
/// every enabled admin, the target included.
pub fn keeps_an_admin(
    target: Option<Role>,
    target_enabled: bool,
    enabled_admins: i64,
    change: AdminChange,
) -> Result<(), LastAdmin> {
    let removes_an_admin = target == Some(Role::Admin)
        && target_enabled
        && match change {
            AdminChange::Disable => true,
            AdminChange::Role(to) => to != Role::Admin,
        };
    if removes_an_admin && enabled_admins <= 1 {
        Err(LastAdmin)
    } else {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_reviewers_and_admins_decide() {
        assert!(Role::Reviewer.can_decide());
        assert!(Role::Admin.can_decide());
        assert!(!Role::Compliance.can_decide());
        assert!(Role::Compliance.can_view_proposals());
    }

    #[test]
    fn only_compliance_officers_and_admins_audit() {
        assert!(Role::Compliance.can_audit());
        assert!(Role::Admin.can_audit());
        assert!(!Role::Reviewer.can_audit());
    }

    #[test]
    fn names_are_lowercase_slugs() {
        assert!(parse_name("reviewer-1").is_ok());
        assert!(parse_name("Alice").is_err());
        assert!(parse_name("").is_err());
        assert!(parse_name("-x").is_err());
        assert!(parse_name(&"a".repeat(65)).is_err());
    }

    #[test]
    fn the_last_enabled_admin_stays() {
        let demote = AdminChange::Role(Role::Reviewer);
        assert_eq!(
            keeps_an_admin(Some(Role::Admin), true, 1, AdminChange::Disable),
            Err(LastAdmin)
        );
        assert_eq!(
            keeps_an_admin(Some(Role::Admin), true, 1, demote),
            Err(LastAdmin)
        );
        assert!(keeps_an_admin(Some(Role::Admin), true, 2, AdminChange::Disable).is_ok());
        assert!(keeps_an_admin(Some(Role::Admin), true, 1, AdminChange::Role(Role::Admin)).is_ok());
        assert!(keeps_an_admin(Some(Role::Reviewer), true, 1, AdminChange::Disable).is_ok());
        assert!(keeps_an_admin(Some(Role::Admin), false, 1, AdminChange::Disable).is_ok());
        assert!(keeps_an_admin(None, true, 1, AdminChange::Disable).is_ok());
    }
}
