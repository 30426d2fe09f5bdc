//! Every notice and error a page can show after a redirect, and the words each says.

/// Every notice and error a page can show after a redirect. The code travels in the query
/// string (`?notice=approved`, `?error=csrf`): the variant's name in snake case; the words
/// live in [`Notice::text`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, strum::IntoStaticStr, strum::EnumIter)]
#[strum(serialize_all = "snake_case")]
pub enum Notice {
    /// A proposal was approved.
    Approved,
    /// A proposal was rejected.
    Rejected,
    /// The reviewer asked the agent for changes.
    ChangesRequested,
    /// One approval of several was recorded.
    ApprovalRecorded,
    /// Signed out.
    SignedOut,
    /// Wrong username or password.
    InvalidCredentials,
    /// Too many failed sign-ins lately (for that name or from that address).
    Throttled,
    /// Single sign-on did not work (the provider refused, or its answer did not check out).
    SsoFailed,
    /// Single sign-on identified an account that may not sign in (disabled).
    SsoRefused,
    /// The form's CSRF token did not match.
    Csrf,
    /// Someone decided first.
    AlreadyDecided,
    /// Nobody decides their own proposal.
    OwnProposal,
    /// The role may view but not decide.
    Role,
    /// A rejection needs a reason.
    ReasonRequired,
    /// The proposal expired.
    Expired,
    /// This reviewer already approved.
    AlreadyApproved,
    /// Neither approve nor reject.
    BadVerdict,
    /// No such proposal.
    NotFound,
    /// A proposal's personal data was erased.
    Erased,
    /// Erasure refused: the proposal still waits for a decision.
    ErasePending,
    /// Erasure refused: its command may still run.
    EraseCommandOpen,
    /// Erasure refused: done before.
    AlreadyErased,
    /// Erasure needs a reason.
    EraseReasonRequired,
    /// Only an admin erases.
    EraseRole,
    /// A person settled a command's outcome.
    Resolved,
    /// A command was released for one more attempt.
    Released,
    /// A rollback task was approved and queued.
    RollbackApproved,
    /// A rollback task was dismissed.
    RollbackDismissed,
    /// The command no longer waits for that.
    CommandState,
    /// Settling needs a reason.
    ResolveReasonRequired,
    /// A tool was paused.
    ToolPaused,
    /// A tool was resumed.
    ToolResumed,
    /// Not a tool name or glob, or not paused.
    BadTool,
    /// Only an admin pauses tools.
    PauseRole,
    /// Withheld personal data is shown (and the reveal recorded).
    Revealed,
    /// The proposal withholds no personal data.
    NothingToReveal,
    /// Approving needs the target's name typed.
    ConfirmationMissing,
    /// The typed name is not the target's.
    ConfirmationMismatch,
    /// The reviewer operates the proposing agent.
    OperatesAgent,
    /// A user was added.
    UserAdded,
    /// A user was disabled.
    UserDisabled,
    /// A user was enabled.
    UserEnabled,
    /// A password was reset.
    PasswordReset,
    /// A role changed.
    RoleChanged,
    /// The domains a user reviews changed.
    DomainsChanged,
    /// The address a user is emailed at changed.
    EmailChanged,
    /// A token was created.
    TokenCreated,
    /// A token was revoked.
    TokenRevoked,
    /// An agent token's webhook got a new signing secret (shown once).
    WebhookSecretRotated,
    /// The change would leave no enabled admin.
    LastAdmin,
    /// Bad account or token input.
    AccountInvalid,
    /// The username is taken.
    UsernameTaken,
    /// No such account in that state.
    AccountMissing,
    /// Only admins manage accounts.
    AdminRole,
    /// A gateway tool's changed definition was accepted: pinned and served.
    GatewayToolAccepted,
    /// The gateway tool has no changed definition to accept.
    NothingToAccept,
    /// The gateway tool's definition changed again since the page showed it.
    DefinitionChangedAgain,
    /// A batch needs 1 to 100 chosen proposals.
    BatchSize,
    /// This approval is taken on the proposal's own page, not in a batch.
    NotBatchable,
    /// An approval made a standing grant.
    Granted,
    /// This proposal's calls may not be granted.
    NotGrantable,
    /// The grant asked for breaks a rule.
    GrantInvalid,
    /// A standing grant was revoked.
    GrantRevoked,
    /// The grant is no longer live.
    GrantEnded,
    /// An admin approved alone past the quorum.
    BrokeGlass,
    /// Break-glass is not allowed here.
    BreakGlassRefused,
    /// The break-glass justification is too short or too long.
    BreakGlassJustification,
    /// A proposal was approved with the reviewer's edit.
    Edited,
    /// The edit breaks a rule.
    EditInvalid,
    /// The proposal may not be edited.
    NotEditable,
    /// A passkey was registered.
    PasskeyAdded,
    /// A passkey was renamed.
    PasskeyRenamed,
    /// A passkey was removed.
    PasskeyRemoved,
    /// A passkey could not be registered or renamed.
    PasskeyInvalid,
    /// Approving needs a passkey and the reviewer has none.
    PasskeyNone,
    /// Approving needs the reviewer's passkey, and no answer came.
    StepUpRequired,
    /// The passkey's answer is not for this proposal's current request.
    StepUpChallenge,
    /// The passkey's answer did not verify.
    StepUpInvalid,
    /// A policy candidate was proposed: another admin must approve it.
    PolicyProposed,
    /// The candidate is not a valid policy (its errors are listed with their lines).
    PolicyInvalid,
    /// A policy change was approved: its version is active.
    PolicyApproved,
    /// A policy change was refused.
    PolicyRefused,
    /// Nobody approves or refuses the policy change they proposed.
    PolicyOwnChange,
    /// The policy change was already answered.
    PolicyNotPending,
    /// The candidate is the active version already.
    PolicyAlreadyActive,
    /// A policy change needs a reason.
    PolicyReasonRequired,
    /// The reason is too long.
    PolicyReasonTooLong,
    /// The candidate is too large.
    PolicyTooLarge,
    /// No such stored version.
    PolicyNoSuchVersion,
    /// No such policy change.
    PolicyNotFound,
    /// A candidate runs in shadow.
    PolicyShadowStarted,
    /// A candidate's shadow run was stopped.
    PolicyShadowStopped,
    /// Only an admin proposes, approves or refuses policy changes.
    PolicyRole,
    /// Not one of the periods offered.
    PolicyChoice,
    /// A form's change could not be made: the database cannot take it now.
    Unavailable,
    /// A form's change failed on the server (logged there).
    ServerFailed,
    /// A form asked for something the viewer's role or domains do not allow.
    NotAllowed,
    /// A form named something that does not exist (or that the viewer may not see).
    Missing,
    /// A form's fields were not what the page sends.
    FormInvalid,
}

