//! The proposal page's side of the desk: one proposal in full for a viewer — every field of
//! the command an executor receives ([`super::sheet`]), agent-written text made visible, the
//! agent's record with the tool, the typed-name confirmation approving needs — and the audited
//! reveal of a GDPR or HIPAA proposal's personal data.

use app::dto::{
    AppError, ApprovalView, AuditView, BlockerView, DecisionOffers, ErasedView, EscalationView,
    ExecutionView, HistoryItem, HistoryView, Notice, ProposalView, ReviewView, RevisionView,
    Viewer,
};
use app::ports::DecideOutcome;
use time::OffsetDateTime;
use uuid::Uuid;

use super::sheet::{SheetOptions, command_sheet};
use super::{internal, moment, principal, rollback_words};
use crate::audit::Actor;
use crate::audit::trail::TrailEvent;
use crate::domain::access::{UseCase, authorize};
use crate::domain::lifecycle::Standing;
use crate::domain::principal::Principal;
use crate::domain::record::CommandRecord;
use crate::domain::record::{ProposalRecord, Review};
use crate::domain::review::text::visible;
use crate::domain::review::{confirm, diff};
use crate::service::{AgentHistory, Cursor, Services, TrailPage, withholds_personal_data};

/// One proposal for `viewer`, recording the view of a GDPR or HIPAA proposal. With `reveal`,
/// personal data the viewer revealed within [`crate::domain::review::disclosure::REVEAL_SECONDS`]
/// is shown.
pub(super) async fn proposal(
    s: &Services,
    viewer: &Viewer,
    id: &str,
    trail_before: Option<i64>,
    reveal: bool,
) -> Result<ProposalView, AppError> {
    let id = Uuid::parse_str(id).map_err(|_| AppError::NotFound)?;
    let who = principal(s, viewer).await?;
    // The most recent events of the proposal and its command, a page at a time.
    let cursor = trail_before.map_or(Cursor::Newest, Cursor::Before);
    let page = (s.proposal_page(&who, id, cursor).await)
        .map_err(internal)?
        .ok_or(AppError::NotFound)?;
    let p = page.proposal;
    let revealed = reveal && page.revealed;
    let now = s.now();
    let standing = s.standing(&who, &p).await.map_err(internal)?;
    s.record_view(&Actor::of(&who), &p)
        .await
        .map_err(internal)?;
    let command = page.command;
    let spec = command
        .as_ref()
        .map_or_else(|| s.command_preview(&p), |c| c.spec.clone());
    let sheet = command_sheet(
        &spec,
        &SheetOptions {
            queued: command.is_some(),
            regulated: withholds_personal_data(&p),
            revealed,
            now,
        },
    );
    let masked = withholds_personal_data(&p) && !revealed;
    let revision = revision(s, &who, &p, page.revised_by, masked).await?;
    let offers = offers(s, &who, &p, &standing).await?;
    let edited = (p.review.as_ref().and_then(|r| r.edited.as_ref()))
        .map(|e| super::edits::edits_view(e, masked));
    let detail = Detail {
        p,
        command,
        approvals: page.approvals,
        audit: page.trail,
        standing,
        can_erase: authorize(&who, UseCase::Erase).is_ok(),
        history: page.history,
        now,
    };
    let definition = page
        .tool_definition
        .map(|pin| tool_definition_view(pin, &detail.p));
    let mut view = detail.into_view(sheet);
    if let Some((definition, hidden)) = definition {
        view.hidden_chars += hidden;
        view.tool_definition = Some(definition);
    }
    view.revision = revision;
    view.offers = offers;
    if let (Some(review), Some(edited)) = (view.review.as_mut(), edited) {
        review.edited = edited;
    }
    view.passkey_proofs = (page.passkey_proofs.into_iter())
        .map(|(by, credential_id)| app::dto::PasskeyProofView { by, credential_id })
        .collect();
    view.broke_glass = (page.broke_glass).map(|(by, at)| app::dto::BrokeGlassView {
        by,
        at: moment(at, now),
    });
    view.escalations = (page.alerts.into_iter())
        .filter(|a| a.kind == "escalated")
        .map(|a| EscalationView {
            tier: a.tier,
            to: a.audience.unwrap_or_default(),
            at: moment(a.at, now),
        })
        .collect();
    Ok(view)
}

