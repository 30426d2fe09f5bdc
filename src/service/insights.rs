//! Decision insights (`/insights`, admins and compliance): per reviewer and per domain over a
//! window, how many decisions, how many approvals, how long they took (median, p90), how many
//! were made faster than the proposal could be read (a rubber-stamp sign), grants made and
//! used, break-glass approvals, and expiries nobody decided. Each figure is one grouped read.

use std::collections::BTreeMap;

use time::OffsetDateTime;

use super::error::ServiceError;
use super::services::Services;
use crate::domain::access::UseCase;
use crate::domain::principal::Principal;
use crate::domain::record::DecisionGroup;
use crate::storage::insights;

/// The longest window, in days.
pub const MAX_INSIGHT_DAYS: i64 = 366;

/// One reviewer's figures.
#[derive(Debug, Clone, PartialEq)]
pub struct ReviewerInsight {
    /// Decisions, approvals, times and fast ones.
    pub decisions: DecisionGroup,
    /// Standing grants made.
    pub grants: i64,
    /// Uses of those grants.
    pub grant_uses: i64,
    /// Break-glass approvals.
    pub break_glass: i64,
}

/// One domain's figures.
#[derive(Debug, Clone, PartialEq)]
pub struct DomainInsight {
    /// Decisions, approvals, times and fast ones.
    pub decisions: DecisionGroup,
    /// Proposals that expired undecided.
    pub expired: i64,
}

/// The insights over one window.
#[derive(Debug, Clone, PartialEq)]
pub struct Insights {
    /// Start of the window.
    pub from: OffsetDateTime,
    /// End of the window (now).
    pub to: OffsetDateTime,
    /// Per reviewer, most decisions first.
    pub reviewers: Vec<ReviewerInsight>,
    /// Per domain, most decisions first.
    pub domains: Vec<DomainInsight>,
}

fn empty(name: &str) -> DecisionGroup {
    DecisionGroup {
        name: name.to_owned(),
        decisions: 0,
        approved: 0,
        p50: None,
        p90: None,
        fast: 0,
    }
}

impl Services {
    /// The insights over the last `days` days (1 to [`MAX_INSIGHT_DAYS`]).
    pub async fn insights(&self, who: &Principal, days: i64) -> Result<Insights, ServiceError> {
        self.authorize(who, UseCase::ViewInsights)?;
        let to = self.now();
        let from = to - time::Duration::days(days.clamp(1, MAX_INSIGHT_DAYS));
        let mut read = self.read().await?;
        let by_reviewer = insights::by_reviewer(read.conn(), from).await?;
        let by_domain = insights::by_domain(read.conn(), from).await?;
        let expired = insights::expired_by_domain(read.conn(), from, to).await?;
        let grants = insights::grants_by_reviewer(read.conn(), from, to).await?;
        let glass = insights::break_glass_by_admin(read.conn(), from, to).await?;

        let mut reviewers: BTreeMap<String, ReviewerInsight> = BTreeMap::new();
        let reviewer = |name: &str| ReviewerInsight {
            decisions: empty(name),
            grants: 0,
            grant_uses: 0,
            break_glass: 0,
        };
        for g in by_reviewer {
            let mut r = reviewer(&g.name);
            r.decisions = g;
            reviewers.insert(r.decisions.name.clone(), r);
        }
        for (name, made, uses) in grants {
            let r = reviewers
                .entry(name.clone())
                .or_insert_with(|| reviewer(&name));
            (r.grants, r.grant_uses) = (made, uses);
        }
        for (name, n) in glass {
            reviewers
                .entry(name.clone())
                .or_insert_with(|| reviewer(&name))
                .break_glass = n;
        }
        let mut domains: BTreeMap<String, DomainInsight> = BTreeMap::new();
        for g in by_domain {
            let name = g.name.clone();
            domains.insert(
                name,
                DomainInsight {
                    decisions: g,
                    expired: 0,
                },
            );
        }
        for (name, n) in expired {
            let d = domains
                .entry(name.clone())
                .or_insert_with(|| DomainInsight {
                    decisions: empty(&name),
                    expired: 0,
                });
            d.expired = n;
        }
        let mut reviewers: Vec<ReviewerInsight> = reviewers.into_values().collect();
        reviewers.sort_by_key(|r| std::cmp::Reverse(r.decisions.decisions));
        let mut domains: Vec<DomainInsight> = domains.into_values().collect();
        domains.sort_by_key(|d| std::cmp::Reverse(d.decisions.decisions));
        Ok(Insights {
            from,
            to,
            reviewers,
            domains,
        })
    }
}
