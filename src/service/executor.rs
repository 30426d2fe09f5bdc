//! The executor's side of the queue: lease the oldest command it may run (waiting for one if
//! asked), keep the lease alive, then report on it with the lease token. Each lease carries a
//! signed grant. A report from anyone but the current lease holder changes nothing and is
//! recorded as drift; what follows a failure is [`crate::domain::command::retry`]'s call.

use crate::domain::access::UseCase;
use crate::domain::principal::Principal;
use std::sync::Arc;
use std::time::Duration;

use ed25519_dalek::Signer;
use serde_json::Value;
use time::OffsetDateTime;
use uuid::Uuid;

use super::error::ServiceError;
use super::queue::{Drift, after_run, drift};
use super::services::Services;
use crate::audit::rfc3339;
use crate::audit::{Actor, AuditEvent, CommandFacets, CommandLeased};
use crate::auth::token::{self, Secret};
use crate::domain::command::grant::{GrantClaims, spec_sha256};
use crate::domain::command::retry::{Interruption, SideEffect};
use crate::domain::command::scope::ToolScope;
use crate::domain::command::{CommandKind, CommandStatus, Outcome};
use crate::domain::contract::canonical::Uncanonical;
use crate::domain::lifecycle::ProposalStatus;
use crate::storage::commands::{
    self, Approval, CommandRecord, LeaseAsk, ProposalSeen, Settle, Success,
};
use crate::storage::{BoxFuture, Tx, Upfront};

/// Most commands refused at one lease for a spec that no longer matches its approval, before
/// the lease answers "nothing for you now".
const MAX_DRIFTED_PER_LEASE: usize = 8;
/// How often a waiting lease looks again even without a wake-up (retries whose backoff ends).
const WAIT_TICK: Duration = Duration::from_secs(1);

/// A signed grant: the claims and the server's Ed25519 signature over their canonical JSON.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Grant {
    /// What it vouches for.
    #[serde(flatten)]
    pub claims: GrantClaims,
    /// Ed25519 signature over `JCS(claims)`, hex.
    pub signature: String,
}

/// A command handed to an executor.
pub struct Leased {
    /// The command.
    pub command: CommandRecord,
    /// The lease token every report must present; shown once.
    pub lease_token: Secret,
    /// When the lease ends.
    pub lease_expires_at: OffsetDateTime,
    /// The signed grant.
    pub grant: Grant,
}

/// What an executor asks of a lease.
pub struct LeaseRequest {
    /// Executor name.
    pub executor: String,
    /// Its token's tool scope.
    pub scope: Option<ToolScope>,
    /// Tools it asks for this time.
    pub wanted: Option<ToolScope>,
    /// Lease length.
    pub lease_seconds: u64,
    /// How long to wait for a command when none is ready.
    pub wait: Duration,
}

/// An executor's report.
pub struct Report {
    /// The command.
    pub command_id: Uuid,
    /// The lease token it was handed.
    pub lease_token: String,
    /// Succeeded or failed.
    pub outcome: Outcome,
    /// The `result` or `error` body.
    pub body: Value,
    /// What a failure did to the world (`possible` when not said).
    pub side_effect: SideEffect,
}

fn seconds(s: u64) -> time::Duration {
    time::Duration::seconds(i64::try_from(s).unwrap_or(i64::MAX))
}

impl Services {
    /// The Ed25519 key that verifies grants, hex.
    pub fn grant_public_key(&self) -> String {
        hex::encode(self.grant_key.verifying_key().to_bytes())
    }

    fn sign_grant(&self, claims: GrantClaims) -> Result<Grant, Uncanonical> {
        let signature = self.grant_key.sign(&claims.message()?);
        Ok(Grant {
            claims,
            signature: hex::encode(signature.to_bytes()),
        })
    }

