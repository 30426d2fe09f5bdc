//! Who hears about what, beyond a status change on a shared channel:
//!
//! - **Email per reviewer.** A notification queued for email names nobody; it is expanded here
//!   into one row per person with an address who may decide the proposal (role, domains; not
//!   the agent's own operators), or who belongs to the escalation tier it is about.
//! - **About to expire.** A waiting proposal within `--notify-before-expiry` of its deadline is
//!   announced once ([`Services::raise_alerts`]).
//! - **Escalation.** A proposal nobody decided within the policy's `escalate_after` raises its
//!   next tier (`escalate_to`), once per tier: audited (`proposal.escalated`), notified, and
//!   the tier's people may decide it from then on, even outside their domains
//!   ([`Services::escalated_to`]).

use crate::domain::access::UseCase;
use crate::domain::principal::Principal;
use std::collections::HashMap;

use uuid::Uuid;

use super::error::{AccountError, ServiceError};
use super::services::Services;
use crate::audit::{Actor, AuditEvent, EmailChanged, ProposalEscalated, ProposalFacets};
use crate::domain::notify::{Reason, is_told};
use crate::storage::alerts::{self, Alert, Reachable};
use crate::storage::notifications::{self, Notice, Unexpanded};

/// Notifications expanded, proposals warned or escalated per round at most.
const PER_ROUND: i64 = 1_000;

impl Services {
    /// Expands email notifications queued for nobody into one per person told; how many rows
    /// were queued.
    pub(super) async fn expand_email(&self) -> Result<usize, ServiceError> {
        let mut read = self.read().await?;
        let pending = notifications::unexpanded(read.conn(), "email", PER_ROUND).await?;
        if pending.is_empty() {
            return Ok(0);
        }
        let people = alerts::reachable(read.conn()).await?;
        drop(read);
        let mut operators: HashMap<String, Vec<String>> = HashMap::new();
        let mut expanded: Vec<(Unexpanded, Vec<String>)> = Vec::with_capacity(pending.len());
        for u in pending {
            let proposal = match u.proposal_id {
                Some(id) => self.proposal_row(id).await?,
                // About a policy activation: its audience is every admin and compliance
                // officer, whatever their domains.
                None => {
                    expanded.push((
                        u.clone(),
                        told_among(&people, ("", ""), u.audience.as_deref(), &[]),
                    ));
                    continue;
                }
            };
            let told = match proposal {
                Some(p) => {
                    if !operators.contains_key(&p.agent) {
                        let ops = self.agent_operators(&p.agent).await?;
                        operators.insert(p.agent.clone(), ops);
                    }
                    let ops = operators.get(&p.agent).map_or(&[][..], Vec::as_slice);
                    let proposal = (p.agent.as_str(), p.contract.domain.as_str());
                    told_among(&people, proposal, u.audience.as_deref(), ops)
                }
                None => Vec::new(),
            };
            expanded.push((u, told));
        }
        let queued = self
            .store()
            .write(move |tx| {
                Box::pin(async move {
                    let n = notifications::expand(tx.conn(), "email", &expanded).await?;
                    Ok::<_, ServiceError>(n)
                })
            })
            .await?;
        Ok(queued)
    }

    /// The people with email due now (one read, not one claim per person).
    pub(super) async fn emailed_people(&self) -> Result<Vec<String>, ServiceError> {
        let mut read = self.read().await?;
        let now = self.now();
        Ok(notifications::recipients_due(read.conn(), "email", now).await?)
    }

    /// `username`'s email address, while they are enabled and hold a role (otherwise their
    /// rows fail, retried until given up, and are listed for admins).
    pub(super) async fn email_of(&self, username: &str) -> Result<Option<String>, ServiceError> {
        let mut read = self.read().await?;
        Ok(alerts::email_of(read.conn(), username).await?)
    }

    /// Sets (or with `None` removes) the address `username` is emailed at; audited (without
    /// the address).
    pub async fn set_email(
        &self,
        who: &Principal,
        username: &str,
        email: Option<&str>,
    ) -> Result<(), AccountError> {
        self.authorize(who, UseCase::ChangeUser)?;
        let actor = &Actor::of(who);
        let email = email
            .map(super::mail::check_address)
            .transpose()
            .map_err(AccountError::Invalid)?;
        let user = self
            .user(username)
            .await?
            .ok_or_else(|| AccountError::Missing(format!("user `{username}`")))?;
        let (now, actor) = (self.now(), actor.clone());
        self.store()
            .write(move |tx| {
                Box::pin(async move {
                    let name = user.username.clone();
                    if alerts::set_email(tx.conn(), &name, email.as_deref()).await? {
                        let event = EmailChanged {
                            user_id: user.id,
                            username: name,
                            has_email: email.is_some(),
                        };
                        tx.record(now, &actor, AuditEvent::EmailChanged(event));
                    }
                    Ok::<_, ServiceError>(())
                })
            })
            .await?;
        Ok(())
    }

    /// The expiry warnings and escalations raised for proposal `id`, oldest first, for a use
    /// case that has decided who may see them.
    pub(super) async fn alerts(&self, id: Uuid) -> Result<Vec<Alert>, ServiceError> {
        let mut read = self.read().await?;
        Ok(alerts::raised(read.conn(), id).await?)
    }

