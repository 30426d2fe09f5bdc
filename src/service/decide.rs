//! A reviewer's decision: checked against the review rules, then applied atomically — the
//! claim of the pending proposal, the approval (or the quorum still short), the decision, its
//! audit events and, on approval, the command for the executor queue.

use uuid::Uuid;

use super::error::{Conflict, ServiceError};
use super::expire::expire_overdue_in;
use super::grants::NewGrant;
use super::passkeys::StepUp;
use super::services::NewQueued;
use super::services::Services;
use super::submit::queue_command;
use crate::audit::safe::{Salt, TextDigest};
use crate::audit::{
    Actor, ApprovalRecorded, AuditEvent, DecisionRefused, ProposalBrokeGlass, ProposalDecided,
    ProposalEdited, ProposalFacets,
};
use crate::domain::FieldError;
use crate::domain::access::UseCase;
use crate::domain::contract::canonical::request_hash_sha256;
use crate::domain::contract::proposal::ToolProposal;
use crate::domain::contract::vocab::AuthorizationState;
use crate::domain::lifecycle::{
    self, DecisionError, ProposalStatus, ReviewDecision, ReviewVerdict, check_decision,
    check_operator,
};
use crate::domain::notify::{BREAK_GLASS_AUDIENCE, Reason};
use crate::domain::principal::{Person, Principal};
use crate::domain::record::GrantRecord;
use crate::domain::review::break_glass::{self, BreakGlassError};
use crate::domain::review::edit::{self, Edited};
use crate::domain::review::grant::Ask;
use crate::domain::review::{batch, confirm, insight};
use crate::domain::routing::proposal::route_proposal;
use crate::storage::StorageError;
use crate::storage::Tx;
use crate::storage::insights;
use crate::storage::notifications::Notice;
use crate::storage::proposals::{self, DecisionRow, ProposalRecord};
use serde_json::Value;

/// What a decision came to.
#[derive(Debug)]
pub enum Decided {
    /// The approval is recorded; the policy wants more approvers before the proposal moves.
    ApprovalRecorded(ProposalRecord),
    /// The proposal is approved (its command queued) or rejected.
    Final(ProposalRecord),
}

/// A checked decision, ready to apply.
struct Change {
    id: Uuid,
    verdict: ReviewVerdict,
    reviewer: String,
    reason: Option<String>,
    required_approvals: u8,
    command: Option<NewQueued>,
    /// The standing grant made with this approval, if the reviewer asked for one.
    grant: Option<NewGrant>,
    /// An admin approves alone past the quorum.
    break_glass: bool,
    /// The reviewer's edit, if they edited before approving.
    edit: Option<EditToWrite>,
    /// The passkey's proof of the approval, where the policy asks a step-up.
    step_up: Option<StepUp>,
    salt: Salt,
    now: time::OffsetDateTime,
}

/// What a decision brings beyond the verdict: a standing grant made with the approval (its
/// record handed back through the slot), or a break-glass.
enum Extra<'a> {
    None,
    Grant(&'a Ask, &'a mut Option<GrantRecord>),
    BreakGlass,
    Edit(&'a [(String, Value)]),
}

/// A reviewer's edit, checked and ready to write: the edit as stored, and its event.
struct EditToWrite {
    edited: Edited,
    json: String,
    event: ProposalEdited,
}

/// What proves a decision taken on a proposal's own page: the target's name as typed, where
/// approving needs it ([`confirm`]), and the passkey's answer to its step-up challenge (JSON),
/// where the policy asks for one ([`crate::domain::review::step_up`]).
#[derive(Debug, Clone, Copy, Default)]
pub struct Proof<'a> {
    /// The target's name as typed.
    pub typed: Option<&'a str>,
    /// The browser's `PublicKeyCredential` answering the step-up challenge, JSON.
    pub passkey: Option<&'a str>,
}

impl<'a> From<Option<&'a str>> for Proof<'a> {
    /// Only a typed name.
    fn from(typed: Option<&'a str>) -> Self {
        Proof {
            typed,
            passkey: None,
        }
    }
}