    /// Leases the oldest command the executor may run, waiting up to `request.wait` for one.
    /// `who` must be the executor the request names.
    pub async fn lease(
        &self,
        who: &Principal,
        request: &LeaseRequest,
    ) -> Result<Option<Leased>, ServiceError> {
        if self.executor_of(who, UseCase::Execute)? != request.executor {
            return Err(ServiceError::NotFound);
        }
        let until = tokio::time::Instant::now() + request.wait;
        loop {
            let mut woken = self.queue_signal().subscribe();
            if let Some(leased) = self.lease_once(request).await? {
                return Ok(Some(leased));
            }
            let now = tokio::time::Instant::now();
            if now >= until {
                return Ok(None);
            }
            let nap = (until - now).min(WAIT_TICK);
            tokio::select! {
                _ = woken.changed() => {}
                () = tokio::time::sleep(nap) => {}
            }
        }
    }

    async fn lease_once(&self, request: &LeaseRequest) -> Result<Option<Leased>, ServiceError> {
        let (secret, lease) = self.lease_ask(request);
        let upfront = Upfront::Claim(Arc::clone(&lease));
        let taken = self
            .store()
            .write_staged(upfront, move |tx| {
                let lease = Arc::clone(&lease);
                Box::pin(async move { take_lease(tx, &lease).await })
            })
            .await?;
        taken
            .map(|(command, until)| self.leased(secret, command, until))
            .transpose()
    }

    /// A lease's ask of the writer, and the token it will hand over.
    pub(super) fn lease_ask(&self, request: &LeaseRequest) -> (Secret, Arc<LeaseAsk>) {
        let secret = token::new_lease_token();
        let now = self.now();
        let lease = Arc::new(LeaseAsk {
            executor: request.executor.clone(),
            scope: request.scope.as_ref().map(ToolScope::patterns),
            wanted: request.wanted.as_ref().map(ToolScope::patterns),
            lease_token_hash: secret.hash(),
            now,
            expires_at: now + seconds(request.lease_seconds),
        });
        (secret, lease)
    }

    /// A command the writer leased, handed over with its token and signed grant (an error if
    /// the grant cannot be written: never a grant signed over something else).
    pub(super) fn leased(
        &self,
        lease_token: Secret,
        command: CommandRecord,
        lease_expires_at: OffsetDateTime,
    ) -> Result<Leased, ServiceError> {
        self.metrics().leased();
        tracing::info!(command.id = %command.id, proposal.id = %command.proposal_id, attempt = command.attempts, "command leased");
        let expires_at = rfc3339(lease_expires_at).ok_or_else(|| {
            Uncanonical(format!("lease end {lease_expires_at} has no RFC 3339 form"))
        })?;
        let claims = GrantClaims::new(
            command.id,
            command.kind.as_str(),
            &command.spec,
            u32::try_from(command.attempts).unwrap_or(0),
            expires_at,
        )?;
        Ok(Leased {
            command,
            lease_token,
            lease_expires_at,
            grant: self.sign_grant(claims)?,
        })
    }

    /// Extends the lease `executor` holds on command `id` by `lease_seconds` from now (never
    /// past the run's `execution.timeout_ms`).
    pub async fn heartbeat(
        &self,
        who: &Principal,
        id: Uuid,
        lease_token: &str,
        lease_seconds: u64,
    ) -> Result<CommandRecord, ServiceError> {
        let executor = self.executor_of(who, UseCase::Execute)?;
        let now = self.now();
        let executor = executor.to_owned();
        let token_hash = token::hash(lease_token);
        self.store()
            .write(move |tx| {
                Box::pin(async move {
                    let Some(current) = commands::by_id(tx.conn(), id).await? else {
                        let refused =
                            drift(tx, &executor, id, None, Drift::Unknown, "heartbeat", now);
                        return Ok::<_, ServiceError>(Err(refused));
                    };
                    let wanted = now + seconds(lease_seconds);
                    let until = current.run_deadline.map_or(wanted, |d| d.min(wanted));
                    let extended =
                        commands::extend_lease(tx.conn(), id, &executor, &token_hash, until, now)
                            .await?;
                    Ok(match extended {
                        Some(c) => Ok(c),
                        None => Err(drift(
                            tx,
                            &executor,
                            id,
                            Some(&current),
                            Drift::NotHeld,
                            "heartbeat",
                            now,
                        )),
                    })
                })
            })
            .await?
    }

