//! Who may call which use case: the one table every service function consults before it reads
//! or changes anything. Deny by default: a principal kind not named in a use case's row is
//! refused, and a use case without a row does not compile ([`UseCase::rule`] is exhaustive).
//!
//! The table answers the question every caller shares (may this kind of principal do this at
//! all, and is a person held to their domains for it). The rules that depend on the record
//! itself — nobody approves their own proposal or one their agent proposed, an agent reads only
//! its own proposals, an escalation reaches a person outside their domains — are applied by the
//! use case with the record in hand, from [`super::lifecycle`] and [`Reach::covers`].
//!
//! ARCHITECTURE.md shows this table ([`table_markdown`]); a test keeps the two equal.

use super::principal::{Principal, Role};

/// A kind of principal, as the table's columns name them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Who {
    /// A person with the admin role.
    Admin,
    /// A person with the reviewer role.
    Reviewer,
    /// A person with the compliance role.
    Compliance,
    /// An agent, by its API token.
    Agent,
    /// An executor, by its API token.
    Executor,
    /// The operator at the shell (`countersign` subcommands on the database).
    Operator,
    /// Countersign's own background tasks (sweeps, deliveries).
    System,
}

impl Who {
    /// Every kind, in the table's column order.
    pub const ALL: [Who; 7] = [
        Who::Admin,
        Who::Reviewer,
        Who::Compliance,
        Who::Agent,
        Who::Executor,
        Who::Operator,
        Who::System,
    ];

    /// The column's name.
    pub fn as_str(self) -> &'static str {
        match self {
            Who::Admin => "admin",
            Who::Reviewer => "reviewer",
            Who::Compliance => "compliance",
            Who::Agent => "agent",
            Who::Executor => "executor",
            Who::Operator => "operator",
            Who::System => "system",
        }
    }
}

/// One row of the table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rule {
    /// The kinds that may call it; everyone else is refused.
    pub allowed: &'static [Who],
    /// A person limited to domains sees and changes only records in them.
    pub domain_scoped: bool,
    /// What else the use case checks with the record in hand (shown in the table).
    pub also: &'static str,
}

const PEOPLE: &[Who] = &[Who::Admin, Who::Reviewer, Who::Compliance];
const DECIDERS: &[Who] = &[Who::Admin, Who::Reviewer];
const AUDITORS: &[Who] = &[Who::Admin, Who::Compliance, Who::Operator];
const ADMINS: &[Who] = &[Who::Admin, Who::Operator];