/// What applying it did.
enum Applied {
    Recorded(ProposalRecord),
    Final(ProposalRecord),
    /// Its time had run out: it is expired now, never approved.
    Expired,
}

impl Services {
    /// `who` approves or rejects proposal `id`, without a typed confirmation: approving
    /// an action that needs one is refused (see [`Services::decide_confirmed`]).
    pub async fn decide(
        &self,
        who: &Principal,
        id: Uuid,
        verdict: ReviewVerdict,
        reason: Option<&str>,
    ) -> Result<Decided, ServiceError> {
        self.decide_confirmed(who, id, verdict, reason, None).await
    }

    /// `who` approves or rejects proposal `id`; `proof` is the target's name as they typed
    /// it, which approving a high-risk or wide-reaching action needs ([`confirm`]), and the
    /// passkey's answer where the policy asks a step-up.
    pub async fn decide_confirmed<'a>(
        &self,
        who: &Principal,
        id: Uuid,
        verdict: ReviewVerdict,
        reason: Option<&str>,
        proof: impl Into<Proof<'a>>,
    ) -> Result<Decided, ServiceError> {
        let how = How::Alone(proof.into());
        self.decide_as(who, id, verdict, reason, how, Extra::None)
            .await
    }

    /// `who` changes parameter values of proposal `id` (`edits`: JSON pointer and new value)
    /// and approves the edited request ("edit, then approve"). The edit is a new request: its
    /// own hash, which the approval and the command bind to, routed again (a stricter route is
    /// refused, never lightened). Never the tool or the agent, never a parameter added or
    /// removed; refused where the policy says `editable = false` or more than one approver is
    /// needed (ask the agent for changes instead).
    pub async fn edit_and_approve(
        &self,
        who: &Principal,
        id: Uuid,
        edits: &[(String, Value)],
        confirmation: Option<&str>,
    ) -> Result<Decided, ServiceError> {
        let how = How::Alone(confirmation.into());
        let verdict = ReviewVerdict::Approved;
        self.decide_as(who, id, verdict, None, how, Extra::Edit(edits))
            .await
    }

    /// The edited request of `p`, checked: the contract as edited, and the edit to write.
    fn edit_request(
        &self,
        p: &ProposalRecord,
        edits: &[(String, Value)],
    ) -> Result<(ToolProposal, EditToWrite), ServiceError> {
        let refused =
            |code: &'static str, message: String| ServiceError::Forbidden { code, message };
        let tool = &p.contract.tool.name;
        if !self.policy().editable(tool) {
            let why = "the policy does not let this tool's parameters be edited; ask for changes";
            return Err(refused("not_editable", why.to_owned()));
        }
        if p.routing.required_approvals > 1 {
            let why = "it needs more than one approver: ask the agent for changes instead";
            return Err(refused("not_editable", why.to_owned()));
        }
        if self.step_up_needed(p) {
            let why = "its approval is signed with a passkey over the agent's request: ask the \
                       agent for changes instead";
            return Err(refused("not_editable", why.to_owned()));
        }
        let (parameters, changes) =
            edit::apply(&p.contract.parameters, edits).map_err(ServiceError::Invalid)?;
        let mut contract = p.contract.clone();
        contract.parameters = parameters;
        let body = serde_json::to_value(&contract)
            .map_err(|e| ServiceError::Storage(StorageError::Corrupt(e.to_string())))?;
        let request_hash = request_hash_sha256(&body);
        let routing = route_proposal(&contract.facts(), &self.policy());
        if routing.route > p.routing.route || routing.required_approvals > 1 {
            let why = format!(
                "the edited request routes `{}` with {} approvals: the stricter route holds; \
                 ask the agent for changes instead",
                routing.route, routing.required_approvals
            );
            return Err(refused("edit_routes_stricter", why));
        }
        let edited = Edited {
            request_hash,
            changes,
        };
        let facets = ProposalFacets::of(&p.agent, &p.contract);
        let salt = self.store().salt();
        let event = ProposalEdited::new(salt, p.id, facets, &p.request_hash, &edited)?;
        let json = serde_json::to_string(&edited)
            .map_err(|e| ServiceError::Storage(StorageError::Corrupt(e.to_string())))?;
        Ok((
            contract,
            EditToWrite {
                edited,
                json,
                event,
            },
        ))
    }

    /// Whether `who` is offered "edit, then approve" on `p`: they may decide, the policy lets
    /// the tool be edited, and one approval decides it.
    pub fn edit_offered(&self, who: &Principal, p: &ProposalRecord) -> bool {
        self.authorize(who, UseCase::Decide).is_ok()
            && self.policy().editable(&p.contract.tool.name)
            && p.routing.required_approvals <= 1
            && !self.step_up_needed(p)
    }

    /// Whether `who` is offered break-glass on `p`: an admin, on a proposal needing more than
    /// one approver whose tool the policy lets be broken (the decision's own rules are checked
    /// when it is taken).
    pub fn break_glass_offered(&self, who: &Principal, p: &ProposalRecord) -> bool {
        self.authorize(who, UseCase::BreakGlass).is_ok()
            && p.routing.required_approvals > 1
            && self.policy().break_glass_allowed(&p.contract.tool.name)
    }

    /// Admin `who` approves proposal `id` alone although the policy wants more approvers, in
    /// an emergency, saying why in `justification` (at least 20 characters): break-glass
    /// ([`break_glass`]). Every other rule of a decision holds. It is loud: recorded
    /// `proposal.break_glass`, every admin and compliance officer told on every channel, and
    /// counted in `/metrics`.
    pub async fn break_glass<'a>(
        &self,
        who: &Principal,
        id: Uuid,
        justification: &str,
        proof: impl Into<Proof<'a>>,
    ) -> Result<Decided, ServiceError> {
        self.authorize(who, UseCase::BreakGlass)?;
        let how = How::Alone(proof.into());
        let verdict = ReviewVerdict::Approved;
        let justification = Some(justification.trim());
        self.decide_as(who, id, verdict, justification, how, Extra::BreakGlass)
            .await
    }

    /// `who` approves proposal `id` (with the target's name typed, if it needs it) and lets
    /// the same agent's similar calls through for a while, as `ask` says ("approve and allow
    /// similar"): the approval and the grant are one change, so a grant exists only with the
    /// final approval that made it. Refused when the policy does not let it be granted.
    pub async fn approve_and_grant(
        &self,
        who: &Principal,
        id: Uuid,
        reason: Option<&str>,
        confirmation: Option<&str>,
        ask: &Ask,
    ) -> Result<(Decided, GrantRecord), ServiceError> {
        let how = How::Alone(confirmation.into());
        let verdict = ReviewVerdict::Approved;
        let mut made = None;
        let extra = Extra::Grant(ask, &mut made);
        let decided = self.decide_as(who, id, verdict, reason, how, extra).await?;
        let grant = made.ok_or(ServiceError::Conflict(Conflict::AlreadyApproved))?;
        Ok((decided, grant))
    }

    /// `who` takes `verdict` with one `reason` on each of the proposals `ids` (at most
    /// [`batch::MAX_BATCH`]), each as its own decision under every rule, bound to its own
    /// request hash and recorded as its own event. A batch approves or rejects; it approves
    /// only what [`batch::approvable`] allows. Answers each proposal's outcome, in the order
    /// asked (a repeated id once).
    pub async fn decide_batch(
        &self,
        who: &Principal,
        ids: &[Uuid],
        verdict: ReviewVerdict,
        reason: Option<&str>,
    ) -> Result<Vec<(Uuid, Result<Decided, ServiceError>)>, ServiceError> {
        self.authorize(who, UseCase::Decide)?;
        if !matches!(verdict, ReviewVerdict::Approved | ReviewVerdict::Rejected) {
            let rule = "a batch approves or rejects; ask for changes on the proposal's page";
            return Err(ServiceError::Invalid(vec![FieldError::new(
                "verdict", rule,
            )]));
        }
        let mut unique: Vec<Uuid> = Vec::with_capacity(ids.len());
        for id in ids {
            if !unique.contains(id) {
                unique.push(*id);
            }
        }
        if unique.is_empty() || unique.len() > batch::MAX_BATCH {
            let rule = format!("choose 1 to {} proposals", batch::MAX_BATCH);
            return Err(ServiceError::Invalid(vec![FieldError::new("ids", rule)]));
        }
        let mut outcomes = Vec::with_capacity(unique.len());
        for id in unique {
            let decided = self
                .decide_as(who, id, verdict, reason, How::Batch, Extra::None)
                .await;
            outcomes.push((id, decided));
        }
        Ok(outcomes)
    }

    async fn decide_as(
        &self,
        who: &Principal,
        id: Uuid,
        verdict: ReviewVerdict,
        reason: Option<&str>,
        how: How<'_>,
        extra: Extra<'_>,
    ) -> Result<Decided, ServiceError> {
        let (reviewer, p, decision) = self.checked(who, id, verdict, reason, how).await?;
        let step_up = self.step_up(reviewer, &p, &decision, how).await?;
        let now = self.now();
        let (grant, break_glass, edit) = self.extra(who, &p, &decision, extra, now)?;
        let command = (decision.verdict == ReviewVerdict::Approved).then(|| {
            let (contract, hash) = match &edit {
                Some((contract, e)) => (contract, &e.edited.request_hash),
                None => (&p.contract, &p.request_hash),
            };
            let approver = &reviewer.username;
            self.approved_command(contract, hash, approver, AuthorizationState::Confirmed, now)
        });
        let change = Change {
            id,
            verdict: decision.verdict,
            reviewer: reviewer.username.clone(),
            reason: decision.reason,
            required_approvals: p.routing.required_approvals.max(1),
            command,
            grant,
            break_glass,
            edit: edit.map(|(_, e)| e),
            step_up,
            salt: self.store().salt().clone(),
            now,
        };
        let applied = self
            .store()
            .write(move |tx| Box::pin(async move { change.apply(tx).await }))
            .await?;
        self.queue_changed();
        match applied {
            Applied::Recorded(p) => {
                tracing::info!(proposal.id = %id, reviewer = %reviewer.username, "approval recorded; more needed");
                Ok(Decided::ApprovalRecorded(p))
            }
            Applied::Final(p) => {
                if p.status == ProposalStatus::Approved {
                    self.queue_signal().wake();
                }
                if break_glass {
                    self.metrics().broke_glass();
                    tracing::warn!(proposal.id = %id, admin = %reviewer.username, "break-glass: approved alone past the quorum");
                }
                let waited = std::time::Duration::try_from(now - p.created_at).unwrap_or_default();
                self.metrics().decided(p.status.as_str(), waited);
                tracing::info!(proposal.id = %id, reviewer = %reviewer.username, verdict = %verdict, "proposal decided");
                Ok(Decided::Final(p))
            }
            Applied::Expired => Err(ServiceError::Conflict(Conflict::AlreadyDecided(
                ProposalStatus::Expired,
            ))),
        }
    }
}