/// The proposal `p` revises, its revisions, and the parameters changed since the first
/// (values masked when `masked`).
async fn revision(
    s: &Services,
    who: &Principal,
    p: &ProposalRecord,
    revised_by: Vec<Uuid>,
    masked: bool,
) -> Result<RevisionView, AppError> {
    let first = match p.contract.supersedes {
        Some(id) => s.proposal(who, id).await.map_err(internal)?,
        None => None,
    };
    let shown = |v: Option<String>| match v {
        None => "—".to_owned(),
        Some(_) if masked => "••••".to_owned(),
        Some(v) => v,
    };
    let changes = first
        .as_ref()
        .map(|f| diff::parameter_changes(&f.contract.parameters, &p.contract.parameters))
        .unwrap_or_default()
        .into_iter()
        .map(|c| (c.path, shown(c.before), shown(c.after)))
        .collect();
    Ok(RevisionView {
        supersedes: p.contract.supersedes.map(|id| id.to_string()),
        revised_by: revised_by.iter().map(ToString::to_string).collect(),
        changes,
    })
}

/// Proposal `id`, if the service lets `viewer` see it (a person limited to domains does not
/// see the others: not found), with the principal it was read as.
pub(super) async fn reviewable(
    s: &Services,
    viewer: &Viewer,
    id: &str,
) -> Result<(Principal, ProposalRecord), AppError> {
    let id = Uuid::parse_str(id).map_err(|_| AppError::NotFound)?;
    let who = principal(s, viewer).await?;
    let p = s
        .proposal(&who, id)
        .await
        .map_err(internal)?
        .ok_or(AppError::NotFound)?;
    Ok((who, p))
}

/// `viewer` reveals proposal `id`'s withheld personal data (recorded by the service).
pub(super) async fn reveal(
    s: &Services,
    viewer: &Viewer,
    id: &str,
) -> Result<DecideOutcome, AppError> {
    let (who, p) = reviewable(s, viewer, id).await?;
    let id = p.id;
    let fields = s.reveal_personal_data(&who, id).await.map_err(internal)?;
    Ok(if fields.is_empty() {
        DecideOutcome::Refused(Notice::NothingToReveal)
    } else {
        DecideOutcome::Decided(Notice::Revealed)
    })
}

/// The notice a refused typed-name confirmation shows.
pub(super) fn unconfirmed(e: &confirm::ConfirmationError) -> Notice {
    match e {
        confirm::ConfirmationError::Missing { .. } => Notice::ConfirmationMissing,
        confirm::ConfirmationError::Mismatch { .. } => Notice::ConfirmationMismatch,
    }
}

/// GDPR/HIPAA flags and the seed 003 classification, as label/value pairs.
fn compliance_and_classification(p: &ProposalRecord) -> (Vec<String>, Vec<(String, String)>) {
    let c = &p.contract;
    let mut compliance = Vec::new();
    if c.compliance_context.gdpr {
        compliance.push("GDPR (personal data)".to_owned());
    }
    if c.compliance_context.hipaa {
        compliance.push("HIPAA (health data)".to_owned());
    }
    let mut classification = Vec::new();
    if let Some(cat) = c.tool_category {
        classification.push(("Tool category".to_owned(), cat.as_str().to_owned()));
    }
    if let Some(d) = c.risk_domain {
        classification.push(("Risk domain".to_owned(), d.as_str().to_owned()));
    }
    if !c.evidence_refs.is_empty() {
        classification.push((
            "Evidence refs".to_owned(),
            c.evidence_refs.len().to_string(),
        ));
    }
    classification.push((
        "Agent says approval required".to_owned(),
        c.approval_required.to_string(),
    ));
    (compliance, classification)
}

fn audit_view(a: TrailEvent, now: OffsetDateTime) -> AuditView {
    let a = a.event;
    AuditView {
        at: moment(a.at, now),
        actor: format!("{}:{}", a.actor_kind, a.actor),
        action: a.kind,
        change: match (a.before_status, a.after_status) {
            (Some(b), Some(a)) => format!("{b} → {a}"),
            (None, Some(a)) => format!("→ {a}"),
            _ => String::new(),
        },
    }
}

fn review_view(r: Review, now: OffsetDateTime) -> ReviewView {
    ReviewView {
        verdict: r.verdict.as_str().into(),
        decided_by: r.decided_by,
        decided_at: moment(r.decided_at, now),
        reason: r.reason.map(|t| visible(&t).text),
        edited: Vec::new(),
    }
}

fn execution_view(x: CommandRecord) -> ExecutionView {
    ExecutionView {
        command_id: x.id.to_string(),
        status: x.status.as_str().into(),
        attempts: x.attempts,
        leased_by: x.leased_by,
    }
}

