//! Submitting a tool proposal: parse it, bind it to the agent, route it by policy, and store
//! it with its audit event (and, when the policy accepts it outright, its command). A replay of
//! the same request returns the original.

use crate::domain::access::UseCase;
use crate::domain::principal::Principal;
use std::sync::Arc;

use serde_json::Value;
use time::OffsetDateTime;
use uuid::Uuid;

use super::error::{Conflict, ServiceError};
use super::executor::{LeaseRequest, Leased, lease_queued};
use super::grants;
use super::services::NewQueued;
use super::services::Services;
use crate::audit::{
    Actor, AuditEvent, CommandFacets, CommandQueued, ProposalInputRejected, ProposalSubmitted,
};
use crate::audit::{rfc3339, safe};
use crate::domain::command::grant::spec_sha256;
use crate::domain::command::{CommandKind, CommandStatus};
use crate::domain::contract::canonical::request_hash_sha256;
use crate::domain::contract::proposal::ToolProposal;
use crate::domain::contract::vocab::AuthorizationState;
use crate::domain::gateway::GATEWAY_EXECUTOR;
use crate::domain::gateway::call::call_prefix;
use crate::domain::lifecycle::{self, ProposalStatus};
use crate::domain::policy_change::backtest::{DecisionKind, Outcome, Recorded, Replay};
use crate::domain::record::GrantRecord;
use crate::domain::routing::proposal::{ProposalDecision, route_proposal};
use crate::domain::routing::scan::audit_safe_name;
use crate::storage::audit::PendingEvent;
use crate::storage::commands::{CommandRecord, LeaseAsk, NewCommand};
use crate::storage::proposals::{self, NewProposal, ProposalParts, ProposalRecord};
use crate::storage::{Tx, Upfront, commands};

/// What a submission came to.
#[derive(Debug)]
pub enum Submitted {
    /// A new proposal.
    Created(ProposalRecord),
    /// The same request was submitted before: the original.
    Replayed(ProposalRecord),
}

impl Submitted {
    /// The proposal, new or original.
    pub fn record(&self) -> &ProposalRecord {
        match self {
            Submitted::Created(p) | Submitted::Replayed(p) => p,
        }
    }
}

/// A routed proposal, ready to store: its row and its audit event are built before the write,
/// on the request's own task, so the writer's serial path only inserts and links them.
struct Routed {
    /// The row to insert.
    row: Arc<NewProposal>,
    /// The `proposal.submitted` event (hashing values needs the salt, not the row).
    submitted_event: PendingEvent,
    agent: String,
    contract: ToolProposal,
    request_hash: String,
    routing: ProposalDecision,
    command: Option<NewQueued>,
    /// The standing grant it is accepted under, whose use the write takes.
    grant: Option<GrantRecord>,
    /// The lease its command is taken under in the same transaction, if it is accepted and
    /// its submitter runs it at once (an accepted gateway call).
    lease: Option<Arc<LeaseAsk>>,
}

/// What storing a routed proposal came to, inside the write: the new row's `seq`, or the
/// original a replay names.
enum Stored {
    Created(i64, Option<Box<(CommandRecord, OffsetDateTime)>>),
    Replayed(Box<ProposalRecord>),
}

impl Services {
    /// Submits `body` as a tool proposal from agent `who` (in-process callers: no token, so
    /// no webhook hears of it).
    pub async fn submit(&self, who: &Principal, body: &Value) -> Result<Submitted, ServiceError> {
        self.submit_with_token(who, None, body).await
    }

    /// Submits `body` as a tool proposal from agent `who`, presented with API token `token`:
    /// the token's webhook, if it has one, hears of every status change of the proposal.
    pub async fn submit_with_token(
        &self,
        who: &Principal,
        token: Option<Uuid>,
        body: &Value,
    ) -> Result<Submitted, ServiceError> {
        let agent = self.agent_of(who, UseCase::Submit)?;
        let started = std::time::Instant::now();
        let submitted = self.submit_routed(agent, token, body, None, false).await;
        self.metrics().submitted(started.elapsed());
        Ok(submitted?.0)
    }

    /// Submits a call agent `who` made through the MCP gateway, as [`Self::submit_with_token`].
    /// When the policy accepts it outright, its command is leased to the built-in gateway
    /// executor (as `run` asks) in the transaction that stores it, so that the call is made at
    /// once where it was submitted: no hand-off to the executor's loop, one write fewer. The
    /// lease is the built-in executor's alone, and only for a gateway tool. Without `run` (no
    /// call slot free), an accepted call waits in the queue for the executor's loop.
    pub async fn submit_gateway_call(
        &self,
        who: &Principal,
        token: Option<Uuid>,
        body: &Value,
        run: Option<&LeaseRequest>,
    ) -> Result<(Submitted, Option<Leased>), ServiceError> {
        let agent = self.agent_of(who, UseCase::Submit)?;
        if run.is_some_and(|run| run.executor != GATEWAY_EXECUTOR) {
            return Err(ServiceError::NotFound);
        }
        let started = std::time::Instant::now();
        let submitted = self.submit_routed(agent, token, body, run, true).await;
        self.metrics().submitted(started.elapsed());
        submitted
    }