/// What a decision brings beyond its verdict, checked: the grant to make, a break-glass, the
/// edited request.
type Checked = (Option<NewGrant>, bool, Option<(ToolProposal, EditToWrite)>);

impl Services {
    /// What `extra` asks beside the decision on `p`, checked under its rules.
    fn extra(
        &self,
        who: &Principal,
        p: &ProposalRecord,
        decision: &ReviewDecision,
        extra: Extra<'_>,
        now: time::OffsetDateTime,
    ) -> Result<Checked, ServiceError> {
        Ok(match extra {
            Extra::Grant(ask, made) => {
                let grant = self.new_grant(who, p, ask, now)?;
                *made = Some(grant.grant.clone());
                (Some(grant), false, None)
            }
            Extra::BreakGlass => {
                let allows = self.policy().break_glass_allowed(&p.contract.tool.name);
                let why = decision.reason.as_deref().unwrap_or_default();
                break_glass::check(p.routing.required_approvals, allows, why)
                    .map_err(break_glass_refused)?;
                (None, true, None)
            }
            Extra::Edit(edits) => (None, false, Some(self.edit_request(p, edits)?)),
            Extra::None => (None, false, None),
        })
    }

    /// The passkey's proof of `reviewer`'s approval of `p`, where the policy asks a step-up
    /// (a batch never gets this far: [`batch::approvable`] refuses it).
    async fn step_up(
        &self,
        reviewer: &Person,
        p: &ProposalRecord,
        decision: &ReviewDecision,
        how: How<'_>,
    ) -> Result<Option<StepUp>, ServiceError> {
        match how {
            How::Alone(proof)
                if decision.verdict == ReviewVerdict::Approved && self.step_up_needed(p) =>
            {
                Ok(Some(self.step_up_proof(reviewer, p, proof.passkey).await?))
            }
            _ => Ok(None),
        }
    }

