//! The rules of Countersign, free of IO: the contracts agents speak (seed 004 tool proposals
//! with seed 003 and 002 fields, seed 000 AANA events) and their fail-closed parsers, the
//! policy and the route engine, the lifecycle of proposals and commands, principals and roles,
//! canonical hashing. Nothing here knows about HTTP, SQL or Leptos, and nothing reads a clock.
//!
//! Routes are ordered `accept < ask < defer < refuse`; every rule, the policy and an agent's
//! own recommendation can only move a decision towards `refuse`. Only `accept` executes.

pub mod aana;
pub mod canonical;
pub mod command;
pub mod evidence;
pub mod gate;
pub mod glob;
pub mod lifecycle;
pub mod policy;
mod policy_toml;
pub mod principal;
pub mod proposal;
pub mod proposal_routing;
pub mod rules;
pub mod scan;
pub mod verdict;
mod wire;

pub use wire::{FieldError, WireEnum};

pub use aana::{Event, Route};
pub use gate::{Decision, check, check_value};
pub use policy::{Policy, PolicyError};
pub use proposal_routing::{ProposalDecision, ProposalFacts, route_proposal};
