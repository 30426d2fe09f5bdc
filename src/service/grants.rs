//! Standing grants ([`crate::domain::review::grant`]): made with a reviewer's final approval
//! ([`Services::approve_and_grant`], applied by `decide`), found for a submission that would
//! otherwise ask a person (`submit`), listed, revoked, and expired by the sweep.
//!
//! Nothing caches a grant: a submission reads the live grants of its agent and tool, and takes
//! a use with a conditional update in its own commit, so a revocation on one instance stops
//! the grant at once on every instance sharing the database.

use time::OffsetDateTime;
use uuid::Uuid;

use super::error::{Conflict, ServiceError};
use super::services::Services;
use crate::audit::{Actor, AuditEvent, GrantEnded, GrantFacets, GrantMade, GrantUsed};
use crate::domain::FieldError;
use crate::domain::access::{self, Reach, UseCase};
use crate::domain::contract::proposal::ToolProposal;
use crate::domain::contract::vocab::Route;
use crate::domain::principal::Principal;
use crate::domain::record::{GrantRecord, ProposalRecord};
use crate::domain::review::grant::{self, Ask, Exposure, GrantState};
use crate::domain::routing::proposal::ProposalDecision;
use crate::storage::{Tx, accounts, grants};

/// The most grants a listing shows.
const LISTED: i64 = 500;
/// Grants expired per sweep at most.
const EXPIRED_PER_SWEEP: i64 = 1_000;

impl Services {
    /// The standing grants `who` may see (their domains'), newest first: the live ones, or all.
    pub async fn grants(
        &self,
        who: &Principal,
        live_only: bool,
    ) -> Result<Vec<GrantRecord>, ServiceError> {
        let reach = self.authorize(who, UseCase::ViewGrants)?;
        let mut read = self.read().await?;
        let domains = match reach {
            Reach::All => None,
            Reach::Domains(ds) => Some(ds),
        };
        Ok(grants::list(read.conn(), live_only, domains, LISTED).await?)
    }

    /// `who` revokes grant `id` (audited `grant.revoked`): it accepts nothing from now on, on
    /// every instance. A grant outside `who`'s domains is not found; an ended one conflicts.
    pub async fn revoke_grant(
        &self,
        who: &Principal,
        id: Uuid,
    ) -> Result<GrantRecord, ServiceError> {
        let reach = self.authorize(who, UseCase::RevokeGrant)?;
        let found = {
            let mut read = self.read().await?;
            grants::by_id(read.conn(), id).await?
        };
        let g = found
            .filter(|g| reach.covers(&g.domain))
            .ok_or(ServiceError::NotFound)?;
        let actor = Actor::of(who);
        let now = self.now();
        let revoked = self
            .store()
            .write(move |tx| {
                Box::pin(async move {
                    let Some(r) = grants::revoke(tx.conn(), id, &actor.name, now).await? else {
                        return Ok(None);
                    };
                    tx.record(now, &actor, AuditEvent::GrantEnded(ended(&r, "revoked")));
                    Ok::<_, ServiceError>(Some(r))
                })
            })
            .await?;
        match revoked {
            Some(r) => {
                tracing::info!(grant.id = %id, by = %who.name(), "standing grant revoked");
                Ok(r)
            }
            None => {
                let mut read = self.read().await?;
                let state = grants::by_id(read.conn(), id)
                    .await?
                    .map_or(g.state, |now| now.state);
                Err(ServiceError::Conflict(Conflict::GrantEnded(state)))
            }
        }
    }

