//! The queue's housekeeping and its people: the sweep (lapsed leases and timed-out runs are
//! retried or settled per [`crate::domain::command::retry`]; commands past their approval
//! window expire), settling unknown outcomes, rollback tasks, drift, the kill switch, and the
//! wake-up signal long-polling executors wait on.

use std::collections::HashMap;

use time::OffsetDateTime;
use uuid::Uuid;

use super::error::{Conflict, ServiceError};
use super::services::Services;
use crate::audit::rfc3339;
use crate::audit::safe::TextDigest;
use crate::audit::{
    Actor, AuditEvent, CommandExpired, CommandFacets, CommandInterrupted, CommandQueued,
    CommandResolved, ExecutorDrift, ProposalFinished, RollbackDecided, RollbackOpened,
    ToolSwitched,
};
use crate::domain::FieldError;
use crate::domain::access::{Reach, UseCase};
use crate::domain::command::grant::spec_sha256;
use crate::domain::command::retry::{Interruption, Next, RetryRules, SideEffect};
use crate::domain::command::scope::{ToolScope, unreachable_reason};
use crate::domain::command::{CommandKind, CommandStatus, Resolution};
use crate::domain::contract::proposal::RollbackType;
use crate::domain::gateway::call::call_prefix;
use crate::domain::lifecycle::{MAX_REASON, ProposalStatus};
use crate::domain::notify::Reason;
use crate::domain::policy::glob::Glob;
use crate::domain::policy::model::Policy;
use crate::domain::principal::Principal;
use crate::storage::commands::{self, CommandRecord, NewCommand, ProposalSeen, Resolve, Settle};
use crate::storage::notifications::Notice;
use crate::storage::paused::{self, PausedTool};
use crate::storage::{Tx, accounts, proposals};

/// Most lapsed leases settled by one sweep.
const SWEEP_BATCH: i64 = 500;
/// [`SWEEP_BATCH`] as a count of rows.
const BATCH_LEN: usize = SWEEP_BATCH as usize;
/// Most commands shown on a reviewer's list.
pub const ATTENTION_LIMIT: i64 = 200;

/// What the runs page shows, read for one viewer.
#[derive(Debug, Clone)]
pub struct RunsPage {
    /// Commands whose outcome a person must settle, oldest first.
    pub unknown: Vec<CommandRecord>,
    /// Rollback tasks waiting for a reviewer, oldest first.
    pub rollbacks: Vec<CommandRecord>,
    /// Every paused tool pattern.
    pub paused: Vec<PausedTool>,
    /// The intent summaries of those commands' proposals, by proposal id.
    pub summaries: HashMap<Uuid, String>,
}

/// Why a report or a lease was refused as drift.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Drift {
    /// No such command.
    Unknown,
    /// The executor does not hold it (stale or foreign lease token, not leased).
    NotHeld,
    /// Its proposal was never approved.
    NeverApproved,
    /// Its spec no longer matches the approval.
    SpecMismatch,
}

impl Drift {
    pub(super) fn as_str(self) -> &'static str {
        match self {
            Drift::Unknown => "unknown_command",
            Drift::NotHeld => "not_held",
            Drift::NeverApproved => "never_approved",
            Drift::SpecMismatch => "spec_mismatch",
        }
    }
}

/// Records a drift event and answers the error to return (the event commits; nothing else
/// changes).
pub(super) fn drift(
    tx: &mut Tx,
    executor: &str,
    id: Uuid,
    current: Option<&CommandRecord>,
    why: Drift,
    attempted: &'static str,
    now: OffsetDateTime,
) -> ServiceError {
    let event = ExecutorDrift {
        command_id: id.to_string(),
        reason: why.as_str(),
        attempted,
        executor: crate::audit::safe::name(executor),
        command_status: current.map(|c| c.status),
        tool: current.map(|c| crate::audit::safe::name(&c.spec.tool.name)),
    };
    // Refusing to hand out a command is the server's act, not the executor's.
    let actor = if attempted == "lease" {
        Actor::system("lease")
    } else {
        Actor::executor(executor)
    };
    tx.record(now, &actor, AuditEvent::ExecutorDrift(event));
    tracing::warn!(command.id = %id, executor, reason = why.as_str(), attempted, "executor drift refused");
    match why {
        Drift::NeverApproved => ServiceError::Forbidden {
            code: "never_approved",
            message: "this command's proposal was never approved; nothing was recorded".into(),
        },
        _ => drift_conflict(current),
    }
}