macro_rules! use_cases {
    ($( $(#[$doc:meta])* $variant:ident => $name:literal, )+) => {
        /// Every use case a principal calls, by the name the table gives it.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum UseCase {
            $( $(#[$doc])* $variant, )+
        }

        impl UseCase {
            /// Every use case, in the table's order.
            pub const ALL: &'static [UseCase] = &[$(UseCase::$variant),+];

            /// The row's name (`decide`, `runs.view`, ...).
            pub fn as_str(self) -> &'static str {
                match self {
                    $(UseCase::$variant => $name,)+
                }
            }
        }
    };
}

use_cases! {
    /// Submit a tool proposal (`POST /api/v1/proposals`).
    Submit => "proposal.submit",
    /// Ask a pre-tool-check (`POST /api/v1/pre-tool-check`, `/aana`).
    PreToolCheck => "pre_tool_check",
    /// Read (and wait on) a proposal the agent submitted.
    ReadOwnProposal => "proposal.read_own",
    /// Withdraw a proposal the agent submitted while it waits.
    Withdraw => "proposal.withdraw",
    /// Lease, heartbeat and report commands.
    Execute => "command.execute",
    /// The review queue and its counts.
    ViewQueue => "queue.view",
    /// A proposal's page: the proposal, its command, its trail and the agent's record.
    ViewProposal => "proposal.view",
    /// Approve or reject a proposal.
    Decide => "proposal.decide",
    /// Show a proposal's withheld personal data (recorded).
    RevealPersonalData => "proposal.reveal_personal_data",
    /// Erase a settled proposal's personal data (GDPR).
    Erase => "proposal.erase",
    /// The runs page: commands whose outcome is unknown and rollback tasks.
    ViewRuns => "runs.view",
    /// Settle a command whose outcome is unknown.
    ResolveCommand => "command.resolve",
    /// Approve or dismiss a rollback task.
    DecideRollback => "command.decide_rollback",
    /// Pause or resume a tool for every executor.
    SwitchTool => "tool.switch",
    /// List people, their roles, domains and addresses.
    ListUsers => "user.list",
    /// Add a person (with their domains and address, in one change).
    AddUser => "user.add",
    /// Change a person's role, domains, address, Slack id, or disable, enable, reset them.
    ChangeUser => "user.change",
    /// List, create, revoke API tokens and rotate their webhook secrets.
    ManageTokens => "token.manage",
    /// Browse the whole trail, its charts and notifications sent.
    ReadTrail => "audit.read",
    /// Export the trail (a bundle with its checkpoint).
    ExportTrail => "audit.export",
    /// Verify the chain and sign checkpoints.
    VerifyTrail => "audit.verify",
    /// Record the tools the MCP gateway's upstreams list (pin, withhold) and their state.
    PinGatewayTools => "gateway.pin",
    /// The gateway's tools and their definitions; accept a changed definition.
    ManageGateway => "gateway.manage",
    /// Approve alone, in an emergency, a proposal that needs more approvers (break-glass).
    BreakGlass => "proposal.break_glass",
    /// Approve a proposal and let the same agent's similar calls through for a while.
    MakeGrant => "grant.make",
    /// List standing grants, their scope, uses and time left.
    ViewGrants => "grant.view",
    /// Revoke a standing grant.
    RevokeGrant => "grant.revoke",
    /// Decision insights: per reviewer and per domain, over a window.
    ViewInsights => "insights.view",
    /// List, register, rename and remove one's own passkeys (the account page).
    ManagePasskeys => "passkey.manage",
    /// The policy page: the active version, its history, candidates, their backtests, diffs
    /// and shadow runs.
    ViewPolicy => "policy.view",
    /// Propose a candidate (or a return to an earlier version), backtest it, run it in shadow.
    ProposePolicy => "policy.propose",
    /// Approve or refuse another admin's proposed change: its version becomes active.
    ApprovePolicy => "policy.approve",
    /// Activate a stored version alone, at the shell (break-glass).
    ActivatePolicy => "policy.activate",
    /// Delete operational rows past their retention (notifications, webhook deliveries,
    /// alerts); never the trail.
    Prune => "retention.prune",
}

impl UseCase {
    /// Who may call it.
    pub fn rule(self) -> Rule {
        let rule = |allowed, domain_scoped, also| Rule {
            allowed,
            domain_scoped,
            also,
        };
        match self {
            UseCase::Submit => rule(&[Who::Agent], false, "`proposed_by` is the token's agent"),
            UseCase::PreToolCheck => rule(&[Who::Agent], false, ""),
            UseCase::ReadOwnProposal => rule(&[Who::Agent], false, "its own proposals only"),
            UseCase::Withdraw => rule(&[Who::Agent], false, "its own pending proposals only"),
            UseCase::Execute => rule(
                &[Who::Executor],
                false,
                "the token's tool scope and the policy's `allowed_executors`; the lease's holder",
            ),
            UseCase::ViewQueue => rule(PEOPLE, true, ""),
            UseCase::ViewProposal => rule(
                &[Who::Admin, Who::Reviewer, Who::Compliance, Who::Operator],
                true,
                "or escalated to them",
            ),
            UseCase::RevealPersonalData => rule(PEOPLE, true, "or escalated to them"),
            UseCase::Decide => rule(
                DECIDERS,
                true,
                "or escalated to them; never their own proposal, nor one their agent proposed",
            ),
            UseCase::Erase => rule(ADMINS, false, "settled proposals only"),
            UseCase::ViewRuns => rule(
                &[Who::Admin, Who::Reviewer, Who::Compliance, Who::Operator],
                true,
                "",
            ),
            UseCase::ResolveCommand | UseCase::DecideRollback => rule(DECIDERS, true, ""),
            UseCase::SwitchTool => rule(ADMINS, false, ""),
            UseCase::ListUsers | UseCase::AddUser => rule(ADMINS, false, ""),
            UseCase::ChangeUser => rule(ADMINS, false, "never the last enabled admin away"),
            UseCase::ManageTokens => rule(ADMINS, false, ""),
            UseCase::ReadTrail | UseCase::ExportTrail => rule(AUDITORS, false, ""),
            UseCase::VerifyTrail => rule(
                &[Who::Admin, Who::Compliance, Who::Operator, Who::System],
                false,
                "",
            ),
            UseCase::PinGatewayTools => rule(&[Who::System], false, ""),
            UseCase::ManageGateway => rule(ADMINS, false, "only the definition on offer"),
            UseCase::BreakGlass => rule(
                &[Who::Admin],
                true,
                "as `proposal.decide`; only past a quorum the policy lets be broken, with a written \
                 justification",
            ),
            UseCase::MakeGrant => rule(
                DECIDERS,
                true,
                "with their own final approval of the proposal; only what the policy lets be \
                 granted, within its `max_grant`",
            ),
            UseCase::ViewGrants => rule(
                &[Who::Admin, Who::Reviewer, Who::Compliance, Who::Operator],
                true,
                "",
            ),
            UseCase::RevokeGrant => rule(&[Who::Admin, Who::Reviewer, Who::Operator], true, ""),
            UseCase::ViewInsights => rule(AUDITORS, false, ""),
            UseCase::ManagePasskeys => rule(PEOPLE, false, "their own passkeys only"),
            UseCase::ViewPolicy => rule(AUDITORS, false, ""),
            UseCase::ProposePolicy => rule(ADMINS, false, "validated, then backtested"),
            UseCase::ApprovePolicy => rule(&[Who::Admin], false, "never a change they proposed"),
            UseCase::ActivatePolicy => rule(&[Who::Operator], false, "break-glass, with a reason"),
            UseCase::Prune => rule(&[Who::System], false, "rows past their retention only"),
        }
    }
}

/// Refused: this kind of principal may not call this use case.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("a {} may not {}", .who.as_str(), .use_case.as_str())]
pub struct Denied {
    /// Who asked.
    pub who: Who,
    /// What they asked for.
    pub use_case: UseCase,
}

/// What a permitted principal may reach within the use case.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reach<'a> {
    /// Every record.
    All,
    /// Records in these domains only.
    Domains(&'a [String]),
}

impl Reach<'_> {
    /// Whether a record in `domain` is within reach.
    pub fn covers(&self, domain: &str) -> bool {
        match self {
            Reach::All => true,
            Reach::Domains(ds) => ds.iter().any(|d| d == domain),
        }
    }

    /// The domains, when limited.
    pub fn domains(&self) -> Option<&[String]> {
        match self {
            Reach::All => None,
            Reach::Domains(ds) => Some(ds),
        }
    }
}

impl Principal {
    /// The table's column for this principal.
    pub fn who(&self) -> Who {
        match self {
            Principal::Person(p) => match p.role {
                Role::Admin => Who::Admin,
                Role::Reviewer => Who::Reviewer,
                Role::Compliance => Who::Compliance,
            },
            Principal::Agent(_) => Who::Agent,
            Principal::Executor(_) => Who::Executor,
            Principal::Operator => Who::Operator,
            Principal::System(_) => Who::System,
        }
    }
}

/// Whether `principal` may call `use_case`, and what it may reach there. Deny by default.
pub fn authorize(principal: &Principal, use_case: UseCase) -> Result<Reach<'_>, Denied> {
    let who = principal.who();
    let rule = use_case.rule();
    if !rule.allowed.contains(&who) {
        return Err(Denied { who, use_case });
    }
    Ok(match principal {
        Principal::Person(p) if rule.domain_scoped => {
            p.domains.as_deref().map_or(Reach::All, Reach::Domains)
        }
        _ => Reach::All,
    })
}