    /// What "approve and allow similar" offers `who` on `p`: `None` when they may not make
    /// grants at all; else the longest grant the policy allows, or why `p` cannot be granted.
    pub fn grant_offer(&self, who: &Principal, p: &ProposalRecord) -> Option<Result<u64, String>> {
        self.authorize(who, UseCase::MakeGrant).ok()?;
        if p.routing.route != Route::Ask {
            return Some(Err(
                "only a proposal that asks a person can be granted; this one \
                             waits for evidence no approval supplies"
                    .to_owned(),
            ));
        }
        let c = &p.contract;
        if self.step_up_needed(p) {
            let why = "approving it needs a passkey each time, so it is never granted";
            return Some(Err(why.to_owned()));
        }
        let max = self.policy().max_grant_secs(&c.tool.name);
        Some(grant::grantable(max, &exposure(&p.routing, c)).map_err(|why| why.to_string()))
    }

    /// The grant `who` asks for beside approving `p`, checked: they may make grants, the
    /// policy lets this tool and this proposal be granted, and the ask names real fields and
    /// stays within the policy's `max_grant`.
    pub(super) fn new_grant(
        &self,
        who: &Principal,
        p: &ProposalRecord,
        ask: &Ask,
        now: OffsetDateTime,
    ) -> Result<NewGrant, ServiceError> {
        self.authorize(who, UseCase::MakeGrant)?;
        let c = &p.contract;
        let max = match self.grant_offer(who, p) {
            Some(Ok(max)) => max,
            Some(Err(why)) => {
                return Err(ServiceError::Forbidden {
                    code: "not_grantable",
                    message: why,
                });
            }
            None => {
                return Err(self
                    .authorize(who, UseCase::MakeGrant)
                    .err()
                    .unwrap_or(ServiceError::NotFound));
            }
        };
        let errors = grant::check(ask, &c.parameters, max);
        if !errors.is_empty() {
            return Err(ServiceError::Invalid(errors));
        }
        let secs = i64::try_from(ask.duration_secs).map_err(|_| {
            ServiceError::Invalid(vec![FieldError::new("grant.duration", "too long")])
        })?;
        let grant = GrantRecord {
            id: Uuid::now_v7(),
            agent: p.agent.clone(),
            tool: c.tool.name.clone(),
            tool_version: c.tool.version.clone(),
            domain: c.domain.clone(),
            proposal_id: p.id,
            granted_by: who.name().to_owned(),
            parameters: c.parameters.clone(),
            scope: ask.scope.clone(),
            max_uses: ask.max_uses,
            uses: 0,
            state: GrantState::Live,
            created_at: now,
            expires_at: now + time::Duration::seconds(secs),
            ended_at: None,
            ended_by: None,
        };
        let expires_at = grant
            .expires_at
            .format(&time::format_description::well_known::Rfc3339)
            .ok();
        let made = GrantMade::new(self.store().salt(), &grant, expires_at)?;
        Ok(NewGrant { grant, made })
    }

    /// The live grant, if any, under which `agent`'s `contract` (routed `routing`) is accepted
    /// instead of asking a person: only an `ask` that is itself grantable, and only a grant of
    /// the same agent, tool, version and domain whose scope covers its parameters.
    pub(super) async fn covering_grant(
        &self,
        agent: &str,
        contract: &ToolProposal,
        routing: &ProposalDecision,
        now: OffsetDateTime,
    ) -> Result<Option<GrantRecord>, ServiceError> {
        if routing.route != Route::Ask {
            return Ok(None);
        }
        let max = self.policy().max_grant_secs(&contract.tool.name);
        if grant::grantable(max, &exposure(routing, contract)).is_err()
            || (self.policy()).step_up(&contract.tool.name, routing.effective_risk)
        {
            return Ok(None);
        }
        let (tool, domain) = (&contract.tool.name, &contract.domain);
        let live = {
            let mut read = self.read().await?;
            grants::live_for(read.conn(), agent, tool, domain, now).await?
        };
        let covering = live.into_iter().filter(|g| {
            g.tool_version == contract.tool.version
                && grant::covers(&g.parameters, &g.scope, &contract.parameters)
        });
        for g in covering {
            if self.granter_stands(&g.granted_by, agent, domain).await? {
                return Ok(Some(g));
            }
        }
        Ok(None)
    }