/// What the page says for each notice (a notice without a line here says nothing: a test
/// keeps every one written).
const NOTICE_TEXT: &[(Notice, &str)] = &[
    (
        Notice::Approved,
        "Approved. Its authorization is now confirmed and its command is in the executor queue.",
    ),
    (
        Notice::Rejected,
        "Rejected. The agent will see your reason.",
    ),
    (
        Notice::ChangesRequested,
        "Changes requested. The agent sees what must change and may submit a revision.",
    ),
    (Notice::SignedOut, "You are signed out."),
    (
        Notice::InvalidCredentials,
        "That username and password do not match.",
    ),
    (
        Notice::Throttled,
        "Too many failed sign-ins. Wait a few minutes, then try again.",
    ),
    (
        Notice::SsoFailed,
        "Single sign-on did not work. Try again, or sign in with your password.",
    ),
    (
        Notice::SsoRefused,
        "Your account may not sign in. Ask an admin.",
    ),
    (Notice::Csrf, "This form had expired. Please try again."),
    (
        Notice::AlreadyDecided,
        "Someone else decided this proposal meanwhile; it cannot be decided twice. Their decision, and who took it, is below.",
    ),
    (
        Notice::OwnProposal,
        "You proposed this action, so someone else must decide it.",
    ),
    (
        Notice::Role,
        "Your role may view proposals but not decide them.",
    ),
    (
        Notice::ReasonRequired,
        "A rejection needs a reason (up to 2,000 characters).",
    ),
    (
        Notice::Expired,
        "This proposal expired before anyone decided it; it will never run. The agent may propose it again.",
    ),
    (
        Notice::ApprovalRecorded,
        "Your approval is recorded. The policy asks for more approvers; the proposal waits for them.",
    ),
    (
        Notice::AlreadyApproved,
        "You already approved this proposal; it waits for other approvers.",
    ),
    (Notice::BadVerdict, "Choose approve or reject."),
    (Notice::NotFound, "No such proposal."),
    (
        Notice::Erased,
        "Personal data erased. Keys, request hash and decision remain; the erasure is in the audit trail.",
    ),
    (
        Notice::ErasePending,
        "This proposal still waits for a decision: reject it first, then erase it.",
    ),
    (
        Notice::EraseCommandOpen,
        "A command of it may still run: wait for or settle its outcome, then erase it.",
    ),
    (Notice::AlreadyErased, "This proposal was already erased."),
    (
        Notice::EraseReasonRequired,
        "Erasure needs a reason; it stays on the proposal.",
    ),
    (Notice::EraseRole, "Only an admin may erase personal data."),
    (
        Notice::Resolved,
        "Settled. The agent sees the outcome; the trail records your reason.",
    ),
    (
        Notice::Released,
        "Released: the command is back in the queue for one more attempt.",
    ),
    (
        Notice::RollbackApproved,
        "Rollback approved: it is queued as its own command for the executors.",
    ),
    (
        Notice::RollbackDismissed,
        "Rollback dismissed; the trail records your reason.",
    ),
    (
        Notice::CommandState,
        "This command no longer waits for that: someone settled it first.",
    ),
    (
        Notice::ResolveReasonRequired,
        "Settling a command, or dismissing a rollback, needs a reason (up to 2,000 characters).",
    ),
    (
        Notice::ToolPaused,
        "Paused: no executor leases this tool until it is resumed.",
    ),
    (
        Notice::ToolResumed,
        "Resumed: executors lease this tool again.",
    ),
    (
        Notice::BadTool,
        "Give a tool name or glob (`crm.*`, or `*` for every tool).",
    ),
    (
        Notice::PauseRole,
        "Only an admin may pause or resume tools.",
    ),
    (
        Notice::Revealed,
        "Personal data revealed for the next 15 minutes; the audit trail records that you revealed it.",
    ),
    (
        Notice::NothingToReveal,
        "This proposal withholds no personal data.",
    ),
    (
        Notice::ConfirmationMissing,
        "Not approved: this action needs the target's name typed to approve it.",
    ),
    (
        Notice::ConfirmationMismatch,
        "Not approved: what you typed is not the target's name. Type it exactly as shown.",
    ),
    (
        Notice::OperatesAgent,
        "You operate the agent that proposed this action, so someone else must approve it.",
    ),
    (
        Notice::UserAdded,
        "User added. Their one-time password is shown below, once: hand it over now.",
    ),
    (
        Notice::UserDisabled,
        "User disabled: they cannot sign in, and their open sessions ended.",
    ),
    (Notice::UserEnabled, "User enabled: they may sign in again."),
    (
        Notice::PasswordReset,
        "Password reset; their sessions ended. The one-time password is shown below, once.",
    ),
    (
        Notice::RoleChanged,
        "Role changed; their sessions ended, so they sign in again under the new role.",
    ),
    (Notice::DomainsChanged, "Domains changed."),
    (Notice::EmailChanged, "Email address changed."),
    (
        Notice::TokenCreated,
        "Token created. It is shown below, once: copy it now; only its hash is stored.",
    ),
    (
        Notice::TokenRevoked,
        "Token revoked: its next request is refused.",
    ),
    (
        Notice::WebhookSecretRotated,
        "Webhook signing secret rotated: the old one signs deliveries too for 24 h.",
    ),
    (
        Notice::LastAdmin,
        "Refused: that is the last enabled admin. Make another admin first.",
    ),
    (
        Notice::AccountInvalid,
        "That was refused: check the name (lowercase letters, digits, -, _, .), role, domains, tool scope, operator and webhook URL (https, or loopback; no private addresses).",
    ),
    (Notice::UsernameTaken, "A user of that name already exists."),
    (
        Notice::AccountMissing,
        "No such user or token in that state (already disabled, enabled or revoked?).",
    ),
    (
        Notice::AdminRole,
        "Only an admin may manage accounts and tokens.",
    ),
    (
        Notice::GatewayToolAccepted,
        "Accepted: the new definition is pinned and served, and calls against it are allowed.",
    ),
    (
        Notice::BatchSize,
        "Choose the proposals to decide first (at most 100 at once).",
    ),
    (
        Notice::NotBatchable,
        "Approve it on its own page: it needs the target's name typed, or more than one approver.",
    ),
    (
        Notice::NothingToAccept,
        "That tool has no changed definition waiting (accepted already, or changed back).",
    ),
    (
        Notice::DefinitionChangedAgain,
        "The tool's definition changed again since this page showed it: nothing was accepted. Look at the new one.",
    ),
    (
        Notice::Granted,
        "Approved, and this agent's similar calls are allowed for the time you chose: see Grants to follow or revoke it.",
    ),
    (
        Notice::NotGrantable,
        "It cannot be granted: the policy does not let this tool be granted, or the action is high risk, reaches wide, touches personal or health data, or needs more than one approver. Approve it alone.",
    ),
    (
        Notice::GrantInvalid,
        "That grant was refused: name only this proposal's parameters, bound a number at or above its approved value, keep the time within the policy's limit and the uses from 1 to 10000.",
    ),
    (
        Notice::GrantRevoked,
        "Revoked: the grant accepts nothing from now on.",
    ),
    (
        Notice::GrantEnded,
        "That grant had already ended (used up, expired or revoked).",
    ),
    (
        Notice::BrokeGlass,
        "Approved alone by break-glass. Every admin and compliance officer has been told, and the trail marks it.",
    ),
    (
        Notice::BreakGlassRefused,
        "Break-glass was refused: the policy forbids it for this tool, or one approval already decides it (approve it the ordinary way).",
    ),
    (
        Notice::BreakGlassJustification,
        "Break-glass needs a written justification: why this cannot wait, in 20 to 2000 characters.",
    ),
    (
        Notice::Edited,
        "Approved as edited: the command runs with your values, and the agent sees each change.",
    ),
    (
        Notice::EditInvalid,
        "That edit was refused: write each value as JSON (text in quotes), change only values the agent sent, and change at least one.",
    ),
    (
        Notice::NotEditable,
        "It cannot be edited here: the policy forbids it, it needs more than one approver, or the edited request would route stricter. Ask the agent for changes instead.",
    ),
    (
        Notice::PasskeyAdded,
        "Passkey added. Approvals the policy asks a passkey for now use it.",
    ),
    (Notice::PasskeyRenamed, "Renamed."),
    (
        Notice::PasskeyRemoved,
        "Passkey removed: it proves nothing from now on.",
    ),
    (
        Notice::PasskeyInvalid,
        "That passkey was not added: give it a name of 1 to 60 characters, and finish the browser's prompt within five minutes.",
    ),
    (
        Notice::PasskeyNone,
        "Approving this needs a passkey, and you have none: add one on your account page, then approve.",
    ),
    (
        Notice::StepUpRequired,
        "Approving this needs your passkey: press Approve and answer your browser's passkey prompt.",
    ),
    (
        Notice::StepUpChallenge,
        "Your passkey's answer was not for this request (another proposal's, an expired or used one, or the request changed). Press Approve again.",
    ),
    (
        Notice::StepUpInvalid,
        "Your passkey's answer did not verify (it must verify you, with a PIN or biometric). The refusal is recorded. Try again.",
    ),
    (
        Notice::PolicyProposed,
        "Proposed. Another admin must approve it before it is active; its diff and backtest are below.",
    ),
    (
        Notice::PolicyInvalid,
        "That is not a valid policy; nothing was stored. Every error is listed below with its line.",
    ),
    (
        Notice::PolicyApproved,
        "Approved: this version is now active on every instance (within a second).",
    ),
    (
        Notice::PolicyRefused,
        "Refused: this version will not become active.",
    ),
    (
        Notice::PolicyOwnChange,
        "You proposed this change: another admin must approve it. The attempt is recorded.",
    ),
    (
        Notice::PolicyNotPending,
        "This change no longer waits for an answer: someone answered it first.",
    ),
    (
        Notice::PolicyAlreadyActive,
        "That version is the active one already: there is nothing to change.",
    ),
    (
        Notice::PolicyReasonRequired,
        "Say why: a policy change needs a reason.",
    ),
    (
        Notice::PolicyReasonTooLong,
        "That reason is too long (at most 1,000 characters).",
    ),
    (
        Notice::PolicyTooLarge,
        "That policy is too large (at most 256 KiB).",
    ),
    (
        Notice::PolicyNoSuchVersion,
        "No such stored version of the policy.",
    ),
    (Notice::PolicyNotFound, "No such policy change."),
    (
        Notice::PolicyShadowStarted,
        "Running in shadow: every new decision is also routed under this candidate, and the differences are listed here.",
    ),
    (Notice::PolicyShadowStopped, "Shadow run stopped."),
    (
        Notice::PolicyRole,
        "Only an admin may propose, approve or refuse policy changes.",
    ),
    (Notice::PolicyChoice, "Choose one of the periods offered."),
    (
        Notice::Unavailable,
        "The database cannot take this now; nothing was changed. Try again shortly.",
    ),
    (
        Notice::ServerFailed,
        "Something went wrong on the server; it has been logged.",
    ),
    (
        Notice::NotAllowed,
        "You may not do that; nothing was changed.",
    ),
    (
        Notice::Missing,
        "What this form names does not exist, or you may not see it.",
    ),
    (
        Notice::FormInvalid,
        "This form was not what the page sends; nothing was changed.",
    ),
];

impl Notice {
    /// The code in the query string (`approved`, `csrf`).
    pub fn code(self) -> &'static str {
        self.into()
    }

    /// The notice a code names, if any.
    pub fn parse(code: &str) -> Option<Notice> {
        <Notice as strum::IntoEnumIterator>::iter().find(|n| n.code() == code)
    }

    /// What the page says.
    pub fn text(self) -> &'static str {
        NOTICE_TEXT
            .iter()
            .find(|(n, _)| *n == self)
            .map_or("", |(_, text)| text)
    }
}

#[cfg(test)]
mod tests {
    use super::Notice;

    #[test]
    fn every_notice_has_words_and_a_code_of_its_own() {
        for n in <Notice as strum::IntoEnumIterator>::iter() {
            assert!(!n.text().is_empty(), "{n:?} says nothing");
            assert_eq!(Notice::parse(n.code()), Some(n));
        }
    }
}