fn history_view(h: AgentHistory, now: OffsetDateTime) -> HistoryView {
    let t = h.tally;
    HistoryView {
        total: t.total,
        capped: h.capped,
        approved: t.approved,
        rejected: t.rejected,
        refused: t.refused,
        expired: t.expired,
        pending: t.pending,
        succeeded: t.succeeded,
        failed: t.failed,
        unknown: t.unknown,
        running: t.running(),
        recent: h
            .recent
            .into_iter()
            .map(|r| {
                let summary = visible(r.summary.as_deref().unwrap_or(""));
                HistoryItem {
                    id: r.id.to_string(),
                    summary: summary.text,
                    hidden: summary.hidden,
                    status: r.status,
                    at: moment(r.created_at, now),
                }
            })
            .collect(),
    }
}

/// The blockers, each once, and the routing reasons that do not repeat one (the router
/// records every blocker as a reason too, as `route: message`).
fn blockers_and_reasons(p: &ProposalRecord) -> (Vec<BlockerView>, Vec<String>) {
    let mut blockers: Vec<BlockerView> = Vec::new();
    for b in &p.routing.blockers {
        let view = BlockerView {
            code: b.code.as_str().into(),
            message: b.message.clone(),
        };
        if !blockers.contains(&view) {
            blockers.push(view);
        }
    }
    let mut reasons: Vec<String> = Vec::new();
    for r in &p.routing.reasons {
        let says_a_blocker = blockers
            .iter()
            .any(|b| *r == b.message || r.ends_with(&format!(": {}", b.message)));
        if !says_a_blocker && !reasons.contains(r) {
            reasons.push(r.clone());
        }
    }
    (blockers, reasons)
}

/// A gateway tool's definition as the reviewer reads it (the one the call was made against,
/// else the pinned one), and how many hidden characters its text had.
fn tool_definition_view(
    pin: crate::domain::gateway::ToolPin,
    p: &ProposalRecord,
) -> (app::dto::ToolDefinitionView, usize) {
    let mut hidden = 0;
    let mut shown = |s: &str| {
        let v = visible(s);
        hidden += v.hidden;
        v.text
    };
    let read = pin.called.as_ref().unwrap_or(&pin.pinned);
    let description = shown(read.description().unwrap_or("(none)"));
    let annotations = (read.annotations().into_iter().flatten())
        .map(|(k, v)| {
            let value = v.as_str().map_or_else(|| v.to_string(), str::to_owned);
            (shown(k), shown(&value))
        })
        .collect();
    let view = app::dto::ToolDefinitionView {
        description,
        annotations,
        called_against_pinned: pin.pinned.version() == p.contract.tool.version,
        pinned: pin.pinned.sha256(),
        changed_to: pin.offered.as_ref().map(|d| d.sha256()),
    };
    (view, hidden)
}

/// Everything the detail page shows about one proposal.
struct Detail {
    p: ProposalRecord,
    command: Option<CommandRecord>,
    approvals: Vec<(String, OffsetDateTime)>,
    audit: TrailPage,
    standing: Standing,
    can_erase: bool,
    history: AgentHistory,
    now: OffsetDateTime,
}

/// The agent-written text of the page's header, made visible, and how many hidden characters
/// it had.
struct Texts {
    summary: String,
    reasoning: String,
    tool_version: String,
    idempotency_key: String,
    targets: Vec<String>,
    hidden: usize,
}

impl Texts {
    fn of(p: &ProposalRecord) -> Self {
        let c = &p.contract;
        let mut hidden = 0;
        let mut shown = |s: &str| {
            let v = visible(s);
            hidden += v.hidden;
            v.text
        };
        Texts {
            summary: shown(&c.intent.summary),
            reasoning: shown(&c.intent.reasoning),
            tool_version: shown(&c.tool.version),
            idempotency_key: shown(&c.idempotency_key),
            targets: c
                .target_refs
                .iter()
                .map(|t| shown(&format!("{}:{}", t.kind, t.id)))
                .collect(),
            hidden,
        }
    }
}

/// The name to type before approving, when this viewer may approve and the action needs it.
fn confirm_name(p: &ProposalRecord, standing: &Standing) -> Option<String> {
    (standing.status.is_open() && standing.can_decide && standing.approve_blocked.is_none())
        .then(|| expected_name(p))
        .flatten()
}