    /// Records `executor`'s report on a command it holds; what follows a failure (retry,
    /// `failed`, `outcome_unknown`, a rollback task) is decided by the retry rules.
    pub async fn report(
        &self,
        who: &Principal,
        report: Report,
    ) -> Result<CommandRecord, ServiceError> {
        let executor = self.executor_of(who, UseCase::Execute)?;
        let outcome = report.outcome;
        let inputs = self.report_inputs(executor, report);
        let result = match inputs.success.clone() {
            Some(success) => {
                self.store()
                    .write_staged(Upfront::Success(success), report_change(inputs))
                    .await?
            }
            None => self.store().write_repeatable(report_change(inputs)).await?,
        };
        let command = result?;
        self.reported(&command, outcome);
        Ok(command)
    }

    /// Records `executor`'s success report and, in the same transaction and only if the
    /// report is taken, leases its next command as `next` asks (without waiting: `next.wait`
    /// is not used). An executor's loop so makes one request per command, not two; the writer
    /// settles a group's such reports together and leases for those that settled together (in
    /// the same statement on PostgreSQL, one more on SQLite).
    /// Answers the settled command and the next lease, if a command was ready.
    pub async fn report_and_lease(
        &self,
        who: &Principal,
        report: Report,
        next: &LeaseRequest,
    ) -> Result<(CommandRecord, Option<Leased>), ServiceError> {
        let executor = self.executor_of(who, UseCase::Execute)?;
        let inputs = self.report_inputs(executor, report);
        let Some(success) = inputs.success.clone() else {
            return Err(ServiceError::Invalid(vec![crate::domain::FieldError::new(
                "next",
                "only a success report leases the next command",
            )]));
        };
        let (secret, lease) = self.lease_ask(next);
        let upfront = Upfront::SuccessThenClaim(success, Arc::clone(&lease));
        let written = self
            .store()
            .write_staged(upfront, move |tx| {
                let (inputs, lease) = (Arc::clone(&inputs), Arc::clone(&lease));
                Box::pin(async move {
                    let command = match write_report(tx, &inputs).await? {
                        Ok(command) => command,
                        Err(refused) => return Ok(Err(refused)),
                    };
                    let next = take_lease(tx, &lease).await?;
                    Ok::<_, ServiceError>(Ok((command, next)))
                })
            })
            .await?;
        let (command, next) = written?;
        self.reported(&command, Outcome::Succeeded);
        let next = (next.map(|(leased, until)| self.leased(secret, leased, until))).transpose()?;
        Ok((command, next))
    }

    /// What the writer needs to record `executor`'s `report`.
    fn report_inputs(&self, executor: &str, report: Report) -> Arc<ReportInputs> {
        let now = self.now();
        // A success is settled in one statement, together with the group's other successes.
        let success = (report.outcome == Outcome::Succeeded).then(|| {
            Arc::new(Success {
                id: report.command_id,
                result: report.body.clone(),
                executor: executor.to_owned(),
                lease_token_hash: token::hash(&report.lease_token),
                now,
            })
        });
        let gateway = executor == crate::domain::gateway::GATEWAY_EXECUTOR;
        let digest = BodyDigest::of(&report.body, gateway);
        Arc::new(ReportInputs {
            executor: executor.to_owned(),
            digest,
            report,
            success,
            policy: self.policy(),
            now,
        })
    }

    /// After a report was taken: wakes the executors if it queued the command again.
    fn reported(&self, command: &CommandRecord, outcome: Outcome) {
        if command.status == CommandStatus::Queued {
            self.queue_signal().wake();
        }
        self.metrics().reported(command.status.as_str());
        tracing::info!(command.id = %command.id, outcome = %outcome, status = %command.status, "command reported");
    }
}

