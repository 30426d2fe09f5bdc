//! The reviewer's queue at scale: a page of pending proposals for a [`QueueQuery`] within the
//! reviewer's domains, how many match, and the count of every filter value.
//!
//! Every count on the page — the total, how many match the filters, and the count beside each
//! filter value — comes from one grouped read over the pending rows (grouped by every filter
//! column), too slow to run on each page view with 100,000 pending proposals. It is kept for
//! [`super::FACETS_FRESH`] (longer when the read is slow); a page that finds it older refreshes it in
//! the background and shows the counts it has. After a change this instance makes to the
//! pending set (a submission, a decision, an expiry), the next page reads it again itself while
//! that read is short, so a reviewer's page counts what they just did; past a few thousand
//! pending, it too is read in the background ([`super::facet_cache`]), and no page waits for
//! the grouped read but the first. Another instance's change shows when it is read again.

use std::collections::BTreeMap;
use std::sync::{Arc, PoisonError};
use std::time::Instant;

use super::error::{AccountError, ServiceError};
use super::facet_cache::Plan;
use super::services::Services;
use crate::audit::{Actor, AuditEvent, DomainsChanged};
use crate::domain::access::UseCase;
use crate::domain::principal::{Principal, Role};
use crate::domain::queue::{QueueFilter, QueueKey, QueueQuery, Regime, may_review_domain};
use crate::storage::accounts;
use crate::storage::audit;
use crate::storage::proposals::ProposalRecord;
use crate::storage::queue::{self, Domains, QueueGroup};

/// Proposals per queue page.
pub const QUEUE_PAGE: i64 = 50;

/// A page of the queue.
#[derive(Debug, Clone)]
pub struct QueuePage {
    /// The proposals, in the query's order.
    pub items: Vec<ProposalRecord>,
    /// Where the next page starts, when there is one.
    pub next: Option<QueueKey>,
    /// How many pending proposals match the filters (the reviewer's domains included).
    pub matching: i64,
    /// How many are pending in the reviewer's domains, whatever the filters.
    pub total: i64,
    /// Every filter value and how many pending proposals have it.
    pub facets: Facets,
    /// The trail's head when the page was read, read before the rows: the page's live stream
    /// starts from it (`GET /events/desk?seen=`), so a change the rows missed is told.
    pub head: i64,
}

/// Per-value counts of the pending proposals a reviewer may see.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Facets {
    /// All of them.
    pub total: i64,
    /// By agent.
    pub agents: BTreeMap<String, i64>,
    /// By domain.
    pub domains: BTreeMap<String, i64>,
    /// By tool.
    pub tools: BTreeMap<String, i64>,
    /// By declared risk.
    pub risks: BTreeMap<String, i64>,
    /// By route.
    pub routes: BTreeMap<String, i64>,
    /// Declaring GDPR.
    pub gdpr: i64,
    /// Declaring HIPAA.
    pub hipaa: i64,
}

impl Facets {
    /// Sums the groups a reviewer limited to `domains` may see.
    pub fn of(groups: &[QueueGroup], domains: Domains<'_>) -> Self {
        let mut f = Facets::default();
        let visible = groups
            .iter()
            .filter(|g| may_review_domain(domains, &g.domain));
        for g in visible {
            f.total += g.n;
            *f.agents.entry(g.agent.clone()).or_default() += g.n;
            *f.domains.entry(g.domain.clone()).or_default() += g.n;
            *f.tools.entry(g.tool_name.clone()).or_default() += g.n;
            *f.risks.entry(g.risk_level.clone()).or_default() += g.n;
            *f.routes.entry(g.route.clone()).or_default() += g.n;
            f.gdpr += g.gdpr * g.n;
            f.hipaa += g.hipaa * g.n;
        }
        f
    }
}

/// Whether a group's proposals match every filter of `f`.
fn matches(f: &QueueFilter, g: &QueueGroup) -> bool {
    let eq = |want: &Option<String>, have: &str| want.as_deref().is_none_or(|w| w == have);
    eq(&f.agent, &g.agent)
        && eq(&f.domain, &g.domain)
        && eq(&f.tool, &g.tool_name)
        && f.risk.is_none_or(|r| r.as_str() == g.risk_level)
        && f.route.is_none_or(|r| r.as_str() == g.route)
        && match f.compliance {
            Some(Regime::Gdpr) => g.gdpr == 1,
            Some(Regime::Hipaa) => g.hipaa == 1,
            None => true,
        }
}

impl Services {
    /// Where the desk is: the trail's head, which every state change moves. The queue's live
    /// stream tells its page when it moves.
    pub async fn desk_position(&self, who: &Principal) -> Result<i64, ServiceError> {
        self.authorize(who, UseCase::ViewQueue)?;
        self.trail_head().await
    }

    /// A page of pending proposals for `q`, within `who`'s domains.
    pub async fn queue_page(
        &self,
        who: &Principal,
        q: &QueueQuery,
    ) -> Result<QueuePage, ServiceError> {
        let reach = self.authorize(who, UseCase::ViewQueue)?;
        let domains: Domains<'_> = reach.domains();
        let mut read = self.read().await?;
        let head = audit::head(read.conn()).await?.0.seq;
        let mut items = queue::page(read.conn(), q, domains, self.now(), QUEUE_PAGE + 1).await?;
        let next = (items.len() > usize::try_from(QUEUE_PAGE).unwrap_or(usize::MAX))
            .then(|| {
                items.pop();
                items.last().map(|p| queue::key_of(p, q.sort))
            })
            .flatten();
        drop(read);
        let groups = self.queue_groups().await?;
        let facets = Facets::of(&groups, domains);
        let matching = groups
            .iter()
            .filter(|g| may_review_domain(domains, &g.domain) && matches(&q.filter, g))
            .map(|g| g.n)
            .sum();
        Ok(QueuePage {
            head,
            items,
            next,
            matching,
            total: facets.total,
            facets,
        })
    }

