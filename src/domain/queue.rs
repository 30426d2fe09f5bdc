//! What a reviewer's queue shows: which pending proposals (filters), in which order, and from
//! where (a keyset position). Filters travel in the page's query string under public names
//! that bookmarks and links depend on:
//! `?agent=&domain=&risk=&tool=&route=&compliance=gdpr|hipaa&sort=oldest|newest|risk|expiry&after=`.
//! An unknown `risk`, `route`, `compliance` or `sort` is an error naming the field, never
//! silently ignored (fail closed); empty values mean "any".

use super::FieldError;
use super::contract::vocab::{RiskLevel, Route};
use super::contract::wire::{WireEnum, wire_enum};

wire_enum! {
    /// The queue's order.
    #[derive(Default)]
    pub enum QueueSort {
        /// Longest waiting first (the default).
        #[default]
        Oldest => "oldest",
        /// Most recent first.
        Newest => "newest",
        /// Highest declared risk first, then longest waiting.
        Risk => "risk",
        /// Soonest to expire first; proposals that never expire last.
        Expiry => "expiry",
    }
}

wire_enum! {
    /// A regulatory regime a proposal declares in its `compliance_context`.
    pub enum Regime {
        /// GDPR: personal data.
        Gdpr => "gdpr",
        /// HIPAA: health data.
        Hipaa => "hipaa",
    }
}

impl RiskLevel {
    /// 1 low, 2 medium, 3 high: the rank the queue sorts by.
    pub const fn rank(self) -> i64 {
        match self {
            RiskLevel::Low => 1,
            RiskLevel::Medium => 2,
            RiskLevel::High => 3,
        }
    }

    /// The level whose [`rank`](Self::rank) is `rank`; `None` when no level has it.
    pub fn from_rank(rank: i64) -> Option<Self> {
        Self::ALL.iter().copied().find(|level| level.rank() == rank)
    }
}

/// Which pending proposals to show; every filter is optional and all given must hold.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct QueueFilter {
    /// The proposing agent.
    pub agent: Option<String>,
    /// The proposal's domain.
    pub domain: Option<String>,
    /// Declared risk.
    pub risk: Option<RiskLevel>,
    /// Tool name.
    pub tool: Option<String>,
    /// The policy's route.
    pub route: Option<Route>,
    /// A regime the proposal declares.
    pub compliance: Option<Regime>,
}

/// Where a page starts: just after this row in the page's order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QueueKey {
    /// The sort's own key: the risk rank for `risk`, the expiry in microseconds since the Unix
    /// epoch for `expiry` (`None`: never expires); unused for `oldest` and `newest`.
    pub key: Option<i64>,
    /// The row's arrival position, which breaks ties.
    pub seq: i64,
}

impl QueueKey {
    /// The cursor as the query string carries it: `seq`, or `key.seq` (`never.seq` for a
    /// proposal that does not expire).
    pub fn encode(self, sort: QueueSort) -> String {
        match (sort, self.key) {
            (QueueSort::Oldest | QueueSort::Newest, _) => self.seq.to_string(),
            (_, Some(k)) => format!("{k}.{}", self.seq),
            (_, None) => format!("never.{}", self.seq),
        }
    }

    /// Parses a cursor written by [`QueueKey::encode`] for the same sort.
    pub fn decode(s: &str, sort: QueueSort) -> Option<Self> {
        let whole = |t: &str| t.parse::<i64>().ok().filter(|n| *n >= 0);
        match sort {
            QueueSort::Oldest | QueueSort::Newest => Some(Self {
                key: None,
                seq: whole(s)?,
            }),
            QueueSort::Risk | QueueSort::Expiry => {
                let (k, seq) = s.split_once('.')?;
                let key = match k {
                    "never" if sort == QueueSort::Expiry => None,
                    k => Some(k.parse::<i64>().ok()?),
                };
                Some(Self {
                    key,
                    seq: whole(seq)?,
                })
            }
        }
    }
}

