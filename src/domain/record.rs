//! The records the use cases answer with: a proposal ([`ProposalRecord`]), its command
//! ([`CommandRecord`]) and an API token's principal ([`TokenRecord`]), as plain data. Storage
//! builds them from its rows and the service hands them on, so the adapters that show them
//! (the API's JSON, the pages) never depend on how a table names its columns. Imports
//! `contract`, `routing`, `lifecycle`, `command` and `principal`; nothing in the domain imports
//! it.

use serde_json::Value;
use time::OffsetDateTime;
use uuid::Uuid;

use crate::domain::command::retry::SideEffect;
use crate::domain::command::{CommandKind, CommandSpec, CommandStatus, Resolution};
use crate::domain::contract::proposal::ToolProposal;
use crate::domain::contract::vocab::AuthorizationState;
use crate::domain::lifecycle::{ProposalStatus, ReviewVerdict};
use crate::domain::principal::TokenKind;
use crate::domain::review::grant::{GrantState, Scope};
use crate::domain::routing::proposal::ProposalDecision as Routing;

/// A proposal as Countersign keeps it.
#[derive(Debug, Clone, PartialEq)]
pub struct ProposalRecord {
    /// Position in arrival order.
    pub seq: i64,
    /// The agent's proposal id.
    pub id: Uuid,
    /// The authenticated agent that submitted it.
    pub agent: String,
    /// Current status.
    pub status: ProposalStatus,
    /// Current effective authorization (`confirmed` once approved).
    pub authorization_state: AuthorizationState,
    /// `sha256` of the canonical request.
    pub request_hash: String,
    /// How it was routed.
    pub routing: Routing,
    /// The validated contract.
    pub contract: ToolProposal,
    /// Arrival time.
    pub created_at: OffsetDateTime,
    /// Last change.
    pub updated_at: OffsetDateTime,
    /// When a pending proposal expires.
    pub expires_at: Option<OffsetDateTime>,
    /// The decision, once taken.
    pub review: Option<Review>,
    /// Its GDPR erasure, once done.
    pub erasure: Option<Erasure>,
}

/// A reviewer's decision.
#[derive(Debug, Clone, PartialEq)]
pub struct Review {
    /// Approved or rejected.
    pub verdict: ReviewVerdict,
    /// Reviewer's username.
    pub decided_by: String,
    /// When.
    pub decided_at: OffsetDateTime,
    /// Reviewer's reason.
    pub reason: Option<String>,
    /// The reviewer's edit of the parameters, if they edited before approving.
    pub edited: Option<crate::domain::review::edit::Edited>,
}

/// Who erased a proposal's personal data, when and why.
#[derive(Debug, Clone, PartialEq)]
pub struct Erasure {
    /// Who.
    pub by: String,
    /// When.
    pub at: OffsetDateTime,
    /// Why.
    pub reason: String,
}

/// A standing grant: a reviewer's approval of one agent's later calls of one tool.
#[derive(Debug, Clone, PartialEq)]
pub struct GrantRecord {
    /// Id (`grant:<id>` is the rule of the proposals it accepts).
    pub id: Uuid,
    /// The one agent it covers.
    pub agent: String,
    /// The tool.
    pub tool: String,
    /// The tool's version.
    pub tool_version: String,
    /// The domain.
    pub domain: String,
    /// The proposal whose approval made it.
    pub proposal_id: Uuid,
    /// The reviewer who made it.
    pub granted_by: String,
    /// The approved parameters.
    pub parameters: serde_json::Map<String, Value>,
    /// What of them may differ.
    pub scope: Scope,
    /// At most this many uses.
    pub max_uses: Option<u32>,
    /// Uses so far.
    pub uses: u32,
    /// Live, used up, expired or revoked.
    pub state: GrantState,
    /// When it was made.
    pub created_at: OffsetDateTime,
    /// When it ends.
    pub expires_at: OffsetDateTime,
    /// When it ended, if it has.
    pub ended_at: Option<OffsetDateTime>,
    /// Who revoked it, if someone did.
    pub ended_by: Option<String>,
}