    /// The decision `who` asks for on proposal `id`, under every rule: the table (only people
    /// decide; a role that may not is refused and the refusal recorded), their domains (another
    /// domain's proposal is not found), the review rules, separation of duties (the people who
    /// operate the proposing agent do not approve it) and the typed confirmation.
    async fn checked<'p>(
        &self,
        who: &'p Principal,
        id: Uuid,
        verdict: ReviewVerdict,
        reason: Option<&str>,
        how: How<'_>,
    ) -> Result<(&'p Person, ProposalRecord, ReviewDecision), ServiceError> {
        let Some(reviewer) = who.as_person() else {
            self.authorize(who, UseCase::Decide)?;
            return Err(ServiceError::NotFound);
        };
        let p = self.proposal_row(id).await?.ok_or(ServiceError::NotFound)?;
        if !self.may_see(who, UseCase::ViewProposal, &p).await? {
            return Err(ServiceError::NotFound);
        }
        if self.authorize(who, UseCase::Decide).is_err() {
            let refused = DecisionError::RoleMayNotDecide;
            return Err(self.refuse(reviewer, &p, verdict, refused).await);
        }
        let operators = self.agent_operators(&p.agent).await?;
        let name = reviewer.username.as_str();
        let decision = check_decision(p.status, &p.agent, name, reviewer.role, verdict, reason)
            .and_then(|d| check_operator(&operators, name, d.verdict).map(|()| d))
            .and_then(|d| confirmed(&p, d, how, self.step_up_needed(&p)));
        match decision {
            Ok(decision) => Ok((reviewer, p, decision)),
            // Said first: a second approval is refused whatever was typed.
            Err(DecisionError::Unconfirmed(_)) if self.approved_by(id, name).await? => {
                Err(ServiceError::Conflict(Conflict::AlreadyApproved))
            }
            Err(refused) => Err(self.refuse(reviewer, &p, verdict, refused).await),
        }
    }

    /// Whether `username` already approved proposal `id` (it waits for other approvers).
    async fn approved_by(&self, id: Uuid, username: &str) -> Result<bool, ServiceError> {
        let mut read = self.read().await?;
        let approvals = proposals::approvals(read.conn(), id).await?;
        Ok(approvals.iter().any(|(who, _)| who == username))
    }

    /// Records a refusal that says something about the person (wrong role, own proposal) and
    /// returns the error to answer. Refusals that only mean "too late" are not security events.
    async fn refuse(
        &self,
        reviewer: &Person,
        p: &ProposalRecord,
        verdict: ReviewVerdict,
        refused: DecisionError,
    ) -> ServiceError {
        let code = match refused {
            DecisionError::RoleMayNotDecide => "role_may_not_decide",
            DecisionError::OwnProposal => "own_proposal",
            DecisionError::OperatesAgent => "operates_agent",
            _ => return refused.into(),
        };
        let event = AuditEvent::DecisionRefused(DecisionRefused {
            proposal_id: p.id,
            facets: ProposalFacets::of(&p.agent, &p.contract),
            verdict,
            refused: code,
        });
        let actor = Actor::user(&reviewer.username);
        match self.store().record(vec![(self.now(), actor, event)]).await {
            Ok(()) => refused.into(),
            Err(e) => e.into(),
        }
    }
}

