//! Pieces several pages share: charts drawn as SVG, the table of audit events, and
//! agent-written text with its hidden characters marked.

pub mod chart;
pub mod events;
pub mod keys;
pub mod live;
pub mod visible;
