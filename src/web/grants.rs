//! Standing grants' side of the desk: the "approve and allow similar" offer on a proposal's
//! page and the form it posts, and the grants page with its revoke button. The rules (what may
//! be granted, for how long, what a grant covers) are the services'; this only translates.

use app::dto::{self, AppError, GrantFieldView, GrantForm, GrantOfferView, GrantView, Notice};
use app::ports::DecideOutcome;
use serde_json::Value;
use uuid::Uuid;

use super::{Flagged, internal, moment, principal, refusal};
use crate::domain::access::UseCase;
use crate::domain::policy::loader::format_duration;
use crate::domain::principal::Principal;
use crate::domain::record::{GrantRecord, ProposalRecord};
use crate::domain::review::grant::{Ask, Bound, DEFAULT_GRANT_SECS, Scope};
use crate::domain::review::text::visible;
use crate::service::{Conflict, ServiceError, Services};

/// The durations offered, before the policy's limit cuts them.
const DURATIONS: [u64; 5] = [900, 3_600, 4 * 3_600, 8 * 3_600, 86_400];

/// "Approve and allow similar" for `who` on `p`, when they may approve it now.
pub(super) fn offer(
    services: &Services,
    who: &Principal,
    p: &ProposalRecord,
) -> Option<GrantOfferView> {
    let max = match services.grant_offer(who, p)? {
        Ok(max) => max,
        Err(why) => {
            return Some(GrantOfferView {
                refused: Some(why),
                durations: Vec::new(),
                default_secs: 0,
                fields: Vec::new(),
            });
        }
    };
    let mut durations: Vec<u64> = DURATIONS.into_iter().filter(|d| *d <= max).collect();
    if !durations.contains(&max) {
        durations.push(max);
    }
    let fields = (p.contract.parameters.iter())
        .map(|(k, v)| GrantFieldView {
            // Hex on the form: a key may hold characters a page never shows raw.
            pointer: hex::encode(format!("/{}", k.replace('~', "~0").replace('/', "~1"))),
            name: visible(k).text,
            approved: visible(&short(v)).text,
            numeric: v.is_number(),
        })
        .collect();
    Some(GrantOfferView {
        refused: None,
        durations: durations
            .into_iter()
            .map(|d| (d, format_duration(d)))
            .collect(),
        default_secs: DEFAULT_GRANT_SECS.min(max),
        fields,
    })
}

/// A parameter value in a few words.
fn short(v: &Value) -> String {
    let text = match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    if text.chars().count() > 60 {
        format!("{}…", text.chars().take(60).collect::<String>())
    } else {
        text
    }
}

/// A field as the form names it (the hex of its JSON pointer).
fn pointer(field: &str) -> Option<String> {
    String::from_utf8(hex::decode(field.trim()).ok()?).ok()
}

/// The grant a form asks for; `None` when a number or field in it does not parse.
fn ask(form: &GrantForm) -> Option<Ask> {
    let duration_secs = form.duration.trim().parse().ok()?;
    let max_uses = match form.max_uses.trim() {
        "" => None,
        n => Some(n.parse().ok()?),
    };
    let mut bounds = Vec::new();
    for (field, max) in &form.bounds {
        if max.trim().is_empty() {
            continue;
        }
        bounds.push(Bound {
            field: pointer(field)?,
            max: max.trim().parse().ok()?,
        });
    }
    let free = form
        .free
        .iter()
        .map(|f| pointer(f))
        .collect::<Option<_>>()?;
    Some(Ask {
        scope: Scope { free, bounds },
        duration_secs,
        max_uses,
    })
}

/// Approves proposal `id` and makes the grant `form` asks for.
pub(super) async fn approve_and_grant(
    services: &Services,
    viewer: &dto::Viewer,
    id: &str,
    confirmation: Option<&str>,
    form: &GrantForm,
) -> Result<DecideOutcome, AppError> {
    let id = Uuid::parse_str(id).map_err(|_| AppError::NotFound)?;
    let Some(ask) = ask(form) else {
        return Ok(DecideOutcome::Refused(Notice::GrantInvalid));
    };
    let who = principal(services, viewer).await?;
    match services
        .approve_and_grant(&who, id, None, confirmation, &ask)
        .await
    {
        Ok(_) => Ok(DecideOutcome::Decided(Notice::Granted)),
        Err(ServiceError::Forbidden {
            code: "not_grantable",
            ..
        }) => Ok(DecideOutcome::Refused(Notice::NotGrantable)),
        Err(ServiceError::Invalid(_)) => Ok(DecideOutcome::Refused(Notice::GrantInvalid)),
        Err(e) => match refusal(&e) {
            Some(notice) => Ok(DecideOutcome::Refused(notice)),
            None => Err(internal(e)),
        },
    }
}