/// What the viewer is offered beside Approve: a standing grant, break-glass (with the name
/// it needs typed), an edit, and whether approving needs their passkey (and they have one).
async fn offers(
    s: &Services,
    who: &Principal,
    p: &ProposalRecord,
    standing: &Standing,
) -> Result<DecisionOffers, AppError> {
    let may_approve = standing.status.is_open() && standing.can_decide;
    let grant = (may_approve && standing.approve_blocked.is_none())
        .then(|| super::grants::offer(s, who, p))
        .flatten();
    let break_glass = may_approve && s.break_glass_offered(who, p);
    let edit = (may_approve && standing.approve_blocked.is_none() && s.edit_offered(who, p))
        .then(|| super::edits::fields(p))
        .filter(|fields| !fields.is_empty());
    let step_up = if may_approve && s.step_up_needed(p) {
        Some(!s.passkeys(who).await.map_err(internal)?.is_empty())
    } else {
        None
    };
    Ok(DecisionOffers {
        grant,
        break_glass,
        glass_confirm: break_glass.then(|| expected_name(p)).flatten(),
        edit,
        step_up,
    })
}

/// The name approving `p` needs typed, if it needs one.
fn expected_name(p: &ProposalRecord) -> Option<String> {
    let c = &p.contract;
    confirm::expected(
        p.routing.effective_risk,
        c.blast_radius,
        &c.target_refs,
        &c.tool.name,
    )
}

fn approval_views(
    approvals: Vec<(String, OffsetDateTime)>,
    now: OffsetDateTime,
) -> Vec<ApprovalView> {
    approvals
        .into_iter()
        .map(|(by, at)| ApprovalView {
            by,
            at: moment(at, now),
        })
        .collect()
}

impl Detail {
    fn into_view(self, command_sheet: app::dto::CommandSheet) -> ProposalView {
        let Detail {
            p,
            command,
            approvals,
            audit,
            standing,
            can_erase,
            history,
            now,
        } = self;
        let erased = p.erasure.as_ref().map(|e| ErasedView {
            by: e.by.clone(),
            at: moment(e.at, now),
            reason: e.reason.clone(),
        });
        let (compliance, classification) = compliance_and_classification(&p);
        let (blockers, reasons) = blockers_and_reasons(&p);
        let texts = Texts::of(&p);
        let open = standing.status.is_open();
        let c = &p.contract;
        let confirm_name = confirm_name(&p, &standing);
        let sheet_hidden: usize = command_sheet.rows.iter().map(|r| r.hidden).sum();
        let r = &p.routing;
        ProposalView {
            id: p.id.to_string(),
            status: standing.status.as_str().into(),
            authorization_state: p.authorization_state.as_str().into(),
            declared_authorization: c.authorization_state.map(|a| a.as_str().into()),
            summary: texts.summary,
            reasoning: texts.reasoning,
            tool: c.tool.name.clone(),
            tool_version: texts.tool_version,
            proposed_by: p.agent.clone(),
            domain: c.domain.clone(),
            created_at: moment(p.created_at, now),
            expires_at: p.expires_at.filter(|_| open).map(|t| moment(t, now)),
            risk_level: c.risk_level.as_str().into(),
            blast_radius: c.blast_radius.map(|b| b.as_str().into()),
            rollback: rollback_words(&p),
            targets: texts.targets,
            compliance,
            classification,
            route: r.route.as_str().into(),
            effective_risk: r.effective_risk.as_str().into(),
            required_approvals: r.required_approvals,
            category: r.category.as_str().into(),
            rule: r.rule.clone(),
            policy_version: r.policy_version.clone(),
            blockers,
            reasons,
            request_hash: p.request_hash.clone(),
            idempotency_key: texts.idempotency_key,
            review: p.review.clone().map(|r| review_view(r, now)),
            execution: command.map(execution_view),
            audit_older: audit.older,
            audit_newer: audit.newer,
            audit: audit
                .events
                .into_iter()
                .map(|a| audit_view(a, now))
                .collect(),
            approve_blocked: standing.approve_blocked,
            approvals: approval_views(approvals, now),
            can_decide: standing.can_decide,
            cannot_decide_because: standing.cannot,
            can_erase: can_erase && erased.is_none() && !open,
            erased,
            hidden_chars: texts.hidden + sheet_hidden,
            revision: RevisionView::default(),
            escalations: Vec::new(),
            tool_definition: None,
            offers: app::dto::DecisionOffers::default(),
            broke_glass: None,
            passkey_proofs: Vec::new(),
            command: command_sheet,
            history: history_view(history, now),
            confirm_name,
        }
    }
}