/// The conflict a drift answers with.
pub(super) fn drift_conflict(current: Option<&CommandRecord>) -> ServiceError {
    match current {
        None => ServiceError::NotFound,
        Some(c) if c.status != CommandStatus::Leased => {
            ServiceError::Conflict(Conflict::CommandNotLeased(c.status))
        }
        Some(_) => ServiceError::Conflict(Conflict::LeaseTokenMismatch),
    }
}

/// The retry rules for a command under `policy`.
pub(super) fn retry_rules(policy: &Policy, command: &CommandRecord) -> RetryRules {
    RetryRules {
        idempotent: policy.is_idempotent(&command.spec.tool.name),
        retry_policy: command.spec.execution.and_then(|e| e.retry_policy),
    }
}

/// The status and availability [`Next`] means at `now`.
pub(super) fn next_status(next: Next, now: OffsetDateTime) -> (CommandStatus, OffsetDateTime) {
    match next {
        Next::Retry { backoff_ms } => (
            CommandStatus::Queued,
            now + time::Duration::milliseconds(i64::try_from(backoff_ms).unwrap_or(i64::MAX)),
        ),
        Next::End(status) => (status, now),
    }
}

/// What follows a run's end: the proposal takes an action command's outcome, and a rollback
/// task opens when a run that may have touched the world ended badly and the proposal has a
/// rollback plan. A retry (status `queued`) only wakes the queue. `proposal` is what the
/// report's statement saw of the proposal, if it read it (or already moved it), which saves
/// reading it again.
pub(super) async fn after_run(
    tx: &mut Tx,
    command: &CommandRecord,
    actor: &Actor,
    side_effect: Option<SideEffect>,
    proposal: Option<ProposalSeen>,
    now: OffsetDateTime,
) -> Result<(), ServiceError> {
    if command.status == CommandStatus::Queued {
        commands::notify_queue(tx.conn()).await?;
        return Ok(());
    }
    if command.kind != CommandKind::Action {
        return Ok(());
    }
    if let Some(after) = command.status.proposal_status() {
        let moved = match proposal {
            Some(ProposalSeen::Moved(before)) => Some(before),
            Some(ProposalSeen::Read(before)) if before == after => None,
            Some(ProposalSeen::Read(before))
                if proposals::move_status_from(
                    tx.conn(),
                    command.proposal_id,
                    before,
                    after,
                    now,
                )
                .await? =>
            {
                Some(before)
            }
            // Not read with the command, or moved since (by another instance).
            _ => proposals::move_status(tx.conn(), command.proposal_id, after, now).await?,
        };
        if let Some(before) = moved {
            let finished = ProposalFinished {
                proposal_id: command.proposal_id,
                before,
                after,
                facets: CommandFacets::of(&command.spec),
                command_id: command.id,
            };
            tx.record(now, actor, AuditEvent::ProposalFinished(finished));
        }
    }
    let plan = command.spec.rollback_plan.as_ref();
    let may_have_acted = side_effect != Some(SideEffect::None);
    if command.status.opens_rollback()
        && may_have_acted
        && plan.is_some_and(|p| p.kind != RollbackType::None)
        && commands::rollback_for(tx.conn(), command.id)
            .await?
            .is_none()
    {
        open_rollback(tx, command, now).await?;
    }
    Ok(())
}

async fn open_rollback(
    tx: &mut Tx,
    command: &CommandRecord,
    now: OffsetDateTime,
) -> Result<(), ServiceError> {
    let id = Uuid::now_v7();
    let row = NewCommand {
        id,
        proposal_id: command.proposal_id,
        kind: CommandKind::Rollback,
        rollback_of: Some(command.id),
        status: CommandStatus::AwaitingApproval,
        spec: &command.spec,
        execute_by: None,
        now,
    };
    commands::insert(tx.conn(), &row).await?;
    let opened = RollbackOpened {
        command_id: id,
        facets: CommandFacets::of(&command.spec),
        proposal_id: command.proposal_id,
        rollback_of: command.id,
        because: command.status,
    };
    tx.record(
        now,
        &Actor::system("rollback"),
        AuditEvent::RollbackOpened(opened),
    );
    tx.notify(Notice {
        reason: Reason::Rollback,
        proposal: command.proposal_id,
        at: now,
        audience: None,
    });
    Ok(())
}

