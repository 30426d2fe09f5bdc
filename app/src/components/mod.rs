//! Pieces several pages share: charts drawn as SVG, and the table of audit events.

pub mod chart;
pub mod events;