    /// Reads the queue's grouped counts and keeps them for the pages (at a start).
    pub async fn read_queue_counts(&self) -> Result<(), ServiceError> {
        let began = Instant::now();
        let groups = self.read_queue_groups(false).await?;
        let pending: i64 = groups.iter().map(|g| g.n).sum();
        tracing::info!(pending, took = ?began.elapsed(), "queue counts read");
        Ok(())
    }

    /// Pending proposals by domain and declared risk (for `GET /metrics`), from the same
    /// grouped counts the queue page sums.
    pub async fn pending_by_domain_and_risk(
        &self,
    ) -> Result<Vec<(String, String, i64)>, ServiceError> {
        let groups = self.queue_groups().await?;
        let mut sums: BTreeMap<(String, String), i64> = BTreeMap::new();
        for g in groups.iter() {
            *sums
                .entry((g.domain.clone(), g.risk_level.clone()))
                .or_default() += g.n;
        }
        Ok(sums.into_iter().map(|((d, r), n)| (d, r, n)).collect())
    }

    /// The grouped counts: kept ones while fresh; stale ones while a background read
    /// refreshes them; a read of its own only when there are none yet.
    async fn queue_groups(&self) -> Result<Arc<Vec<QueueGroup>>, ServiceError> {
        let kept = {
            let mut state = self
                .facets
                .state
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            let plan = state.plan(Instant::now());
            if plan == Plan::KeptWhileRefreshing {
                state.refreshing = true;
                let services = self.clone();
                tokio::spawn(async move {
                    if let Err(e) = services.read_queue_groups(true).await {
                        tracing::warn!(error = %e, "refreshing the queue's counts failed");
                    }
                });
            }
            match plan {
                Plan::ReadNow => None,
                Plan::Kept | Plan::KeptWhileRefreshing => {
                    state.kept.as_ref().map(|k| k.groups.clone())
                }
            }
        };
        match kept {
            Some(groups) => Ok(groups),
            None => self.read_queue_groups(false).await,
        }
    }

    /// Reads the grouped counts and keeps them; `background`: the refresh a page started.
    async fn read_queue_groups(
        &self,
        background: bool,
    ) -> Result<Arc<Vec<QueueGroup>>, ServiceError> {
        let generation = self.facet_generation();
        let began = Instant::now();
        let read = async {
            let mut read = self.read().await?;
            Ok::<_, ServiceError>(queue::groups(read.conn()).await?)
        }
        .await;
        let mut state = self
            .facets
            .state
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if background {
            state.refreshing = false;
        }
        let groups = Arc::new(read?);
        state.keep(began, generation, groups.clone());
        Ok(groups)
    }

    fn facet_generation(&self) -> u64 {
        self.facets
            .state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .generation
    }

    /// The pending set changed here (a submission, a decision, an expiry): the queue's counts
    /// are read again for the next page.
    pub(crate) fn queue_changed(&self) {
        let mut state = self
            .facets
            .state
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        state.generation = state.generation.wrapping_add(1);
    }
}

impl Services {
    /// The domains `username` is limited to (`None`: every domain).
    pub async fn reviewer_domains(
        &self,
        username: &str,
    ) -> Result<Option<Vec<String>>, ServiceError> {
        let mut read = self.read().await?;
        Ok(accounts::user_domains(read.conn(), username).await?)
    }

    /// `username` as they act now: their role and the domains their account is limited to.
    pub async fn person(&self, username: &str, role: Role) -> Result<Principal, ServiceError> {
        let domains = self.reviewer_domains(username).await?;
        Ok(Principal::person_in(username, role, domains))
    }

    /// Limits `username` to `domains` (`None`: every domain); audited.
    pub async fn set_domains(
        &self,
        who: &Principal,
        username: &str,
        domains: Option<Vec<String>>,
    ) -> Result<(), AccountError> {
        self.authorize(who, UseCase::ChangeUser)?;
        let actor = &Actor::of(who);
        let user = self
            .user(username)
            .await?
            .ok_or_else(|| AccountError::Missing(format!("user `{username}`")))?;
        let from = self.reviewer_domains(username).await?;
        let (now, actor) = (self.now(), actor.clone());
        let changed = self
            .store()
            .write(move |tx| {
                Box::pin(async move {
                    let to = domains;
                    if !accounts::set_user_domains(tx.conn(), &user.username, to.as_deref()).await?
                    {
                        return Ok(false);
                    }
                    let event = DomainsChanged {
                        user_id: user.id,
                        username: user.username,
                        from,
                        to,
                    };
                    tx.record(now, &actor, AuditEvent::DomainsChanged(event));
                    Ok::<_, ServiceError>(true)
                })
            })
            .await?;
        changed
            .then_some(())
            .ok_or_else(|| AccountError::Missing(format!("user `{username}`")))
    }
}

impl Services {
    /// The proposals that revise `id`, oldest first, for a use case that has decided who may
    /// see them.
    pub(super) async fn revisions_of(
        &self,
        id: uuid::Uuid,
    ) -> Result<Vec<uuid::Uuid>, ServiceError> {
        let mut read = self.read().await?;
        Ok(crate::storage::proposals::revisions_of(read.conn(), id).await?)
    }
}