/// What one sweep did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Swept {
    /// Lapsed or timed-out runs put back in the queue.
    pub retried: usize,
    /// Lapsed or timed-out runs settled (`outcome_unknown`, `timed_out`).
    pub settled: usize,
    /// Commands past their approval window.
    pub expired: usize,
    /// Lapsed runs another instance settled first (counted to know a batch was full).
    pub skipped: usize,
}

impl Services {
    /// Settles lapsed leases and timed-out runs, and expires commands never leased in their
    /// approval window: [`SWEEP_BATCH`] of each per write, and another write while a batch
    /// came back full, so a backlog never holds the writer in one long transaction.
    pub async fn sweep_queue(&self) -> Result<Swept, ServiceError> {
        let now = self.now();
        let mut swept = Swept::default();
        loop {
            let policy = self.policy().clone();
            let batch = self
                .store()
                .write(move |tx| Box::pin(async move { sweep_in(tx, &policy, now).await }))
                .await?;
            let full = batch.expired >= BATCH_LEN
                || batch.retried + batch.settled + batch.skipped >= BATCH_LEN;
            swept.retried += batch.retried;
            swept.settled += batch.settled;
            swept.expired += batch.expired;
            if !full {
                break;
            }
        }
        if swept.retried > 0 {
            self.queue_signal().wake();
        }
        if swept != Swept::default() {
            tracing::info!(
                retried = swept.retried,
                settled = swept.settled,
                expired = swept.expired,
                "queue swept"
            );
        }
        Ok(swept)
    }

    /// Commands a person must settle, oldest first: those of `who`'s domains.
    pub async fn needing_resolution(
        &self,
        who: &Principal,
    ) -> Result<Vec<CommandRecord>, ServiceError> {
        let reach = self.authorize(who, UseCase::ViewRuns)?;
        let mut read = self.read().await?;
        let domains = reach.domains();
        Ok(commands::needing_resolution(read.conn(), domains, ATTENTION_LIMIT).await?)
    }

    /// Rollback tasks waiting for a reviewer, oldest first: those of `who`'s domains.
    pub async fn rollback_tasks(
        &self,
        who: &Principal,
    ) -> Result<Vec<CommandRecord>, ServiceError> {
        let reach = self.authorize(who, UseCase::ViewRuns)?;
        let mut read = self.read().await?;
        Ok(commands::rollback_tasks(read.conn(), reach.domains(), ATTENTION_LIMIT).await?)
    }

    /// The runs page as `who` sees it: the commands they must settle and the rollback tasks
    /// waiting (both of their domains), with their proposals' intents, and the paused tools.
    pub async fn runs_page(&self, who: &Principal) -> Result<RunsPage, ServiceError> {
        let unknown = self.needing_resolution(who).await?;
        let rollbacks = self.rollback_tasks(who).await?;
        let paused = self.paused_tools(who).await?;
        let ids: Vec<Uuid> = (unknown.iter().chain(&rollbacks))
            .map(|c| c.proposal_id)
            .collect();
        let summaries = (self.proposals(&ids).await?.into_iter())
            .map(|p| (p.id, p.contract.intent.summary))
            .collect();
        Ok(RunsPage {
            unknown,
            rollbacks,
            paused,
            summaries,
        })
    }

    /// A command by id, as the runs page holds it: one outside `who`'s domains is not found.
    pub async fn command(
        &self,
        who: &Principal,
        id: Uuid,
    ) -> Result<Option<CommandRecord>, ServiceError> {
        let reach = Within::of(self.authorize(who, UseCase::ViewRuns)?);
        let mut read = self.read().await?;
        let found = commands::by_id(read.conn(), id).await?;
        Ok(found.filter(|c| reach.check(c).is_ok()))
    }