    async fn submit_routed(
        &self,
        agent: &str,
        token: Option<Uuid>,
        body: &Value,
        run: Option<&LeaseRequest>,
        through_gateway: bool,
    ) -> Result<(Submitted, Option<Leased>), ServiceError> {
        let contract = self.contract_of(agent, body, through_gateway).await?;
        let now = self.now();
        let run = run
            .filter(|_| self.is_gateway_tool(&contract.tool.name))
            .map(|run| self.lease_ask(run));
        let (mut contract, mut request_hash) = (contract, request_hash_sha256(body));
        let mut attempts = 0;
        let (routed, stored) = loop {
            let routing = route_proposal(&contract.facts(), &self.policy());
            let grant = match attempts {
                0 | 1 => self.covering_grant(agent, &contract, &routing, now).await?,
                _ => None,
            };
            let mut routed =
                self.route(agent, token, contract, request_hash, routing, grant, now)?;
            routed.lease = (run.as_ref())
                .filter(|_| routed.command.is_some())
                .map(|(_, ask)| Arc::clone(ask));
            let routed = Arc::new(routed);
            match self.store_routed(&routed, now).await {
                // The grant ended between the lookup and the commit: route it again.
                Err(ServiceError::Conflict(Conflict::GrantSpent)) => {
                    attempts += 1;
                    contract = routed.contract.clone();
                    request_hash = routed.request_hash.clone();
                }
                stored => break (routed, stored?),
            }
        };
        if matches!(stored, Stored::Created(..)) {
            self.shadow_decision(|| Some(shadowed_proposal(&routed, now)));
        }
        let (submitted, leased) = match stored {
            Stored::Created(seq, leased) => (
                Submitted::Created(routed.row.record(seq, &routed.routing, &routed.contract)),
                leased,
            ),
            Stored::Replayed(p) => (Submitted::Replayed(*p), None),
        };
        let p = submitted.record();
        if matches!(submitted, Submitted::Created(_)) && p.status == ProposalStatus::Pending {
            self.queue_changed();
        }
        if matches!(submitted, Submitted::Created(_))
            && p.status == ProposalStatus::Accepted
            && leased.is_none()
        {
            self.queue_signal().wake();
        }
        tracing::info!(proposal.id = %p.id, status = %p.status, route = %p.routing.route, "proposal received");
        let leased = (leased.zip(run))
            .map(|(leased, (secret, _))| self.leased(secret, leased.0, leased.1))
            .transpose()?;
        Ok((submitted, leased))
    }

    /// Stores a routed proposal: with the group's other submissions, their rows inserted up
    /// front, unless it uses a grant (whose use may fail, and then nothing of it stays).
    async fn store_routed(
        &self,
        routed: &Arc<Routed>,
        now: time::OffsetDateTime,
    ) -> Result<Stored, ServiceError> {
        let routed = Arc::clone(routed);
        if routed.grant.is_some() {
            return self
                .store()
                .write(move |tx| Box::pin(async move { store_proposal(tx, &routed, now).await }))
                .await?;
        }
        let row = Arc::clone(&routed.row);
        self.store()
            .write_staged(Upfront::Proposal(row), move |tx| {
                let routed = Arc::clone(&routed);
                Box::pin(async move { store_proposal(tx, &routed, now).await })
            })
            .await?
    }

    /// The proposal `body` of agent `agent`, if it keeps the contract (seed 004), names its
    /// sender, claims nothing only the gateway may (unless `through_gateway`), and revises only
    /// what it may; a broken rule is recorded against the agent.
    async fn contract_of(
        &self,
        agent: &str,
        body: &Value,
        through_gateway: bool,
    ) -> Result<ToolProposal, ServiceError> {
        let contract = match ToolProposal::parse(body) {
            Ok(contract) => contract,
            Err(errors) => return Err(self.reject_input(agent, errors).await),
        };
        if contract.proposed_by != agent {
            return Err(ServiceError::Forbidden {
                code: "proposer_mismatch",
                message: format!(
                    "`proposed_by` is `{}` but this token belongs to agent `{agent}`",
                    contract.proposed_by
                ),
            });
        }
        let gateway_only = match through_gateway {
            true => None,
            false => self.gateway_only(&contract),
        };
        if let Some(errors) = gateway_only {
            return Err(self.reject_input(agent, errors).await);
        }
        if let Some(errors) = self.check_revision(agent, &contract).await? {
            return Err(self.reject_input(agent, errors).await);
        }
        Ok(contract)
    }

