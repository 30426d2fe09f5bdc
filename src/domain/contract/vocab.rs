//! The shared vocabulary of the contracts: the closed value sets that the AANA event, the tool
//! proposal, the policy and the route engine all speak (routes, tool categories, the
//! authorization ladder, risk domains and levels, blast radius tiers, authorization modes).
//! Each is a [`WireEnum`](super::wire::WireEnum) whose derived order is the order of
//! strictness or consequence, so "stricter" is always `max`.
//!
//! Nothing here depends on anything else in the domain but the wire helpers.

use super::wire::wire_enum;

wire_enum! {
    /// Consequence class of the proposed tool call. The derived order is the order of
    /// consequence (`public_read < private_read < write < unknown`): a policy may raise a
    /// declared category along it, never lower it.
    pub enum ToolCategory {
        /// Public, non-sensitive read.
        PublicRead => "public_read",
        /// Identity- or account-bound read.
        PrivateRead => "private_read",
        /// Consequential write.
        Write => "write",
        /// Not classified: never executable.
        Unknown => "unknown",
    }
}

wire_enum! {
    /// The authorization ladder, weakest first; the derived order is the ladder's.
    pub enum AuthorizationState {
        /// No usable authorization context.
        None => "none",
        /// The user claimed authority; identity not verified.
        UserClaimed => "user_claimed",
        /// The user's identity/session is authenticated.
        Authenticated => "authenticated",
        /// Target object, ownership, policy or eligibility was validated.
        Validated => "validated",
        /// The user explicitly confirmed this consequential action.
        Confirmed => "confirmed",
    }
}

wire_enum! {
    /// Primary risk surface of the proposed action.
    pub enum RiskDomain {
        /// Infrastructure and operations.
        Devops => "devops",
        /// Money, accounts, payments.
        Finance => "finance",
        /// Education.
        Education => "education",
        /// Human resources and employee records.
        Hr => "hr",
        /// Legal matters.
        Legal => "legal",
        /// Pharmaceuticals.
        Pharma => "pharma",
        /// Health care and health records.
        Healthcare => "healthcare",
        /// Commerce and orders.
        Commerce => "commerce",
        /// Customer support.
        CustomerSupport => "customer_support",
        /// Security.
        Security => "security",
        /// Research.
        Research => "research",
        /// Personal productivity.
        PersonalProductivity => "personal_productivity",
        /// Public information.
        PublicInformation => "public_information",
        /// Not classified.
        Unknown => "unknown",
    }
}

wire_enum! {
    /// A route, least strict first: `accept < ask < defer < refuse`. Only `accept` executes.
    pub enum Route {
        /// Execute within the checked scope.
        Accept => "accept",
        /// Ask for missing information, authorization, confirmation or approval; then recheck.
        Ask => "ask",
        /// Route to stronger evidence or domain-owner/human review; then recheck.
        Defer => "defer",
        /// A hard blocker prevents safe execution.
        Refuse => "refuse",
    }
}

impl Route {
    /// The stricter of two routes.
    pub fn stricter(self, other: Route) -> Route {
        self.max(other)
    }
}

wire_enum! {
    /// Seed 004 risk levels, lowest first. The system may raise a declared level, never lower it.
    pub enum RiskLevel {
        /// Low.
        Low => "low",
        /// Medium.
        Medium => "medium",
        /// High.
        High => "high",
    }
}

wire_enum! {
    /// Seed 003 blast radius tiers, smallest first.
    pub enum BlastRadius {
        /// Single record, read-only or append.
        Tiny => "tiny",
        /// Single record, mutating.
        Small => "small",
        /// Multiple records or a single high-value record.
        Medium => "medium",
        /// Cross-system or irreversible at scale.
        Large => "large",
    }
}

wire_enum! {
    /// Seed 003 authorization modes.
    pub enum AuthorizationMode {
        /// Dispatch without human approval (still subject to every other rule).
        Auto => "auto",
        /// Pause for human-in-the-loop approval.
        Hitl => "hitl",
        /// Not permitted under current policy.
        Blocked => "blocked",
    }
}