/// The grants page.
async fn grants(services: &Services, viewer: &dto::Viewer) -> Result<dto::GrantsView, AppError> {
    let who = principal(services, viewer).await?;
    let now = services.now();
    let all = services.grants(&who, false).await.map_err(internal)?;
    let (live, ended): (Vec<_>, Vec<_>) = all.into_iter().partition(|g| {
        g.state == crate::domain::review::grant::GrantState::Live && g.expires_at > now
    });
    let view = |g: GrantRecord| grant_view(g, now);
    Ok(dto::GrantsView {
        live: live.into_iter().map(view).collect(),
        ended: ended.into_iter().map(view).collect(),
        can_revoke: services.authorize(&who, UseCase::RevokeGrant).is_ok(),
    })
}

fn grant_view(g: GrantRecord, now: time::OffsetDateTime) -> GrantView {
    let mut shown = Flagged::default();
    let parameters = serde_json::to_string_pretty(&g.parameters).unwrap_or_default();
    let state = match g.state {
        crate::domain::review::grant::GrantState::Live if g.expires_at <= now => "expired",
        s => s.as_str(),
    };
    GrantView {
        id: g.id.to_string(),
        agent: g.agent,
        tool: shown.text(&format!("{} {}", g.tool, g.tool_version)),
        domain: g.domain,
        proposal_id: g.proposal_id.to_string(),
        granted_by: g.granted_by,
        parameters: shown.text(&parameters),
        scope: shown.text(&scope_words(&g.scope)),
        uses: g.uses,
        max_uses: g.max_uses,
        state: state.into(),
        created_at: moment(g.created_at, now),
        expires_at: moment(g.expires_at, now),
        ended_by: g.ended_by,
        hidden: shown.hidden,
    }
}

/// What a grant lets differ, in words.
fn scope_words(scope: &Scope) -> String {
    if scope.is_exact() {
        return "exactly the approved parameters".into();
    }
    let name = |p: &str| {
        p.trim_start_matches('/')
            .replace("~1", "/")
            .replace("~0", "~")
    };
    let mut parts: Vec<String> = (scope.free.iter())
        .map(|f| format!("{} (any value)", name(f)))
        .collect();
    parts
        .extend((scope.bounds.iter()).map(|b| format!("{} (from 0 to {})", name(&b.field), b.max)));
    format!("the approved parameters, except {}", parts.join("; "))
}

/// Revokes grant `id`.
async fn revoke(
    services: &Services,
    viewer: &dto::Viewer,
    id: &str,
) -> Result<DecideOutcome, AppError> {
    let id = Uuid::parse_str(id).map_err(|_| AppError::NotFound)?;
    let who = principal(services, viewer).await?;
    match services.revoke_grant(&who, id).await {
        Ok(_) => Ok(DecideOutcome::Decided(Notice::GrantRevoked)),
        Err(ServiceError::Conflict(Conflict::GrantEnded(_))) => {
            Ok(DecideOutcome::Refused(Notice::GrantEnded))
        }
        Err(ServiceError::Denied(_)) => Ok(DecideOutcome::Refused(Notice::Role)),
        Err(ServiceError::NotFound) => Err(AppError::NotFound),
        Err(e) => Err(internal(e)),
    }
}

#[async_trait::async_trait]
impl app::ports::GrantsDesk for super::ReviewDesk {
    async fn grants(&self, viewer: &dto::Viewer) -> Result<dto::GrantsView, AppError> {
        grants(&self.services, viewer).await
    }

    async fn revoke_grant(
        &self,
        viewer: &dto::Viewer,
        id: &str,
    ) -> Result<DecideOutcome, AppError> {
        revoke(&self.services, viewer, id).await
    }
}