    /// Why proposal `id`'s queued command reaches no executor now (no token's scope or policy
    /// entry lets anyone run it, or its tool is paused); `None` when someone may lease it, when
    /// it has no queued command, or when the proposal is out of `who`'s reach.
    pub async fn waiting_reason(
        &self,
        who: &Principal,
        id: Uuid,
    ) -> Result<Option<String>, ServiceError> {
        if self
            .reachable(who, UseCase::ViewProposal, id)
            .await?
            .is_none()
        {
            return Ok(None);
        }
        let Some(command) = self.command_row(id).await? else {
            return Ok(None);
        };
        if command.status != CommandStatus::Queued {
            return Ok(None);
        }
        let mut read = self.read().await?;
        let tool = &command.spec.tool.name;
        let paused = paused::all(read.conn()).await?;
        if let Some(p) = paused
            .iter()
            .find(|p| Glob::new(&p.pattern).is_ok_and(|g| g.matches(tool)))
        {
            return Ok(Some(format!(
                "`{tool}` is paused (`{}`) by {}",
                p.pattern, p.paused_by
            )));
        }
        let tokens = accounts::executor_scopes(read.conn()).await?;
        let scoped: Vec<(String, Option<ToolScope>)> = tokens
            .into_iter()
            .map(|(name, scope)| (name, scope.and_then(|s| ToolScope::parse_list(&s).ok())))
            .collect();
        Ok(unreachable_reason(
            tool,
            &command.spec.allowed_executors,
            scoped.iter().map(|(n, s)| (n.as_str(), s.as_ref())),
        ))
    }

    /// A reviewer settles a command whose outcome is unknown: it succeeded, it failed, or it
    /// may run once more. Audited with the reason. A command outside `who`'s domains is not
    /// found.
    pub async fn resolve_command(
        &self,
        who: &Principal,
        id: Uuid,
        resolution: Resolution,
        reason: &str,
    ) -> Result<CommandRecord, ServiceError> {
        let reach = Within::of(self.authorize(who, UseCase::ResolveCommand)?);
        let reason = checked_reason(reason, true)?.unwrap_or_default();
        let digest = self.store().salt().text(&reason);
        let now = self.now();
        let by = Actor::of(who);
        let done = self
            .store()
            .write(move |tx| {
                Box::pin(async move {
                    let change = Resolving {
                        id,
                        resolution,
                        by: &by,
                        reason: &reason,
                        digest,
                    };
                    resolve_in(tx, &reach, change, now).await
                })
            })
            .await?;
        if done.status == CommandStatus::Queued {
            self.queue_signal().wake();
        }
        Ok(done)
    }

    /// A reviewer approves (queues) or dismisses a rollback task. A task outside `who`'s
    /// domains is not found.
    pub async fn decide_rollback(
        &self,
        who: &Principal,
        id: Uuid,
        approve: bool,
        reason: Option<&str>,
    ) -> Result<CommandRecord, ServiceError> {
        let reach = Within::of(self.authorize(who, UseCase::DecideRollback)?);
        let reason = checked_reason(reason.unwrap_or_default(), !approve)?;
        let digest = reason.as_deref().map(|r| self.store().salt().text(r));
        let now = self.now();
        let by = Actor::of(who);
        let done = self
            .store()
            .write(move |tx| {
                Box::pin(async move {
                    let reason = reason.as_deref();
                    decide_rollback_in(tx, &reach, id, approve, (&by, reason, digest), now).await
                })
            })
            .await?;
        if approve {
            self.queue_signal().wake();
        }
        Ok(done)
    }

    /// Pauses `pattern` (a tool name, a glob, or `*`) for every executor; `false` if it was
    /// paused already.
    pub async fn pause_tool(&self, who: &Principal, pattern: &str) -> Result<bool, ServiceError> {
        self.switch_tool(who, pattern, true).await
    }

    /// Lets executors lease `pattern` again; `false` if it was not paused.
    pub async fn resume_tool(&self, who: &Principal, pattern: &str) -> Result<bool, ServiceError> {
        self.switch_tool(who, pattern, false).await
    }

    async fn switch_tool(
        &self,
        who: &Principal,
        pattern: &str,
        pause: bool,
    ) -> Result<bool, ServiceError> {
        self.authorize(who, UseCase::SwitchTool)?;
        let actor = &Actor::of(who);
        let glob = Glob::new(pattern.trim())
            .map_err(|m| ServiceError::Invalid(vec![FieldError::new("tool", m)]))?;
        let pattern = glob.as_str().to_owned();
        let now = self.now();
        let actor = actor.clone();
        let changed = self
            .store()
            .write(move |tx| {
                Box::pin(async move {
                    let changed = if pause {
                        paused::pause(tx.conn(), &pattern, &actor.name, now).await?
                    } else {
                        paused::resume(tx.conn(), &pattern).await?
                    };
                    if changed {
                        if !pause {
                            commands::notify_queue(tx.conn()).await?;
                        }
                        let event = ToolSwitched {
                            pattern,
                            paused: pause,
                        };
                        tx.record(now, &actor, AuditEvent::ToolSwitched(event));
                    }
                    Ok::<_, ServiceError>(changed)
                })
            })
            .await?;
        if changed && !pause {
            self.queue_signal().wake();
        }
        Ok(changed)
    }