/// A queue view as asked for: filters, order and position.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct QueueQuery {
    /// Filters.
    pub filter: QueueFilter,
    /// Order.
    pub sort: QueueSort,
    /// Start after this row (`None`: the first page).
    pub after: Option<QueueKey>,
}

/// The names a queue view reads from its query string.
pub const QUERY_FIELDS: &[&str] = &[
    "agent",
    "domain",
    "risk",
    "tool",
    "route",
    "compliance",
    "sort",
    "after",
];

impl QueueQuery {
    /// Reads a view from query-string pairs; each bad value is an error naming its field.
    pub fn parse<'a>(
        pairs: impl IntoIterator<Item = (&'a str, &'a str)>,
    ) -> Result<Self, Vec<FieldError>> {
        let mut q = QueueQuery::default();
        let mut errors = Vec::new();
        let mut after = None;
        for (name, value) in pairs {
            let value = value.trim();
            if value.is_empty() {
                continue;
            }
            let text = || Some(value.to_owned());
            match name {
                "agent" => q.filter.agent = text(),
                "domain" => q.filter.domain = text(),
                "tool" => q.filter.tool = text(),
                "risk" => q.filter.risk = enum_field(name, value, &mut errors),
                "route" => q.filter.route = enum_field(name, value, &mut errors),
                "compliance" => q.filter.compliance = enum_field(name, value, &mut errors),
                "sort" => q.sort = enum_field(name, value, &mut errors).unwrap_or_default(),
                "after" => after = Some(value),
                _ => {}
            }
        }
        if let Some(a) = after {
            q.after = QueueKey::decode(a, q.sort);
            if q.after.is_none() {
                errors.push(FieldError::new(
                    "after",
                    "is not a position in this order; follow the page's own links",
                ));
            }
        }
        if errors.is_empty() {
            Ok(q)
        } else {
            Err(errors)
        }
    }

    /// The filters and order as query-string pairs (without `after`), in [`QUERY_FIELDS`]
    /// order: what links to another page of the same view carry.
    pub fn pairs(&self) -> Vec<(&'static str, String)> {
        let f = &self.filter;
        let mut pairs: Vec<(&'static str, String)> = [
            ("agent", f.agent.clone()),
            ("domain", f.domain.clone()),
            ("risk", f.risk.map(|r| r.as_str().to_owned())),
            ("tool", f.tool.clone()),
            ("route", f.route.map(|r| r.as_str().to_owned())),
            ("compliance", f.compliance.map(|c| c.as_str().to_owned())),
        ]
        .into_iter()
        .filter_map(|(k, v)| v.map(|v| (k, v)))
        .collect();
        if self.sort != QueueSort::Oldest {
            pairs.push(("sort", self.sort.as_str().to_owned()));
        }
        pairs
    }
}

fn enum_field<T: WireEnum>(name: &str, value: &str, errors: &mut Vec<FieldError>) -> Option<T> {
    let parsed = T::ALL.iter().copied().find(|v| v.wire() == value);
    if parsed.is_none() {
        errors.push(FieldError::new(name, T::expected()));
    }
    parsed
}

/// Whether a reviewer limited to `domains` (`None`: every domain) may see and decide a
/// proposal in `domain`.
pub fn may_review_domain(domains: Option<&[String]>, domain: &str) -> bool {
    domains.is_none_or(|ds| ds.iter().any(|d| d == domain))
}

/// Longest domain name a reviewer can be limited to.
pub const MAX_DOMAIN: usize = 64;