    /// What a proposal made other than through the MCP gateway may not claim: a gateway
    /// upstream's tool (the gateway makes its proposal from the tool's pinned definition, its
    /// annotations setting the risk), or an idempotency key of the gateway's shape (which
    /// marks a call the built-in gateway executor may run). Else an agent could declare a
    /// destructive upstream tool low-risk and have the gateway run it.
    fn gateway_only(&self, contract: &ToolProposal) -> Option<Vec<crate::domain::FieldError>> {
        let mut errors = Vec::new();
        if self.is_gateway_tool(&contract.tool.name) {
            errors.push(crate::domain::FieldError::new(
                "tool.name",
                "names a tool served through the MCP gateway; call it through /mcp/gateway",
            ));
        }
        if call_prefix(&contract.idempotency_key).is_some() {
            errors.push(crate::domain::FieldError::new(
                "idempotency_key",
                "has the shape of the MCP gateway's keys, which only calls made through \
                 /mcp/gateway carry",
            ));
        }
        (!errors.is_empty()).then_some(errors)
    }

    /// A revision (`supersedes`) must name a proposal of the same agent that a reviewer asked
    /// changes to; what is wrong with it, if anything.
    async fn check_revision(
        &self,
        agent: &str,
        contract: &ToolProposal,
    ) -> Result<Option<Vec<crate::domain::FieldError>>, ServiceError> {
        let Some(first) = contract.supersedes else {
            return Ok(None);
        };
        let error = |message: String| {
            Ok(Some(vec![crate::domain::FieldError::new(
                "supersedes",
                message,
            )]))
        };
        match self.proposal_row(first).await? {
            Some(p) if p.agent == agent && p.status == ProposalStatus::ChangesRequested => Ok(None),
            Some(p) if p.agent == agent => error(format!(
                "names a proposal that is `{}`; only a proposal a reviewer asked changes to can \
                 be revised",
                p.status
            )),
            _ => error("names no proposal of this agent".to_owned()),
        }
    }

    /// Records a contract violation against the agent, by field path only (messages may quote
    /// the rejected values), and returns the error to answer.
    async fn reject_input(
        &self,
        agent: &str,
        errors: Vec<crate::domain::FieldError>,
    ) -> ServiceError {
        let event = AuditEvent::ProposalInputRejected(ProposalInputRejected {
            agent: safe::name(agent),
            fields: safe::bounded(errors.iter().map(|e| audit_safe_name(&e.field).to_owned())),
        });
        match self
            .store()
            .record(vec![(self.now(), Actor::agent(agent), event)])
            .await
        {
            Ok(()) => ServiceError::Invalid(errors),
            Err(e) => e.into(),
        }
    }

    /// Builds what storing `contract`, routed `routing` (and accepted under `grant`, if one
    /// covers it), writes: its row, its audit event and, when it is accepted, its command.
    #[expect(
        clippy::too_many_arguments,
        reason = "one submission's parts, each used once"
    )]
    fn route(
        &self,
        agent: &str,
        token: Option<Uuid>,
        contract: ToolProposal,
        request_hash: String,
        routing: ProposalDecision,
        grant: Option<GrantRecord>,
        now: time::OffsetDateTime,
    ) -> Result<Routed, ServiceError> {
        let (routing, authorization, approver) = match &grant {
            Some(g) => (
                routing.granted(&g.id.to_string(), &g.granted_by),
                AuthorizationState::Confirmed,
                g.granted_by.as_str(),
            ),
            None => (routing, contract.effective_authorization(), "policy"),
        };
        let status = lifecycle::initial_status(routing.route);
        let command = (status == ProposalStatus::Accepted)
            .then(|| self.approved_command(&contract, &request_hash, approver, authorization, now));
        let row = NewProposal::new(&ProposalParts {
            agent,
            token,
            status,
            authorization_state: authorization,
            request_hash: &request_hash,
            routing: &routing,
            contract: &contract,
            now,
            expires_at: lifecycle::expires_at(status, now, routing.expires_after_secs),
        })?;
        let submitted = ProposalSubmitted::new(
            self.store().salt(),
            contract.proposal_id,
            status,
            agent,
            &contract,
            &routing,
            &request_hash,
        )?;
        Ok(Routed {
            row: Arc::new(row),
            submitted_event: PendingEvent::new(
                now,
                Actor::agent(agent),
                AuditEvent::ProposalSubmitted(submitted),
            ),
            agent: agent.to_owned(),
            contract,
            request_hash,
            routing,
            command,
            grant,
            lease: None,
        })
    }
}