/// The table as ARCHITECTURE.md shows it: a row per use case, a column per kind of principal
/// (`yes`, `domain` for a person held to their domains, blank for refused), and what the use
/// case checks besides.
pub fn table_markdown() -> String {
    let mut out = String::from("| use case |");
    for who in Who::ALL {
        out.push_str(&format!(" {} |", who.as_str()));
    }
    out.push_str(" also checked |\n| --- |");
    out.push_str(&" :-: |".repeat(Who::ALL.len()));
    out.push_str(" --- |\n");
    for &uc in UseCase::ALL {
        let rule = uc.rule();
        out.push_str(&format!("| `{}` |", uc.as_str()));
        for who in Who::ALL {
            let person = matches!(who, Who::Admin | Who::Reviewer | Who::Compliance);
            let cell = match (rule.allowed.contains(&who), rule.domain_scoped && person) {
                (false, _) => "",
                (true, true) => "domain",
                (true, false) => "yes",
            };
            out.push_str(&format!(" {cell} |"));
        }
        out.push_str(&format!(" {} |\n", rule.also));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::principal::Person;

    fn person(role: Role, domains: Option<&[&str]>) -> Principal {
        Principal::Person(Person {
            username: "p".into(),
            role,
            domains: domains.map(|ds| ds.iter().map(|d| (*d).to_owned()).collect()),
        })
    }

    #[test]
    fn nobody_outside_a_row_is_let_in() {
        let agent = Principal::Agent("a".into());
        assert!(authorize(&agent, UseCase::Decide).is_err());
        assert!(authorize(&agent, UseCase::Submit).is_ok());
        let compliance = person(Role::Compliance, None);
        assert_eq!(
            authorize(&compliance, UseCase::ResolveCommand),
            Err(Denied {
                who: Who::Compliance,
                use_case: UseCase::ResolveCommand
            })
        );
        assert!(authorize(&Principal::Operator, UseCase::Decide).is_err());
        assert!(authorize(&Principal::System("sweep"), UseCase::AddUser).is_err());
    }

    #[test]
    fn a_person_limited_to_domains_reaches_only_them_where_the_row_says_so() {
        let billing = person(Role::Reviewer, Some(&["billing"]));
        let reach = authorize(&billing, UseCase::ViewRuns).expect("reviewers view runs");
        assert!(reach.covers("billing"));
        assert!(!reach.covers("sales"));
        let admin = person(Role::Admin, Some(&["billing"]));
        assert_eq!(authorize(&admin, UseCase::SwitchTool), Ok(Reach::All));
        assert_eq!(
            authorize(&person(Role::Reviewer, None), UseCase::ViewRuns),
            Ok(Reach::All)
        );
    }

    #[test]
    fn the_table_has_a_row_per_use_case_and_a_column_per_kind() {
        let table = table_markdown();
        assert_eq!(table.lines().count(), UseCase::ALL.len() + 2);
        for uc in UseCase::ALL {
            assert!(table.contains(&format!("`{}`", uc.as_str())));
        }
    }
}