/// Claims the next command (the one the writer claimed for this lease with its group's
/// others, if it did); refuses (and records as drift) any whose spec no longer hashes to what
/// was approved. Answers the command and its lease end.
async fn take_lease(
    tx: &mut Tx,
    lease: &Arc<LeaseAsk>,
) -> Result<Option<(CommandRecord, OffsetDateTime)>, ServiceError> {
    for _ in 0..MAX_DRIFTED_PER_LEASE {
        let claimed = match tx.staged_claim(lease) {
            Some(staged) => staged,
            None => commands::claim_next(tx.conn(), lease).await?,
        };
        let Some(claimed) = claimed else {
            return Ok(None);
        };
        if let Some(taken) = vetted(tx, claimed, lease).await? {
            return Ok(Some(taken));
        }
    }
    Ok(None)
}

/// Leases command `id` alone, just queued in this transaction, as `lease` asks (an accepted
/// gateway call, run by the built-in executor where it was submitted); `None` if the ask may
/// not lease it now (a paused tool, say) or it is not what was approved.
pub(super) async fn lease_queued(
    tx: &mut Tx,
    id: Uuid,
    lease: &LeaseAsk,
) -> Result<Option<(CommandRecord, OffsetDateTime)>, ServiceError> {
    match commands::claim_queued(tx.conn(), id, lease).await? {
        Some(claimed) => vetted(tx, claimed, lease).await,
        None => Ok(None),
    }
}

/// A claimed command, leased, with its lease's end, if it is exactly what was approved; else
/// it is refused (ended, the drift recorded) and `None`.
async fn vetted(
    tx: &mut Tx,
    claimed: commands::Claimed,
    lease: &LeaseAsk,
) -> Result<Option<(CommandRecord, OffsetDateTime)>, ServiceError> {
    let command = claimed.command;
    // What was approved: the spec hash its `command.queued` event recorded, committed or
    // (queued earlier in this very group) still pending on the transaction. A command with
    // no such event never went through an approval (a row written into the database): it
    // never runs. One queued before events carried the hash is let through, as before.
    let approved = match claimed.approval {
        Approval::Recorded(h) => Some(h),
        Approval::Unhashed => None,
        Approval::Missing => {
            let id = command.id.to_string();
            match tx.recorded("command.queued", "command", &id) {
                Some(d) => d["spec_sha256"].as_str().map(str::to_owned),
                None => {
                    refuse_drifted(tx, &command, lease, Drift::NeverApproved).await?;
                    return Ok(None);
                }
            }
        }
    };
    // A spec with no canonical form has no hash: it cannot be what was approved.
    let why = approved
        .is_some_and(|h| !spec_sha256(&command.spec).is_ok_and(|now| now == h))
        .then_some(Drift::SpecMismatch);
    if let Some(why) = why {
        refuse_drifted(tx, &command, lease, why).await?;
        return Ok(None);
    }
    let mut expires_at = lease.expires_at;
    if let Some(ms) = command.spec.execution.and_then(|e| e.timeout_ms) {
        let deadline =
            lease.now + time::Duration::milliseconds(i64::try_from(ms).unwrap_or(i64::MAX));
        expires_at = expires_at.min(deadline);
        commands::set_run_deadline(tx.conn(), command.id, deadline, expires_at).await?;
    }
    let leased = CommandLeased {
        command_id: command.id,
        facets: CommandFacets::of(&command.spec),
        proposal_id: command.proposal_id,
        attempt: command.attempts,
        lease_expires_at: rfc3339(expires_at),
    };
    tx.record(
        lease.now,
        &Actor::executor(&lease.executor),
        AuditEvent::CommandLeased(leased),
    );
    Ok(Some((command, expires_at)))
}

/// A command whose stored spec differs from what was approved, or that has no approval on
/// record, never runs: it ends `failed` (nothing ran), and the drift is recorded (`why`).
async fn refuse_drifted(
    tx: &mut Tx,
    command: &CommandRecord,
    lease: &LeaseAsk,
    why: Drift,
) -> Result<(), ServiceError> {
    let settle = Settle {
        id: command.id,
        status: CommandStatus::Failed,
        result: None,
        error: None,
        interruption: Some(why.as_str()),
        side_effect: Some(SideEffect::None),
        available_at: lease.now,
        now: lease.now,
    };
    let Some(ended) = commands::settle_lapsed(tx.conn(), &settle, command.attempts).await? else {
        return Ok(());
    };
    let _refused = drift(
        tx,
        &lease.executor,
        command.id,
        Some(command),
        why,
        "lease",
        lease.now,
    );
    // A command that was never approved says nothing about its proposal's fate: the proposal
    // (pending, perhaps, and genuine) stays as it is.
    if why != Drift::NeverApproved {
        after_run(tx, &ended, &Actor::system("lease"), None, None, lease.now).await?;
    }
    tracing::error!(command.id = %command.id, reason = why.as_str(), "command spec does not match an approval; refused");
    Ok(())
}

