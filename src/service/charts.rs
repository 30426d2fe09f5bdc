//! The compliance officer's charts, as numbers: decisions per day by outcome, the pending
//! queue's depth at the end of each day, time to decision per domain (p50/p90/p99), the tools
//! reviewers reject most, and each reviewer's decisions. Counts and names only, never a
//! parameter value. The pages draw them ([`app::components::chart`]).

use crate::domain::access::UseCase;
use crate::domain::principal::Principal;
use std::collections::BTreeMap;

use time::OffsetDateTime;

use super::error::ServiceError;
use super::ledger::{COMMIT_LAG, window_start};
use super::services::Services;
use crate::storage::audit_query;
use crate::storage::charts::{self, DayCount, DecisionRow};

/// Days the charts cover, today included.
pub const CHART_DAYS: i64 = 30;
/// Most decisions read for the per-domain, per-tool and per-reviewer charts.
pub const MAX_DECISIONS: i64 = 200_000;
/// Rows in the top-tools and reviewer charts.
pub const TOP: usize = 10;

/// Outcomes of one day.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DayOutcomes {
    /// `YYYY-MM-DD` (UTC).
    pub day: String,
    /// Approved.
    pub approved: i64,
    /// Rejected.
    pub rejected: i64,
    /// Expired undecided.
    pub expired: i64,
    /// Submissions that entered the queue (pending).
    pub entered: i64,
}

/// Time to decision in one domain, in seconds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DomainLatency {
    /// Domain.
    pub domain: String,
    /// Decisions measured.
    pub count: usize,
    /// Median.
    pub p50: i64,
    /// 90th percentile.
    pub p90: i64,
    /// 99th percentile.
    pub p99: i64,
}

/// A name with approvals and rejections (a tool, or a reviewer).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Tally {
    /// Tool or reviewer.
    pub name: String,
    /// Approved.
    pub approved: i64,
    /// Rejected.
    pub rejected: i64,
}

/// Everything the charts page shows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Charts {
    /// One entry per day of the window, oldest first.
    pub days: Vec<DayOutcomes>,
    /// Pending proposals at the end of each day of `days`.
    pub queue_depth: Vec<i64>,
    /// Per domain, most decisions first.
    pub time_to_decision: Vec<DomainLatency>,
    /// Tools by rejections, most first (only tools with a rejection).
    pub tool_rejections: Vec<Tally>,
    /// Reviewers by decisions, most first.
    pub reviewer_load: Vec<Tally>,
    /// Whether the decisions read were cut at [`MAX_DECISIONS`].
    pub truncated: bool,
}

impl Services {
    /// The charts over the last [`CHART_DAYS`] days.
    pub async fn charts(&self, who: &Principal) -> Result<Charts, ServiceError> {
        self.authorize(who, UseCase::ReadTrail)?;
        let start = window_start(self.now(), CHART_DAYS);
        let mut read = self.read().await?;
        let after = audit_query::seq_before_time(read.conn(), start - COMMIT_LAG)
            .await?
            .unwrap_or(0);
        let counts = charts::queue_events_per_day(read.conn(), after).await?;
        let pending = charts::pending_count(read.conn()).await?;
        let decisions = charts::decisions_since(read.conn(), start, MAX_DECISIONS).await?;
        let days = day_outcomes(start, CHART_DAYS, &counts);
        let queue_depth = queue_depth(&days, pending);
        let truncated = decisions.len() as i64 >= MAX_DECISIONS;
        Ok(Charts {
            queue_depth,
            time_to_decision: time_to_decision(&decisions),
            tool_rejections: top_rejected(&decisions),
            reviewer_load: reviewer_load(&decisions),
            days,
            truncated,
        })
    }
}

/// One [`DayOutcomes`] per day from `start`, from per-day counts of trail events.
fn day_outcomes(start: OffsetDateTime, days: i64, counts: &[DayCount]) -> Vec<DayOutcomes> {
    let format = time::macros::format_description!("[year]-[month]-[day]");
    let mut out: Vec<DayOutcomes> = (0..days)
        .map(|d| DayOutcomes {
            day: (start + time::Duration::days(d))
                .format(&format)
                .unwrap_or_default(),
            ..DayOutcomes::default()
        })
        .collect();
    for (day, kind, after, n) in counts {
        let Some(o) = out.iter_mut().find(|o| o.day == *day) else {
            continue;
        };
        match (kind.as_str(), after.as_deref()) {
            ("proposal.approved", _) => o.approved += n,
            ("proposal.rejected", _) => o.rejected += n,
            ("proposal.expired", _) => o.expired += n,
            ("proposal.submitted", Some("pending")) => o.entered += n,
            _ => {}
        }
    }
    out
}

/// The pending count at the end of each day, walking back from today's `pending_now`: the
/// day before held what today holds, less what entered today, plus what left.
fn queue_depth(days: &[DayOutcomes], pending_now: i64) -> Vec<i64> {
    let mut depth = vec![0; days.len()];
    let mut at_end = pending_now;
    for (i, d) in days.iter().enumerate().rev() {
        depth[i] = at_end.max(0);
        at_end = at_end - d.entered + d.approved + d.rejected + d.expired;
    }
    depth
}

/// The nearest-rank `p`th percentile of sorted values.
pub fn percentile(sorted: &[i64], p: u32) -> i64 {
    if sorted.is_empty() {
        return 0;
    }
    let rank = (u64::from(p) * sorted.len() as u64).div_ceil(100).max(1);
    sorted[(rank as usize - 1).min(sorted.len() - 1)]
}

