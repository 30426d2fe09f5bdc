//! Each kind of audit event and its payload. A payload declares its own row shape through
//! [`Payload`] (kind, subject, status change), next to its struct; [`AuditEvent::into_row`] is
//! the one place an event becomes a row.
//!
//! Payload fields named `agent`, `tool`, `domain`, `risk` and `decision` are the trail's
//! *facets*: storage copies them into indexed columns the compliance pages filter by, and
//! `audit verify` checks the copies. Free text and parameter values never appear: see
//! [`super::safe`].

mod account;
mod check;
mod command;
mod gateway;
mod grant;
mod passkey;
mod payload;
mod policy;
mod proposal;

pub use account::*;
pub use check::*;
pub use command::*;
pub use gateway::*;
pub use grant::*;
pub use passkey::*;
pub use payload::Payload;
pub use policy::*;
pub use proposal::*;

use crate::audit::row::{EventRow, details};
use crate::domain::contract::canonical::Uncanonical;

/// Builds the row of a payload.
fn row<P: Payload>(p: &P) -> Result<EventRow, Uncanonical> {
    let (subject_type, subject_id) = p.subject();
    let (before_status, after_status) = p.change();
    Ok(EventRow {
        kind: p.kind(),
        subject_type,
        subject_id,
        before_status,
        after_status,
        details: details(p)?,
    })
}