/// A report's values, owned so the write closure can hold them.
struct ReportInputs {
    executor: String,
    report: Report,
    /// The body's size and hash, for the trail (never its content).
    digest: BodyDigest,
    /// A success, as the writer may settle it with its group's others.
    success: Option<Arc<Success>>,
    policy: Arc<crate::domain::Policy>,
    now: OffsetDateTime,
}

/// What writing a report answers: the command, or why the report changed nothing (a drift,
/// recorded).
type ReportWritten = Result<Result<CommandRecord, ServiceError>, ServiceError>;

/// The write of a report, to run (perhaps again) on the writer.
fn report_change(
    inputs: Arc<ReportInputs>,
) -> impl for<'t> Fn(&'t mut Tx) -> BoxFuture<'t, ReportWritten> + Send + 'static {
    move |tx| {
        let inputs = Arc::clone(&inputs);
        Box::pin(async move { write_report(tx, &inputs).await })
    }
}

/// What a report attempted, as drift names it.
fn attempted(outcome: Outcome) -> &'static str {
    match outcome {
        Outcome::Succeeded => "complete",
        Outcome::Failed => "fail",
    }
}

async fn write_report(tx: &mut Tx, inputs: &ReportInputs) -> ReportWritten {
    let ReportInputs {
        executor,
        report,
        digest,
        success,
        policy,
        now,
    } = inputs;
    let (executor, now) = (executor.as_str(), *now);
    let attempted = attempted(report.outcome);
    let id = report.command_id;
    let actor = Actor::executor(executor);
    if let Some(success) = success
        && let Some(command) = write_success(tx, &actor, (report, digest), success, now).await?
    {
        return Ok(Ok(command));
    }
    // A success's token was hashed when it was handed over.
    let token_hash = success.as_ref().map_or_else(
        || token::hash(&report.lease_token),
        |s| s.lease_token_hash.clone(),
    );
    // A failure, or a success that did not settle: read the command, to follow the retry
    // rules or to name what is wrong with the report.
    let Some((current, proposal)) = commands::with_proposal_status(tx.conn(), id).await? else {
        return Ok(Err(drift(
            tx,
            executor,
            id,
            None,
            Drift::Unknown,
            attempted,
            now,
        )));
    };
    if current.kind == CommandKind::Action
        && !proposal.is_some_and(ProposalStatus::is_executable)
        && current.status == CommandStatus::Leased
    {
        return Ok(Err(drift(
            tx,
            executor,
            id,
            Some(&current),
            Drift::NeverApproved,
            attempted,
            now,
        )));
    }
    let settle = settle_report(policy, &current, report, now);
    let Some(command) =
        commands::settle_reported(tx.conn(), &settle, executor, &token_hash).await?
    else {
        return Ok(Err(drift(
            tx,
            executor,
            id,
            Some(&current),
            Drift::NotHeld,
            attempted,
            now,
        )));
    };
    let side_effect = settle.side_effect;
    let late = current.lease_expires_at.is_some_and(|t| t < now);
    record_reported(
        tx,
        &command,
        (report, digest),
        late,
        side_effect,
        &actor,
        now,
    );
    let proposal = proposal.map(ProposalSeen::Read);
    after_run(tx, &command, &actor, side_effect, proposal, now).await?;
    Ok(Ok(command))
}