/// A comma-separated list of domains (`billing,crm`): each trimmed, non-empty, at most
/// [`MAX_DOMAIN`] characters without control characters; duplicates dropped; at least one.
pub fn parse_domains(s: &str) -> Result<Vec<String>, String> {
    let mut domains: Vec<String> = Vec::new();
    for d in s.split(',').map(str::trim) {
        if d.is_empty() || d.chars().count() > MAX_DOMAIN || d.chars().any(char::is_control) {
            return Err(format!(
                "`{d}` is not a domain name (1-{MAX_DOMAIN} characters, no control characters)"
            ));
        }
        if !domains.iter().any(|x| x == d) {
            domains.push(d.to_owned());
        }
    }
    Ok(domains)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_risk_level_reads_back_from_its_rank_and_no_other_number_does() {
        for &level in RiskLevel::ALL {
            assert_eq!(RiskLevel::from_rank(level.rank()), Some(level));
        }
        for rank in [0, 4, -1, i64::MAX] {
            assert_eq!(RiskLevel::from_rank(rank), None, "{rank}");
        }
    }

    #[test]
    fn a_query_string_reads_into_filters_and_back() {
        let q = QueueQuery::parse([
            ("agent", "sales-bot"),
            ("risk", "high"),
            ("route", "defer"),
            ("compliance", "gdpr"),
            ("sort", "risk"),
            ("domain", ""),
            ("after", "3.41"),
        ])
        .expect("valid");
        assert_eq!(q.filter.agent.as_deref(), Some("sales-bot"));
        assert_eq!(q.filter.risk, Some(RiskLevel::High));
        assert_eq!(q.filter.route, Some(Route::Defer));
        assert_eq!(q.filter.compliance, Some(Regime::Gdpr));
        assert_eq!(q.filter.domain, None);
        assert_eq!(q.sort, QueueSort::Risk);
        assert_eq!(
            q.after,
            Some(QueueKey {
                key: Some(3),
                seq: 41
            })
        );
        assert_eq!(
            q.pairs(),
            [
                ("agent", "sales-bot".to_owned()),
                ("risk", "high".to_owned()),
                ("route", "defer".to_owned()),
                ("compliance", "gdpr".to_owned()),
                ("sort", "risk".to_owned()),
            ]
        );
    }

    #[test]
    fn unknown_values_fail_closed_naming_the_field() {
        let errors = QueueQuery::parse([
            ("risk", "extreme"),
            ("sort", "random"),
            ("compliance", "sox"),
        ])
        .expect_err("invalid");
        let fields: Vec<&str> = errors.iter().map(|e| e.field.as_str()).collect();
        assert_eq!(fields, ["risk", "sort", "compliance"]);
        let bad_cursor = QueueQuery::parse([("sort", "oldest"), ("after", "never.3")]);
        assert_eq!(bad_cursor.expect_err("invalid")[0].field, "after");
    }

    #[test]
    fn cursors_round_trip_in_their_own_order() {
        for (sort, key) in [
            (QueueSort::Oldest, QueueKey { key: None, seq: 7 }),
            (QueueSort::Newest, QueueKey { key: None, seq: 7 }),
            (
                QueueSort::Risk,
                QueueKey {
                    key: Some(2),
                    seq: 7,
                },
            ),
            (
                QueueSort::Expiry,
                QueueKey {
                    key: Some(1_790_000_000_000_000),
                    seq: 7,
                },
            ),
            (QueueSort::Expiry, QueueKey { key: None, seq: 7 }),
        ] {
            assert_eq!(QueueKey::decode(&key.encode(sort), sort), Some(key));
        }
        assert_eq!(QueueKey::decode("-1", QueueSort::Oldest), None);
        assert_eq!(QueueKey::decode("never.1", QueueSort::Risk), None);
    }

    #[test]
    fn domain_lists_are_trimmed_deduplicated_and_never_empty() {
        assert_eq!(
            parse_domains(" billing, crm,billing").expect("valid"),
            ["billing", "crm"]
        );
        assert!(parse_domains("").is_err());
        assert!(parse_domains("billing,,crm").is_err());
    }

    #[test]
    fn a_domain_limited_reviewer_sees_only_their_domains() {
        let billing = vec!["billing".to_owned()];
        assert!(may_review_domain(Some(&billing), "billing"));
        assert!(!may_review_domain(Some(&billing), "crm"));
        assert!(may_review_domain(None, "crm"));
    }
}