/// Stores a routed proposal (its row unless the writer already inserted it with its group's
/// others). A conflict (the idempotency key or the proposal id already taken) is the inner
/// `Err`: it wrote nothing, so the change succeeds and its group runs on, where a failed change
/// would make the writer roll the group back and run the others again.
async fn store_proposal(
    tx: &mut Tx,
    r: &Routed,
    now: time::OffsetDateTime,
) -> Result<Result<Stored, ServiceError>, ServiceError> {
    let inserted = match tx.staged_proposal(&r.row) {
        Some(outcome) => outcome,
        None => proposals::insert(tx.conn(), &r.row).await?,
    };
    match inserted {
        Some(seq) => stored_new(tx, r, seq, now).await,
        None => met_a_row(tx, r, now).await,
    }
}

/// A proposal whose insert met another row: the same request again (answered as it was
/// stored), the same key for another request, the same gateway call still open (answered as
/// that one), or its id taken.
async fn met_a_row(
    tx: &mut Tx,
    r: &Routed,
    now: time::OffsetDateTime,
) -> Result<Result<Stored, ServiceError>, ServiceError> {
    let key = &r.contract.idempotency_key;
    match proposals::by_agent_key(tx.conn(), &r.agent, key).await? {
        Some(p) if p.request_hash == r.request_hash => {
            return Ok(Ok(Stored::Replayed(Box::new(p))));
        }
        Some(_) => return Ok(Err(ServiceError::Conflict(Conflict::IdempotencyKeyReused))),
        None => {}
    }
    let Some(prefix) = call_prefix(key) else {
        return Ok(Err(ServiceError::Conflict(Conflict::ProposalIdTaken)));
    };
    if let Some(p) = proposals::open_call::open_gateway_call(tx.conn(), &r.agent, prefix).await? {
        // The same gateway call is open: this one is that one.
        return Ok(Ok(Stored::Replayed(Box::new(p))));
    }
    // The open call it met has ended since (its run was settled earlier in this group, or on
    // another instance): this call is new after all.
    match proposals::insert(tx.conn(), &r.row).await? {
        Some(seq) => stored_new(tx, r, seq, now).await,
        None => Ok(Err(ServiceError::Conflict(Conflict::ProposalIdTaken))),
    }
}

/// The rest of storing a new proposal whose row was inserted at `seq`: its audit event, a
/// grant's use, and its command (leased at once when asked).
async fn stored_new(
    tx: &mut Tx,
    r: &Routed,
    seq: i64,
    now: time::OffsetDateTime,
) -> Result<Result<Stored, ServiceError>, ServiceError> {
    tx.record_built(r.submitted_event.clone());
    let proposal_id = r.contract.proposal_id;
    let by = match &r.grant {
        Some(g) => {
            grants::use_in(tx, g, proposal_id, now).await?;
            "grant"
        }
        None => "policy",
    };
    let mut leased = None;
    if let Some(command) = &r.command {
        queue_command(tx, proposal_id, command, &Actor::system(by), now).await?;
        if let Some(ask) = &r.lease {
            leased = lease_queued(tx, command.id, ask).await?.map(Box::new);
        }
    }
    Ok(Ok(Stored::Created(seq, leased)))
}

/// Queues the command of an approved or accepted proposal, with its audit event.
pub(super) async fn queue_command(
    tx: &mut Tx,
    proposal_id: Uuid,
    command: &NewQueued,
    actor: &Actor,
    now: time::OffsetDateTime,
) -> Result<(), ServiceError> {
    let row = NewCommand {
        id: command.id,
        proposal_id,
        kind: CommandKind::Action,
        rollback_of: None,
        status: CommandStatus::Queued,
        spec: &command.spec,
        execute_by: Some(command.execute_by),
        now,
    };
    commands::insert(tx.conn(), &row).await?;
    commands::notify_queue(tx.conn()).await?;
    let queued = CommandQueued {
        command_id: command.id,
        facets: CommandFacets::of(&command.spec),
        proposal_id,
        command_kind: CommandKind::Action,
        rollback_of: None,
        request_hash_sha256: command.spec.request_hash_sha256.clone(),
        spec_sha256: spec_sha256(&command.spec)?,
        execute_by: rfc3339(command.execute_by),
    };
    tx.record(now, actor, AuditEvent::CommandQueued(queued));
    Ok(())
}

/// A proposal just routed, as a shadow run routes it again.
fn shadowed_proposal(routed: &Routed, at: time::OffsetDateTime) -> Recorded {
    let r = &routed.routing;
    Recorded {
        kind: DecisionKind::Proposal,
        subject: routed.contract.proposal_id.to_string(),
        at,
        tool: routed.contract.tool.name.clone(),
        agent: routed.contract.proposed_by.clone(),
        was: Outcome::of_proposal(
            r.route,
            &r.rule,
            r.blockers.iter().map(|b| b.code.to_string()).collect(),
        ),
        replay: Replay::Proposal(Box::new(routed.contract.clone())),
    }
}