/// A success report's common case, in one statement ([`commands::settle_succeeded`], or the
/// writer's for its group); `None` if it did not settle so, and the full path must read the
/// command to say why.
async fn write_success(
    tx: &mut Tx,
    actor: &Actor,
    report: (&Report, &BodyDigest),
    success: &Arc<Success>,
    now: OffsetDateTime,
) -> Result<Option<CommandRecord>, ServiceError> {
    let settled = match tx.staged_success(success) {
        Some(staged) => staged,
        None => commands::settle_succeeded(tx.conn(), success).await?,
    };
    let Some((command, proposal)) = settled else {
        return Ok(None);
    };
    // The lease's end is as it was: settling does not touch it.
    let late = command.lease_expires_at.is_some_and(|t| t < now);
    record_reported(tx, &command, report, late, None, actor, now);
    after_run(tx, &command, actor, None, proposal, now).await?;
    Ok(Some(command))
}

/// A report body's size (bytes of its JSON) and SHA-256: what the trail keeps of a result.
#[derive(Debug, Clone)]
struct BodyDigest {
    bytes: usize,
    sha256: String,
}

impl BodyDigest {
    /// The size and hash of `body`; of the whole result, for a result the built-in gateway
    /// executor cut (`gateway`: its marker says; no other executor's claim is taken).
    fn of(body: &Value, gateway: bool) -> Self {
        let whole = (body.get("_meta"))
            .and_then(|m| m.get(crate::domain::gateway::TRUNCATED))
            .filter(|_| gateway)
            .and_then(|m| {
                let bytes = usize::try_from(m.get("bytes")?.as_u64()?).ok()?;
                let sha256 = m.get("sha256")?.as_str()?.to_owned();
                Some(BodyDigest { bytes, sha256 })
            });
        whole.unwrap_or_else(|| {
            let text = body.to_string();
            BodyDigest {
                bytes: text.len(),
                sha256: crate::domain::contract::canonical::sha256_hex(text.as_bytes()),
            }
        })
    }
}

/// Records `command.succeeded` / `command.failed` for a report that settled `command`.
fn record_reported(
    tx: &mut Tx,
    command: &CommandRecord,
    (report, digest): (&Report, &BodyDigest),
    late: bool,
    side_effect: Option<SideEffect>,
    actor: &Actor,
    now: OffsetDateTime,
) {
    let event = crate::audit::CommandReported {
        command_id: command.id,
        outcome: report.outcome,
        facets: CommandFacets::of(&command.spec),
        proposal_id: command.proposal_id,
        attempt: command.attempts,
        late,
        side_effect,
        after: command.status,
        body_bytes: digest.bytes,
        body_sha256: digest.sha256.clone(),
    };
    tx.record(now, actor, AuditEvent::CommandReported(event));
}

/// How `report` settles the command `current`: its body as the result or the error, and what
/// follows ([`what_follows`]).
fn settle_report<'r>(
    policy: &crate::domain::policy::model::Policy,
    current: &CommandRecord,
    report: &'r Report,
    now: OffsetDateTime,
) -> Settle<'r> {
    let (status, available_at, interruption) = what_follows(policy, current, report, now);
    let (result, error) = match report.outcome {
        Outcome::Succeeded => (Some(&report.body), None),
        Outcome::Failed => (None, Some(&report.body)),
    };
    Settle {
        id: report.command_id,
        status,
        result,
        error,
        interruption,
        side_effect: (report.outcome == Outcome::Failed).then_some(report.side_effect),
        available_at,
        now,
    }
}

/// The status a report sets, when the command may be leased again, and how the attempt ended:
/// success ends it; a failure follows the retry rules.
fn what_follows(
    policy: &crate::domain::policy::model::Policy,
    current: &CommandRecord,
    report: &Report,
    now: OffsetDateTime,
) -> (CommandStatus, OffsetDateTime, Option<&'static str>) {
    match report.outcome {
        Outcome::Succeeded => (CommandStatus::Succeeded, now, None),
        Outcome::Failed => {
            let next = super::queue::retry_rules(policy, current).after(
                Interruption::Failed(report.side_effect),
                u32::try_from(current.attempts).unwrap_or(u32::MAX),
            );
            let (status, available_at) = super::queue::next_status(next, now);
            (status, available_at, Some("failed"))
        }
    }
}
