//! The reviewer's queue as its page shows it: a page of rows, the filters with a count for
//! each value, and links to the next page and back to the first.

use serde::{Deserialize, Serialize};

use crate::time::Moment;

/// One row of the review queue.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct QueueItem {
    /// Proposal id.
    pub id: String,
    /// Intent summary.
    pub summary: String,
    /// Tool name and version.
    pub tool: String,
    /// Target refs, `type:id`.
    pub targets: Vec<String>,
    /// Short preview of the affected data (parameters).
    pub affected: String,
    /// Whether and how it can be rolled back.
    pub rollback: String,
    /// Risk level.
    pub risk: String,
    /// When it arrived.
    pub arrived: Moment,
    /// When it expires undecided, if ever.
    pub expires: Option<Moment>,
    /// Proposing agent.
    pub proposed_by: String,
    /// Domain.
    pub domain: String,
    /// Route and why it needs a human.
    pub route: String,
    /// `GDPR`, `HIPAA`.
    pub compliance: Vec<String>,
    /// Hidden characters in the agent's text the row shows or previews (each shown escaped as
    /// `⟦U+…⟧`, as every agent-written string of this row is).
    pub hidden: usize,
    /// Whether a batch from the queue may approve it (else it is approved on its own page;
    /// it may still be rejected in a batch).
    pub batch_approvable: bool,
}

/// One filter of the queue: its query-string name, its label, the value chosen and every
/// value on offer with how many pending proposals have it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct QueueFilterView {
    /// Query-string name (`agent`, `domain`, `risk`, `tool`, `route`, `compliance`).
    pub name: String,
    /// Label.
    pub label: String,
    /// The value chosen, if any.
    pub chosen: Option<String>,
    /// `(value, count)`, in the order shown.
    pub options: Vec<(String, i64)>,
}

/// A page of the queue.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct QueueView {
    /// The rows.
    pub items: Vec<QueueItem>,
    /// How many pending proposals match the filters.
    pub matching: i64,
    /// How many are pending in all (that the viewer may see).
    pub total: i64,
    /// The filters.
    pub filters: Vec<QueueFilterView>,
    /// The order (`oldest`, `newest`, `risk`, `expiry`).
    pub sort: String,
    /// The next page, when there is one.
    pub next: Option<String>,
    /// The first page, when this is not it.
    pub first: Option<String>,
    /// The domains the viewer is limited to, if any.
    pub limited_to: Option<Vec<String>>,
    /// The trail's head when this page was read: its live stream starts there.
    pub head: i64,
}

/// What a queue view asks for, as its query string says it (every field optional).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct QueueParams {
    /// Agent.
    pub agent: Option<String>,
    /// Domain.
    pub domain: Option<String>,
    /// Risk.
    pub risk: Option<String>,
    /// Tool.
    pub tool: Option<String>,
    /// Route.
    pub route: Option<String>,
    /// `gdpr` or `hipaa`.
    pub compliance: Option<String>,
    /// Order.
    pub sort: Option<String>,
    /// Keyset position.
    pub after: Option<String>,
}

impl QueueParams {
    /// Name/value pairs of what is set.
    pub fn pairs(&self) -> Vec<(&'static str, &str)> {
        [
            ("agent", &self.agent),
            ("domain", &self.domain),
            ("risk", &self.risk),
            ("tool", &self.tool),
            ("route", &self.route),
            ("compliance", &self.compliance),
            ("sort", &self.sort),
            ("after", &self.after),
        ]
        .into_iter()
        .filter_map(|(k, v)| v.as_deref().map(|v| (k, v)))
        .collect()
    }
}