/// A refused break-glass, as the error to answer.
fn break_glass_refused(e: BreakGlassError) -> ServiceError {
    match e {
        BreakGlassError::Justification => {
            ServiceError::Invalid(vec![FieldError::new("justification", e.to_string())])
        }
        BreakGlassError::NotNeeded => ServiceError::Forbidden {
            code: "break_glass_not_needed",
            message: e.to_string(),
        },
        BreakGlassError::PolicyForbids => ServiceError::Forbidden {
            code: "break_glass_forbidden",
            message: e.to_string(),
        },
    }
}

/// How a decision was taken: on the proposal's own page (with what proves it), or in a batch
/// from the queue.
#[derive(Debug, Clone, Copy)]
enum How<'a> {
    Alone(Proof<'a>),
    Batch,
}

/// The decision, if its approval is confirmed as the proposal needs: the target's name typed
/// when approving needs it; in a batch, only an approval that needs nothing more.
fn confirmed(
    p: &ProposalRecord,
    decision: ReviewDecision,
    how: How<'_>,
    step_up: bool,
) -> Result<ReviewDecision, DecisionError> {
    if decision.verdict != ReviewVerdict::Approved {
        return Ok(decision);
    }
    let c = &p.contract;
    let risk = p.routing.effective_risk;
    match how {
        How::Alone(proof) => {
            let expected = confirm::expected(risk, c.blast_radius, &c.target_refs, &c.tool.name);
            confirm::check(expected.as_deref(), proof.typed)?;
        }
        How::Batch => {
            batch::approvable(risk, c.blast_radius, p.routing.required_approvals, step_up)?;
        }
    }
    Ok(decision)
}

