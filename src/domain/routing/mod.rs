//! The route engine: where an AANA event ([`gate`]) or a tool proposal ([`proposal`]) goes
//! under a policy, and why. [`rules`] holds the built-in rules both share (the authorization
//! ladder, the evidence overlays), [`evidence`] assesses evidence refs, [`scan`] finds secrets
//! and personal data in free text, and [`verdict`] is the accumulator every decision is built
//! in, with its blockers.
//!
//! The wing imports the contract and policy wings, never the lifecycle, command or principal
//! modules. Inside it, imports run `gate`/`proposal` → `rules` → `evidence` → `scan`, and
//! everything may use `verdict`.

pub mod envelope;
pub mod evidence;
pub mod gate;
pub mod proposal;
pub mod replay;
pub mod rules;
pub mod scan;
pub mod verdict;
