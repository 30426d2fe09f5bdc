//! What a reader of the trail selects ([`Selection`]: kind, actor, facets, time range) and
//! what a page or an export of it reads back ([`TrailEvent`]): plain data that storage fills
//! from its rows and the compliance pages show.

use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

use crate::audit::chain::ChainedEvent;

/// What a page or an export selects: every filter is optional; all given must hold.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Selection {
    /// Events at or after this time.
    pub from: Option<OffsetDateTime>,
    /// Events before this time.
    pub until: Option<OffsetDateTime>,
    /// The event kind, e.g. `proposal.approved`.
    pub kind: Option<String>,
    /// The actor's name.
    pub actor: Option<String>,
    /// The agent facet.
    pub agent: Option<String>,
    /// The tool facet.
    pub tool: Option<String>,
    /// The domain facet.
    pub domain: Option<String>,
    /// The decision facet (`accept`, …, `approved`, `rejected`, `expired`).
    pub decision: Option<String>,
    /// The risk facet.
    pub risk: Option<String>,
}

impl Selection {
    /// Whether `at` lies in the time range.
    pub fn covers_time(&self, at: OffsetDateTime) -> bool {
        self.from.is_none_or(|f| at >= f) && self.until.is_none_or(|u| at < u)
    }

    /// The filters as given, for a manifest or an audit record.
    pub fn as_pairs(&self) -> Vec<(&'static str, String)> {
        let time = |t: &Option<OffsetDateTime>| t.and_then(|t| t.format(&Rfc3339).ok());
        [
            ("from", time(&self.from)),
            ("until", time(&self.until)),
            ("kind", self.kind.clone()),
            ("actor", self.actor.clone()),
            ("agent", self.agent.clone()),
            ("tool", self.tool.clone()),
            ("domain", self.domain.clone()),
            ("decision", self.decision.clone()),
            ("risk", self.risk.clone()),
        ]
        .into_iter()
        .filter_map(|(k, v)| v.map(|v| (k, v)))
        .collect()
    }
}

/// An audit row as the compliance pages and exports read it: the chained row, its facets and,
/// for exports, the hash of the row before it.
#[derive(Debug, Clone, PartialEq)]
pub struct TrailEvent {
    /// The row as chained.
    pub event: ChainedEvent,
    /// Agent, tool, domain, risk and decision facets.
    pub facets: Facets,
    /// The previous row's hash (exports only).
    pub prev_hash: Option<String>,
}

/// The facet columns of a row.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Facets {
    /// Agent.
    pub agent: Option<String>,
    /// Tool.
    pub tool: Option<String>,
    /// Domain.
    pub domain: Option<String>,
    /// Risk.
    pub risk: Option<String>,
    /// Decision.
    pub decision: Option<String>,
}