impl Change {
    fn reason(&self) -> Option<TextDigest> {
        self.reason.as_deref().map(|r| self.salt.text(r))
    }

    async fn apply(self, tx: &mut Tx) -> Result<Applied, ServiceError> {
        let Some(claimed) = proposals::claim_pending(tx.conn(), self.id, self.now).await? else {
            return self.not_claimed(tx).await;
        };
        let reviewer = Actor::user(&self.reviewer);
        if self.verdict == ReviewVerdict::Approved {
            let inserted =
                proposals::insert_approval(tx.conn(), self.id, &self.reviewer, self.now).await?;
            // Breaking the glass may follow one's own approval that waited for others.
            if !inserted && !self.break_glass {
                return Err(ServiceError::Conflict(Conflict::AlreadyApproved));
            }
            if let Some(step_up) = &self.step_up {
                step_up.write_in(tx, &self.reviewer, self.now).await?;
            }
            let approvals = proposals::count_approvals(tx.conn(), self.id).await?;
            if self.break_glass {
                self.record_break_glass(tx, &claimed, approvals, &reviewer);
            } else if !lifecycle::quorum_met(approvals, self.required_approvals) {
                if self.grant.is_some() {
                    // Never reached: a grant is made only where one approval decides.
                    return Err(ServiceError::Forbidden {
                        code: "not_grantable",
                        message: "it needs more than one approver".to_owned(),
                    });
                }
                let recorded = ApprovalRecorded {
                    proposal_id: self.id,
                    facets: ProposalFacets::of(&claimed.agent, &claimed.contract),
                    approvals,
                    required_approvals: self.required_approvals,
                    reason: self.reason(),
                    request_hash_sha256: claimed.request_hash.clone(),
                };
                tx.record(self.now, &reviewer, AuditEvent::ApprovalRecorded(recorded));
                return Ok(Applied::Recorded(claimed));
            }
        }
        let record = self.record_decision(tx, &reviewer).await?;
        self.count(tx, &record).await?;
        if let Some(command) = &self.command {
            queue_command(tx, self.id, command, &reviewer, self.now).await?;
        }
        if let Some(grant) = &self.grant {
            grant.make_in(tx, &reviewer, self.now).await?;
        }
        Ok(Applied::Final(record))
    }

