//! The contracts agents speak, and nothing else: the AANA pre-tool-call event ([`aana`]), the
//! tool proposal ([`proposal`]), the shared vocabulary both use and the rest of the domain
//! routes by ([`vocab`]), the wire helpers their fail-closed parsers are built on (`wire`),
//! and canonical JSON for request hashes ([`canonical`]).
//!
//! This wing is the bottom of the domain: it imports nothing from the policy, routing,
//! lifecycle, command or principal modules.

pub mod aana;
pub mod canonical;
pub mod proposal;
pub mod vocab;
pub(crate) mod wire;