    /// Every paused tool pattern (shown on the runs page).
    pub async fn paused_tools(&self, who: &Principal) -> Result<Vec<PausedTool>, ServiceError> {
        self.authorize(who, UseCase::ViewRuns)?;
        let mut read = self.read().await?;
        Ok(paused::all(read.conn()).await?)
    }
}

/// The domains a person settling commands is limited to, owned so a write can carry it.
struct Within(Option<Vec<String>>);

impl Within {
    fn of(reach: Reach<'_>) -> Self {
        Self(reach.domains().map(<[String]>::to_vec))
    }

    /// A command outside the domains is not found: it is neither shown nor settled.
    fn check(&self, command: &CommandRecord) -> Result<(), ServiceError> {
        match &self.0 {
            Some(ds) if !Reach::Domains(ds).covers(&command.spec.domain) => {
                Err(ServiceError::NotFound)
            }
            _ => Ok(()),
        }
    }
}

/// A person's settlement of an unknown outcome.
struct Resolving<'a> {
    id: Uuid,
    resolution: Resolution,
    by: &'a Actor,
    reason: &'a str,
    digest: TextDigest,
}

/// A reason, trimmed; `required` ones may not be empty.
fn checked_reason(reason: &str, required: bool) -> Result<Option<String>, ServiceError> {
    let reason = reason.trim();
    if reason.chars().count() > MAX_REASON || (required && reason.is_empty()) {
        return Err(ServiceError::Invalid(vec![FieldError::new(
            "reason",
            format!("is required, 1-{MAX_REASON} characters"),
        )]));
    }
    Ok((!reason.is_empty()).then(|| reason.to_owned()))
}

async fn sweep_in(
    tx: &mut Tx,
    policy: &Policy,
    now: OffsetDateTime,
) -> Result<Swept, ServiceError> {
    let mut swept = Swept::default();
    for command in commands::lapsed(tx.conn(), now, SWEEP_BATCH).await? {
        let timed_out = command.run_deadline.is_some_and(|d| d <= now);
        let interruption = if timed_out {
            Interruption::TimedOut
        } else {
            Interruption::LeaseLapsed
        };
        let next = retry_rules(policy, &command).after(
            interruption,
            u32::try_from(command.attempts).unwrap_or(u32::MAX),
        );
        let (status, available_at) = next_status(next, now);
        let settle = Settle {
            id: command.id,
            status,
            result: None,
            error: None,
            interruption: Some(interruption.as_str()),
            side_effect: None,
            available_at,
            now,
        };
        let Some(ended) = commands::settle_lapsed(tx.conn(), &settle, command.attempts).await?
        else {
            swept.skipped += 1;
            continue;
        };
        let event = CommandInterrupted {
            command_id: ended.id,
            timed_out,
            facets: CommandFacets::of(&ended.spec),
            proposal_id: ended.proposal_id,
            attempt: ended.attempts,
            executor: ended.leased_by.as_deref().map(crate::audit::safe::name),
            after: ended.status,
        };
        let system = Actor::system("queue");
        tx.record(now, &system, AuditEvent::CommandInterrupted(event));
        after_run(tx, &ended, &system, None, None, now).await?;
        if ended.status == CommandStatus::Queued {
            swept.retried += 1;
        } else {
            swept.settled += 1;
        }
    }
    for command in commands::expire_unleased(tx.conn(), now, SWEEP_BATCH).await? {
        let event = CommandExpired {
            command_id: command.id,
            facets: CommandFacets::of(&command.spec),
            proposal_id: command.proposal_id,
            execute_by: command.execute_by.and_then(rfc3339),
        };
        let system = Actor::system("queue");
        tx.record(now, &system, AuditEvent::CommandExpired(event));
        after_run(tx, &command, &system, Some(SideEffect::None), None, now).await?;
        swept.expired += 1;
    }
    Ok(swept)
}