    /// Counts the final decision on `p` for the insights ([`insight`]).
    async fn count(&self, tx: &mut Tx, p: &ProposalRecord) -> Result<(), ServiceError> {
        let secs = (self.now - p.created_at).whole_seconds();
        let chars = serde_json::to_string(&p.contract).map_or(0, |t| t.chars().count());
        let day = insights::day_of(self.now);
        let approved = self.verdict == ReviewVerdict::Approved;
        let (fast, bucket) = (insight::too_fast(secs, chars), insight::bucket(secs));
        let (who, domain) = (&self.reviewer, &p.contract.domain);
        insights::count_decision(tx.conn(), &day, who, domain, approved, fast, bucket).await?;
        Ok(())
    }

    /// The break-glass event, and the notification to every admin and compliance officer.
    fn record_break_glass(&self, tx: &mut Tx, p: &ProposalRecord, approvals: i64, admin: &Actor) {
        let broke = ProposalBrokeGlass {
            proposal_id: self.id,
            facets: ProposalFacets::of(&p.agent, &p.contract),
            approvals,
            required_approvals: self.required_approvals,
            justification: self.reason().unwrap_or_default(),
            request_hash_sha256: p.request_hash.clone(),
        };
        tx.record(self.now, admin, AuditEvent::ProposalBrokeGlass(broke));
        tx.notify(Notice {
            reason: Reason::BreakGlass,
            proposal: self.id,
            at: self.now,
            audience: Some(BREAK_GLASS_AUDIENCE.to_owned()),
        });
    }

    async fn record_decision(
        &self,
        tx: &mut Tx,
        reviewer: &Actor,
    ) -> Result<ProposalRecord, ServiceError> {
        let row = DecisionRow {
            id: self.id,
            status: self.verdict.status(),
            authorization_state: (self.verdict == ReviewVerdict::Approved)
                .then_some(AuthorizationState::Confirmed),
            verdict: self.verdict,
            reviewer: &self.reviewer,
            reason: self.reason.as_deref(),
            edit: self.edit.as_ref().map(|e| e.json.as_str()),
            now: self.now,
        };
        if let Some(e) = &self.edit {
            tx.record(
                self.now,
                reviewer,
                AuditEvent::ProposalEdited(e.event.clone()),
            );
        }
        let record = proposals::record_decision(tx.conn(), &row).await?;
        let decided = ProposalDecided {
            proposal_id: self.id,
            facets: ProposalFacets::of(&record.agent, &record.contract),
            decision: self.verdict,
            authorization_state: record.authorization_state,
            reason: self.reason(),
            required_approvals: self.required_approvals,
            // An edited request's approval binds to the edited hash.
            request_hash_sha256: (self.edit.as_ref())
                .map_or(&record.request_hash, |e| &e.edited.request_hash)
                .clone(),
        };
        tx.record(self.now, reviewer, AuditEvent::ProposalDecided(decided));
        Ok(record)
    }

    /// Someone decided first, or the proposal's time ran out (then it expires now).
    async fn not_claimed(&self, tx: &mut Tx) -> Result<Applied, ServiceError> {
        match proposals::by_id(tx.conn(), self.id).await? {
            Some(p) if p.status == ProposalStatus::Pending => {
                expire_overdue_in(tx, self.id, self.now).await?;
                Ok(Applied::Expired)
            }
            Some(p) => Err(ServiceError::Conflict(Conflict::AlreadyDecided(p.status))),
            None => Err(ServiceError::NotFound),
        }
    }
}