/// Decisions of one reviewer or one domain in a window (decision insights).
#[derive(Debug, Clone, PartialEq)]
pub struct DecisionGroup {
    /// The reviewer's username, or the domain.
    pub name: String,
    /// Final decisions (approved, rejected, changes requested).
    pub decisions: i64,
    /// Approvals among them.
    pub approved: i64,
    /// Median seconds from submission to decision, as the upper bound of its bucket
    /// ([`crate::domain::review::insight::BUCKETS`]; `i64::MAX`: over a day).
    pub p50: Option<i64>,
    /// 90th percentile of the same.
    pub p90: Option<i64>,
    /// Decisions made faster than the proposal could be read (its submitted text at 50
    /// characters a second, at least 2 s): a rubber-stamp sign.
    pub fast: i64,
}

/// A command in the executor queue.
#[derive(Debug, Clone, PartialEq)]
pub struct CommandRecord {
    /// Id.
    pub id: Uuid,
    /// The proposal it executes (or whose command it rolls back).
    pub proposal_id: Uuid,
    /// The action, or a rollback.
    pub kind: CommandKind,
    /// The command a rollback undoes.
    pub rollback_of: Option<Uuid>,
    /// Status.
    pub status: CommandStatus,
    /// What to run.
    pub spec: CommandSpec,
    /// How many times it was leased.
    pub attempts: i32,
    /// Executor holding or last holding it.
    pub leased_by: Option<String>,
    /// Lease end.
    pub lease_expires_at: Option<OffsetDateTime>,
    /// Not leased before this (a retry's backoff).
    pub available_at: OffsetDateTime,
    /// Not leased for the first time after this (the approval window).
    pub execute_by: Option<OffsetDateTime>,
    /// The running attempt must report by this (`execution.timeout_ms`).
    pub run_deadline: Option<OffsetDateTime>,
    /// How the last attempt ended without success (`failed`, `lease_lapsed`, `timed_out`).
    pub interruption: Option<String>,
    /// What the executor said of the last failure's side effect.
    pub side_effect: Option<SideEffect>,
    /// Success report.
    pub result: Option<Value>,
    /// Failure report.
    pub error: Option<Value>,
    /// A person's settlement of an unknown outcome.
    pub resolution: Option<Resolution>,
    /// Who settled it, or approved or dismissed the rollback task.
    pub resolved_by: Option<String>,
    /// When.
    pub resolved_at: Option<OffsetDateTime>,
    /// Their reason.
    pub resolution_reason: Option<String>,
    /// Queued at.
    pub created_at: OffsetDateTime,
    /// Reported at.
    pub completed_at: Option<OffsetDateTime>,
    /// Whether a lease token is outstanding (the command is held).
    pub held: bool,
}

/// A machine principal behind an API token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenRecord {
    /// Id.
    pub id: Uuid,
    /// Agent or executor.
    pub kind: TokenKind,
    /// Principal name.
    pub name: String,
    /// Revoked tokens authenticate nobody.
    pub revoked: bool,
    /// An executor token's tool scope, as stored (comma-separated globs).
    pub tool_scope: Option<String>,
}

/// A passkey a person registered on their account page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PasskeyRecord {
    /// Id.
    pub id: Uuid,
    /// Whose it is.
    pub username: String,
    /// The name its owner gave it.
    pub name: String,
    /// The WebAuthn credential id, base64url (what the trail records).
    pub credential_id: String,
    /// The relying party's record of it (public key, counter), JSON.
    pub passkey: String,
    /// When it was registered.
    pub created_at: OffsetDateTime,
    /// When it last proved an approval.
    pub last_used_at: Option<OffsetDateTime>,
}

/// A passkey ceremony between its two requests: a registration, or a step-up approval of one
/// proposal's request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CeremonyRecord {
    /// Id.
    pub id: Uuid,
    /// Whose ceremony it is.
    pub username: String,
    /// `register` or `approve`.
    pub purpose: String,
    /// The proposal an approval's challenge binds.
    pub proposal_id: Option<Uuid>,
    /// Its request hash when the challenge was made.
    pub request_hash: Option<String>,
    /// The challenge's nonce, hex.
    pub nonce: Option<String>,
    /// The relying party's state of the ceremony, JSON.
    pub state: String,
    /// When it lapses.
    pub expires_at: OffsetDateTime,
}