    /// Whether an escalation of proposal `id` reached `username` (who may then decide it
    /// outside their domains).
    pub(super) async fn escalated_to(
        &self,
        username: &str,
        id: Uuid,
    ) -> Result<bool, ServiceError> {
        let raised = self.alerts(id).await?;
        if !raised.iter().any(|a| a.kind == "escalated") {
            return Ok(false);
        }
        let Some(role) = self.user(username).await?.and_then(|u| u.role) else {
            return Ok(false);
        };
        let role = role.as_str();
        Ok(raised.iter().any(|a| {
            a.kind == "escalated"
                && a.audience.as_deref().is_some_and(|to| {
                    crate::domain::policy::escalation::reaches(to, username, role)
                })
        }))
    }

    /// Warns about proposals about to expire and raises the escalation tiers now due; how many
    /// alerts were raised.
    pub async fn raise_alerts(&self) -> Result<usize, ServiceError> {
        let mut raised = 0;
        if !self.notify.channels().is_empty() {
            raised += self.warn_expiring().await?;
        }
        raised += self.escalate_due().await?;
        Ok(raised)
    }

    async fn warn_expiring(&self) -> Result<usize, ServiceError> {
        let now = self.now();
        let until = now + self.notify.expiry_warning();
        let mut read = self.read().await?;
        let due = alerts::expiring_unwarned(read.conn(), now, until, PER_ROUND).await?;
        drop(read);
        if due.is_empty() {
            return Ok(0);
        }
        self.store()
            .write(move |tx| {
                Box::pin(async move {
                    let mut warned = 0;
                    for id in due {
                        if alerts::raise(tx.conn(), id, "expiring", 0, None, now).await? {
                            let (reason, audience) = (Reason::Expiring, None);
                            tx.notify(Notice {
                                reason,
                                proposal: id,
                                at: now,
                                audience,
                            });
                            warned += 1;
                        }
                    }
                    Ok::<_, ServiceError>(warned)
                })
            })
            .await
    }

    async fn escalate_due(&self) -> Result<usize, ServiceError> {
        let policy = self.policy();
        let (Some(shortest), Some(tiers)) = (policy.shortest_escalation(), policy.most_tiers())
        else {
            return Ok(0);
        };
        let now = self.now();
        let since = now - time::Duration::seconds(i64::try_from(shortest).unwrap_or(i64::MAX));
        let tiers = i64::try_from(tiers).unwrap_or(i64::MAX);
        let mut due = Vec::new();
        let mut after = 0;
        loop {
            let mut read = self.read().await?;
            let page = alerts::waiting_since(read.conn(), since, tiers, after, PER_ROUND).await?;
            drop(read);
            let Some(last) = page.last().map(|w| w.seq) else {
                break;
            };
            after = last;
            for w in page {
                let Some(e) = policy.escalation_for(&w.tool_name, &w.domain) else {
                    continue;
                };
                let raised = usize::try_from(w.raised).unwrap_or(usize::MAX);
                for tier in raised + 1..=e.tiers_due(w.created_at, now) {
                    if let Some(to) = e.tier(tier) {
                        due.push((w.id, tier, to.to_owned(), e.after_secs));
                    }
                }
            }
        }
        if due.is_empty() {
            return Ok(0);
        }
        let mut proposals = Vec::with_capacity(due.len());
        for (id, tier, to, after) in due {
            if let Some(p) = self.proposal_row(id).await? {
                proposals.push((p, tier, to, after));
            }
        }
        let raised = self
            .store()
            .write(move |tx| {
                Box::pin(async move {
                    let system = Actor::system("escalation");
                    let mut raised = 0;
                    for (p, tier, to, after) in proposals {
                        let n = i32::try_from(tier).unwrap_or(i32::MAX);
                        if !alerts::raise(tx.conn(), p.id, "escalated", n, Some(&to), now).await? {
                            continue;
                        }
                        let event = ProposalEscalated {
                            proposal_id: p.id,
                            facets: ProposalFacets::of(&p.agent, &p.contract),
                            tier: u32::try_from(tier).unwrap_or(u32::MAX),
                            escalated_to: to.clone(),
                            escalate_after_secs: after,
                        };
                        tx.record(now, &system, AuditEvent::ProposalEscalated(event));
                        tx.notify(Notice {
                            reason: Reason::Escalated,
                            proposal: p.id,
                            at: now,
                            audience: Some(to),
                        });
                        raised += 1;
                    }
                    Ok::<_, ServiceError>(raised)
                })
            })
            .await?;
        if raised > 0 {
            self.metrics().escalated(raised);
            self.queue_changed();
        }
        Ok(raised)
    }
}

/// The usernames among `people` told about `proposal` (agent, domain).
fn told_among(
    people: &[Reachable],
    proposal: (&str, &str),
    audience: Option<&str>,
    operators: &[String],
) -> Vec<String> {
    people
        .iter()
        .filter(|p| {
            let domains = p.domains.as_ref().map(|d| d.0.as_slice());
            is_told(&p.username, &p.role, domains, proposal, audience, operators)
        })
        .map(|p| p.username.clone())
        .collect()
}
