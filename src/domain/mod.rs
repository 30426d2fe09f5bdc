//! The rules of Countersign, free of IO: the contracts agents speak (seed 004 tool proposals
//! with seed 003 and 002 fields, seed 000 AANA events) and their fail-closed parsers, the
//! policy and the route engine, the lifecycle of proposals and commands, principals and roles,
//! canonical hashing. Nothing here knows about HTTP, SQL or Leptos, and nothing reads a clock.
//!
//! Routes are ordered `accept < ask < defer < refuse`; every rule, the policy and an agent's
//! own recommendation can only move a decision towards `refuse`. Only `accept` executes.
//!
//! ## Wings, and which way imports run
//!
//! ```text
//! contract  →  policy  →  routing
//!     ↖__________↖___________↖__ lifecycle, command, principal
//! ```
//!
//! - [`contract`]: the AANA event, the tool proposal, the shared vocabulary (routes, tool
//!   categories, the authorization ladder, risk and blast radius), wire helpers, canonical
//!   JSON. Imports nothing else from the domain.
//! - [`policy`]: the operator's policy, its TOML loader and tool-name globs. Imports only
//!   `contract`.
//! - [`routing`]: the AANA gate, the proposal router and the rules, evidence assessment and
//!   leak scanning they share. Imports `contract` and `policy`.
//! - [`lifecycle`], [`command`], [`principal`], [`erasure`], [`queue`] sit beside the wings: a
//!   proposal's life after routing, the executor queue, who acts, and what a reviewer's queue
//!   shows. They may import any wing; no wing imports
//!   them.
//! - [`policy_change`]: a policy change as a gated action: requests to activate a version,
//!   the backtest that replays recorded decisions under a candidate, the diff of two versions.
//!   Imports `contract`, `policy` and `routing`.
//! - [`access`]: who may call which use case (the table ARCHITECTURE.md shows). Imports
//!   `principal`.
//! - [`retention`]: how long operational rows are kept, and the batches they are pruned in.
//!   Imports `policy`'s duration syntax.
//! - [`sign_in`]: throttling failed sign-ins and how long sessions last. Imports nothing.
//! - [`notify`]: what reviewers' notifications say on each channel, and digests. Imports
//!   `review`'s text rules and `routing`'s scanners.
//! - [`sso`]: single sign-on: what the identity provider's role claim grants, the username of
//!   an account made at its first sign-in. Imports `principal` and `queue`.
//! - [`slack`]: deciding from Slack: request signatures, button presses, what chat may decide.
//!   Imports nothing.
//! - [`webhook`]: agents' callbacks: allowed targets, the body, its signature, retries.
//!   Imports nothing.
//! - [`review`]: what a reviewer is shown before deciding (hidden characters made visible,
//!   secrets and personal data withheld, the typed-name confirmation, the agent's record).
//!   Imports `contract`, `routing`'s scanners and `lifecycle`.
//! - [`record`]: the records use cases answer with (a proposal, its command, a token's
//!   principal), which storage builds from its rows. Imports `contract`, `routing`,
//!   `lifecycle`, `command` and `principal`.

pub mod access;
pub mod command;
pub mod contract;
pub mod erasure;
pub mod gateway;
pub mod lifecycle;
pub mod notify;
pub mod policy;
pub mod policy_change;
pub mod principal;
pub mod queue;
pub mod record;
pub mod retention;
pub mod review;
pub mod routing;
pub mod sign_in;
pub mod slack;
pub mod sso;
pub mod webhook;

pub use contract::aana::Event;
pub use contract::vocab::Route;
pub use contract::wire::{FieldError, WireEnum};
pub use policy::model::{Policy, PolicyError};
pub use routing::gate::{Decision, check, check_value};
pub use routing::proposal::{ProposalDecision, ProposalFacts, route_proposal};