async fn resolve_in(
    tx: &mut Tx,
    within: &Within,
    change: Resolving<'_>,
    now: OffsetDateTime,
) -> Result<CommandRecord, ServiceError> {
    let Resolving {
        id,
        resolution,
        by,
        reason,
        digest,
    } = change;
    let Some(before) = commands::by_id(tx.conn(), id).await? else {
        return Err(ServiceError::NotFound);
    };
    within.check(&before)?;
    let row = Resolve {
        id,
        resolution,
        by: &by.name,
        reason,
        now,
    };
    let Some(done) = commands::resolve(tx.conn(), &row).await? else {
        return Err(ServiceError::Conflict(Conflict::CommandState(
            before.status,
        )));
    };
    let actor = by;
    let event = CommandResolved {
        command_id: id,
        before: before.status,
        facets: CommandFacets::of(&done.spec),
        proposal_id: done.proposal_id,
        resolution,
        reason: digest,
    };
    tx.record(now, actor, AuditEvent::CommandResolved(event));
    if resolution == Resolution::Release {
        release_proposal(tx, &done, actor, now).await?;
    } else {
        after_run(tx, &done, actor, Some(SideEffect::Possible), None, now).await?;
    }
    Ok(done)
}

/// A released action's proposal shows its approval again (`approved` or `accepted`).
async fn release_proposal(
    tx: &mut Tx,
    command: &CommandRecord,
    actor: &Actor,
    now: OffsetDateTime,
) -> Result<(), ServiceError> {
    commands::notify_queue(tx.conn()).await?;
    if command.kind != CommandKind::Action {
        return Ok(());
    }
    let Some(before) = proposals::status_of(tx.conn(), command.proposal_id).await? else {
        return Ok(());
    };
    let after = if command.spec.approved_by == "policy" {
        ProposalStatus::Accepted
    } else {
        ProposalStatus::Approved
    };
    if let Some(open) = open_again(tx, command.proposal_id).await? {
        return Err(ServiceError::Conflict(Conflict::CallOpenAgain(open)));
    }
    proposals::set_status(tx.conn(), command.proposal_id, after, now).await?;
    let event = ProposalFinished {
        proposal_id: command.proposal_id,
        before,
        after,
        facets: CommandFacets::of(&command.spec),
        command_id: command.id,
    };
    tx.record(now, actor, AuditEvent::ProposalFinished(event));
    Ok(())
}

/// Another open copy of gateway call `id`, if it is one: its agent made the same call again
/// after this one's run was cut off, and only one copy may be open, so this one cannot be
/// released to run again while that one is.
async fn open_again(tx: &mut Tx, id: Uuid) -> Result<Option<Uuid>, ServiceError> {
    let Some(p) = proposals::by_id(tx.conn(), id).await? else {
        return Ok(None);
    };
    let Some(prefix) = call_prefix(&p.contract.idempotency_key) else {
        return Ok(None);
    };
    let open = proposals::open_call::open_gateway_call(tx.conn(), &p.agent, prefix).await?;
    Ok(open.map(|o| o.id).filter(|&o| o != id))
}

async fn decide_rollback_in(
    tx: &mut Tx,
    within: &Within,
    id: Uuid,
    approve: bool,
    (actor, reason, digest): (&Actor, Option<&str>, Option<TextDigest>),
    now: OffsetDateTime,
) -> Result<CommandRecord, ServiceError> {
    let Some(task) = commands::by_id(tx.conn(), id).await? else {
        return Err(ServiceError::NotFound);
    };
    if task.kind != CommandKind::Rollback {
        return Err(ServiceError::NotFound);
    }
    within.check(&task)?;
    let by = actor.name.as_str();
    let status = if approve {
        CommandStatus::Queued
    } else {
        CommandStatus::Dismissed
    };
    let Some(done) = commands::decide_rollback(tx.conn(), id, status, by, reason, now).await?
    else {
        return Err(ServiceError::Conflict(Conflict::CommandState(task.status)));
    };
    let event = RollbackDecided {
        command_id: id,
        approved: approve,
        facets: CommandFacets::of(&done.spec),
        proposal_id: done.proposal_id,
        rollback_of: done.rollback_of,
        reason: digest,
    };
    tx.record(now, actor, AuditEvent::RollbackDecided(event));
    if approve {
        commands::notify_queue(tx.conn()).await?;
        let queued = CommandQueued {
            command_id: id,
            facets: CommandFacets::of(&done.spec),
            proposal_id: done.proposal_id,
            command_kind: CommandKind::Rollback,
            rollback_of: done.rollback_of,
            request_hash_sha256: done.spec.request_hash_sha256.clone(),
            spec_sha256: spec_sha256(&done.spec)?,
            execute_by: None,
        };
        tx.record(now, actor, AuditEvent::CommandQueued(queued));
    }
    Ok(done)
}
