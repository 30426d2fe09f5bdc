//! The [`Payload`] trait: what each event's payload says about its row. A leaf the event
//! modules implement and `events` builds rows through.

use serde::Serialize;

/// What a payload says about its row: kind, subject, status change.
pub trait Payload: Serialize {
    /// The event kind, e.g. `proposal.approved`.
    fn kind(&self) -> &'static str;
    /// What kind of thing it happened to, and its id.
    fn subject(&self) -> (&'static str, String);
    /// Status before and after, when the event moves one.
    fn change(&self) -> (Option<String>, Option<String>) {
        (None, None)
    }
}