macro_rules! audit_events {
    ($( $(#[$doc:meta])* $variant:ident ),* $(,)?) => {
        /// Everything the audit trail records.
        #[derive(Debug, Clone, PartialEq)]
        pub enum AuditEvent {
            $( $(#[$doc])* $variant($variant), )*
        }

        impl AuditEvent {
            /// The event as a row: its kind, subject, status change and details; an error if
            /// its payload does not serialise (its row would say nothing true).
            pub fn into_row(self) -> Result<EventRow, Uncanonical> {
                match &self {
                    $( AuditEvent::$variant(p) => row(p), )*
                }
            }
        }
    };
}

audit_events! {
    /// An agent's proposal was received and routed (`proposal.submitted`).
    ProposalSubmitted,
    /// A submission broke the contract; only the broken field paths are kept
    /// (`proposal.rejected_input`, recorded against the agent).
    ProposalInputRejected,
    /// One approval of several required (`proposal.approval_recorded`).
    ApprovalRecorded,
    /// A reviewer's final decision (`proposal.approved` / `proposal.rejected`).
    ProposalDecided,
    /// A reviewer changed parameter values before approving (`proposal.edited`).
    ProposalEdited,
    /// An admin approved alone past the policy's quorum (`proposal.break_glass`).
    ProposalBrokeGlass,
    /// A decision the rules refused: wrong role, own proposal (`proposal.decision_refused`).
    DecisionRefused,
    /// Nobody decided in time (`proposal.expired`).
    ProposalExpired,
    /// Nobody decided yet: the next tier was told (`proposal.escalated`).
    ProposalEscalated,
    /// A GDPR or HIPAA proposal was opened (`proposal.viewed`).
    ProposalViewed,
    /// A reviewer revealed a proposal's withheld personal data
    /// (`proposal.personal_data_revealed`).
    PersonalDataRevealed,
    /// A proposal's personal data was erased (`proposal.erased`).
    ProposalErased,
    /// An approved or accepted proposal's command entered the queue (`command.queued`).
    CommandQueued,
    /// An executor leased a command (`command.leased`).
    CommandLeased,
    /// An executor reported on its command (`command.succeeded` / `command.failed`).
    CommandReported,
    /// The proposal took its command's outcome (`proposal.succeeded`, `.failed`,
    /// `.outcome_unknown`, `.timed_out`, `.expired`, `.released`).
    ProposalFinished,
    /// A lease lapsed or a run timed out (`command.lease_lapsed` / `command.timed_out`).
    CommandInterrupted,
    /// A command was not leased within its approval window (`command.expired`).
    CommandExpired,
    /// A person settled an unknown outcome (`command.resolved`).
    CommandResolved,
    /// A rollback task was opened (`command.rollback_opened`).
    RollbackOpened,
    /// A reviewer approved or dismissed a rollback task.
    RollbackDecided,
    /// An executor's report or a lease was refused as drift (`executor.drift`).
    ExecutorDrift,
    /// An admin paused or resumed a tool (`tool.paused` / `tool.resumed`).
    ToolSwitched,
    /// A pre-tool-check was answered (`pre_tool_check.decided`).
    PreToolCheckDecided,
    /// A pre-tool-check event broke the contract (`pre_tool_check.rejected`).
    PreToolCheckRejected,
    /// An account was created (`user.created`).
    UserCreated,
    /// An API token was created (`token.created`).
    TokenCreated,
    /// A person's role changed (`user.role_changed`).
    RoleChanged,
    /// The domains a person reviews changed (`user.domains_changed`).
    DomainsChanged,
    /// Where a person is emailed changed (`user.email_changed`; never the address).
    EmailChanged,
    /// An account was disabled (`user.disabled`).
    UserDisabled,
    /// A disabled account was enabled again (`user.enabled`).
    UserEnabled,
    /// An API token was revoked (`token.revoked`).
    TokenRevoked,
    /// An agent token's webhook got a new signing secret (`token.webhook_secret_rotated`).
    WebhookSecretRotated,
    /// Someone signed in (`auth.signed_in`).
    SignedIn,
    /// A sign-in was refused (`auth.sign_in_failed`).
    SignInFailed,
    /// A sign-in was refused unchecked: too many failures lately (`auth.sign_in_throttled`).
    SignInThrottled,
    /// A session ended without its owner signing out (`auth.session_ended`).
    SessionEnded,
    /// An account got a new password; its sessions ended (`user.password_reset`).
    PasswordReset,
    /// Someone signed out (`auth.signed_out`).
    SignedOut,
    /// A form came without this session's CSRF token (`auth.csrf_rejected`).
    CsrfRejected,
    /// A signed-in person asked for a page their role may not see (`access.denied`).
    AccessDenied,
    /// The server started with a policy (`policy.loaded`).
    PolicyLoaded,
    /// A selection of the trail was exported (`audit.exported`).
    AuditExported,
    /// The gateway pinned a tool's first definition (`gateway.tool_seen`).
    GatewayToolSeen,
    /// A gateway tool's definition changed; it is withheld (`gateway.tool_changed`).
    GatewayToolChanged,
    /// An admin accepted a gateway tool's changed definition (`gateway.tool_accepted`).
    GatewayToolAccepted,
    /// A gateway upstream's state changed (`gateway.upstream_state`).
    GatewayUpstreamState,
    /// A reviewer made a standing grant with an approval (`grant.made`).
    GrantMade,
    /// A proposal was accepted under a standing grant (`grant.used`).
    GrantUsed,
    /// A standing grant was revoked or ran out (`grant.revoked` / `grant.expired`).
    GrantEnded,
    /// A person registered, renamed or removed a passkey (`passkey.registered` /
    /// `passkey.renamed` / `passkey.removed`).
    PasskeyChanged,
    /// An approval was proved by the approver's passkey (`proposal.stepped_up`).
    ProposalSteppedUp,
    /// The agent withdrew its waiting proposal (`proposal.withdrawn`).
    ProposalWithdrawn,
    /// An admin asked to activate a policy version (`policy.proposed`).
    PolicyProposed,
    /// A second admin approved or refused it (`policy.approved` / `policy.refused`).
    PolicyAnswered,
    /// An approval the rules refused: the proposer's own (`policy.approval_refused`).
    PolicyApprovalRefused,
    /// A candidate's shadow run started or stopped (`policy.shadowed`).
    PolicyShadowed,
    /// A policy version became active (`policy.activated`).
    PolicyActivated,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::command::Outcome;
    use uuid::Uuid;

    #[test]
    fn subject_fields_stay_out_of_the_details() {
        let id = Uuid::now_v7();
        let row = AuditEvent::ProposalExpired(ProposalExpired {
            proposal_id: id,
            facets: ProposalFacets::test(),
            decision: "expired",
            expires_at: Some("2026-11-23T10:00:00Z".into()),
        })
        .into_row()
        .expect("row");
        assert_eq!(row.kind, "proposal.expired");
        assert_eq!(row.subject_id, id.to_string());
        assert_eq!(
            (row.before_status.as_deref(), row.after_status.as_deref()),
            (Some("pending"), Some("expired"))
        );
        assert_eq!(row.details["expires_at"], "2026-11-23T10:00:00Z");
        assert_eq!(row.details["tool"], "crm.update");
        assert!(row.details.get("proposal_id").is_none());
    }

    #[test]
    fn reports_name_their_outcome() {
        let row = AuditEvent::CommandReported(CommandReported {
            command_id: Uuid::now_v7(),
            outcome: Outcome::Failed,
            facets: CommandFacets {
                tool: "crm.update".into(),
                domain: "sales".into(),
            },
            proposal_id: Uuid::now_v7(),
            attempt: 2,
            late: true,
            side_effect: Some(crate::domain::command::retry::SideEffect::Possible),
            after: crate::domain::command::CommandStatus::Failed,
            body_bytes: 2,
            body_sha256: "44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a".into(),
        })
        .into_row()
        .expect("row");
        assert_eq!(row.kind, "command.failed");
        assert_eq!(row.after_status.as_deref(), Some("failed"));
        assert_eq!(row.details["late"], serde_json::json!(true));
    }
}