    /// Whether `granter` could still approve `agent`'s call in `domain` themselves: enabled,
    /// with a role that decides and a reach over the domain, and not an operator of the agent
    /// (named one, or its token's maker, since the grant was made). A grant accepts only in the
    /// name of someone who could approve.
    async fn granter_stands(
        &self,
        granter: &str,
        agent: &str,
        domain: &str,
    ) -> Result<bool, ServiceError> {
        let (user, domains) = {
            let mut read = self.read().await?;
            let user = accounts::user_by_username(read.conn(), granter).await?;
            (user, accounts::user_domains(read.conn(), granter).await?)
        };
        let Some(role) = user.filter(|u| !u.disabled).and_then(|u| u.role) else {
            return Ok(false);
        };
        let person = Principal::person_in(granter, role, domains);
        let decides = access::authorize(&person, UseCase::Decide).is_ok_and(|r| r.covers(domain));
        let operates = self
            .agent_operators(agent)
            .await?
            .iter()
            .any(|o| o == granter);
        Ok(decides && !operates)
    }
}

/// What `contract`, routed `routing`, exposes.
fn exposure(routing: &ProposalDecision, contract: &ToolProposal) -> Exposure {
    Exposure {
        effective_risk: routing.effective_risk,
        blast_radius: contract.blast_radius,
        gdpr: contract.compliance_context.gdpr,
        hipaa: contract.compliance_context.hipaa,
        required_approvals: routing.required_approvals,
    }
}

/// A grant about to be made, with its `grant.made` event (built before the write: hashing
/// needs the salt).
#[derive(Debug)]
pub(super) struct NewGrant {
    pub(super) grant: GrantRecord,
    made: GrantMade,
}

impl NewGrant {
    /// Stores the grant, made by the approval being written, with its event.
    pub(super) async fn make_in(
        &self,
        tx: &mut Tx,
        reviewer: &Actor,
        now: OffsetDateTime,
    ) -> Result<(), ServiceError> {
        grants::insert(tx.conn(), &self.grant).await?;
        tx.record(now, reviewer, AuditEvent::GrantMade(self.made.clone()));
        Ok(())
    }
}

/// Takes a use of grant `g` for proposal `proposal_id`, with its `grant.used` event; a grant
/// that ended meanwhile is [`Conflict::GrantSpent`] (the change rolls back and the submission
/// is routed again).
pub(super) async fn use_in(
    tx: &mut Tx,
    g: &GrantRecord,
    proposal_id: Uuid,
    now: OffsetDateTime,
) -> Result<(), ServiceError> {
    let Some(used) = grants::take_use(tx.conn(), g.id, now).await? else {
        return Err(ServiceError::Conflict(Conflict::GrantSpent));
    };
    let event = GrantUsed {
        grant_id: used.id,
        facets: GrantFacets::of(&used),
        proposal_id,
        granted_by: used.granted_by.clone(),
        uses: used.uses,
        max_uses: used.max_uses,
        after: used.state.as_str(),
    };
    tx.record(now, &Actor::system("grant"), AuditEvent::GrantUsed(event));
    Ok(())
}

/// Expires the live grants whose time ran out by `now`, each with its `grant.expired` event.
pub(super) async fn expire_in(tx: &mut Tx, now: OffsetDateTime) -> Result<usize, ServiceError> {
    let expired = grants::expire_due(tx.conn(), now, EXPIRED_PER_SWEEP).await?;
    let system = Actor::system("expiry");
    for g in &expired {
        tx.record(now, &system, AuditEvent::GrantEnded(ended(g, "expired")));
    }
    Ok(expired.len())
}

fn ended(g: &GrantRecord, how: &'static str) -> GrantEnded {
    GrantEnded {
        grant_id: g.id,
        facets: GrantFacets::of(g),
        ended: how,
        uses: g.uses,
    }
}