fn time_to_decision(decisions: &[DecisionRow]) -> Vec<DomainLatency> {
    let mut by_domain: BTreeMap<&str, Vec<i64>> = BTreeMap::new();
    for (domain, _, _, _, created, decided) in decisions {
        by_domain
            .entry(domain)
            .or_default()
            .push((*decided - *created).whole_seconds().max(0));
    }
    let mut out: Vec<DomainLatency> = by_domain
        .into_iter()
        .map(|(domain, mut secs)| {
            secs.sort_unstable();
            DomainLatency {
                domain: domain.to_owned(),
                count: secs.len(),
                p50: percentile(&secs, 50),
                p90: percentile(&secs, 90),
                p99: percentile(&secs, 99),
            }
        })
        .collect();
    out.sort_by(|a, b| b.count.cmp(&a.count).then_with(|| a.domain.cmp(&b.domain)));
    out
}

/// Approvals and rejections per name (`key` picks it from a decision), by name.
fn tally(decisions: &[DecisionRow], key: fn(&DecisionRow) -> &String) -> Vec<Tally> {
    let mut by_name: BTreeMap<&str, Tally> = BTreeMap::new();
    for d in decisions {
        let t = by_name.entry(key(d)).or_insert_with(|| Tally {
            name: key(d).clone(),
            ..Tally::default()
        });
        match d.3.as_str() {
            "approved" => t.approved += 1,
            "rejected" => t.rejected += 1,
            _ => {}
        }
    }
    by_name.into_values().collect()
}

/// The [`TOP`] tools by rejections.
fn top_rejected(decisions: &[DecisionRow]) -> Vec<Tally> {
    let mut tools: Vec<Tally> = tally(decisions, |d| &d.1)
        .into_iter()
        .filter(|t| t.rejected > 0)
        .collect();
    tools.sort_by(|a, b| {
        b.rejected
            .cmp(&a.rejected)
            .then_with(|| a.name.cmp(&b.name))
    });
    tools.truncate(TOP);
    tools
}

/// The [`TOP`] reviewers by decisions.
fn reviewer_load(decisions: &[DecisionRow]) -> Vec<Tally> {
    let mut reviewers = tally(decisions, |d| &d.2);
    let total = |t: &Tally| t.approved + t.rejected;
    reviewers.sort_by(|a, b| total(b).cmp(&total(a)).then_with(|| a.name.cmp(&b.name)));
    reviewers.truncate(TOP);
    reviewers
}

#[cfg(test)]
mod tests {
    use super::*;
    use time::macros::datetime;

    #[test]
    fn percentiles_are_nearest_rank() {
        let v: Vec<i64> = (1..=100).collect();
        assert_eq!(percentile(&v, 50), 50);
        assert_eq!(percentile(&v, 90), 90);
        assert_eq!(percentile(&v, 99), 99);
        assert_eq!(percentile(&[7], 99), 7);
        assert_eq!(percentile(&[], 50), 0);
        assert_eq!(percentile(&[1, 2, 3], 50), 2);
    }

    #[test]
    fn the_queue_depth_walks_back_from_today() {
        let start = datetime!(2026-11-21 0:00 UTC);
        let counts = vec![
            (
                "2026-11-21".into(),
                "proposal.submitted".into(),
                Some("pending".into()),
                5,
            ),
            (
                "2026-11-21".into(),
                "proposal.submitted".into(),
                Some("accepted".into()),
                9,
            ),
            (
                "2026-11-22".into(),
                "proposal.approved".into(),
                Some("approved".into()),
                2,
            ),
            (
                "2026-11-23".into(),
                "proposal.expired".into(),
                Some("expired".into()),
                1,
            ),
            (
                "2026-11-23".into(),
                "proposal.rejected".into(),
                Some("rejected".into()),
                1,
            ),
            ("2026-10-01".into(), "proposal.approved".into(), None, 100),
        ];
        let days = day_outcomes(start, 3, &counts);
        assert_eq!(days[0].entered, 5);
        assert_eq!(days[1].approved, 2);
        assert_eq!((days[2].expired, days[2].rejected), (1, 1));
        // 1 pending now: 3 at the end of the 22nd, 5 at the end of the 21st.
        assert_eq!(queue_depth(&days, 1), vec![5, 3, 1]);
    }

    #[test]
    fn tallies_rank_by_rejections_or_by_load() {
        let t = datetime!(2026-11-23 0:00 UTC);
        let d = |tool: &str, who: &str, verdict: &str, secs: i64| -> DecisionRow {
            (
                "sales".into(),
                tool.into(),
                who.into(),
                verdict.into(),
                t,
                t + time::Duration::seconds(secs),
            )
        };
        let rows = vec![
            d("a", "ann", "rejected", 10),
            d("b", "ann", "rejected", 20),
            d("b", "bob", "rejected", 30),
            d("c", "bob", "approved", 40),
        ];
        let tools = top_rejected(&rows);
        assert_eq!(
            tools
                .iter()
                .map(|t| (t.name.as_str(), t.rejected))
                .collect::<Vec<_>>(),
            vec![("b", 2), ("a", 1)]
        );
        let load = reviewer_load(&rows);
        assert_eq!(load[0].name, "ann");
        assert_eq!((load[1].approved, load[1].rejected), (1, 1));
        let latency = time_to_decision(&rows);
        assert_eq!(latency[0].count, 4);
        assert_eq!((latency[0].p50, latency[0].p99), (20, 40));
    }
}
